"""The obook.udfs scalar functions, called through real DuckDB."""

from __future__ import annotations

import datetime as dt
import re
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

    assert {f.name for f in udfs.FUNCTIONS} == {"obook_scaled_price", "obook_scaled_ticks", "obook_scaled_time",
                                                "obook_time_of_day_ms"}


def test_obook_scaled_price_converts_each_scale_exactly(con):
    got = con.execute("SELECT obook_scaled_price(1172400, 10000), obook_scaled_price(-1, 1000000000), "
                      "obook_scaled_price(1808080, 1000), obook_scaled_price(NULL, 10000), "
                      "typeof(obook_scaled_price(1, 1))").fetchall()
    assert got == [(Decimal("117.24"), Decimal("-0.000000001"), Decimal("1808.08"), None, "DECIMAL(38,9)")]


def test_obook_scaled_price_vector_with_nulls_matches_python_decimal(con):
    rows = con.execute("SELECT i, obook_scaled_price(CASE WHEN i % 7 = 0 THEN NULL ELSE i * 12345 - 50000000 END, "
                       "1000000000) FROM range(5000) t(i) ORDER BY i").fetchall()
    for i, price in rows:
        assert price == (None if i % 7 == 0 else Decimal(i * 12345 - 50_000_000).scaleb(-9))


def test_obook_scaled_price_and_ticks_extremes_exact_or_refused_never_wrapped(con):
    top = (1 << 63) - 1
    assert con.execute(f"SELECT obook_scaled_price({top}, 1000000000)").fetchall() == [(Decimal(top).scaleb(-9),)]
    for query, error in (("obook_scaled_price(5, 7)", "power of ten"),
                         ("obook_scaled_ticks(10000000000.5, 1000000000)", "does not fit BIGINT"),
                         ("obook_scaled_ticks(-9223372036854775808.6, 1)", "does not fit BIGINT"),
                         # rounds up past DECIMAL(38,18) itself
                         ("obook_scaled_ticks(99999999999999999999.5::DECIMAL(38,18), 1)", "does not fit BIGINT")):
        with pytest.raises(duckdb.Error, match=error):
            con.execute(f"SELECT {query}").fetchall()


def test_obook_scaled_ticks_rounds_to_a_price_unit(con):
    got = con.execute("SELECT obook_scaled_ticks(117.24, 10000), obook_scaled_ticks(0.00005, 10000), "
                      "obook_scaled_ticks(0.00015, 10000), obook_scaled_ticks(-5, 1000), obook_scaled_ticks(NULL, 10), "
                      "obook_scaled_ticks(obook_scaled_price(1234567, 1000000000), 1000000000)").fetchall()
    assert got == [(1_172_400, 0, 2, -5_000, None, 1_234_567)]


def test_udfs_apply_to_obook_bbo_columns(con, tmp_path):
    feed = write_small_feed(tmp_path / "small.itch")
    got = con.execute(f"SELECT seq, obook_price(bid_px, '{feed}'), obook_time_of_day(time, '{feed}') "
                      f"FROM obook_bbo('{feed}') "
                      "ORDER BY seq LIMIT 2").fetchall()
    assert got == [(4, Decimal("100.0000"), dt.time(0, 0, 0, 10)), (5, Decimal("100.0000"), dt.time(0, 0, 0, 20))]
    assert len(SMALL_BBO) == 10


@pytest.fixture(scope="module")
def scaled_days(tmp_path_factory):
    """Generated days of formats of four price scales: Databento 10^9, Shanghai 10^3,
    Shenzhen and ITCH 10^4."""
    from obook.gen.databento import mbo_flow, write_dbn
    from obook.gen.itch import write_itch
    from obook.gen.sse import write_sse
    from obook.gen.szse import write_szse

    root = tmp_path_factory.mktemp("scales")
    write_dbn(root / "day.dbn", mbo_flow(800, 2, seed=5))
    write_sse(root / "sse.log", 800, 2, seed=5)
    write_szse(root / "szse.log", 800, 2, seed=5)
    write_itch(root / "day.itch", 800, 2, seed=5)
    return {"databento": (root / "day.dbn", 10**9), "sse": (root / "sse.log", 1000),
            "szse": (root / "szse.log", 10000), "itch": (root / "day.itch", 10000)}


@pytest.mark.parametrize("fmt", ["databento", "sse", "szse", "itch"])
def test_obook_price_reads_the_feeds_scale_on_every_format(con, scaled_days, fmt):
    import obook

    path, scale = scaled_days[fmt]
    raw = obook.trades(path, workers=1).read_all()
    assert int(raw.schema.metadata[b"obook.price_scale"]) == scale
    want = [None if p is None else Decimal(p) / scale for p in raw.column("price").to_pylist()]
    got = con.execute(f"SELECT obook_price(price, '{path}'), obook_ticks(obook_price(price, '{path}'), '{path}') "
                      f"FROM obook_trades('{path}', workers := 1)").fetchall()
    assert [g[0] for g in got] == want and any(want)
    assert [g[1] for g in got] == raw.column("price").to_pylist()
    decimal = con.execute(f"SELECT price FROM obook_trades('{path}', workers := 1, prices := 'decimal')").fetchall()
    assert [d[0] for d in decimal] == want               # the same as the table's own decimal prices
    # the Python functions with the scale of the schema
    from obook.tables.units import price_scale
    from obook.udfs import obook_price

    assert obook_price(raw.column("price"), price_scale(raw.schema)).to_pylist() == want


def test_udf_functions_called_directly_on_arrow_arrays():
    from obook.udfs import PRICE_TYPE, obook_price, obook_ticks

    prices = obook_price(pa.chunked_array([[1, None], [30000]]), 10000)
    assert prices.type == PRICE_TYPE
    assert prices.to_pylist() == [Decimal("0.0001"), None, Decimal("3")]
    assert obook_ticks(prices.slice(1), 10000).to_pylist() == [None, 30000]
    mixed = obook_price(pa.array([5, 5, 5]), pa.array([10, None, 1000000000]))
    assert mixed.to_pylist() == [Decimal("0.5"), None, Decimal("5E-9")]


def test_udfs_register_twice_on_one_database_is_harmless(con):
    import obook.udfs as udfs

    udfs.register(con)
    cur = con.cursor()
    udfs.register(cur)
    assert cur.execute("SELECT obook_scaled_price(5, 10000)").fetchall() == [(Decimal("0.0005"),)]


@pytest.mark.parametrize(("price", "shown"), [
    ("true", "true (a BOOLEAN)"), ("'12'", "'12' (a VARCHAR)"), ("'x'", "'x' (a VARCHAR)"),
    ("DATE '2026-01-02'", "2026-01-02 (a DATE)"), ("[1, 2]", "[1, 2] (an INTEGER[])"),
])
def test_obook_price_not_an_integer_raises_naming_it_and_its_type(con, tmp_path, price, shown):
    """true is no price 1 and text no price (as in Python): the error names the value as given."""
    feed = write_small_feed(tmp_path / "small.itch")
    with pytest.raises(duckdb.Error, match=r"obook_price: the price must be one of the feed's integer prices, "
                                           rf"not {re.escape(shown)}"):
        con.execute(f"SELECT obook_price({price}, '{feed}')").fetchall()


def test_obook_price_past_64_bits_raises_naming_obook_price(con, tmp_path):
    feed = write_small_feed(tmp_path / "small.itch")
    with pytest.raises(duckdb.Error, match=r"obook_price: price 18446744073709551615 is beyond 64 bits"):
        con.execute(f"SELECT obook_price(18446744073709551615, '{feed}')").fetchall()
    assert con.execute(f"SELECT obook_price(NULL, '{feed}'), obook_price(CAST(NULL AS VARCHAR), '{feed}')"
                       ).fetchall() == [(None, None)]


@pytest.mark.parametrize(("price", "message"), [
    ("'1.5'", r"the price must be a number \(the currency\), not '1\.5' \(a VARCHAR\)"),
    ("true", r"the price must be a number \(the currency\), not true \(a BOOLEAN\)"),
    ("'nan'::DOUBLE", r"price nan is not a finite number"),
    ("'-inf'::DOUBLE", r"price -inf is not a finite number"),
    ("1e30", r"a price of 2\^63 price units or more \(either sign\) does not fit BIGINT"),
    ("-123456789012345678901234::DECIMAL(38,0)", r"a price of 2\^63 price units or more"),
])
def test_obook_ticks_not_a_finite_number_raises_naming_obook_ticks(con, tmp_path, price, message):
    feed = write_small_feed(tmp_path / "small.itch")
    with pytest.raises(duckdb.Error, match=rf"obook_ticks: {message}") as got:
        con.execute(f"SELECT obook_ticks({price}, '{feed}')").fetchall()
    assert "Conversion Error" not in str(got.value)
    assert con.execute(f"SELECT obook_ticks(NULL, '{feed}'), obook_ticks(100.5::DOUBLE, '{feed}')"
                       ).fetchall() == [(None, 1_005_000)]


@pytest.mark.parametrize("feed", ["5", "true", "[1, 2]"])
def test_obook_price_feed_not_text_raises_an_obook_error_naming_it(con, feed):
    with pytest.raises(duckdb.Error, match=r"ObookError: the feed path must be text \(a file, a glob pattern\) "
                                           r"or a list of them, not ") as got:
        con.execute(f"SELECT obook_price(100, {feed})").fetchall()
    assert "TypeError" not in str(got.value)
