"""Rough edges of the command line: each ends in `error: ...` and exit 1, never a traceback."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from obook.gen.itch import write_itch
from tests.frontend_feeds import add, delete, directory, write_feed

runner = CliRunner()


@pytest.fixture(scope="module")
def feed(tmp_path_factory):
    path = tmp_path_factory.mktemp("edges") / "small.itch"
    write_itch(path, 1000, 5, seed=1)
    return path


def _fails(args, *needles):
    from obook.cli import main
    import sys

    old = sys.argv
    sys.argv = ["obook", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        sys.argv = old
    assert exit_info.value.code == 1
    return exit_info


def _error(capsys, args, *needles):
    _fails(args)
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


def test_cli_convert_output_is_a_file_error(feed, capsys):
    _error(capsys, ["convert", feed, feed], "exists and is not a folder; OUTDIR, the last argument")


def test_cli_convert_output_under_a_file_error(feed, capsys):
    _error(capsys, ["convert", feed, f"{feed}/out"], "cannot create the output directory")


def test_cli_convert_output_under_proc_error(feed, capsys):
    _error(capsys, ["convert", feed, "/proc/obook-out"], "cannot create the output directory")


def test_cli_lobster_output_is_a_file_error(feed, tmp_path, capsys):
    onto = tmp_path / "taken"
    onto.write_text("x")
    _error(capsys, ["lobster", feed, onto, "--tickers", "AAA", "--date", "2019-12-30"],
           "exists and is not a directory")


@pytest.mark.parametrize("args,needle", [
    (["gen", "itch", "/nonexistent/x.itch"], "cannot write"),
    (["gen", "itch", "{tmp}"], "is a directory"),
    (["gen", "itch", "{tmp}/x.itch", "--messages", "5"], "messages must be"),
])
def test_cli_gen_bad_output_or_arguments_error(tmp_path, capsys, args, needle):
    _error(capsys, [a.format(tmp=tmp_path) for a in args], needle)


@pytest.mark.parametrize("target,needle", [("{tmp}", "a directory, not a feed file"), ("/dev/null", "not a regular file"),
                                           ("{tmp}/none.itch", "no such feed file")])
def test_cli_bbo_feed_not_a_file_says_what_it_is(tmp_path, capsys, target, needle):
    _error(capsys, ["bbo", target.format(tmp=tmp_path)], needle)


def test_cli_bbo_output_directory_error(feed, tmp_path, capsys):
    _error(capsys, ["bbo", feed, "--output", tmp_path], "is a directory")


def test_cli_feed_error_names_the_file(tmp_path, capsys):
    bad = write_feed(tmp_path / "bad.itch", [directory(1, 1, "AAA"), add(2, 1, 7, "B", 100, "AAA", 5000),
                                              delete(3, 1, 99)])
    err = _error(capsys, ["bbo", bad, "--workers", "1"], str(bad), "message 3")
    assert err.count("\n") == 1


def test_write_file_error_names_final_path_not_temporary(tmp_path, monkeypatch):
    import pyarrow as pa

    import obook.output as out

    target = tmp_path / "x.csv"

    def failing(*args, **kwargs):
        raise OSError(f"disk trouble writing {tmp_path}/.x.csv.{__import__('os').getpid()}.tmp")
    monkeypatch.setattr(out.pacsv, "write_csv", failing)
    reader = pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]),
                                               [pa.record_batch([pa.array([1])], names=["a"])])
    with pytest.raises(out.OutputError) as info:
        out.write_file(reader, target)
    assert ".tmp" not in str(info.value) and str(target) in str(info.value)
    assert list(tmp_path.iterdir()) == []


def _obook(args, stdin: bytes = b""):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "obook", *map(str, args)], input=stdin,
                          capture_output=True, timeout=300)


def test_cli_bbo_stdin_gzip_itch_equals_the_file(feed, tmp_path):
    import gzip

    from_file = _obook(["bbo", feed, "-w", "1"])
    from_stdin = _obook(["bbo", "-", "-w", "2"], gzip.compress(feed.read_bytes()))
    assert from_file.returncode == 0 and from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout and from_file.stdout.count(b"\n") > 10


def test_cli_bbo_stdin_empty_says_so(capsys):
    import io
    import sys

    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
    try:
        err = _error(capsys, ["bbo", "-"], "<stdin>", "empty")
    finally:
        sys.stdin = old
    assert "Traceback" not in err


def test_cli_bbo_one_line_garbage_file_is_an_error(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello world, not a feed\n")
    _error(capsys, ["bbo", bad], f"error: {bad}: line 1:", "not a CSV order feed")


def test_cli_bbo_csv_header_of_two_fields_error_names_expected_header(tmp_path, capsys):
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b\n34200001,AAA,17,B,100,1172400\n")
    _error(capsys, ["bbo", odd], f"error: {odd}: line 1:", "not a CSV order feed", "Time,Ticker,Order,T,Shares,Price")


def test_cli_convert_stdin_zstd_tables_equal_the_file_and_digest_is_stdins(feed, tmp_path):
    import hashlib

    import pyarrow.parquet as pq
    import zstandard

    from obook.to_parquet import read_metadata

    packed = zstandard.ZstdCompressor().compress(feed.read_bytes())
    r = _obook(["convert", "-", tmp_path / "s", "--tables", "bbo,depth", "-l", "3", "-w", "2"], packed)
    assert r.returncode == 0, r.stderr
    assert _obook(["convert", feed, tmp_path / "f", "--tables", "bbo,depth", "-l", "3", "-w", "1"]).returncode == 0
    for table in ("bbo", "depth"):
        got, want = pq.read_table(tmp_path / "s" / f"{table}.parquet"), pq.read_table(tmp_path / "f" / f"{table}.parquet")
        assert got.num_rows > 10 and got.equals(want.replace_schema_metadata(got.schema.metadata)), table
    source = read_metadata(tmp_path / "s" / "bbo.parquet")["source"]
    assert source == {"name": "<stdin>", "size": len(packed), "sha256": hashlib.sha256(packed).hexdigest(),
                      "format": "itch"}


def test_cli_convert_stdin_side_table_is_an_error_and_writes_nothing(feed, tmp_path):
    r = _obook(["convert", "-", tmp_path / "out", "--tables", "bbo,symbols"], feed.read_bytes())
    assert r.returncode == 1 and r.stderr.startswith(b"error: <stdin>: the side tables (symbols)"), r.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_cli_lobster_stdin_says_it_needs_a_file(feed, tmp_path):
    r = _obook(["lobster", "-", tmp_path, "-k", "AAA"], feed.read_bytes())
    assert r.returncode == 1 and b"give a file, not stdin" in r.stderr and b"Traceback" not in r.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["bbo", "{feed}", "-w", "2"],
                                  ["sql", "select * from obook_bbo('{feed}')", "--format", "csv"]])
def test_cli_stdout_full_disk_error_names_stdout_no_traceback(feed, args):
    import subprocess
    import sys

    with open("/dev/full", "wb") as full:
        p = subprocess.run([sys.executable, "-m", "obook", *(a.format(feed=feed) for a in args)],
                           stdout=full, stderr=subprocess.PIPE, timeout=300)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert "error: <stdout>: write failed: No space left on device" in err
    assert "Traceback" not in err and "Exception ignored" not in err


def test_cli_bbo_stdout_closed_early_quiet_exit_zero(feed):
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "obook", "bbo", str(feed)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()                 # `| head -1`
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert first.count(b",") == 5 and err == ""


def test_cli_bbo_empty_file_warns_no_records(tmp_path):
    import subprocess
    import sys

    empty = tmp_path / "day.itch"
    empty.write_bytes(b"")
    out = subprocess.run([sys.executable, "-m", "obook", "bbo", str(empty)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == ""
    assert f"{empty}: no records in the feed" in out.stderr


def test_replay_empty_file_logs_no_records(tmp_path, caplog):
    import obook

    empty = tmp_path / "day.pitch"
    empty.write_bytes(b"")
    with caplog.at_level("WARNING", logger="obook"):
        assert obook.bbo(empty, workers=1).read_all().num_rows == 0
    assert "no records in the feed" in caplog.text


@pytest.mark.parametrize("fmt", ["sse", "szse"])
def test_replay_text_format_given_binary_feed_error_not_a_text_log_names_its_format(tmp_path, feed, caplog, fmt):
    """A text log format given for a binary feed (ITCH): an error at line 1 saying the file
    is no text log and the format it looks like, never 0 rows."""
    import obook
    from obook.errors import FeedError

    with pytest.raises(FeedError) as info:
        obook.bbo(feed, workers=1, format=fmt).read_all()
    assert info.value.record == 1 and "not a text log" in info.value.reason
    assert "the file looks like 'itch'" in str(info.value)
    caplog.clear()
    with caplog.at_level("WARNING", logger="obook"):     # a day of the format: no such warning
        assert obook.bbo(feed, workers=1).read_all().num_rows > 0
    assert "holds a message of the format" not in caplog.text


def test_replay_csv_header_only_warns_no_order_line_not_another_format(tmp_path, caplog):
    """A CSV order feed of its header alone (a day without orders; a blank line after it) is
    that format's: the warning says it holds no order line, not that the format may be
    another."""
    import obook

    path = tmp_path / "day.csv"
    path.write_text("Time,Ticker,Order,T,Shares,Price\n\n")
    with caplog.at_level("WARNING", logger="obook"):
        assert obook.bbo(path, workers=1).read_all().num_rows == 0
    assert f"{path}: no order line after its header" in caplog.text
    assert "is that the feed's format" not in caplog.text


def test_cli_output_that_is_the_feed_refused_feed_kept(tmp_path, capsys):
    from obook.gen.csv import write_csv

    feed = tmp_path / "day.csv"
    write_csv(feed, 500, 3, seed=1)
    before = open(feed, "rb").read()
    _error(capsys, ["bbo", feed, "-o", feed], "is an input of this command")
    _error(capsys, ["sql", f"SELECT * FROM obook_bbo('{feed}')", "-o", feed], "is an input of this command")
    assert open(feed, "rb").read() == before


def test_cli_random_bytes_without_a_format_name_cannot_tell_the_format(tmp_path, feed, capsys):
    import numpy as np

    from obook.feeds import detect_format

    noise = tmp_path / "noise"
    noise.write_bytes(np.random.default_rng(3).integers(0, 256, 4000, dtype=np.uint8).tobytes())
    for args in (["bbo", noise], ["table", "trades", noise], ["convert", noise, tmp_path / "out"],
                 ["simulate", noise, noise], ["plot", noise, tmp_path / "p.html"],
                 ["backtest", noise, "--strategy", "examples/strategy_quote.py:JoinBid", "-o", tmp_path / "run"]):
        err = _error(capsys, args, "cannot tell the feed format; pass --format (itch, ")
        assert "format=" not in err
    _error(capsys, ["lobster", noise, tmp_path / "lob", "-k", "AAA"],
           "cannot tell the feed format; LOBSTER output needs an ITCH feed\n")
    _error(capsys, ["sql", f"SELECT * FROM obook_trades('{noise}')"],
           "cannot tell the feed format; pass format := 'NAME' (itch, ")
    plain = tmp_path / "plain"                 # an ITCH day without a telling name: still ITCH
    plain.write_bytes(open(feed, "rb").read())
    assert detect_format(plain) == "itch"


@pytest.mark.parametrize("command", [["convert", "{feed}", "-", "-w", "1"],
                                     ["lobster", "{feed}", "-", "-k", "AAA", "-d", "2019-12-30", "-w", "1"]])
def test_cli_output_folder_dash_refused_no_folder_named_dash(tmp_path, feed, capsys, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    _error(capsys, [a.format(feed=feed) for a in command], "-: the output is a folder of files, not stdout")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["bbo", "{feed}", "-o", "{long}.parquet"], ["table", "trades", "{feed}", "-o", "{long}.csv"],
                                     ["convert", "{feed}", "{long}"], ["convert", "{feed}", "{long}/sub"],
                                     ["lobster", "{feed}", "{long}", "-k", "AAA", "-d", "2019-12-30"],
                                     ["match", "{orders}", "-o", "{long}"],
                                     ["backtest", "{feed}", "--strategy", "{strategy}:Idle", "-o", "{long}"]])
def test_cli_output_name_too_long_one_error_line_names_it(tmp_path, feed, capsys, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders.csv").write_text("time,instrument,order_id,action,side,type,tif,price,quantity\n"
                                         "1,XYZ,,new,sell,limit,GTC,10010,300\n")
    (tmp_path / "idle.py").write_text("class Idle:\n    def __call__(self, top):\n        return None\n")
    long = "a" * 300
    args = [a.format(feed=feed, long=long, orders="orders.csv", strategy="idle.py") for a in command]
    err = _error(capsys, args, "File name too long")
    assert err.count("\n") == 1 and f": {long}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idle.py", "orders.csv"]


@pytest.mark.parametrize("command", ["bbo", "table"])
def test_cli_output_of_one_row_says_one_row(tmp_path, capsys, command):
    from cli_support import cli_run

    day = tmp_path / "one.csv"
    day.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1000\n")
    out = tmp_path / "bbo.parquet"
    code, err = cli_run(capsys, *((command,) if command == "bbo" else (command, "bbo")), str(day), "-o", str(out))
    assert code == 0 and err.endswith(f"wrote {out} (1 row)\n"), err
