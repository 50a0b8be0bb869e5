"""A backtest's tables read while it runs (obook.backtest.stream): the rows and schema of the
whole run's tables, handed over batch by batch, so a LIMIT / head() stops the backtest early;
a failure delivers the rows before it, then raises; an early stop leaves nothing running."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow as pa
import pytest

import obook
from frontend_feeds import wait_no_workers, write_generated_feed
from obook.backtest import TABLES, StrategyError, backtest
from obook.backtest.stream import STREAMED, backtest_reader
from obook.backtest.worker import BacktestWorker
from obook.errors import FeedError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "strategy_quote.py"
OPTIONS = dict(order_latency=50_000, response_latency=20_000)


def _join_bid():
    spec = importlib.util.spec_from_file_location("strategy_quote_stream", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.JoinBid


JoinBid = _join_bid()


class BreaksAt(JoinBid):
    """JoinBid until its ``at``-th call, which raises (``error``: the exception's type)."""

    def __init__(self, at: int, error=ValueError):
        super().__init__()
        self.at, self.error, self.calls = at, error, 0

    def __call__(self, top):
        self.calls += 1
        if self.calls == self.at:
            raise self.error("the strategy broke")
        return super().__call__(top)


@pytest.fixture(scope="module")
def gen_day(tmp_path_factory):
    return write_generated_feed(tmp_path_factory.mktemp("stream") / "day.itch", 400_000, stocks=30)


@pytest.fixture(scope="module")
def whole(gen_day):
    return backtest(str(gen_day), JoinBid(), **OPTIONS)


@pytest.fixture
def cut(gen_day, tmp_path):
    """The generated day with its last record cut short: a run that reaches it raises."""
    path = tmp_path / "cut_at_end.itch"
    path.write_bytes(gen_day.read_bytes() + b"\x00\x24A\x00\x01")
    return path


@pytest.fixture
def batches_seen(monkeypatch):
    """How many feed batches the backtests' workers have run (in this process)."""
    seen = {"batches": 0}
    batch = BacktestWorker.batch

    def counted(self, *args):
        seen["batches"] += 1
        return batch(self, *args)
    monkeypatch.setattr(BacktestWorker, "batch", counted)
    return seen


def _read(reader: pa.RecordBatchReader) -> tuple[pa.Table, int]:
    batches = list(reader)
    return pa.Table.from_batches(batches, reader.schema), len(batches)


@pytest.mark.parametrize("table", TABLES)
def test_backtest_reader_table_equals_whole_run_rows_and_schema(gen_day, whole, table):
    got, n = _read(backtest_reader(str(gen_day), JoinBid(), table, **OPTIONS))
    assert got.schema.equals(whole.table(table).schema, check_metadata=True)
    assert got.schema.metadata[b"obook.money_columns"] is not None
    assert got.equals(whole.table(table))
    if table in STREAMED:
        assert whole.table(table).num_rows > 0 and n > 1       # handed over in parts


def test_backtest_reader_cut_day_first_batch_comes_before_the_end(cut, whole, batches_seen):
    with pytest.raises(FeedError, match="cut_at_end.itch"):
        backtest(str(cut), JoinBid(), **OPTIONS)
    every = batches_seen["batches"]
    batches_seen["batches"] = 0
    reader = backtest_reader(str(cut), JoinBid(), "events", **OPTIONS)
    first = reader.read_next_batch()
    reader.close()
    del reader          # (the reader lets go of its batches' generator: the run ends there)
    assert 0 < batches_seen["batches"] < every
    assert first.num_rows > 0 and pa.Table.from_batches([first]).equals(whole.events.slice(0, first.num_rows))
    assert wait_no_workers() == []


@pytest.mark.parametrize("table", STREAMED)
def test_backtest_reader_cut_day_delivers_rows_before_the_bad_record_then_raises(cut, table):
    with pytest.raises(FeedError) as e:
        backtest(str(cut), JoinBid(), **OPTIONS)
    reader = backtest_reader(str(cut), JoinBid(), table, **OPTIONS)
    got = []
    with pytest.raises(FeedError, match="cut_at_end.itch"):
        for b in reader:
            got.append(b)
    assert pa.Table.from_batches(got, reader.schema).equals(e.value.partial.table(table))


@pytest.mark.parametrize("table", STREAMED)
def test_backtest_reader_strategy_raises_delivers_rows_before_it_then_raises(gen_day, whole, table):
    at = whole.stats["calls"] // 2
    with pytest.raises(StrategyError) as e:
        backtest(str(gen_day), BreaksAt(at), **OPTIONS)
    reader = backtest_reader(str(gen_day), BreaksAt(at), table, **OPTIONS)
    got = []
    with pytest.raises(StrategyError, match="ValueError: the strategy broke"):
        for b in reader:
            got.append(b)
    partial = e.value.partial.table(table)
    assert 0 < partial.num_rows <= whole.table(table).num_rows
    assert pa.Table.from_batches(got, reader.schema).equals(partial)


def test_backtest_reader_closed_early_leaves_no_worker(gen_day, no_leaks):
    reader = backtest_reader(str(gen_day), JoinBid(), "fills", pipeline=True, **OPTIONS)
    assert reader.read_next_batch().num_rows > 0
    reader.close()
    del reader
    assert wait_no_workers() == []


def test_backtest_reader_interrupt_in_strategy_raises_it_and_leaves_no_worker(gen_day, whole, no_leaks):
    reader = backtest_reader(str(gen_day), BreaksAt(whole.stats["calls"] // 2, KeyboardInterrupt), "orders",
                             pipeline=True, **OPTIONS)
    with pytest.raises(KeyboardInterrupt):
        for _ in reader:
            pass
    assert wait_no_workers() == []


@pytest.mark.parametrize("table", ["positions", "equity"])
def test_backtest_reader_whole_day_table_runs_nothing_until_read(gen_day, whole, batches_seen, table):
    """Positions and equity need the whole day: a reader of them runs it at its first read,
    not when it is made (readers made and never read cost nothing)."""
    readers = [backtest_reader(str(gen_day), JoinBid(), table, **OPTIONS) for _ in range(3)]
    assert batches_seen["batches"] == 0
    got = readers[0].read_all()
    assert batches_seen["batches"] > 0
    assert got.schema.equals(whole.table(table).schema, check_metadata=True)
    assert got.equals(whole.table(table))


def test_backtest_reader_wrong_table_or_option_raises_before_running(gen_day):
    with pytest.raises(obook.ObookError, match="table must be one of orders, events"):
        backtest_reader(str(gen_day), JoinBid(), "trades")
    with pytest.raises(TypeError, match="backtest_reader: got an unexpected keyword argument 'order_latncy'"):
        backtest_reader(str(gen_day), JoinBid(), "fills", order_latncy=5)
    with pytest.raises(obook.ObookError, match="seed"):
        backtest_reader(str(gen_day), JoinBid(), "fills", seed=0.5)


def test_duckdb_backtest_limit_on_cut_day_returns_rows_early(cut, whole, batches_seen):
    con = obook.connect()
    sql = f"FROM obook_backtest_events('{cut}', '{EXAMPLE}:JoinBid', order_latency := 50000, " \
          f"response_latency := 20000)"
    import duckdb

    with pytest.raises(duckdb.Error, match="cut_at_end.itch"):
        con.execute(f"SELECT count(*) {sql}").fetchall()
    every = batches_seen["batches"]
    batches_seen["batches"] = 0
    got = con.execute(f"SELECT * {sql} LIMIT 10").fetchall()
    assert 0 < batches_seen["batches"] < every
    assert got == [tuple(r.values()) for r in whole.events.slice(0, 10).to_pylist()]
    assert wait_no_workers() == []


def test_polars_scan_backtest_head_on_cut_day_returns_rows_early(cut, whole, batches_seen):
    lf = obook.polars.scan_backtest(str(cut), f"{EXAMPLE}:JoinBid", table="orders", **OPTIONS)
    with pytest.raises(Exception, match="cut_at_end.itch"):
        lf.collect()
    every = batches_seen["batches"]
    batches_seen["batches"] = 0
    got = lf.head(10).collect()
    assert 0 < batches_seen["batches"] < every
    assert got.to_arrow().to_pylist() == whole.orders.slice(0, 10).to_pylist()
    assert wait_no_workers() == []
