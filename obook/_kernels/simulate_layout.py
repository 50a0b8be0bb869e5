"""Rows and codes of the own-order simulation kernels (obook._kernels.simulate).

The simulation keeps a *shadow* of each book that has own orders ("tracked" books, index
``tb``): the feed's orders (the kernels' hash table, obook._kernels.hashtab, keyed by (book, ref) with side, price,
shares and a priority stamp) and its levels (per book side a sorted array, best last, with
the feed's shares, the shares your crossing orders consumed, and the order count).
"""

# shadow order hash H[cap, H_WIDTH]; it also holds the own orders' price lists: book
# -(2 * tb + side) - 1, ref = price, H_SIDE / H_PRICE = first / last own order (stamp order)
# H_PRINTED: shares of the order a print named (a fill report, e.g. Databento's F) that its
# next cancels have not yet taken: those cancels are executions
H_BOOK, H_REF, H_STATE, H_SIDE, H_PRICE, H_SHARES, H_STAMP, H_PRINTED = range(8)
H_FIRST, H_LAST = H_SIDE, H_PRICE
H_WIDTH = 8
# H_STATE: obook._kernels.hashtab's row states (EMPTY, LIVE, DELETED)
# levels L[2 * tracked books, K, L_WIDTH]: sort key (bid: price, ask: -price), feed shares,
# consumed shares, feed orders
L_KEY, L_QTY, L_USED, L_COUNT = range(4)
L_WIDTH = 4

# own instructions INS[m, I_WIDTH], sorted by (tracked book, arrival, input row)
(I_ROW, I_ARR, I_TB, I_KEY, I_ACT, I_SIDE, I_MARKET, I_TIF, I_PRICE, I_HAS_PRICE, I_QTY,
 I_REASON, I_PROBE) = range(13)
I_WIDTH = 13
# per-instruction mids MID[m, 4]: bid, ask at arrival; bid, ask at the probe (NONE: absent)
NONE = -(1 << 62)

# own orders OO[keys, O_WIDTH]
# O_NEXT / O_PREV: the book's resting own orders; O_PNEXT / O_PPREV: those at its price
(O_STATE, O_TB, O_SIDE, O_PRICE, O_REM, O_STAMP, O_AHEAD, O_NEXT, O_PREV, O_TIF,
 O_FILLED, O_PNEXT, O_PPREV) = range(13)
O_WIDTH = 13
O_NEVER, O_RESTING, O_DONE, O_LIVE = 0, 1, 2, 3     # O_LIVE: accepted, not resting yet

# tracked books BK[T, B_WIDTH]
# B_BID..B_ASKQ: the last bbo_with_own row; B_OWN..: the best own price and shares a side
# (bid, ask), recomputed when B_DIRTY; B_ODIRTY: the own levels OD of the book are stale
(B_INS, B_END, B_NEXT, B_PROBE, B_HEAD, B_TAIL, B_RESTING, B_SEQ, B_TIME,
 B_BID, B_BIDQ, B_ASK, B_ASKQ, B_SEEN, B_DIRTY, B_OWN) = range(16)
B_ODIRTY = 20
B_WIDTH = 21

# depth_with_own (asked for with W_DEPTH): the top ``levels`` own levels of each book side
# OD[2 * T, levels, 3] = (price, shares, orders), best first (price NONE: none), recomputed
# from the book's resting own orders when B_ODIRTY; the last row written per book
# DL[T, 6 * levels] and the rows DQ[cap, D_HEAD + 6 * levels]: per level (bids 1..levels,
# then asks) price, shares, orders; an empty level is (-1, -1, 0) as in the feed's depth
OD_PX, OD_QTY, OD_N = range(3)
D_HEAD = 5
W_BBO, W_DEPTH = 1, 2       # the with-own tables to write (sim_events' ``want`` bits)

# counters ST
ST_USED, ST_LIVE, ST_STAMP, ST_NF, ST_NE, ST_NQ, ST_POS, ST_COUNT, ST_ND = range(9)
ST_WIDTH = 9

# outputs: fills, events, bbo_with_own, depth_with_own rows; every row starts with the sort key
# (seq, phase, time, tb, counter): phase 0 = before the feed record seq, 1 = at it
K_SEQ, K_PHASE, K_TIME, K_TB, K_COUNT = range(5)
F_KEY, F_PRICE, F_QTY, F_TAKER, F_PRIO, F_SIDE = range(5, 11)
F_WIDTH = 11
E_KEY, E_KIND, E_REASON, E_SIDE, E_PRICE, E_QTY, E_REM, E_AHEAD, E_ROW = range(5, 14)
E_WIDTH = 14
Q_BID, Q_BIDQ, Q_ASK, Q_ASKQ = range(5, 9)
Q_WIDTH = 9

#: seq of rows after the feed's last record
END_SEQ = 1 << 62

# event kinds (the matching engine's, plus "queue": the shares ahead changed)
K_ACCEPTED, K_REJECTED, K_RESTED, K_PARTIAL, K_FILLED, K_CANCELLED, K_EXPIRED, K_MODIFIED, K_QUEUE = range(1, 10)
KIND_NAMES = ("", "accepted", "rejected", "rested", "partially_filled", "filled", "cancelled",
              "expired", "modified", "queue")
# reasons: the matching engine's codes (obook._kernels.match_layout.REASON_NAMES)
R_UNKNOWN_ID, R_NOT_LIVE, R_DUPLICATE_ID = 1, 2, 3
R_FOK, R_REQUEST, R_UNFILLED, R_SESSION_END = 8, 10, 11, 12

OP_NEW, OP_MODIFY, OP_CANCEL = 0, 1, 2
TIF_GTC, TIF_DAY, TIF_IOC, TIF_FOK = 0, 1, 2, 3

# kernel status
OK = 0
NEED_ROOM = 1       # flush the output rows / grow the shadow, then call again from ST_POS
ROOM_HASH = 1
ROOM_LEVELS = 2
ROOM_OUT = 3
