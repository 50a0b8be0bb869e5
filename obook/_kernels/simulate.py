"""Own orders inside a replayed feed: the shadow books and the own-order logic (numba).

``sim_events`` walks a batch of normalized events (obook._kernels.layout); an event of a
book without own orders costs one lookup (``tmap[book] < 0``). For a tracked book it first
runs the own instructions that arrived before the event (arrival < event time), then
applies the event to the shadow book and to the own orders resting at its level. The
shadow is the replay's book (obook._kernels.book; see obook._kernels.simulate_layout for
what the simulation keeps beside it). See obook.simulate for the semantics. Kernels never
raise: NEED_ROOM asks the driver to grow the shadow or flush the outputs and to call
again from ``st[ST_POS]``.
"""

from collections import namedtuple

import numpy as np
from .book import (LV_COUNT, LV_OWNER, LV_PRICE, LV_QTY, LX_DRIVER, LX_HEAD, Q_REF, add_order, entry_at,
                   find_order, level_at, level_by_rank, level_room, node_of, order_room, take_shares)
from .hashtab import LIVE, ht_drop, ht_find, ht_grown_rows, ht_put, ht_reinsert
from .jit import njit

from .layout import (ACT_ADD, ACT_ADD_ZERO_OK, ACT_CANCEL, ACT_CLEAR, ACT_DELETE, ACT_EXEC,
                     ACT_EXEC_CLAMP, ACT_MODIFY, ACT_PRINT, ACT_REDUCE_TO, ACT_REPLACE, DEFER, EV_ACTION,
                     EV_AUX, EV_BOOK, EV_NEWREF, EV_PRICE, EV_REF, EV_SEQ, EV_SHARES, EV_TIME, FILLED,
                     OWN_BEST)
from .simulate_layout import (B_ASK, B_ASKQ, B_BID, B_BIDQ, B_CALL, B_CFROM, B_CTO, B_DIRTY, B_END, B_HEAD, B_INS, B_ODIRTY, B_OWN,
                              B_NEXT, B_OPENED, B_PROBE, D_HEAD, OD_N, OD_PX, OD_QTY, ST_ND, W_BBO, W_DEPTH,
                              B_RESTING, B_SEEN, B_TAIL, B_TIME, E_AHEAD, E_KEY, E_KIND, E_PRICE,
                              E_QTY, E_REASON, E_REM, E_ROW, E_SIDE, END_SEQ, F_KEY, F_PRICE, F_PRIO,
                              F_QTY, F_SIDE, F_TAKER, H_BOOK, H_COUNT, H_FIRST, H_LAST, H_REF,
                              H_STATE, I_ACT, I_ARR, I_HAS_PRICE,
                              I_KEY, I_MARKET, I_PRICE, I_PROBE, I_QTY, I_REASON, I_ROW, I_SIDE,
                              I_TB, I_TIF, K_ACCEPTED, K_CANCELLED, K_COUNT, K_EXPIRED, K_FILLED,
                              K_MODIFIED, K_PARTIAL, K_PHASE, K_QUEUE, K_REJECTED, K_RESTED, K_SEQ,
                              K_TB, K_TIME, NEED_ROOM, NONE, O_AHEAD,
                              O_DONE, O_FILLED, O_LIVE, O_NEVER, O_NEXT, O_PNEXT, O_PPREV, O_PREV, O_PRICE, O_REM,
                              O_RESTING, O_SIDE, O_STAMP, O_STATE, O_TB, O_TIF, OK, OP_CANCEL,
                              OP_NEW, Q_ASK, Q_ASKQ, Q_BID, Q_BIDQ, QN_PRINTED, QN_STAMP, R_DUPLICATE_ID, R_FOK,
                              R_NOT_LIVE, R_REQUEST, R_SESSION_END, R_UNFILLED, R_UNKNOWN_ID,
                              ROOM_HASH, ROOM_OUT, ROOM_SHADOW, ST_COUNT, ST_LIVE, ST_NE, ST_NF,
                              ST_NQ, ST_POS, ST_STAMP, ST_USED, TIF_DAY, TIF_FOK, TIF_IOC)

#: the own orders and the shadow of their books: the shadow book (obook._kernels.book.Books),
#: the own price lists (obook._kernels.simulate_layout); the own instructions, their mids,
#: the own orders, the tracked books; the fills and events rows; the counters
OwnBooks = namedtuple("OwnBooks", ("B", "H", "INS", "MID", "OO", "BK", "FL", "EV", "st"))
#: the with-own tables' rows: bbo_with_own, the own levels, each book's last depth row, depth_with_own
WithOwn = namedtuple("WithOwn", ("QB", "OD", "DL", "DQ"))
#: the shadow book's arrays that its readers (the own instructions, the with-own tables) use:
#: numba passes a tuple to a function that is not inlined as its arrays' fields one by one,
#: so those functions take these ten instead of all of book.Books
Levels = namedtuple("Levels", ("lv", "lv_free", "lvx", "sides", "pool", "seg_free", "heaps", "hp", "fh", "st"))


@njit(cache=True, _nrt=False, inline="always")
def copy_row(dst, src):
    """dst[:] = src[:] without numba's runtime (an array assignment checks for overlap and
    may allocate a copy; these kernels never allocate)."""
    for c in range(src.shape[0]):
        dst[c] = src[c]


# ---------------------------------------------------------------- own price lists
# obook._kernels.hashtab on H's columns: the key (H_BOOK = 2 * tb + side, H_REF = price)


@njit(cache=True, _nrt=False, inline="always")
def h_find(H, sd, price):
    """The slot of the own orders' list at (book side sd, price), or -1."""
    return ht_find(H[:, H_BOOK:H_REF + 1], H[:, H_STATE], sd, price)


@njit(cache=True, _nrt=False, inline="always")
def h_put(H, st, sd, price):
    """A new, empty own price list (the caller made sure there is none and the table has room)."""
    i = ht_put(H[:, H_BOOK:H_REF + 1], H[:, H_STATE], st, ST_LIVE, ST_USED, sd, price)
    H[i, H_FIRST], H[i, H_LAST], H[i, H_COUNT] = -1, -1, 0
    return i


@njit(cache=True, _nrt=False, inline="always")
def h_drop(H, st, i):
    """The own price list of slot i leaves the table."""
    ht_drop(H[:, H_STATE], st, ST_LIVE, i)


@njit(cache=True, _nrt=False)
def h_rehash(old, new):
    """Copy the live rows of ``old`` into the empty ``new``; returns their number."""
    keys, state = new[:, H_BOOK:H_REF + 1], new[:, H_STATE]
    n = 0
    for j in range(old.shape[0]):
        if old[j, H_STATE] == LIVE:
            copy_row(new[ht_reinsert(keys, state, old[j, H_BOOK], old[j, H_REF])], old[j])
            n += 1
    return n


def h_grown(H, st):
    """The table H moved to a new one (``st`` counts its rows again; its size:
    ``ht_grown_rows``)."""
    new = np.zeros((ht_grown_rows(H.shape[0], st[ST_LIVE]), H.shape[1]), H.dtype)
    st[ST_USED] = h_rehash(H, new)
    return new


# ---------------------------------------------------------------- the shadow book


@njit(cache=True, _nrt=False, inline="always")
def _key(side, price):
    """The book's sort key of a price (best last: bids by price, asks by -price)."""
    return price if side == 0 else -price


@njit(cache=True, _nrt=False, inline="always")
def feed_best(B, sd):
    """The feed's best price of book side sd (NONE: empty)."""
    n = B.sides[sd, 1]
    if n == 0:
        return NONE
    return B.lv[B.pool[B.sides[sd, 0] + n - 1, 1], LV_PRICE]


@njit(cache=True, _nrt=False, inline="always")
def shown(B, lvl):
    """Shares of level lvl your orders have not consumed."""
    return B.lv[lvl, LV_QTY] - B.lvx[lvl, LX_DRIVER]


@njit(cache=True, _nrt=False, inline="always")
def visible(B, lvl):
    """The feed level still shows shares (or is a level of zero-share orders)."""
    return shown(B, lvl) > 0 or (B.lv[lvl, LV_QTY] == 0 and B.lvx[lvl, LX_DRIVER] == 0)


@njit(cache=True, _nrt=False, inline="always")
def levels_of(B):
    """The Levels of shadow book B."""
    return Levels(B.lv, B.lv_free, B.lvx, B.sides, B.pool, B.seg_free, B.heaps, B.hp, B.fh, B.st)


@njit(cache=True, _nrt=False, inline="always")
def find(B, tb, ref):
    """Address of the live feed order (tb, ref) in the shadow, or -1."""
    return find_order(tb, ref, B.lv, B.pages, B.page_dir, B.ov_key, B.ov_state, B.st)


@njit(cache=True, _nrt=False, inline="always")
def shadow_room(B, tb, e):
    """0, or ROOM_SHADOW + the shadow book's room request before event e of book tb."""
    act = e[EV_ACTION] & 0xFF
    if act == ACT_ADD or act == ACT_ADD_ZERO_OK or act == ACT_REPLACE or act == ACT_MODIFY:
        room = level_room(tb, B.sides, B.pool, B.heaps, B.hp, B.fh, B.lv, B.st)
        if room == 0:
            room = order_room(e[EV_NEWREF] if act == ACT_REPLACE else e[EV_REF], B.pages, B.page_dir, B.ov_key,
                              B.qn, True, B.st)
        if room != 0:
            return ROOM_SHADOW + room
    elif tb * 2 + 1 >= B.sides.shape[0]:
        return ROOM_SHADOW + level_room(tb, B.sides, B.pool, B.heaps, B.hp, B.fh, B.lv, B.st)
    return 0


# ---------------------------------------------------------------- output rows


@njit(cache=True, _nrt=False)
def _head(out, r, st, seq, phase, time, tb):
    out[r, K_SEQ], out[r, K_PHASE], out[r, K_TIME], out[r, K_TB] = seq, phase, time, tb
    out[r, K_COUNT] = st[ST_COUNT]
    st[ST_COUNT] += 1


@njit(cache=True, _nrt=False)
def emit(EV, st, at, tb, key, kind, reason, side, price, qty, rem, ahead, row):
    """An event row; ``at`` = (seq, phase, time)."""
    r = st[ST_NE]
    _head(EV, r, st, at[0], at[1], at[2], tb)
    EV[r, E_KEY], EV[r, E_KIND], EV[r, E_REASON], EV[r, E_SIDE] = key, kind, reason, side
    EV[r, E_PRICE], EV[r, E_QTY], EV[r, E_REM], EV[r, E_AHEAD], EV[r, E_ROW] = price, qty, rem, ahead, row
    st[ST_NE] = r + 1


@njit(cache=True, _nrt=False)
def own_fill(H, OO, BK, FL, EV, st, at, k, price, f, taker, prio):
    """Own order k fills f shares at price: a fill row, an event, done when nothing is left."""
    tb = OO[k, O_TB]
    if OO[k, O_STATE] == O_RESTING:
        best_add(BK, tb, OO[k, O_SIDE], OO[k, O_PRICE], -f)
    OO[k, O_REM] -= f
    OO[k, O_FILLED] += f
    r = st[ST_NF]
    _head(FL, r, st, at[0], at[1], at[2], tb)
    FL[r, F_KEY], FL[r, F_PRICE], FL[r, F_QTY] = k, price, f
    FL[r, F_TAKER], FL[r, F_PRIO], FL[r, F_SIDE] = taker, prio, OO[k, O_SIDE]
    st[ST_NF] = r + 1
    rem = OO[k, O_REM]
    resting = OO[k, O_STATE] == O_RESTING
    emit(EV, st, at, tb, k, K_FILLED if rem == 0 else K_PARTIAL, 0, OO[k, O_SIDE], OO[k, O_PRICE], f, rem,
         OO[k, O_AHEAD] if resting else -1, -1)
    if rem == 0:
        if resting:
            unlink(H, OO, BK, st, k)
        OO[k, O_STATE] = O_DONE


@njit(cache=True, _nrt=False)
def unlink(H, OO, BK, st, k):
    """Own order k leaves its book's list and its price's list."""
    tb, p, n = OO[k, O_TB], OO[k, O_PREV], OO[k, O_NEXT]
    if p >= 0:
        OO[p, O_NEXT] = n
    else:
        BK[tb, B_HEAD] = n
    if n >= 0:
        OO[n, O_PREV] = p
    else:
        BK[tb, B_TAIL] = p
    BK[tb, B_RESTING] -= 1
    if OO[k, O_REM] > 0:
        best_add(BK, tb, OO[k, O_SIDE], OO[k, O_PRICE], -OO[k, O_REM])
    slot = h_find(H, 2 * tb + OO[k, O_SIDE], OO[k, O_PRICE])
    p, n = OO[k, O_PPREV], OO[k, O_PNEXT]
    if p >= 0:
        OO[p, O_PNEXT] = n
    else:
        H[slot, H_FIRST] = n
    if n >= 0:
        OO[n, O_PPREV] = p
    else:
        H[slot, H_LAST] = p
    H[slot, H_COUNT] -= 1
    if H[slot, H_COUNT] == 0:
        h_drop(H, st, slot)


@njit(cache=True, _nrt=False)
def link(H, OO, BK, st, k):
    """Own order k rests at the back of its level: the next stamp, the tail of its book's
    list and of its price's list."""
    tb = OO[k, O_TB]
    OO[k, O_STATE] = O_RESTING
    OO[k, O_STAMP] = st[ST_STAMP]
    st[ST_STAMP] += 1
    t = BK[tb, B_TAIL]
    OO[k, O_PREV], OO[k, O_NEXT] = t, -1
    if t >= 0:
        OO[t, O_NEXT] = k
    else:
        BK[tb, B_HEAD] = k
    BK[tb, B_TAIL] = k
    BK[tb, B_RESTING] += 1
    best_add(BK, tb, OO[k, O_SIDE], OO[k, O_PRICE], OO[k, O_REM])
    sd, price = 2 * tb + OO[k, O_SIDE], OO[k, O_PRICE]
    slot = h_find(H, sd, price)
    if slot < 0:
        slot = h_put(H, st, sd, price)
    t = H[slot, H_LAST]
    OO[k, O_PPREV], OO[k, O_PNEXT] = t, -1
    if t >= 0:
        OO[t, O_PNEXT] = k
    else:
        H[slot, H_FIRST] = k
    H[slot, H_LAST] = k
    H[slot, H_COUNT] += 1


@njit(cache=True, _nrt=False)
def best_add(BK, tb, side, price, qty):
    """A resting own order's shares came (qty > 0) or went (qty < 0) at price: keep the cached
    best own price of the side; when its shares run out, recompute it on next use. The
    cached own levels of depth_with_own are recomputed on next use."""
    BK[tb, B_ODIRTY] = 1
    if BK[tb, B_DIRTY]:
        return
    c = B_OWN + 2 * side
    if qty > 0 and (BK[tb, c] == NONE or (price > BK[tb, c] if side == 0 else price < BK[tb, c])):
        BK[tb, c], BK[tb, c + 1] = price, qty
    elif price == BK[tb, c]:
        BK[tb, c + 1] += qty
        if BK[tb, c + 1] <= 0:
            BK[tb, B_DIRTY] = 1


@njit(cache=True, _nrt=False)
def own_best(OO, BK, tb):
    """Refresh the cached best own price and shares of each side of book tb."""
    if BK[tb, B_DIRTY] == 0:
        return
    BK[tb, B_DIRTY] = 0
    BK[tb, B_OWN], BK[tb, B_OWN + 1], BK[tb, B_OWN + 2], BK[tb, B_OWN + 3] = NONE, 0, NONE, 0
    k = BK[tb, B_HEAD]
    while k >= 0:
        side, p = OO[k, O_SIDE], OO[k, O_PRICE]
        c = B_OWN + 2 * side
        if BK[tb, c] == NONE or (p > BK[tb, c] if side == 0 else p < BK[tb, c]):
            BK[tb, c], BK[tb, c + 1] = p, OO[k, O_REM]
        elif p == BK[tb, c]:
            BK[tb, c + 1] += OO[k, O_REM]
        k = OO[k, O_NEXT]


# ---------------------------------------------------------------- the feed's events


@njit(cache=True, _nrt=False)
def at_level(H, OO, BK, FL, EV, st, at, tb, side, price, fstamp, x, budget, px, slot):
    """A feed order (priority ``fstamp``) at (side, price), where own orders rest (their
    price list: H row ``slot``), loses x shares: own orders behind it move up; an
    execution (``budget``: its shares no own order took yet) of an order behind an own
    order whose shares ahead are 0 fills that own order at px (the venue's priority
    differed from the simulation's)."""
    k = H[slot, H_FIRST]
    while k >= 0:
        nxt = OO[k, O_PNEXT]
        if fstamp < OO[k, O_STAMP]:
            if OO[k, O_AHEAD] > 0 and x > 0:
                OO[k, O_AHEAD] -= min(OO[k, O_AHEAD], x)
                emit(EV, st, at, tb, k, K_QUEUE, 0, side, price, 0, OO[k, O_REM], OO[k, O_AHEAD], -1)
        elif budget > 0 and OO[k, O_AHEAD] == 0:
            f = min(budget, OO[k, O_REM])
            budget -= f
            own_fill(H, OO, BK, FL, EV, st, at, k, px, f, 0, 1)
        k = nxt


@njit(cache=True, _nrt=False, inline="always")
def in_auction(BK, tb, t):
    """Feed time t of book tb is in a call auction (outside its continuous trading)."""
    return BK[tb, B_CALL] != 0 and (t < BK[tb, B_CFROM] or t >= BK[tb, B_CTO])


@njit(cache=True, _nrt=False)
def auction_fill(H, OO, BK, FL, EV, st, at, tb, side, price, px, budget):
    """An auction's execution of ``budget`` shares of a feed order at (side, price) fills
    the own orders of that side at better prices first (best price, then oldest: the
    auction would have executed them before it) at the auction price px; returns the
    shares left."""
    while budget > 0:
        own_best(OO, BK, tb)
        best = BK[tb, B_OWN + 2 * side]
        if best == NONE or (best <= price if side == 0 else best >= price):
            break
        k = H[h_find(H, 2 * tb + side, best), H_FIRST]
        while k >= 0 and budget > 0:
            nxt = OO[k, O_PNEXT]
            f = min(budget, OO[k, O_REM])
            budget -= f
            own_fill(H, OO, BK, FL, EV, st, at, k, px, f, 0, 1)
            k = nxt
    return budget


@njit(cache=True, _nrt=False, inline="always")
def take(B, H, OO, BK, FL, EV, st, at, tb, a, lvl, have, x, is_exec, remove, px):
    """Feed order at address a (level lvl, ``have`` shares) loses x <= have shares (an
    execution at price px, 0: at the order's price, or not); removed when ``remove`` or at 0
    shares; its level keeps consumed <= shares. In a call auction an execution fills own
    orders that outrank the order at the auction price px."""
    if BK[tb, B_RESTING] > 0:
        sd, price = B.lv[lvl, LV_OWNER], B.lv[lvl, LV_PRICE]
        budget, fpx = x if is_exec else 0, price
        if budget > 0 and in_auction(BK, tb, at[2]):
            fpx = px if px > 0 else price
            budget = auction_fill(H, OO, BK, FL, EV, st, at, tb, sd & 1, price, fpx, budget)
        own = h_find(H, sd, price)
        if own >= 0:
            fstamp = B.qn[node_of(a, B.pnode, B.ovnode), QN_STAMP]
            at_level(H, OO, BK, FL, EV, st, at, tb, sd & 1, price, fstamp, x, budget, fpx, own)
    used = B.lvx[lvl, LX_DRIVER]
    if is_exec:
        used -= min(used, x)
    left = B.lv[lvl, LV_QTY] - (have if remove or x == have else x)
    B.lvx[lvl, LX_DRIVER] = min(used, left)
    take_shares(a, lvl, have, 0 if remove else x, remove, B.lv, B.lv_free, B.lvx, B.sides, B.pool, B.heaps,
                B.hp, B.fh, B.pages, B.page_dir, B.page_live, B.page_key, B.page_free, B.ov_val, B.ov_state,
                True, B.qn, B.pnode, B.ovnode, B.st)


@njit(cache=True, _nrt=False, inline="always")
def put(B, H, OO, BK, FL, EV, st, at, tb, ref, side, price, shares):
    """A feed order joins the back of its level (the next stamp); own resting orders it
    crosses fill first (best price, then time), the shares they take are consumed at its
    level. None does when it rests crossing the feed's own best of the other side too: those
    orders did not trade with it, the venue was not matching (a call auction), nor in a call
    auction's time."""
    lvl, node = add_order(tb, side, price, ref, shares, True, B.lv, B.lv_free, B.lvx, B.sides, B.pool,
                          B.seg_free, B.heaps, B.hp, B.fh, B.pages, B.page_dir, B.page_live, B.page_key,
                          B.page_free, B.ov_key, B.ov_val, B.ov_state, B.qn, B.pnode, B.ovnode, B.st)
    if lvl < 0:             # past a level's largest total: the replay refused it too
        return
    B.qn[node, QN_STAMP], B.qn[node, QN_PRINTED] = st[ST_STAMP], 0
    st[ST_STAMP] += 1
    budget = shares
    if BK[tb, B_RESTING] > 0:
        fb = feed_best(B, 2 * tb + 1 - side)
        if (fb != NONE and (fb >= price if side == 1 else fb <= price)) or in_auction(BK, tb, at[2]):
            budget = 0
    while budget > 0 and BK[tb, B_RESTING] > 0:
        own_best(OO, BK, tb)
        best = BK[tb, B_OWN + 2 * (1 - side)]           # the other side's best own price
        if best == NONE or (best < price if side == 1 else best > price):
            break
        k = H[h_find(H, 2 * tb + 1 - side, best), H_FIRST]
        while k >= 0 and budget > 0:
            nxt = OO[k, O_PNEXT]
            f = min(budget, OO[k, O_REM])
            budget -= f
            B.lvx[lvl, LX_DRIVER] += f
            own_fill(H, OO, BK, FL, EV, st, at, k, best, f, 0, 0)
            k = nxt


@njit(cache=True, _nrt=False)
def clear(B, OO, BK, EV, st, at, tb):
    """A clear of the feed's book: its orders go (best level first, each front to back),
    own orders are at the front."""
    for sd in range(2 * tb, 2 * tb + 2):
        while B.sides[sd, 1] > 0:
            lvl = B.pool[B.sides[sd, 0] + B.sides[sd, 1] - 1, 1]
            a = find(B, tb, B.qn[B.lvx[lvl, LX_HEAD], Q_REF])
            _lvl, have = entry_at(a, B.pages, B.ov_val)
            take_shares(a, lvl, have, 0, True, B.lv, B.lv_free, B.lvx, B.sides, B.pool, B.heaps, B.hp, B.fh,
                        B.pages, B.page_dir, B.page_live, B.page_key, B.page_free, B.ov_val, B.ov_state,
                        True, B.qn, B.pnode, B.ovnode, B.st)
    k = BK[tb, B_HEAD]
    while k >= 0:
        if OO[k, O_AHEAD] > 0:
            OO[k, O_AHEAD] = 0
            emit(EV, st, at, tb, k, K_QUEUE, 0, OO[k, O_SIDE], OO[k, O_PRICE], 0, OO[k, O_REM], 0, -1)
        k = OO[k, O_NEXT]


@njit(cache=True, _nrt=False, inline="always")
def feed_event(e, B, H, OO, BK, FL, EV, st, at, tb):
    """Apply one normalized event to tracked book tb (tolerant: unknown refs do nothing;
    the room it needs checked by shadow_room). An event takes shares from at most two feed
    orders, then may rest one: written as two steps around one ``take`` and one ``put``
    (each is inlined where it is called: one copy of each keeps the compiled kernel small)."""
    act = e[EV_ACTION] & 0xFF
    side = (e[EV_ACTION] >> 8) & 1
    ref, shares, price = e[EV_REF], e[EV_SHARES], e[EV_PRICE]
    if act == ACT_CLEAR:
        clear(B, OO, BK, EV, st, at, tb)
        return
    adds = act == ACT_ADD or act == ACT_ADD_ZERO_OK
    if adds:
        if act == ACT_ADD and shares == 0:
            return
        if e[EV_ACTION] & OWN_BEST:
            if B.sides[2 * tb + side, 1] <= 0:
                return          # own-best on an empty side: the exchange cancels it, it never rests
            price = feed_best(B, 2 * tb + side)
    a = find(B, tb, ref)
    rest = adds             # then rest (the event's ref, or a replace's new one; side, price, shares)
    if a == -1 and not adds:
        if not (act == ACT_MODIFY and shares > 0):
            return
        rest = True         # a modify of an order the feed never added rests it
    exec_part = 0           # a cancel: the shares a print reported filled, taken first as an execution
    for step in range(2):
        if step == 1:       # the second order or part: a replace's new ref, the rest of a cancel
            if act == ACT_REPLACE:
                a = find(B, tb, e[EV_NEWREF])
            elif not (act == ACT_CANCEL and exec_part > 0):
                break
        if a == -1:
            continue
        lvl, have = entry_at(a, B.pages, B.ov_val)
        x, is_exec, remove = have, False, True          # a removal
        if adds:
            x = 0           # an add of a live ref replaces it in place: nobody moves up
        elif act == ACT_EXEC or act == ACT_EXEC_CLAMP:
            x, is_exec, remove = min(shares, have), True, False
        elif act == ACT_CANCEL:
            remove = False
            if step == 0:
                node = node_of(a, B.pnode, B.ovnode)
                exec_part = min(shares, have, B.qn[node, QN_PRINTED])
                B.qn[node, QN_PRINTED] -= exec_part
                x, is_exec = (exec_part, True) if exec_part > 0 else (min(shares, have), False)
            else:
                x = min(shares - exec_part, have)
            if x == 0:
                break
        elif act == ACT_REDUCE_TO:
            if shares >= have:
                return
            x, remove = have - shares, False
        elif act == ACT_DELETE:
            is_exec = (e[EV_ACTION] & FILLED) != 0
        elif act == ACT_REPLACE:
            rest = True
            if step == 0:
                side = B.lv[lvl, LV_OWNER] & 1
        elif act == ACT_MODIFY:
            side = B.lv[lvl, LV_OWNER] & 1
            if price == B.lv[lvl, LV_PRICE] and shares <= have:
                x, remove = have - shares, shares == 0
            else:
                rest = shares > 0
        else:
            return
        take(B, H, OO, BK, FL, EV, st, at, tb, a, lvl, have, x, is_exec, remove, e[EV_AUX])
        if act == ACT_CANCEL and (x == have or not is_exec):
            break           # the order is gone, or the cancel had no executed part
    if rest:
        put(B, H, OO, BK, FL, EV, st, at, tb, e[EV_NEWREF] if act == ACT_REPLACE else ref, side, price, shares)


# ---------------------------------------------------------------- own instructions


@njit(cache=True, _nrt=False, inline="always")
def crossed_level(V, osd, j, key, side, price, market):
    """(level, key) of the j-th best level of side ``osd`` (key: the walk's place, as
    ``level_by_rank``) when an order of ``side`` limited at ``price`` (any, ``market``) reaches
    it; level -1 past the limit or the side's last level."""
    lvl, key = level_by_rank(osd, j, key, V.sides, V.pool, V.heaps, V.hp)
    if lvl >= 0 and not market:
        lp = V.lv[lvl, LV_PRICE]
        if lp > price if side == 0 else lp < price:
            return -1, key
    return lvl, key


@njit(cache=True, _nrt=False)
def fok_fills(V, BK, tb, side, price, qty, market, t):
    """A fill-or-kill order (side, limit price, qty) arriving at feed time t finds qty
    visible unconsumed shares within its limit (none in a call auction)."""
    if in_auction(BK, tb, t):
        return False
    osd = 2 * tb + 1 - side
    avail, j, key = 0, 0, np.int64(0)
    while avail < qty:
        lvl, key = crossed_level(V, osd, j, key, side, price, market)
        if lvl < 0:
            break
        avail += max(0, shown(V, lvl))
        j += 1
    return avail >= qty


@njit(cache=True, _nrt=False, inline="always")
def take_levels(V, H, OO, BK, FL, EV, st, at, k, market):
    """Own order k takes the visible liquidity it crosses as the taker, best level first, at
    the levels' prices (those shares are consumed)."""
    tb, side, price = OO[k, O_TB], OO[k, O_SIDE], OO[k, O_PRICE]
    osd = 2 * tb + 1 - side
    j, key = 0, np.int64(0)
    while OO[k, O_REM] > 0:
        lvl, key = crossed_level(V, osd, j, key, side, price, market)
        if lvl < 0:
            break
        a = shown(V, lvl)
        if a > 0:
            f = min(a, OO[k, O_REM])
            V.lvx[lvl, LX_DRIVER] += f
            own_fill(H, OO, BK, FL, EV, st, at, k, V.lv[lvl, LV_PRICE], f, 1, 0)
        j += 1


@njit(cache=True, _nrt=False)
def enter(V, H, OO, BK, FL, EV, st, at, k, market, row):
    """Own order k (accepted, or modified) arrives: it takes the visible liquidity it
    crosses (best level first; those shares are consumed; nothing in a call auction), then
    rests at the back of its level (GTC / DAY) or drops the rest (IOC, FOK, market)."""
    tb, side, price, tif = OO[k, O_TB], OO[k, O_SIDE], OO[k, O_PRICE], OO[k, O_TIF]
    if not in_auction(BK, tb, at[2]):
        take_levels(V, H, OO, BK, FL, EV, st, at, k, market)
    rem = OO[k, O_REM]
    if rem == 0:
        return
    if market or tif == TIF_IOC or tif == TIF_FOK:
        OO[k, O_STATE], OO[k, O_REM] = O_DONE, 0
        emit(EV, st, at, tb, k, K_CANCELLED, R_UNFILLED, side, price, rem, 0, -1, row)
        return
    lvl = level_at(tb, side, price, False, V.lv, V.lv_free, V.lvx, V.sides, V.pool, V.seg_free, V.heaps, V.hp,
                   V.fh, V.st)
    OO[k, O_AHEAD] = max(0, shown(V, lvl)) if lvl >= 0 else 0
    link(H, OO, BK, st, k)
    emit(EV, st, at, tb, k, K_RESTED, 0, side, price, rem, rem, OO[k, O_AHEAD], row)


@njit(cache=True, _nrt=False, inline="always")
def opens(BK, tb, t):
    """Feed time t of book tb is at or past the start of its continuous trading, and its
    resting own orders have not been matched against the book then (``open_cross``)."""
    return BK[tb, B_CALL] != 0 and BK[tb, B_OPENED] == 0 and t >= BK[tb, B_CFROM]


@njit(cache=True, _nrt=False)
def open_cross(V, H, OO, BK, FL, EV, st, at, tb):
    """Continuous trading of book tb starts: each own order resting through the feed's
    visible other side (one placed in the call auction) takes it as the taker, as on
    arrival; bids, then asks, each best price first, then oldest. What is left rests on."""
    BK[tb, B_OPENED] = 1
    for side in range(2):
        stuck = False
        while not stuck and BK[tb, B_RESTING] > 0:
            own_best(OO, BK, tb)
            best = BK[tb, B_OWN + 2 * side]
            if best == NONE:
                break
            k = H[h_find(H, 2 * tb + side, best), H_FIRST]
            while k >= 0:
                nxt = OO[k, O_PNEXT]
                take_levels(V, H, OO, BK, FL, EV, st, at, k, False)
                if OO[k, O_STATE] == O_RESTING:     # nothing left within its limit: nor for worse prices
                    stuck = True
                    break
                k = nxt


@njit(cache=True, _nrt=False)
def instruction(q, INS, MID, V, H, OO, BK, FL, EV, st, at):
    """One own instruction at its arrival (at = (seq, 0, arrival))."""
    tb, k, row = INS[q, I_TB], INS[q, I_KEY], INS[q, I_ROW]
    MID[q, 0], MID[q, 1], MID[q, 4] = feed_best(V, 2 * tb), feed_best(V, 2 * tb + 1), at[0]
    act, reason = INS[q, I_ACT], INS[q, I_REASON]
    if reason == 0 and act == OP_NEW and OO[k, O_STATE] != O_NEVER:
        reason = R_DUPLICATE_ID
    elif reason == 0 and act != OP_NEW and OO[k, O_STATE] != O_RESTING:
        reason = R_UNKNOWN_ID if OO[k, O_STATE] == O_NEVER else R_NOT_LIVE
    if reason != 0:     # the quantity as the matching engine reports it: a new order's as given,
        side = INS[q, I_SIDE] if act == OP_NEW else -1       # a modify's new one, a cancel none
        qty = INS[q, I_QTY] if act == OP_NEW else (0 if act == OP_CANCEL else max(INS[q, I_QTY], 0))
        emit(EV, st, at, tb, k, K_REJECTED, reason, side, INS[q, I_PRICE], qty, 0, -1, row)
        return
    if act == OP_NEW:
        market = INS[q, I_MARKET] != 0
        OO[k, O_STATE], OO[k, O_TB], OO[k, O_SIDE] = O_LIVE, tb, INS[q, I_SIDE]
        OO[k, O_PRICE] = -1 if market else INS[q, I_PRICE]
        OO[k, O_REM], OO[k, O_TIF], OO[k, O_FILLED], OO[k, O_AHEAD] = INS[q, I_QTY], INS[q, I_TIF], 0, -1
        if OO[k, O_TIF] == TIF_FOK and not fok_fills(V, BK, tb, OO[k, O_SIDE], OO[k, O_PRICE], OO[k, O_REM],
                                                     market, at[2]):
            OO[k, O_STATE] = O_NEVER    # turned away whole, never accepted: its id stays free (as the matching engine's)
            emit(EV, st, at, tb, k, K_REJECTED, R_FOK, OO[k, O_SIDE], OO[k, O_PRICE], OO[k, O_REM], 0, -1, row)
            return
        emit(EV, st, at, tb, k, K_ACCEPTED, 0, OO[k, O_SIDE], OO[k, O_PRICE], OO[k, O_REM], OO[k, O_REM], -1, row)
        enter(V, H, OO, BK, FL, EV, st, at, k, market, row)
        return
    side, rem = OO[k, O_SIDE], OO[k, O_REM]
    if act == OP_CANCEL:
        unlink(H, OO, BK, st, k)
        OO[k, O_STATE], OO[k, O_REM] = O_DONE, 0
        emit(EV, st, at, tb, k, K_CANCELLED, R_REQUEST, side, OO[k, O_PRICE], rem, 0, -1, row)
        return
    price = INS[q, I_PRICE] if INS[q, I_HAS_PRICE] else OO[k, O_PRICE]
    qty = INS[q, I_QTY] if INS[q, I_QTY] >= 0 else rem
    if price == OO[k, O_PRICE] and qty <= rem:      # a reduction keeps the order's place
        best_add(BK, tb, side, price, qty - rem)
        OO[k, O_REM] = qty
        emit(EV, st, at, tb, k, K_MODIFIED, 0, side, price, qty, qty, OO[k, O_AHEAD], row)
        return
    unlink(H, OO, BK, st, k)
    OO[k, O_STATE], OO[k, O_PRICE], OO[k, O_REM], OO[k, O_AHEAD] = O_LIVE, price, qty, -1
    emit(EV, st, at, tb, k, K_MODIFIED, 0, side, price, qty, qty, -1, row)
    enter(V, H, OO, BK, FL, EV, st, at, k, False, row)


@njit(cache=True, _nrt=False, inline="always")
def own_top(V, OO, BK, tb, side):
    """(price, shares) of a side's best with your orders: the feed's levels less the shares
    you consumed, plus your resting orders (NONE, 0: empty)."""
    sd = 2 * tb + side
    j, key = 0, np.int64(0)
    while True:
        lvl, key = level_by_rank(sd, j, key, V.sides, V.pool, V.heaps, V.hp)
        if lvl < 0 or visible(V, lvl):
            break
        j += 1
    px, qty = NONE, 0
    if lvl >= 0:
        px, qty = V.lv[lvl, LV_PRICE], shown(V, lvl)
    own_best(OO, BK, tb)
    p, q = BK[tb, B_OWN + 2 * side], BK[tb, B_OWN + 2 * side + 1]
    if p != NONE:
        if px == NONE or (p > px if side == 0 else p < px):
            px, qty = p, q
        elif p == px:
            qty += q
    return px, qty


@njit(cache=True, _nrt=False, inline="always")
def own_bbo(V, OO, BK, QB, st, at, tb):
    """A bbo_with_own row when the book's best with your orders changed."""
    bp, bq = own_top(V, OO, BK, tb, 0)
    ap, aq = own_top(V, OO, BK, tb, 1)
    if bp == BK[tb, B_BID] and bq == BK[tb, B_BIDQ] and ap == BK[tb, B_ASK] and aq == BK[tb, B_ASKQ]:
        return
    BK[tb, B_BID], BK[tb, B_BIDQ], BK[tb, B_ASK], BK[tb, B_ASKQ] = bp, bq, ap, aq
    r = st[ST_NQ]
    _head(QB, r, st, at[0], at[1], at[2], tb)
    QB[r, Q_BID], QB[r, Q_BIDQ], QB[r, Q_ASK], QB[r, Q_ASKQ] = bp, bq, ap, aq
    st[ST_NQ] = r + 1


@njit(cache=True, _nrt=False)
def own_levels(OO, BK, OD, tb):
    """Refresh the cached top own levels (price, shares, orders; best first) of each side
    of book tb from its resting own orders (only the best OD.shape[1] prices are kept)."""
    if BK[tb, B_ODIRTY] == 0:
        return
    BK[tb, B_ODIRTY] = 0
    K = OD.shape[1]
    for r in range(2 * tb, 2 * tb + 2):
        for m in range(K):
            OD[r, m, OD_PX], OD[r, m, OD_QTY], OD[r, m, OD_N] = NONE, 0, 0
    k = BK[tb, B_HEAD]
    while k >= 0:
        side, p = OO[k, O_SIDE], OO[k, O_PRICE]
        r, key = 2 * tb + side, _key(side, p)
        m = 0
        while m < K and OD[r, m, OD_PX] != NONE and _key(side, OD[r, m, OD_PX]) > key:
            m += 1
        if m < K:
            if OD[r, m, OD_PX] != p:
                for x in range(K - 1, m, -1):
                    copy_row(OD[r, x], OD[r, x - 1])
                OD[r, m, OD_PX], OD[r, m, OD_QTY], OD[r, m, OD_N] = p, 0, 0
            OD[r, m, OD_QTY] += OO[k, O_REM]
            OD[r, m, OD_N] += 1
        k = OO[k, O_NEXT]


@njit(cache=True, _nrt=False, inline="always")
def own_depth(V, OO, BK, OD, DL, DQ, st, at, tb):
    """A depth_with_own row when the top levels with your orders changed: the feed's
    visible levels (shares less the consumed ones) merged with your resting orders' levels
    (shares and orders added where the prices meet)."""
    own_levels(OO, BK, OD, tb)
    K = OD.shape[1]
    r = st[ST_ND]
    same = True
    w = D_HEAD
    for side in range(2):
        sd = 2 * tb + side
        j, m, key = 0, 0, np.int64(0)
        lvl, key = level_by_rank(sd, j, key, V.sides, V.pool, V.heaps, V.hp)
        for _ in range(K):
            while lvl >= 0 and not visible(V, lvl):
                j += 1
                lvl, key = level_by_rank(sd, j, key, V.sides, V.pool, V.heaps, V.hp)
            fk = key if lvl >= 0 else NONE
            ok = _key(side, OD[sd, m, OD_PX]) if m < K and OD[sd, m, OD_PX] != NONE else NONE
            px, q, c = -1, -1, 0
            if fk != NONE and (ok == NONE or fk >= ok):
                px, q, c = V.lv[lvl, LV_PRICE], shown(V, lvl), V.lv[lvl, LV_COUNT]
                j += 1
                lvl, key = level_by_rank(sd, j, key, V.sides, V.pool, V.heaps, V.hp)
                if ok == fk:
                    q, c = q + OD[sd, m, OD_QTY], c + OD[sd, m, OD_N]
                    m += 1
            elif ok != NONE:
                px, q, c = OD[sd, m, OD_PX], OD[sd, m, OD_QTY], OD[sd, m, OD_N]
                m += 1
            if DL[tb, w - D_HEAD] != px or DL[tb, w - D_HEAD + 1] != q or DL[tb, w - D_HEAD + 2] != c:
                same = False
            DQ[r, w], DQ[r, w + 1], DQ[r, w + 2] = px, q, c
            w += 3
    if same:
        return
    copy_row(DL[tb], DQ[r, D_HEAD:])
    _head(DQ, r, st, at[0], at[1], at[2], tb)
    st[ST_ND] = r + 1


@njit(cache=True, _nrt=False)
def with_own(V, OO, BK, QB, OD, DL, DQ, st, at, tb, want):
    """The with-own rows asked for (``want``: W_BBO, W_DEPTH bits) after a change of book tb."""
    if want & W_BBO:
        own_bbo(V, OO, BK, QB, st, at, tb)
    if want & W_DEPTH:
        own_depth(V, OO, BK, OD, DL, DQ, st, at, tb)


@njit(cache=True, _nrt=False, inline="always")
def _room(V, H, BK, FL, EV, QB, DQ, st, tb):
    """0, or what must grow before the next instruction or event of book tb."""
    if 2 * st[ST_USED] + 8 > H.shape[0]:
        return ROOM_HASH
    levels = max(V.sides[2 * tb, 1] + V.sides[2 * tb, 3], V.sides[2 * tb + 1, 1] + V.sides[2 * tb + 1, 3])
    need = levels + 2 * BK[tb, B_RESTING] + 8
    if FL.shape[0] - st[ST_NF] < need or EV.shape[0] - st[ST_NE] < 2 * need or QB.shape[0] - st[ST_NQ] < 2 \
            or DQ.shape[0] - st[ST_ND] < 2:
        return ROOM_OUT
    return 0


@njit(cache=True, _nrt=False)
def start(V, H, OO, BK, QB, OD, DL, DQ, FL, EV, st, tb, seq, want, at):
    """Continuous trading of book tb starts before feed record seq: ``open_cross`` at the
    start's time, then the with-own rows."""
    at[0], at[1], at[2] = seq, 0, BK[tb, B_CFROM]
    open_cross(V, H, OO, BK, FL, EV, st, at, tb)
    with_own(V, OO, BK, QB, OD, DL, DQ, st, at, tb, want)


@njit(cache=True, _nrt=False, inline="always")
def pending(INS, MID, V, H, OO, BK, FL, EV, QB, OD, DL, DQ, st, tb, t, seq, want, at):
    """Mid probes and own instructions of book tb that come before a feed event at time t
    (arrival < t; t = END_SEQ: all). Returns 0, or the room it needs for the next one.
    (Called for most feed events: the arrays one by one, measured faster than the named
    tuples passed on.)"""
    end = BK[tb, B_END]
    while BK[tb, B_PROBE] < end and INS[BK[tb, B_PROBE], I_PROBE] < t:
        q = BK[tb, B_PROBE]
        MID[q, 2], MID[q, 3], MID[q, 5] = feed_best(V, 2 * tb), feed_best(V, 2 * tb + 1), seq
        BK[tb, B_PROBE] = q + 1
    while BK[tb, B_NEXT] < end and INS[BK[tb, B_NEXT], I_ARR] < t:
        room = _room(V, H, BK, FL, EV, QB, DQ, st, tb)
        if room:
            return room
        q = BK[tb, B_NEXT]
        if opens(BK, tb, INS[q, I_ARR]):
            start(V, H, OO, BK, QB, OD, DL, DQ, FL, EV, st, tb, seq, want, at)
            room = _room(V, H, BK, FL, EV, QB, DQ, st, tb)
            if room:
                return room
        at[0], at[1], at[2] = seq, 0, INS[q, I_ARR]
        instruction(q, INS, MID, V, H, OO, BK, FL, EV, st, at)
        with_own(V, OO, BK, QB, OD, DL, DQ, st, at, tb, want)
        BK[tb, B_NEXT] = q + 1
    return 0


@njit(cache=True, _nrt=False, inline="always")
def note_print(B, e, tb):
    """A print changes nothing (prints come only with the trades table for some formats),
    but one naming a live order at its price reports that order's fill (Databento F, then
    a C removes the shares): noted for that cancel."""
    if e[EV_REF] != 0:
        a = find(B, tb, e[EV_REF])
        if a != -1:
            lvl, _have = entry_at(a, B.pages, B.ov_val)
            if B.lv[lvl, LV_PRICE] == e[EV_PRICE]:
                B.qn[node_of(a, B.pnode, B.ovnode), QN_PRINTED] += e[EV_SHARES]


@njit(cache=True, _nrt=False)
def sim_events(ev, n, tmap, books, rows, want, at):
    """Events ev[st[ST_POS]:n] of a batch (``books``: an OwnBooks; ``rows``: a WithOwn);
    returns (status, room kind). ``want``: the with-own tables to write (W_BBO, W_DEPTH
    bits); ``at`` (3 int64): scratch for the key of the rows being written."""
    B, H, INS, MID, OO, BK, FL, EV, st = books
    QB, OD, DL, DQ = rows
    V = levels_of(B)
    for i in range(st[ST_POS], n):
        b = ev[i, EV_BOOK]
        if b >= tmap.shape[0] or tmap[b] < 0:
            continue
        tb = tmap[b]
        if ev[i, EV_ACTION] & 0xFF == ACT_PRINT:
            note_print(B, ev[i], tb)
            continue
        st[ST_POS] = i
        t, seq = ev[i, EV_TIME], ev[i, EV_SEQ]
        room = 0
        if BK[tb, B_PROBE] < BK[tb, B_END] or BK[tb, B_NEXT] < BK[tb, B_END]:     # own instructions to come
            room = pending(INS, MID, V, H, OO, BK, FL, EV, QB, OD, DL, DQ, st, tb, t, seq, want, at)
        if room == 0 and opens(BK, tb, t):
            room = _room(V, H, BK, FL, EV, QB, DQ, st, tb)
            if room == 0:
                start(V, H, OO, BK, QB, OD, DL, DQ, FL, EV, st, tb, seq, want, at)
        if room == 0:
            room = _room(V, H, BK, FL, EV, QB, DQ, st, tb)
        if room == 0:
            room = shadow_room(B, tb, ev[i])
        if room:
            return NEED_ROOM, room
        at[0], at[1], at[2] = seq, 1, t
        feed_event(ev[i], B, H, OO, BK, FL, EV, st, at, tb)
        BK[tb, B_TIME] = t
        if want and not ev[i, EV_ACTION] & DEFER:
            with_own(V, OO, BK, QB, OD, DL, DQ, st, at, tb, want)
    st[ST_POS] = n
    return OK, 0


@njit(cache=True, _nrt=False)
def sim_finish(books, rows, want, day_end, at):
    """After the feed's last record: the instructions still to come, then (``day_end``) DAY
    orders expire. Books the feed never showed (B_SEEN 0) are left to the driver."""
    B, H, INS, MID, OO, BK, FL, EV, st = books
    QB, OD, DL, DQ = rows
    V = levels_of(B)
    for tb in range(st[ST_POS], BK.shape[0]):
        st[ST_POS] = tb
        if BK[tb, B_SEEN] == 0:
            continue
        room = pending(INS, MID, V, H, OO, BK, FL, EV, QB, OD, DL, DQ, st, tb, END_SEQ, END_SEQ, want, at)
        if room:
            return NEED_ROOM, room
        if not day_end:
            continue
        if EV.shape[0] - st[ST_NE] < BK[tb, B_RESTING] + 1 or QB.shape[0] - st[ST_NQ] < 2 \
                or DQ.shape[0] - st[ST_ND] < 2:
            return NEED_ROOM, ROOM_OUT
        last = BK[tb, B_TIME]
        if BK[tb, B_END] > BK[tb, B_INS]:
            last = max(last, INS[BK[tb, B_END] - 1, I_ARR])
        at[0], at[1], at[2] = END_SEQ, 1, last
        k = BK[tb, B_HEAD]
        while k >= 0:
            nxt = OO[k, O_NEXT]
            if OO[k, O_TIF] == TIF_DAY:
                rem = OO[k, O_REM]
                unlink(H, OO, BK, st, k)
                OO[k, O_STATE], OO[k, O_REM] = O_DONE, 0
                emit(EV, st, at, tb, k, K_EXPIRED, R_SESSION_END, OO[k, O_SIDE], OO[k, O_PRICE], rem, 0, -1, -1)
            k = nxt
        with_own(V, OO, BK, QB, OD, DL, DQ, st, at, tb, want)
    st[ST_POS] = BK.shape[0]
    return OK, 0


@njit(cache=True, _nrt=False)
def side_levels(B, sd, out):
    """The best out.shape[0] levels of book side sd into out (price, feed shares, orders),
    best first; returns how many there are."""
    j, key = 0, np.int64(0)
    while j < out.shape[0]:
        lvl, key = level_by_rank(sd, j, key, B.sides, B.pool, B.heaps, B.hp)
        if lvl < 0:
            break
        out[j, 0], out[j, 1], out[j, 2] = B.lv[lvl, LV_PRICE], B.lv[lvl, LV_QTY], B.lv[lvl, LV_COUNT]
        j += 1
    return j


@njit(cache=True, _nrt=False, inline="always")
def top_level(B, sd):
    """(price, feed shares) of book side sd's best level (NONE, 0: empty)."""
    n = B.sides[sd, 1]
    if n == 0:
        return NONE, np.int64(0)
    lvl = B.pool[B.sides[sd, 0] + n - 1, 1]
    return B.lv[lvl, LV_PRICE], B.lv[lvl, LV_QTY]
