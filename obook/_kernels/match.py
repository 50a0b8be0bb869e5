"""The matching engine's kernels: price-time priority over banded level arrays.

State (see obook._kernels.match_layout for the columns):

- ``lv[L]`` (``LV_DTYPE``): one row per price tick of every book's band (head, tail, order
  count, quantity); a level holds bids or asks, never both, since the book is never crossed.
- ``od[K]`` (``OD_DTYPE``, 16-byte records; ``OD_WIDE_DTYPE`` when a quantity needs int64):
  one per order key (the driver's dense keys, so the key is the row: no index lookup, no
  free list); ``lv`` is NEVER / DONE, or the level row, side and time in force of a
  resting order; a level's orders form an intrusive doubly linked FIFO (``next``, ``prev``).
  ``ow[K]``: owners, touched only with self-trade prevention on.
- ``bk[B, 12]``: per book its band, best bid / ask rows, levels a side, last bbo row.

The driving kernels take this state as three named tuples: ``Stream`` (the instructions:
``m``, ``MSG_DTYPE`` rows; ``mw``, owners; ``mt``, seq / time; see match_layout),
``MatchState`` (``lv``, ``od``, ``ow``, ``bk``, ``st``) and ``MatchRows`` (the output rows:
fills ``fl``, events ``ev``, bbo ``qt``, depth ``dq``, and ``ds``, each book's last depth
row). ``match_rows`` applies instructions ``m[start:n]``; it returns ``OK``, or
``NEED_OUTPUT`` with ``st[ST_POS]`` at the first instruction not applied (no instruction is
half applied). Nothing allocates; nothing raises.
"""

from collections import namedtuple

import numpy as np
from .jit import njit

from .match_layout import (BK_ASK, BK_BID, BK_HI, BK_LO, BK_NASK, BK_NBID, BUY, DONE,
                           K_ACCEPTED, K_CANCELLED, K_EXPIRED, K_FILLED,
                           K_MODIFIED, K_PARTIAL, K_REJECTED, K_RESTED, LV_MASK, LV_SHIFT, MARKET_BIT, NEED_OUTPUT, NEVER, OK, OP_CANCEL, OP_MODIFY,
                           R_DUPLICATE_ID, R_FOK, R_NOT_LIVE, R_REQUEST, R_SELF_TRADE,
                           R_SESSION_END, R_UNFILLED, R_UNKNOWN_ID, REASON_SHIFT, SIDE_SHIFT,
                           ST_LIVE, ST_ND, ST_NE, ST_NF, ST_NQ, ST_POS, STP_CANCEL_INCOMING,
                           T_SEQ, T_TIME, TIF_DAY, TIF_FOK, TIF_IOC, TIF_SHIFT, W_BBO, W_DEPTH,
                           W_EVENTS, W_FILLS)
from .prefetch import prefetch
from .match_out import emit_bbo, emit_depth, event, fill

#: the instructions: rows (MSG_DTYPE), owners, (seq, time)
Stream = namedtuple("Stream", ("m", "mw", "mt"))
#: the books: levels, orders, owners, per-book rows, counters
MatchState = namedtuple("MatchState", ("lv", "od", "ow", "bk", "st"))
#: the output rows: fills, events, bbo, depth; each book's last depth row
MatchRows = namedtuple("MatchRows", ("fl", "ev", "qt", "dq", "ds"))


@njit(cache=True, _nrt=False)
def _u(i):
    return np.uint64(i)


@njit(cache=True, _nrt=False)
def _level_gone(lv, bk, book, side, r):
    """Level r of side just emptied: one level fewer, and the next best if it was the best."""
    if side == BUY:
        left = bk[_u(book), BK_NBID] - 1
        bk[_u(book), BK_NBID] = left
        if r == bk[_u(book), BK_BID]:
            if left == 0:
                bk[_u(book), BK_BID] = bk[_u(book), BK_LO] - 1
            else:
                r -= 1
                while lv[_u(r)]['count'] == 0:
                    r -= 1
                bk[_u(book), BK_BID] = r
    else:
        left = bk[_u(book), BK_NASK] - 1
        bk[_u(book), BK_NASK] = left
        if r == bk[_u(book), BK_ASK]:
            if left == 0:
                bk[_u(book), BK_ASK] = bk[_u(book), BK_HI] + 1
            else:
                r += 1
                while lv[_u(r)]['count'] == 0:
                    r += 1
                bk[_u(book), BK_ASK] = r


@njit(cache=True, _nrt=False)
def link(lv, od, bk, book, side, o):
    """Append order o (its lv, qty set) at the back of its level; its queue position."""
    r = od[_u(o)]['lv'] & LV_MASK
    t = lv[_u(r)]['tail']
    od[_u(o)]['prev'] = t
    od[_u(o)]['next'] = -1
    if t >= 0:
        od[_u(t)]['next'] = o
    else:
        lv[_u(r)]['head'] = o
    lv[_u(r)]['tail'] = o
    lv[_u(r)]['qty'] += od[_u(o)]['qty']
    n = lv[_u(r)]['count'] + 1
    lv[_u(r)]['count'] = n
    if n == 1:                      # a new level: one more on its side, maybe the best
        bk[_u(book), BK_NBID + side] += 1
        if (r - bk[_u(book), BK_BID + side]) * (1 - 2 * side) > 0:
            bk[_u(book), BK_BID + side] = r
    return n


@njit(cache=True, _nrt=False)
def unlink(lv, od, bk, book, side, o):
    """Take order o out of its level (the slot stays allocated)."""
    r = od[_u(o)]['lv'] & LV_MASK
    p = od[_u(o)]['prev']
    nx = od[_u(o)]['next']
    if p >= 0:
        od[_u(p)]['next'] = nx
    else:
        lv[_u(r)]['head'] = nx
    if nx >= 0:
        od[_u(nx)]['prev'] = p
    else:
        lv[_u(r)]['tail'] = p
    lv[_u(r)]['qty'] -= od[_u(o)]['qty']
    n = lv[_u(r)]['count'] - 1
    lv[_u(r)]['count'] = n
    if n == 0:
        _level_gone(lv, bk, book, side, r)


@njit(cache=True, _nrt=False)
def release(od, st, o):
    """Order o is no longer live."""
    od[_u(o)]['lv'] = DONE
    st[ST_LIVE] -= 1


@njit(cache=True, _nrt=False)
def _fok_available(lv, od, ow, bk, book, side, limit, qty, owner, stp):
    """True if a taker of `side` up to row `limit` can fill `qty` (as matching would)."""
    other = 1 - side
    if (bk[_u(book), BK_NASK] if other == 1 else bk[_u(book), BK_NBID]) == 0:
        return False
    r = bk[_u(book), BK_ASK] if other == 1 else bk[_u(book), BK_BID]
    step = 1 if other == 1 else -1
    end = bk[_u(book), BK_HI] if other == 1 else bk[_u(book), BK_LO]
    got = 0
    while (limit - r) * step >= 0 and (end - r) * step >= 0:
        if lv[_u(r)]['count'] > 0:
            if stp == 0 or owner == 0:
                got += lv[_u(r)]['qty']
            else:   # self-trade prevention changes what can fill: walk the orders
                o = lv[_u(r)]['head']
                while o >= 0:
                    if ow[_u(o)] == owner:
                        if stp == STP_CANCEL_INCOMING:
                            return got >= qty
                    else:
                        got += od[_u(o)]['qty']
                    o = od[_u(o)]['next']
            if got >= qty:
                return True
        r += step
    return got >= qty


@njit(cache=True, _nrt=False, inline="always")
def cross(seq, time, book, key, side, limit, qty, owner, stp, want, lv, od, ow, bk, st, fl, ev):
    """Trade a taker against the other side up to row `limit` in price-time order.

    Returns the quantity left, or -1 - left when self-trade prevention cancelled the rest."""
    other = 1 - side
    sign = 1 - 2 * side              # a buy takes asks at rows <= limit, a sell bids >= limit
    while qty > 0:
        r = bk[_u(book), BK_BID + other]       # sides by index: BK_BID/BK_ASK, BK_NBID/BK_NASK
        if bk[_u(book), BK_NBID + other] == 0 or (r - limit) * sign > 0:
            break
        o = lv[_u(r)]['head']
        mk = o
        mq = np.int64(od[_u(o)]['qty'])
        if stp != 0 and owner != 0 and ow[_u(o)] == owner:
            if stp == STP_CANCEL_INCOMING:
                return -1 - qty
            unlink(lv, od, bk, book, 1 - side, o)
            release(od, st, o)
            if want & W_EVENTS:
                event(ev, st, seq, time, book, mk, K_CANCELLED | (R_SELF_TRADE << 8), 1 - side, r, mq, 0, -1)
            continue
        q = qty if qty < mq else mq
        qty -= q
        if want & W_FILLS:
            fill(fl, st, seq, time, book, r, q, key, mk, side)
        if q == mq:
            unlink(lv, od, bk, book, 1 - side, o)
            release(od, st, o)
            if want & W_EVENTS:
                event(ev, st, seq, time, book, mk, K_FILLED, 1 - side, r, q, 0, -1)
        else:
            od[_u(o)]['qty'] = mq - q
            lv[_u(r)]['qty'] -= q
            if want & W_EVENTS:
                event(ev, st, seq, time, book, mk, K_PARTIAL, 1 - side, r, q, mq - q, -1)
    return qty


@njit(cache=True, _nrt=False, inline="always")
def _finish_taker(seq, time, book, key, side, tif, market, price, qty, left, o, owner, stp, want,
                  lv, od, ow, bk, st, ev):
    """After crossing: the taker's fill event, then rest what is left (slot o, or a new one
    when o < 0) or drop it."""
    cut = left < 0
    if cut:
        left = -1 - left
    if left < qty and want & W_EVENTS:
        event(ev, st, seq, time, book, key, K_FILLED if left == 0 else K_PARTIAL, side,
              price, qty - left, left, -1)
    if left == 0 or cut or market or tif == TIF_IOC or tif == TIF_FOK:
        if o >= 0:
            release(od, st, o)
        else:
            od[_u(key)]['lv'] = DONE
        if left > 0 and want & W_EVENTS:
            event(ev, st, seq, time, book, key, K_CANCELLED | ((R_SELF_TRADE if cut else R_UNFILLED) << 8),
                  side, price, left, 0, -1)
        return
    if o < 0:
        o = key
        st[ST_LIVE] += 1
        if stp != 0:
            ow[_u(o)] = owner
    od[_u(o)]['qty'] = left
    od[_u(o)]['lv'] = price | ((side | (tif << 1)) << LV_SHIFT)
    pos = link(lv, od, bk, book, side, o)
    if want & W_EVENTS:
        event(ev, st, seq, time, book, key, K_RESTED, side, price, left, left, pos)


@njit(cache=True, _nrt=False, inline="always")
def _new(seq, time, book, key, op, price, qty, owner, stp, want, lv, od, ow, bk, st, fl, ev):
    side = (op >> SIDE_SHIFT) & 1
    tif = (op >> TIF_SHIFT) & 3
    market = (op & MARKET_BIT) != 0
    reason = (op >> REASON_SHIFT) & 0xFF
    if reason == 0 and od[_u(key)]['lv'] != NEVER:
        reason = R_DUPLICATE_ID
    if reason == 0 and tif == TIF_FOK and not _fok_available(lv, od, ow, bk, book, side, price, qty, owner, stp):
        reason = R_FOK
    shown = -1 if market else price
    if reason != 0:
        if want & W_EVENTS:
            event(ev, st, seq, time, book, key, K_REJECTED | (reason << 8), side, shown, qty, 0, -1)
        return False
    if want & W_EVENTS:
        event(ev, st, seq, time, book, key, K_ACCEPTED, side, shown, qty, qty, -1)
    left = cross(seq, time, book, key, side, price, qty, owner, stp, want, lv, od, ow, bk, st, fl, ev)
    _finish_taker(seq, time, book, key, side, tif, market, shown, qty, left, -1, owner, stp, want,
                  lv, od, ow, bk, st, ev)
    return True


@njit(cache=True, _nrt=False, inline="always")
def _reject_missing(seq, time, book, key, op, qty, want, od, st, ev):
    """Reject an instruction naming an order that is not live; True if it was rejected."""
    reason = (op >> REASON_SHIFT) & 0xFF
    s = od[_u(key)]['lv']
    if reason == 0 and s < 0:
        reason = R_UNKNOWN_ID if s == NEVER else R_NOT_LIVE
    if reason != 0 and want & W_EVENTS:
        event(ev, st, seq, time, book, key, K_REJECTED | (reason << 8), (op >> SIDE_SHIFT) & 1, -1,
              qty if qty > 0 else 0, 0, -1)
    return reason != 0


@njit(cache=True, _nrt=False, inline="always")
def _modify(seq, time, book, key, op, price, qty, stp, want, lv, od, ow, bk, st, fl, ev):
    if _reject_missing(seq, time, book, key, op, qty, want, od, st, ev):
        return False
    o = key
    w = od[_u(o)]['lv']
    side = (w >> LV_SHIFT) & 1
    tif = w >> (LV_SHIFT + 1)
    r = w & LV_MASK
    q = np.int64(od[_u(o)]['qty'])
    nr = r if price < 0 else price
    nq = q if qty < 0 else qty
    if want & W_EVENTS:
        event(ev, st, seq, time, book, key, K_ACCEPTED, side, nr, nq, q, -1)
    if nr == r and nq <= q:          # same price, no more quantity: keeps its place
        od[_u(o)]['qty'] = nq
        lv[_u(r)]['qty'] -= q - nq
        if want & W_EVENTS:
            event(ev, st, seq, time, book, key, K_MODIFIED, side, r, nq, nq, -1)
        return True
    unlink(lv, od, bk, book, side, o)      # cancel and replace: may trade, rests at the back
    owner = ow[_u(o)] if stp != 0 else 0
    left = cross(seq, time, book, key, side, nr, nq, owner, stp, want, lv, od, ow, bk, st, fl, ev)
    _finish_taker(seq, time, book, key, side, tif, False, nr, nq, left, o, owner, stp, want,
                  lv, od, ow, bk, st, ev)
    return True


@njit(cache=True, _nrt=False, inline="always")
def _cancel(seq, time, book, key, op, want, lv, od, bk, st, ev):
    if _reject_missing(seq, time, book, key, op, 0, want, od, st, ev):
        return False
    o = key
    w = od[_u(o)]['lv']
    side = (w >> LV_SHIFT) & 1
    q = np.int64(od[_u(o)]['qty'])
    r = w & LV_MASK
    unlink(lv, od, bk, book, side, o)
    release(od, st, o)
    if want & W_EVENTS:
        event(ev, st, seq, time, book, key, K_CANCELLED | (R_REQUEST << 8), side, r, q, 0, -1)
    return True


@njit(cache=True, _nrt=False, inline="always")
def apply_one(m, mw, mt, i, stp, want, lv, od, ow, bk, st, fl, ev):
    """Apply instruction i of m; True if it may have changed the book. Seq and time are
    read only for output rows, the owner only for self-trade prevention."""
    seq = mt[_u(i), T_SEQ] if want != 0 else 0
    time = mt[_u(i), T_TIME] if want != 0 else 0
    book = np.int64(m[_u(i)]['book'])
    key = np.int64(m[_u(i)]['key'])
    op = np.int64(m[_u(i)]['op'])
    price = np.int64(m[_u(i)]['price'])
    action = op & 3
    if action == OP_CANCEL:
        return _cancel(seq, time, book, key, op, want, lv, od, bk, st, ev)
    if action == OP_MODIFY:
        return _modify(seq, time, book, key, op, price, m[_u(i)]['qty'], stp, want,
                       lv, od, ow, bk, st, fl, ev)
    return _new(seq, time, book, key, op, price, m[_u(i)]['qty'], mw[_u(i)] if stp != 0 else 0,
                stp, want, lv, od, ow, bk, st, fl, ev)


@njit(cache=True, _nrt=False, inline="always")
def room(m, i, want, od, st, fl, ev, qt, dq):
    """OK if instruction i can be applied now, else what to make room for."""
    if want == 0:               # nothing written: one test instead of four
        return OK
    live = st[ST_LIVE] + 8      # a taker touches at most every live order once
    if (want & W_FILLS and st[ST_NF] + live > fl.shape[0]) or \
            (want & W_EVENTS and st[ST_NE] + live > ev.shape[0]) or \
            (want & W_BBO and st[ST_NQ] + 1 > qt.shape[0]) or (want & W_DEPTH and st[ST_ND] + 1 > dq.shape[0]):
        return NEED_OUTPUT
    return OK


@njit(cache=True, _nrt=False, inline="always")
def ahead(m, i, n, pf, lv, od):
    """Prefetch the order record and the level row instruction i + pf will touch: straight
    from the instruction, no load that could wait on memory (a second stage that loaded
    the order's neighbours / the level's last order at i + pf/2 cost more than it hid).
    Branch-free: a missing price (-1) prefetches row 0."""
    j = min(i + pf, n - 1)
    prefetch(od, m[_u(j)]['key'])
    prefetch(lv, max(m[_u(j)]['price'], 0))


@njit(cache=True, _nrt=False)
def match_rows(ins, start, n, stp, want, levels, pf, state, out):
    """Apply instructions m[start:n] of ``ins`` (see the module doc); bbo / depth rows after
    each instruction that changed the top of its book. pf: prefetch distance (0: none)."""
    m, mw, mt = ins
    lv, od, ow, bk, st = state
    fl, ev, qt, dq, ds = out
    if want == 0 and stp == 0:
        # the book alone (the benchmark's configuration): apply_one is inlined with want and
        # stp as constants, so every output / self-trade test, the seq / time / owner loads
        # and the output arrays drop out of the loop (0.69x the time of the loop below)
        for i in range(start, n):
            if pf > 0:
                ahead(m, i, n, pf, lv, od)
            apply_one(m, mw, mt, i, 0, 0, lv, od, ow, bk, st, fl, ev)
        st[ST_POS] = n
        return OK
    for i in range(start, n):
        if pf > 0:
            ahead(m, i, n, pf, lv, od)
        status = room(m, i, want, od, st, fl, ev, qt, dq)
        if status != OK:
            st[ST_POS] = i
            return status
        if apply_one(m, mw, mt, i, stp, want, lv, od, ow, bk, st, fl, ev):
            if want & W_BBO:
                emit_bbo(mt[_u(i), T_SEQ], mt[_u(i), T_TIME], np.int64(m[_u(i)]['book']), lv, bk, st, qt)
            if want & W_DEPTH:
                emit_depth(mt[_u(i), T_SEQ], mt[_u(i), T_TIME], np.int64(m[_u(i)]['book']), levels, lv, bk, st,
                           dq, ds)
    st[ST_POS] = n
    return OK


@njit(cache=True, _nrt=False)
def expire_day(books, seq, time, want, levels, state, out):
    """End of session: every DAY order of `books` expires (lowest price first, FIFO within a
    level), then each book's bbo / depth row. The caller leaves room for every live order."""
    lv, od, _, bk, st = state
    _, ev, qt, dq, ds = out
    for j in range(books.shape[0]):
        book = books[_u(j)]
        for r in range(bk[_u(book), BK_LO], bk[_u(book), BK_HI] + 1):
            o = lv[_u(r)]['head']
            while o >= 0:
                nx = od[_u(o)]['next']
                w = od[_u(o)]['lv']
                if (w >> (LV_SHIFT + 1)) == TIF_DAY:
                    side = (w >> LV_SHIFT) & 1
                    q = np.int64(od[_u(o)]['qty'])
                    k = o
                    unlink(lv, od, bk, book, side, o)
                    release(od, st, o)
                    if want & W_EVENTS:
                        event(ev, st, seq, time, book, k, K_EXPIRED | (R_SESSION_END << 8), side, r, q, 0, -1)
                o = nx
        if want & W_BBO:
            emit_bbo(seq, time, book, lv, bk, st, qt)
        if want & W_DEPTH:
            emit_depth(seq, time, book, levels, lv, bk, st, dq, ds)
    return OK


