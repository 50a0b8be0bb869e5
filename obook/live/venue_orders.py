"""The live orders of one venue session and the answer to each OUCH 5.0 order message.

Every well-formed message gets one answer, so that a gateway counting its answers never
waits for one: Accepted, Replaced, Canceled, or Rejected with its reason. A real venue
ignores some of what this one rejects (a UserRefNum that does not increase is taken for a
retransmission; a cancel of an order that is not live does nothing)."""

from __future__ import annotations

from collections import Counter

from . import ouch

class SessionOrders:
    """The session's live orders (UserRefNum -> side, symbol, shares) and the last
    UserRefNum it used. ``live_limit``: a shared one-element list, the live orders every
    session may still add (an Enter beyond it is rejected); ``rejected``: the venue's count
    of rejections, by reason."""

    def __init__(self, live_limit: list[int], rejected: Counter):
        self.live: dict[int, tuple[str, str, int]] = {}
        self.last_ref = 0
        self.live_limit = live_limit
        self.rejected = rejected

    def answer(self, msg: bytes, stamp: int, order_number: int) -> bytes:
        """The answer to ``msg`` (an ObookError when it is no OUCH order message)."""
        o = ouch.decode(msg)
        if o.kind == "cancel":
            return self._cancel(o, stamp)
        if o.ref <= self.last_ref:
            return self._reject(o.ref, "UserRefNum not above the last", stamp)
        if o.kind == "replace" and o.orig not in self.live:
            return self._reject(o.ref, "replace of an order not live", stamp)
        self.last_ref = o.ref          # a rejected UserRefNum is used too
        code = ouch.reject_reason(o)
        if code is not None:
            return self._reject(o.ref, ouch.REASON_WORDS[code], stamp, code)
        if o.kind == "enter":
            if self.live_limit[0] <= 0:
                return self._reject(o.ref, "too many live orders", stamp)
            self._add(o.ref, o.side, o.symbol, o.qty)
            return ouch.accepted(o, stamp, order_number)
        side, symbol, _ = self._remove(o.orig)
        if o.qty:
            self._add(o.ref, side, symbol, o.qty)
        return ouch.replaced(o, side, symbol, stamp, order_number)

    def close(self) -> None:
        """The session ended: its orders are canceled."""
        self.live_limit[0] += len(self.live)
        self.live.clear()

    def _cancel(self, o: ouch.Order, stamp: int) -> bytes:
        """Cancel: the order's shares cut to the Quantity given (0: all of them)."""
        mine = self.live.get(o.ref)
        if mine is None:
            return self._reject(o.ref, "cancel of an order not live", stamp)
        side, symbol, shares = mine
        if o.qty >= shares:
            return self._reject(o.ref, "cancel to no fewer shares", stamp)
        if o.qty:
            self.live[o.ref] = (side, symbol, o.qty)
        else:
            self._remove(o.ref)
        return ouch.canceled(o.ref, shares - o.qty, stamp)

    def _add(self, ref: int, side: str, symbol: str, shares: int) -> None:
        self.live[ref] = (side, symbol, shares)
        self.live_limit[0] -= 1

    def _remove(self, ref: int) -> tuple[str, str, int]:
        self.live_limit[0] += 1
        return self.live.pop(ref)

    def _reject(self, ref: int, why: str, stamp: int, code: int = ouch.OTHER) -> bytes:
        self.rejected[why] += 1
        return ouch.rejected(ref, code, stamp)
