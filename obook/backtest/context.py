"""The strategy's view in a backtest: the book (top and depth) as the feed latency lets it
see it, its open orders, its position and the time (:class:`Context`)."""

from __future__ import annotations

from .._kernels.backtest_layout import LO_FILLED, LO_OPEN, LO_PENDING, LO_PRICE, LO_REF, LO_REM, LO_SIDE, LO_STATE, LO_TB
import numpy as np

from .._kernels.simulate_layout import NONE
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

    def _book(self):
        w = self._w
        return w.shadow if w.zero_feed else w.view

    def top(self, instrument=None):
        """(bid_px, bid_qty, ask_px, ask_qty); None for an empty side."""
        bids, asks = self.depth(1, instrument)
        bp, bq = bids[0][:2] if bids else (None, None)
        ap, aq = asks[0][:2] if asks else (None, None)
        return bp, bq, ap, aq

    def depth(self, levels: int = 10, instrument=None):
        """([(price, shares, orders)] bids best first, [...] asks best first) as seen now."""
        book = self._book()
        tb = self._tb(instrument)
        levels = max(int(levels), 0)
        out = []
        for side in (0, 1):
            out.append(side_depth(book, 2 * tb + side, levels))
        return out[0], out[1]

    @property
    def orders(self) -> dict:
        """Open orders (sent and not finished, as the responses so far tell) by ref."""
        w = self._w
        LO = w.LO
        got = {}
        for ref, k in list(w.open.items()):
            state = LO[k, LO_STATE]
            if state != LO_OPEN and state != LO_PENDING:
                del w.open[ref]         # finished
                continue
            if int(LO[k, LO_REF]) != ref:
                continue                # a replace's ref before the venue accepts it, or the old one after
            got[ref] = OpenOrder(ref, w.names[int(LO[k, LO_TB])], "BS"[int(LO[k, LO_SIDE])],
                                 int(LO[k, LO_PRICE]), int(LO[k, LO_REM]), int(LO[k, LO_FILLED]),
                                 bool(state == LO_PENDING))
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


def side_depth(book, sd: int, levels: int) -> list:
    """[(price, shares, orders)] of the best ``levels`` levels of side sd of a shadow book
    (obook.engine.books.BookState), best first: read from its near segment in place, the
    rare walk past it by the kernels (obook._kernels.simulate.side_levels)."""
    start, n, far = (int(v) for v in book.sides[sd, [0, 1, 3]])
    if levels > n and far:
        from .._kernels.simulate import side_levels

        rows = np.zeros((levels, 3), np.int64)
        rows = rows[:side_levels(book.books(), sd, rows)]
    else:
        k = min(levels, n)
        rows = book.lv[book.pool[start + n - k:start + n, 1][::-1], :3]
    return [(int(p), int(q), int(c)) for p, q, c in rows]


def none_if(v):
    return None if v == NONE else int(v)
