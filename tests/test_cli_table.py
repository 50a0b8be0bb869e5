"""``obook table``: any table of the registry, its options from the registry, to stdout as CSV
or to a file; the same rows as the Python reader."""

from __future__ import annotations

import io
import subprocess
import sys

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import obook
from cli_support import cli_error
from obook.gen.itch import write_itch


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    p = tmp_path_factory.mktemp("table") / "01022026.NASDAQ_ITCH50"
    write_itch(p, 20_000, 5, seed=3)
    return p


def _obook(*args) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "obook", *map(str, args)], capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    return run


def _csv_rows(data: bytes, schema):
    options = pacsv.ConvertOptions(column_types=schema, strings_can_be_null=True, quoted_strings_can_be_null=False)
    got = pacsv.read_csv(io.BytesIO(data), convert_options=options)
    return got.select(schema.names).to_pylist()


@pytest.mark.parametrize(("args", "expected"), [
    (("trades",), lambda f: obook.trades(f, workers=1)),
    (("depth", "--levels", "3"), lambda f: obook.depth(f, levels=3, workers=1)),
    (("bars", "--interval", "5 minutes", "-k", "AAB,AAC"),
     lambda f: obook.bars(f, interval="5 minutes", tickers=["AAB", "AAC"], workers=1)),
    (("orders", "--no-queue-positions"), lambda f: obook.orders(f, queue_positions=False, workers=1)),
])
def test_cli_table_stdout_csv_equals_the_python_reader(day, args, expected):
    table = expected(str(day)).read_all()
    out = _obook("table", args[0], day, "-w", "1", *args[1:]).stdout
    assert out.splitlines()[0].decode() == ",".join(table.schema.names)
    numeric = table.schema
    for i, f in enumerate(numeric):
        if str(f.type).startswith("timestamp"):
            numeric = numeric.remove(i)
            break
    assert table.num_rows > 0
    assert _csv_rows(out, numeric) == table.select(numeric.names).to_pylist()


def test_cli_table_parquet_output_equals_the_python_reader(day, tmp_path):
    out = tmp_path / "trades.parquet"
    _obook("table", "trades", day, "-o", out, "--prices", "decimal")
    assert pq.read_table(out).equals(obook.trades(str(day), prices="decimal").read_all())


def test_cli_table_option_the_table_does_not_take_names_its_options(day, capsys):
    err = cli_error(capsys, "table", "trades", day, "--levels", "3")
    assert "table trades takes no --levels; its options: --workers" in err


def test_cli_table_unknown_table_lists_the_tables(day, capsys):
    err = cli_error(capsys, "table", "quotes", day)
    assert "unknown table 'quotes'; choose from bbo, trades" in err


def test_cli_table_format_without_that_table_names_the_formats_that_have_it(day, capsys):
    assert "itch feeds have no table 'mbp10'" in cli_error(capsys, "table", "mbp10", day)


def test_cli_table_text_output_of_a_table_other_than_bbo_refused(day, tmp_path, capsys):
    err = cli_error(capsys, "table", "trades", day, "-o", tmp_path / "t.txt")
    assert ".txt is obook bbo's text" in err and not (tmp_path / "t.txt").exists()


def test_cli_table_cut_feed_error_after_every_row_before_it(day, tmp_path):
    cut = tmp_path / "cut.itch"
    cut.write_bytes(day.read_bytes()[: day.stat().st_size * 2 // 3])
    run = subprocess.run([sys.executable, "-m", "obook", "table", "trades", str(cut), "-w", "2"],
                         capture_output=True, timeout=300)
    assert run.returncode == 1
    err = run.stderr.decode()
    assert err.startswith(f"error: {cut}: message ") and "truncated record" in err and err.count("\n") == 1
    whole = obook.trades(str(day), workers=1).read_all()
    lines = run.stdout.decode().splitlines()[1:]
    assert 0 < len(lines) < whole.num_rows
    assert [int(x.split(",")[0]) for x in lines] == whole.column("seq").to_pylist()[: len(lines)]


def test_cli_table_into_a_pipe_closed_early_exits_zero(day):
    run = subprocess.run(f"{sys.executable} -m obook table orders {day} | head -1", shell=True,
                         capture_output=True, timeout=300)
    assert run.returncode == 0 and run.stdout.decode().startswith("seq,") and run.stderr == b""


def test_cli_table_grid_without_every_says_it_needs_every(day, capsys):
    assert "table bbo_grid needs --every: the grid step" in cli_error(capsys, "table", "bbo_grid", day)


def test_cli_table_bad_interval_error_before_any_output(day):
    run = subprocess.run([sys.executable, "-m", "obook", "table", "bars", str(day), "--interval", "xyz"],
                         capture_output=True, timeout=300)
    assert run.returncode == 1 and run.stdout == b""
    assert "interval must be like" in run.stderr.decode()


def test_cli_table_ticker_not_in_the_feed_warns_and_writes_the_header(day):
    for name in ("trades", "bars"):
        run = _obook("table", name, day, "-k", "ZZZZ")
        assert run.stdout.decode().splitlines() == [",".join(getattr(obook, name)(str(day), workers=1).schema.names)]
        assert "not in the feed: ZZZZ" in run.stderr.decode()


@pytest.mark.parametrize("to_file", [False, True])
def test_cli_table_messages_csv_raw_bytes_as_hex(day, tmp_path, to_file):
    expected = obook.messages(day).read_all()
    if to_file:
        _obook("table", "messages", day, "-o", tmp_path / "m.csv")
        data = (tmp_path / "m.csv").read_bytes()
    else:
        data = _obook("table", "messages", day).stdout
    options = pacsv.ConvertOptions(column_types={"raw": "string"}, strings_can_be_null=True,
                                   quoted_strings_can_be_null=False)
    got = pacsv.read_csv(io.BytesIO(data), convert_options=options).column("raw").to_pylist()
    want = expected.column("raw").to_pylist()
    assert len(got) == len(want) and sum(r is not None for r in want) > 10     # the records it does not decode
    assert [None if h is None else bytes.fromhex(h) for h in got] == want


def test_cli_table_help_lists_the_formats_and_on_error_choices():
    import os

    r = subprocess.run([sys.executable, "-m", "obook", "table", "--help"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert "<itch|csv|databento|sse|szse|szse-bin|szse-csv|itch-pcap|pitch>" in r.stdout, r.stdout
    assert "--on-error <raise|skip>" in r.stdout, r.stdout


def test_cli_table_compression_small_parquet_is_write_file_small(day, tmp_path):
    from obook.output import write_file

    _obook("table", "trades", day, "-o", tmp_path / "small.parquet", "-c", "small")
    _obook("table", "trades", day, "-o", tmp_path / "fast.parquet")
    write_file(obook.trades(str(day)), tmp_path / "want.parquet", compression="small")
    small = (tmp_path / "small.parquet").read_bytes()
    assert small == (tmp_path / "want.parquet").read_bytes()
    assert small != (tmp_path / "fast.parquet").read_bytes()


@pytest.mark.parametrize("output", [None, "t.csv", "t.arrow"])
def test_cli_table_compression_other_output_warns_not_used_same_rows(day, tmp_path, output):
    args = ["table", "trades", day, "-k", "AAB"] + ([] if output is None else ["-o", tmp_path / output])

    def run(*extra):
        r = _obook(*args, *extra)
        return r.stderr.decode(), r.stdout if output is None else (tmp_path / output).read_bytes()

    (plain_err, plain), (said, small) = run(), run("--compression", "small")
    assert "compression 'small' is Parquet's" in said and "Parquet's" not in plain_err
    assert small == plain and len(plain) > 1000
    where = "the CSV on stdout" if output is None else f"this {output[2:]} file"
    assert f"{where} is written as it is" in said


def test_cli_table_registry_has_no_option_named_compression():
    from obook.tables import OPTIONS

    assert "compression" not in OPTIONS     # obook table's own -c/--compression would take its name


@pytest.mark.parametrize("table", ["mbp1", "mbp10"])
def test_cli_table_databento_mbp_on_stdin_same_rows_as_the_path(tmp_path, table):
    from hostile_support import generated_day, obook_cli

    dbn = generated_day(tmp_path / "day.dbn", "databento", 3000)
    with open(dbn, "rb") as stdin:
        piped = obook_cli("table", table, "-", stdin=stdin)
    assert piped.returncode == 0, piped.stderr.decode()[-2000:]
    assert len(piped.stdout.splitlines()) == getattr(obook, table)(dbn, workers=1).read_all().num_rows + 1 > 1
    assert piped.stdout == _obook("table", table, dbn).stdout
