"""The obook.sql macros, checked against numbers computed by hand on the small feed.

The small feed's BBO rows are in frontend_feeds.SMALL_BBO; the comments below redo the
arithmetic each expectation comes from.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from obook.duckdb import connect
from frontend_feeds import SMALL_BBO, add, directory, system_event, write_feed, write_small_feed


@pytest.fixture()
def small(tmp_path):
    return write_small_feed(tmp_path / "small.itch")


@pytest.fixture()
def con():
    c = connect()
    yield c
    c.close()


def test_sql_package_lists_and_reads_macro_files():
    from obook import sql

    files = sql.macro_files()
    assert files == sorted(files) and all(f.endswith(".sql") for f in files)
    assert "obook_spread" in sql.read_sql("10_spread") and "obook_price" in sql.read_sql(files[0])
    assert [name for name, _ in sql.macro_texts()] == files


def test_obook_spread_adds_exact_spread_and_mid_per_row(con, small):
    rows = con.execute(f"SELECT seq, spread_ticks, spread, mid FROM obook_spread('{small}') ORDER BY seq").fetchall()
    assert rows == [
        (4, None, None, None),                                     # no ask
        (5, 500, Decimal("0.0500"), Decimal("100.02500")),         # (1000000 + 1000500) / 2 / 10^4
        (6, None, None, None),
        (8, 400, Decimal("0.0400"), Decimal("100.03000")),
        (9, 301, Decimal("0.0301"), Decimal("50.01505")),          # half a tick: 500150.5 ticks
        (10, 400, Decimal("0.0400"), Decimal("100.03000")),
        (11, 500, Decimal("0.0500"), Decimal("100.02500")),
        (12, None, None, None),                                    # no bid
        (13, 500, Decimal("0.0500"), Decimal("100.02500")),
        (14, 300, Decimal("0.0300"), Decimal("100.03500")),
    ]


def test_obook_spread_keeps_bbo_columns_and_exact_types(con, small):
    desc = {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM obook_spread('{small}')").fetchall()}
    assert list(desc)[:10] == ["seq", "time", "ticker", "locate", "bid_px", "bid_qty", "bid_orders",
                               "ask_px", "ask_qty", "ask_orders"]
    assert desc["spread_ticks"] == "BIGINT"
    assert desc["spread"] == "DECIMAL(38,9)"      # any format's scale, exact
    assert desc["mid"] == "DECIMAL(38,10)"
    assert con.execute(f"SELECT count(*) FROM obook_spread('{small}', workers := 2)").fetchall() == [(len(SMALL_BBO),)]


def test_obook_twas_default_window_weights_by_time_to_next_update(con, small):
    rows = con.execute(f"SELECT * FROM obook_twas('{small}')").fetchall()
    # AAA: 500 for 20000 ns (20000-40000), 400 for 10000, 400 for 10000, 500 for 20000,
    #      500 for 10000; the last row (90000, spread 300) ends at the feed's last BBO time.
    #      sum = 33,000,000 over 70,000 ns -> 471.428571...
    # BBB: 301 for 25000 ns (45000-70000); then the bid is empty.
    assert [r[0] for r in rows] == ["AAA", "BBB"]
    aaa, bbb = rows
    assert aaa[1:4] == (70_000, 6, pytest.approx(33_000_000 / 70_000))
    assert aaa[4] == pytest.approx(33_000_000 / 70_000 / 10_000)
    assert aaa[5:] == (400, 500)
    assert bbb[1:] == (25_000, 1, pytest.approx(301.0), pytest.approx(0.0301), 301, 301)


def test_obook_twas_window_clips_intervals(con, small):
    rows = con.execute(f"SELECT ticker, quoted_time, twas_ticks FROM obook_twas('{small}', "
                       "start_time := 45000, end_time := 85000)").fetchall()
    # AAA: 400 for 45000-60000 (15000), 500 for 60000-85000 (25000) -> 18,500,000 / 40,000
    assert rows == [("AAA", 40_000, pytest.approx(462.5)), ("BBB", 25_000, pytest.approx(301.0))]


@pytest.mark.parametrize(("option", "says"), [
    ("start_time := 'abc'", "obook_twas: start_time must be an integer from 0 to 2\\^63 - 1, not 'abc'"),
    ("start_time := -5", "obook_twas: start_time must be an integer from 0 to 2\\^63 - 1, not -5"),
    ("end_time := 45000.5", "obook_twas: end_time must be an integer from 0 to 2\\^63 - 1, not 45000.5"),
    # as in Python: the times are computed as BIGINT
    ("end_time := 9223372036854775808",
     "obook_twas: end_time must be an integer from 0 to 2\\^63 - 1, not 9223372036854775808"),
])
def test_obook_twas_text_fractional_or_negative_time_is_an_error_naming_it(con, small, option, says):
    import duckdb

    with pytest.raises(duckdb.Error, match=says):
        con.execute(f"SELECT * FROM obook_twas('{small}', {option})").fetchall()


def test_obook_twas_ticker_without_two_sided_quote_has_null_average(con, tmp_path):
    feed = write_feed(tmp_path / "one_sided.itch", [
        system_event(0, "O"), directory(0, 1, "ONE"), directory(0, 2, "TWO"),
        add(10, 1, 1, "B", 100, "ONE", 10_000),
        add(20, 2, 2, "B", 100, "TWO", 20_000), add(30, 2, 3, "S", 100, "TWO", 20_100),
        add(50, 1, 4, "B", 100, "ONE", 10_100),
    ])
    rows = con.execute(f"SELECT ticker, quoted_time, updates, twas_ticks FROM obook_twas('{feed}')").fetchall()
    assert rows == [("ONE", 0, 0, None), ("TWO", 20, 1, pytest.approx(100.0))]


def test_obook_bbo_grid_samples_last_quote_at_each_grid_time(con, small):
    rows = con.execute(f"SELECT ticker, time, bid_px, ask_px, ask_qty, quote_seq "
                       f"FROM obook_bbo_grid('{small}', 20000)").fetchall()
    # grid: first BBO time 10000 rounded up to 20000, then every 20000 up to the last BBO (90000)
    assert rows == [
        ("AAA", 20_000, 1_000_000, 1_000_500, 200, 5),
        ("AAA", 40_000, 1_000_100, 1_000_500, 200, 8),
        ("AAA", 60_000, 1_000_000, 1_000_500, 150, 11),
        ("AAA", 80_000, 1_000_000, 1_000_500, 250, 13),
        ("BBB", 20_000, None, None, None, None),          # before BBB's first quote
        ("BBB", 40_000, 500_000, None, None, 6),
        ("BBB", 60_000, 500_000, 500_301, 70, 9),
        ("BBB", 80_000, None, 500_301, 70, 12),
    ]


def test_obook_bbo_grid_explicit_bounds_include_exact_hits(con, small):
    rows = con.execute(f"SELECT ticker, time, quote_seq, quote_time FROM obook_bbo_grid('{small}', 45000, "
                       "start_time := 0, end_time := 90000)").fetchall()
    assert rows == [
        ("AAA", 0, None, None), ("AAA", 45_000, 8, 40_000), ("AAA", 90_000, 14, 90_000),
        ("BBB", 0, None, None), ("BBB", 45_000, 9, 45_000), ("BBB", 90_000, 12, 70_000),
    ]


def test_obook_bbo_grid_same_time_updates_pick_the_last_one(con, tmp_path):
    feed = write_feed(tmp_path / "ties.itch", [
        system_event(0, "O"), directory(0, 1, "TIE"),
        add(100, 1, 1, "B", 100, "TIE", 10_000),
        add(100, 1, 2, "B", 100, "TIE", 10_100),          # same ns: this one wins
        add(100, 1, 3, "S", 100, "TIE", 10_300),
        add(200, 1, 4, "B", 100, "TIE", 10_200),
    ])
    rows = con.execute(f"SELECT time, bid_px, ask_px, quote_seq FROM obook_bbo_grid('{feed}', 100)").fetchall()
    assert rows == [(100, 10_100, 10_300, 5), (200, 10_200, 10_300, 6)]


def test_obook_bbo_grid_rows_past_the_limit_over_all_tickers_is_an_error_as_in_python(con, small):
    import duckdb

    import obook

    # 300,000,001 points, under 500,000,000, but for each of 2 tickers: 600,000,002 rows
    with pytest.raises(duckdb.Error, match=r"gives 300000001 points for each of 2 tickers \(600000002 rows; "
                                           r"at most 500000000\)"):
        con.execute(f"SELECT count(*) FROM obook_bbo_grid('{small}', 1, start_time := 0, "
                    "end_time := 300000000)").fetchall()
    with pytest.raises(obook.ObookError, match=r"each of 2 tickers \(600,000,002 rows; at most 500,000,000\)"):
        obook.bbo_grid(small, 1, start_time=0, end_time=300_000_000, workers=1).read_all()
    # the widest window: the count of its points is no overflow
    with pytest.raises(duckdb.Error, match=r"gives 9223372036854775808 points"):
        con.execute(f"SELECT count(*) FROM obook_bbo_grid('{small}', 1, start_time := 0, "
                    "end_time := 9223372036854775807)").fetchall()


def test_obook_macros_pass_engine_options_through(con, small):
    base = con.execute(f"SELECT * FROM obook_bbo_grid('{small}', 20000)").fetchall()
    assert con.execute(f"SELECT * FROM obook_bbo_grid('{small}', 20000, workers := 2, "
                       "format := 'itch')").fetchall() == base
    twas = con.execute(f"SELECT * FROM obook_twas('{small}', workers := 2, on_error := 'raise')").fetchall()
    assert [r[0] for r in twas] == ["AAA", "BBB"]


def test_obook_bbo_grid_plans_a_real_asof_join_not_a_nested_loop(con, small):
    plan = "\n".join(r[1] for r in con.execute(
        f"EXPLAIN SELECT * FROM obook_bbo_grid('{small}', 1000)").fetchall())
    assert "ASOF_JOIN" in plan.replace(" ", "_").upper()
    assert "NESTED_LOOP" not in plan.replace(" ", "_").upper()


@pytest.mark.parametrize("prices", ["decimal", "float"])
def test_obook_price_of_currency_prices_is_an_error_saying_to_read_integers(con, small, prices):
    with pytest.raises(Exception, match=r"obook_price: the price is a (DECIMAL|DOUBLE).*prices := 'int'"):
        con.execute(f"SELECT obook_price(bid_px, '{small}') FROM obook_bbo('{small}', prices := '{prices}')").fetchall()
    got = con.execute(f"SELECT obook_price(bid_px, '{small}') FROM obook_bbo('{small}') "
                      "WHERE bid_px IS NOT NULL LIMIT 1").fetchall()
    assert isinstance(got[0][0], Decimal)
    assert con.execute(f"SELECT obook_price(1172400, '{small}')").fetchall() == [(Decimal("117.240000000"),)]


@pytest.mark.parametrize(("call", "after"), [
    ("obook_spread('{f}', 2)", "after path; its options: workers, format"),
    ("obook_twas('{f}', 'x')", "after path; its options: start_time, end_time, workers"),
    ("obook_bbo_grid('{f}', 60, 'x')", "after path, every; its options: start_time, end_time, workers"),
])
def test_obook_analytics_macro_option_given_by_position_is_an_error_naming_its_options(con, small, call, after):
    with pytest.raises(Exception, match=r"obook_\w+: an option is given by name \(name := value\), not by "
                                        r"position: \S+ came " + re.escape(after)):
        con.execute(f"SELECT * FROM {call.format(f=small)}").fetchall()
    assert con.execute(f"SELECT count(*) FROM obook_bbo_grid('{small}', 60)").fetchall()[0][0] > 0


def test_obook_bbo_grid_point_past_ns_timestamps_is_an_error_naming_it_as_in_python(con, small):
    """A grid point whose instant (the session's midnight + time) is past 2262 has no ns
    timestamp: an error naming the point and the file, as obook.bbo_grid raises, not a cast error."""
    import obook

    every, end = 3 * 10**18, (1 << 63) - 1
    with pytest.raises(obook.ObookError, match="time 9000000000000000000 gives an instant beyond 1677-2262"):
        obook.bbo_grid(small, every, start_time=0, end_time=end, date="2026-01-02", workers=1).read_all()
    with pytest.raises(Exception, match=rf"obook_bbo_grid: time 9000000000000000000 of {re.escape(str(small))} "
                                        "gives an instant beyond 1677-2262, what ns timestamps hold") as e:
        con.execute(f"SELECT max(timestamp) FROM obook_bbo_grid('{small}', {every}, start_time := 0, "
                    f"end_time := {end}, date := '2026-01-02')").fetchall()
    assert "Conversion Error" not in str(e.value)
    assert con.execute(f"SELECT count(*) FROM obook_bbo_grid('{small}', {every}, start_time := 0, "
                       f"end_time := {end})").fetchall() == [(4 * 2,)]      # no session date: no instant
