"""A strategy not called on its orders' events hears of them at its next call: the
responses due by then reach its order table and position just before it (not one by one
at their own times). Everything it can see at a call, and so everything it does, must be
what it would see were it called on every response too."""

from __future__ import annotations

import pytest

from hftbacktest_support import obook_market_maker
from obook.backtest import backtest, compiled
from obook.backtest.orders import Order
from obook.gen.databento import mbo_flow, write_dbn
from obook.live.risk import RiskGate

PERIOD = 100_000
TABLES = ("orders", "events", "fills", "equity", "positions")


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("responses") / "mbo.dbn")
    write_dbn(path, mbo_flow(60_000, instruments=1, seed=11, clears=0.0), encoder=False)
    return path


class Quoter:
    """Quotes one share at each best on its timer, cancels what moved away; records what its
    context shows at each timer call."""

    timer = PERIOD

    def __init__(self, hear_orders: bool):
        self.seen = []
        self.ref = 0
        if hear_orders:
            self.on_order = lambda ctx, update: None

    def on_timer(self, ctx):
        bid, _, ask, _ = ctx.top()
        open_orders = ctx.orders
        self.seen.append((ctx.time, ctx.position(), sorted((r, o.price, o.remaining, o.filled, o.pending)
                                                           for r, o in open_orders.items())))
        out = []
        for side, best in (("B", bid), ("S", ask)):
            mine = [o for o in open_orders.values() if o.side == side]
            for o in mine:
                if o.price != best and not o.pending:
                    out.append(Order("cancel", ctx.instrument, ref=o.ref))
            if not mine and best is not None:
                self.ref += 1
                out.append(Order("enter", ctx.instrument, side, 1, best, ref=self.ref, tif="GTC"))
        return out


def _equal(a, b):
    for name in TABLES:
        assert a.table(name).equals(b.table(name)), name
    assert a.summary["pnl"] == b.summary["pnl"] and a.summary["fills"] > 0


@pytest.mark.parametrize("latency", [dict(feed_latency=1_000, order_latency=2_000, response_latency=3_000),
                                     dict(feed_latency=("exponential", 2_000), order_latency=("uniform", 500, 4_000),
                                          response_latency=("exponential", 3_000), seed=7)])
def test_backtest_responses_compiled_timer_strategy_equals_order_subscribed(day, latency):
    risk = RiskGate(max_orders_per_second=100_000)
    timer_only = backtest(day, compiled(obook_market_maker(), on=("timer",), timer=PERIOD), risk=risk, **latency)
    hearing = backtest(day, compiled(obook_market_maker(), on=("timer", "orders"), timer=PERIOD), risk=risk,
                       **latency)
    _equal(timer_only, hearing)
    assert hearing.summary["calls"] > timer_only.summary["calls"]


@pytest.mark.parametrize("on", [("timer", "bbo"), ("timer", "bbo", "orders")])
@pytest.mark.parametrize("latency", [dict(feed_latency=1_000, order_latency=2_000, response_latency=3_000),
                                     dict(feed_latency=("exponential", 2_000), order_latency=("uniform", 500, 4_000),
                                          response_latency=("exponential", 3_000), seed=7)])
def test_backtest_responses_compiled_timer_strategy_equals_bbo_subscribed(day, latency, on):
    """Called on every BBO change too (it acts on its timer alone), the strategy sees the same
    book at its timer and sends the same orders, however the view rows between its calls
    reach it."""
    risk = RiskGate(max_orders_per_second=100_000)
    timer_only = backtest(day, compiled(obook_market_maker(), on=("timer",), timer=PERIOD), risk=risk, **latency)
    hearing = backtest(day, compiled(obook_market_maker(), on=on, timer=PERIOD), risk=risk, **latency)
    _equal(timer_only, hearing)
    assert hearing.summary["calls"] > 2 * timer_only.summary["calls"]


def test_backtest_responses_python_timer_strategy_sees_what_order_subscribed_sees(day):
    kw = dict(feed_latency=1_000, order_latency=2_000, response_latency=3_000,
              risk=RiskGate(max_orders_per_second=100_000))
    lazy, eager = Quoter(hear_orders=False), Quoter(hear_orders=True)
    a, b = backtest(day, lazy, **kw), backtest(day, eager, **kw)
    assert lazy.seen == eager.seen and any(s[1] != 0 for s in lazy.seen) and any(s[2] for s in lazy.seen)
    _equal(a, b)


def _twice_then_unknown():
    from numba import njit

    from obook._kernels.backtest_layout import (C_BID, C_KIND, CALL_TIMER, Q_ACT, Q_MARKET, Q_ORIG, Q_POST, Q_PRICE,
                                                Q_QTY, Q_REF, Q_SIDE, Q_TB, Q_TIF)
    from obook._kernels.simulate_layout import NONE, OP_CANCEL, OP_NEW, TIF_GTC

    @njit
    def strategy(c, lo, refkey, state, out):
        # once: a bid with ref 1, another new order with ref 1, a cancel of ref 99 (never sent)
        if c[C_KIND] != CALL_TIMER or state[0] != 0 or c[C_BID] == NONE:
            return 0
        state[0] = 1
        for n in range(2):
            out[n, Q_ACT], out[n, Q_SIDE], out[n, Q_QTY], out[n, Q_PRICE] = OP_NEW, 0, 1, c[C_BID]
            out[n, Q_TIF], out[n, Q_MARKET], out[n, Q_POST] = TIF_GTC, 0, 0
            out[n, Q_REF], out[n, Q_ORIG], out[n, Q_TB] = 1, 0, -1
        out[2, Q_ACT], out[2, Q_REF], out[2, Q_ORIG], out[2, Q_TB] = OP_CANCEL, 99, 0, -1
        return 3

    return strategy


def test_backtest_compiled_orders_with_used_or_unknown_ref_counted_and_warned(day, caplog):
    with caplog.at_level("WARNING", logger="obook"):
        r = backtest(day, compiled(_twice_then_unknown(), on=("timer",), timer=PERIOD))
    assert r.orders.num_rows == 1
    assert r.summary["unknown_refs"] == 2 and r.summary["refused"] == 0
    assert "returned 2 order(s) whose ref was in use" in caplog.text
