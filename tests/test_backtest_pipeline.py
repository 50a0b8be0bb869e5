"""A backtest whose replay books run in a worker process (``pipeline=True``) beside the
strategy and its venue: the same tables as in one process, strategies still called in the
caller's process, errors and early stops leave no process behind."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from conftest import worker_children

from hftbacktest_support import obook_market_maker
from obook.backtest import StrategyError, backtest, compiled
from obook.errors import FeedError
from obook.gen.databento import mbo_flow, write_dbn
from obook.live.risk import RiskGate
from test_backtest_contained import DAY, Boom

PERIOD = 100_000


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("pipe") / "mbo.dbn")
    write_dbn(path, mbo_flow(60_000, instruments=2, seed=11, clears=0.0), encoder=False)
    return path


def _mm(path, pipeline, **kw):
    return backtest(path, compiled(obook_market_maker(), on=("timer",), timer=PERIOD), feed_latency=1_000,
                    order_latency=2_000, response_latency=3_000, risk=RiskGate(max_orders_per_second=100_000),
                    pipeline=pipeline, **kw)


def test_backtest_pipeline_compiled_strategy_same_tables(day, no_leaks):
    a, b = _mm(day, False), _mm(day, True)
    assert a.summary["fills"] > 0 and a.summary == b.summary
    for name in a.names:
        assert a.table(name).equals(b.table(name)), name


class Quoter:
    """A Python strategy that keeps what it saw (in the caller's process)."""

    def __init__(self):
        self.seen = 0
        self.ref = 0
        self.workers = None     # the worker processes alive at the first call

    def on_book(self, ctx):
        if self.workers is None:
            self.workers = len(worker_children())
        self.seen += 1
        bid, _, _, _ = ctx.top()
        if bid is not None and self.seen % 500 == 0:
            from obook.backtest.orders import Order
            self.ref += 1
            return [Order("enter", ctx.instrument, "B", 1, bid, ref=self.ref, tif="GTC")]
        return None


def test_backtest_pipeline_python_strategy_runs_in_the_callers_process(day):
    q1, q2 = Quoter(), Quoter()
    a = backtest(day, q1, tickers=["SYM0"], order_latency=2_000, pipeline=False)
    b = backtest(day, q2, tickers=["SYM0"], order_latency=2_000, pipeline=True)
    assert q1.seen == q2.seen > 500 and q1.ref == q2.ref > 0
    assert (q1.workers, q2.workers) == (0, 1)        # the books in a worker only when pipelined
    for name in a.names:
        assert a.table(name).equals(b.table(name)), name


def test_backtest_pipeline_strategy_raises_keeps_tables_so_far_and_no_worker(tmp_path, no_leaks):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError) as e:
        backtest(str(feed), Boom(), format="csv", pipeline=True)
    assert e.value.partial.orders.column("ref").to_pylist() == [10, 20]


def test_backtest_pipeline_bad_record_same_error_as_one_process(day, tmp_path, no_leaks):
    data = bytearray(open(day, "rb").read())
    bad = tmp_path / "bad.dbn"
    cut = len(data) * 2 // 3
    data[cut:cut + 200] = b"\xff" * 200
    bad.write_bytes(bytes(data))
    errors = []
    for pipeline in (False, True):
        with pytest.raises(FeedError) as e:
            _mm(str(bad), pipeline)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "bad.dbn" in errors[0]


def test_backtest_pipeline_strategy_side_fails_to_start_no_worker_left(day, monkeypatch, no_leaks):
    # the strategy's side is made after the replay's worker process started: a failure
    # there (no memory for its first buffers) must stop that process too
    from obook.backtest import worker

    def no_memory(shape, dtype=None):
        raise OSError(12, "Cannot allocate memory")
    monkeypatch.setattr(worker, "zeros", no_memory)
    with pytest.raises(OSError, match="Cannot allocate memory"):
        _mm(day, True)


def test_backtest_pipeline_auto_only_for_large_files(day, monkeypatch):
    import obook.backtest as bt

    assert bt._pipelined(day, None) is False            # a small file: one process
    monkeypatch.setattr(bt, "PIPELINE_BYTES", 1)
    assert bt._pipelined(day, None) is (mp.cpu_count() >= 2)
    assert bt._pipelined(day, False) is False and bt._pipelined("no/such/file", None) is False
