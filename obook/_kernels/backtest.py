"""The closed-loop backtest: feed events, a strategy and its orders in one time order (numba).

``bt_events`` walks a batch of normalized events (obook._kernels.layout) of the books the
strategy trades (``tmap[book] >= 0``). Before each event it runs what is due before it, in
time order: own instructions reaching the venue (arrival < event time, as in the
own-order simulation: a feed record at the same time comes first), then what reaches the
strategy (a feed event's delivery after the feed latency, an order response after the
response latency, a timer), each a strategy call. The exchange side is the simulation's
shadow book (obook._kernels.simulate: queues, fills, consumed liquidity); the strategy sees
a second shadow of the books that applies each event at its delivery time (with a zero feed
latency, the exchange shadow itself, right after the event).

A compiled strategy ``fn(call, lo, refkey, state, out) -> n`` is called in the loop through
its C entry's address (``fn``, an int64: obook.backtest.entry), so the kernels' cached
machine code serves every strategy and every process; for a Python strategy (``fn`` 0,
``compiled`` 0) the kernel stops with CALL and the driver calls it, sends
its orders (``bt_send``) and calls the kernel again. Kernels never raise: NEED_ROOM asks
the driver to grow a buffer (S[S_CALL] says which) and call again; STOP says a compiled
strategy's call failed (it raised, or returned what cannot be sent: S[S_ERR] says why).
"""

from collections import namedtuple

import numpy as np
from .ccall import call_strategy
from .jit import njit

from .layout import DEFER, EV_ACTION, EV_BOOK, EV_PRICE, EV_SEQ, EV_SHARES, EV_TIME, ACT_PRINT
from .simulate import (OwnBooks, copy_row, emit, feed_best, feed_event, in_auction, instruction, levels_of,
                       note_print, open_cross, opens, shadow_room, shown, top_level, unlink)
from .book import LV_PRICE, level_by_rank
from .simulate_layout import (B_CFROM, B_HEAD, B_RESTING, B_SEEN, B_SEQ, B_TIME, E_KIND, E_KEY, E_PRICE, E_QTY, E_REASON,
                              E_REM, E_ROW, E_SIDE, F_PRICE, F_TAKER, I_ACT, I_ARR, I_HAS_PRICE,
                              I_KEY, I_MARKET, I_PRICE, I_PROBE, I_QTY, I_REASON, I_ROW, I_SIDE, I_TB, I_TIF,
                              K_EXPIRED, K_FILLED, K_MODIFIED, K_PARTIAL, K_QUEUE, K_REJECTED,
                              NONE, O_DONE, O_NEVER, O_NEXT, O_PRICE, O_REF, O_REM, O_RESTING, O_SIDE, O_STATE,
                              O_TIF, OP_CANCEL, OP_MODIFY, OP_NEW, R_DUPLICATE_ID, R_FOK, R_NOT_LIVE, R_SESSION_END,
                              ST_COUNT, ST_NE, ST_NF, ST_USED, TIF_DAY, TIF_FOK, TIF_GTC)
from .backtest_layout import (C_ASK, C_ASKQ, C_BID, C_BIDQ, C_EVENT, C_FILL_PX, C_KEY, C_KIND, C_POS,
                              C_PRICE, C_QTY, C_REASON, C_REF, C_REM, C_SEQ, C_TAKER, C_TB, C_TIME,
                              C_RAISED, CALL, CALL_BOOK, CALL_ORDER, CALL_TIMER, ERR_ACT, ERR_COLUMN,
                              ERR_COUNT, ERR_MARKET, ERR_POST, ERR_PRICE, ERR_RAISED, ERR_SIDE, ERR_TB, ERR_TIF,
                              LAG_DUE, LAG_TOP, LAT_FEED, LAT_ORDER,
                              LAT_RESPONSE, LM_CONST, LM_DRAWS, LO_DONE, LO_FILLED, LO_OPEN, LO_PENDING,
                              LO_PRICE, LO_REF, LO_REM, LO_SIDE, LO_STATE, LO_TB, M_ASK, M_BID, M_SEQ,
                              M_TB, M_TIME, MAX_PRICE, NEED_ROOM, OK, OUT_ROWS, Q_ACT, Q_MARKET, Q_ORIG, Q_POST,
                              Q_PRICE, Q_QTY, Q_REF, Q_SIDE, Q_TB, Q_TIF, R_DUE, R_FILL_PX, R_KEY, R_KIND,
                              R_POST_ONLY, R_PRICE, R_QTY, R_REASON, R_REM, R_ROW, R_SIDE, R_TAKER, R_TIME,
                              RISK_BAND, RISK_NO_PRICE, RISK_NOTIONAL, RISK_RATE, RISK_SIZE, ROOM_HASH,
                              ROOM_INS, ROOM_KEYS, ROOM_LAG, ROOM_MARKS, ROOM_OUT, ROOM_RQ, ROOM_SHADOW,
                              ROOM_VHASH, ROOM_VSHADOW, S_CALL, S_CALLS, S_COMPILED, S_DRAW0, S_FINISH, S_IMM,
                              S_ERR, S_ERR_ROW, S_ERR_VAL, S_INS_HEAD, S_INS_TAIL, S_LAG_HEAD, S_LAG_TAIL,
                              S_LAST_ARR, S_LAST_FEED,
                              S_LAST_RESP, S_MARK_NEXT, S_MARK_PERIOD, S_NEXT_SEQ, S_NKEY, S_NM, S_NOW,
                              S_NBOOKS, S_PHASE, S_POS, S_REFUSED, S_RQ_HEAD, S_RQ_TAIL, S_SUB, S_TIMER_NEXT,
                              S_TIMER_PERIOD, S_TMAX, S_WIN_HEAD, S_WIN_N, S_ZERO_FEED, SEND_FIELDS,
                              STOP, SUB_BBO, SUB_BOOK, SUB_ORDERS, SUB_TIMER, X_ORIG, X_POST, X_REF, X_REFUSED,
                              X_SEND)

#: the strategy's delayed view of its books (a second shadow book, its own price lists, the
#: tops a compiled strategy's view shows (per book side: price, shares; shares -1: empty),
#: tracked books, counters); with a zero feed latency unused
View = namedtuple("View", ("Bv", "Hv", "VT", "BKv", "stv"))
#: the run's queues and rows besides the books: responses due, the view's lag queue, marks,
#: the strategy's orders, their refs' keys, positions, the last tops shown, the run's
#: counters and state (S_*), the call row
Run = namedtuple("Run", ("RQ", "LAG", "MK", "LO", "REFKEY", "PL", "TOPS", "S", "C"))
#: the latency models (kinds, feed / order / response draws) and the risk gate's limits and window
Gate = namedtuple("Gate", ("LM", "LA", "LB", "RK", "W"))

FOREVER = 1 << 62
LAZY_BATCH = 1024       # feed events a lazy view queues before it applies the past ones


# ---------------------------------------------------------------- latency


@njit(cache=True, _nrt=False, inline="always")
def lat_of(kind, t, LM, LA, LB, S):
    """The latency of ``kind`` (LAT_FEED, LAT_ORDER, LAT_RESPONSE) for a message sent at t:
    a constant, the next of the seeded draws, or the recorded table interpolated at t."""
    mode, m = LM[kind, 0], LM[kind, 1]
    if mode == LM_CONST:
        return LB[kind, 0]
    if mode == LM_DRAWS:
        c = S[S_DRAW0 + kind]
        S[S_DRAW0 + kind] = c + 1
        return LB[kind, c % m]
    if t <= LA[kind, 0]:
        return LB[kind, 0]
    if t >= LA[kind, m - 1]:
        return LB[kind, m - 1]
    lo, hi = 0, m - 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if LA[kind, mid] <= t:
            lo = mid
        else:
            hi = mid
    t0, t1, v0, v1 = LA[kind, lo], LA[kind, hi], LB[kind, lo], LB[kind, hi]
    return v0 + (v1 - v0) * (t - t0) // (t1 - t0)


# ---------------------------------------------------------------- the risk gate (compiled strategies)


@njit(cache=True, _nrt=False)
def risk_check(RK, W, S, act, side, qty, price, market, bid, ask, now):
    """obook.live.risk.RiskGate's checks (RK: max_qty, max_notional, max orders a second,
    band_bps, the feed's time units a second) on a sliding window of sent times W."""
    cap = W.shape[0]
    while S[S_WIN_N] > 0 and W[S[S_WIN_HEAD]] <= now - RK[4]:
        S[S_WIN_HEAD] = (S[S_WIN_HEAD] + 1) % cap
        S[S_WIN_N] -= 1
    if S[S_WIN_N] >= RK[2]:
        return RISK_RATE
    if act != OP_CANCEL:
        if qty <= 0 or qty > RK[0]:
            return RISK_SIZE
        best = bid if side == 0 else ask
        if best == NONE:
            best = ask if side == 0 else bid
        px = price
        if market:
            px = ask if side == 0 else bid
            if px == NONE:
                px = best
        if px != NONE and px > 0 and qty > RK[1] // px:      # qty * px > max_notional, in 64 bits
            return RISK_NOTIONAL
        if best == NONE:
            return RISK_NO_PRICE
        if not market and abs(price - best) > RK[3] * best // 10_000:     # beyond band_bps of best
            return RISK_BAND
    W[(S[S_WIN_HEAD] + S[S_WIN_N]) % cap] = now
    S[S_WIN_N] += 1
    return 0


# ---------------------------------------------------------------- sending (both paths)


@njit(cache=True, _nrt=False, inline="always")
def pending(LO, INS, key, q, price):
    """The strategy's record of order key: the new order of instruction row q, pending at
    ``price``."""
    LO[key, LO_STATE], LO[key, LO_SIDE], LO[key, LO_PRICE] = LO_PENDING, INS[q, I_SIDE], price
    LO[key, LO_REM], LO[key, LO_FILLED], LO[key, LO_TB], LO[key, LO_REF] = INS[q, I_QTY], 0, INS[q, I_TB], INS[q, X_REF]


@njit(cache=True, _nrt=False, inline="always")
def named_ref(INS, q, S):
    """The ref cancel or replace row q names, as its key was found when it was sent: a
    replace's orig (a compiled strategy's Q_ORIG when above 0: run_compiled; a Python
    strategy's when not 0: obook.backtest.worker), else its ref (a cancel's always)."""
    ref, orig = INS[q, X_REF], INS[q, X_ORIG]
    if INS[q, I_ACT] != OP_MODIFY:
        return ref
    if S[S_COMPILED]:
        return orig if orig > 0 else ref
    return orig if orig != 0 else ref


@njit(cache=True, _nrt=False)
def bt_queue(INS, LO, S, LM, LA, LB):
    """Queue the instruction written at the tail of INS (S[S_INS_TAIL]: its SEND_FIELDS, the
    rest zero; sent at local time X_SEND): it reaches the venue ``order latency`` later,
    never before an earlier one (one session, in order). A refused one (risk gate) is only
    logged. A new order whose ref's order is pending or open leaves that order's record as it
    is (the venue rejects it as a duplicate id, unless that order is turned away whole first:
    deliver). A replace renames the record only when the venue accepts it (deliver).
    Returns its row."""
    q = S[S_INS_TAIL]
    act, key, side, tb, ref = INS[q, I_ACT], INS[q, I_KEY], INS[q, I_SIDE], INS[q, I_TB], INS[q, X_REF]
    market, price = INS[q, I_MARKET], INS[q, I_PRICE]
    INS[q, I_ROW] = q + 1
    kept = act == OP_NEW and (LO[key, LO_STATE] == LO_PENDING or LO[key, LO_STATE] == LO_OPEN)
    INS[q, I_HAS_PRICE] = 0 if (market or (act == OP_MODIFY and price < 0)) else 1
    if market:
        INS[q, I_PRICE] = -1
    if INS[q, X_REFUSED]:
        INS[q, I_ARR] = -1
        if act == OP_NEW and not kept:      # never sent: finished for the strategy at once
            LO[key, LO_STATE], LO[key, LO_SIDE], LO[key, LO_PRICE] = LO_DONE, side, price
            LO[key, LO_REM], LO[key, LO_FILLED], LO[key, LO_TB], LO[key, LO_REF] = 0, 0, tb, ref
    else:
        now = INS[q, X_SEND]
        arr = max(now + lat_of(LAT_ORDER, now, LM, LA, LB, S), S[S_LAST_ARR])
        S[S_LAST_ARR] = arr
        INS[q, I_ARR] = arr
        INS[q, I_PROBE] = arr
        if act == OP_NEW and not kept:
            pending(LO, INS, key, q, price)
    S[S_INS_TAIL] = q + 1
    return q


@njit(cache=True, _nrt=False)
def bt_send(INS, LO, S, LM, LA, LB, X):
    """Queue an order of a Python strategy: its fields ``X`` (SEND_FIELDS, in that order)
    written at the tail of INS, then ``bt_queue``. Returns its row."""
    q = S[S_INS_TAIL]
    INS[q, :] = 0
    for i in range(len(SEND_FIELDS)):
        INS[q, SEND_FIELDS[i]] = X[i]
    return bt_queue(INS, LO, S, LM, LA, LB)


# ---------------------------------------------------------------- the exchange side


@njit(cache=True, _nrt=False)
def respond(EV, FL, RQ, st, S, LM, LA, LB, e0, f0, x):
    f = f0
    for r in range(e0, st[ST_NE]):
        kind = EV[r, E_KIND]
        if kind == K_QUEUE:
            continue
        q = S[S_RQ_TAIL]
        due = max(x + lat_of(LAT_RESPONSE, x, LM, LA, LB, S), S[S_LAST_RESP])
        S[S_LAST_RESP] = due
        RQ[q, R_DUE], RQ[q, R_KEY], RQ[q, R_KIND], RQ[q, R_REASON] = due, EV[r, E_KEY], kind, EV[r, E_REASON]
        RQ[q, R_SIDE], RQ[q, R_PRICE], RQ[q, R_QTY], RQ[q, R_REM] = EV[r, E_SIDE], EV[r, E_PRICE], EV[r, E_QTY], EV[r, E_REM]
        RQ[q, R_FILL_PX], RQ[q, R_TAKER], RQ[q, R_TIME], RQ[q, R_ROW] = 0, 0, x, EV[r, E_ROW]
        if kind == K_FILLED or kind == K_PARTIAL:
            RQ[q, R_FILL_PX], RQ[q, R_TAKER] = FL[f, F_PRICE], FL[f, F_TAKER]
            f += 1
        S[S_RQ_TAIL] = q + 1


@njit(cache=True, _nrt=False)
def mark(MK, S, B, tb, t, st):
    """A mark row: the exchange book's best bid and ask of book tb at time t (M_SEQ: the
    fill and event rows written before it, which orders it among the fills)."""
    r = S[S_NM]
    MK[r, M_TIME], MK[r, M_TB], MK[r, M_SEQ] = t, tb, st[ST_COUNT]
    MK[r, M_BID], MK[r, M_ASK] = feed_best(B, 2 * tb), feed_best(B, 2 * tb + 1)
    S[S_NM] = r + 1


@njit(cache=True, _nrt=False)
def arrive(q, INS, MID, V, H, OO, BK, FL, EV, st, RQ, MK, S, LM, LA, LB, at):
    """Instruction q reaches the venue (post-only: rejected when it would take liquidity; a
    cancel or replace naming a ref that a replace accepted before moved on from: rejected,
    the order not live under that ref, as the live venue answers)."""
    e0, f0 = st[ST_NE], st[ST_NF]
    tb, k = INS[q, I_TB], INS[q, I_KEY]
    x = INS[q, I_ARR]
    at[0], at[1], at[2] = S[S_NEXT_SEQ], 0, x
    crossed = False
    if INS[q, X_POST] and INS[q, I_ACT] == OP_NEW and OO[k, O_STATE] == 0 and not INS[q, I_MARKET] \
            and not in_auction(BK, tb, x):      # (in a call auction nothing takes liquidity)
        side, price = INS[q, I_SIDE], INS[q, I_PRICE]
        osd = 2 * tb + 1 - side
        j, key = 0, np.int64(0)
        while True:
            lvl, key = level_by_rank(osd, j, key, V.sides, V.pool, V.heaps, V.hp)
            if lvl < 0 or shown(V, lvl) > 0:
                break
            j += 1
        if lvl >= 0:
            lp = V.lv[lvl, LV_PRICE]
            crossed = lp <= price if side == 0 else lp >= price
        if crossed:     # turned away whole, never accepted: its id stays free (as a rejected FOK's)
            emit(EV, st, at, tb, k, K_REJECTED, R_POST_ONLY, side, price, INS[q, I_QTY], 0, -1, INS[q, I_ROW])
    act, was = INS[q, I_ACT], OO[k, O_STATE]
    if act != OP_NEW and was == O_RESTING and named_ref(INS, q, S) != OO[k, O_REF]:
        INS[q, I_REASON] = R_NOT_LIVE       # a replace accepted before renamed the order: its old ref names none
    if not crossed:
        instruction(q, INS, MID, V, H, OO, BK, FL, EV, st, at)
    if (act == OP_NEW and was == O_NEVER) or (act == OP_MODIFY and was == O_RESTING and INS[q, I_REASON] == 0):
        OO[k, O_REF] = INS[q, X_REF]        # the ref the venue knows the order by from now on
    n_fills = st[ST_NF] - f0
    respond(EV, FL, RQ, st, S, LM, LA, LB, e0, f0, x)
    if n_fills > 0:
        mark(MK, S, V, tb, x, st)


@njit(cache=True, _nrt=False)
def open_book(B, H, OO, BK, FL, EV, st, RQ, MK, S, LM, LA, LB, at, tb):
    """Continuous trading of book tb starts: the resting orders through the other side take
    it (obook._kernels.simulate.open_cross), their responses queued."""
    e0, f0 = st[ST_NE], st[ST_NF]
    x = BK[tb, B_CFROM]
    at[0], at[1], at[2] = S[S_NEXT_SEQ], 0, x
    open_cross(levels_of(B), H, OO, BK, FL, EV, st, at, tb)
    respond(EV, FL, RQ, st, S, LM, LA, LB, e0, f0, x)
    if st[ST_NF] > f0:
        mark(MK, S, B, tb, x, st)


# ---------------------------------------------------------------- the strategy side


@njit(cache=True, _nrt=False, inline="always")
def view_top(B, Bv, VT, S, sd):
    """(price, feed shares) of book side sd's best as the strategy sees it (NONE, 0: empty):
    with a zero feed latency the exchange's book, else a compiled strategy's recorded top
    or a Python strategy's view book."""
    if S[S_ZERO_FEED]:
        return top_level(B, sd)
    if S[S_COMPILED]:
        if VT[sd, 1] < 0:
            return NONE, np.int64(0)
        return VT[sd, 0], VT[sd, 1]
    return top_level(Bv, sd)


@njit(cache=True, _nrt=False)
def top_of(B, Bv, VT, S, tb, C):
    """The view's best bid and ask (feed shares) of book tb into the call row."""
    for side in range(2):
        px, q = view_top(B, Bv, VT, S, 2 * tb + side)
        C[C_BID + 2 * side], C[C_BIDQ + 2 * side] = px, q


@njit(cache=True, _nrt=False, inline="always")
def renamed_away(RQ, LO, INS, S, q):
    """Response q rejects a cancel or replace as not live that names a ref other than its
    order's record's: a replace the venue accepted before renamed the order (or the replace
    whose new ref it names was rejected)."""
    row = RQ[q, R_ROW]
    return (RQ[q, R_KIND] == K_REJECTED and RQ[q, R_REASON] == R_NOT_LIVE and row >= 1
            and INS[row - 1, I_ACT] != OP_NEW and named_ref(INS, row - 1, S) != LO[RQ[q, R_KEY], LO_REF])


@njit(cache=True, _nrt=False)
def deliver(RQ, LO, PL, INS, S, q):
    """Response q reaches the strategy: its local order table and position follow (not on
    the rejection of a duplicate id: the record is the live or finished order's of that ref,
    unless it is the rejected order's own, still pending). A replace's new ref names the
    record from the venue's acceptance on (its modified response). A pending order turned
    away whole (FOK, post-only) frees its ref: the next new order of that ref sent after it
    (then rejected as a duplicate no more) is the record, pending. The rejection of a cancel
    or replace naming a ref the order no longer has (renamed_away) leaves the record as it is."""
    k, kind, row = RQ[q, R_KEY], RQ[q, R_KIND], RQ[q, R_ROW]
    was = LO[k, LO_STATE]
    if kind == K_REJECTED and RQ[q, R_REASON] == R_DUPLICATE_ID and was != LO_PENDING:
        return
    if renamed_away(RQ, LO, INS, S, q):
        return
    if kind == K_MODIFIED and row >= 1 and INS[row - 1, I_ACT] == OP_MODIFY:
        LO[k, LO_REF] = INS[row - 1, X_REF]
    if kind == K_FILLED or kind == K_PARTIAL:
        f = RQ[q, R_QTY]
        LO[k, LO_FILLED] += f
        PL[LO[k, LO_TB]] += f if RQ[q, R_SIDE] == 0 else -f
    LO[k, LO_REM] = RQ[q, R_REM]
    if RQ[q, R_PRICE] >= 0:
        LO[k, LO_PRICE] = RQ[q, R_PRICE]
    if RQ[q, R_REM] == 0 and kind != K_MODIFIED:        # (modified to 0 shares it is a cancel)
        LO[k, LO_STATE] = LO_DONE
    elif kind == K_REJECTED:
        if LO[k, LO_STATE] == LO_PENDING:
            LO[k, LO_STATE] = LO_DONE
    elif LO[k, LO_STATE] != LO_DONE:
        LO[k, LO_STATE] = LO_OPEN
    if kind == K_REJECTED and was == LO_PENDING and row >= 1 and (
            RQ[q, R_REASON] == R_FOK or RQ[q, R_REASON] == R_POST_ONLY):
        for j in range(row, S[S_INS_TAIL]):
            if INS[j, I_KEY] == k and INS[j, I_ACT] == OP_NEW and INS[j, X_REFUSED] == 0:
                pending(LO, INS, k, j, INS[j, I_PRICE])
                break


@njit(cache=True, _nrt=False)
def call_row(C, kind, now, tb, B, Bv, VT, PL, S):
    C[:] = 0
    C[C_KIND], C[C_TIME], C[C_TB], C[C_SEQ] = kind, now, tb, S[S_NEXT_SEQ]
    top_of(B, Bv, VT, S, tb, C)
    C[C_POS] = PL[tb]


@njit(cache=True, _nrt=False)
def order_call(C, RQ, LO, INS, S, q):
    """Response q in the call row, under its order's ref (a rejection renamed_away: the ref
    its instruction named)."""
    k = RQ[q, R_KEY]
    C[C_KEY], C[C_EVENT], C[C_REASON], C[C_PRICE] = k, RQ[q, R_KIND], RQ[q, R_REASON], RQ[q, R_PRICE]
    C[C_QTY], C[C_REM], C[C_FILL_PX], C[C_TAKER], C[C_REF] = RQ[q, R_QTY], RQ[q, R_REM], RQ[q, R_FILL_PX], RQ[q, R_TAKER], LO[k, LO_REF]
    if renamed_away(RQ, LO, INS, S, q):
        C[C_REF] = named_ref(INS, RQ[q, R_ROW] - 1, S)


@njit(cache=True, _nrt=False)
def bad_row(OUT, i, nb, tb):
    """0, or the ERR_* of order row i's first column out of range (nb: the books traded)."""
    act = OUT[i, Q_ACT]
    if act != OP_NEW and act != OP_MODIFY and act != OP_CANCEL:
        return ERR_ACT
    if tb < 0 or tb >= nb:
        return ERR_TB
    if act == OP_CANCEL:
        return 0
    if act == OP_NEW and OUT[i, Q_SIDE] != 0 and OUT[i, Q_SIDE] != 1:
        return ERR_SIDE
    if OUT[i, Q_TIF] < TIF_GTC or OUT[i, Q_TIF] > TIF_FOK:
        return ERR_TIF
    if OUT[i, Q_MARKET] != 0 and OUT[i, Q_MARKET] != 1:
        return ERR_MARKET
    if OUT[i, Q_POST] != 0 and OUT[i, Q_POST] != 1:
        return ERR_POST
    price = OUT[i, Q_PRICE]
    if not OUT[i, Q_MARKET] and (price > MAX_PRICE or (price < 0 and act == OP_NEW)):
        return ERR_PRICE        # (a replace's price below 0 keeps the order's price)
    return 0


@njit(cache=True, _nrt=False)
def stop(S, err, row, value):
    """A compiled strategy's call failed: STOP, with why (S_ERR, S_ERR_ROW, S_ERR_VAL)."""
    S[S_ERR], S[S_ERR_ROW], S[S_ERR_VAL] = err, row, value
    return STOP


@njit(cache=True, _nrt=False)
def run_compiled(fn, C, LO, REFKEY, state, OUT, INS, S, LM, LA, LB, RK, W):
    """Call a compiled strategy (``fn``: its C entry's address) and send what it returns
    (each order through the risk gate). ``fn`` 0: a Python strategy's run, nothing to call.
    Returns OK, or STOP: the strategy raised, returned a count outside 0..OUT_ROWS, or an
    order row with a column out of range (the rows before it are sent)."""
    if fn == 0:
        return OK
    S[S_CALLS] += 1
    n = call_strategy(fn, C, LO, REFKEY, state, OUT)
    if C[C_RAISED]:
        return stop(S, ERR_RAISED, 0, 0)
    if n < 0 or n > OUT.shape[0]:
        return stop(S, ERR_COUNT, 0, n)
    now = C[C_TIME]
    for i in range(n):
        act, ref = OUT[i, Q_ACT], OUT[i, Q_REF]
        tb = C[C_TB] if OUT[i, Q_TB] == -1 else OUT[i, Q_TB]
        err = bad_row(OUT, i, S[S_NBOOKS], tb)
        if err:
            return stop(S, err, i, tb if err == ERR_TB else OUT[i, ERR_COLUMN[err]])
        if act == OP_NEW:
            if ref < 0 or ref >= REFKEY.shape[0] or REFKEY[ref] >= 0:
                S[S_REFUSED] += 1
                continue
            key = S[S_NKEY]
            S[S_NKEY] = key + 1
            REFKEY[ref] = key
        else:       # a replace names its Q_ORIG (above 0), a cancel its Q_REF whatever its Q_ORIG holds
            named = OUT[i, Q_ORIG] if act == OP_MODIFY and OUT[i, Q_ORIG] > 0 else ref
            if named < 0 or named >= REFKEY.shape[0] or REFKEY[named] < 0:
                S[S_REFUSED] += 1
                continue
            key = REFKEY[named]
        side = OUT[i, Q_SIDE] if act == OP_NEW else LO[key, LO_SIDE]
        refused = risk_check(RK, W, S, act, side, OUT[i, Q_QTY], OUT[i, Q_PRICE], OUT[i, Q_MARKET],
                             C[C_BID], C[C_ASK], now)
        if act == OP_MODIFY and not refused:    # a replace the risk gate refused never names its new ref
            if ref != named and 0 <= ref < REFKEY.shape[0]:
                REFKEY[ref] = key
        q = S[S_INS_TAIL]
        INS[q, :] = 0
        INS[q, I_TB], INS[q, I_KEY], INS[q, I_ACT], INS[q, I_SIDE] = tb, key, act, side
        INS[q, I_QTY], INS[q, I_PRICE], INS[q, I_TIF] = OUT[i, Q_QTY], OUT[i, Q_PRICE], OUT[i, Q_TIF]
        INS[q, I_MARKET], INS[q, X_POST], INS[q, X_SEND] = OUT[i, Q_MARKET], OUT[i, Q_POST], now
        INS[q, X_REF], INS[q, X_ORIG], INS[q, X_REFUSED] = ref, OUT[i, Q_ORIG], refused
        bt_queue(INS, LO, S, LM, LA, LB)
    return OK


@njit(cache=True, _nrt=False, inline="always")
def room(B, H, Hv, BK, FL, EV, st, stv, INS, RQ, LAG, MK, LO, REFKEY, S, tb):
    """0, or what must grow before the next step of book tb (the shadow books' room for an
    event: shadow_room)."""
    if 2 * st[ST_USED] + 8 > H.shape[0]:
        return ROOM_HASH
    if 2 * stv[ST_USED] + 8 > Hv.shape[0]:
        return ROOM_VHASH
    levels = max(B.sides[2 * tb, 1] + B.sides[2 * tb, 3], B.sides[2 * tb + 1, 1] + B.sides[2 * tb + 1, 3])
    need = levels + 2 * BK[tb, B_RESTING] + 8 + OUT_ROWS
    if FL.shape[0] - st[ST_NF] < need or EV.shape[0] - st[ST_NE] < 2 * need:
        return ROOM_OUT
    if MK.shape[0] - S[S_NM] < BK.shape[0] + 2:
        return ROOM_MARKS
    if INS.shape[0] - S[S_INS_TAIL] < OUT_ROWS + 1:
        return ROOM_INS
    if RQ.shape[0] - S[S_RQ_TAIL] < 2 * need:
        return ROOM_RQ
    if LAG.shape[0] - S[S_LAG_TAIL] < 2:
        return ROOM_LAG
    if LO.shape[0] - S[S_NKEY] < OUT_ROWS + 1:
        return ROOM_KEYS
    return 0


@njit(cache=True, _nrt=False, inline="always")
def lazy_responses(S):
    """The strategy is not called on its orders' events and sees the feed later than the
    venue: its responses only matter at its next call (settle)."""
    return not S[S_ZERO_FEED] and not S[S_SUB] & SUB_ORDERS


@njit(cache=True, _nrt=False, inline="always")
def settle(RQ, LO, PL, INS, S, w):
    """Lazy responses: those due by local time w reach the strategy's order table and
    position now, in order, as they would have one by one (nothing reads them between)."""
    while S[S_RQ_HEAD] < S[S_RQ_TAIL] and RQ[S[S_RQ_HEAD], R_DUE] <= w:
        q = S[S_RQ_HEAD]
        S[S_RQ_HEAD] = q + 1
        deliver(RQ, LO, PL, INS, S, q)


@njit(cache=True, _nrt=False, inline="always")
def next_wake(RQ, LAG, S):
    """The next local time something reaches the strategy (FOREVER: nothing queued).
    Responses count only when they call the strategy or a zero feed latency orders them
    among the feed's events; otherwise they are settled when the strategy is next called."""
    w = FOREVER
    if S[S_RQ_HEAD] < S[S_RQ_TAIL] and not lazy_responses(S):
        w = RQ[S[S_RQ_HEAD], R_DUE]
    if S[S_LAG_HEAD] < S[S_LAG_TAIL] and S[S_SUB] & (SUB_BBO | SUB_BOOK):
        w = min(w, LAG[S[S_LAG_HEAD], LAG_DUE])
    if S[S_SUB] & SUB_TIMER and S[S_TIMER_NEXT] <= S[S_TMAX]:
        w = min(w, S[S_TIMER_NEXT])
    return w


@njit(cache=True, _nrt=False, inline="always")
def due_before(INS, RQ, LAG, S, t):
    """Something reaches the venue or the strategy before time t (a refused instruction,
    arrival -1, is due at once: drain skips it)."""
    h = S[S_INS_HEAD]
    if h < S[S_INS_TAIL] and INS[h, I_ARR] < t:
        return True
    return next_wake(RQ, LAG, S) < t


@njit(cache=True, _nrt=False, inline="always")
def record_top(LAG, h, B, tb):
    """The feed's best bid and ask of book tb after the event of lag row h (a side's
    shares -1: empty): all a compiled strategy's view needs of the book."""
    for side in range(2):
        px, q = top_level(B, 2 * tb + side)
        LAG[h, LAG_TOP + 2 * side], LAG[h, LAG_TOP + 2 * side + 1] = px, q if px != NONE else -1


@njit(cache=True, _nrt=False, inline="always")
def show_top(LAG, h, VT, vtb):
    """A compiled strategy's view of book vtb (one level a side) shows lag row h's top."""
    for side in range(2):
        VT[2 * vtb + side, 0], VT[2 * vtb + side, 1] = LAG[h, LAG_TOP + 2 * side], LAG[h, LAG_TOP + 2 * side + 1]


@njit(cache=True, _nrt=False)
def view_room(LAG, h, Bv, S):
    """0, or what the view needs before lag row h reaches it."""
    if S[S_COMPILED]:
        return 0
    r = shadow_room(Bv, LAG[h, LAG_DUE - 1], LAG[h, :LAG_DUE])
    return ROOM_VSHADOW + r - ROOM_SHADOW if r else 0


@njit(cache=True, _nrt=False)
def view_event(LAG, h, Bv, Hv, VT, OO, BKv, FL, EV, stv, S, at):
    """Lag row h reaches the strategy's view (room checked by view_room): a compiled
    strategy's view is the recorded top (one level a side), a Python strategy's the whole
    book (its context shows depth)."""
    vtb = LAG[h, LAG_DUE - 1]
    if S[S_COMPILED]:
        show_top(LAG, h, VT, vtb)
        return
    at[0], at[1], at[2] = LAG[h, EV_SEQ], 1, LAG[h, EV_TIME]
    feed_event(LAG[h, :LAG_DUE], Bv, Hv, OO, BKv, FL, EV, stv, at, vtb)


@njit(cache=True, _nrt=False)
def catch_up(LAG, Bv, Hv, VT, OO, BKv, FL, EV, stv, S, at, w, strict):
    """A lazy view (the strategy is not called on book changes, so its view only matters
    when it is called): apply the queued feed events delivered before local time w
    (``strict``) or by w. Returns 0, or the room the view needs first."""
    while S[S_LAG_HEAD] < S[S_LAG_TAIL]:
        h = S[S_LAG_HEAD]
        due = LAG[h, LAG_DUE]
        if due > w or (strict and due == w):
            return 0
        if 2 * stv[ST_USED] + 8 > Hv.shape[0]:
            return ROOM_VHASH
        r = view_room(LAG, h, Bv, S)
        if r:
            return r
        S[S_LAG_HEAD] = h + 1
        view_event(LAG, h, Bv, Hv, VT, OO, BKv, FL, EV, stv, S, at)
    return 0


@njit(cache=True, _nrt=False)
def still_due(INS, RQ, LAG, VT, TOPS, S, t):
    """Something is due before time t (due_before), once a compiled strategy called on BBO
    changes has been shown the lag rows due before t that call nothing (a deferred step, or a
    top it has seen), as drain would show them (nothing else due before or with them): with
    a feed latency nearly every event leaves such a row, and drain need not run for it."""
    while S[S_LAG_HEAD] < S[S_LAG_TAIL]:
        h = S[S_LAG_HEAD]
        w = LAG[h, LAG_DUE]
        if w >= t:
            break
        i = S[S_INS_HEAD]
        if i < S[S_INS_TAIL] and INS[i, I_ARR] <= w:
            return True
        if S[S_RQ_HEAD] < S[S_RQ_TAIL] and not lazy_responses(S) and RQ[S[S_RQ_HEAD], R_DUE] <= w:
            return True
        if S[S_SUB] & SUB_TIMER and S[S_TIMER_NEXT] <= S[S_TMAX] and S[S_TIMER_NEXT] < w:
            return True
        vtb = LAG[h, LAG_DUE - 1]
        if not LAG[h, EV_ACTION] & DEFER:
            for side in range(2):
                px, q = LAG[h, LAG_TOP + 2 * side], LAG[h, LAG_TOP + 2 * side + 1]
                if q < 0:
                    px, q = NONE, 0
                if TOPS[vtb, 2 * side] != px or TOPS[vtb, 2 * side + 1] != q:
                    return True
        S[S_LAG_HEAD] = h + 1
        S[S_NOW] = w
        show_top(LAG, h, VT, vtb)
    return due_before(INS, RQ, LAG, S, t)


@njit(cache=True, _nrt=False)
def view_changed(B, Bv, VT, S, tb, TOPS):
    """The view's best bid/ask of book tb differ from the last ones the strategy saw."""
    changed = False
    for side in range(2):
        px, q = view_top(B, Bv, VT, S, 2 * tb + side)
        if TOPS[tb, 2 * side] != px or TOPS[tb, 2 * side + 1] != q:
            TOPS[tb, 2 * side], TOPS[tb, 2 * side + 1] = px, q
            changed = True
    return changed


@njit(cache=True, _nrt=False)
def drain(t, tb_ev, B, H, Bv, Hv, VT, BKv, stv, INS, MID, OO, BK, FL, EV, st, RQ, LAG, MK, LO, REFKEY,
          PL, TOPS, S, C, LM, LA, LB, RK, W, fn, state, OUT, at):
    """Run what is due before a feed event at time t (instructions arriving before t,
    deliveries to the strategy before t), in time order. Returns OK, NEED_ROOM or CALL.
    (bt_events' inner steps take the arrays one by one: measured faster than the named
    tuples passed on.)"""
    while True:
        a = INS[S[S_INS_HEAD], I_ARR] if S[S_INS_HEAD] < S[S_INS_TAIL] else FOREVER
        if S[S_INS_HEAD] < S[S_INS_TAIL] and INS[S[S_INS_HEAD], X_REFUSED]:
            S[S_INS_HEAD] += 1          # refused by the risk gate: never sent
            continue
        w = next_wake(RQ, LAG, S)
        if a >= t and w >= t:
            return OK
        r = room(B, H, Hv, BK, FL, EV, st, stv, INS, RQ, LAG, MK, LO, REFKEY, S,
                 INS[S[S_INS_HEAD], I_TB] if a <= w else tb_ev)
        if r == 0 and a > w and S[S_LAG_HEAD] < S[S_LAG_TAIL] and LAG[S[S_LAG_HEAD], LAG_DUE] == w:
            r = view_room(LAG, S[S_LAG_HEAD], Bv, S)
        if r:
            S[S_CALL] = r
            return NEED_ROOM
        if a <= w:
            q = S[S_INS_HEAD]
            if opens(BK, INS[q, I_TB], a):      # then the room for the instruction again
                open_book(B, H, OO, BK, FL, EV, st, RQ, MK, S, LM, LA, LB, at, INS[q, I_TB])
                continue
            S[S_INS_HEAD] = q + 1
            arrive(q, INS, MID, levels_of(B), H, OO, BK, FL, EV, st, RQ, MK, S, LM, LA, LB, at)
            continue
        S[S_NOW] = w
        lazy = not S[S_ZERO_FEED] and not S[S_SUB] & (SUB_BBO | SUB_BOOK)
        if S[S_RQ_HEAD] < S[S_RQ_TAIL] and RQ[S[S_RQ_HEAD], R_DUE] == w:
            if lazy and S[S_SUB] & SUB_ORDERS:
                r = catch_up(LAG, Bv, Hv, VT, OO, BKv, FL, EV, stv, S, at, w, True)
                if r:
                    S[S_CALL] = r
                    return NEED_ROOM
            q = S[S_RQ_HEAD]
            S[S_RQ_HEAD] = q + 1
            deliver(RQ, LO, PL, INS, S, q)
            if S[S_SUB] & SUB_ORDERS:
                k = RQ[q, R_KEY]
                call_row(C, CALL_ORDER, w, LO[k, LO_TB], B, Bv, VT, PL, S)
                order_call(C, RQ, LO, INS, S, q)
                if not S[S_COMPILED]:
                    S[S_CALL] = CALL_ORDER
                    return CALL
                if run_compiled(fn, C, LO, REFKEY, state, OUT, INS, S, LM, LA, LB, RK, W):
                    return STOP
            continue
        if S[S_LAG_HEAD] < S[S_LAG_TAIL] and LAG[S[S_LAG_HEAD], LAG_DUE] == w:
            h = S[S_LAG_HEAD]
            S[S_LAG_HEAD] = h + 1
            vtb = LAG[h, LAG_DUE - 1]       # the lag row keeps its tracked book in EV_AUX's place
            view_event(LAG, h, Bv, Hv, VT, OO, BKv, FL, EV, stv, S, at)
            if LAG[h, EV_ACTION] & DEFER:
                continue
            if S[S_SUB] & SUB_BOOK or (S[S_SUB] & SUB_BBO and view_changed(B, Bv, VT, S, vtb, TOPS)):
                settle(RQ, LO, PL, INS, S, w)
                call_row(C, CALL_BOOK, w, vtb, B, Bv, VT, PL, S)
                C[C_SEQ] = LAG[h, EV_SEQ]
                if not S[S_COMPILED]:
                    S[S_CALL] = CALL_BOOK
                    return CALL
                if run_compiled(fn, C, LO, REFKEY, state, OUT, INS, S, LM, LA, LB, RK, W):
                    return STOP
            continue
        # a timer
        if lazy:
            r = catch_up(LAG, Bv, Hv, VT, OO, BKv, FL, EV, stv, S, at, w, False)
            if r:
                S[S_CALL] = r
                return NEED_ROOM
        S[S_TIMER_NEXT] += S[S_TIMER_PERIOD]
        settle(RQ, LO, PL, INS, S, w)
        call_row(C, CALL_TIMER, w, 0, B, Bv, VT, PL, S)
        if not S[S_COMPILED]:
            S[S_CALL] = CALL_TIMER
            return CALL
        if run_compiled(fn, C, LO, REFKEY, state, OUT, INS, S, LM, LA, LB, RK, W):
            return STOP


RUN_END, RUN_DUE, RUN_ROOM, RUN_PRINT, RUN_PHASE = 0, 1, 2, 3, 4


@njit(cache=True, _nrt=False, inline="always")
def same_top(LAG, h, B, tb):
    """Lag row h (of book tb) records the feed's best bid and ask book tb shows now."""
    if LAG[h, LAG_DUE - 1] != tb:
        return False
    for side in range(2):
        px, q = top_level(B, 2 * tb + side)
        if px == NONE:
            if LAG[h, LAG_TOP + 2 * side + 1] >= 0:
                return False
        elif q != LAG[h, LAG_TOP + 2 * side + 1] or px != LAG[h, LAG_TOP + 2 * side]:
            return False
    return True


@njit(cache=True, _nrt=False, inline="always")
def view_shows_top(VT, B, tb):
    """A compiled strategy's view (one level a side) of book tb shows the feed's best now."""
    for side in range(2):
        px, q = top_level(B, 2 * tb + side)
        sd = 2 * tb + side
        if px == NONE:
            if VT[sd, 1] >= 0:
                return False
        elif VT[sd, 1] < 0 or VT[sd, 1] != q or VT[sd, 0] != px:
            return False
    return True


@njit(cache=True, _nrt=False)
def exchange_run(ev, n, tmap, B, H, Bv, Hv, VT, BKv, stv, INS, OO, BK, FL, EV, st, RQ, LAG, MK, LO,
                 REFKEY, TOPS, S, LM, LA, LB, at):
    """The feed events ev[S[S_POS]:n] of a batch on the exchange side, up to the first that
    needs the strategy's side (S[S_POS] then names it): RUN_DUE (something is due before
    it: drain, then call again), RUN_ROOM (S[S_CALL]: what must grow), RUN_PRINT (a print
    that shows a zero-latency strategy its book change), RUN_PHASE (applied; S[S_PHASE]:
    responses due now (1) or a call on the book change (2)); RUN_END: the batch is done.
    The strategy's function is no argument of this kernel, so its cached code serves every
    strategy, and the shadow book's steps are inlined into its loop."""
    lazy = not S[S_ZERO_FEED] and not S[S_SUB] & (SUB_BBO | SUB_BOOK)
    for i in range(S[S_POS], n):
        b = ev[i, EV_BOOK]
        if b >= tmap.shape[0] or tmap[b] < 0:
            continue
        tb = tmap[b]
        if ev[i, EV_ACTION] & 0xFF == ACT_PRINT:
            note_print(B, ev[i], tb)
            if BKv[tb, B_SEQ] == 0 or ev[i, EV_ACTION] & DEFER:
                continue
            # an event that ends in a print: its book changes are seen at the print, as in
            # the replay's tables
            last = BKv[tb, B_SEQ]
            BKv[tb, B_SEQ] = 0
            if not S[S_ZERO_FEED]:
                h = S[S_LAG_TAIL] - 1
                if h >= S[S_LAG_HEAD] and LAG[h, EV_SEQ] == last:
                    LAG[h, EV_ACTION] &= ~DEFER
                continue
            if S[S_SUB] & SUB_BOOK or (S[S_SUB] & SUB_BBO and view_changed(B, Bv, VT, S, tb, TOPS)):
                S[S_NOW] = ev[i, EV_TIME]
                S[S_POS] = i
                return RUN_PRINT
            continue
        t = ev[i, EV_TIME]
        S[S_NEXT_SEQ] = ev[i, EV_SEQ]
        if t > S[S_TMAX]:
            S[S_TMAX] = t
        if due_before(INS, RQ, LAG, S, t):
            S[S_POS] = i
            return RUN_DUE
        if lazy and S[S_LAG_TAIL] - S[S_LAG_HEAD] >= LAZY_BATCH:
            # a lazy view: what was delivered before t can be applied now (every later
            # call is at t or after)
            r = catch_up(LAG, Bv, Hv, VT, OO, BKv, FL, EV, stv, S, at, t, True)
            if r:
                S[S_POS] = i
                S[S_CALL] = r
                return RUN_ROOM
        r = room(B, H, Hv, BK, FL, EV, st, stv, INS, RQ, LAG, MK, LO, REFKEY, S, tb)
        if r == 0:
            r = shadow_room(B, tb, ev[i])
        if r:
            S[S_POS] = i
            S[S_CALL] = r
            return RUN_ROOM
        if opens(BK, tb, t):     # then what is due before the event, and its room, again
            open_book(B, H, OO, BK, FL, EV, st, RQ, MK, S, LM, LA, LB, at, tb)
            S[S_POS] = i
            return RUN_DUE
        if S[S_MARK_PERIOD] > 0 and t >= S[S_MARK_NEXT]:
            for k in range(BK.shape[0]):
                if BK[k, B_SEEN]:
                    mark(MK, S, B, k, S[S_MARK_NEXT], st)
            S[S_MARK_NEXT] = (t // S[S_MARK_PERIOD] + 1) * S[S_MARK_PERIOD]
        e0, f0 = st[ST_NE], st[ST_NF]
        at[0], at[1], at[2] = ev[i, EV_SEQ], 1, t
        feed_event(ev[i], B, H, OO, BK, FL, EV, st, at, tb)
        BK[tb, B_TIME] = t
        if ev[i, EV_ACTION] & DEFER:        # the event goes on: its last change so far
            BKv[tb, B_SEQ] = ev[i, EV_SEQ]
        else:
            BKv[tb, B_SEQ] = 0
        if st[ST_NF] > f0:
            respond(EV, FL, RQ, st, S, LM, LA, LB, e0, f0, t)
            mark(MK, S, B, tb, t, st)
        elif st[ST_NE] > e0:
            respond(EV, FL, RQ, st, S, LM, LA, LB, e0, f0, t)
        if not S[S_ZERO_FEED]:
            due = max(t + lat_of(LAT_FEED, t, LM, LA, LB, S), S[S_LAST_FEED])
            S[S_LAST_FEED] = due
            h = S[S_LAG_TAIL]
            if S[S_COMPILED]:
                # a compiled strategy's view is the top: a lazy view skips a row that would
                # show what the row before it (or, none queued, the view itself) shows
                if lazy and (same_top(LAG, h - 1, B, tb) if h > S[S_LAG_HEAD]
                             else view_shows_top(VT, B, tb)):
                    continue
                LAG[h, EV_SEQ], LAG[h, EV_ACTION], LAG[h, EV_TIME] = ev[i, EV_SEQ], ev[i, EV_ACTION], t
                record_top(LAG, h, B, tb)
            else:
                copy_row(LAG[h, :LAG_DUE], ev[i])
            LAG[h, LAG_DUE - 1] = tb
            LAG[h, LAG_DUE] = due
            S[S_LAG_TAIL] = h + 1
            continue
        # zero feed latency: the strategy sees the book right after the event (responses
        # due by now first)
        S[S_NOW] = t
        if S[S_RQ_HEAD] < S[S_RQ_TAIL] and RQ[S[S_RQ_HEAD], R_DUE] <= t:
            S[S_POS] = i
            S[S_PHASE] = 1
            return RUN_PHASE
        if ev[i, EV_ACTION] & DEFER:
            continue
        if S[S_SUB] & SUB_BOOK or (S[S_SUB] & SUB_BBO and view_changed(B, Bv, VT, S, tb, TOPS)):
            S[S_POS] = i
            S[S_PHASE] = 2
            return RUN_PHASE
    S[S_POS] = n
    return RUN_END


@njit(cache=True, _nrt=False)
def bt_events(ev, n, tmap, books, view, run, gate, fn, state, OUT, at):
    """Events ev[S[S_POS]:n] of a batch (resumable: S_POS, S_PHASE). Returns OK, NEED_ROOM
    or CALL (a Python strategy's call is due: S[S_CALL] its kind, C its row). The
    exchange side runs in exchange_run; this loop does what needs the strategy. ``at``
    (3 int64) is scratch for the key of the rows being written. ``books`` (an OwnBooks),
    ``view``, ``run`` and ``gate``: the named state above."""
    B, H, INS, MID, OO, BK, FL, EV, st = books
    Bv, Hv, VT, BKv, stv = view
    RQ, LAG, MK, LO, REFKEY, PL, TOPS, S, C = run
    LM, LA, LB, RK, W = gate
    quiet = S[S_COMPILED] and not S[S_ZERO_FEED] and S[S_SUB] & SUB_BBO and not S[S_SUB] & SUB_BOOK
    while True:
        if S[S_PHASE] == 0:
            status = exchange_run(ev, n, tmap, B, H, Bv, Hv, VT, BKv, stv, INS, OO, BK, FL, EV, st, RQ, LAG,
                                  MK, LO, REFKEY, TOPS, S, LM, LA, LB, at)
            if status == RUN_END:
                return OK
            if status == RUN_ROOM:
                return NEED_ROOM
            i = S[S_POS]
            t = ev[i, EV_TIME]
            tb = tmap[ev[i, EV_BOOK]]
            if status == RUN_DUE:
                if quiet and not still_due(INS, RQ, LAG, VT, TOPS, S, t):
                    continue
                status = drain(t, tb, B, H, Bv, Hv, VT, BKv, stv, INS, MID, OO, BK, FL, EV, st, RQ, LAG, MK,
                               LO, REFKEY, PL, TOPS, S, C, LM, LA, LB, RK, W, fn, state, OUT, at)
                if status != OK:
                    return status
                continue
            if status == RUN_PRINT:
                call_row(C, CALL_BOOK, t, tb, B, Bv, VT, PL, S)
                C[C_SEQ] = ev[i, EV_SEQ]
                S[S_POS] = i + 1
                if not S[S_COMPILED]:
                    S[S_CALL] = CALL_BOOK
                    return CALL
                if run_compiled(fn, C, LO, REFKEY, state, OUT, INS, S, LM, LA, LB, RK, W):
                    return STOP
                continue
        i = S[S_POS]
        t = ev[i, EV_TIME]
        tb = tmap[ev[i, EV_BOOK]]
        if S[S_PHASE] == 1:
            S[S_NOW] = t
            while S[S_RQ_HEAD] < S[S_RQ_TAIL] and RQ[S[S_RQ_HEAD], R_DUE] <= t:
                r = room(B, H, Hv, BK, FL, EV, st, stv, INS, RQ, LAG, MK, LO, REFKEY, S, tb)
                if r:
                    S[S_CALL] = r
                    return NEED_ROOM
                q = S[S_RQ_HEAD]
                S[S_RQ_HEAD] = q + 1
                deliver(RQ, LO, PL, INS, S, q)
                if S[S_SUB] & SUB_ORDERS:
                    call_row(C, CALL_ORDER, t, LO[RQ[q, R_KEY], LO_TB], B, Bv, VT, PL, S)
                    order_call(C, RQ, LO, INS, S, q)
                    if not S[S_COMPILED]:
                        S[S_CALL] = CALL_ORDER
                        return CALL
                    if run_compiled(fn, C, LO, REFKEY, state, OUT, INS, S, LM, LA, LB, RK, W):
                        return STOP
            S[S_PHASE] = 0
            S[S_POS] = i + 1
            if ev[i, EV_ACTION] & DEFER:
                continue
            if S[S_SUB] & SUB_BOOK or (S[S_SUB] & SUB_BBO and view_changed(B, Bv, VT, S, tb, TOPS)):
                S[S_POS] = i
                S[S_PHASE] = 2
        if S[S_PHASE] == 2:
            # the strategy's call on the book change (room for what it sends first)
            r = room(B, H, Hv, BK, FL, EV, st, stv, INS, RQ, LAG, MK, LO, REFKEY, S, tb)
            if r:
                S[S_CALL] = r
                return NEED_ROOM
            S[S_PHASE] = 0
            S[S_POS] = i + 1
            call_row(C, CALL_BOOK, t, tb, B, Bv, VT, PL, S)
            C[C_SEQ] = ev[i, EV_SEQ]
            if not S[S_COMPILED]:
                S[S_CALL] = CALL_BOOK
                return CALL
            if run_compiled(fn, C, LO, REFKEY, state, OUT, INS, S, LM, LA, LB, RK, W):
                return STOP


@njit(cache=True, _nrt=False)
def bt_finish(books, view, run, gate, fn, state, OUT, day_end, at):
    """After the feed's last record: everything still queued (timers up to the last feed
    time), then (``day_end``) DAY orders expire. Resumable like bt_events (S_FINISH)."""
    B, H, INS, MID, OO, BK, FL, EV, st = books
    Bv, Hv, VT, BKv, stv = view
    RQ, LAG, MK, LO, REFKEY, PL, TOPS, S, C = run
    LM, LA, LB, RK, W = gate
    if S[S_FINISH] == 0:
        S[S_NEXT_SEQ] = 1 << 62
        status = drain(FOREVER, 0, B, H, Bv, Hv, VT, BKv, stv, INS, MID, OO, BK, FL, EV, st, RQ, LAG, MK,
                       LO, REFKEY, PL, TOPS, S, C, LM, LA, LB, RK, W, fn, state, OUT, at)
        if status != OK:
            return status
        settle(RQ, LO, PL, INS, S, FOREVER)
        S[S_FINISH] = 1
        if day_end:
            for tb in range(BK.shape[0]):
                if EV.shape[0] - st[ST_NE] < BK[tb, B_RESTING] + 1 or MK.shape[0] - S[S_NM] < 2:
                    S[S_FINISH] = 0
                    S[S_CALL] = ROOM_OUT
                    return NEED_ROOM
            for tb in range(BK.shape[0]):
                last = max(BK[tb, B_TIME], S[S_LAST_ARR])
                at[0], at[1], at[2] = 1 << 62, 1, last
                k = BK[tb, B_HEAD]
                while k >= 0:
                    nxt = OO[k, O_NEXT]
                    if OO[k, O_TIF] == TIF_DAY:
                        rem = OO[k, O_REM]
                        unlink(H, OO, BK, st, k)
                        OO[k, O_STATE], OO[k, O_REM] = O_DONE, 0
                        emit(EV, st, at, tb, k, K_EXPIRED, R_SESSION_END, OO[k, O_SIDE], OO[k, O_PRICE], rem, 0,
                             -1, -1)
                    k = nxt
                if BK[tb, B_SEEN]:
                    mark(MK, S, B, tb, last, st)
    return OK


@njit(cache=True, _nrt=False)
def noop(call, lo, refkey, state, out):
    """A compiled strategy that sends nothing."""
    return 0
