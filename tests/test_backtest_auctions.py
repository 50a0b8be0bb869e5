"""obook.backtest on a Shenzhen day with call auctions: the venue is obook.simulate's, so an
order sent in the opening call auction rests until the uncross and fills there at the
auction price."""

from __future__ import annotations

import pytest

from obook.backtest import backtest
from obook.backtest.orders import Order
from test_simulate_auctions import OPENING, _auction_day


class ThroughTheAsk:
    """Buys 1 at ``price`` (through the ask) at the first book of ``ticker`` before ``before``
    with both sides there and uncrossed."""

    def __init__(self, ticker, price, before, post_only=False):
        self.ticker, self.price, self.before, self.done = ticker, price, before, False
        self.post_only = post_only

    def on_book(self, ctx):
        bid, _, ask, _ = ctx.top()
        if self.done or ctx.instrument != self.ticker or ctx.time >= self.before or bid is None or ask is None \
                or bid >= ask:
            return None
        self.done = True
        return [Order("enter", self.ticker, "B", 1, max(ask, self.price), ref=1, tif="DAY", post_only=self.post_only)]


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
