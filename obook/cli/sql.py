"""``obook sql "QUERY" [--output PATH]``: run SQL over feeds with DuckDB.

Registered by the CLI with ``app.command("sql")(sql)``. The query runs on
``obook.duckdb.connect()``, so ``obook_bbo(...)``, ``obook_messages(...)``, the
``obook.sql`` macros and the ``obook.udfs`` functions are all available.

Without ``--output`` the result is printed (a table of the first ``--max-rows`` rows, or
every row as CSV or JSON lines). With it the whole result (or its first ``--max-rows``) is
streamed (batch by batch, never held in memory) into a Parquet, CSV or
Arrow IPC file chosen by the extension; the file is written under a temporary name and
renamed at the end, so a failed query never leaves a partial file behind. The columns of
DuckDB types an output cannot hold as they are (INTERVAL, nested types in CSV ...) are
converted first (``sql_types``).
"""

from __future__ import annotations

import re
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ObookError, OutputError
from .sql_help import help_text

__all__ = ["sql", "run_query", "write_result", "output_formats"]


class PrintFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def output_formats() -> dict[str, str]:
    """file extension -> writer name (obook.output's, less its BBO-only text lines); loaded
    when asked: obook.output loads pyarrow, which `obook --help` does not need."""
    from ..output import OUTPUT_KINDS

    return {ext: kind for ext, kind in OUTPUT_KINDS.items() if kind != "text"}

# noise DuckDB wraps around errors raised in obook's Python code
_NOISE = re.compile(r"reading the (?:stream registered as '\w+'|Arrow source) failed: (?:Invalid: )?"
                    r"|Python exception occurred while executing the UDF: "
                    r"|(?<=, )__by_position := NULL, ")       # (a macro's hidden parameter, in DuckDB's list)


def _output_format(path: Path) -> str:
    formats = output_formats()
    fmt = formats.get(path.suffix.lower())
    if fmt is None:
        raise OutputError(f"{path}: unknown output format {path.suffix or '(no extension)'!r}; "
                          f"use one of {', '.join(sorted(formats))}")
    return fmt


def run_query(con, query: str, style: Optional[str] = None, target: str = ""):
    """The ``pyarrow.RecordBatchReader`` of ``query`` on a connection with obook installed
    (``obook.duckdb.connect``), None for a statement without a result (``CREATE ...``); and
    the positions of its columns holding JSON text. ``style`` (``sql_types.STYLES``: "csv",
    "parquet" ...): the columns converted for that output (``sql_types.for_output``; a Parquet
    error names ``target``); None: DuckDB's Arrow as it is."""
    import duckdb

    from .sql_types import for_output

    try:
        if not con.extract_statements(query):
            raise ObookError("the query has no SQL statement (it is empty or only comments); give one, "
                             "e.g. \"SELECT * FROM obook_bbo('day.itch') LIMIT 10\"")
        rel = con.sql(query)
        if rel is None:
            return None, set()
        json_columns = set()
        if style is not None:
            rel, json_columns = for_output(rel, style, target)
        return rel.to_arrow_reader(), json_columns
    except duckdb.Error as e:
        _raise_interrupt(e)
        raise ObookError(f"query failed: {_unknown_option(query, str(e)) or _first_line(e)}") from e


def _write_stdout(reader, style: str, json_columns: frozenset = frozenset()) -> int:
    """Every row of the result on stdout as CSV (with a header) or JSON lines (the columns at
    ``json_columns`` hold JSON text, put in as JSON)."""
    import pyarrow.csv as pacsv

    from ..output import csv_header, text_safe
    from .sql_types import csv_ready

    out, n, first = sys.stdout.buffer, 0, True
    for batch in reader:
        if style == "csv":
            if first:
                out.write(csv_header(reader.schema.names))
            pacsv.write_csv(text_safe(csv_ready(batch)), out, pacsv.WriteOptions(include_header=False))
        else:
            out.write(_json_lines(batch, json_columns).encode())
        first = False
        n += batch.num_rows
    if first and style == "csv":          # no batch at all: the header alone
        out.write(csv_header(reader.schema.names))
    out.flush()
    return n


def _json_lines(batch, json_columns) -> str:
    """A batch's rows as JSON objects, one a line; a name repeated in the result is numbered
    (``a``, ``a_1``), as the keys of an object must differ."""
    import json

    from .sql_types import printable, unique_names

    columns = [c.to_pylist() for c in printable(batch).columns]
    for i in json_columns:
        columns[i] = [None if v is None else json.loads(v) for v in columns[i]]
    names = unique_names(batch.schema.names)
    return "".join(json.dumps(dict(zip(names, row)), default=str) + "\n" for row in zip(*columns))


def _raise_interrupt(e: BaseException) -> None:
    """Ctrl-C or SIGTERM while DuckDB pulled a replay's batches: the KeyboardInterrupt or
    SystemExit the signal raised in obook's producer reaches here only as the last line of
    the Python traceback in DuckDB's error text ("Unknown error"); raised again, the command
    ends as any interrupted one (exit 130 or 128 + the signal)."""
    last = str(e).rstrip().rsplit("\n", 1)[-1]
    if last == "KeyboardInterrupt":
        raise KeyboardInterrupt from None
    code = re.fullmatch(r"SystemExit: (\d+)", last)
    if code:
        raise SystemExit(int(code.group(1))) from None


_NOT_SUPPORTED = re.compile(r"Macro (obook_\w+)\(\) does not support the supplied arguments")


def _unknown_option(query: str, text: str) -> str | None:
    """DuckDB's binder error of an obook macro given an option it does not take (its text lists
    the macro's parameters, not the name given) as an error naming that option as the query
    typed it; None when the error is another or the query names no unknown option."""
    found = _NOT_SUPPORTED.search(text)
    if found is None:
        return None
    macro = found.group(1)
    # each candidate's parameters, (name, has a default), in order (two for obook_time_of_day)
    candidates = [[(p.split(" := ")[0].strip(), " := " in p) for p in params.split(", ") if p.strip()]
                  for params in re.findall(rf"^\s*{macro}\((.*)\)\s*$", text, re.MULTILINE)]
    taken: list[str] = []
    for name, _ in (p for c in candidates for p in c):
        if name not in taken and name not in ("path", _HIDDEN_PARAMETER):
            taken.append(name)
    lowered = {t.lower() for t in taken}
    calls = [_split_arguments(args) for args in _call_arguments(query, macro)]
    for args in calls:
        for given in (re.match(r"\s*(\w+)\s*:=", a) for a in args):
            if given and given.group(1).lower() not in lowered:      # (DuckDB's names are case-insensitive)
                return f"{macro} takes no option {given.group(1)!r}; it takes {', '.join(taken)}"
    if not candidates:
        return None
    longest = max(candidates, key=len)
    for args in calls:
        by_position = [a for a in args if not re.match(r"\s*\w+\s*:=", a)]
        named = {re.match(r"\s*(\w+)", a).group(1).lower() for a in args if a not in by_position}
        n = len(by_position)
        if n > len(longest):
            shown = [name for name, _ in longest if name != _HIDDEN_PARAMETER]
            return f"{macro} takes at most {len(shown)} arguments by position ({', '.join(shown)}), not {n}"
        required = [name for name, default in longest if not default]
        missing = [name for name in required[n:] if name.lower() not in named]
        if missing and all(len([x for x, d in c if not d]) > n for c in candidates):
            needs = required[0] if len(required) == 1 else f"{', '.join(required[:-1])} and {required[-1]}"
            also = f", or {missing[0]} := ..." if missing[0] != required[0] else ""
            return (f"{macro} needs {needs} (by position{also}); it was given {n} argument"
                    f"{'' if n == 1 else 's'} by position")
    return None


#: a table macro's parameter taking an argument given by position past its own (obook.duckdb's)
_HIDDEN_PARAMETER = "__by_position"


def _split_arguments(args: str) -> list[str]:
    """A call's arguments (quoted text blanked) split at its top-level commas; none: []."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(args):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(args[start:i])
            start = i + 1
    parts.append(args[start:])
    return [] if parts == [""] or (len(parts) == 1 and not parts[0].strip()) else parts


def _call_arguments(query: str, macro: str) -> list[str]:
    """The text inside the parentheses of each call of ``macro`` in ``query``, its quoted text
    blanked out (a ``:=`` inside a string is no option)."""
    blank = re.sub(r"'(?:[^']|'')*'", lambda m: "'" + " " * (len(m.group(0)) - 2) + "'", query)
    calls = []
    for start in re.finditer(rf"(?<![\w.]){macro}\s*\(", blank, re.IGNORECASE):
        depth, i = 1, start.end()
        while i < len(blank) and depth:
            depth += {"(": 1, ")": -1}.get(blank[i], 0)
            i += 1
        calls.append(blank[start.end():i - 1])
    return calls


def _first_line(e: BaseException) -> str:
    """DuckDB errors carrying a Python traceback: keep the message, drop the ``Detail:``."""
    text = str(e).strip()
    for marker in (". Detail: Python exception:", "\n\nLINE "):
        cut = text.find(marker)
        if cut >= 0:
            text = text[:cut]
    return " ".join(_NOISE.sub("", text).split())


def write_result(reader, path: Path) -> int:
    """Stream ``reader`` into ``path`` (format from the extension); returns the row count."""
    import pyarrow as pa

    from ..output import write_file

    style = _output_format(path)       # (an output file's kind, as --format's styles)
    if style == "csv":
        reader = _CsvReady(reader)
    try:
        return write_file(reader, path)
    except pa.ArrowException as e:
        raise ObookError(f"query failed: {_first_line(e)}") from e


class _CsvReady:
    """``reader``'s batches made ready for the CSV writer (``sql_types.csv_ready``: a DATE or
    TIMESTAMP infinity as DuckDB's text, not the integer Arrow holds it as), as stdout's."""

    def __init__(self, reader):
        self.reader, self.schema = reader, reader.schema

    def __iter__(self):
        from .sql_types import csv_ready

        return (csv_ready(batch) for batch in self.reader)


def _query_rows(reader):
    """``reader`` whose failures while DuckDB runs the query (a feed error after the first
    batches reaches here as an OSError carrying a Python traceback) are one-line ObookErrors
    "query failed: ...", told apart from the failures of writing the rows."""
    import duckdb
    import pyarrow as pa

    def batches():
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except (OSError, pa.ArrowException, duckdb.Error) as e:
                _raise_interrupt(e)
                raise ObookError(f"query failed: {_first_line(e)}") from e
            yield batch
    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _counting(reader, counted):
    """``reader`` whose batches report the running row count to ``counted`` (None: as is)."""
    if counted is None:
        return reader
    import pyarrow as pa

    def batches():
        n = 0
        for batch in reader:
            n += batch.num_rows
            counted(n)
            yield batch
    return pa.RecordBatchReader.from_batches(reader.schema, batches())


class _Limit:
    """The first ``n`` rows of a reader (None: every row) as a reader; ``more`` is set when
    it left rows out. Pulling stops there, so the query stops too."""

    def __init__(self, reader, n: Optional[int]):
        self.more = False
        self.reader = reader if n is None else self._first(reader, n)

    def _first(self, reader, n: int):
        import pyarrow as pa

        def batches():
            left = n
            for batch in reader:
                if batch.num_rows > left:
                    self.more = True
                    if left:
                        yield batch.slice(0, left)
                    return
                left -= batch.num_rows
                yield batch
        return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _print_table(reader, max_rows: int) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    for field in reader.schema:
        table.add_column(field.name, justify="right" if _numeric(field.type) else "left",
                         overflow="fold")
    from .sql_types import printable

    limit = _Limit(reader, max_rows)
    shown = 0
    for batch in limit.reader:
        for row in zip(*(c.to_pylist() for c in printable(batch).columns)):     # by place: names may repeat
            table.add_row(*("" if v is None else str(v) for v in row))
            shown += 1
    # a pipe or a file gets the table unwrapped (rich would fold it into 80 columns)
    console = Console() if sys.stdout.isatty() else Console(width=1_000_000)
    console.on_broken_pipe = _broken_pipe     # rich's own exits 1: a reader gone ends quietly (writing_stdout)
    console.print(table)
    suffix = f" (first {max_rows}; more rows not shown)" if limit.more else ""
    console.print(f"{shown} row{'s' if shown != 1 else ''}{suffix}", style="dim")


def _broken_pipe() -> None:
    raise BrokenPipeError


def _numeric(t) -> bool:
    import pyarrow.types as pt

    return pt.is_integer(t) or pt.is_floating(t) or pt.is_decimal(t)


def sql(
    query: Annotated[str, typer.Argument(
        help="SQL to run (DuckDB dialect), e.g. \"SELECT * FROM obook_bbo('day.itch') LIMIT 10\".",
        show_default=False)],
    output: Annotated[Optional[Path], typer.Option(
        "--output", "-o",
        help="Write the result to this file instead of printing it; its format comes from "
             "the extension: .parquet (or .pq), .csv or .arrow (or .feather, .ipc). Every row, or the first --max-rows; "
             "--format is refused with it (an error). A .parquet or .arrow file records obook's units (as obook "
             "convert's) when the result is one obook table's columns as it gives them: column names or * from "
             "one obook_<table>('path', ...), with WHERE, ORDER BY, LIMIT ...; any other result records none, "
             "and obook_price, obook_time_of_day ... refuse the file unless format := names its feed's format.",
        dir_okay=False, writable=True)] = None,
    max_rows: Annotated[Optional[int], typer.Option(
        "--max-rows", "-n", min=0,
        help="At most this many rows, printed or written with --output; the query stops there. "
             "Default: 40 for --format table, every row for csv, json and --output.",
        show_default=False)] = None,
    format: Annotated[Optional[PrintFormat], typer.Option(
        "--format",
        help="How to print the result on stdout: table (the first --max-rows rows, 40 by default), "
             "or every row as csv (with a header) or json (one object a line). Default: table on a "
             "terminal, csv in a pipe or a file. Not with --output (its extension gives the format).",
        show_default=False)] = None,
    database: Annotated[str, typer.Option(
        "--database",
        help="DuckDB database file to open (default: a fresh in-memory database).")] = ":memory:",
) -> None:
    """Run a SQL query over market-data feeds with DuckDB; print or save the result.

    The full description (every obook function, examples) is ``sql_help.help_text()``.
    """
    if output is not None:
        from ..output import check_not_an_input

        if format is not None:
            raise ObookError(f"--format {format.value} prints on stdout; --output {output} takes its format "
                             "from its extension: give one of them, not both")
        _output_format(output)            # fail before running a long query
        check_not_an_input(output, re.findall(r"'((?:[^']|'')*)'", query))     # the query's quoted paths
    if format is None:
        format = PrintFormat.table if sys.stdout.isatty() else PrintFormat.csv
    from ..duckdb import connect
    from ..interrupts import interrupting

    con = connect(database)
    with interrupting(con.interrupt):       # a signal stops DuckDB at once, mid-query too
        try:
            _run(con, query, output, format, max_rows)
        finally:
            con.close()


def _run(con, query: str, output: Optional[Path], format: PrintFormat, max_rows: Optional[int]) -> None:
    """``query`` on ``con``: its rows (the first ``max_rows``) printed or written to ``output``."""
    style = format.value if output is None else _output_format(output)
    units = None
    if output is not None and style != "csv":        # (a CSV file holds no metadata)
        from .sql_units import result_units

        units = result_units(con, query)
    reader, json_columns = run_query(con, query, style, str(output))
    rows_of = reader if reader is None else _query_rows(reader)
    if rows_of is not None and units is not None:
        from .sql_units import with_units

        rows_of = with_units(rows_of, units(rows_of.schema.names))
    try:
        if reader is None:
            if output is not None:
                raise OutputError(f"{output}: the statement returned no rows to write")
            typer.echo("ok", err=True)
        elif output is None:
            from .stdout import writing_stdout

            try:
                with writing_stdout():
                    if format is PrintFormat.table:
                        _print_table(rows_of, 40 if max_rows is None else max_rows)
                    else:
                        _write_stdout(_Limit(rows_of, max_rows).reader, format.value, json_columns)
            except Exception as e:
                import pyarrow as pa

                if isinstance(e, pa.ArrowException):
                    raise ObookError(f"query failed: {_first_line(e)}") from e
                raise
        else:
            from .progress import rows_progress

            limit = _Limit(rows_of, max_rows)
            with rows_progress("rows written") as counted:
                rows = write_result(_counting(limit.reader, counted), output)
            more = f" (the first --max-rows {max_rows}; the result has more)" if limit.more else ""
            from .stdout import rows_said

            typer.echo(f"wrote {rows_said(rows)} to {output}{more}", err=True)
    finally:
        del reader, rows_of


sql.__doc__ = help_text()
