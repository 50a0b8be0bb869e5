"""obook.simulate's own tables (fills, events, bbo_with_own, depth_with_own) get ``timestamp``
after ``time`` when the session date is known, as the replay's and the matching engine's
tables do, on every front end (Python, DuckDB, polars, the command)."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import obook
from obook.cli import app
from test_simulate_frontends import _arrow, _files      # FEED (a CSV day, ms) and ORDERS

OWN = ("bbo_with_own", "depth_with_own")
STAMPED = ("fills", "events") + OWN
#: 2024-03-01 00:00 in New York (the CSV format's zone, EST: UTC-5) as a UTC instant
MIDNIGHT = dt.datetime(2024, 3, 1, 5, tzinfo=dt.timezone.utc)


def test_simulate_date_own_tables_have_timestamp_after_time(tmp_path):
    feed, orders = _files(tmp_path)
    r = obook.simulate(feed, orders, latency="lat", workers=1, date="2024-03-01", own_tables=OWN, levels=3)
    for t in STAMPED:
        names = r.table(t).schema.names
        assert names[names.index("time") + 1] == "timestamp", t
        assert r.table(t).schema.field("timestamp").type == pa.timestamp("ns", tz="UTC"), t
        assert r.table(t).num_rows > 0, t
        for row in r.table(t).to_pylist():       # time is ms since midnight (a CSV feed's unit)
            assert row["timestamp"] == MIDNIGHT + dt.timedelta(milliseconds=row["time"]), t
    assert "timestamp" not in r.summary.schema.names      # no time column: arrival, first_fill_time
    # the buy IOC decided at 5 ms arrives 4 ms later and takes 50 of b: 2024-03-01 05:00:00.009 UTC
    first = r.fills.to_pylist()[0]
    assert (first["time"], first["timestamp"]) == (9, dt.datetime(2024, 3, 1, 5, 0, 0, 9000, tzinfo=dt.timezone.utc))
    # the rows are the undated run's, the timestamp added
    plain = obook.simulate(feed, orders, latency="lat", workers=1, own_tables=OWN, levels=3)
    for t in STAMPED + ("summary",):
        assert r.table(t).drop_columns([n for n in ("timestamp",) if n in r.table(t).schema.names]).equals(
            plain.table(t)), t


def test_simulate_no_date_and_no_feed_date_has_no_timestamp(tmp_path):
    feed, orders = _files(tmp_path)
    r = obook.simulate(feed, orders, latency="lat", workers=1, own_tables=OWN, levels=3)
    for t in STAMPED + ("summary",):
        assert "timestamp" not in r.table(t).schema.names, t
    con = obook.connect()
    for macro in ("obook_simulate", "obook_simulate_events", "obook_simulate_bbo", "obook_simulate_depth"):
        got = _arrow(con.sql(f"SELECT * FROM {macro}('{feed}', '{orders}', latency := 'lat', workers := 1)"))
        assert "timestamp" not in got.column_names, macro
    assert "timestamp" not in obook.scan_simulate(feed, orders, latency="lat").collect_schema().names()


def test_simulate_feed_own_session_date_stamps_own_tables(tmp_path):
    """A Nasdaq file name gives the session date without date=: the feed's own tables and
    yours get timestamp alike."""
    from obook.gen.itch import write_itch

    feed = tmp_path / "03012024.NASDAQ_ITCH50"
    write_itch(feed, 4_000, 2, 1)
    bbo = obook.bbo(str(feed)).read_all()
    assert "timestamp" in bbo.schema.names
    row = next(b for b in bbo.to_pylist() if b["bid_px"] is not None)
    orders = pa.table({"time": [row["time"]], "instrument": [row["ticker"]], "order_id": [1], "action": ["new"],
                       "side": ["buy"], "tif": ["GTC"], "price": [row["bid_px"]], "quantity": [10]})
    r = obook.simulate(str(feed), orders, workers=1)
    for t in ("events", "bbo_with_own", "bbo"):
        assert r.table(t).num_rows > 0 and "timestamp" in r.table(t).schema.names, t
    stamps = r.events["timestamp"].cast(pa.int64()).to_pylist()     # ns: ITCH times are ns since midnight
    assert stamps == [int(MIDNIGHT.timestamp()) * 10**9 + t for t in r.events["time"].to_pylist()]
    pq.write_table(orders, tmp_path / "own.parquet")
    con = obook.connect()
    got = _arrow(con.sql(f"SELECT * FROM obook_simulate_events('{feed}', '{tmp_path / 'own.parquet'}', "
                         "workers := 1)"))
    assert got.to_pylist() == r.events.to_pylist()
    lf = obook.scan_simulate(str(feed), str(tmp_path / "own.parquet"), table="bbo_with_own", workers=1)
    assert lf.collect().equals(pl.from_arrow(r.bbo_with_own))


@pytest.mark.parametrize("table, macro", [("fills", "obook_simulate"), ("events", "obook_simulate_events"),
                                          ("summary", "obook_simulate_summary"), ("bbo_with_own", "obook_simulate_bbo"),
                                          ("depth_with_own", "obook_simulate_depth")])
def test_simulate_date_every_front_end_same_table(tmp_path, table, macro):
    feed, orders = _files(tmp_path)
    want = obook.simulate(feed, orders, latency="lat", workers=1, date="2024-03-01", own_tables=(table,)
                          if table in OWN else (), levels=3).table(table)
    assert ("timestamp" in want.schema.names) == (table != "summary")
    con = obook.connect()
    levels = ", levels := 3" if table == "depth_with_own" else ""
    got = _arrow(con.sql(f"SELECT * FROM {macro}('{feed}', '{orders}', latency := 'lat', workers := 1, "
                         f"date := '2024-03-01'{levels})"))
    assert got.column_names == want.column_names and got.to_pylist() == want.to_pylist()
    lf = obook.scan_simulate(feed, orders, table=table, latency="lat", workers=1, date="2024-03-01", levels=3)
    assert lf.collect_schema().names() == want.column_names
    assert lf.collect().equals(pl.from_arrow(want))
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "lat", "-w", "1", "--date", "2024-03-01",
                                   "--levels", "3", "-t", table, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert pq.read_table(out / f"{table}.parquet").equals(want)


def test_simulate_date_own_order_time_beyond_timestamps_is_an_error_naming_the_orders(tmp_path):
    feed, _ = _files(tmp_path)
    (tmp_path / "far.csv").write_text("time,instrument,order_id,action,side,type,tif,price,quantity\n"
                                      "5,AAA,1,new,buy,limit,GTC,990,10\n"
                                      "9000000000000000,AAA,2,new,buy,limit,GTC,990,10\n")
    far = str(tmp_path / "far.csv")
    obook.simulate(feed, far, workers=1)         # no date: no timestamp to hold
    with pytest.raises(obook.ObookError, match=r"far\.csv: row 2: time 9000000000000000 .*2024-03-01"):
        obook.simulate(feed, far, workers=1, date="2024-03-01")
