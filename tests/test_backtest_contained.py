"""Bad strategies are contained: one that raises stops the backtest with its traceback and
the tables so far; one that floods orders meets the live risk gate."""

from __future__ import annotations

import pytest

from obook.backtest import StrategyError, backtest
from obook.backtest.orders import Order
from obook.live.risk import RiskGate

DAY = "Time,Ticker,Order,T,Shares,Price\n" + "".join(
    f"{t},AAA,o{t},{'B' if t % 2 else 'S'},100,{990 - t % 7 if t % 2 else 1000 + t % 5}\n" for t in range(1, 200))


class Boom:
    def __init__(self):
        self.calls = 0

    def on_book(self, ctx):
        self.calls += 1
        bid, _, ask, _ = ctx.top()
        if self.calls == 25:
            raise ValueError("the strategy broke")
        if bid is not None and self.calls % 10 == 0:
            return [Order("enter", "AAA", "B", 10, bid, ref=self.calls, tif="GTC")]
        return None


def test_backtest_strategy_raises_keeps_tables_so_far(tmp_path):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError) as e:
        backtest(str(feed), Boom(), format="csv")
    err = e.value
    assert "ValueError: the strategy broke" in str(err) and "raise ValueError" in err.traceback
    assert err.partial is not None
    # the two orders sent before the failure, and their events so far
    assert err.partial.orders.column("ref").to_pylist() == [10, 20]
    assert err.partial.events.num_rows >= 4


class Flood:
    def __init__(self):
        self.ref = 0

    def __call__(self, top):                   # a live strategy: 20 orders on every book change
        if top.bid_px is None:
            return None
        out = []
        for _ in range(20):
            self.ref += 1
            out.append(Order("enter", "AAA", "B", 1, top.bid_px, ref=self.ref))
        return out


def test_backtest_flooding_strategy_meets_the_risk_gate(tmp_path):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    gate = RiskGate(max_orders_per_second=50)
    r = backtest(str(feed), Flood(), format="csv", risk=gate)
    refused = r.orders.column("refused").to_pylist()
    # 36 book changes x 20 orders in 0.2 s (ms times): 50 pass the one-second window, the rest are refused
    assert refused.count(None) == 50 and refused.count("rate") == len(refused) - 50 == 36 * 20 - 50
    assert gate.refused == {"rate": len(refused) - 50}
    assert r.summary["refused"] == len(refused) - 50
    # refused orders never reach the venue
    assert sorted(set(r.events.column("row").to_pylist()) - {None}) == list(range(1, 51))
