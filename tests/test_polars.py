"""scan_bbo / scan_messages through real polars LazyFrames (obook.polars)."""

from __future__ import annotations

import datetime as dt
import re
import time

import polars as pl
import pytest

import obook
from obook.errors import FeedError, ObookError
from obook.polars import polars_schema, scan_bbo, scan_messages
from frontend_feeds import SMALL_BBO, wait_no_workers, write_failing_feed


def test_scan_bbo_schema_derived_from_arrow_schema(small):
    schema = scan_bbo(small).collect_schema()
    assert schema == polars_schema(obook.bbo_schema)
    assert dict(schema) == {"seq": pl.Int64, "time": pl.UInt64, "ticker": pl.String,
                            "locate": pl.UInt16, "bid_px": pl.Int64, "bid_qty": pl.Int64,
                            "bid_orders": pl.Int32, "ask_px": pl.Int64, "ask_qty": pl.Int64,
                            "ask_orders": pl.Int32}


def test_scan_bbo_collect_returns_every_row(small):
    assert scan_bbo(small).collect().rows() == SMALL_BBO


@pytest.mark.parametrize("table", ["bbo", "trades", "depth", "spread"])
@pytest.mark.parametrize("compressed", [False, True])
def test_scan_of_a_stream_same_rows_as_the_path(small, tmp_path, table, compressed):
    # a stream is told its format from its first bytes; the scan's reader gets them too
    import gzip
    import io

    data = small.read_bytes() if not compressed else gzip.compress(small.read_bytes(), mtime=0)
    got = getattr(obook.polars, f"scan_{table}")(io.BytesIO(data)).collect()
    want = getattr(obook.polars, f"scan_{table}")(small).collect()
    assert got.height > 0 and got.equals(want)


def test_scan_of_a_stream_read_twice_raises_obook_error(small):
    import io

    lf = scan_bbo(io.BytesIO(small.read_bytes()))
    assert lf.collect_schema() == polars_schema(obook.bbo_schema)     # no replay: the stream stays unread
    assert "INFO: <BytesIO>" in lf.explain()                        # named as its errors name it
    assert lf.collect().rows() == SMALL_BBO
    with pytest.raises(ObookError, match="<BytesIO>: a stream is read once"):
        lf.collect()
    lf = scan_bbo(io.BytesIO(small.read_bytes()))
    with pytest.raises(ObookError, match="a stream is read once"):
        lf.join(lf, on="seq").collect()      # a query that reads it twice: not half the rows
    assert wait_no_workers() == []


def test_scan_bbo_streaming_engine_returns_every_row(small):
    assert scan_bbo(small, workers=2).collect(engine="streaming").rows() == SMALL_BBO


def test_scan_bbo_projection_returns_only_selected_columns(small):
    df = scan_bbo(small).select("ticker", "bid_px").collect()
    assert df.columns == ["ticker", "bid_px"]
    assert df.rows() == [(r[2], r[4]) for r in SMALL_BBO]


def test_scan_bbo_predicate_on_unprojected_column_is_applied(small):
    df = scan_bbo(small).filter(pl.col("ticker") == "BBB").select("seq").collect()
    assert df["seq"].to_list() == [6, 9, 12]
    df = scan_bbo(small).filter((pl.col("ask_px") - pl.col("bid_px")) < 450).select("seq").collect(
        engine="streaming")
    assert df["seq"].to_list() == [8, 9, 10, 14]


def test_scan_bbo_n_rows_limit_is_applied(small):
    assert scan_bbo(small).head(3).collect().rows() == SMALL_BBO[:3]
    assert scan_bbo(small).filter(pl.col("ticker") == "AAA").head(2).collect()["seq"].to_list() == [4, 5]
    assert scan_bbo(small).head(0).collect().height == 0


def test_scan_bbo_head_returns_early_and_stops_workers(big, tmp_path):
    # the day's last record is cut short: a replay that reached it would raise, so a head()
    # that returns its rows stopped the replay long before the end
    cut = tmp_path / "cut_at_end.itch"
    cut.write_bytes(big.read_bytes() + b"\x00\x24A\x00\x01")
    lf = scan_bbo(cut, workers=2)
    with pytest.raises(Exception, match="cut_at_end.itch"):
        lf.select(pl.len()).collect()
    assert wait_no_workers() == []
    assert lf.head(10).collect().height == 10
    assert wait_no_workers() == []


@pytest.mark.parametrize("engine", ["auto", "streaming"])
@pytest.mark.parametrize("where", ["ticker", "price"])
def test_scan_bbo_filter_then_head_leaves_no_worker(day, engine, where, no_leaks):
    # polars gives the source no row limit after a filter and lets go of it on a thread of
    # its own: the replay still stops, with nothing else called (no gc, no other query)
    ticker = pl.from_arrow(obook.bbo(str(day), workers=1).read_next_batch())["ticker"][0]
    predicate = pl.col("ticker") == ticker if where == "ticker" else pl.col("bid_px") > 0
    lf = scan_bbo(day, workers=2).filter(predicate).head(5)
    for _ in range(3):
        df = lf.collect(engine=engine)
        assert wait_no_workers() == []
        assert df.height == 5 and df.filter(predicate).height == 5


def test_scan_bbo_group_by_matches_engine_counts(day):
    got = dict(scan_bbo(day, workers=2).group_by("ticker").agg(pl.len())
               .collect(engine="streaming").iter_rows())
    table = obook.bbo(str(day), workers=1).read_all()
    expected = dict(pl.from_arrow(table).group_by("ticker").agg(pl.len()).iter_rows())
    assert got == expected


def test_scan_bbo_each_collect_runs_a_fresh_replay(small):
    lf = scan_bbo(small)
    assert lf.collect().rows() == lf.collect().rows() == SMALL_BBO


def test_scan_bbo_missing_path_raises_obook_error_at_scan(tmp_path):
    with pytest.raises(ObookError, match="no such feed file"):
        scan_bbo(tmp_path / "nope.itch")


@pytest.mark.parametrize(("path", "says"), [
    (None, "the feed path must be text"), (42, "the feed path must be text"),
    ("", "the feed path is empty"), ([""], "the feed path is empty"),
])
def test_scan_bbo_path_of_no_text_or_empty_raises_obook_error_at_scan(path, says):
    with pytest.raises(ObookError, match=says):
        scan_bbo(path)


@pytest.mark.parametrize(("scan", "says"), [
    (lambda f: obook.polars.scan_match([f]), r"the order path must be text or a path \(one file\), not \["),
    (lambda f: obook.polars.scan_match(f + ".csv"), r"small.itch.csv: no such order file"),
    (lambda f: obook.polars.scan_simulate([f, f + ".x"], f), r"small.itch.x: no such feed file"),
    (lambda f: obook.polars.scan_backtest([f, f + ".x"], "s.py:S"), r"small.itch.x: no such feed file"),
], ids=["match-list", "match-missing", "simulate-missing-piece", "backtest-missing-piece"])
def test_scan_of_one_file_given_a_list_or_no_file_says_what_it_takes(small, scan, says):
    with pytest.raises(ObookError, match=says):
        scan(str(small))


@pytest.mark.parametrize(("kwargs", "error", "says"), [
    (dict(strategy="s.py:S", order_latncy=5), TypeError, "scan_backtest: got an unexpected keyword argument 'order_latncy'"),
    (dict(strategy=None), ObookError, "strategy None is no strategy"),
])
def test_scan_backtest_unknown_keyword_or_no_strategy_raises_at_scan(small, kwargs, error, says):
    with pytest.raises(error, match=says):
        obook.polars.scan_backtest(str(small), **kwargs)


def test_scan_bbo_failing_record_raises_feed_error_at_collect(tmp_path):
    bad = write_failing_feed(tmp_path / "bad.itch")
    lf = scan_bbo(bad, workers=2)
    with pytest.raises(FeedError) as err:
        lf.collect()
    assert err.value.record == 7
    assert wait_no_workers() == []


@pytest.mark.parametrize("where", [None, pl.col("ticker") == "AAA", pl.col("ticker").is_in(["AAA", "BBB"]),
                                   pl.col("ticker") == "BBB", (pl.col("ticker") == "AAA") & (pl.col("bid_px") > 0)])
def test_scan_bbo_tickers_not_in_feed_raises_whatever_the_filter(small, where):
    # tickers= chose the books, as in obook.bbo: a filter on ticker only filters their rows
    lf = scan_bbo(small, tickers=["AAA", "ZZZ"])
    with pytest.raises(ObookError, match="not in the feed: ZZZ"):
        (lf if where is None else lf.filter(where)).collect()


def test_scan_bbo_tickers_list_with_none_raises_naming_it(small):
    with pytest.raises(ObookError, match=r"tickers must be text, not None \(in \['AAA', None\]\)"):
        scan_bbo(small, tickers=["AAA", None]).collect()


def test_scan_bbo_on_error_in_any_case_is_the_word(small):
    assert scan_bbo(small, on_error="Skip").collect().rows() == SMALL_BBO


def test_scan_bbo_filter_on_ticker_not_in_feed_gives_no_rows(small):
    assert scan_bbo(small).filter(pl.col("ticker") == "ZZZ").collect().height == 0
    got = scan_bbo(small).filter(pl.col("ticker").is_in(["BBB", "ZZZ"])).collect()
    assert got.rows() == [r for r in SMALL_BBO if r[2] == "BBB"]


def test_scan_bbo_tolerant_mode_passes_on_error(tmp_path):
    bad = write_failing_feed(tmp_path / "bad.itch")
    n = obook.bbo(str(bad), on_error="skip").read_all().num_rows
    assert scan_bbo(bad, on_error="skip").collect().height == n


def test_scan_messages_decodes_every_message(small):
    df = scan_messages(small).select("seq", "type").collect()
    assert df["seq"].to_list() == list(range(1, 16))
    assert "".join(df["type"].to_list()) == "SRRAAAAAAEDXAUS"
    adds = scan_messages(small).filter(pl.col("type") == "A").select("ref", "price").head(2).collect()
    assert adds.rows() == [(1, 1_000_000), (2, 1_000_500)]


def test_scan_reader_close_interrupted_still_ends_the_release_watch(small):
    """A Ctrl-C raised inside the replay's close (polars lets go of the source as the signal
    lands) must not leave the release thread calling into polars for the rest of the process."""
    import threading

    from obook import polars_release
    from obook.polars import _scan

    class Reader:
        def __init__(self):
            self.inner = obook.bbo(str(small), workers=1)
            self.schema = self.inner.schema

        def read_next_batch(self):
            return self.inner.read_next_batch()

        def close(self):
            self.inner = None
            raise KeyboardInterrupt

    lf = _scan(Reader, obook.bbo(str(small), workers=1).schema, "bbo", "test")
    with pytest.raises(KeyboardInterrupt):
        lf.head(1).collect()
    def watching():
        return [t.name for t in threading.enumerate() if t.name == "obook-polars-release"]

    deadline = time.monotonic() + 2
    while watching() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert polars_release._open == 0 and watching() == []


@pytest.mark.parametrize("fmt, unit_ns", [("itch", 1), ("csv", 1_000_000)])
def test_time_of_day_itch_ns_and_csv_ms_equal_duckdb_obook_time_of_day(tmp_path, fmt, unit_ns):
    """The feed's unit read from the feed, as DuckDB reads it; polars keeps the ns DuckDB's
    TIME truncates to microseconds."""
    from obook.duckdb import connect
    from obook.gen.csv import write_csv
    from obook.gen.itch import write_itch
    from obook.polars import time_of_day

    feed = tmp_path / ("12302019.NASDAQ_ITCH50" if fmt == "itch" else "2026-01-02.csv")
    (write_itch if fmt == "itch" else write_csv)(feed, 3000, 4, seed=3)
    got = scan_bbo(str(feed), workers=1).select("time", time_of_day("time", str(feed)).alias("t")).collect()
    con = connect()
    try:
        want = con.execute(f"SELECT obook_time_of_day(time, '{feed}') FROM obook_bbo('{feed}', workers := 1)"
                           ).fetchall()
    finally:
        con.close()
    assert got.height == len(want) > 100
    assert got["t"].to_list() == [t for t, in want]
    assert (got["t"].cast(pl.Int64) == got["time"].cast(pl.Int64) * unit_ns).all()
    given = scan_bbo(str(feed), workers=1).select(time_of_day(pl.col("time"), time_unit_ns=unit_ns)).collect()
    assert given["time"].to_list() == got["t"].to_list()


@pytest.mark.parametrize("kwargs, says", [
    ({}, "give the feed of the time"),
    ({"feed": "x.csv", "time_unit_ns": 1}, "give the feed of the time"),
    ({"time_unit_ns": 0}, "time_unit_ns must be an integer of ns of at least 1"),
])
def test_time_of_day_without_one_unit_raises_saying_it_is_the_feeds(kwargs, says):
    from obook.polars import time_of_day

    with pytest.raises(ObookError, match=says):
        time_of_day("time", **kwargs)


@pytest.mark.parametrize("time, feed, says", [
    ("time", "nope.itch", r"^nope\.itch: no such feed file$"),
    ("time", ["nope.itch"], r"^nope\.itch: no such feed file$"),
    ("time", 5, r"^the feed path must be text .*, not 5$"),
    ("time", ".", r"^\.: a directory, not a feed file$"),
    (5, None, r"^time_of_day: time must be a column's name or a polars expression, not 5$"),
], ids=["missing", "missing-in-list", "int-feed", "directory", "int-time"])
def test_time_of_day_feed_or_time_of_wrong_kind_one_line_obook_error(tmp_path, monkeypatch, time, feed, says):
    """A feed that is no file, or a time that is no column, is an ObookError naming what was
    given (not os.stat's FileNotFoundError, a TypeError or an AttributeError)."""
    from obook.polars import time_of_day

    monkeypatch.chdir(tmp_path)
    unit = {"time_unit_ns": 1} if feed is None else {}
    with pytest.raises(ObookError, match=says):
        time_of_day(time, feed, **unit)


def test_scan_bbo_list_with_no_path_error_says_list_or_tuple(small):
    """A scan takes a tuple of files (one feed) as obook.bbo does: its error says so too."""
    assert scan_bbo((str(small),)).collect().height > 0
    with pytest.raises(ObookError, match=r"^the feed path must be text \(a file, a glob pattern\), a path or a "
                                         r"list or tuple of them, not 5$"):
        scan_bbo([str(small), 5])


def test_time_of_day_a_time_past_midnight_raises_when_collected():
    from obook.polars import time_of_day

    frame = pl.DataFrame({"time": [57_599_999, 86_400_000]}).lazy().select(time_of_day(time_unit_ns=1_000_000))
    with pytest.raises(ObookError, match="past 24:00:00"):
        frame.collect()


@pytest.mark.parametrize(("values", "dtype"), [([34_200_000.5], "Float64"), ([34_200_000.0], "Float64"),
                                               (["09:30"], "String"), ([True], "Boolean")])
def test_time_of_day_time_not_integers_raises_naming_the_dtype_never_truncated(values, dtype):
    """1.5 is no feed time: refused when collected, as obook_time_of_day refuses it in SQL."""
    from obook.polars import time_of_day

    frame = pl.DataFrame({"time": values}).lazy().select(time_of_day(time_unit_ns=1_000_000))
    with pytest.raises(ObookError, match=rf"time_of_day: the time must be integers from 0 in the feed's time unit, "
                                         rf"not {dtype} \(column time\)"):
        frame.collect()
    nulls = pl.DataFrame({"time": [None, 5]}).lazy().select(time_of_day(time_unit_ns=1_000_000)).collect()
    assert nulls.to_series().to_list() == [None, dt.time(0, 0, 0, 5000)]


@pytest.mark.parametrize("table", ["bbo", "depth", "trades", "orders"])
def test_scan_simulate_feed_table_error_names_the_feeds_own_scan(tmp_path, table):
    with pytest.raises(ObookError, match=rf"table '{table}' is the feed's own: obook.scan_{table}\(feed\) reads it"):
        obook.scan_simulate(str(tmp_path / "day.itch"), str(tmp_path / "orders.csv"), table=table)


@pytest.mark.parametrize("name", ["bbo", "bars", "depth", "symbols"])
def test_scan_function_doc_lists_path_and_options_as_the_reader_does(name):
    """help(obook.scan_bars) tells what interval, workers ... take, as help(obook.bars) does."""
    from obook.tables import table

    reader, scan = getattr(obook, name).__doc__, getattr(obook.polars, f"scan_{name}").__doc__
    for doc in (reader, scan):
        assert "``path``: a feed file" in doc, doc
        for option in table(name).all_options():
            assert f"``{option}``: " in doc, (option, doc)


@pytest.mark.parametrize("scan", ["simulate", "backtest"])
def test_scan_simulate_or_backtest_of_a_named_pipe_error_offers_no_stream(tmp_path, scan):
    """scan_simulate and scan_backtest read files only: a FIFO's error does not tell them to
    read it as a stream, which they refuse."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    run = {"simulate": lambda: obook.polars.scan_simulate(str(fifo), str(fifo)),
           "backtest": lambda: obook.polars.scan_backtest(str(fifo), "s.py:S")}[scan]
    with pytest.raises(ObookError, match=r"^" + re.escape(f"{fifo}: a named pipe (FIFO), not a feed file") + "$"):
        run()


def test_time_of_day_parquet_without_units_error_in_python_words(small, tmp_path):
    """A Parquet file polars wrote (no obook units in its schema): the error offers
    time_of_day's own ways out, not SQL's (format := ..., obook_scaled_price)."""
    from obook.polars import time_of_day

    bare = tmp_path / "bare.parquet"
    scan_bbo(small).sink_parquet(bare)
    with pytest.raises(ObookError) as e:
        time_of_day("time", str(bare))
    assert str(e.value) == (f"{bare}: a Parquet file without obook's units (obook.time_unit in its schema): "
                            "give time_of_day the feed it came from, its format= or time_unit_ns="), str(e.value)


def test_time_of_day_twas_quoted_time_a_duration_raises(tmp_path):
    """twas' quoted_time is a length of time (obook.duration_columns), no point in time: read
    as a time of day it would be a clock time that means nothing, so it is refused, for the
    feed as for a Parquet file of the table."""
    from obook.gen.csv import write_csv
    from obook.polars import time_of_day

    feed = tmp_path / "2026-01-02.csv"
    write_csv(feed, 3000, 4, seed=3)
    table = tmp_path / "twas.parquet"
    import pyarrow.parquet as pq

    pq.write_table(obook.twas(str(feed), workers=1).read_all(), table)      # its units recorded
    assert pq.read_schema(table).metadata[b"obook.duration_columns"] == b"quoted_time"
    assert pl.read_parquet(table)["quoted_time"].max() > 0
    for source in (str(feed), str(table)):
        for column in ("quoted_time", pl.col("quoted_time")):
            with pytest.raises(ObookError, match=r"^time_of_day: 'quoted_time' is a length of time"):
                time_of_day(column, source)
    # a time column of the same feed is still read
    assert scan_bbo(str(feed), workers=1).select(time_of_day("time", str(feed))).collect().height > 0
