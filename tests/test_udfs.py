"""The obook.udfs scalar functions, called through real DuckDB."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

from obook.duckdb import connect
from frontend_feeds import SMALL_BBO, write_small_feed


@pytest.fixture()
def con():
    c = connect()
    yield c
    c.close()


def test_udfs_package_lists_every_function():
    import obook.udfs as udfs

    assert {f.name for f in udfs.FUNCTIONS} == {"obook_price", "obook_ticks", "obook_time_of_day",
                                                "obook_time_of_day_ms"}


def test_obook_price_ticks_convert_to_exact_decimal(con):
    got = con.execute("SELECT obook_price(1172400), obook_price(-1), obook_price(0), "
                      "obook_price(NULL), typeof(obook_price(1))").fetchall()
    assert got == [(Decimal("117.2400"), Decimal("-0.0001"), Decimal("0.0000"), None, "DECIMAL(18,4)")]


def test_obook_price_vector_with_nulls_matches_python_decimal(con):
    rows = con.execute("SELECT i, obook_price(CASE WHEN i % 7 = 0 THEN NULL ELSE i * 12345 - 50000000 END) "
                       "FROM range(5000) t(i) ORDER BY i").fetchall()
    for i, price in rows:
        expect = None if i % 7 == 0 else Decimal(i * 12345 - 50_000_000).scaleb(-4)
        assert price == expect


def test_obook_price_extreme_value_raises_not_wraps(con):
    assert con.execute("SELECT obook_price(999999999999999999)").fetchall() == [(Decimal("99999999999999.9999"),)]
    with pytest.raises(duckdb.Error, match="does not fit"):
        con.execute("SELECT obook_price(1000000000000000000)").fetchall()


def test_obook_ticks_decimal_price_converts_to_integer_ticks(con):
    got = con.execute("SELECT obook_ticks(117.24), obook_ticks(0.0001), obook_ticks(-5), obook_ticks(NULL), "
                      "obook_ticks(obook_price(1234567))").fetchall()
    assert got == [(1_172_400, 1, -50_000, None, 1_234_567)]


def test_obook_time_of_day_ns_truncates_to_microseconds(con):
    got = con.execute("SELECT obook_time_of_day(34200000000123::UBIGINT), "
                      "obook_time_of_day(34200123456789::UBIGINT), obook_time_of_day(0::UBIGINT), "
                      "obook_time_of_day(NULL), typeof(obook_time_of_day(1::UBIGINT))").fetchall()
    assert got == [(dt.time(9, 30), dt.time(9, 30, 0, 123456), dt.time(0), None, "TIME")]


def test_obook_time_of_day_ms_is_exact(con):
    got = con.execute("SELECT obook_time_of_day_ms(34200001), obook_time_of_day_ms(57599999)").fetchall()
    assert got == [(dt.time(9, 30, 0, 1000), dt.time(15, 59, 59, 999000))]


def test_obook_time_of_day_past_midnight_raises(con):
    with pytest.raises(duckdb.Error, match="past 24:00:00"):
        con.execute("SELECT obook_time_of_day(90000000000000::UBIGINT)").fetchall()


def test_udfs_apply_to_obook_bbo_columns(con, tmp_path):
    feed = write_small_feed(tmp_path / "small.itch")
    got = con.execute(f"SELECT seq, obook_price(bid_px), obook_time_of_day(time) FROM obook_bbo('{feed}') "
                      "ORDER BY seq LIMIT 2").fetchall()
    assert got == [(4, Decimal("100.0000"), dt.time(0, 0, 0, 10)), (5, Decimal("100.0000"), dt.time(0, 0, 0, 20))]
    assert len(SMALL_BBO) == 10


def test_udf_functions_called_directly_on_arrow_arrays():
    from obook.udfs import obook_price, obook_ticks

    prices = obook_price(pa.chunked_array([[1, None], [30000]]))
    assert prices.type == pa.decimal128(18, 4)
    assert prices.to_pylist() == [Decimal("0.0001"), None, Decimal("3.0000")]
    assert obook_ticks(prices.slice(1)).to_pylist() == [None, 30000]


def test_udfs_register_twice_on_one_database_is_harmless(con):
    import obook.udfs as udfs

    udfs.register(con)
    cur = con.cursor()
    udfs.register(cur)
    assert cur.execute("SELECT obook_price(5)").fetchall() == [(Decimal("0.0005"),)]
