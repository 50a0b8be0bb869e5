"""The seed benchmark's order flow for one book, as kernel instruction rows.

Around a fixed mid of 10,000 ticks: 48% resting GTC adds a geometric number of ticks
from the mid (p = GEO_P), 37% cancels of a random live order, 10% IOC takers crossing
1-6 ticks (limit mid +- k), 5% modifies of a random live order (half reduce the quantity
in place, half move it to a new distance with a new quantity). Once the book holds
FULL orders, adds turn into cancels. The generator runs its own copy of the book (the
matching kernel) so that it knows exactly which orders are live.
"""

import numpy as np
from .jit import njit

from .match import apply_one
from .match_layout import (DONE, F_MAKER, LV_SHIFT, OP_CANCEL, OP_MODIFY, SIDE_SHIFT, ST_LIVE, ST_NF, T_SEQ,
                           T_TIME, TIF_IOC, TIF_SHIFT, W_FILLS)

MID = 10_000
BAND = 2_048          # ticks each side of the mid in the band
GEO_P = 0.1
FULL = 10_000


@njit(cache=True)
def _pick(live, n):
    return live[np.random.randint(0, n)]


@njit(cache=True)
def generate(seed, n, ins, state, fl, ev, live, pos):
    """Write n instructions into ins (match.Stream: book 0, key = order number, owner 0,
    seq = time = row number); returns the live orders at the end. state (match.MatchState),
    fl, ev: a fresh single-book state sized for 2*BAND+1 levels and n keys, fills and
    events buffers; live / pos: scratch of n int64."""
    m, mw, mt = ins
    lv, od, ow, bk, st = state
    np.random.seed(seed)
    lo = MID - BAND
    nlive = 0
    nkeys = 0
    for i in range(n):
        u = np.random.random()
        if u < 0.48 and st[ST_LIVE] >= FULL:
            u = 0.5                                # the book is full: cancel instead
        if nlive == 0 and (u >= 0.48 and u < 0.85 or u >= 0.95):
            u = 0.0                                # nothing to cancel or modify: add
        side = np.random.randint(0, 2)
        op = side << SIDE_SHIFT
        key = 0
        price = -1
        qty = -1
        if u < 0.48:
            d = min(np.random.geometric(GEO_P), BAND - 8)
            price = (MID - d if side == 0 else MID + d) - lo
            qty = np.random.randint(1, 101)
            key = nkeys
            nkeys += 1
        elif u < 0.85:
            key = _pick(live, nlive)
            op = OP_CANCEL
        elif u < 0.95:
            k = np.random.randint(1, 7)
            price = (MID + k if side == 0 else MID - k) - lo
            qty = np.random.randint(1, 101)
            op |= TIF_IOC << TIF_SHIFT
            key = nkeys
            nkeys += 1
        else:
            key = _pick(live, nlive)
            op = OP_MODIFY
            o = key
            if np.random.random() < 0.5:
                q = od[o]['qty']
                qty = q - 1 if q > 1 else 1
            else:
                d = min(np.random.geometric(GEO_P), BAND - 8)
                price = (MID - d if ((od[o]['lv'] >> LV_SHIFT) & 1) == 0 else MID + d) - lo
                qty = np.random.randint(1, 101)
        mt[i, T_SEQ] = i + 1
        mt[i, T_TIME] = i + 1
        m[i]['book'] = 0
        m[i]['key'] = key
        m[i]['op'] = op
        m[i]['price'] = price
        m[i]['qty'] = qty
        mw[i] = 0
        st[ST_NF] = 0
        apply_one(m, mw, mt, i, 0, W_FILLS, lv, od, ow, bk, st, fl, ev)
        # keep `live` exact: add a resting new order, drop what died
        if od[key]['lv'] >= 0 and (op & 3) == 0:
            pos[key] = nlive
            live[nlive] = key
            nlive += 1
        elif od[key]['lv'] == DONE and pos[key] >= 0:
            nlive = _drop(live, pos, nlive, key)
        for j in range(st[ST_NF]):
            mk = fl[j, F_MAKER]
            if od[mk]['lv'] == DONE and pos[mk] >= 0:
                nlive = _drop(live, pos, nlive, mk)
    return nlive


@njit(cache=True)
def _drop(live, pos, nlive, key):
    p = pos[key]
    last = live[nlive - 1]
    live[p] = last
    pos[last] = p
    pos[key] = -1
    return nlive - 1

