"""Bars (obook.klines): the interval's text and the bars cut with it."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

import obook
from obook.errors import ObookError
from obook.klines import interval_ns


@pytest.mark.parametrize(("text", "ns"), [
    ("100 ms", 100_000_000), ("2ms", 2_000_000), ("5 us", 5_000), ("100 ns", 100),
    ("1 minute", 60 * 10**9), ("5 minutes", 300 * 10**9), ("2 mins", 120 * 10**9), ("10 m", 600 * 10**9),
    ("5s", 5 * 10**9), ("3 secs", 3 * 10**9), ("1 hour", 3600 * 10**9),
])
def test_interval_ns_unit_ending_in_s_is_that_unit_not_a_plural(text, ns):
    assert interval_ns(text) == ns


@pytest.mark.parametrize(("text", "ns"), [
    ("00:05:00", 300 * 10**9), ("00:00:00.1", 10**8), ("00:00:00.000003", 3_000),
    ("1 day 02:00:00.5", (26 * 3600) * 10**9 + 5 * 10**8), ("2 days", 2 * 86400 * 10**9),
])
def test_interval_ns_duckdb_interval_text_is_its_length(text, ns):
    assert interval_ns(text) == ns


@pytest.mark.parametrize("text", ["5", "ms", "1 month", "-00:05:00", "5 x", ""])
def test_interval_ns_text_without_a_known_unit_is_an_obook_error(text):
    with pytest.raises(ObookError, match="interval must be like"):
        interval_ns(text)


@pytest.mark.parametrize("text", ["60000000000", " 5 "])
def test_interval_ns_text_of_a_bare_number_error_asks_for_its_unit(text):
    """An int is ns in Python; text (the command line, SQL) of a number alone is refused, saying
    that it needs a unit (not taken for ns: '60' would be 60 ns)."""
    n = text.strip()
    with pytest.raises(ObookError, match=f"^interval must be like '1 minute', '5s' or '100 ms', not '{text}' "
                                         rf"\(a number needs its unit: '{n} ns', '{n} s' \.\.\.\)$"):
        interval_ns(text)


def test_cli_table_bars_interval_past_int64_one_line_error(tmp_path, capsys):
    from cli_support import cli_error
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(feed, 2000, 5)
    err = cli_error(capsys, "table", "bars", feed, "--interval", "99999999999 days")
    assert "interval '99999999999 days' is too long" in err
    with pytest.raises(ObookError, match="too long"):
        interval_ns(2**70)


def test_bars_interval_in_milliseconds_cuts_millisecond_bars(tmp_path):
    from frontend_feeds import write_generated_feed

    feed = write_generated_feed(tmp_path / "day.itch", 20_000, stocks=5)
    step = 100_000_000
    priced = [t for t in obook.trades(feed, workers=1).read_all().to_pylist()
              if t["price"] is not None and not t["broken"]]
    bars = obook.bars(feed, workers=1, interval="100 ms").read_all()
    assert sorted(zip(bars.column("ticker").to_pylist(), bars.column("start").to_pylist())) == \
        sorted({(t["ticker"], t["time"] // step * step) for t in priced})
    assert bars.num_rows > 100


@pytest.mark.parametrize("interval", ["100 us", "1500 us"])
def test_bars_interval_not_a_whole_number_of_the_feed_unit_is_an_error(tmp_path, interval):
    from obook.gen.csv import write_csv

    feed = tmp_path / "day.csv"          # times in ms
    write_csv(feed, 500, 2, seed=1)
    with pytest.raises(ObookError, match=r"not a whole number of the feed's time unit \(1 ms\)"):
        obook.bars(feed, workers=1, interval=interval).read_all()
    assert obook.bars(feed, workers=1, interval="2 ms").read_all().num_rows > 0


@pytest.mark.parametrize("scan", [False, True])
def test_bars_interval_zero_is_an_error_not_the_default(tmp_path, scan):
    from frontend_feeds import write_generated_feed

    feed = write_generated_feed(tmp_path / "day.itch", 5_000, stocks=3)
    with pytest.raises(ObookError, match="interval must be positive"):
        if scan:
            obook.scan_bars(feed, interval=0).collect()
        else:
            obook.bars(feed, workers=1, interval=0).read_all()


@pytest.mark.parametrize(("interval", "ns"), [
    (np.timedelta64(1, "m"), 60 * 10**9), (np.timedelta64(100, "ms"), 100_000_000), (np.timedelta64(2, "W"), 14 * 86_400 * 10**9),
])
def test_interval_ns_numpy_timedelta_is_its_length(interval, ns):
    assert interval_ns(interval) == ns


@pytest.mark.parametrize("interval", [np.timedelta64("NaT"), np.timedelta64(1, "M"), np.timedelta64(1, "ps")])
def test_interval_ns_numpy_timedelta_without_a_fixed_length_is_an_obook_error(interval):
    with pytest.raises(ObookError, match="^interval must be like"):
        interval_ns(interval)


@pytest.mark.parametrize(("interval", "ns"), [
    (dt.timedelta(days=100_000, microseconds=1), 100_000 * 86_400 * 10**9 + 1_000),
    (dt.timedelta(minutes=5), 300 * 10**9), (dt.timedelta(microseconds=3), 3_000),
])
def test_interval_ns_timedelta_is_its_exact_length(interval, ns):
    assert interval_ns(interval) == ns


@pytest.mark.parametrize("interval", [True, np.True_])
def test_interval_ns_boolean_is_an_obook_error_not_one_ns(interval):
    with pytest.raises(ObookError, match="^interval must be like"):
        interval_ns(interval)


def test_bars_bad_record_bars_of_the_trades_before_it_then_the_error(tmp_path):
    from obook.errors import FeedError
    from obook.gen.csv import write_csv

    feed = tmp_path / "day.csv"
    write_csv(feed, 3000, 4, seed=2)
    lines = feed.read_text().splitlines(keepends=True)
    (tmp_path / "bad.csv").write_text("".join(lines[:1500] + ["not,a,record\n"] + lines[1500:]))
    (tmp_path / "clean.csv").write_text("".join(lines[:1500]))
    got = []
    with pytest.raises(FeedError, match="line 1501"):
        for batch in obook.bars(str(tmp_path / "bad.csv"), workers=1, interval="1 minute"):
            got.append(batch)
    want = obook.bars(str(tmp_path / "clean.csv"), workers=1, interval="1 minute").read_all()
    assert want.num_rows > 0
    assert [b.to_pylist() for b in got] and sum((b.to_pylist() for b in got), []) == want.to_pylist()


def test_bars_volume_past_int64_error_names_ticker_and_bar_not_a_wrapped_volume(tmp_path):
    """ITCH cross (Q) shares are 8 bytes: two crosses of 2**62 shares in one bar sum past 2**63 - 1."""
    from itch_builder import ItchBuilder

    b = ItchBuilder()
    b.directory(1, "AAA")
    b.cross(1, 2**62, 1000, match=1)
    b.cross(1, 2**62, 1000, match=2)
    b.directory(2, "BBB")
    b.cross(2, 5, 1000, match=3)
    path = b.write(tmp_path / "q.itch")
    with pytest.raises(ObookError, match=r"bars: the volume of AAA's bar at 34200000000000 .* past 2\^63 - 1"):
        obook.bars(path, "1 minute", workers=1).read_all()
