"""Output rows of the matching kernels: fills, events, bbo and depth rows.

Each writer appends one row at its counter in ``st``; the caller (``match.room``) has
checked there is room.
"""

import numpy as np
from .jit import njit

from .match_layout import (BK_ASK, BK_BID, BK_LAST, BK_NASK, BK_NBID, D_HEAD, ST_ND, ST_NE, ST_NF, ST_NQ)


@njit(cache=True, _nrt=False)
def _u(i):
    return np.uint64(i)


@njit(cache=True, _nrt=False)
def fill(fl, st, seq, time, book, price, qty, taker, maker, side):
    j = st[ST_NF]
    st[ST_NF] = j + 1
    fl[_u(j), 0] = seq
    fl[_u(j), 1] = time
    fl[_u(j), 2] = book
    fl[_u(j), 3] = price
    fl[_u(j), 4] = qty
    fl[_u(j), 5] = taker
    fl[_u(j), 6] = maker
    fl[_u(j), 7] = side


@njit(cache=True, _nrt=False)
def event(ev, st, seq, time, book, key, kind, side, price, qty, remaining, qpos):
    j = st[ST_NE]
    st[ST_NE] = j + 1
    ev[_u(j), 0] = seq
    ev[_u(j), 1] = time
    ev[_u(j), 2] = book
    ev[_u(j), 3] = key
    ev[_u(j), 4] = kind
    ev[_u(j), 5] = side
    ev[_u(j), 6] = price
    ev[_u(j), 7] = qty
    ev[_u(j), 8] = remaining
    ev[_u(j), 9] = qpos


@njit(cache=True, _nrt=False)
def emit_bbo(seq, time, book, lv, bk, st, qt):
    """A bbo row if the book's best levels (row, quantity, orders) changed since its last."""
    b = bk[_u(book), BK_BID] if bk[_u(book), BK_NBID] > 0 else -1
    a = bk[_u(book), BK_ASK] if bk[_u(book), BK_NASK] > 0 else -1
    bq = lv[_u(b)]['qty'] if b >= 0 else 0
    bn = lv[_u(b)]['count'] if b >= 0 else 0
    aq = lv[_u(a)]['qty'] if a >= 0 else 0
    an = lv[_u(a)]['count'] if a >= 0 else 0
    k = BK_LAST
    if (bk[_u(book), k] == b and bk[_u(book), k + 1] == bq and bk[_u(book), k + 2] == bn
            and bk[_u(book), k + 3] == a and bk[_u(book), k + 4] == aq and bk[_u(book), k + 5] == an):
        return
    bk[_u(book), k] = b
    bk[_u(book), k + 1] = bq
    bk[_u(book), k + 2] = bn
    bk[_u(book), k + 3] = a
    bk[_u(book), k + 4] = aq
    bk[_u(book), k + 5] = an
    j = st[ST_NQ]
    st[ST_NQ] = j + 1
    qt[_u(j), 0] = seq
    qt[_u(j), 1] = time
    qt[_u(j), 2] = book
    qt[_u(j), 3] = b
    qt[_u(j), 4] = bq
    qt[_u(j), 5] = bn
    qt[_u(j), 6] = a
    qt[_u(j), 7] = aq
    qt[_u(j), 8] = an


@njit(cache=True, _nrt=False)
def emit_depth(seq, time, book, levels, lv, bk, st, dq, ds):
    """A depth row (the top `levels` a side: row, quantity, orders; row -1 past the last
    level) written in place at dq[st[ST_ND]], kept only if it differs from the book's
    last one (ds[book])."""
    j = st[ST_ND]
    changed = False
    for side in range(2):
        n = bk[_u(book), BK_NBID] if side == 0 else bk[_u(book), BK_NASK]
        r = bk[_u(book), BK_BID] if side == 0 else bk[_u(book), BK_ASK]
        step = -1 if side == 0 else 1
        for lvl in range(levels):
            c = D_HEAD + (side * levels + lvl) * 3
            if lvl < n:
                while lv[_u(r)]['count'] == 0:
                    r += step
                px, q, cnt = r, lv[_u(r)]['qty'], lv[_u(r)]['count']
                r += step
            else:
                px, q, cnt = -1, 0, 0
            if ds[_u(book), c - D_HEAD] != px or ds[_u(book), c - D_HEAD + 1] != q or \
                    ds[_u(book), c - D_HEAD + 2] != cnt:
                changed = True
                ds[_u(book), c - D_HEAD] = px
                ds[_u(book), c - D_HEAD + 1] = q
                ds[_u(book), c - D_HEAD + 2] = cnt
            dq[_u(j), c] = px
            dq[_u(j), c + 1] = q
            dq[_u(j), c + 2] = cnt
    if changed:
        dq[_u(j), 0] = seq
        dq[_u(j), 1] = time
        dq[_u(j), 2] = book
        st[ST_ND] = j + 1
