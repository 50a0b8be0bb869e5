"""``obook sql``: the typer command of obook/cli/sql.py, run through typer's CliRunner."""

from __future__ import annotations

import signal

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from obook.cli.sql import sql
from obook.errors import ObookError, OutputError
from frontend_feeds import SMALL_BBO, write_failing_feed, write_small_feed


@pytest.fixture()
def app():
    a = typer.Typer()
    a.command("sql")(sql)
    a.command("noop")(lambda: None)    # two commands: "sql" stays a sub-command
    return a


@pytest.fixture()
def small(tmp_path):
    return write_small_feed(tmp_path / "small.itch")


def test_cli_sql_prints_table_of_query_result(app, small):
    result = CliRunner().invoke(app, ["sql", f"SELECT ticker, count(*) AS n FROM obook_bbo('{small}') "
                                             "GROUP BY ALL ORDER BY 1", "--format", "table"])
    assert result.exit_code == 0, result.output
    assert "AAA" in result.output and "BBB" in result.output
    assert "2 rows" in result.output


def test_cli_sql_max_rows_limits_printed_rows(app, small):
    result = CliRunner().invoke(app, ["sql", f"SELECT seq FROM obook_bbo('{small}')", "--max-rows", "3",
                                      "--format", "table"])
    assert result.exit_code == 0, result.output
    assert "3 rows (first 3" in result.output


def _piped(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "obook", "sql", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_sql_stdout_a_pipe_prints_csv_every_row(small):
    r = _piped(f"SELECT seq, ticker FROM obook_bbo('{small}') ORDER BY seq")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ['seq,ticker'] + [f'{row[0]},"{row[2]}"' for row in SMALL_BBO]


def test_cli_sql_csv_header_on_stdout_same_as_in_a_file_quoted_only_when_needed(tmp_path):
    query = 'SELECT 1 AS "a,b", 2 AS x, 3 AS "say ""hi"""'
    header = '"a,b",x,"say ""hi"""'
    r = _piped(query)
    assert r.returncode == 0, r.stderr
    _piped(query, "-o", str(tmp_path / "x.csv"))
    assert r.stdout.splitlines()[0] == (tmp_path / "x.csv").read_text().splitlines()[0] == header
    assert _piped(query + " WHERE false").stdout == header + "\n"


def test_cli_sql_table_in_a_pipe_unwrapped_one_line_a_row():
    wide = ", ".join(f"'{'x' * 30}{i}' AS column_{i}" for i in range(6))
    r = _piped(f"SELECT {wide}", "--format", "table")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if "x" * 30 in line]
    assert len(rows) == 1 and all(f"{'x' * 30}{i}" in rows[0] for i in range(6))


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".arrow"])
def test_cli_sql_output_writes_whole_result_by_extension(app, small, tmp_path, suffix):
    out = tmp_path / f"x{suffix}"
    result = CliRunner().invoke(app, ["sql", f"SELECT * FROM obook_spread('{small}') ORDER BY seq",
                                      "--output", str(out)])
    assert result.exit_code == 0, result.output
    table = _read(out)
    assert table.num_rows == len(SMALL_BBO)
    assert table.column("seq").to_pylist() == [r[0] for r in SMALL_BBO]
    assert [p.name for p in tmp_path.iterdir()] == ["small.itch", out.name]


@pytest.mark.parametrize("style", ["table", "csv", "json"])
def test_cli_sql_output_with_format_refused_one_line_error_no_file(tmp_path, style):
    r = _piped("SELECT 1 AS x", "-o", str(tmp_path / "x.csv"), "--format", style)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"error: --format {style} prints on stdout; --output {tmp_path / 'x.csv'} takes its "
                        "format from its extension: give one of them, not both\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".arrow"])
def test_cli_sql_max_rows_with_output_writes_first_rows(tmp_path, suffix):
    out = tmp_path / f"x{suffix}"
    r = _piped("SELECT i FROM range(100000) t(i) ORDER BY i", "-n", "5", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stderr.endswith(f"wrote 5 rows to {out} (the first --max-rows 5; the result has more)\n"), r.stderr
    assert _read(out).column("i").to_pylist() == [0, 1, 2, 3, 4]


def _read(out) -> pa.Table:
    """A file ``obook sql -o`` wrote, read by its extension."""
    if out.suffix == ".parquet":
        return pq.read_table(out)
    if out.suffix == ".csv":
        return pcsv.read_csv(out)
    return pa.ipc.open_file(out).read_all()


def test_cli_sql_max_rows_with_output_whole_result_no_note(tmp_path):
    out = tmp_path / "x.csv"
    r = _piped("SELECT i FROM range(3) t(i)", "-n", "3", "-o", str(out))
    assert r.returncode == 0 and r.stderr.endswith(f"wrote 3 rows to {out}\n"), r.stderr
    assert out.read_text().splitlines() == ["i", "0", "1", "2"]


def test_cli_sql_output_of_one_row_says_one_row(tmp_path):
    out = tmp_path / "x.csv"
    r = _piped("SELECT 7 AS i", "-o", str(out))
    assert r.returncode == 0 and r.stderr.endswith(f"wrote 1 row to {out}\n"), r.stderr


@pytest.mark.parametrize("style, lines", [("csv", ["i", "0", "1"]), ("json", ['{"i": 0}', '{"i": 1}'])])
def test_cli_sql_max_rows_limits_csv_and_json_rows(style, lines):
    r = _piped("SELECT i FROM range(100000) t(i) ORDER BY i", "-n", "2", "--format", style)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == lines


def test_cli_sql_unknown_output_extension_raises_output_error(app, small, tmp_path):
    result = CliRunner().invoke(app, ["sql", "SELECT 1", "--output", str(tmp_path / "x.xlsx")])
    assert isinstance(result.exception, OutputError)
    assert "unknown output format" in str(result.exception)


def test_cli_sql_bad_query_raises_one_line_obook_error(app):
    result = CliRunner().invoke(app, ["sql", "SELEC 1"])
    assert isinstance(result.exception, ObookError)
    assert "\n" not in str(result.exception) and "syntax error" in str(result.exception)


@pytest.mark.parametrize("query", ["", "   \n", ";", "-- only a comment", "/* nothing */ ;"])
def test_cli_sql_query_without_a_statement_one_line_error_nonzero_exit(query):
    r = _piped("--", query)            # (a query starting with "--" is not an option)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("error: the query has no SQL statement") and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("where", ["missing/db.duckdb", "a_directory"])
def test_cli_sql_database_that_cannot_open_raises_one_line_obook_error(app, tmp_path, where):
    (tmp_path / "a_directory").mkdir()
    result = CliRunner().invoke(app, ["sql", "SELECT 1", "--database", str(tmp_path / where)])
    assert isinstance(result.exception, ObookError)
    assert "\n" not in str(result.exception) and str(tmp_path / where) in str(result.exception)


def test_cli_sql_failing_feed_leaves_no_output_file(app, tmp_path):
    bad = write_failing_feed(tmp_path / "bad.itch")
    out = tmp_path / "x.parquet"
    result = CliRunner().invoke(app, ["sql", f"SELECT * FROM obook_bbo('{bad}')", "--output", str(out)])
    assert isinstance(result.exception, ObookError)
    assert "message 7" in str(result.exception)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.itch"]


def test_cli_sql_missing_feed_raises_obook_error(app, tmp_path):
    result = CliRunner().invoke(app, ["sql", f"SELECT * FROM obook_bbo('{tmp_path / 'nope.itch'}')"])
    assert isinstance(result.exception, ObookError)
    assert "no such feed file" in str(result.exception)


def test_cli_sql_help_every_function_listed_with_each_of_its_parameters():
    """Each obook function DuckDB has after install is in the help with its parameters: in its
    own parentheses, or (``name(...)``) in the heading of its group."""
    import re

    import duckdb

    from obook.cli import app
    from obook.duckdb import install

    text = CliRunner().invoke(app, ["sql", "--help"], terminal_width=200).output
    blocks = [" ".join(block.split()) for block in text.split("\n\n")]
    con = install(duckdb.connect())
    functions = con.sql("SELECT DISTINCT function_name, parameters FROM duckdb_functions() "
                        "WHERE function_name LIKE 'obook%' AND function_name NOT LIKE '%slot%'").fetchall()
    assert len(functions) > 20
    for name, params in functions:
        block = next((b for b in blocks if re.search(rf"\b{name}\(", b)), None)
        assert block is not None, f"{name} is not in `obook sql --help`"
        listed = re.search(rf"\b{name}\(([^)]*)\)", block).group(1)
        if listed.startswith("..."):
            listed += " " + block[:re.search(r"\bobook_\w+\(", block).start()]      # the group's heading
        for p in params:
            # a scalar UDF's positional arguments; a table macro's __by_position, where an argument
            # given by position past the path lands to be refused
            if not re.fullmatch(r"col\d+", p) and not p.startswith("__"):
                assert re.search(rf"\b{p}\b", listed), f"{name}'s parameter {p} is not listed with it"


def test_cli_sql_timestamps_in_utc_whatever_the_feeds_zone(app, tmp_path):
    from obook.gen.itch import write_itch
    from obook.gen.szse import write_szse

    sz, itch = tmp_path / "day.log", tmp_path / "day.itch"
    write_szse(sz, 2000, seed=1)
    write_itch(itch, 2000, 5, seed=1)
    ny = f"SELECT timestamp FROM obook_bbo('{itch}', date := '2019-12-30') LIMIT 1"
    mixed = f"SELECT * FROM ({ny}) UNION ALL SELECT * FROM (SELECT timestamp FROM obook_bbo('{sz}') LIMIT 1)"
    r = CliRunner().invoke(app, ["sql", mixed, "--format", "csv"])
    rows = r.output.splitlines()[1:]
    assert len(rows) == 2 and all(row.endswith("Z") for row in rows), r.output



#: a query whose error comes after its first million rows reached the reader
_FAILS_LATE = ("SELECT CASE WHEN i < 3000000 THEN i ELSE error('boom at ' || i) END AS x "
               "FROM range(4000000) t(i)")


@pytest.mark.parametrize("where", ["x.parquet", "x.csv", "x.arrow", "-"])
def test_cli_sql_error_after_first_batches_one_line_query_failed(tmp_path, where):
    args = ["--format", "csv"] if where == "-" else ["-o", str(tmp_path / where)]
    r = _piped(_FAILS_LATE, *args)
    assert r.returncode == 1
    assert r.stderr == "error: query failed: Invalid Input Error: boom at 3000000\n"
    assert list(tmp_path.iterdir()) == []


def test_cli_sql_table_into_pipe_closed_early_exits_zero_quietly():
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "obook", "sql", "SELECT * FROM range(20000)", "--format", "table",
                          "--max-rows", "20000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()                     # as `| head -1` does
    err = p.stderr.read()
    assert p.wait(timeout=300) == 0 and err == b""


@pytest.mark.parametrize("rows_first", [0, 3_000_000])
def test_cli_sql_interrupt_while_duckdb_pulls_batches_raises_keyboard_interrupt(tmp_path, monkeypatch, rows_first):
    """Ctrl-C lands in the Python producer DuckDB pulls from (a replay's batches): before the
    first result (the query's start) or after a few million rows (while writing)."""
    import duckdb

    import obook.duckdb
    from obook.cli import sql as cli_sql

    schema = pa.schema([("x", pa.int64())])

    def batches():
        for start in range(0, rows_first, 1_000_000):
            yield pa.record_batch([pa.array(range(start, start + 1_000_000), pa.int64())], schema=schema)
        raise KeyboardInterrupt

    def connect(database=":memory:"):
        con = duckdb.connect()
        con.register("src", pa.RecordBatchReader.from_batches(schema, batches()))
        return con

    monkeypatch.setattr(obook.duckdb, "connect", connect)
    with pytest.raises(KeyboardInterrupt):
        cli_sql.sql("SELECT * FROM src", output=tmp_path / "x.parquet", max_rows=None, format=None,
                    database=":memory:")
    assert list(tmp_path.iterdir()) == []


_BLOB = "SELECT 1 AS n, unhex('53ff00') AS raw UNION ALL SELECT 2, NULL ORDER BY n"


@pytest.mark.parametrize("style", ["csv", "json", "table"])
def test_cli_sql_blob_column_prints_as_hex(style):
    r = _piped(_BLOB, "--format", style)
    assert r.returncode == 0, r.stderr
    assert "53ff00" in r.stdout
    if style == "csv":
        assert r.stdout.splitlines() == ['n,raw', '1,"53ff00"', "2,"]


def test_cli_sql_blob_column_into_csv_file_is_hex(app, tmp_path):
    out = tmp_path / "x.csv"
    result = CliRunner().invoke(app, ["sql", _BLOB, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines() == ["n,raw", '1,"53ff00"', "2,"]


def test_cli_sql_obook_messages_into_a_pipe_prints_every_row(small):
    r = _piped(f"SELECT seq, raw FROM obook_messages('{small}') ORDER BY seq")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == 'seq,raw' and len(lines) == 1 + _messages_count(small)
    assert lines[1].startswith('1,"53')          # message 1: a system event, type 'S'


def _messages_count(path) -> int:
    import obook

    return obook.messages(path).read_all().num_rows


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_cli_sql_signal_while_duckdb_runs_the_query_exits_as_interrupted_no_traceback(signum, code):
    """DuckDB ends a query it finds interrupted with an error of its own ("Query interrupted"),
    in place of the KeyboardInterrupt or SystemExit the signal raised: the command still ends
    as interrupted (Ctrl-C: 130, SIGTERM: 143), without a traceback."""
    import subprocess
    import sys
    import time

    import psutil

    query = "SELECT count(*) FROM range(10000000000000) t(i) WHERE i % 7 = 3"     # runs for hours
    p = subprocess.Popen([sys.executable, "-m", "obook", "sql", query], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    me = psutil.Process(p.pid)
    while p.poll() is None and sum(me.cpu_times()[:2]) < 3.0:    # started (~1 s), then the query runs
        time.sleep(0.05)
    p.send_signal(signum)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:       # the signal was lost: the query would run for hours
        p.kill()
        p.communicate()
        raise
    assert p.returncode == code and b"Traceback" not in err, err.decode()[-2000:]
    assert out == b""


#: (a DuckDB value, its text in the table and CSV, its JSON value): every DuckDB type
_TYPED = [
    ("INTERVAL '1 minute'", "00:01:00", "00:01:00"),
    ("INTERVAL '-1 month 2 days 3.5 seconds'", "-1 month 2 days 00:00:03.5", "-1 month 2 days 00:00:03.5"),
    ("1.23::DECIMAL(10, 2)", "1.23", "1.23"),
    ("170141183460469231731687303715884105727::HUGEINT", "170141183460469231731687303715884105727",
     "170141183460469231731687303715884105727"),
    ("340282366920938463463374607431768211455::UHUGEINT", "340282366920938463463374607431768211455",
     "340282366920938463463374607431768211455"),
    ("'5b6c0f34-7f0e-4a39-9c59-1c3f2c5e6a11'::UUID", "5b6c0f34-7f0e-4a39-9c59-1c3f2c5e6a11",
     "5b6c0f34-7f0e-4a39-9c59-1c3f2c5e6a11"),
    ("unhex('aa00')", "aa00", "aa00"),
    ("[1, 2]", "[1, 2]", [1, 2]),
    ("[1, 2]::INTEGER[2]", "[1, 2]", [1, 2]),
    ("{'a': 1, 'b': 'x'}", "{'a': 1, 'b': x}", {"a": 1, "b": "x"}),
    ("MAP {'k': 1}", "{k=1}", {"k": 1}),
    ("union_value(k := 1)", "1", {"k": 1}),
    ("[INTERVAL 1 DAY]", "[1 day]", ["1 day"]),
    ("TIME '12:34:56'", "12:34:56.000000", "12:34:56.000000"),
    ("TIME '24:00:00'", "24:00:00.000000", "24:00:00.000000"),
    ("TIMETZ '12:00:00+02'", "12:00:00+02", "12:00:00+02"),
    ("TIMESTAMPTZ '2020-01-01 00:00:00+01'", "2019-12-31 23:00:00.000000Z", "2019-12-31 23:00:00.000000Z"),
    ("DATE '2020-01-01'", "2020-01-01", "2020-01-01"),
    ("'infinity'::DATE", "infinity", "infinity"),
    ("'-infinity'::TIMESTAMP_NS", "-infinity", "-infinity"),
    ("'infinity'::TIMESTAMPTZ", "infinity", "infinity"),
    ("'101'::BIT", "101", "101"),
    ("123::VARINT", "123", "123"),
    ("NULL", "", None),
]
_TYPED_QUERY = "SELECT " + ", ".join(f"{value} AS c{i}" for i, (value, _, _) in enumerate(_TYPED))


@pytest.mark.parametrize("style", ["table", "csv", "json"])
def test_cli_sql_every_duckdb_type_prints_in_every_format(style):
    import csv
    import json

    r = _piped(_TYPED_QUERY, "--format", style)
    assert r.returncode == 0, r.stderr
    if style == "json":
        assert json.loads(r.stdout) == {f"c{i}": value for i, (_, _, value) in enumerate(_TYPED)}
        return
    if style == "csv":
        header, row = csv.reader(r.stdout.splitlines())
    else:
        header, row = ([cell.strip() for cell in line.split("│" if "│" in line else "┃")[1:-1]]
                       for line in r.stdout.splitlines() if "c0" in line or "00:01:00" in line)
    assert header == [f"c{i}" for i in range(len(_TYPED))]
    assert row == [text for _, text, _ in _TYPED]


def test_cli_sql_csv_file_of_every_duckdb_type_equals_csv_on_stdout(tmp_path):
    out = tmp_path / "typed.csv"
    r = _piped(_TYPED_QUERY, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text() == _piped(_TYPED_QUERY, "--format", "csv").stdout


@pytest.mark.parametrize("style", ["table", "json"])
def test_cli_sql_repeated_column_names_print_every_value(style):
    r = _piped("SELECT 1 AS a, 2 AS a, 3 AS a_1", "--format", style)
    assert r.returncode == 0, r.stderr
    if style == "json":
        assert r.stdout == '{"a": 1, "a_1": 2, "a_1_1": 3}\n'
    else:
        rows = [line.split() for line in r.stdout.splitlines() if line.startswith("│")]
        assert rows == [["│", "1", "│", "2", "│", "3", "│"]]


@pytest.mark.parametrize("value, kind", [("INTERVAL 1 DAY", "INTERVAL"), ("[INTERVAL 1 DAY]", "INTERVAL[]"),
                                         ("union_value(k := 1)", "UNION(k INTEGER)")])
def test_cli_sql_type_parquet_cannot_hold_one_line_error_no_file(tmp_path, value, kind):
    out = tmp_path / "x.parquet"
    r = _piped(f"SELECT 1 AS n, {value} AS v", "-o", str(out))
    assert r.returncode == 1
    assert r.stderr == (f"error: {out}: column 'v' is {kind}, which a Parquet file cannot hold here; write .arrow, "
                        "or CAST it in the query (e.g. CAST(\"v\" AS VARCHAR))\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_cli_sql_duckdb_only_types_into_file_exact_values(tmp_path, suffix):
    from decimal import Decimal

    out = tmp_path / f"x{suffix}"
    r = _piped("SELECT '101'::BIT AS b, 123::VARINT AS v, TIMETZ '12:00:00+02' AS t, "
               "170141183460469231731687303715884105727::UHUGEINT AS u, INTERVAL 1 DAY AS i", "-o", str(out))
    if suffix == ".parquet":        # (its INTERVAL is refused: the other columns are the point here)
        assert r.returncode == 1 and "column 'i' is INTERVAL" in r.stderr
        r = _piped("SELECT '101'::BIT AS b, 123::VARINT AS v, TIMETZ '12:00:00+02' AS t, "
                   "170141183460469231731687303715884105727::UHUGEINT AS u", "-o", str(out))
    assert r.returncode == 0, r.stderr
    row = _read(out).to_pylist()[0]
    assert (row["b"], row["v"], row["t"], row["u"]) == ("101", "123", "12:00:00+02",
                                                        Decimal(2 ** 127 - 1))


def test_cli_sql_uhugeint_past_file_range_one_line_error_no_file(tmp_path):
    out = tmp_path / "x.arrow"
    r = _piped("SELECT 340282366920938463463374607431768211455::UHUGEINT AS u", "-o", str(out))
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert "column 'u': a UHUGEINT past 2**127 - 1 has no exact form in an Arrow file" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_cli_sql_help_a_list_of_files_each_replayed_on_its_own_as_it_runs(small, tmp_path):
    """The help says what a list of feed files is, and a query over one does that: each file
    replayed on its own (a copy of a file under another name gives its rows twice)."""
    from obook.cli import app as obook_app

    text = " ".join(CliRunner().invoke(obook_app, ["sql", "--help"], terminal_width=200).output.split())
    assert "a list of files or a glob pattern ('day*.itch'), each file replayed on its own" in text
    copy = tmp_path / "copy.itch"
    copy.write_bytes(small.read_bytes())
    query = "SELECT count(*) AS n FROM obook_bbo({})"
    one = CliRunner().invoke(obook_app, ["sql", query.format(f"'{small}'"), "--format", "csv"])
    both = CliRunner().invoke(obook_app, ["sql", query.format(f"['{small}', '{copy}']"), "--format", "csv"])
    assert int(both.output.split()[-1]) == 2 * int(one.output.split()[-1]) > 0, (one.output, both.output)


def test_cli_sql_unknown_option_error_lists_the_options_without_the_hidden_one(tmp_path):
    from obook.gen.csv import write_csv

    day = tmp_path / "day.csv"
    write_csv(day, 50, 2, seed=1)
    r = _piped(f"SELECT * FROM obook_bbo('{day}', bogus := 1)")
    assert r.returncode == 1 and ("query failed: obook_bbo takes no option 'bogus'; it takes workers, format, on_error, "
                                  "tickers, date, prices, filename") in r.stderr, r.stderr
    assert "__by_position" not in r.stderr


@pytest.mark.parametrize(("call", "says"), [
    ("FROM obook_twas({feed}, nope := 1)",
     "obook_twas takes no option 'nope'; it takes start_time, end_time, workers, format, on_error, date, "
     "tickers, prices, filename"),
    ("FROM obook_bbo_grid({feed}, 60, start := 5, Tickers := 'AAA')",
     "obook_bbo_grid takes no option 'start'; it takes every, start_time, end_time, workers, format, on_error, "
     "date, tickers, prices, filename"),
    ("SELECT obook_price(bid_px, {feed}, fromat := 'itch') FROM obook_bbo({feed})",
     "obook_price takes no option 'fromat'; it takes price, feed, format"),
    ("SELECT obook_time_of_day(time, {feed}, unit := 1) FROM obook_bbo({feed})",
     "obook_time_of_day takes no option 'unit'; it takes time, feed, format"),
    ("FROM obook_twas()", "obook_twas needs path (by position); it was given 0 arguments by position"),
    ("FROM obook_bbo_grid({feed})", "obook_bbo_grid needs path and every (by position, or every := ...); it was "
                                    "given 1 argument by position"),
    ("SELECT obook_price(bid_px) FROM obook_bbo({feed})",
     "obook_price needs price and feed (by position, or feed := ...); it was given 1 argument by position"),
    ("SELECT obook_price(1, {feed}, 'itch', 5)",
     "obook_price takes at most 3 arguments by position (price, feed, format), not 4"),
])
def test_cli_sql_macro_unknown_option_or_argument_count_named_as_typed(app, small, call, says):
    """DuckDB's binder error lists the macro's parameters, never what was wrong: the command says it."""
    result = CliRunner().invoke(app, ["sql", call.format(feed=f"'{small}'")])
    assert isinstance(result.exception, ObookError), result.output
    assert str(result.exception) == f"query failed: {says}", str(result.exception)


def test_cli_sql_macro_arguments_wrong_otherwise_keeps_duckdbs_text(app, small):
    result = CliRunner().invoke(app, ["sql", f"SELECT obook_price(1, '{small}', format := 'itch', format := 'x')"])
    assert isinstance(result.exception, ObookError)
    assert "obook_price" in str(result.exception) and "takes no option" not in str(result.exception)
