"""obook.udfs.times: feed times as TIME of day, in the unit the feed's units give (ns for ITCH,
ms for CSV), in SQL (``obook_time_of_day(time, feed)``, ``obook_scaled_time``) and in Python."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import obook
from obook.duckdb import connect
from obook.errors import ObookError
import obook.udfs as udfs


@pytest.fixture()
def con():
    c = connect()
    yield c
    c.close()


def _csv(tmp_path):
    """A generated CSV day: its times are ms since midnight (its first at 09:30:00.003)."""
    from obook.gen.csv import write_csv

    path = tmp_path / "2026-01-02.csv"
    write_csv(path, 500, 2, seed=5)
    return path


def test_obook_scaled_time_ns_truncates_to_microseconds(con):
    got = con.execute("SELECT obook_scaled_time(34200000000123::UBIGINT, 1), "
                      "obook_scaled_time(34200123456789::UBIGINT, 1), obook_scaled_time(0::UBIGINT, 1), "
                      "obook_scaled_time(NULL, 1), obook_scaled_time(5::UBIGINT, NULL), "
                      "typeof(obook_scaled_time(1::UBIGINT, 1))").fetchall()
    assert got == [(dt.time(9, 30), dt.time(9, 30, 0, 123456), dt.time(0), None, None, "TIME")]


def test_obook_scaled_time_ms_and_ms_function_are_exact(con):
    got = con.execute("SELECT obook_scaled_time(34200001, 1000000), obook_time_of_day_ms(57599999)").fetchall()
    assert got == [(dt.time(9, 30, 0, 1000), dt.time(15, 59, 59, 999000))]


@pytest.mark.parametrize("call", ["obook_scaled_time(86400000000001::UBIGINT, 1)",
                                  "obook_scaled_time(86400000000999::UBIGINT, 1)",
                                  "obook_scaled_time(86400001, 1000000)",
                                  "obook_time_of_day_ms(86400001)"])
def test_obook_scaled_time_a_unit_past_midnight_raises_not_24h(con, call):
    assert con.execute("SELECT obook_scaled_time(86400000000000::UBIGINT, 1), "
                       "obook_time_of_day_ms(86400000)").fetchall() == [("24:00:00", "24:00:00")]
    with pytest.raises(duckdb.Error, match="past 24:00:00"):
        con.execute(f"SELECT {call}").fetchall()


def test_obook_scaled_time_unit_below_one_raises_naming_it(con):
    with pytest.raises(duckdb.Error, match="time_unit_ns must be an integer of ns of at least 1"):
        con.execute("SELECT obook_scaled_time(5, 0)").fetchall()


def test_obook_scaled_time_units_differing_by_row_each_apply():
    got = udfs.obook_scaled_time(pa.array([2, 2, None, 3]), pa.array([1000, 1_000_000, 1, None]))
    assert got.to_pylist() == [dt.time(0, 0, 0, 2), dt.time(0, 0, 0, 2000), None, None]


def test_obook_time_of_day_csv_feed_gives_its_ms_as_the_clock_time(con, tmp_path):
    feed = _csv(tmp_path)
    got = con.execute(f"SELECT time, obook_time_of_day(time, '{feed}') FROM obook_bbo('{feed}') "
                      "ORDER BY seq LIMIT 1").fetchall()
    assert got == [(34200003, dt.time(9, 30, 0, 3000))]


def test_obook_time_of_day_without_the_feed_raises_saying_the_unit_is_the_feeds(con):
    with pytest.raises(duckdb.Error, match=r"obook_time_of_day\(time\) needs the feed of the time.*ms for CSV"):
        con.execute("SELECT obook_time_of_day(34200003)").fetchall()


def test_obook_time_of_day_epoch_feed_raises_naming_its_timestamp(con, tmp_path):
    from obook.gen.databento import mbo_flow, write_dbn

    feed = tmp_path / "day.dbn"
    write_dbn(feed, mbo_flow(50, 1, seed=5))
    with pytest.raises(duckdb.Error, match="counts from the epoch, not midnight: use its timestamp column"):
        con.execute(f"SELECT obook_time_of_day(time, '{feed}') FROM obook_bbo('{feed}') LIMIT 1").fetchall()


def test_obook_time_of_day_parquet_reads_its_recorded_unit_or_the_format_given(con, tmp_path):
    feed = _csv(tmp_path)
    obook.convert(feed, tmp_path / "out", tables=["bbo"], workers=1)
    recorded = tmp_path / "out" / "bbo.parquet"
    bare = tmp_path / "bare.parquet"            # the same rows, no units in the schema
    pq.write_table(pq.read_table(recorded).replace_schema_metadata(None), bare)
    assert con.execute(f"SELECT obook_time_of_day(time, '{recorded}') FROM '{recorded}' "
                       "ORDER BY seq LIMIT 1").fetchall() == [(dt.time(9, 30, 0, 3000),)]
    assert con.execute(f"SELECT obook_time_of_day(time, '{bare}', format := 'csv') FROM '{bare}' "
                       "ORDER BY seq LIMIT 1").fetchall() == [(dt.time(9, 30, 0, 3000),)]
    with pytest.raises(duckdb.Error, match=rf"{bare}: a Parquet file without obook's units"):
        con.execute(f"SELECT obook_time_of_day(time, '{bare}') FROM '{bare}'").fetchall()


def test_obook_time_of_day_python_reads_the_tables_unit(tmp_path):
    from frontend_feeds import write_small_feed

    csv = obook.bbo(_csv(tmp_path), workers=1).read_all()
    assert udfs.obook_time_of_day(csv)[0].as_py() == dt.time(9, 30, 0, 3000)
    itch = obook.bbo(write_small_feed(tmp_path / "small.itch"), workers=1).read_all()
    assert udfs.obook_time_of_day(itch.to_batches()[0])[0].as_py() == dt.time(0, 0, 0, 10)


@pytest.mark.parametrize("given, says", [
    (pa.array([34200003]), "reads the time unit from a table's schema: give the table"),
    (pa.table({"time": pa.array([1], pa.uint64())}), "the table's schema records no time unit"),
])
def test_obook_time_of_day_python_without_units_raises(given, says):
    with pytest.raises(ObookError, match=says):
        udfs.obook_time_of_day(given)


def test_obook_time_of_day_python_not_a_time_column_raises_naming_it(tmp_path):
    table = obook.bbo(_csv(tmp_path), workers=1).read_all()
    with pytest.raises(ObookError, match="'bid_px' is not a feed time column of the table"):
        udfs.obook_time_of_day(table, "bid_px")


def test_obook_time_of_day_python_twas_quoted_time_a_duration_raises_not_a_clock_time(tmp_path):
    """``quoted_time`` is a length of time in the feed's unit: its units metadata names it a
    duration, not a time column, and no time of day comes of it."""
    from obook.tables.units import units

    twas = obook.twas(_csv(tmp_path), workers=1).read_all()
    meta = units(twas.schema)
    assert (meta["time_columns"], meta["duration_columns"], meta["time_unit"]) == ("", "quoted_time", "ms")
    with pytest.raises(ObookError, match="'quoted_time' is not a feed time column of the table"):
        udfs.obook_time_of_day(twas, "quoted_time")


def test_obook_time_of_day_of_a_bigint_time_reads_it_as_the_feeds(con, tmp_path):
    feed = _csv(tmp_path)
    got = con.execute(f"SELECT obook_time_of_day(CAST(time AS BIGINT), '{feed}') FROM obook_bbo('{feed}') "
                      "ORDER BY seq LIMIT 1").fetchall()
    assert got == [(dt.time(9, 30, 0, 3000),)]


def test_obook_time_of_day_parquet_without_time_origin_raises_naming_it_prices_still_read(con, tmp_path):
    feed = _csv(tmp_path)
    table = obook.bbo(feed, workers=1).read_all()
    meta = {k: v for k, v in table.schema.metadata.items() if k != b"obook.time_origin"}
    path = tmp_path / "old.parquet"             # as an obook that recorded no time origin wrote it
    pq.write_table(table.replace_schema_metadata(meta), path)
    assert con.execute(f"SELECT obook_unit(to_json('{path}'), NULL, 'price_scale')").fetchall() == [("10000",)]
    with pytest.raises(duckdb.Error, match=rf"{path}: its schema records no obook.time_origin"):
        con.execute(f"SELECT obook_time_of_day(time, '{path}') FROM '{path}'").fetchall()


@pytest.mark.parametrize(("time", "shown"), [
    ("1.5", "1.5 (a DECIMAL(2,1))"), ("34200000.0::DOUBLE", "34200000.0 (a DOUBLE)"), ("-1", "-1"),
    ("'34200000'", "'34200000'"), ("true", "true"), ("TIME '09:30:00'", "09:30:00"),
])
def test_obook_time_of_day_time_not_a_whole_feed_time_raises_naming_it(con, tmp_path, time, shown):
    """1.5 is no ns and -1 no time of day: refused, never rounded to a clock time."""
    feed = _csv(tmp_path)
    with pytest.raises(duckdb.Error, match=r"obook_time_of_day: the time must be an integer from 0 in the feed's "
                                           rf"time unit \(ns for ITCH, ms for CSV\), not {re.escape(shown)}") as got:
        con.execute(f"SELECT obook_time_of_day({time}, '{feed}')").fetchall()
    assert "Conversion Error" not in str(got.value)


def test_obook_time_of_day_parquet_without_units_points_to_obook_scaled_time(con, tmp_path):
    bare = tmp_path / "bare.parquet"        # a table of another tool: no units in its schema
    pq.write_table(pa.table({"time": pa.array([34200003], pa.uint64())}), bare)
    with pytest.raises(duckdb.Error, match=rf"{bare}: a Parquet file without obook's units .*"
                                           r"or the unit to obook_scaled_time\(time, time_unit_ns\)$"):
        con.execute(f"SELECT obook_time_of_day(time, '{bare}') FROM '{bare}'").fetchall()
    with pytest.raises(duckdb.Error, match=r"or the scale to obook_scaled_price\(price, price_scale\)$"):
        con.execute(f"SELECT obook_price(1, '{bare}')").fetchall()


@pytest.mark.parametrize("name", ["bbo.arrow", "bbo.feather"])
def test_obook_units_of_an_arrow_file_obook_wrote_read_from_its_schema(con, tmp_path, name):
    """An Arrow IPC file of obook's (obook table -o, obook sql -o) records the units as a Parquet
    file does: obook_time_of_day, obook_price and polars' time_of_day read them there."""
    from obook.output import write_file
    from obook.polars import time_of_day

    path = tmp_path / name
    write_file(obook.bbo(_csv(tmp_path), workers=1), path)
    got = con.execute(f"SELECT obook_time_of_day(34200003, '{path}'), obook_price(1172400, '{path}'), "
                      f"obook_unit(to_json('{path}'), NULL, 'time_unit_ns')").fetchall()
    assert got == [(dt.time(9, 30, 0, 3000), Decimal("117.24"), "1000000")]
    frame = pl.DataFrame({"time": [34_200_003]}).select(time_of_day("time", str(path)))
    assert frame.to_series().to_list() == [dt.time(9, 30, 0, 3000)]
    bare = tmp_path / f"bare{path.suffix}"       # no units in its schema: refused naming it
    with pa.OSFile(str(bare), "wb") as sink, pa.ipc.new_file(sink, pa.schema([("time", pa.uint64())])) as w:
        w.write_table(pa.table({"time": pa.array([1], pa.uint64())}))
    with pytest.raises(duckdb.Error, match=rf"{bare}: an Arrow file without obook's units"):
        con.execute(f"SELECT obook_time_of_day(1, '{bare}')").fetchall()


@pytest.mark.parametrize(("time", "unit"), [("86400001", 1_000_000), ("18446744073709551615", 1_000_000)])
def test_obook_time_of_day_past_midnight_raises_naming_the_time_and_obook_time_of_day(con, tmp_path, time, unit):
    feed = _csv(tmp_path)
    with pytest.raises(duckdb.Error, match=rf"obook_time_of_day: time {time} is past 24:00:00 in the feed's time "
                                           rf"unit \({unit} ns\): no time of day"):
        con.execute(f"SELECT obook_time_of_day({time}, '{feed}')").fetchall()
    assert con.execute(f"SELECT obook_time_of_day(86400000, '{feed}')").fetchall() == [("24:00:00",)]
