"""symbols, system_events, trading_actions and cross_trades: the same rows through obook,
DuckDB, polars and obook convert."""

import pyarrow.parquet as pq
import pytest

import obook
from obook.to_parquet import convert

from itch_builder import ItchBuilder

TABLES = ["symbols", "system_events", "trading_actions", "cross_trades"]


@pytest.fixture(scope="module")
def feed(tmp_path_factory):
    b = ItchBuilder()
    b.system("O")
    b.directory(1, "AAA")
    b.directory(2, "MSFT")
    b.system("Q")
    b.trading_action(2, "H")
    b.add(1, 1, "B", 10, 100)
    b.trading_action(2, "T")
    b.cross(2, 2**40 + 7, 1_234_500, match=9, cross_type="C")      # shares past 32 bits
    b.system("M")
    return b.write(tmp_path_factory.mktemp("side") / "side.itch")


def test_side_tables_functions_decode_directory_events_and_actions(feed):
    assert [r["stock"] for r in obook.symbols(feed).read_all().to_pylist()] == ["AAA", "MSFT"]
    assert [r["event_code"] for r in obook.system_events(feed).read_all().to_pylist()] == ["O", "Q", "M"]
    actions = obook.trading_actions(feed).read_all().to_pylist()
    assert [(r["seq"], r["stock"]) for r in actions] == [(5, "MSFT"), (7, "MSFT")]
    crosses = obook.cross_trades(feed).read_all().to_pylist()
    assert [{k: r[k] for k in ("seq", "locate", "stock", "shares", "price", "match", "cross_type")}
            for r in crosses] == [dict(seq=8, locate=2, stock="MSFT", shares=2**40 + 7, price=1_234_500, match=9,
                                       cross_type="C")]


def test_side_tables_cross_trades_decimal_prices_in_dollars(feed):
    row = obook.cross_trades(feed, prices="decimal").read_all().to_pylist()[0]
    assert str(row["price"]) == "123.4500"


@pytest.mark.parametrize("table", TABLES)
def test_side_tables_duckdb_polars_convert_agree_with_function(feed, table, tmp_path):
    expected = getattr(obook, table)(feed).read_all()
    con = obook.connect()
    assert con.sql(f"SELECT * FROM obook_{table}('{feed}')").arrow().read_all().to_pylist() == expected.to_pylist()
    assert getattr(obook, f"scan_{table}")(feed).collect().to_arrow().to_pylist() == expected.to_pylist()
    convert(feed, tmp_path, tables=table)
    assert pq.read_table(tmp_path / f"{table}.parquet").to_pylist() == expected.to_pylist()


def test_side_tables_missing_file_raises_obook_error(tmp_path):
    with pytest.raises(obook.ObookError, match="no such feed file"):
        obook.symbols(tmp_path / "none.itch")


def test_side_table_reader_on_error_any_case_taken_other_word_refused(feed):
    from obook.errors import ObookError
    from obook.feeds import read_side_table

    assert read_side_table(feed, "symbols", on_error="Skip").equals(read_side_table(feed, "symbols"))
    with pytest.raises(ObookError, match="on_error must be one of raise, skip, not 'ignore'"):
        read_side_table(feed, "symbols", on_error="ignore")
