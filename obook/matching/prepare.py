"""Instructions (obook.feeds.orders) -> the kernel's instruction rows, vectorized.

Checks that need no book state become a reason in the row (the kernel turns it into a
``rejected`` event in order); order ids become dense keys (one per instrument and id,
so the order index is a flat array); prices become level rows of each book's band (its
lowest to highest price in the input, one row a tick).

``plan`` passes over the input once for what the books need of all of it (the bands, the
ids to give, the key layout); the instructions are then made a chunk at a time as the book
gets to them (``Prepared.chunks``; a worker's books' by ``Prepared.shard``), the same rows
for any chunk size.
"""

from __future__ import annotations

import dataclasses
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


#: rows of the input prepared at a time, as the kernels ask for them (tests make it tiny)
CHUNK = 1 << 17
#: rows of the input read at a time by the pass over the whole input (its temporaries stay small)
SCAN = 1 << 20


@dataclass
class Prepared:
    """What the kernels need of the whole input (the books' price bands, the order keys'
    layout), the instructions made from it a chunk at a time (:meth:`chunks`), and the
    input's columns the events read (the prices that rejected new orders were sent with)."""
    orders: object           # the instructions (obook.feeds.orders' Orders); None in a worker
    tick: int
    reason: np.ndarray       # row -> the reason it is rejected before any book state (int8; 0: none)
    instruments: list        # book -> name
    lo: np.ndarray           # book -> first level row
    hi: np.ndarray           # book -> last level row
    lv_price: np.ndarray     # level row -> price
    key_ids: np.ndarray      # key -> order id
    end_time: int
    n_rows: int
    wide: bool               # some quantity needs the wide (int64) order records
    lo_tick: np.ndarray      # book -> the price (in ticks) of its first level row
    top: np.ndarray          # book -> the largest id its new orders give (the next assigned: top + 1)
    key_lo: np.ndarray | None    # book -> the first key is its id key_lo; None: keys holds every row's
    key_base: np.ndarray | None  # book -> its first key
    keys: np.ndarray | None      # row -> key, when the ids are too sparse for key_lo / key_base
    seqs: np.ndarray | None = None    # when ``orders`` holds some rows of the input (a worker's): their rows in it
    part: tuple | None = None         # (workers, w): a lazy shard's (see ``shard``)

    def chunks(self, size: int | None = None):
        """The instructions of the input's rows in order, ``size`` rows (default ``CHUNK``) at
        a time, each made when it is asked for (the ids new orders are given carry over); of
        a lazy shard (``shard(..., lazy=True)``), its rows of each ``size * workers`` rows of
        the input."""
        size, n = size or CHUNK, self.orders.n
        assigned = np.zeros(len(self.instruments), np.int64)
        if self.part is None:
            for start in range(0, n, size):
                yield self._rows(slice(start, min(start + size, n)), assigned)
            return
        workers, w = self.part
        for start in range(0, n, size * workers):
            mine = start + np.flatnonzero(self.orders.book[start:start + size * workers] % workers == w)
            if len(mine):
                yield self._rows(mine, assigned)

    def shard(self, workers: int, w: int, *, lazy: bool = False) -> Prepared:
        """The rows of the books ``b % workers == w`` only (worker ``w``'s), which keep their
        row numbers: all the rows of each of its books, so its ids and keys are the same.
        ``lazy``: the input stays whole and :meth:`chunks` takes the shard's rows out of it a
        chunk at a time (free in a forked worker, which shares the parent's pages, and in one
        the forkserver starts, which maps one shared copy: obook.matching.shards.SharedPlan)."""
        if lazy:
            return dataclasses.replace(self, part=(workers, w))
        mine = np.flatnonzero(self.orders.book % workers == w)
        return dataclasses.replace(self, orders=_part(self.orders, mine), reason=self.reason[mine],
                                   keys=None if self.keys is None else self.keys[mine], seqs=mine)

    def _rows(self, rows, assigned: np.ndarray) -> Instructions:
        """The input's ``rows`` (a slice, or row numbers in order) as the kernels'
        instructions; ``assigned``: the ids given so far to each book's new orders without
        one (updated)."""
        o = _part(self.orders, rows)
        reason = self.reason[rows].astype(np.int64)
        new, mod = o.action == OP_NEW, o.action == OP_MODIFY
        priced = (reason == 0) & o.has_price & (new | mod) & ~(new & o.market)
        row = np.full(o.n, -1, np.int64)
        row[priced] = self.lo[o.book[priced]] + o.price[priced] // self.tick - self.lo_tick[o.book[priced]]
        mkt = new & o.market & (reason == 0)
        row[mkt] = np.where(o.side[mkt] == 0, self.hi[o.book[mkt]], self.lo[o.book[mkt]])
        ids = o.order_id.copy()
        missing = np.flatnonzero(new & ~o.has_id)
        if len(missing):
            books = o.book[missing]
            order = np.argsort(books, kind="stable")
            sb = books[order]
            starts = np.r_[0, np.flatnonzero(np.diff(sb)) + 1]
            run = np.arange(len(sb)) - np.repeat(starts, np.diff(np.r_[starts, len(sb)]))
            ids[missing[order]] = self.top[sb] + assigned[sb] + 1 + run
            assigned += np.bincount(books, minlength=len(assigned))
        keys = self.keys[rows] if self.keys is not None else \
            self.key_base[o.book] + ids - self.key_lo[o.book]
        msg = Instructions.zeros(o.n)
        at = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
        msg.clock[:, T_SEQ] = (at if self.seqs is None else self.seqs[rows]) + 1
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
        return msg

    def sent(self, row: np.ndarray):
        """Rows ``row`` (0-based): whether each is a new limit instruction with a price, and
        that price (0: none)."""
        o = self.orders
        given = (o.action[row] == OP_NEW) & ~o.market[row] & o.has_price[row]
        return given, np.where(given, o.price[row], 0).astype(np.int64)


def _part(o, rows):
    """The instructions ``o``'s ``rows`` (a slice: views, or row numbers)."""
    return dataclasses.replace(o, **{f.name: getattr(o, f.name)[rows] for f in dataclasses.fields(o)
                                     if f.name not in ("name", "instruments")})


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
    reason = np.zeros(o.n, np.int8)
    new, mod = o.action == OP_NEW, o.action == OP_MODIFY
    limit = new & ~o.market
    # later assignments win: the first applicable reason is assigned last
    if tick > 1:                            # (every price is a multiple of 1)
        reason[o.has_price & (new | mod) & ~(new & o.market) & (o.price % tick != 0)] = R_OFF_TICK
    reason[limit & ~o.has_price] = R_NO_PRICE
    reason[(new | (mod & o.has_quantity)) & (o.quantity <= 0)] = R_BAD_QUANTITY
    if not known.all():
        reason[~known[o.book]] = R_UNKNOWN_INSTRUMENT
    return reason


def check_totals(o, reason: np.ndarray, why: str) -> None:
    """An error naming the first row by which an instrument's quantities (of its readable
    ``new`` rows and modifies) sum to more than 2**62, exactly: a level's total, and a
    fill-or-kill order's running sum of levels, must fit 64 bits (``why``)."""
    sized = (reason == 0) & ((o.action == OP_NEW) | ((o.action == OP_MODIFY) & o.has_quantity)) & (o.quantity > 0)
    rows = np.flatnonzero(sized)
    if not len(rows):
        return
    rows = rows[np.argsort(o.book[rows], kind="stable")]
    q = o.quantity[rows]
    # the running sums of each book exactly, in two halves of 32 bits (neither sum can overflow)
    first = np.r_[0, np.flatnonzero(np.diff(o.book[rows])) + 1]
    counts = np.diff(np.r_[first, len(rows)])
    halves = []
    for part in (q >> 32, q & 0xFFFFFFFF):
        run = np.cumsum(part)
        halves.append(run - np.repeat(np.r_[0, run[first[1:] - 1]], counts))
    hi, lo = halves
    hi += lo >> 32                                      # the sum is hi * 2**32 + (lo & 0xFFFFFFFF)
    over = rows[(hi > 1 << 30) | ((hi == 1 << 30) & ((lo & 0xFFFFFFFF) > 0))]
    if len(over):
        row = int(over.min())
        raise ObookError(f"{o.name}: row {row + 1}: the quantities of instrument {o.instruments[o.book[row]]!r} sum "
                         f"to more than 2**62 by this row ({why})")


def plan(o, tick: int = 1, instruments=None) -> Prepared:
    """The instructions ``o`` prepared for the kernels, their rows made a chunk at a time by
    ``chunks()``: one pass over the input first (``SCAN`` rows at a time) finds what the
    books need of all of it (price bands, the ids to assign, the key layout) and what no
    book can hold (an ObookError before any row is matched)."""
    if tick < 1:
        raise ObookError(f"tick must be a positive integer, not {tick}")
    nb = len(o.instruments)
    # names as the input's are read: without surrounding white space
    known = np.ones(nb, bool) if instruments is None else \
        np.isin(np.array(o.instruments, dtype=object), np.array([str(i).strip() for i in instruments], dtype=object))
    s = _scan(o, tick, known)
    lo_t, hi_t = s["lo_t"], s["hi_t"]
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
    if nb and s["total"].max() > 2.0 ** 61:     # (a float sum: near the limit only, the exact one)
        check_totals(o, s["reason"], "a level's total must fit 64 bits")
    top, missing = s["top"], s["missing"]
    if (top > np.iinfo(np.int64).max - missing).any():
        _assign_ids(o)                      # the error naming the first row left without an id
    key_lo, key_base, keys, key_ids = _key_layout(o, s)
    if len(key_ids) >= 2**31:            # the rows' keys (and the FIFO links) are int32
        raise ObookError(f"{o.name}: {len(key_ids):,} order ids in one run; at most 2,147,483,647")
    return Prepared(o, tick, s["reason"], list(o.instruments), base, base + width - 1, lv_price, key_ids,
                    s["end_time"], o.n, s["qty"] > np.iinfo(np.int32).max, lo_t, top, key_lo, key_base, keys)


def _scan(o, tick: int, known: np.ndarray) -> dict:
    """One pass over the instructions ``o``: every row's reason (int8), and per book the
    lowest and highest price (ticks) a level row is needed for, the quantities' sum, the
    largest id new orders give and the count of those without one, the lowest and highest
    id rows name; the largest quantity (absolute) and the last time."""
    nb, big = len(o.instruments), np.iinfo(np.int64)
    s = dict(reason=np.zeros(o.n, np.int8), lo_t=np.full(nb, big.max), hi_t=np.full(nb, big.min),
             total=np.zeros(nb, np.float64), top=np.zeros(nb, np.int64), missing=np.zeros(nb, np.int64),
             id_lo=np.full(nb, big.max), id_hi=np.full(nb, big.min), qty=0, end_time=0)
    for start in range(0, o.n, SCAN):
        p = _part(o, slice(start, min(start + SCAN, o.n)))
        reason = _reasons(p, tick, known)
        s["reason"][start:start + p.n] = reason
        new, mod = p.action == OP_NEW, p.action == OP_MODIFY
        priced = (reason == 0) & p.has_price & (new | mod) & ~(new & p.market)
        ticks = p.price // tick if tick > 1 else p.price
        np.minimum.at(s["lo_t"], p.book, np.where(priced, ticks, big.max))      # (no rows picked out: faster)
        np.maximum.at(s["hi_t"], p.book, np.where(priced, ticks, big.min))
        sized = (reason == 0) & (new | (mod & p.has_quantity)) & (p.quantity > 0)
        np.add.at(s["total"], p.book[sized], p.quantity[sized].astype(np.float64))
        given = p.has_id & new
        np.maximum.at(s["top"], p.book[given], p.order_id[given])
        lack = new & ~p.has_id
        s["missing"] += np.bincount(p.book[lack], minlength=nb)
        np.minimum.at(s["id_lo"], p.book, np.where(lack, big.max, p.order_id))
        np.maximum.at(s["id_hi"], p.book, np.where(lack, big.min, p.order_id))
        qty = np.where(mod & ~p.has_quantity, -1, p.quantity)
        s["qty"] = max(s["qty"], int(np.abs(qty).max()))
        s["end_time"] = int(p.time.max()) if start == 0 else max(s["end_time"], int(p.time.max()))
    return s


def _key_layout(o, s: dict):
    """``(key_lo, key_base, keys, key_ids)``: dense ids (the usual 1, 2, 3 ... per
    instrument) key as the id's place in its instrument's id range (keys None: made a chunk
    at a time), sparse ones by a sort of every row's (instrument, id) (key_lo, key_base None)."""
    top, missing = s["top"], s["missing"]
    some = missing > 0
    lo = np.where(some, np.minimum(s["id_lo"], top + 1), s["id_lo"])
    hi = np.where(some, np.maximum(s["id_hi"], top + missing), s["id_hi"])
    seen = lo <= hi
    wide = np.where(seen, hi.astype(np.float64) - lo.astype(np.float64) + 1, 0)   # no int64 overflow
    if o.n == 0 or wide.sum() > 2 * o.n + 1024:
        keys, key_ids = _keys(o.book, _assign_ids(o))
        return None, None, keys, key_ids
    span = np.where(seen, hi - lo + 1, 0)
    base = np.r_[0, np.cumsum(span)[:-1]].astype(np.int64)
    key_lo = np.where(seen, lo, 0)
    key_ids = np.arange(int(span.sum()), dtype=np.int64) - np.repeat(base - key_lo, span)
    return key_lo, base, None, key_ids
