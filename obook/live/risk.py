"""The pre-trade risk gate: every order a strategy returns passes it or is refused with a
reason (counted, never sent).

Checks: order size (shares), notional (shares x price, in the feed's price units), orders
per second (a sliding one-second window on the FEED's clock, so a replay of the same day
refuses the same orders, live or offline) and a price band around the best price of the
order's side (the best bid for a buy, the best ask for a sell; the other side when that one
is empty), in basis points. A market order (a backtest's ``market=True``) is priced at the
best it would take, the other side's (its own side's when that one is empty), and has no
band: it takes the other side's best whatever the spread.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .ouch import Order


@dataclass
class RiskGate:
    max_qty: int = 10_000
    max_notional: int = 10_000 * 1_000_000 * 10_000   # shares x price units
    max_orders_per_second: int = 1_000
    band_bps: int = 500
    refused: dict = field(default_factory=dict)
    _window: deque = field(default_factory=deque)

    def check(self, order: Order, bid_px, ask_px, feed_ns: int, market: bool = False) -> str | None:
        """None when ``order`` may go (it then counts in the rate window), else why not
        (``market``: a market order, ``order.price`` the price it would take)."""
        reason = self._why(order, bid_px, ask_px, feed_ns, market)
        if reason is None:
            self._window.append(feed_ns)
        else:
            self.refused[reason] = self.refused.get(reason, 0) + 1
        return reason

    def _why(self, order: Order, bid_px, ask_px, feed_ns: int, market: bool) -> str | None:
        w = self._window
        while w and w[0] <= feed_ns - 1_000_000_000:
            w.popleft()
        if len(w) >= self.max_orders_per_second:
            return "rate"
        if order.kind == "cancel":
            return None
        if order.qty <= 0 or order.qty > self.max_qty:
            return "size"
        if order.qty * order.price > self.max_notional:
            return "notional"
        best = bid_px if order.side == "B" else ask_px
        if best is None:
            best = ask_px if order.side == "B" else bid_px
        if best is None:
            return "no price"
        if not market and abs(order.price - best) * 10_000 > self.band_bps * best:
            return "band"
        return None
