"""Instructions (obook.feeds.orders) -> the kernel's instruction rows, vectorized.

Checks that need no book state become a reason in the row (the kernel turns it into a
``rejected`` event in order); order ids become dense keys (one per instrument and id,
so the order index is a flat array); prices become level rows of each book's band (its
lowest to highest price in the input, one row a tick).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels.match_layout import (MSG_DTYPE, MARKET_BIT, OP_MODIFY, OP_NEW, R_BAD_QUANTITY,
                                     R_NO_PRICE, R_OFF_TICK, R_UNKNOWN_INSTRUMENT, REASON_SHIFT,
                                     SIDE_SHIFT, T_SEQ, T_TIME, TIF_SHIFT)
from ..errors import ObookError

#: at most this many price ticks over all books' bands (32 bytes each)
MAX_LEVELS = 1 << 26


@dataclass
class Instructions:
    """The kernels' instructions (obook._kernels.match_layout): 24-byte rows the kernel
    streams, and the owners and (seq, time) it reads only when it needs them."""
    rows: np.ndarray         # (n,) MSG_DTYPE
    owner: np.ndarray        # (n,) int64
    clock: np.ndarray        # (n, 2) int64: T_SEQ, T_TIME

    @classmethod
    def zeros(cls, n: int) -> Instructions:
        return cls(np.zeros(n, MSG_DTYPE), np.zeros(n, np.int64), np.zeros((n, 2), np.int64))

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, sel) -> Instructions:
        return Instructions(self.rows[sel], self.owner[sel], self.clock[sel])


@dataclass
class Prepared:
    msg: Instructions
    instruments: list        # book -> name
    lo: np.ndarray           # book -> first level row
    hi: np.ndarray           # book -> last level row
    lv_price: np.ndarray     # level row -> price
    key_ids: np.ndarray      # key -> order id
    end_time: int
    n_rows: int
    given_price: np.ndarray  # row -> the price a new limit instruction carried (0: none)
    given: np.ndarray        # row -> the row is a new limit instruction with a price


def _assign_ids(o) -> np.ndarray:
    """Order ids; a new order without one gets the next id of its instrument (after the
    largest id the input's new orders give it), in row order: 1, 2, 3 ... when none has one,
    so that modifies and cancels can name them."""
    ids = o.order_id.copy()
    new = o.action == OP_NEW
    missing = np.flatnonzero(new & ~o.has_id)
    if len(missing):
        nb = len(o.instruments)
        top = np.zeros(nb, np.int64)
        given = o.has_id & new
        np.maximum.at(top, o.book[given], o.order_id[given])
        books = o.book[missing]
        order = np.argsort(books, kind="stable")
        sb = books[order]
        starts = np.r_[0, np.flatnonzero(np.diff(sb)) + 1]
        run = np.arange(len(sb)) - np.repeat(starts, np.diff(np.r_[starts, len(sb)]))
        over = top[sb] > np.iinfo(np.int64).max - 1 - run
        if over.any():
            row = int(missing[order][np.flatnonzero(over)[0]])
            raise ObookError(f"{o.name}: row {row + 1}: no order id left to assign after "
                             f"{int(top[sb][np.flatnonzero(over)[0]])}; give the order an order_id")
        ids[missing[order]] = top[sb] + 1 + run
    return ids


def _keys(book: np.ndarray, ids: np.ndarray):
    """Dense keys of the (book, id) pairs, and each key's id."""
    if len(ids) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    nb = int(book.max()) + 1
    lo = np.full(nb, np.iinfo(np.int64).max)
    hi = np.full(nb, np.iinfo(np.int64).min)
    np.minimum.at(lo, book, ids)
    np.maximum.at(hi, book, ids)
    seen = lo <= hi
    wide = np.where(seen, hi.astype(np.float64) - lo.astype(np.float64) + 1, 0)   # no int64 overflow
    span = np.where(seen, hi - lo + 1, 0) if wide.sum() <= 2 * len(ids) + 1024 else None
    if span is not None:
        # dense ids (the usual 1, 2, 3 ... per instrument): key = the id's place in its
        # instrument's id range, no sort; unused keys are never touched
        base = np.r_[0, np.cumsum(span)[:-1]]
        key_ids = np.arange(int(span.sum()), dtype=np.int64) - np.repeat(base - np.where(seen, lo, 0), span)
        return base[book] + ids - lo[book], key_ids
    order = np.lexsort((ids, book))
    sb, si = book[order], ids[order]
    new = np.r_[True, (np.diff(sb) != 0) | (np.diff(si) != 0)]
    keys = np.empty(len(ids), np.int64)
    keys[order] = np.cumsum(new) - 1
    return keys, si[new]


def _reasons(o, tick: int, known: np.ndarray) -> np.ndarray:
    reason = np.zeros(o.n, np.int64)
    new, mod = o.action == OP_NEW, o.action == OP_MODIFY
    limit = new & ~o.market
    off = o.has_price & (new | mod) & ~(new & o.market) & (o.price % tick != 0)
    # later assignments win: the first applicable reason is assigned last
    reason[off] = R_OFF_TICK
    reason[limit & ~o.has_price] = R_NO_PRICE
    reason[(new | (mod & o.has_quantity)) & (o.quantity <= 0)] = R_BAD_QUANTITY
    reason[~known[o.book]] = R_UNKNOWN_INSTRUMENT
    return reason


def prepare(o, tick: int = 1, instruments=None) -> Prepared:
    if tick < 1:
        raise ObookError(f"tick must be a positive integer, not {tick}")
    nb = len(o.instruments)
    # names as the input's are read: without surrounding white space
    known = np.ones(nb, bool) if instruments is None else \
        np.isin(np.array(o.instruments, dtype=object), np.array([str(i).strip() for i in instruments], dtype=object))
    reason = _reasons(o, tick, known)
    new, mod = o.action == OP_NEW, o.action == OP_MODIFY
    priced = (reason == 0) & o.has_price & (new | mod) & ~(new & o.market)
    ticks = o.price // tick
    lo_t = np.zeros(nb, np.int64)
    hi_t = np.zeros(nb, np.int64)
    if priced.any():
        lo_t[:] = np.iinfo(np.int64).max
        hi_t[:] = np.iinfo(np.int64).min
        np.minimum.at(lo_t, o.book[priced], ticks[priced])
        np.maximum.at(hi_t, o.book[priced], ticks[priced])
        empty = lo_t > hi_t
        lo_t[empty] = hi_t[empty] = 0
    wide = hi_t.astype(np.float64) - lo_t.astype(np.float64) + 1          # no int64 overflow
    if wide.sum() > MAX_LEVELS:
        b = int(np.argmax(wide))
        raise ObookError(f"{o.name}: prices of instrument {o.instruments[b]!r} span {wide[b]:,.0f} ticks; at most "
                         f"{MAX_LEVELS:,} ticks over all instruments (is the tick right?)")
    width = hi_t - lo_t + 1
    base = (np.cumsum(width) - width).astype(np.int64)      # (no books: none)
    lv_price = (np.arange(int(width.sum()), dtype=np.int64) - np.repeat(base - lo_t, width)) * tick
    row = np.full(o.n, -1, np.int64)
    row[priced] = base[o.book[priced]] + ticks[priced] - lo_t[o.book[priced]]
    mkt = new & o.market & (reason == 0)
    row[mkt] = np.where(o.side[mkt] == 0, base[o.book[mkt]] + width[o.book[mkt]] - 1, base[o.book[mkt]])
    sized = (reason == 0) & (new | (mod & o.has_quantity)) & (o.quantity > 0)
    if sized.any():          # a level's total (and a fill-or-kill's running sum) stays within 64 bits
        total = np.zeros(nb, np.float64)
        np.add.at(total, o.book[sized], o.quantity[sized].astype(np.float64))
        if total.max() > 2.0 ** 62:
            b = int(np.argmax(total))
            raise ObookError(f"{o.name}: the quantities of instrument {o.instruments[b]!r} sum to "
                             f"{total[b]:.3e}; at most 2**62 an instrument (a level's total must fit 64 bits)")
    ids = _assign_ids(o)
    keys, key_ids = _keys(o.book, ids)
    if len(key_ids) >= 2**31:            # the rows' keys (and the FIFO links) are int32
        raise ObookError(f"{o.name}: {len(key_ids):,} order ids in one run; at most 2,147,483,647")
    msg = Instructions.zeros(o.n)
    msg.clock[:, T_SEQ] = np.arange(1, o.n + 1)
    msg.clock[:, T_TIME] = o.time
    r = msg.rows
    r["book"] = o.book
    r["key"] = keys
    r["op"] = (o.action.astype(np.int64) | (np.maximum(o.side, 0).astype(np.int64) << SIDE_SHIFT)
               | (o.tif.astype(np.int64) << TIF_SHIFT) | np.where(o.market, MARKET_BIT, 0)
               | (reason << REASON_SHIFT))
    r["price"] = row
    r["qty"] = np.where(mod & ~o.has_quantity, -1, o.quantity)
    msg.owner[:] = o.owner
    # a rejected new order's event shows the price it was sent with, also one that has no
    # level row (off the tick, an unknown instrument, a bad quantity)
    given = new & ~o.market & o.has_price
    return Prepared(msg, list(o.instruments), base, base + width - 1, lv_price, key_ids,
                    int(o.time.max()) if o.n else 0, o.n, np.where(given, o.price, 0).astype(np.int64), given)
