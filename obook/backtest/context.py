"""The strategy's view in a backtest: the book (top and depth) as the feed latency lets it
see it, its open orders, its position and the time (:class:`Context`)."""

from __future__ import annotations

from .._kernels.backtest_layout import LO_FILLED, LO_OPEN, LO_PENDING, LO_PRICE, LO_REF, LO_REM, LO_SIDE, LO_STATE, LO_TB
from .._kernels.simulate_layout import L_COUNT, L_KEY, L_QTY, NONE
from ..errors import ObookError
from .orders import OpenOrder


class Context:
    """``time`` (the strategy's clock, feed time units), ``instrument`` (of the call),
    ``top(instrument)``, ``depth(levels, instrument)``, ``orders`` (open orders by ref),
    ``position(instrument)``."""

    def __init__(self, worker):
        self._w = worker
        self.time = 0
        self.instrument = None

    def _tb(self, instrument):
        return book_of(self._w.tb_of, self.instrument if instrument is None else instrument)

    def _levels(self):
        w = self._w
        return (w.L, w.nl) if w.zero_feed else (w.Lv, w.nlv)

    def top(self, instrument=None):
        """(bid_px, bid_qty, ask_px, ask_qty); None for an empty side."""
        bids, asks = self.depth(1, instrument)
        bp, bq = bids[0][:2] if bids else (None, None)
        ap, aq = asks[0][:2] if asks else (None, None)
        return bp, bq, ap, aq

    def depth(self, levels: int = 10, instrument=None):
        """([(price, shares, orders)] bids best first, [...] asks best first) as seen now."""
        L, nl = self._levels()
        tb = self._tb(instrument)
        out = []
        for side in (0, 1):
            row = 2 * tb + side
            n = int(nl[row])
            lv = []
            for j in range(n - 1, max(n - 1 - levels, -1), -1):
                k = int(L[row, j, L_KEY])
                lv.append((k if side == 0 else -k, int(L[row, j, L_QTY]), int(L[row, j, L_COUNT])))
            out.append(lv)
        return out[0], out[1]

    @property
    def orders(self) -> dict:
        """Open orders (sent and not finished, as the responses so far tell) by ref."""
        w = self._w
        LO = w.LO
        got = {}
        for ref, k in list(w.open.items()):
            state = LO[k, LO_STATE]
            if (state != LO_OPEN and state != LO_PENDING) or int(LO[k, LO_REF]) != ref:
                del w.open[ref]         # finished, or replaced under another ref
                continue
            got[ref] = OpenOrder(ref, w.names[int(LO[k, LO_TB])], "BS"[int(LO[k, LO_SIDE])],
                                 int(LO[k, LO_PRICE]), int(LO[k, LO_REM]), int(LO[k, LO_FILLED]),
                                 state == LO_PENDING)
        return got

    def position(self, instrument=None) -> int:
        """Shares held, as the fills reported so far tell."""
        return int(self._w.PL[self._tb(instrument)])


def book_of(tb_of: dict, instrument) -> int:
    """The book of ``instrument`` (one the strategy trades), else an error naming it."""
    try:
        return tb_of[instrument]
    except (KeyError, TypeError):
        known = ", ".join(map(str, list(tb_of)[:20])) + (" ..." if len(tb_of) > 20 else "")
        raise ObookError(f"instrument {instrument!r}: not one the strategy sees ({known})") from None


def none_if(v):
    return None if v == NONE else int(v)
