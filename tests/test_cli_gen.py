"""obook gen: every generator takes -n (messages), -k (instruments), --seed; the Databento and
Shenzhen vendor CSV generators; their files replay through obook bbo."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import obook
from obook.cli import app

runner = CliRunner()


def _obook(*args):
    return subprocess.run([sys.executable, "-m", "obook", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "OBOOK_KERNELS": "python"})


def test_gen_databento_date_starts_at_new_york_opening(tmp_path):
    out = tmp_path / "day.mbo.dbn"
    r = runner.invoke(app, ["gen", "databento", str(out), "-n", "2000", "-k", "2", "--date", "2024-03-01"])
    assert r.exit_code == 0, r.output
    t = obook.bbo(out, workers=1).read_all()
    assert t.num_rows > 100 and len(set(t.column("ticker").to_pylist())) == 2
    import datetime as dt
    from zoneinfo import ZoneInfo

    first = dt.datetime.fromtimestamp(t.column("time")[0].as_py() // 10**9, ZoneInfo("America/New_York"))
    assert first.isoformat().startswith("2024-03-01T09:30")


def test_gen_databento_same_seed_same_bytes(tmp_path):
    for name in ("a.dbn", "b.dbn"):
        assert runner.invoke(app, ["gen", "databento", str(tmp_path / name), "-n", "500", "--seed", "3"]).exit_code == 0
    assert (tmp_path / "a.dbn").read_bytes() == (tmp_path / "b.dbn").read_bytes()


def test_gen_szse_csv_pair_replays_as_the_text_log(tmp_path):
    args = ["-n", "3000", "-k", "2", "--seed", "5", "--date", "2024-02-01"]
    assert runner.invoke(app, ["gen", "szse-csv", str(tmp_path / "v"), *args]).exit_code == 0
    assert runner.invoke(app, ["gen", "szse", str(tmp_path / "day.log"), *args]).exit_code == 0
    pair = [tmp_path / "v" / "000001_orders.csv", tmp_path / "v" / "000001_ticks.csv"]
    r = _obook("bbo", *pair)
    assert r.returncode == 0, r.stderr
    log = _obook("bbo", tmp_path / "day.log", "-k", "000001")
    assert r.stdout.splitlines() and r.stdout.splitlines() == log.stdout.splitlines()
    first_row = pair[0].read_text().splitlines()[1].split(",")
    assert first_row[5].startswith("2024020109")                      # TransactTime on the --date


@pytest.mark.parametrize("kind, other", [("orders", "ticks"), ("ticks", "orders")])
def test_bbo_szse_csv_lone_file_error_names_missing_one(tmp_path, kind, other):
    assert runner.invoke(app, ["gen", "szse-csv", str(tmp_path), "-n", "1000", "-k", "1"]).exit_code == 0
    r = _obook("bbo", tmp_path / f"000001_{kind}.csv")
    assert r.returncode == 1 and r.stdout == ""
    assert f"000001_{kind}.csv: a Shenzhen vendor {kind} file is read with its {other} file" in r.stderr
    assert f"000001_{other}.csv" in r.stderr


@pytest.mark.parametrize("command", [
    ["itch", "F", "--stocks", "5"], ["csv", "F", "--events", "300", "--tickers", "3"],
    ["szse", "F", "--securities", "2"], ["sse", "F", "--events", "300", "--securities", "2"],
])
def test_gen_old_long_option_names_still_read(tmp_path, command):
    args = ["gen"] + [str(tmp_path / "f") if a == "F" else a for a in command] + ["-n", "300"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    help_text = runner.invoke(app, ["gen", command[0], "--help"]).output
    assert all(old not in help_text for old in ("--stocks", "--events", "--tickers", "--securities"))


def test_gen_bad_date_clear_error(tmp_path):
    r = _obook("gen", "databento", tmp_path / "x.dbn", "--date", "2024-13-01")
    assert r.returncode == 1 and r.stderr == "error: --date 2024-13-01: no such day (month 13)\n"
    r = _obook("gen", "databento", tmp_path / "x.dbn", "--date", "14/11/2024")
    assert r.returncode == 1 and r.stderr == "error: --date: expected YYYY-MM-DD, not '14/11/2024'\n"


def test_gen_itch_date_names_file_so_timestamps_carry_the_day(tmp_path):
    r = runner.invoke(app, ["gen", "itch", str(tmp_path / "days"), "-n", "3000", "-k", "3", "--date", "2019-12-30"])
    assert r.exit_code == 0, r.output
    path = tmp_path / "days" / "12302019.NASDAQ_ITCH50"
    t = obook.bbo(path, workers=1).read_all()
    from zoneinfo import ZoneInfo

    first = t.column("timestamp")[0].as_py().astimezone(ZoneInfo("America/New_York"))   # the session's zone
    assert t.num_rows > 100 and first.date().isoformat() == "2019-12-30"
    again = tmp_path / "12302019.NASDAQ_ITCH50"          # Nasdaq's name for that day: written as named
    assert runner.invoke(app, ["gen", "itch", str(again), "-n", "3000", "-k", "3", "--date", "2019-12-30"]).exit_code == 0
    assert again.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("name, why", [("01022020.NASDAQ_ITCH50", "the name says 2020-01-02, --date says 2019-12-30"),
                                       ("day.itch", "carries its session date in its name only")])
def test_gen_itch_date_name_without_that_day_clear_error(tmp_path, name, why):
    r = _obook("gen", "itch", tmp_path / name, "-n", "100", "--date", "2019-12-30")
    assert r.returncode == 1 and why in r.stderr and not (tmp_path / name).exists(), r.stderr


@pytest.mark.parametrize("command", ["csv", "itch", "pitch"])
def test_gen_dash_output_is_refused_no_file_named_dash(tmp_path, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["gen", command, "-", "-n", "10"])
    assert r.exit_code != 0 and "the generators write files" in str(r.exception)
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("command, name", [("csv", "day.zip"), ("itch", "day.itch.bz2"), ("pitch", "day.xz"),
                                           ("databento", "day.dbn.zip")])
def test_gen_compression_not_written_refused_no_file(tmp_path, command, name):
    r = _obook("gen", command, tmp_path / name, "-n", "50")
    assert r.returncode == 1 and "write plain files, .gz (gzip) or .zst (zstd)" in r.stderr, r.stderr
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("command, date, first, last", [
    ("databento", "1960-05-01", "1970-01-01", "2262-04-10"),
    ("databento", "9999-12-31", "1970-01-01", "2262-04-10"),
    ("pitch", "1969-12-31", "1970-01-01", "2106-02-07"),
    ("pitch", "2106-02-08", "1970-01-01", "2106-02-07"),
])
def test_gen_date_beyond_the_formats_clock_one_line_error_names_range(tmp_path, command, date, first, last):
    out = tmp_path / "day.out"
    r = _obook("gen", command, out, "-n", "200", "-k", "2", "--date", date)
    assert r.returncode == 1 and r.stderr.startswith(f"error: --date {date}: out of range"), r.stderr
    assert f"({first} to {last})" in r.stderr and r.stderr.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("command, name", [("itch", "01010999.NASDAQ_ITCH50"), ("csv", "0999-01-01.csv")])
def test_gen_date_year_below_1000_file_named_with_four_digit_year(tmp_path, command, name):
    r = runner.invoke(app, ["gen", command, str(tmp_path / "days"), "-n", "100", "-k", "2", "--date", "0999-01-01"])
    assert r.exit_code == 0, r.output
    assert [p.name for p in (tmp_path / "days").iterdir()] == [name]


@pytest.mark.parametrize("args", [
    ["csv", "-s", "-5"], ["orders", "-s", "-1"], ["orders", "-s", str(10**23)], ["itch", "-s", str(2**64)],
    ["sse", "-k", "57144"], ["szse", "-k", "300002"], ["szse-csv", "-k", "300002"], ["databento", "-k", "1000001"],
    ["orders", "-k", "1000001"],
])
def test_gen_seed_or_instruments_out_of_range_refused_names_option_writes_nothing(tmp_path, args):
    out = tmp_path / "out.x"
    r = runner.invoke(app, ["gen", args[0], str(out), "-n", "10", *args[1:]])
    assert r.exit_code == 2 and ("'--seed'" in r.output or "'--instruments'" in r.output), r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert not out.exists()


def test_gen_csv_sizes_past_memory_one_line_error_no_file(tmp_path, capsys):
    from cli_support import cli_error

    out = tmp_path / "day.csv"
    err = cli_error(capsys, "gen", "csv", out, "-n", "10", "--depth", str(10**12))
    assert f"{out}: not enough memory" in err and not out.exists()


def _stop_write_itch_midway(monkeypatch):
    """``write_itch`` made to meet Ctrl-C once some of the day is written; the real one."""
    import obook.gen.itch as gen_itch

    real = gen_itch.write_itch

    def stopped(path, *args, **kwargs):
        real(path, 500, 5)
        raise KeyboardInterrupt

    monkeypatch.setattr(gen_itch, "write_itch", stopped)
    return real


def test_gen_stopped_midway_leaves_no_partial_feed_untouched_file_stays(tmp_path, monkeypatch):
    import obook.gen.itch as gen_itch

    real = _stop_write_itch_midway(monkeypatch)
    out = tmp_path / "day.itch"
    r = runner.invoke(app, ["gen", "itch", str(out), "-n", "5000"])
    assert isinstance(r.exception, KeyboardInterrupt) or r.exit_code != 0
    assert not out.exists()
    out.write_bytes(b"kept")            # a generator refusing its arguments leaves a file as it was
    monkeypatch.setattr(gen_itch, "write_itch", real)
    r = runner.invoke(app, ["gen", "itch", str(out), "-n", "10"])
    assert r.exit_code == 1 and out.read_bytes() == b"kept"


def test_gen_orders_many_instruments_few_rows_generates_only_books_with_rows(tmp_path, monkeypatch):
    import obook.gen.orders as gen_orders

    calls = []
    real = gen_orders.seed_rows
    monkeypatch.setattr(gen_orders, "seed_rows", lambda n, seed: calls.append(n) or real(n, seed))
    t = gen_orders.orders_table(50, 20_000, seed=3)
    assert t.num_rows == 50 and 0 not in calls and len(calls) <= 50
    assert all(n.startswith("S") for n in t["instrument"].to_pylist())
    monkeypatch.setattr(gen_orders, "seed_rows", real)
    small = gen_orders.orders_table(2000, 3, seed=5)
    assert set(small["instrument"].to_pylist()) == {"S00001", "S00002", "S00003"}


@pytest.mark.parametrize("ext", [".csv.gz", ".csv.zst"])
def test_gen_orders_compressed_name_is_compressed_and_matches_as_the_plain_csv(tmp_path, ext):
    """A .gz or .zst name compresses the order file, as for the feed generators: the
    matching engine reads it (by its name) as the plain CSV."""
    plain, packed = tmp_path / "orders.csv", tmp_path / f"orders{ext}"
    for out in (plain, packed):
        assert CliRunner().invoke(app, ["gen", "orders", str(out), "-n", "500", "-k", "2"]).exit_code == 0
    assert packed.read_bytes()[:4] != plain.read_bytes()[:4]
    want = obook.match(str(plain))
    got = obook.match(str(packed))
    assert want.fills.num_rows > 0 and got.fills.equals(want.fills) and got.events.equals(want.events)


def test_gen_csv_gz_name_is_gzipped_same_lines_and_replays(tmp_path):
    import gzip

    for name in ("day.csv", "day.csv.gz"):
        r = runner.invoke(app, ["gen", "csv", str(tmp_path / name), "-n", "2000", "-k", "3", "--seed", "2"])
        assert r.exit_code == 0, r.output
    packed = (tmp_path / "day.csv.gz").read_bytes()
    assert packed[:2] == b"\x1f\x8b" and gzip.decompress(packed) == (tmp_path / "day.csv").read_bytes()
    assert obook.bbo(tmp_path / "day.csv.gz", workers=1).read_all() == obook.bbo(tmp_path / "day.csv",
                                                                                 workers=1).read_all()


def test_gen_databento_gz_name_is_gzipped_same_records_and_replays(tmp_path):
    import gzip

    for name in ("day.dbn", "day.dbn.gz"):
        r = runner.invoke(app, ["gen", "databento", str(tmp_path / name), "-n", "500", "--seed", "2"])
        assert r.exit_code == 0, r.output
    packed = (tmp_path / "day.dbn.gz").read_bytes()
    assert packed[:2] == b"\x1f\x8b" and gzip.decompress(packed) == (tmp_path / "day.dbn").read_bytes()
    assert obook.bbo(tmp_path / "day.dbn.gz", workers=1).read_all() == obook.bbo(tmp_path / "day.dbn",
                                                                                 workers=1).read_all()

def test_gen_szse_csv_one_message_writes_a_pair_that_replays(tmp_path):
    r = runner.invoke(app, ["gen", "szse-csv", str(tmp_path / "v"), "-n", "1", "-k", "1"])
    assert r.exit_code == 0, r.output
    assert "wrote 2 files" in r.output
    files = sorted(p.name for p in (tmp_path / "v").iterdir())
    assert files == ["000001_orders.csv", "000001_ticks.csv"]
    replay = _obook("bbo", *sorted((tmp_path / "v").iterdir()))
    assert replay.returncode == 0 and replay.stdout.count("\n") == 1, replay.stderr


@pytest.mark.parametrize("command", ["itch", "csv", "szse", "szse-csv", "databento", "sse", "orders", "pitch"])
def test_gen_messages_past_the_disk_refused_before_writing(tmp_path, capsys, command):
    from cli_support import cli_error

    out = tmp_path / "big.out"
    err = cli_error(capsys, "gen", command, out, "-n", str(10**15), "-k", "1")
    assert f"{out}: 1,000,000,000,000,000 messages make at least" in err and "give fewer --messages" in err
    assert list(tmp_path.iterdir()) == []


def test_gen_messages_past_free_disk_refused_compressed_counted_smaller(tmp_path, capsys, monkeypatch):
    import shutil
    from collections import namedtuple

    from cli_support import cli_error

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 0, 200_000))
    err = cli_error(capsys, "gen", "itch", tmp_path / "day.itch", "-n", "10000", "-k", "2")
    assert "10,000 messages make at least 300.0 KB and the disk has 200.0 KB free" in err
    assert runner.invoke(app, ["gen", "itch", str(tmp_path / "day.itch.gz"), "-n", "10000", "-k", "2"]).exit_code == 0


@pytest.mark.parametrize("command", ["szse", "sse", "orders"])
def test_gen_messages_past_available_memory_refused_before_writing(tmp_path, capsys, monkeypatch, command):
    import obook.cli.gen as gen

    from cli_support import cli_error

    monkeypatch.setattr(gen, "_available_memory", lambda: 1_000_000)
    err = cli_error(capsys, "gen", command, tmp_path / "day.out", "-n", "20000", "-k", "1")
    assert "20,000 messages need at least" in err and "1.0 MB is available: give fewer --messages" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command, name", [("orders", "o.parquet"), ("itch", "day.itch"), ("pcap", "a.pcap")])
def test_gen_output_in_missing_folder_error_names_the_folder(tmp_path, capsys, command, name):
    from cli_support import cli_error

    out = tmp_path / "no" / "such" / name
    if command == "pcap":
        assert runner.invoke(app, ["gen", "itch", str(tmp_path / "day.itch"), "-n", "100", "-k", "2"]).exit_code == 0
        err = cli_error(capsys, "gen", "pcap", tmp_path / "day.itch", out)
    else:
        err = cli_error(capsys, "gen", command, out, "-n", "10", "-k", "1")
    assert err == f"error: {out}: cannot write: the folder {out.parent} does not exist (create it first)\n"
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", ["szse", "szse-csv"])
def test_gen_szse_instruments_help_names_the_extra_thin_security(tmp_path, command):
    help_text = " ".join(runner.invoke(app, ["gen", command, "--help"]).output.split())
    assert "plus the thin ChiNext 300999" in help_text
    r = runner.invoke(app, ["gen", "szse-csv", str(tmp_path / "v"), "-n", "3000", "-k", "1"])
    assert r.exit_code == 0
    assert {p.name.split("_")[0] for p in (tmp_path / "v").iterdir()} == {"000001", "300999"}


@pytest.mark.parametrize("command, usage", [
    ("itch", "{OUT}"), ("csv", "{OUT}"), ("szse", "{OUT}"), ("szse-csv", "{OUTDIR}"), ("databento", "{OUT}"),
    ("sse", "{OUT}"), ("orders", "{OUT}"), ("pitch", "{OUT}"), ("pcap", "{ITCH} {OUT_A} [OUT_B]"),
])
def test_gen_help_usage_names_arguments_as_the_help_text_does(command, usage):
    first = runner.invoke(app, ["gen", command, "--help"]).output.splitlines()[0]
    assert first == f"Usage: obook gen {command} [OPTIONS] {usage}"


def test_gen_pcap_bad_date_error_names_the_option_no_capture(tmp_path, capsys):
    from cli_support import cli_error

    assert runner.invoke(app, ["gen", "itch", str(tmp_path / "day.itch"), "-n", "200", "-k", "2"]).exit_code == 0
    err = cli_error(capsys, "gen", "pcap", tmp_path / "day.itch", tmp_path / "a.pcap", "--date", "2024-99-01")
    assert err == "error: --date 2024-99-01: no such day (month 99)\n"
    assert not (tmp_path / "a.pcap").exists()


@pytest.mark.parametrize("date, says", [("2020-02-30", "no such day (February 2020 has 29 days)"),
                                        ("2021-02-29", "no such day (February 2021 has 28 days)"),
                                        ("2020-00-10", "no such day (month 0)")])
def test_gen_date_of_the_form_but_no_calendar_day_error_says_no_such_day(tmp_path, capsys, date, says):
    from cli_support import cli_error

    assert cli_error(capsys, "gen", "itch", tmp_path, "-d", date, "-n", "200") == f"error: --date {date}: {says}\n"


def test_gen_pcap_both_gaps_over_the_packets_one_line_error_naming_it_no_capture(tmp_path, capsys):
    from cli_support import cli_error

    assert runner.invoke(app, ["gen", "itch", str(tmp_path / "day.itch"), "-n", "200", "-k", "2"]).exit_code == 0
    r = runner.invoke(app, ["gen", "pcap", str(tmp_path / "day.itch"), str(tmp_path / "all.pcap"), "--both-gaps", "1"])
    packets = int(r.output.split("wrote ")[1].split(" packets")[0])
    assert r.exit_code == 0 and 1 < packets < 1000, r.output
    err = cli_error(capsys, "gen", "pcap", tmp_path / "day.itch", tmp_path / "a.pcap", "--both-gaps", packets + 1)
    assert err.startswith(f"error: --both-gaps {packets + 1}: more than the {packets} packets the day makes"), err
    assert not (tmp_path / "a.pcap").exists()
    every = runner.invoke(app, ["gen", "pcap", str(tmp_path / "day.itch"), str(tmp_path / "a.pcap"),
                                "--both-gaps", str(packets)])
    assert every.exit_code == 0 and f"wrote {packets} packets" in every.output, every.output


def test_gen_pcap_ctrl_c_again_while_written_files_go_leaves_none(tmp_path, monkeypatch, python_sigint):
    """A second Ctrl-C that lands as the first of the captures goes (a user pressing it twice)
    cut the clean-up short: the other capture, half written, stayed. It now waits."""
    import obook.gen.pcap as pcap
    from interrupt_support import ctrl_c_at_first_unlink

    assert runner.invoke(app, ["gen", "itch", str(tmp_path / "day.itch"), "-n", "200", "-k", "2"]).exit_code == 0
    real_frame, frames, again = pcap._frame, [], []

    def frame(*args):
        frames.append(1)
        if len(frames) == 20:                    # both captures begun: Ctrl-C
            again.append(ctrl_c_at_first_unlink(monkeypatch))
            raise KeyboardInterrupt
        return real_frame(*args)

    monkeypatch.setattr(pcap, "_frame", frame)
    r = runner.invoke(app, ["gen", "pcap", str(tmp_path / "day.itch"), str(tmp_path / "a.pcap"),
                            str(tmp_path / "b.pcap")])
    assert r.exit_code != 0 and again and again[0], r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day.itch"]


def test_gen_to_a_fifo_whose_reader_leaves_error_fifo_stays(tmp_path, capsys):
    import threading

    from cli_support import cli_error

    fifo = tmp_path / "feed.fifo"
    os.mkfifo(fifo)

    def read_a_little():
        with open(fifo, "rb") as f:
            f.read(100)

    reader = threading.Thread(target=read_a_little, daemon=True)
    reader.start()
    err = cli_error(capsys, "gen", "csv", fifo, "-n", "3000000", "-k", "2")
    reader.join(timeout=60)
    assert f"{fifo}: cannot write: Broken pipe" in err
    assert fifo.is_fifo()                   # a pipe is not a partial feed: it is never removed


def test_gen_to_a_device_skips_the_disk_check(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6, 0))
    r = runner.invoke(app, ["gen", "csv", os.devnull, "-n", "1000", "-k", "2"])
    assert r.exit_code == 0 and "wrote" in r.output, r.output
    assert runner.invoke(app, ["gen", "csv", str(tmp_path / "day.csv"), "-n", "1000", "-k", "2"]).exit_code == 1


def test_gen_szse_csv_outdir_a_file_refused_file_untouched(tmp_path, capsys):
    from cli_support import cli_error

    out = tmp_path / "vendor"
    out.write_text("kept")
    err = cli_error(capsys, "gen", "szse-csv", out, "-n", "100")
    assert err == f"error: {out}: is a file; give a folder (created if missing)\n"
    assert out.read_text() == "kept"


@pytest.mark.parametrize("command, name, extra", [("sse", "2024-01-05.log", ()), ("szse", "sz.log", ()),
                                                  ("szse", "sz.bin", ("--binary",)), ("pitch", "day.pitch", ())])
def test_gen_l2_and_pitch_gz_name_is_gzipped_same_seed_same_bytes_and_replays(tmp_path, command, name, extra):
    import gzip

    for out in (name, name + ".gz", "again." + name + ".gz"):
        r = runner.invoke(app, ["gen", command, str(tmp_path / out), "-n", "2000", "-k", "2", "--seed", "4", *extra])
        assert r.exit_code == 0, r.output
    packed = (tmp_path / (name + ".gz")).read_bytes()
    assert packed[:2] == b"\x1f\x8b" and gzip.decompress(packed) == (tmp_path / name).read_bytes()
    assert packed == (tmp_path / ("again." + name + ".gz")).read_bytes()
    replay = _obook("bbo", tmp_path / (name + ".gz"))
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == _obook("bbo", tmp_path / name).stdout and replay.stdout.count("\n") > 10


@pytest.mark.parametrize("command, name, extra", [("itch", "day.itch", ()), ("csv", "day.csv", ()),
                                                  ("sse", "2024-01-05.log", ()), ("szse", "sz.bin", ("--binary",))])
def test_gen_zst_name_is_zstd_same_seed_same_bytes(tmp_path, command, name, extra):
    try:
        from compression.zstd import decompress
    except ImportError:
        from backports.zstd import decompress

    for out in (name, name + ".zst", "again." + name + ".zst"):
        r = runner.invoke(app, ["gen", command, str(tmp_path / out), "-n", "2000", "-k", "2", "--seed", "4", *extra])
        assert r.exit_code == 0, r.output
    packed = (tmp_path / (name + ".zst")).read_bytes()
    assert packed[:4] == b"\x28\xb5\x2f\xfd" and decompress(packed) == (tmp_path / name).read_bytes()
    assert packed == (tmp_path / ("again." + name + ".zst")).read_bytes()


def test_gen_szse_csv_stopped_midway_leaves_no_file_nor_the_folder_it_made(tmp_path, monkeypatch):
    import obook.gen.szse as gen_szse

    real = gen_szse.write_vendor

    def stopped(folder, recs):      # Ctrl-C once some of the files are written
        real(folder, recs[:200])
        raise KeyboardInterrupt

    monkeypatch.setattr(gen_szse, "write_vendor", stopped)
    out = tmp_path / "new" / "vendor"
    r = runner.invoke(app, ["gen", "szse-csv", str(out), "-n", "1000"])
    assert isinstance(r.exception, KeyboardInterrupt) or r.exit_code != 0
    assert list(tmp_path.iterdir()) == []
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("kept")          # a file of the folder the run did not write stays
    r = runner.invoke(app, ["gen", "szse-csv", str(out), "-n", "1000"])
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_gen_databento_empty_date_refused_names_the_option_no_file(tmp_path, capsys):
    from cli_support import cli_error

    out = tmp_path / "day.dbn"
    err = cli_error(capsys, "gen", "databento", out, "-n", "100", "--date", "")
    assert err == "error: --date: expected YYYY-MM-DD, not ''\n" and not out.exists()


def test_gen_databento_fewer_messages_than_instruments_refused_names_both_options(tmp_path, capsys):
    from cli_support import cli_error

    out = tmp_path / "day.dbn"
    err = cli_error(capsys, "gen", "databento", out, "-n", "10", "-k", "1000")
    assert "--messages 10 is fewer than --instruments 1000" in err and err.count("\n") == 1
    assert not out.exists()


def test_gen_pcap_unknown_kind_refused_names_the_option_no_capture(tmp_path):
    from obook.gen.itch import write_itch

    write_itch(tmp_path / "day.itch", 500, 3)
    out = tmp_path / "a.pcap"
    r = runner.invoke(app, ["gen", "pcap", str(tmp_path / "day.itch"), str(out), "--kind", "bogus"])
    assert r.exit_code == 2 and "'--kind'" in r.output and "'pcap-ns'" in r.output, r.output
    assert not out.exists()


def test_gen_csv_live_orders_past_memory_refused_names_instruments_and_depth(tmp_path, capsys, monkeypatch):
    import obook.cli.gen as gen_cli
    from cli_support import cli_error

    monkeypatch.setattr(gen_cli, "_available_memory", lambda: 10**9)
    out = tmp_path / "day.csv"
    err = cli_error(capsys, "gen", "csv", out, "-n", "10", "-k", "1000000")
    assert "--instruments 1,000,000 x --depth 200" in err and "give fewer --instruments or a smaller --depth" in err
    assert not out.exists()


def test_gen_stopped_midway_over_an_existing_file_keeps_that_file(tmp_path, monkeypatch):
    _stop_write_itch_midway(monkeypatch)
    out = tmp_path / "day.itch"
    out.write_bytes(b"the user's own day")
    r = runner.invoke(app, ["gen", "itch", str(out), "-n", "5000"])
    assert isinstance(r.exception, KeyboardInterrupt) or r.exit_code != 0
    assert out.read_bytes() == b"the user's own day"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day.itch"]


def test_gen_pcap_stopped_midway_over_existing_captures_keeps_both(tmp_path, monkeypatch):
    import obook.gen.pcap as pcap

    assert runner.invoke(app, ["gen", "itch", str(tmp_path / "day.itch"), "-n", "200", "-k", "2"]).exit_code == 0
    (tmp_path / "a.pcap").write_bytes(b"capture a")
    (tmp_path / "b.pcap").write_bytes(b"capture b")
    real_frame, frames = pcap._frame, []

    def frame(*args):
        frames.append(1)
        if len(frames) == 20:                    # both captures begun: Ctrl-C
            raise KeyboardInterrupt
        return real_frame(*args)

    monkeypatch.setattr(pcap, "_frame", frame)
    r = runner.invoke(app, ["gen", "pcap", str(tmp_path / "day.itch"), str(tmp_path / "a.pcap"),
                            str(tmp_path / "b.pcap")])
    assert r.exit_code != 0
    assert (tmp_path / "a.pcap").read_bytes() == b"capture a" and (tmp_path / "b.pcap").read_bytes() == b"capture b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pcap", "b.pcap", "day.itch"]


def test_gen_killed_writer_temp_folder_goes_with_the_next_write(tmp_path):
    out = tmp_path / "day.itch"
    dead = tmp_path / f".day.itch.{2**22 + 7}.tmp"      # a pid no process has
    dead.mkdir()
    (dead / "day.itch").write_bytes(b"half a day")
    r = runner.invoke(app, ["gen", "itch", str(out), "-n", "200", "-k", "2"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day.itch"]


def test_gen_output_under_a_file_error_says_it_is_not_a_folder(tmp_path, capsys):
    from cli_support import cli_error

    (tmp_path / "taken").write_text("mine")
    err = cli_error(capsys, "gen", "itch", tmp_path / "taken" / "day.itch", "-n", "200")
    assert err == f"error: {tmp_path / 'taken' / 'day.itch'}: cannot write: {tmp_path / 'taken'} is not a folder\n"


def test_gen_orders_parquet_write_refused_error_gives_the_reason_only(tmp_path, capsys, monkeypatch):
    import pyarrow.parquet as pq

    from cli_support import cli_error

    def refused(table, where, *args, **kwargs):
        raise OSError(f"Failed to open local file '{where}'. Detail: [errno 30] Read-only file system")

    monkeypatch.setattr(pq, "write_table", refused)
    out = tmp_path / "orders.parquet"
    err = cli_error(capsys, "gen", "orders", out, "-n", "100")
    assert err == f"error: {out}: cannot write: Read-only file system\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("kind, out", [("orders", "/dev/full"), ("itch", "/dev/full")])
def test_cli_gen_onto_a_full_device_one_line_error_says_the_disk_is_full(capsys, kind, out):
    import stat

    from cli_support import cli_error

    if not stat.S_ISCHR(os.stat(out).st_mode):
        pytest.skip(f"{out} is no device here")
    assert cli_error(capsys, "gen", kind, out, "-n", "1000") == f"error: {out}: cannot write: No space left on device\n"


def _files_open_under(pid: int, folder) -> list[str]:
    """The paths of the files process ``pid`` holds open under ``folder`` (a deleted one too)."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:         # closed meanwhile
            continue
        if target.startswith(str(folder)):
            out.append(target)
    return out


def test_gen_pitch_killed_outright_while_writing_its_itch_day_next_run_leaves_only_the_feed(tmp_path):
    """`gen pitch` writes the ITCH day it translates to a file first; a run killed outright
    (SIGKILL) then leaves nothing the next run to the same output does not remove."""
    import signal
    import time

    out = tmp_path / "day.pitch"
    p = subprocess.Popen([sys.executable, "-m", "obook", "gen", "pitch", str(out), "-n", "3000000"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _files_open_under(p.pid, tmp_path) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p.poll() is None, "gen pitch ended before it opened a file"
        time.sleep(0.3)                 # well into writing the ITCH day
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    r = _obook("gen", "pitch", out, "-n", "1000")
    assert r.returncode == 0, r.stderr
    left = sorted(str(x.relative_to(tmp_path)) for x in tmp_path.rglob("*"))
    assert left == ["day.pitch"]
