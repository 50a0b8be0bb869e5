"""One strategy, two worlds: the backtest's view of the book is the replay's, and a live
strategy runs unchanged."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

import obook
from obook.backtest import backtest
from obook.gen.databento import mbo_flow, write_dbn
from obook.gen.itch import write_itch


class Recorder:
    """A live strategy (``strategy(top) -> orders``) that only looks."""

    def __init__(self):
        self.tops = []

    def __call__(self, top):
        self.tops.append((top.seq, top.time, top.bid_px, top.bid_qty, top.ask_px, top.ask_qty))
        return None


def _replay_tops(path, ticker, fmt=None):
    t = obook.bbo(path, workers=1, format=fmt).read_all()
    t = t.filter(pc.equal(t.column("ticker"), ticker))
    return [(r["seq"], r["time"], r["bid_px"], r["bid_qty"], r["ask_px"], r["ask_qty"]) for r in t.to_pylist()]


def _join_when_thin():
    """A live numba strategy (obook.live.strategy.numba_strategy): join the bid when it is thin."""
    from numba import njit

    from obook.live.strategy import numba_strategy

    @njit
    def join_when_thin(locate, time, bid_px, bid_qty, ask_px, ask_qty):
        if bid_px > 0 and bid_qty <= 100:
            return 1, 0, 100, bid_px, time % 1_000_000 + 1, 0
        return 0, 0, 0, 0, 0, 0

    return numba_strategy(join_when_thin)


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    d = tmp_path_factory.mktemp("days")
    itch = str(d / "day.itch")
    write_itch(itch, 20_000, 4, 3)
    dbn = str(d / "day.dbn")
    write_dbn(dbn, mbo_flow(6_000, instruments=2, seed=5), encoder=False)
    return {"itch": (itch, "AAA"), "dbn": (dbn, "SYM0")}


@pytest.mark.parametrize("kind", ["itch", "dbn"])
def test_backtest_view_zero_latency_no_orders_equals_replay_bbo(days, kind):
    path, ticker = days[kind]
    s = Recorder()
    r = backtest(path, s, tickers=[ticker])
    want = _replay_tops(path, ticker)
    assert len(want) > 100
    assert s.tops == want
    assert r.orders.num_rows == 0 and r.fills.num_rows == 0 and r.stats["calls"] == len(want)


def test_backtest_view_feed_latency_same_rows_later(days):
    path, ticker = days["itch"]
    s = Recorder()
    backtest(path, s, tickers=[ticker], feed_latency=250_000)
    want = _replay_tops(path, ticker)
    assert s.tops == [(q, t + 250_000, *rest) for q, t, *rest in want]


def test_backtest_live_numba_strategy_compiled_loop_sends_what_python_calls_send(days):
    """A live numba strategy (obook.live.strategy.numba_strategy) runs inside the compiled
    loop; called row by row from Python (as behind a live listener) it sends the same orders."""
    path, ticker = days["itch"]
    s = _join_when_thin()
    fast = backtest(path, s, tickers=[ticker], order_latency=10_000)
    slow = backtest(path, lambda top: s(top), tickers=[ticker], order_latency=10_000)
    assert fast.orders.num_rows > 10
    assert fast.orders.to_pylist() == slow.orders.to_pylist()
    assert fast.fills.to_pylist() == slow.fills.to_pylist()


def test_backtest_compiled_strategy_with_feed_latency_sees_what_a_python_one_sees(days):
    """A compiled strategy's delayed view is the book's recorded top, a Python strategy's the
    whole delayed book: the same live strategy sends the same orders either way."""
    path, ticker = days["itch"]
    s = _join_when_thin()
    fast = backtest(path, s, tickers=[ticker], feed_latency=30_000, order_latency=10_000)
    slow = backtest(path, lambda top: s(top), tickers=[ticker], feed_latency=30_000, order_latency=10_000)
    assert fast.orders.num_rows > 10
    assert fast.orders.to_pylist() == slow.orders.to_pylist()
    assert fast.fills.to_pylist() == slow.fills.to_pylist()
