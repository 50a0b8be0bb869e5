"""The compiled loop of ``obook.gen.databento.mbo_flow``: the books of a synthetic MBO day
(each instrument's live orders in arrival order, a few hundred at most) and the records
it writes, one step at a time (see ``mbo_flow`` for what a step does).

Random numbers come from the ITCH generator's xorshift64* (``obook.gen.itch``), so the
records depend on the seed only. Records are written into preallocated columns; the
kernel returns how many it wrote.
"""

from __future__ import annotations

import numpy as np

from .._kernels.jit import njit
from .itch import _below, _unif

F_LAST = 0x80
NO_PRICE = 0x7FFFFFFFFFFFFFFF
PRICE_TICK = 10_000_000
#: a step writes at most this many records (a trade: T, three F, three C, one F)
STEP_RECORDS = 16
#: actions and sides as their ASCII codes
A, C, M, T, F, R, N = (ord(c) for c in "ACMTFRN")
SIDE_B, SIDE_A, SIDE_N = ord("B"), ord("A"), ord("N")


@njit(cache=True)
def _rec(out, n, t, iid, action, side, oid, px_ticks, size, last):
    """Write one record; ``px_ticks`` < 0: no price. Returns the new count."""
    ts, inst, ids, price, sizes, flags, actions, sides = out
    ts[n] = t
    inst[n] = iid
    ids[n] = oid
    price[n] = NO_PRICE if px_ticks < 0 else px_ticks * PRICE_TICK
    sizes[n] = size
    flags[n] = F_LAST if last else 0
    actions[n] = action
    sides[n] = side
    return n + 1


@njit(cache=True)
def _remove(book, count, k, i):
    """Drop order i of book k, keeping the others' arrival order."""
    for j in range(i, count[k] - 1):
        for c in range(4):
            book[k, j, c] = book[k, j + 1, c]
    count[k] -= 1


@njit(cache=True)
def _find(book, count, k, oid):
    for i in range(count[k]):
        if book[k, i, 0] == oid:
            return i
    return -1


@njit(cache=True)
def flow(records, ids, mids, st, next_id, clears, start_ns, cap, out, drift):
    """About ``records`` MBO records of the instruments ``ids`` (their mid prices in
    ticks ``mids``) into the int64 columns ``out`` (ts_event, instrument_id, order id,
    price, size, flags, action, side); returns the count. Order ids count up from
    ``next_id`` (0: none); ``cap``: live orders a book keeps (an add to a full book is a
    cancel); ``drift`` False: the mids never move (the book never crosses)."""
    n_inst = len(ids)
    book = np.zeros((n_inst, cap + 8, 4), np.int64)     # order id, side, price (ticks), size
    count = np.zeros(n_inst, np.int64)
    fills = np.zeros((3, 2), np.int64)
    t = start_ns
    n = 0
    for k in range(n_inst):                             # every day starts with a clear
        t += 1 + _below(st, 4999)
        n = _rec(out, n, t, ids[k], R, SIDE_N, 0, -1, 0, True)
    while n < records:
        k = _below(st, n_inst)
        iid = ids[k]
        r = _unif(st)
        have = count[k]
        if r < clears:                                  # clear, then a small snapshot
            count[k] = 0
            t += 1 + _below(st, 4999)
            n = _rec(out, n, t, iid, R, SIDE_N, 0, -1, 0, True)
            for j in range(3):
                t, n, next_id = _add(book, count, k, iid, mids, st, t, n, next_id, j == 2, out)
        elif (r < 0.35 or have < 4) and have < cap:
            t, n, next_id = _add(book, count, k, iid, mids, st, t, n, next_id, True, out)
        elif r < 0.5 or have >= cap:
            i = _below(st, have)
            size = book[k, i, 3] if _unif(st) < 0.6 else 100
            t, n = _cancel(book, count, k, iid, i, size, st, t, n, True, out)
        elif r < 0.65:                                  # a modify: keeps or loses priority
            i = _below(st, have)
            side, px, size = book[k, i, 1], book[k, i, 2], book[k, i, 3]
            r2 = _unif(st)
            if r2 < 0.4:
                size = max(1, size - 100 * (1 + _below(st, 2)))
            elif r2 < 0.7:
                size = size + 100
            else:
                px = px + (1 if _unif(st) < 0.5 else -1) * (1 + _below(st, 2))
                px = min(px, mids[k] - 1) if side == SIDE_B else max(px, mids[k] + 1)
            book[k, i, 2], book[k, i, 3] = px, size
            t += 1 + _below(st, 4999)
            n = _rec(out, n, t, iid, M, side, book[k, i, 0], px, size, True)
        elif r < 0.68:                                  # a modify of an unknown order: an add
            side = SIDE_B if _unif(st) < 0.5 else SIDE_A
            px = mids[k] - 2 if side == SIDE_B else mids[k] + 2
            next_id += 1 + _below(st, 3)
            c = count[k]
            book[k, c, 0], book[k, c, 1], book[k, c, 2], book[k, c, 3] = next_id, side, px, 300
            count[k] = c + 1
            t += 1 + _below(st, 4999)
            n = _rec(out, n, t, iid, M, side, next_id, px, 300, True)
        elif r < 0.8:
            t, n, next_id = _trade(book, count, k, iid, mids, st, t, n, next_id, fills, out)
        elif r < 0.9:                                   # an event of several records
            m = 2 + _below(st, 3)
            last = True
            for j in range(m):
                last = j == m - 1 and _unif(st) < 0.8
                if _unif(st) < 0.5 or count[k] < 2:
                    t, n, next_id = _add(book, count, k, iid, mids, st, t, n, next_id, last, out)
                else:
                    i = _below(st, count[k])
                    t, n = _cancel(book, count, k, iid, i, book[k, i, 3], st, t, n, last, out)
            if not last:                                # closed by an N record
                t += 1 + _below(st, 4999)
                n = _rec(out, n, t, iid, N, SIDE_N, 0, -1, 0, True)
        else:
            step = _below(st, 3) - 1
            if drift:
                mids[k] += step
            t, n, next_id = _add(book, count, k, iid, mids, st, t, n, next_id, True, out)
    return n


@njit(cache=True)
def _add(book, count, k, iid, mids, st, t, n, next_id, last, out):
    side = SIDE_B if _unif(st) < 0.5 else SIDE_A
    off = 1 + _below(st, 7)
    px = mids[k] - off if side == SIDE_B else mids[k] + off
    size = (1 + _below(st, 9)) * 100
    next_id += 1 + _below(st, 3)
    c = count[k]
    book[k, c, 0], book[k, c, 1], book[k, c, 2], book[k, c, 3] = next_id, side, px, size
    count[k] = c + 1
    t += 1 + _below(st, 4999)
    return t, _rec(out, n, t, iid, A, side, next_id, px, size, last), next_id


@njit(cache=True)
def _cancel(book, count, k, iid, i, size, st, t, n, last, out):
    oid, side, px, have = book[k, i, 0], book[k, i, 1], book[k, i, 2], book[k, i, 3]
    if size >= have:
        size = have
        _remove(book, count, k, i)
    else:
        book[k, i, 3] = have - size
    t += 1 + _below(st, 4999)
    return t, _rec(out, n, t, iid, C, side, oid, px, size, last)


@njit(cache=True)
def _trade(book, count, k, iid, mids, st, t, n, next_id, fills, out):
    """An aggressor takes the best orders of one side: T, then F and C per fill."""
    side = SIDE_B if _unif(st) < 0.5 else SIDE_A       # the resting side
    best = -1
    for i in range(count[k]):
        if book[k, i, 1] == side and (best < 0 or (book[k, i, 2] > best if side == SIDE_B else book[k, i, 2] < best)):
            best = book[k, i, 2]
    if best < 0:
        return _add(book, count, k, iid, mids, st, t, n, next_id, True, out)
    want = 1 + _below(st, 3)
    nf = 0
    total = 0
    for i in range(count[k]):                           # the queue at the best price, in arrival order
        if nf < want and book[k, i, 1] == side and book[k, i, 2] == best:
            have = book[k, i, 3]
            take = have if _unif(st) < 0.6 else max(1, have // 2)
            fills[nf, 0], fills[nf, 1] = book[k, i, 0], take
            total += take
            nf += 1
    aggressor = SIDE_A if side == SIDE_B else SIDE_B
    if _unif(st) < 0.1:                                 # no aggressor known (auction, cross)
        aggressor = SIDE_N
    t += 1 + _below(st, 4999)
    n = _rec(out, n, t, iid, T, aggressor, 0, best, total, False)
    end_in_fill = _unif(st) < 0.15
    for j in range(nf):
        t += 1 + _below(st, 4999)
        n = _rec(out, n, t, iid, F, side, fills[j, 0], best, fills[j, 1], False)
    for j in range(nf):
        i = _find(book, count, k, fills[j, 0])
        t, n = _cancel(book, count, k, iid, i, fills[j, 1], st, t, n, j == nf - 1 and not end_in_fill, out)
    if end_in_fill:
        t += 1 + _below(st, 4999)
        n = _rec(out, n, t, iid, F, side, 0, best, 0, True)
    return t, n, next_id
