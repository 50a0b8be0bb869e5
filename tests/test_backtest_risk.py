"""The risk gate refuses the same orders of a Python strategy and of a compiled one: a
market order takes the other side's best, whatever the spread (no price band), as the
compiled gate reads it."""

from __future__ import annotations

import numpy as np

from obook.backtest import backtest, compiled
from obook.backtest.orders import Order

# an ask of 100 at 1100 and a bid of 100 at 1000: a spread of 1,000 bps, past the default band
DAY = "Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1100\n2,AAA,b,B,100,1000\n5,AAA,c,B,100,1000\n"


def _run(tmp_path, strategy):
    day = tmp_path / "day.csv"
    day.write_text(DAY)
    return backtest(str(day), strategy, format="csv")


def _compiled_market_buy():
    """At its second call (both sides in the book) a market buy of 10, ref 1."""
    from numba import njit

    from obook._kernels.backtest_layout import (Q_ACT, Q_MARKET, Q_ORIG, Q_POST, Q_PRICE, Q_QTY, Q_REF, Q_SIDE,
                                                Q_TB, Q_TIF)
    from obook._kernels.simulate_layout import OP_NEW, TIF_IOC

    @njit
    def strategy(c, lo, refkey, state, out):
        state[0] += 1
        if state[0] != 2:
            return 0
        out[0, Q_ACT], out[0, Q_SIDE], out[0, Q_QTY], out[0, Q_PRICE] = OP_NEW, 0, 10, 0
        out[0, Q_TIF], out[0, Q_MARKET], out[0, Q_POST] = TIF_IOC, 1, 0
        out[0, Q_REF], out[0, Q_ORIG], out[0, Q_TB] = 1, 0, -1
        return 1

    return strategy


class MarketBuy:
    def __init__(self):
        self.calls = 0

    def on_book(self, ctx):
        self.calls += 1
        if self.calls == 2:
            return [Order("enter", "AAA", "B", 10, 0, ref=1, tif="IOC", market=True)]
        return None


def test_backtest_risk_market_buy_into_a_wide_spread_sent_by_python_as_compiled(tmp_path):
    fast = _run(tmp_path, compiled(_compiled_market_buy(), np.zeros(4, np.int64)))
    slow = _run(tmp_path, MarketBuy())
    for r in (fast, slow):
        assert r.summary["refused"] == 0
        assert [(f["price"], f["quantity"], f["liquidity"]) for f in r.fills.to_pylist()] == [(1100, 10, "taker")]
    for name in ("orders", "events", "fills"):
        assert fast.table(name).to_pylist() == slow.table(name).to_pylist(), name


class OnceAtBid:
    """At the first book of ``ticker`` with both sides: a buy of ``quantity`` at the best bid."""

    def __init__(self, ticker: str, quantity: int):
        self.ticker, self.quantity, self.sent = ticker, quantity, False

    def on_book(self, ctx):
        bid, _, ask, _ = ctx.top()
        if self.sent or bid is None or ask is None or ctx.instrument != self.ticker:
            return None
        self.sent = True
        return [Order("enter", self.ticker, "B", self.quantity, bid, ref=1, tif="GTC")]


def test_backtest_risk_default_gate_shanghai_round_lot_passes(tmp_path):
    # Shanghai counts 1/1000 share: 100 shares are 100,000 of its quantity units, far under the
    # default gate's 10,000 shares
    from obook.gen.sse import write_sse

    day = tmp_path / "2024-01-05.log"
    write_sse(str(day), 400, 1)
    r = backtest(str(day), OnceAtBid("600000", 100_000), tickers=["600000"])
    assert r.orders.column("quantity").to_pylist() == [100_000]
    assert r.orders.column("refused").to_pylist() == [None]


def test_backtest_risk_default_gate_databento_order_of_100_dollars_passes(tmp_path):
    # Databento counts 1e-9 dollars: 2,000 shares at about $100 are 2e14 price units x quantity units,
    # $200,000, far under the default gate's notional
    from obook.gen.databento import mbo_flow, write_dbn

    day = tmp_path / "day.dbn"
    write_dbn(str(day), mbo_flow(400, 1))
    r = backtest(str(day), OnceAtBid("SYM0", 2_000), tickers=["SYM0"])
    assert r.orders.column("quantity").to_pylist() == [2_000]
    assert 50 * 10**9 < r.orders.column("price")[0].as_py() < 500 * 10**9
    assert r.orders.column("refused").to_pylist() == [None]
