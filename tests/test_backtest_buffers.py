"""The backtest's output buffers: first sized from the feed, faulted in ahead of their rows
by the prefaulter's thread (obook.engine.buffers.Prefaulter), which never changes a row and
never outlives the backtest."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hftbacktest_support import obook_market_maker
from obook.backtest import StrategyError, backtest, compiled, worker
from obook.engine import buffers
from obook.errors import FeedError
from obook.gen.databento import mbo_flow, write_dbn
from obook.live.risk import RiskGate
from test_backtest_contained import DAY, Boom

LARGE = (1 << 20, 1 << 18)      # rows: 112 MiB of events, mapped as written


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bufs") / "mbo.dbn")
    write_dbn(path, mbo_flow(60_000, instruments=2, seed=13, clears=0.0), encoder=False)
    return path


@pytest.fixture()
def followed(monkeypatch):
    """The prefaulters made, with large first buffers (the thread's loop compiled first: on
    an empty kernel cache its thread would still be compiling when a short backtest ends)."""
    from obook._kernels.prefault import F_CALLS

    buffers.Prefaulter.compile()
    made = []
    init = buffers.Prefaulter.__init__

    def spy(self, *a, **kw):
        init(self, *a, **kw)
        made.append(self)
        stop = self.stop

        def stop_after_a_call():
            # its thread runs only on an idle core (SCHED_IDLE): on a busy machine a short
            # backtest could end before it ran once; the writer waits for one call here
            deadline = time.monotonic() + 60
            while self.enabled and self._thread is not None and self.flag[F_CALLS] == 0 \
                    and time.monotonic() < deadline:
                time.sleep(0.001)
            stop()
        self.stop = stop_after_a_call
    monkeypatch.setattr(buffers.Prefaulter, "__init__", spy)
    monkeypatch.setattr(worker, "first_rows", lambda n: LARGE)
    return made


def _mm(path, pipeline=True):
    return backtest(path, compiled(obook_market_maker(), on=("timer",), timer=100_000), feed_latency=1_000,
                    order_latency=2_000, response_latency=3_000, risk=RiskGate(max_orders_per_second=100_000),
                    pipeline=pipeline)


def test_backtest_buffers_first_rows_follow_the_feed_size():
    assert worker.first_rows(0) == (worker.CHUNK, worker.CHUNK)
    assert worker.first_rows(64 << 20) == (1 << 18, 1 << 16)
    assert worker.first_rows(1 << 40) == (worker.MAX_FIRST_EVENTS, worker.MAX_FIRST_EVENTS // 4)


@pytest.fixture(scope="module")
def plain(day):
    """The day's backtest with its buffers as a small feed gets them."""
    return _mm(day)


def test_backtest_buffers_large_and_prefaulted_same_tables(day, plain, followed, no_leaks):
    from obook._kernels.prefault import F_CALLS, F_FAILED

    a, b = plain, _mm(day)
    assert len(followed) == 1 and followed[0].flag[F_CALLS] > 0 and not followed[0].flag[F_FAILED]
    assert a.summary["fills"] > 0 and a.summary == b.summary
    for name in a.names:
        assert a.table(name).equals(b.table(name)), name


def test_backtest_buffers_strategy_raises_no_thread_left(tmp_path, followed, no_leaks):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError) as e:
        backtest(str(feed), Boom(), format="csv", pipeline=True)
    assert e.value.partial.orders.column("ref").to_pylist() == [10, 20]
    assert followed and followed[0]._thread is not None


def test_backtest_buffers_bad_record_no_thread_left(day, tmp_path, followed, no_leaks):
    data = bytearray(open(day, "rb").read())
    cut = len(data) * 2 // 3
    data[cut:cut + 200] = b"\xff" * 200
    bad = tmp_path / "bad.dbn"
    bad.write_bytes(bytes(data))
    with pytest.raises(FeedError):
        _mm(str(bad))
    assert followed and followed[0]._thread is not None


def test_backtest_buffers_no_memory_promised_up_front_small_ones_grow(day, plain, monkeypatch, no_leaks):
    real = worker.zeros

    def strict_overcommit(shape, dtype=np.int64):
        if shape[0] > worker.CHUNK:
            raise OSError(12, "Cannot allocate memory")
        return real(shape, dtype)
    monkeypatch.setattr(worker, "zeros", strict_overcommit)
    monkeypatch.setattr(worker, "first_rows", lambda n: LARGE)
    b = _mm(day)
    assert b.summary == plain.summary
    for name in plain.names:
        assert plain.table(name).equals(b.table(name)), name


class _Quote:
    """A Python strategy that uses its context (the context refers back to the backtest)."""

    def on_book(self, ctx):
        ctx.position()
        return None


@pytest.fixture()
def no_cycle_collector():
    import gc

    was = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was:
        gc.enable()


def test_backtest_buffers_result_dropped_frees_them_without_cycle_collector(tmp_path, monkeypatch,
                                                                            no_cycle_collector):
    import weakref

    made = []
    init = worker.BacktestWorker.__init__

    def spy(self, spec):
        init(self, spec)
        made.append(weakref.ref(self.EV))
    monkeypatch.setattr(worker.BacktestWorker, "__init__", spy)
    path = tmp_path / "day.csv"
    path.write_text(DAY)
    result = backtest(str(path), _Quote())
    assert result.summary["calls"] > 0 and made[0]() is not None
    del result
    assert made[0]() is None        # freed by its last reference, not left for a collection


def test_backtest_l2_result_dropped_frees_its_run_without_cycle_collector(monkeypatch, no_cycle_collector):
    import weakref

    from obook.backtest import l2
    from test_backtest_l2 import QUEUE_DAY, JoinOnce, l2_table

    made = []
    init = l2.L2Run.__init__

    def spy(self, *a, **kw):
        init(self, *a, **kw)
        made.append(weakref.ref(self))
    monkeypatch.setattr(l2.L2Run, "__init__", spy)
    result = backtest(l2_table(QUEUE_DAY), JoinOnce())
    assert len(result.fills) > 0
    del result
    assert made[0]() is None


def test_backtest_buffers_second_backtest_in_kept_mappings_same_tables(day, plain, followed, monkeypatch):
    from obook.engine import buffers

    buffers.release_kept()
    reused = []
    take = buffers._take

    def spy(nbytes):
        m, dirty = take(nbytes)
        reused.append(m is not None and dirty > 0)
        return m, dirty
    first = _mm(day)
    del first                     # its buffers' mappings are kept for the next backtest
    monkeypatch.setattr(buffers, "_take", spy)
    second = _mm(day)
    assert sum(reused) >= 5       # events, fills, marks, orders, own orders: written before, zeroed
    assert second.summary == plain.summary
    for name in plain.names:
        assert second.table(name).equals(plain.table(name)), name
    buffers.release_kept()
