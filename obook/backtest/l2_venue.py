"""The venue side of an L2 backtest: the visible levels of each book, the strategy's orders
in them with the probabilistic queue model (obook._kernels.l2_queue), and the rows the
tables are built from (the same rows as the order-level backtest's: obook.backtest.tables)."""

from __future__ import annotations

import numpy as np

from .._kernels.backtest_layout import M_WIDTH, X_ORIG, X_POST, X_REF, X_REFUSED, X_SEND, X_WIDTH
from .._kernels.l2_queue import (FILL_KEY, FILL_PRICE, FILL_QTY, FILL_WIDTH, Q_LIVE, Q_PRICE, Q_REM, Q_SIDE, Q_TB,
                                 Q_WIDTH, l2_crossed, l2_depth, l2_trade)
from .._kernels.simulate_layout import (E_AHEAD, E_KEY, E_KIND, E_PRICE, E_QTY, E_REASON, E_REM, E_ROW, E_SIDE,
                                        E_WIDTH, F_KEY, F_PRICE, F_PRIO, F_QTY, F_SIDE, F_TAKER, F_WIDTH, I_ACT,
                                        I_ARR, I_HAS_PRICE, I_KEY, I_MARKET, I_PRICE,
                                        I_QTY, I_ROW, I_SIDE, I_TB, I_TIF, K_ACCEPTED, K_CANCELLED, K_COUNT,
                                        K_EXPIRED, K_FILLED, K_MODIFIED, K_PARTIAL, K_REJECTED, K_RESTED, K_SEQ,
                                        K_TB, K_TIME, NONE, OP_CANCEL, OP_NEW, R_DUPLICATE_ID, R_FOK, R_NOT_LIVE,
                                        R_REQUEST, R_SESSION_END, R_UNKNOWN_ID, R_UNFILLED, TIF_FOK, TIF_IOC)
from .._kernels.backtest_layout import M_ASK, M_BID, M_SEQ, M_TB, M_TIME, R_POST_ONLY
from .orders import named_ref

END = 1 << 62


class L2Venue:
    """Own orders (keys) in the L2 books; every event of theirs becomes an event row (and a
    fill row), handed to ``respond(key, kind, reason, price, qty, rem, fill_price, taker, row)``
    for the strategy (row: the instruction's, -1 for a fill or an expiry)."""

    def __init__(self, n_books: int, model: int, power: float, respond):
        self.model, self.power, self.respond = model, float(power), respond
        self.OQ = np.zeros((64, Q_WIDTH), np.int64)
        self.AH = np.zeros(64, np.float64)
        self.FILLS = np.zeros((64, FILL_WIDTH), np.int64)
        self.n = 0
        self.taken = set()                      # keys of orders accepted (live or done): their ids are in use
        self.ref_of = {}                        # key -> the ref the venue knows the order by (a replace renames it)
        self.books = [None] * n_books           # (bid_px, bid_sz, ask_px, ask_sz) rows of the levels
        self.traded = {}                        # (tb, side, price) -> shares traded since the level's last change
        self.used = {}                          # (tb, side, price) -> visible shares own orders took
        self.ins, self.fills, self.events, self.marks = [], [], [], []
        self.count = 0
        self.seq, self.time = END, 0

    # ------------------------------------------------------------ the books

    def level(self, tb, side, price, book=None):
        """(visible shares at price on side of book tb, or of ``book``; whether the price is
        inside the visible levels: a price past the last of full levels is unknown)."""
        book = self.books[tb] if book is None else book
        if book is None:
            return 0, False
        px, sz = (book[0], book[1]) if side == 0 else (book[2], book[3])
        hit = np.flatnonzero(px == price)
        if hit.size:
            return int(sz[hit[0]]), True
        full = px[-1] != NONE
        worse = price < px[-1] if side == 0 else price > px[-1]
        return 0, not (full and worse)

    def best(self, tb):
        book = self.books[tb]
        if book is None:
            return NONE, NONE
        return int(book[0][0]), int(book[2][0])

    def mark(self, tb, t):
        bid, ask = self.best(tb)
        m = np.zeros(M_WIDTH, np.int64)
        m[M_TIME], m[M_TB], m[M_BID], m[M_ASK], m[M_SEQ] = t, tb, bid, ask, self.count
        self.marks.append(m)

    # ------------------------------------------------------------ rows

    def event(self, key, kind, reason, price, qty, rem, ahead=-1, row=-1, fill_price=0, taker=0, tb=None,
              side=None):
        """An event row of order key (``tb``, ``side``: the book and side when not the order's)."""
        e = np.zeros(E_WIDTH, np.int64)
        tb = self.OQ[key, Q_TB] if tb is None else tb
        side = self.OQ[key, Q_SIDE] if side is None else side
        e[K_SEQ], e[K_TIME], e[K_TB], e[K_COUNT] = self.seq, self.time, tb, self.count
        e[E_KEY], e[E_KIND], e[E_REASON], e[E_SIDE] = key, kind, reason, side
        e[E_PRICE], e[E_QTY], e[E_REM], e[E_AHEAD], e[E_ROW] = price, qty, rem, ahead, row
        self.count += 1
        self.events.append(e)
        self.respond(key, kind, reason, price, qty, rem, fill_price, taker, row)

    def fill(self, key, price, qty, taker):
        f = np.zeros(F_WIDTH, np.int64)
        f[K_SEQ], f[K_TIME], f[K_TB], f[K_COUNT] = self.seq, self.time, self.OQ[key, Q_TB], self.count
        f[F_KEY], f[F_PRICE], f[F_QTY] = key, price, qty
        f[F_TAKER], f[F_PRIO], f[F_SIDE] = taker, 0, self.OQ[key, Q_SIDE]
        self.count += 1
        self.fills.append(f)
        rem = int(self.OQ[key, Q_REM])
        ahead = int(round(self.AH[key])) if rem and self.OQ[key, Q_LIVE] else -1
        self.event(key, K_FILLED if rem == 0 else K_PARTIAL, 0, int(self.OQ[key, Q_PRICE]), qty, rem, ahead,
                   fill_price=price, taker=taker)

    def _fills(self, nf, tb, t):
        for j in range(nf):
            self.fill(int(self.FILLS[j, FILL_KEY]), int(self.FILLS[j, FILL_PRICE]), int(self.FILLS[j, FILL_QTY]), 0)
        if nf:
            self.mark(tb, t)

    # ------------------------------------------------------------ the feed

    def trade(self, t, seq, tb, side, price, size):
        """A trade row: the resting side is the aggressor's opposite (unknown: the side the
        price reached)."""
        self.seq, self.time = seq, t
        if side < 0:
            bid, ask = self.best(tb)
            side = 1 if bid != NONE and price <= bid else 0 if ask != NONE and price >= ask else -1
            if side < 0:
                return
        resting = 1 - side
        key = (tb, resting, price)
        self.traded[key] = self.traded.get(key, 0) + size
        self._fills(l2_trade(self.OQ, self.AH, self.n, tb, resting, price, size, self.FILLS), tb, t)

    def book(self, t, seq, tb, levels):
        """A book row: the levels after a change. Own orders' places follow their level."""
        self.seq, self.time = seq, t
        old = self.books[tb]
        self.books[tb] = levels
        OQ = self.OQ[:self.n]
        mine = OQ[(OQ[:, Q_LIVE] != 0) & (OQ[:, Q_TB] == tb)]
        for side, price in {(int(r[Q_SIDE]), int(r[Q_PRICE])) for r in mine}:
            new, known = self.level(tb, side, price)
            prev, was = self.level(tb, side, price, old) if old is not None else (0, False)
            if not known:
                continue
            traded = self.traded.get((tb, side, price), 0)
            if not was:
                prev, traded = new, 0
            l2_depth(self.OQ, self.AH, self.n, tb, side, price, prev, new, traded, self.model, self.power)
        for key in [k for k in self.traded if k[0] == tb]:
            del self.traded[key]
        for key in [k for k in self.used if k[0] == tb]:
            del self.used[key]
        bid, ask = self.best(tb)
        nf = l2_crossed(self.OQ, self.n, tb, bid, ask, int(bid != NONE), int(ask != NONE), self.FILLS)
        self._fills(nf, tb, t)

    # ------------------------------------------------------------ own instructions

    def key(self) -> int:
        if self.n == self.OQ.shape[0]:
            self.OQ = np.concatenate([self.OQ, np.zeros_like(self.OQ)])
            self.AH = np.concatenate([self.AH, np.zeros_like(self.AH)])
            self.FILLS = np.zeros((self.OQ.shape[0], FILL_WIDTH), np.int64)
        self.n += 1
        return self.n - 1

    def instruction(self, t, tb, key, act, side, qty, price, tif, market, post, ref, orig, sent, refused):
        """An instruction's row; refused ones (risk gate) go no further. Returns the row."""
        r = np.zeros(X_WIDTH, np.int64)
        r[I_ROW], r[I_TB], r[I_KEY], r[I_ACT], r[I_SIDE] = len(self.ins) + 1, tb, key, act, side
        r[I_MARKET], r[I_TIF], r[I_PRICE], r[I_QTY] = market, tif, -1 if market else price, qty
        r[I_HAS_PRICE] = 0 if market else 1
        r[I_ARR] = -1 if refused else t
        r[X_POST], r[X_SEND], r[X_REF], r[X_ORIG], r[X_REFUSED] = post, sent, ref, orig, refused
        self.ins.append(r)
        return r

    def arrive(self, r, t):
        """Instruction row r reaches the venue at t."""
        self.seq, self.time = END, t
        k, act, row = int(r[I_KEY]), int(r[I_ACT]), int(r[I_ROW])
        OQ = self.OQ
        if act == OP_NEW and k in self.taken:     # the id of an order accepted before: rejected, the order kept
            self.event(k, K_REJECTED, R_DUPLICATE_ID, int(r[I_PRICE]), int(r[I_QTY]), 0, row=row, tb=int(r[I_TB]),
                       side=int(r[I_SIDE]))
            return
        if act == OP_NEW:
            self.ref_of[k] = int(r[X_REF])
            OQ[k] = (r[I_TB], r[I_SIDE], r[I_PRICE], r[I_QTY], 0)
            self.enter(k, bool(r[I_MARKET]), int(r[I_TIF]), bool(r[X_POST]), row, new=True)
            return
        # not live, or under another ref (a replace accepted before renamed it): rejected; side -1,
        # the instruction's; the quantity a replace's new one, a cancel none
        if OQ[k, Q_LIVE] == 0 or named_ref(act, int(r[X_REF]), int(r[X_ORIG])) != self.ref_of.get(k):
            qty = 0 if act == OP_CANCEL else max(int(r[I_QTY]), 0)
            self.event(k, K_REJECTED, R_NOT_LIVE if k in self.taken else R_UNKNOWN_ID, int(r[I_PRICE]), qty, 0,
                       row=row, tb=int(r[I_TB]), side=-1)
            return
        price, rem = int(OQ[k, Q_PRICE]), int(OQ[k, Q_REM])
        if act == OP_CANCEL:
            OQ[k, Q_LIVE], OQ[k, Q_REM] = 0, 0
            self.event(k, K_CANCELLED, R_REQUEST, price, rem, 0, row=row)
            return
        self.ref_of[k] = int(r[X_REF])                 # a replace: accepted, its ref names the order
        new_price = int(r[I_PRICE]) if r[I_PRICE] >= 0 else price
        qty = int(r[I_QTY]) if r[I_QTY] >= 0 else rem
        if new_price == price and qty <= rem:           # a reduction keeps the order's place
            OQ[k, Q_REM] = qty
            OQ[k, Q_LIVE] = int(qty > 0)
            self.event(k, K_MODIFIED, 0, price, qty, qty, int(round(self.AH[k])), row=row)
            return
        OQ[k, Q_PRICE], OQ[k, Q_REM], OQ[k, Q_LIVE] = new_price, qty, 0
        self.event(k, K_MODIFIED, 0, new_price, qty, qty, row=row)
        self.enter(k, False, -1, False, row)

    def enter(self, k, market, tif, post, row, new=False):
        """Own order k takes the visible shares it crosses (best level first; consumed until
        the level changes), then rests at the back of its level or drops the rest; a ``new``
        one is accepted first unless it is turned away whole (post-only, FOK: its id stays free)."""
        OQ = self.OQ
        tb, side, price = int(OQ[k, Q_TB]), int(OQ[k, Q_SIDE]), int(OQ[k, Q_PRICE])
        book = self.books[tb]
        takes = []
        if book is not None:
            px, sz = (book[2], book[3]) if side == 0 else (book[0], book[1])
            want = int(OQ[k, Q_REM])
            for lp, lq in zip(px.tolist(), sz.tolist()):
                if lp == NONE or want == 0 or (not market and (lp > price if side == 0 else lp < price)):
                    break
                a = lq - self.used.get((tb, 1 - side, lp), 0)
                if a > 0:
                    takes.append((lp, min(a, want)))
                    want -= takes[-1][1]
        got = sum(q for _, q in takes)
        if takes and post:      # turned away whole: the event's quantity is the order's, as for a FOK
            rem, OQ[k, Q_REM] = int(OQ[k, Q_REM]), 0
            self.event(k, K_REJECTED, R_POST_ONLY, price, rem, 0, row=row)
            return
        if tif == TIF_FOK and got < OQ[k, Q_REM]:
            rem, OQ[k, Q_REM] = int(OQ[k, Q_REM]), 0
            self.event(k, K_REJECTED, R_FOK, price, rem, 0, row=row)
            return
        if new:
            self.taken.add(k)
            self.event(k, K_ACCEPTED, 0, price, int(OQ[k, Q_REM]), int(OQ[k, Q_REM]), row=row)
        for lp, q in takes:
            self.used[(tb, 1 - side, lp)] = self.used.get((tb, 1 - side, lp), 0) + q
            OQ[k, Q_REM] -= q
            self.fill(k, lp, q, 1)
        if takes:
            self.mark(tb, self.time)
        rem = int(OQ[k, Q_REM])
        if rem == 0:
            return
        if market or tif in (TIF_IOC, TIF_FOK):
            OQ[k, Q_REM] = 0
            self.event(k, K_CANCELLED, R_UNFILLED, price, rem, 0, row=row)
            return
        visible, _ = self.level(tb, side, price)
        self.AH[k] = float(max(visible - self.used.get((tb, side, price), 0), 0))
        OQ[k, Q_LIVE] = 1
        self.event(k, K_RESTED, 0, price, rem, rem, int(self.AH[k]), row=row)

    def close(self, t):
        """The session's end: open orders expire."""
        self.seq, self.time = END, t
        for k in range(self.n):
            if self.OQ[k, Q_LIVE]:
                rem = int(self.OQ[k, Q_REM])
                self.OQ[k, Q_LIVE], self.OQ[k, Q_REM] = 0, 0
                self.event(k, K_EXPIRED, R_SESSION_END, int(self.OQ[k, Q_PRICE]), rem, 0)

    def rows(self, names, calls) -> dict:
        def cat(rows, width):
            return np.array(rows, np.int64).reshape(-1, width)
        return {"orders": cat(self.ins, X_WIDTH), "fills": cat(self.fills, F_WIDTH),
                "events": cat(self.events, E_WIDTH), "marks": cat(self.marks, M_WIDTH), "names": list(names),
                "calls": calls}
