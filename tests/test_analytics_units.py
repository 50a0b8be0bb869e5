"""The analytics' units and options on every front end: windows whose start is after their end,
bar intervals checked against the feed's time unit when the table is opened, exact spreads at
any price, currency back to price integers from float prices, LOBSTER's options."""

from __future__ import annotations

import re
from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import obook
from obook.errors import ObookError

from cli_support import cli_error


def _itch(tmp_path, messages=3000):
    from obook.gen.itch import write_itch

    path = tmp_path / "01022026.NASDAQ_ITCH50"
    write_itch(path, messages, 3, seed=5)
    return path


def _csv(tmp_path):
    from obook.gen.csv import write_csv

    path = tmp_path / "2026-01-02.csv"
    write_csv(path, 2000, 3, seed=5)
    return path


def _dbn(tmp_path, name, bid, ask):
    """A Databento day of one instrument: a bid, then an ask (prices in 1e-9 units)."""
    from obook.gen.databento import MBO_DTYPE, START_NS, write_dbn

    rows = np.zeros(2, dtype=MBO_DTYPE)
    rows["length"], rows["rtype"], rows["publisher_id"], rows["ts_in_delta"] = 14, 0xA0, 1, 250
    rows["instrument_id"] = 7
    rows["ts_event"] = [START_NS + 1000, START_NS + 2000]
    rows["ts_recv"] = rows["ts_event"] + 1000
    rows["order_id"], rows["price"], rows["size"], rows["flags"] = [11, 12], [bid, ask], [5, 6], 0x80
    rows["action"], rows["side"] = np.array([b"A", b"A"]), np.array([b"B", b"A"])
    rows["sequence"] = [1, 2]
    path = tmp_path / name
    write_dbn(path, rows)
    return path


@pytest.fixture()
def con():
    c = obook.connect()
    yield c
    c.close()


def _window(path):
    times = obook.bbo(path, workers=1).read_all().column("time").to_pylist()
    return times[len(times) // 3], times[2 * len(times) // 3]


# --------------------------------------------------------------------------- windows


@pytest.mark.parametrize("table", ["twas", "bbo_grid"])
def test_window_start_after_end_is_an_obook_error_on_every_front_end(tmp_path, con, capsys, table):
    path = _itch(tmp_path)
    early, late = _window(path)
    args = (10**9,) if table == "bbo_grid" else ()
    says = f"{table}: start_time {late} is after end_time {early}"
    with pytest.raises(ObookError, match=says):
        getattr(obook, table)(path, *args, workers=1, start_time=late, end_time=early)
    with pytest.raises(ObookError, match=says):
        getattr(obook, f"scan_{table}")(path, *args, workers=1, start_time=late, end_time=early)
    sql_args = "".join(f", {a}" for a in args)
    with pytest.raises(duckdb.Error, match=f"obook_{says}"):
        con.sql(f"SELECT * FROM obook_{table}('{path}'{sql_args}, start_time := {late}, "
                f"end_time := {early}, workers := 1)").fetchall()
    cli = ["--every", 10**9] if table == "bbo_grid" else []
    err = cli_error(capsys, "table", table, path, "--workers", 1, *cli, "--start-time", late, "--end-time", early)
    assert says in err
    err = cli_error(capsys, "sql", f"FROM obook_{table}('{path}'{sql_args}, start_time := {late}, "
                                   f"end_time := {early}, workers := 1)")
    assert f"obook_{says}" in err


def test_twas_start_after_end_on_a_feed_without_bbo_rows_is_still_an_error(tmp_path, con):
    from obook.gen.itch import write_itch

    path = tmp_path / "01022026.NASDAQ_ITCH50"
    write_itch(path, 7, 1)       # the directory and the system events: no book changes
    assert obook.bbo(path, workers=1).read_all().num_rows == 0
    with pytest.raises(ObookError, match="twas: start_time 5 is after end_time 3"):
        obook.twas(path, workers=1, start_time=5, end_time=3)
    with pytest.raises(duckdb.Error, match="obook_twas: start_time 5 is after end_time 3"):
        con.sql(f"SELECT * FROM obook_twas('{path}', start_time := 5, end_time := 3)").fetchall()


@pytest.mark.parametrize("side", ["start_after_the_last_bbo", "end_before_the_first_bbo"])
def test_twas_window_of_no_bbo_row_is_an_obook_error_on_every_front_end(tmp_path, con, capsys, side):
    """A window past the feed's BBO rows gave one row a ticker with nothing in it."""
    path = _itch(tmp_path)
    times = obook.bbo(path, workers=1).read_all().column("time").to_pylist()
    if side == "start_after_the_last_bbo":
        option, value = "start_time", max(times) + 1
        says = f"twas: start_time {value} is after the last BBO time {max(times)} of {path} (the default end_time)"
    else:
        option, value = "end_time", min(times) - 1
        says = f"twas: end_time {value} is before the first BBO time {min(times)} of {path}"
    with pytest.raises(ObookError, match=re.escape(says)):
        obook.twas(path, workers=1, **{option: value}).read_all()
    with pytest.raises(ObookError, match=re.escape(says)):
        obook.scan_twas(path, workers=1, **{option: value}).collect()
    query = f"FROM obook_twas('{path}', {option} := {value}, workers := 1)"
    with pytest.raises(duckdb.Error, match=re.escape(f"obook_{says}")):
        con.sql(query).fetchall()
    assert says in cli_error(capsys, "table", "twas", path, "--workers", 1, f"--{option.replace('_', '-')}", value)
    assert f"obook_{says}" in cli_error(capsys, "sql", query)


def test_twas_window_of_one_instant_or_in_order_still_gives_rows(tmp_path, con):
    path = _itch(tmp_path)
    early, late = _window(path)
    for t0, t1 in ((early, late), (early, early)):
        py = obook.twas(path, workers=1, start_time=t0, end_time=t1).read_all().to_pylist()
        sql = con.sql(f"SELECT * FROM obook_twas('{path}', start_time := {t0}, end_time := {t1}, "
                      "workers := 1)").to_arrow_table().to_pylist()
        assert py == sql and len(py) == 3


def test_twas_updates_counts_the_quoted_rows_inside_the_window(tmp_path, con):
    """``updates`` counted every quoted BBO row of the day whatever the window."""
    path = _itch(tmp_path)
    early, late = _window(path)
    bbo = obook.bbo(path, workers=1).read_all().to_pylist()
    want = {}
    for r in bbo:
        if r["bid_px"] is not None and r["ask_px"] is not None and early <= r["time"] <= late:
            want[r["ticker"]] = want.get(r["ticker"], 0) + 1
    py = obook.twas(path, workers=1, start_time=early, end_time=late).read_all().to_pylist()
    sql = con.sql(f"SELECT * FROM obook_twas('{path}', start_time := {early}, end_time := {late}, "
                  "workers := 1)").to_arrow_table().to_pylist()
    assert py == sql and {r["ticker"]: r["updates"] for r in py if r["updates"]} == want
    whole = obook.twas(path, workers=1).read_all().to_pylist()
    assert sum(r["updates"] for r in whole) > sum(want.values()) > 0


# --------------------------------------------------------------------------- bars


@pytest.mark.parametrize("interval", ["100 us", "5 parsecs", 0])
def test_bars_interval_bad_for_the_feed_is_an_error_when_the_table_is_opened(tmp_path, interval):
    path = _csv(tmp_path)        # times in ms: a 100 us bar is no whole number of them
    with pytest.raises(ObookError, match="interval"):
        obook.bars(path, workers=1, interval=interval)
    with pytest.raises(ObookError, match="interval"):
        obook.scan_bars(path, workers=1, interval=interval)


def test_bars_interval_of_whole_feed_units_gives_bars_in_them(tmp_path):
    path = _csv(tmp_path)
    bars = obook.bars(path, workers=1, interval="250 ms").read_all()
    assert bars.schema.metadata[b"obook.time_unit"] == b"ms"
    assert bars.num_rows > 0 and all(s % 250 == 0 for s in bars.column("start").to_pylist())


# --------------------------------------------------------------------------- timestamps


def _stamped_fronts(con, capsys, tmp_path, name, path, args, date):
    """Table ``name`` with ``date`` from Python, polars, SQL and ``obook table -o``, as Arrow tables."""
    import pyarrow.parquet as pq

    from cli_support import cli_run

    options = {"workers": 1, "date": date} if date else {"workers": 1}
    sql_options = "".join(f", {k} := {v!r}" for k, v in options.items())
    sql_args = "".join(f", {a}" for a in args)
    out = tmp_path / f"{name}.parquet"
    cli = ["--every", *args] if args else []
    code, err = cli_run(capsys, "table", name, path, *cli, "-o", out,
                        *(["--date", date] if date else []), "--workers", 1)
    assert code in (0, None), err
    return {"python": getattr(obook, name)(path, *args, **options).read_all(),
            "polars": getattr(obook, f"scan_{name}")(path, *args, **options).collect().to_arrow(),
            "sql": con.sql(f"SELECT * FROM obook_{name}('{path}'{sql_args}{sql_options})").to_arrow_table(),
            "cli": pq.read_table(out)}


@pytest.mark.parametrize("name", ["bars", "bbo_grid"])
@pytest.mark.parametrize("fmt", ["itch", "csv"])
def test_bars_and_grid_session_date_gives_timestamp_after_their_time_on_every_front_end(tmp_path, con, capsys,
                                                                                       name, fmt):
    """bars and bbo_grid had no ``timestamp`` with a session date, as every replay table has."""
    import datetime as dt

    from obook.gen.itch import write_itch
    from obook.session import midnight_ns

    if fmt == "itch":          # the date given: day.itch names none
        path, date = tmp_path / "day.itch", "2026-01-02"
        write_itch(path, 3000, 3, seed=5)
    else:                      # the date of the file's name: 2026-01-02.csv
        path, date = _csv(tmp_path), None
    unit = obook.feeds.get_format(fmt).time_unit_ns
    args = ({"itch": 60 * 10**9, "csv": 250}[fmt],) if name == "bbo_grid" else ()      # (a CSV day: 3 s)
    time = "start" if name == "bars" else "time"
    base = midnight_ns(dt.date(2026, 1, 2), "America/New_York")
    fronts = _stamped_fronts(con, capsys, tmp_path, name, path, args, date)
    for front, t in fronts.items():
        names = t.schema.names
        assert names[names.index(time) + 1] == "timestamp", front
        stamps = t.column("timestamp").cast(pa.int64()).to_pylist()
        assert t.num_rows and stamps == [base + v * unit for v in t.column(time).to_pylist()], front
    rows = {front: t.to_pylist() for front, t in fronts.items()}
    assert rows["python"] == rows["sql"] == rows["cli"] == rows["polars"]


@pytest.mark.parametrize("name", ["bars", "bbo_grid"])
def test_bars_and_grid_without_session_date_have_no_timestamp(tmp_path, con, capsys, name):
    from obook.gen.itch import write_itch

    path = tmp_path / "day.itch"
    write_itch(path, 3000, 3, seed=5)
    args = (60 * 10**9,) if name == "bbo_grid" else ()
    for front, t in _stamped_fronts(con, capsys, tmp_path, name, path, args, None).items():
        assert t.num_rows and "timestamp" not in t.schema.names, front


# --------------------------------------------------------------------------- exact prices


def test_spread_mid_of_prices_past_int64_products_is_exact_like_sql(tmp_path, con):
    bid, ask = 10**18, 10**18 + 10          # $1,000,000,000 in Databento's 1e-9 units
    path = _dbn(tmp_path, "big.dbn", bid, ask)
    want = (Decimal(ask - bid) / 10**9, Decimal(ask + bid) / 2 / 10**9)
    rows = obook.spread(path, workers=1).read_all().to_pylist()
    assert [(r["spread"], r["mid"]) for r in rows if r["ask_px"] is not None] == [want]
    sql = con.sql(f"SELECT spread, mid FROM obook_spread('{path}') WHERE ask_px IS NOT NULL").fetchall()
    assert sql == [want]


@pytest.mark.parametrize("macro", ["obook_spread", "obook_twas"])
def test_spread_and_twas_prices_null_is_the_default_int(tmp_path, con, macro):
    path = _itch(tmp_path)
    cols = "spread_ticks, spread" if macro == "obook_spread" else "twas_ticks, twas"
    got = {p: con.execute(f"SELECT {cols} FROM {macro}('{path}'{p}) ORDER BY ALL").fetchall()
           for p in ("", ", prices := NULL", ", prices := 'int'")}
    assert got[""] and got[""] == got[", prices := NULL"] == got[", prices := 'int'"]


def test_obook_ticks_of_float_prices_gives_the_integers_back(tmp_path, con):
    path = _itch(tmp_path)
    got = con.sql(f"SELECT i.bid_px, obook_ticks(f.bid_px, '{path}') FROM obook_bbo('{path}', workers := 1) i "
                  f"JOIN obook_bbo('{path}', workers := 1, prices := 'float') f USING (seq) "
                  "WHERE i.bid_px IS NOT NULL").fetchall()
    assert got and all(a == b for a, b in got)


def test_obook_scaled_ticks_of_a_half_unit_past_nine_decimals_rounds_half_to_even(con):
    got = con.sql("SELECT obook_scaled_ticks(CAST('1.0000000005' AS DECIMAL(38, 10)), 1000000000), "
                  "obook_scaled_ticks(CAST('1.0000000015' AS DECIMAL(38, 10)), 1000000000)").fetchall()
    assert got == [(1_000_000_000, 1_000_000_002)]


def test_obook_ticks_of_a_databento_mid_rounds_half_to_even(tmp_path, con):
    path = _dbn(tmp_path, "day.dbn", 100_000_000_000, 100_000_000_001)     # mid: half a unit
    got = con.sql(f"SELECT mid, obook_ticks(mid, '{path}') FROM obook_spread('{path}') "
                  "WHERE mid IS NOT NULL").fetchall()
    assert got == [(Decimal("100.0000000005"), 100_000_000_000)]


# --------------------------------------------------------------------------- LOBSTER


@pytest.mark.parametrize(("options", "says"), [
    (dict(start_ms=40_000_000, end_ms=35_000_000), "start_ms 40000000 must be before end_ms 35000000"),
    (dict(start_ms=40_000_000, end_ms=40_000_000), "start_ms 40000000 must be before end_ms 40000000"),
    (dict(start_ms=-5), "start_ms must be an integer of ms after midnight"),
    (dict(start_ms=3.5), "start_ms must be an integer of ms after midnight"),
    (dict(end_ms=10**20), "end_ms must be an integer of ms after midnight"),
    (dict(levels=True), "levels must be an integer from 1 to 50, not True"),
    (dict(levels=2.5), "levels must be an integer from 1 to 50, not 2.5"),
    (dict(levels=5.0), "levels must be an integer from 1 to 50, not 5.0"),
    (dict(start_ms=34_200_000.0), "start_ms must be an integer of ms after midnight"),
])
def test_lobster_bad_window_or_levels_is_an_error_and_writes_nothing(tmp_path, options, says):
    from obook.lobster import lobster

    path = _itch(tmp_path, 1500)
    with pytest.raises(ObookError, match=says):
        lobster(path, tmp_path / "out", ["AAA"], workers=1, **options)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_lobster_of_a_capture_as_two_lines_writes_the_days_files(tmp_path):
    from obook.gen.pcap import write_pcap
    from obook.lobster import lobster

    day = _itch(tmp_path, 1500)
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    write_pcap(day, a, b, drop=0.0, dup=0.0, reorder=0.0, date="2026-01-02")
    want = lobster(day, tmp_path / "itch", ["AAA"], workers=1)["AAA"]
    got = lobster((a, b), tmp_path / "pcap", ["AAA"], workers=1, date="2026-01-02")["AAA"]
    assert got["rows"] == want["rows"] > 0
    assert got["message"].read_bytes() == want["message"].read_bytes()
    assert got["orderbook"].read_bytes() == want["orderbook"].read_bytes()


def test_obook_price_of_a_list_of_feeds_whose_units_differ_is_an_error_naming_the_file(tmp_path, con):
    dbn, csv = _dbn(tmp_path, "day.dbn", 100_000_000_000, 100_010_000_000), _csv(tmp_path)
    for query in (f"SELECT obook_price(1000000, ['{dbn}', '{csv}'])",
                  f"SELECT obook_unit(to_json(['{dbn}', '{csv}']), NULL, 'price_scale')"):
        with pytest.raises(duckdb.Error) as e:
            con.execute(query).fetchall()
        assert f"{csv}: a csv feed, whose units" in str(e.value) and "databento" in str(e.value)
    same = con.execute(f"SELECT obook_price(1000000, ['{csv}', '{csv}'])").fetchall()
    assert same == [(Decimal("100.000000000"),)]


@pytest.mark.parametrize("name, text", [("notes.txt", "hello, world\nthis is no feed\n"),
                                        ("notes.dat", "Hello, world\n"),
                                        ("orders.csv", "time,instrument,order_id,action\n1,X,1,new\n")])
def test_obook_price_of_text_that_is_no_csv_feed_names_its_first_line(tmp_path, con, name, text):
    path = tmp_path / name
    path.write_text(text)
    for query in (f"SELECT obook_price(1000, '{path}')", f"SELECT obook_unit(to_json('{path}'), NULL, 'price_scale')"):
        with pytest.raises(duckdb.Error, match=rf"{name}: line 1: not a CSV order feed: line 1 '"):
            con.execute(query).fetchall()
    assert con.execute(f"SELECT obook_price(1000000, '{_csv(tmp_path)}')").fetchall() == [(Decimal("100.000000000"),)]


def test_obook_price_of_obook_parquet_files_reads_their_recorded_units(tmp_path, con):
    dbn = _dbn(tmp_path, "day.dbn", 100_000_000_000, 100_010_000_000)
    obook.convert(dbn, tmp_path / "out", tables=["bbo"], workers=1)
    pq = tmp_path / "out" / "bbo.parquet"
    want = con.execute(f"SELECT obook_price(bid_px, '{dbn}') FROM obook_bbo('{dbn}') WHERE bid_px IS NOT NULL").fetchall()
    got = con.execute(f"SELECT obook_price(bid_px, '{pq}') FROM read_parquet('{pq}') WHERE bid_px IS NOT NULL").fetchall()
    assert got == want and want[0] == (Decimal("100.000000000"),)
    every = con.execute(f"SELECT obook_unit(to_json('{tmp_path}/out/*.parquet'), NULL, 'time_unit_ns'), "
                        f"obook_unit(to_json('{pq}'), NULL, 'quantity_scale')").fetchall()
    assert every == [("1", "1")]
    import pyarrow.parquet as pqm

    pqm.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    with pytest.raises(duckdb.Error, match=r"other\.parquet: a Parquet file without obook's units"):
        con.execute(f"SELECT obook_price(1, '{tmp_path / 'other.parquet'}')").fetchall()


@pytest.mark.parametrize("given", ["bare.parquet", "./bare.parquet", "['bare.parquet']", "'bar*.parquet'"])
def test_obook_price_parquet_without_units_error_names_the_file_as_the_query_gave_it(tmp_path, monkeypatch, con,
                                                                                     given):
    import pyarrow.parquet as pqm

    pqm.write_table(pa.table({"x": [1]}), tmp_path / "bare.parquet")
    monkeypatch.chdir(tmp_path)
    feed = given if given.startswith(("[", "'")) else f"'{given}'"
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT obook_price(1, {feed})").fetchall()
    named = given if not given.startswith(("[", "'")) else "bare.parquet"
    assert f"ObookError: {named}: a Parquet file without obook's units" in str(e.value), str(e.value)
    assert str(tmp_path) not in str(e.value)


def test_polars_time_of_day_parquet_without_units_error_names_the_file_as_given(tmp_path, monkeypatch):
    import pyarrow.parquet as pqm

    pqm.write_table(pa.table({"x": [1]}), tmp_path / "bare.parquet")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ObookError) as e:
        obook.polars.time_of_day("time", "bare.parquet")
    assert str(e.value).startswith("bare.parquet: a Parquet file without obook's units"), str(e.value)


def test_obook_price_of_a_dataset_pattern_with_double_star_reads_every_depth(tmp_path, con):
    dbn = _dbn(tmp_path, "day.dbn", 100_000_000_000, 100_010_000_000)
    for day in ("date=2026-01-02", "date=2026-01-05"):     # a pipeline dataset's layout
        obook.convert(dbn, tmp_path / "ds" / "table=bbo" / day, tables=["bbo"], workers=1)
    # '**' is any depth of folders, as DuckDB's read_parquet reads it
    pattern = f"{tmp_path}/ds/**/*.parquet"
    assert con.execute(f"SELECT count(*) FROM read_parquet('{pattern}')").fetchall()[0][0] > 0
    assert con.execute(f"SELECT obook_price(100000000000, '{pattern}')").fetchall() == [(Decimal("100.000000000"),)]
    bbo = con.execute(f"SELECT count(*) FROM obook_bbo('{tmp_path}/**/*.dbn')").fetchall()
    assert bbo == con.execute(f"SELECT count(*) FROM obook_bbo('{dbn}')").fetchall()


def test_twas_and_bbo_grid_of_a_feed_time_past_2_63_is_an_error_naming_the_file(tmp_path, con):
    feed = tmp_path / "late.csv"        # a CSV time is any unsigned 64-bit number
    feed.write_bytes(b"Time,Ticker,Order,T,Shares,Price\r\n1000,AAA,1,B,100,10000\r\n"
                     b"1000,AAA,2,S,100,10100\r\n18446744073709551000,AAA,3,S,100,10050\r\n")
    says = r"BBO time 18446744073709551000 of \S*late\.csv is past 2\^63 - 1"
    with pytest.raises(ObookError, match="twas: " + says):
        obook.twas(feed, workers=1).read_all()
    with pytest.raises(ObookError, match="bbo_grid: " + says):          # (it gave wrapped grid times)
        obook.bbo_grid(feed, 1000, start_time=0, end_time=5000, workers=1).read_all()
    for query in (f"FROM obook_twas('{feed}')", f"FROM obook_bbo_grid('{feed}', 1000, start_time := 0, end_time := 5000)"):
        with pytest.raises(duckdb.Error, match=says):
            con.execute(query).fetchall()


@pytest.mark.parametrize("prices", ["decimal", "float"])
def test_obook_ticks_of_a_parquet_file_of_currency_prices_is_an_error_naming_it(tmp_path, con, prices):
    import pyarrow.parquet as pqm

    dbn = _dbn(tmp_path, "day.dbn", 100_000_000_000, 100_010_000_000)
    path = tmp_path / f"bbo_{prices}.parquet"
    pqm.write_table(obook.table("bbo", dbn, prices=prices, workers=1).read_all(), path)
    # its price_scale is 1 (the prices are the currency): 100.25 would come back as 100 price units
    for query in (f"SELECT obook_ticks(100.25, '{path}')", f"SELECT obook_price(1, '{path}')"):
        with pytest.raises(duckdb.Error, match=f"bbo_{prices}.parquet: its prices are {prices} "
                                                r"\(obook.prices\), the currency already"):
            con.execute(query).fetchall()
    assert con.execute(f"SELECT obook_unit(to_json('{path}'), NULL, 'time_unit_ns')").fetchall() == [("1",)]


def _sse(tmp_path):
    from obook.gen.sse import write_sse

    path = tmp_path / "2026-01-02.log"
    write_sse(path, 300, 1)
    return path


@pytest.mark.parametrize("feed, given, looks", [("itch", "sse", "itch"), ("csv", "itch", "csv"),
                                                ("dbn", "itch", "databento"), ("sse", "csv", "sse")])
def test_unit_functions_format_whose_units_are_not_the_files_is_an_error(tmp_path, con, feed, given, looks):
    """obook_price(price, feed, format := ...) and the time-of-day functions read the units of
    the format given: one the file is not, whose units differ (an ITCH file read at Shanghai's
    1/1000, a CSV file's ms read as ns), is an error naming both, as a table of it is, never a
    number in the wrong units."""
    from obook.polars import time_of_day

    path = {"itch": _itch, "csv": _csv, "sse": _sse,
            "dbn": lambda p: _dbn(p, "day.dbn", 100_000_000_000, 100_010_000_000)}[feed](tmp_path)
    says = f"format '{given}' was given, and the file looks like '{looks}'"
    for query in (f"SELECT obook_price(757100, '{path}', format := '{given}')",
                  f"SELECT obook_ticks(75.71, '{path}', format := '{given}')",
                  f"SELECT obook_time_of_day(34200000, '{path}', format := '{given}')"):
        with pytest.raises(duckdb.Error, match=re.escape(says)):
            con.execute(query).fetchall()
    with pytest.raises(ObookError, match=re.escape(says)):
        time_of_day("time", str(path), format=given)
    # the format the file is: its units
    right = {"itch": "itch", "csv": "csv", "sse": "sse", "dbn": "databento"}[feed]
    assert con.execute(f"SELECT obook_price(1000, '{path}', format := '{right}')").fetchall() == [
        (Decimal(1000) / {"itch": 10**4, "csv": 10**4, "sse": 10**3, "dbn": 10**9}[feed],)]
