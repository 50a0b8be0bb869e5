"""``obook.convert`` / ``obook convert``: feed → <table>.parquet with provenance metadata."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import obook
from obook.cli import app
from obook.to_parquet import REPLAY_TABLES, convert, read_metadata, session_date
from obook.feeds import get_format

#: every table of an ITCH feed: the replay's and the format's side tables
TABLES = REPLAY_TABLES + tuple(get_format("itch").side_tables)
from obook.errors import FeedError, ObookError
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch
from obook.gen.pitch import write_pitch

DAY = "12302019.NASDAQ_ITCH50"
MIDNIGHT_NS = 1577682000 * 10**9        # 2019-12-30 00:00 America/New_York (EST, UTC-5)


@pytest.fixture(scope="module")
def itch_day(tmp_path_factory):
    path = tmp_path_factory.mktemp("feeds") / DAY
    write_itch(path, 4000, 12, seed=3)
    return path


@pytest.fixture(scope="module")
def converted(itch_day, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return convert(itch_day, out, tables=TABLES, workers=2), out


def _messages(path, kind):
    m = obook.read_itch(path).read_all()
    return m.filter(pc.equal(m["type"], kind))


def test_convert_itch_bbo_equals_replay_rows(converted, itch_day):
    result, out = converted
    got = pq.read_table(out / "bbo.parquet")
    want = obook.bbo(itch_day, workers=1).read_all()          # a Nasdaq name: timestamp too
    assert got.equals(want.replace_schema_metadata(got.schema.metadata))
    assert got.num_rows == result["rows"]["bbo"] == result["stats"]["rows"] > 0
    assert pq.ParquetFile(out / "bbo.parquet").metadata.row_group(0).column(0).compression == "ZSTD"


def test_convert_itch_timestamp_is_session_midnight_plus_time(converted):
    _, out = converted
    t = pq.read_table(out / "bbo.parquet")
    assert t.schema.field("timestamp").type == pa.timestamp("ns", tz="UTC")
    ns = t["timestamp"].cast(pa.int64()).to_pylist()
    assert ns == [MIDNIGHT_NS + x for x in t["time"].to_pylist()]


def test_convert_itch_side_tables_match_read_itch(converted, itch_day):
    _, out = converted
    r, s, h = (_messages(itch_day, k) for k in "RSH")
    symbols = pq.read_table(out / "symbols.parquet")
    assert symbols["seq"].to_pylist() == r["seq"].to_pylist()
    assert symbols["locate"].to_pylist() == r["locate"].to_pylist() == list(range(1, 13))
    assert symbols["stock"].to_pylist() == r["stock"].to_pylist()
    assert set(symbols["round_lot_size"].to_pylist()) == {100}
    events = pq.read_table(out / "system_events.parquet")
    assert events["seq"].to_pylist() == s["seq"].to_pylist()
    assert events["event_code"].to_pylist() == ["O", "S", "Q", "M", "E", "C"]
    actions = pq.read_table(out / "trading_actions.parquet")
    assert actions["seq"].to_pylist() == h["seq"].to_pylist()
    assert actions["stock"].to_pylist() == h["stock"].to_pylist()
    assert all(len(x) == 1 for x in actions["state"].to_pylist())


def test_convert_metadata_records_source_options_and_stats(converted, itch_day):
    result, out = converted
    sha = hashlib.sha256(itch_day.read_bytes()).hexdigest()
    for table in TABLES:
        meta = read_metadata(out / f"{table}.parquet")
        assert meta["table"] == table
        assert meta["source"] == {"name": DAY, "size": os.path.getsize(itch_day), "sha256": sha, "format": "itch"}
        assert meta["session_date"] == "2019-12-30"
        assert meta["obook_version"] == obook.__version__
        assert meta["options"] == {"tables": list(TABLES), "date": None, "on_error": "raise", "format": "itch",
                                   "levels": 10, "tickers": None, "compression": "fast"}
        stats = meta["stats"]
        assert stats["records"] == 4000 and stats["skipped"] == {}
        assert stats["rows"] == result["rows"]["bbo"]
        assert stats["live_orders"] >= 0
        assert sum(stats["messages_by_type"].values()) == 4000
    assert not [p for p in os.listdir(out) if not p.endswith(".parquet")]


def test_convert_gzipped_feed_same_tables(converted, itch_day, tmp_path):
    _, out = converted
    gz = tmp_path / (DAY + ".gz")
    write_itch(gz, 4000, 12, seed=3)
    convert(gz, tmp_path / "gz", tables=TABLES, workers=1)
    for table in TABLES:
        assert pq.read_table(tmp_path / "gz" / f"{table}.parquet").equals(pq.read_table(out / f"{table}.parquet"))


def test_convert_csv_replay_tables_no_side_tables_ms_timestamp(tmp_path):
    feed = tmp_path / "orders.csv"
    write_csv(feed, 1500, 4, seed=1)
    result = convert(feed, tmp_path / "a", tables="bbo,trades,orders,depth", levels=3, workers=2)
    assert "timestamp" not in pq.read_table(tmp_path / "a" / "bbo.parquet").column_names
    assert result["session_date"] is None
    for name, reader in (("bbo", obook.bbo(feed, workers=1)), ("trades", obook.trades(feed, workers=1)),
                         ("orders", obook.orders(feed, workers=1)),
                         ("depth", obook.depth(feed, workers=1, levels=3))):
        t = pq.read_table(tmp_path / "a" / f"{name}.parquet")
        assert t.num_rows > 0
        assert t.equals(reader.read_all().replace_schema_metadata(t.schema.metadata)), name
    convert(feed, tmp_path / "b", date="2020-01-02")
    t = pq.read_table(tmp_path / "b" / "bbo.parquet")
    midnight = 1577941200 * 10**9   # 2020-01-02 00:00 New York
    assert t["timestamp"].cast(pa.int64()).to_pylist() == [midnight + 1_000_000 * x for x in t["time"].to_pylist()]
    assert read_metadata(tmp_path / "b" / "bbo.parquet")["session_date"] == "2020-01-02"
    with pytest.raises(ObookError, match=r"csv feeds have no table .symbols. \(formats that have it: itch \(Nasdaq ITCH 5.0\)"):
        convert(feed, tmp_path / "c", tables=["bbo", "symbols"])
    assert not (tmp_path / "c").exists() or not os.listdir(tmp_path / "c")


def test_convert_unknown_table_raises_obook_error(itch_day, tmp_path):
    with pytest.raises(ObookError, match="unknown table 'quotes'"):
        convert(itch_day, tmp_path, tables="bbo,quotes")


def test_convert_tables_all_writes_every_table_of_the_feeds_format(itch_day, tmp_path):
    from obook.tables import offered, tables_of

    pitch = tmp_path / "day.pitch"
    write_pitch(pitch, 500, 2)
    for feed, fmt in ((itch_day, "itch"), (pitch, "pitch")):
        want = [t for t in tables_of(get_format(fmt)) if offered(t, "convert")]
        assert "bbo" in want and ("symbols" in want) == (fmt == "itch")
        got = convert(feed, tmp_path / fmt, tables="all", workers=1)
        assert list(got["files"]) == want
        assert sorted(p.name for p in (tmp_path / fmt).iterdir()) == sorted(f"{t}.parquet" for t in want)
        assert list(convert(feed, tmp_path / f"{fmt}2", tables=["trades", "all"], workers=1)["files"]) == \
            ["trades"] + [t for t in want if t != "trades"]


def test_convert_truncated_feed_rows_before_kept_as_partial_no_final_file(itch_day, tmp_path):
    bad = tmp_path / DAY
    data = itch_day.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    whole = convert(itch_day, tmp_path / "whole", tables=TABLES, workers=2)
    out = tmp_path / "out"
    for workers in (1, 2):
        with pytest.raises(FeedError) as info:
            convert(bad, out, tables=TABLES, workers=workers)
        assert info.value.kept_in == str(out / "TABLE.parquet.partial")
        before = [t for t in TABLES            # the tables with rows before the cut record
                  if pc.any(pc.less(pq.read_table(whole["files"][t])["seq"], info.value.feed_record)).as_py()]
        assert set(REPLAY_TABLES) < set(before)
        names = sorted(os.listdir(out))
        assert names == sorted(f"{t}.parquet.partial" for t in before), names   # no final file, no temp
        for t in before:
            kept = pq.read_table(out / f"{t}.parquet.partial")
            full = pq.read_table(whole["files"][t])
            assert 0 < kept.num_rows < full.num_rows or t not in REPLAY_TABLES, t
            assert kept.equals(full.slice(0, kept.num_rows).replace_schema_metadata(kept.schema.metadata)), t
            assert kept.num_rows == pc.sum(pc.less(full["seq"], info.value.feed_record)).as_py(), t
            assert read_metadata(out / f"{t}.parquet.partial")["partial"] is True
    convert(itch_day, out, tables=("bbo",), workers=1)      # complete: its stale partial goes, not others'
    assert sorted(os.listdir(out)) == sorted(["bbo.parquet"] + [f"{t}.parquet.partial" for t in before[1:]])


def test_convert_bad_record_before_any_row_leaves_nothing(tmp_path):
    bad = tmp_path / DAY
    bad.write_bytes(b"\x00\x03A")       # a record cut short, first of the feed
    out, kept = tmp_path / "out", tmp_path / "kept"
    kept.mkdir()
    for folder in (out, kept):
        with pytest.raises(FeedError):
            convert(bad, folder, tables=TABLES, workers=2, format="itch")
    assert not out.exists()                 # the folder the call made goes with its files
    assert os.listdir(kept) == []           # the user's folder stays


@pytest.mark.parametrize("name, date, want", [
    ("12302019.NASDAQ_ITCH50", None, dt.date(2019, 12, 30)),
    ("01022020.NASDAQ_ITCH50.gz", None, dt.date(2020, 1, 2)),
    ("/some/dir/07312023.nasdaq_itch50", None, dt.date(2023, 7, 31)),
    ("13302019.NASDAQ_ITCH50", None, None),          # no month 13
    ("day.itch", None, None),
    ("x12302019.NASDAQ_ITCH50", None, None),
    ("12302019.NASDAQ_ITCH50", "2020-01-03", dt.date(2020, 1, 3)),   # the option wins
    ("orders.csv", dt.date(2021, 5, 4), dt.date(2021, 5, 4)),
])
def test_session_date_name_or_option_expected(name, date, want):
    assert session_date(name, date) == want


def test_session_date_bad_option_raises():
    with pytest.raises(ObookError, match="YYYY-MM-DD"):
        session_date("x.itch", "30/12/2019")


def test_convert_cli_writes_tables_and_reports(itch_day, tmp_path):
    res = CliRunner().invoke(app, ["convert", str(itch_day), str(tmp_path), "--tables", "bbo,system_events",
                                   "--workers", "1", "--date", "2019-12-31"])
    assert res.exit_code == 0, res.output
    assert sorted(os.listdir(tmp_path)) == ["bbo.parquet", "system_events.parquet"]
    meta = read_metadata(tmp_path / "bbo.parquet")
    assert meta["session_date"] == "2019-12-31" and meta["options"]["date"] == "2019-12-31"
    assert "rows" in res.output


def test_convert_trades_marks_trades_a_later_break_names_broken(tmp_path):
    from itch_builder import ItchBuilder
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 1, "S", 100, 5000)
    b.execute(1, 1, 10, match=7)
    b.execute(1, 1, 10, match=8)
    b.broken(7, locate=1)
    b.trade(1, 0, "B", 5, 5100, match=9)
    path = b.write(tmp_path / "f.itch")
    convert(path, tmp_path / "out", tables="trades,orders,depth", levels=2)
    trades = pq.read_table(tmp_path / "out" / "trades.parquet").to_pylist()
    assert [(t["kind"], t["match"], t["broken"]) for t in trades] == [
        ("E", 7, True), ("E", 8, False), ("B", 7, False), ("P", 9, False)]
    assert trades[0]["price"] == 5000 and trades[0]["side"] == "S"
    assert pq.read_table(tmp_path / "out" / "depth.parquet").num_rows == 3
    assert pq.read_table(tmp_path / "out" / "orders.parquet").column("remaining").to_pylist() == [100, 90, 80]


def test_convert_tickers_keeps_only_those_rows(itch_day, tmp_path):
    convert(itch_day, tmp_path, tables="bbo,trades", tickers="AAA")
    for t in ("bbo", "trades"):
        assert set(pq.read_table(tmp_path / f"{t}.parquet").column("ticker").to_pylist()) <= {"AAA"}


@pytest.mark.parametrize("workers", [1, 2])
def test_convert_bbo_only_footer_counts_messages_by_type(itch_day, tmp_path, workers):
    """The replay alone (no side table) records messages per type, ITCH and CSV."""
    from collections import Counter
    from reference_itch import frames

    convert(itch_day, tmp_path / "i", tables="bbo", workers=workers)
    want = Counter(chr(msg[0]) for _, _, msg in frames(itch_day))
    assert read_metadata(tmp_path / "i" / "bbo.parquet")["stats"]["messages_by_type"] == dict(sorted(want.items()))

    feed = tmp_path / "orders.csv"
    write_csv(feed, 3000, 5, seed=4)
    convert(feed, tmp_path / "c", tables="bbo", workers=workers)
    lines = [ln for ln in feed.read_bytes().split(b"\n")[1:] if ln.strip()]
    want = Counter(ln.split(b",")[3].decode() for ln in lines)
    assert read_metadata(tmp_path / "c" / "bbo.parquet")["stats"]["messages_by_type"] == dict(sorted(want.items()))


def test_convert_name_is_the_function_of_the_real_module_to_parquet():
    """obook.convert is the function; its module is the real obook.to_parquet (no module
    is faked into sys.modules under obook.convert)."""
    import subprocess
    import sys
    code = ("import sys, obook; obook.connect(); from obook.to_parquet import convert, read_metadata\n"
            "assert obook.convert is convert and 'obook.convert' not in sys.modules\n"
            "try:\n    import obook.convert\nexcept ImportError:\n    pass\n"
            "else:\n    raise AssertionError('obook.convert imports as a module')\n"
            "assert obook.convert is convert")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_convert_progress_reports_breaks_pass_then_replay(itch_day, tmp_path):
    calls = []
    convert(itch_day, tmp_path, tables="bbo,trades", workers=1,
            progress=lambda done, phase=None: calls.append((done, phase)))
    size = itch_day.stat().st_size
    first = calls.index((0, "replaying"))
    assert first > 0 and {p for _, p in calls[:first]} == {"finding trade breaks"}
    assert calls[first - 1][0] == size and calls[-1] == (size, None)
    replaying = [d for d, _ in calls[first:]]
    assert replaying == sorted(replaying)


def test_convert_no_tables_lists_only_tables_convert_writes(tmp_path, capsys):
    from cli_support import cli_error

    feed = tmp_path / "day.itch"
    write_itch(feed, 2000, 2, seed=1)
    err = cli_error(capsys, "convert", feed, tmp_path / "out", "--tables", "")
    assert "itch feeds convert to bbo, trades" in err
    assert not {"spread", "twas", "bbo_grid"} & {t.strip(" \n") for t in err.split("convert to ")[1].split(",")}


@pytest.mark.parametrize("argument, value, message", [
    ("feed", 5, "the feed path must be text"), ("feed", None, "the feed path must be text"),
    ("feed", "list", "convert reads one feed"), ("outdir", 5, "outdir must be a folder's path"),
    ("outdir", "", "outdir must be a folder's path"), ("tables", 5, "tables must be a name or a list"),
    ("tickers", 5, "tickers must be a list of tickers"), ("format", 5, "format must be a feed format's name"),
    ("progress", 5, "progress must be a function"), ("workers", "2", "workers must be an integer"),
    ("workers", True, "workers must be an integer")])
def test_convert_argument_of_wrong_type_raises_obook_error_naming_it(itch_day, tmp_path, argument, value, message):
    given = {"feed": itch_day, "outdir": tmp_path / "out", argument: value}
    if value == "list":     # a list of ITCH files is a feed each (a tuple is one feed in pieces)
        other = tmp_path / "other.itch"
        other.write_bytes(Path(itch_day).read_bytes())
        given["feed"] = [itch_day, other]
    with pytest.raises(obook.ObookError, match=message):
        obook.convert(given.pop("feed"), given.pop("outdir"), **given)
    assert not (tmp_path / "out").exists()


def test_cli_convert_on_error_skip_feed_cut_short_keeps_partial_as_its_help_says(itch_day, tmp_path):
    shown = " ".join(CliRunner().invoke(app, ["convert", "--help"], terminal_width=200).output.split())
    assert "skip: apply the tolerant rules and record the skipped counts (a feed cut short still ends in an " \
           "error, the rows before the cut kept as .partial)" in shown
    bad = tmp_path / DAY
    data = itch_day.read_bytes()
    bad.write_bytes(data[: len(data) - 7])
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["convert", str(bad), str(out), "--on-error", "skip", "-w", "1"])
    assert isinstance(res.exception, FeedError) and "truncated record" in str(res.exception), res.output
    assert os.listdir(out) == ["bbo.parquet.partial"]
    assert res.exception.kept_in == str(out / "bbo.parquet.partial")


def test_convert_table_the_format_lacks_error_lists_only_tables_convert_writes(tmp_path):
    feed = tmp_path / "day.pitch"
    write_pitch(feed, 500, 2)
    with pytest.raises(ObookError, match="pitch feeds have no table 'symbols'") as info:
        convert(feed, tmp_path / "out", tables="symbols")
    have = str(info.value).rsplit("pitch feeds have: ", 1)[1].split(", ")
    assert "bbo" in have and "bars" in have
    assert not {"spread", "twas", "bbo_grid"} & set(have)      # the analytics: python and polars only


@pytest.mark.parametrize("given", ["", ",", " , "])
def test_convert_tickers_naming_none_raises_as_every_reader_does(itch_day, tmp_path, given):
    with pytest.raises(ObookError, match="--tickers / tickers=: no ticker given"):
        convert(itch_day, tmp_path / "out", tables="bbo", tickers=given)
    with pytest.raises(ObookError, match="--tickers / tickers=: no ticker given"):
        obook.bbo(itch_day, tickers=given)
    result = CliRunner().invoke(app, ["convert", str(itch_day), str(tmp_path / "cli"), "-t", "bbo", "-k", given])
    assert isinstance(result.exception, ObookError) and "--tickers / tickers=: no ticker given" in str(result.exception)
    assert not (tmp_path / "out").exists() and not (tmp_path / "cli").exists()


def test_convert_on_error_and_compression_in_any_case_are_the_words(tmp_path):
    """'RAISE' stops at the bad record as 'raise' does (never read as tolerant), 'Skip' skips it."""
    from frontend_feeds import write_failing_feed

    bad = write_failing_feed(tmp_path / "bad.itch")
    with pytest.raises(FeedError):
        convert(bad, tmp_path / "raised", on_error="RAISE", workers=1)
    done = convert(bad, tmp_path / "skipped", on_error="Skip", compression="SMALL", workers=1)
    assert done["rows"]["bbo"] > 0 and (tmp_path / "skipped" / "bbo.parquet").exists()
    with pytest.raises(ObookError, match="compression must be one of fast, small, not 'tiny'"):
        convert(bad, tmp_path / "x", compression="tiny")


def test_file_digest_rewrite_of_the_same_size_mtime_put_back_new_digest(tmp_path):
    import hashlib
    import os

    from obook.to_parquet import file_digest

    f = tmp_path / "12302019.NASDAQ_ITCH50"
    f.write_bytes(b"a" * 100)
    first = file_digest(f)
    st = os.stat(f)
    f.write_bytes(b"b" * 100)               # a day file downloaded again, its timestamps kept (cp -p, rsync -t)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_digest(f) == (100, hashlib.sha256(b"b" * 100).hexdigest()) != first


def test_convert_bars_interval_gives_the_bars_of_that_length_as_obook_bars(itch_day, tmp_path):
    result = convert(itch_day, tmp_path / "py", tables="bars", interval="5 minutes", workers=1)
    got = pq.read_table(tmp_path / "py" / "bars.parquet")
    want = obook.bars(itch_day, interval="5 minutes", workers=1).read_all()
    assert got.equals(want.replace_schema_metadata(got.schema.metadata))
    assert got.num_rows < obook.bars(itch_day, workers=1).read_all().num_rows
    assert read_metadata(tmp_path / "py" / "bars.parquet")["options"]["interval"] == "5 minutes"
    assert result["rows"]["bars"] == got.num_rows
    res = CliRunner().invoke(app, ["convert", str(itch_day), str(tmp_path / "cli"), "--tables", "bars",
                                   "--interval", "5 minutes", "-w", "1"])
    assert res.exit_code == 0, res.output
    assert pq.read_table(tmp_path / "cli" / "bars.parquet").equals(got)
    bad = CliRunner().invoke(app, ["convert", str(itch_day), str(tmp_path / "bad"), "--tables", "bars",
                                   "--interval", "five minutes"])
    assert bad.exit_code == 1 and "interval must be like '1 minute'" in str(bad.exception)
    assert not (tmp_path / "bad").exists()


def test_convert_glob_pattern_is_its_files_one_feed_as_on_the_command_line(tmp_path):
    """obook.convert('parts/*.itch', out): the pattern's files, sorted, one feed in pieces, as
    ``obook convert 'parts/*.itch' out/`` reads them (not 'no such feed file')."""
    whole = tmp_path / "day.itch"
    write_itch(str(whole), 3000, 4)
    data, at = whole.read_bytes(), 0
    while at < len(data) // 2:                       # a message boundary near the middle
        at += 2 + int.from_bytes(data[at:at + 2], "big")
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "1.itch").write_bytes(data[:at])
    (parts / "2.itch").write_bytes(data[at:])
    want = convert(str(whole), tmp_path / "want", tables="bbo")["rows"]
    got = convert(str(parts / "*.itch"), tmp_path / "got", tables="bbo")
    assert got["rows"] == want and want["bbo"] > 0
    assert got["source"]["name"] == "1.itch+2.itch"
    assert pq.read_table(tmp_path / "got" / "bbo.parquet").equals(pq.read_table(tmp_path / "want" / "bbo.parquet"))
    with pytest.raises(ObookError, match=r"nothing\*\.itch: no feed file matches$"):
        convert(str(parts / "nothing*.itch"), tmp_path / "none", tables="bbo")
