"""obook.backtest on a Shenzhen day with call auctions: the venue is obook.simulate's, so an
order sent in the opening call auction rests until the uncross and fills there at the
auction price, and what is left through the book takes it when continuous trading starts."""

from __future__ import annotations

import pytest

from obook.backtest import backtest
from obook.backtest.orders import Order
from test_simulate_auctions import CONTINUOUS_NS, OPENING, _auction_day


class ThroughTheAsk:
    """Buys ``qty`` at ``price`` (through the ask) at the first book of ``ticker`` before ``before``
    with both sides there and uncrossed."""

    def __init__(self, ticker, price, before, post_only=False, qty=1):
        self.ticker, self.price, self.before, self.done = ticker, price, before, False
        self.post_only, self.qty = post_only, qty

    def on_book(self, ctx):
        bid, _, ask, _ = ctx.top()
        if self.done or ctx.instrument != self.ticker or ctx.time >= self.before or bid is None or ask is None \
                or bid >= ask:
            return None
        self.done = True
        return [Order("enter", self.ticker, "B", self.qty, max(ask, self.price), ref=1, tif="DAY",
                      post_only=self.post_only)]


@pytest.mark.parametrize("post_only", [False, True])
def test_backtest_szse_order_in_opening_auction_fills_in_the_uncross_at_its_price(tmp_path, post_only):
    """A post-only order is not turned away either: in the auction it takes nothing."""
    feed, ticker, quote, trade = _auction_day(tmp_path, "szse")
    s = ThroughTheAsk(ticker, max(quote["ask_px"], trade["price"]) + 100, OPENING, post_only)
    r = backtest(feed, s, format="szse")
    assert s.done
    assert [e["event"] for e in r.events.to_pylist()][:2] == ["accepted", "rested"]
    assert [(f["time"], f["price"], f["quantity"], f["liquidity"]) for f in r.fills.to_pylist()] == [
        (trade["time"], trade["price"], 1, "maker")]


def test_backtest_szse_order_through_the_book_after_the_uncross_takes_it_at_continuous_start_as_simulate(tmp_path):
    """What the uncross left of a bid far through the ask takes the asks when continuous
    trading starts, a taker, with the fills obook.simulate gives the same order."""
    import pyarrow as pa

    from obook.live.risk import RiskGate
    from obook.simulation import simulate

    feed, ticker, quote, trade = _auction_day(tmp_path, "szse")
    s = ThroughTheAsk(ticker, max(quote["ask_px"], trade["price"]) * 2, OPENING, qty=10**6)
    r = backtest(feed, s, format="szse", risk=RiskGate(max_qty=10**6, band_bps=10**6, max_notional=10**18))
    o = r.orders.to_pylist()[0]
    sim = simulate(feed, pa.table({"time": [o["arrival"]], "instrument": [ticker], "order_id": [1], "action": ["new"],
                                   "side": ["buy"], "tif": ["DAY"], "price": [o["price"]], "quantity": [o["quantity"]]}),
                   format="szse", feed_tables=())
    cols = ("time", "price", "quantity", "liquidity")
    fills = [tuple(f[c] for c in cols) for f in r.fills.to_pylist()]
    assert fills == [tuple(f[c] for c in cols) for f in sim.fills.to_pylist()]
    assert fills[0][3] == "maker" and {f[3] for f in fills if f[0] == CONTINUOUS_NS[0]} == {"taker"}
