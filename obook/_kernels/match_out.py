"""Output rows of the matching kernels: fills, events, bbo and depth rows.

Each writer appends one row at its counter in ``st``; the caller (``match.room``) has
checked there is room.
"""

import numpy as np
from .jit import njit

from .match_layout import (BK_ASK, BK_BID, BK_LAST, BK_NASK, BK_NBID, D_HEAD, E_BOOK, E_KEY, E_KIND, E_PRICE, E_QPOS,
                           E_QTY, E_REMAINING, E_SEQ, E_SIDE, E_TIME, F_BOOK, F_MAKER, F_PRICE, F_QTY, F_SEQ, F_SIDE,
                           F_TAKER, F_TIME, LC_ORDERS, LC_QTY, LC_ROW, LC_WIDTH, Q_BOOK, Q_SEQ, Q_TIME, ST_ND, ST_NE,
                           ST_NF, ST_NQ)


@njit(cache=True, _nrt=False)
def _u(i):
    return np.uint64(i)


@njit(cache=True, _nrt=False)
def fill(fl, st, seq, time, book, price, qty, taker, maker, side):
    j = st[ST_NF]
    st[ST_NF] = j + 1
    fl[_u(j), F_SEQ] = seq
    fl[_u(j), F_TIME] = time
    fl[_u(j), F_BOOK] = book
    fl[_u(j), F_PRICE] = price
    fl[_u(j), F_QTY] = qty
    fl[_u(j), F_TAKER] = taker
    fl[_u(j), F_MAKER] = maker
    fl[_u(j), F_SIDE] = side


@njit(cache=True, _nrt=False)
def event(ev, st, seq, time, book, key, kind, side, price, qty, remaining, qpos):
    j = st[ST_NE]
    st[ST_NE] = j + 1
    ev[_u(j), E_SEQ] = seq
    ev[_u(j), E_TIME] = time
    ev[_u(j), E_BOOK] = book
    ev[_u(j), E_KEY] = key
    ev[_u(j), E_KIND] = kind
    ev[_u(j), E_SIDE] = side
    ev[_u(j), E_PRICE] = price
    ev[_u(j), E_QTY] = qty
    ev[_u(j), E_REMAINING] = remaining
    ev[_u(j), E_QPOS] = qpos


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
    qt[_u(j), Q_SEQ] = seq
    qt[_u(j), Q_TIME] = time
    qt[_u(j), Q_BOOK] = book
    qt[_u(j), D_HEAD + LC_ROW] = b
    qt[_u(j), D_HEAD + LC_QTY] = bq
    qt[_u(j), D_HEAD + LC_ORDERS] = bn
    qt[_u(j), D_HEAD + LC_WIDTH + LC_ROW] = a
    qt[_u(j), D_HEAD + LC_WIDTH + LC_QTY] = aq
    qt[_u(j), D_HEAD + LC_WIDTH + LC_ORDERS] = an


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
            c = D_HEAD + (side * levels + lvl) * LC_WIDTH
            if lvl < n:
                while lv[_u(r)]['count'] == 0:
                    r += step
                px, q, cnt = r, lv[_u(r)]['qty'], lv[_u(r)]['count']
                r += step
            else:
                px, q, cnt = -1, 0, 0
            d = c - D_HEAD
            if ds[_u(book), d + LC_ROW] != px or ds[_u(book), d + LC_QTY] != q or ds[_u(book), d + LC_ORDERS] != cnt:
                changed = True
                ds[_u(book), d + LC_ROW] = px
                ds[_u(book), d + LC_QTY] = q
                ds[_u(book), d + LC_ORDERS] = cnt
            dq[_u(j), c + LC_ROW] = px
            dq[_u(j), c + LC_QTY] = q
            dq[_u(j), c + LC_ORDERS] = cnt
    if changed:
        dq[_u(j), Q_SEQ] = seq
        dq[_u(j), Q_TIME] = time
        dq[_u(j), Q_BOOK] = book
        st[ST_ND] = j + 1
