"""``obook table``: any table of the registry (obook.tables) of a feed, to stdout as CSV or
to a file. Its options are the registry's: one ``--option`` for each (``--levels``,
``--interval``, ``--every`` ...), typed by its declaration; a table refuses the ones it does
not take, naming those it does."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..tables import OPTIONS, offered, tables
from .bbo import COMPRESSION_HELP, Compression, FeedFormatName, OnError

#: registry options the command declares itself (with a short flag: -f)
_OWN = ("format",)
#: the short flags obook bbo has too
_SHORT = {"workers": ("-w",), "tickers": ("-k",), "date": ("-d",)}
#: DuckDB type of an option -> the Python type typer parses
_TYPES = {"BIGINT": int, "UBIGINT": int, "DOUBLE": float, "BOOLEAN": bool, "VARCHAR": str, "VARCHAR[]": str}


def _names() -> list[str]:
    return [n for n in tables() if offered(n, "python")]


def table(name: str, feeds: List[Path], output: Optional[Path], format: Optional[str], compression="fast",
          **options) -> None:
    from ..errors import ObookError
    from ..output import check_not_an_input, output_kind, warn_stdout_compression, write_file
    from ..tables import table as declared
    from ..tables.open import open_table
    from .bbo import feed_source
    from .progress import file_progress
    from .stdout import writing_stdout

    if name not in _names():
        raise ObookError(f"unknown table {name!r}; choose from {', '.join(_names())}")
    spec = declared(name)
    given = {k: getattr(v, "value", v) for k, v in options.items() if v is not None}   # (a choice: its text)
    if format is not None:
        given["format"] = getattr(format, "value", format)
    wrong = sorted(set(given) - set(spec.all_options()))
    if wrong:
        raise ObookError(f"table {name} takes no {', '.join('--' + w.replace('_', '-') for w in wrong)}; its "
                         f"options: {', '.join('--' + o.replace('_', '-') for o in spec.all_options())}")
    missing = [o for o in spec.required() if o not in given]
    if missing:
        raise ObookError(f"table {name} needs {', '.join('--' + o.replace('_', '-') for o in missing)}: "
                         f"{'; '.join(OPTIONS[o].doc for o in missing)}")
    if output is not None:
        check_not_an_input(output, [os.fspath(f) for f in feeds])
        if output_kind(output) == "text" and name != "bbo":
            raise ObookError(f"{output}: .txt is obook bbo's text; a {name} table goes to .parquet, .arrow or .csv")
    source, fmt = feed_source(feeds, given.get("format"))      # several files: one feed
    if fmt is not None:
        given["format"] = fmt
    # rows printed on the terminal would be glued to the bar's line: no bar then
    show_bar = output is not None or not sys.stdout.isatty()
    compression = getattr(compression, "value", compression)
    if output is None:
        warn_stdout_compression(compression, "CSV")
    with file_progress(feeds, enabled=show_bar) as progress:
        reader = open_table(name, source, unknown_tickers="warn", progress=progress, **given)
        if output is not None:
            rows = write_file(reader, output, compression=compression)
            from .stdout import rows_said

            typer.echo(f"wrote {output} ({rows_said(rows)})", err=True)
            return
        with writing_stdout(reader):    # `| head`: a quiet exit; `> /dev/full`: an error
            _write_csv(reader, sys.stdout.buffer)


def _write_csv(reader, out) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from ..output import csv_header, text_safe, write_all

    header = csv_header(reader.schema.names)     # as obook's .csv files
    options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
    for batch in reader:        # the header once the rows start: an option refused first prints nothing
        if header:
            write_all(out, header)
            header = b""
        # through a buffer: Arrow's CSV writer drops what an unbuffered stdout does not take
        sink = pa.BufferOutputStream()
        pacsv.write_csv(text_safe(batch), sink, options)
        write_all(out, sink.getvalue())
    write_all(out, header)
    out.flush()


def _parameters() -> list[inspect.Parameter]:
    """The command's parameters: TABLE, FEED..., -o, --format, --compression and one option a registry option."""
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("name", kw, annotation=str, default=typer.Argument(
            ..., metavar="TABLE", show_default=False, help=f"The table: {', '.join(_names())}.")),
        inspect.Parameter("feeds", kw, annotation=List[Path], default=typer.Argument(
            ..., metavar="FEED...", show_default=False,
            help="Feed file (plain, .gz, .zst or .zip); '-' reads stdin. Several files of a format read as "
                 "one feed; a quoted glob pattern is its files, sorted.")),
        inspect.Parameter("output", kw, annotation=Optional[Path], default=typer.Option(
            None, "--output", "-o", metavar="FILE",
            help="Write to a file instead of stdout (CSV with a header); the type follows the extension: "
                 ".parquet (or .pq), .arrow (or .feather, .ipc), .csv.")),
        inspect.Parameter("format", kw, annotation=Optional[FeedFormatName], default=typer.Option(
            None, "--format", "-f", help="Force the feed format, in any case (default, or '': detect).")),
        inspect.Parameter("compression", kw, annotation=Compression, default=typer.Option(
            Compression.fast, "--compression", "-c", help=COMPRESSION_HELP)),
    ]
    for o in OPTIONS.values():
        if o.name in _OWN:
            continue
        kind = OnError if o.name == "on_error" else _TYPES[o.sql_type]     # its choices in --help
        flag = "--" + o.name.replace("_", "-")
        decls = (f"{flag}/--no-{o.name.replace('_', '-')}",) if kind is bool else (flag,) + _SHORT.get(o.name, ())
        shown = "" if o.default is None else f" [table default: {str(o.default).lower()}]"
        params.append(inspect.Parameter(o.name, kw, annotation=Optional[kind], default=typer.Option(
            None, *decls, show_default=False,
            help=f"{o.doc}{' (comma-separated)' if o.sql_type == 'VARCHAR[]' else ''}.{shown}")))
    return params


def _command(**kwargs) -> None:
    table(**kwargs)


_command.__signature__ = inspect.Signature(_parameters())
_command.__doc__ = """Replay FEED and write one of its tables: CSV with a header on stdout, or a file.

Every table a Python reader gives (obook.trades, obook.depth ... and the formats' own: mbp10, symbols ...) with
the same options; a table refuses an option it does not take, naming its own. Prices are the feed's integers
unless --prices decimal|float; file outputs record the units in their schema. A failing record prints
'error: <file>: <unit> N: <reason>' after every earlier row.
"""
