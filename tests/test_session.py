"""The session date and the ``timestamp`` column of every replay table (obook/session.py)."""

import datetime as dt

import pyarrow as pa
import pytest

import obook
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch
from obook.session import midnight_ns, session_date

TS = pa.timestamp("ns", tz="America/New_York")


@pytest.fixture(scope="module")
def nasdaq_day(tmp_path_factory):
    path = tmp_path_factory.mktemp("session") / "12302019.NASDAQ_ITCH50"
    write_itch(path, 3000, 5, seed=2)
    return path


def _ns(table):
    return table["timestamp"].cast(pa.int64()).to_pylist()


def test_session_midnight_ns_new_york_offsets_expected():
    assert midnight_ns(dt.date(2019, 12, 30)) == 1577682000 * 10**9      # EST, UTC-5
    assert midnight_ns(dt.date(2019, 7, 1)) == 1561953600 * 10**9        # EDT, UTC-4


@pytest.mark.parametrize("table", ["bbo", "trades", "orders", "depth"])
def test_session_nasdaq_name_every_table_has_timestamp_after_time(nasdaq_day, table):
    t = getattr(obook, table)(nasdaq_day, workers=1).read_all()
    names = t.schema.names
    assert names[names.index("time") + 1] == "timestamp" and t.schema.field("timestamp").type == TS
    assert t.num_rows > 0
    assert _ns(t) == [midnight_ns(dt.date(2019, 12, 30)) + x for x in t["time"].to_pylist()]


def test_session_date_option_overrides_name_and_workers_agree(nasdaq_day):
    one = obook.bbo(nasdaq_day, workers=1, date="2020-07-01").read_all()
    two = obook.bbo(nasdaq_day, workers=2, date=dt.date(2020, 7, 1)).read_all()
    assert one.equals(two)
    assert _ns(one)[0] == midnight_ns(dt.date(2020, 7, 1)) + one["time"][0].as_py()


def test_session_unknown_date_no_timestamp_column(tmp_path):
    path = tmp_path / "day.itch"
    write_itch(path, 500, 2, seed=1)
    assert session_date(path) is None
    assert "timestamp" not in obook.bbo(path, workers=1).schema.names
    assert obook.bbo(path, workers=1).schema.equals(obook.bbo_schema, check_metadata=False)


def test_session_csv_time_is_milliseconds(tmp_path):
    path = tmp_path / "orders.csv"
    write_csv(path, 1000, 3, seed=1)
    t = obook.trades(path, workers=2, date="2021-05-04").read_all()
    assert _ns(t) == [midnight_ns(dt.date(2021, 5, 4)) + 1_000_000 * x for x in t["time"].to_pylist()]


def test_session_bad_date_raises_obook_error(nasdaq_day):
    with pytest.raises(obook.ObookError, match="YYYY-MM-DD"):
        obook.bbo(nasdaq_day, date="30/12/2019")


def test_session_polars_scan_schema_has_timestamp(nasdaq_day):
    import polars as pl

    lf = obook.scan_depth(nasdaq_day, levels=2, workers=1)
    assert lf.collect_schema()["timestamp"] == pl.Datetime("ns", "America/New_York")
    df = lf.select("time", "timestamp").collect()
    assert df["timestamp"].dt.epoch("ns").to_list() == [
        midnight_ns(dt.date(2019, 12, 30)) + x for x in df["time"].to_list()]
    first = obook.scan_bbo(nasdaq_day, date="2020-07-01", workers=1).select("time", "timestamp").head(1).collect()
    assert first["timestamp"].dt.epoch("ns")[0] == midnight_ns(dt.date(2020, 7, 1)) + first["time"][0]


def test_session_duckdb_macros_timestamp_from_name_or_date(nasdaq_day, tmp_path):
    con = obook.connect()
    day = str(nasdaq_day)
    got = con.sql(f"SELECT time, epoch_ns(timestamp) FROM obook_bbo('{day}', workers := 1)").fetchall()
    base = midnight_ns(dt.date(2019, 12, 30))
    assert got and all(ns == base + t for t, ns in got)
    n = con.sql(f"SELECT count(*) FROM obook_depth('{day}', levels := 2, date := '2020-07-01') "
                f"WHERE epoch_ns(timestamp) = {midnight_ns(dt.date(2020, 7, 1))} + time").fetchall()[0][0]
    assert n == obook.depth(nasdaq_day, levels=2).read_all().num_rows > 0
    plain = tmp_path / "day.itch"
    write_itch(plain, 300, 2, seed=1)
    assert "timestamp" not in [c[0] for c in con.sql(f"DESCRIBE SELECT * FROM obook_trades('{plain}')").fetchall()]
    with pytest.raises(Exception, match="YYYY-MM-DD"):
        con.sql(f"SELECT * FROM obook_orders('{day}', date := 'tomorrow')").fetchall()
