"""The replay kernels' rows (obook._kernels.layout's declarations) and the tables' schemas
name the same columns in the same order, and the column constants are their positions."""

import numpy as np
import pyarrow as pa

import pytest

from obook._kernels import layout as L
from obook.schema import bbo_schema, depth_schema, orders_schema, trades_schema

#: columns the engine makes that no kernel row holds: the book becomes ticker and the
#: format's book key (locate); text order ids and trade breaks come from the batch
ENGINE_ONLY = {"ticker", "locate", "order_id", "broken"}
DECLARED = {"bbo": L.BBO_COLUMNS, "trades": L.TRADE_COLUMNS, "orders": L.ORDER_COLUMNS}
ROWS = {"bbo": (L.BBO_ROW, bbo_schema, "ROW_", L.ROW_WIDTH),
        "trades": (L.TRADE_ROW, trades_schema, "TR_", L.TR_WIDTH),
        "orders": (L.ORDER_ROW, orders_schema, "OR_", L.OR_WIDTH)}


@pytest.mark.parametrize("table", sorted(ROWS))
def test_table_rows_match_their_schema_in_names_and_order(table):
    row, schema, _, width = ROWS[table]
    assert row[:3] == L.DEPTH_ROW_HEAD == ("seq", "time", "book")   # the merge reads these of every table
    assert width == len(row)
    assert [n for n in schema.names if n not in ENGINE_ONLY] == [n for n in row if n != "book"]


@pytest.mark.parametrize("table", sorted(ROWS))
def test_table_rows_constants_are_positions_of_the_declared_columns(table):
    row, _, prefix, _ = ROWS[table]
    constants = {name: getattr(L, name) for name in dir(L)
                 if name.startswith(prefix) and name.removeprefix(prefix) != "WIDTH"}
    assert sorted(constants.values()) == list(range(len(row)))      # one constant a column
    short = {"ROW_BID_N": "bid_orders", "ROW_ASK_N": "ask_orders", "OR_Q_SHARES": "queue_shares_ahead",
             "OR_Q_ORDERS": "queue_orders_ahead"}
    for name, at in constants.items():
        assert row[at] == short.get(name, name.removeprefix(prefix).lower())


def test_table_rows_depth_levels_match_the_depth_schema():
    levels = 3
    names = [n for n in depth_schema(levels).names if n not in ENGINE_ONLY]
    expect = [n for n in L.DEPTH_ROW_HEAD if n != "book"]
    expect += [f"{side}_{c}_{k}" for side in ("bid", "ask") for k in range(1, levels + 1) for c in L.DEPTH_LEVEL]
    assert names == expect
    assert (L.DP_PX, L.DP_QTY, L.DP_ORDERS) == (0, 1, 2)    # as the book's top_levels gives a level


@pytest.mark.parametrize("table", sorted(ROWS))
def test_table_rows_schema_types_and_nulls_come_from_the_declaration(table):
    _, schema, _, _ = ROWS[table]
    declared = DECLARED[table]
    assert {name for name, _, _, source in declared if source != L.ROW} == ENGINE_ONLY & set(schema.names)
    assert [(f.name, f.type, f.nullable) for f in schema] == [
        (name, pa.type_for_alias(typ), nullable) for name, typ, nullable, _ in declared]


def test_table_rows_bbo_batch_built_from_rows_has_the_declared_columns():
    from obook.engine.arrow import Tickers, merge_batch

    rows = np.zeros((1, 2, L.ROW_WIDTH), np.int64)
    rows[0, :, L.ROW_SEQ] = (1, 2)
    rows[0, :, L.ROW_TIME] = (10, 20)
    rows[0, 0, [L.ROW_BID_PX, L.ROW_BID_QTY, L.ROW_BID_N]] = (500, 7, 1)      # ask side empty
    rows[0, 1, [L.ROW_ASK_PX, L.ROW_ASK_QTY, L.ROW_ASK_N]] = (510, 4 << 33, 2)   # bid side empty
    tickers = Tickers()
    tickers.update([(0, "AAA")])
    batch = merge_batch(rows, np.array([2]), 3, np.ones(1, np.int64), np.zeros(1, np.int64), tickers, None)
    assert batch.schema == bbo_schema
    assert batch.to_pylist() == [
        {"seq": 1, "time": 10, "ticker": "AAA", "locate": None, "bid_px": 500, "bid_qty": 7, "bid_orders": 1,
         "ask_px": None, "ask_qty": None, "ask_orders": None},
        {"seq": 2, "time": 20, "ticker": "AAA", "locate": None, "bid_px": None, "bid_qty": None,
         "bid_orders": None, "ask_px": 510, "ask_qty": 4 << 33, "ask_orders": 2}]
