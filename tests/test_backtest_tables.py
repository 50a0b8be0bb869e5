"""A backtest's tables from its rows: row numbers that hold past the first chunk of the
instructions' queue, and tables built when first read."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from hftbacktest_support import obook_market_maker
from obook.backtest import TABLES, backtest, compiled
from obook.backtest.columns import COLUMNS, schema, schemas
from obook.backtest.worker import CHUNK
from obook.feeds import get_format
from obook.gen.databento import mbo_flow, write_dbn
from obook.live.risk import RiskGate

PERIOD = 100_000


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """A market maker's backtest of a generated day: more orders than one queue chunk."""
    path = str(tmp_path_factory.mktemp("busy") / "mbo.dbn")
    write_dbn(path, mbo_flow(200_000, instruments=1, seed=5, clears=0.0), encoder=False)
    return backtest(path, compiled(obook_market_maker(), on=("timer",), timer=PERIOD), feed_latency=1_000,
                    order_latency=2_000, response_latency=3_000, risk=RiskGate(max_orders_per_second=100_000))


def test_backtest_tables_many_orders_rows_number_every_order_once(busy):
    rows = busy.orders.column("row").to_numpy()
    assert len(rows) > CHUNK
    assert np.array_equal(rows, np.arange(1, len(rows) + 1))


def test_backtest_tables_many_orders_events_row_names_their_order(busy):
    ev = busy.events.filter(busy.events.column("row").is_valid())
    at = ev.column("row").to_numpy() - 1
    assert len(at) > CHUNK
    assert np.array_equal(busy.orders.column("ref").to_numpy()[at], ev.column("ref").to_numpy())


def test_backtest_tables_write_builds_every_table(busy, tmp_path):
    assert busy.summary["orders"] == busy.orders.num_rows
    assert set(busy.names) == set(TABLES)
    paths = busy.write(str(tmp_path / "bt"))
    assert [pq.read_table(p).num_rows for p in paths] == [busy.table(n).num_rows for n in busy.names]
    assert len(paths) == len(TABLES)


def test_backtest_tables_first_read_builds_that_table_only(tmp_path):
    path = str(tmp_path / "mbo.dbn")
    write_dbn(path, mbo_flow(20_000, instruments=1, seed=3, clears=0.0), encoder=False)
    r = backtest(path, compiled(obook_market_maker(), on=("timer",), timer=PERIOD), order_latency=2_000,
                 risk=RiskGate(max_orders_per_second=100_000))
    assert r.summary["fills"] > 0 and not r._tables._built
    assert r.fills.num_rows == r.summary["fills"]
    assert list(r._tables._built) == ["fills"]
    assert r.fills is r.fills


def test_backtest_tables_every_table_has_its_declared_schema_and_no_null_where_declared_not(busy):
    assert set(COLUMNS) == set(TABLES)
    declared = schemas()
    for name in TABLES:
        t = busy.table(name)
        assert t.num_rows > 0, name
        assert t.schema.equals(declared[name]), name
        assert t.schema.equals(schema(name, get_format("databento")), check_metadata=True), name
        for f in t.schema:
            if not f.nullable:
                assert t.column(f.name).null_count == 0, (name, f.name)
    # the nullable columns the run exercises do hold nulls (a declaration that says
    # "never null" for them would be wrong)
    assert busy.events.column("reason").null_count > 0 and busy.orders.column("orig").null_count > 0


def test_backtest_tables_scan_and_duckdb_shapes_follow_the_declaration(tmp_path):
    import polars as pl

    import obook
    from obook.polars import scan_backtest

    feed, strategy = str(tmp_path / "mbo.dbn"), tmp_path / "idle.py"
    write_dbn(feed, mbo_flow(2_000, instruments=1, seed=3, clears=0.0), encoder=False)
    strategy.write_text("def Idle(top):\n    return None\n")
    duck = {"int64": "BIGINT", "string": "VARCHAR", "bool": "BOOLEAN", "decimal128(38, 4)": "DECIMAL(38,4)"}
    con = obook.connect()
    for name in TABLES:
        declared = schemas()[name]
        lf = scan_backtest(feed, f"{strategy}:Idle", table=name)
        assert lf.collect_schema() == pl.from_arrow(declared.empty_table()).schema, name
        macro = "obook_backtest" if name == "fills" else f"obook_backtest_{name}"
        got = con.sql(f"DESCRIBE SELECT * FROM {macro}('{feed}', '{strategy}:Idle')").fetchall()
        assert [(c[0], c[1]) for c in got] == [(f.name, duck[str(f.type)]) for f in declared], name


def test_backtest_tables_summary_pnl_of_no_rows_has_four_decimals(tmp_path):
    feed = tmp_path / "day.csv"
    feed.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1000\n")
    r = backtest(str(feed), lambda top: None, format="csv", tickers=["ZZZ"])
    assert r.equity.num_rows == 0 and str(r.summary["pnl"]) == "0.0000"
