"""Rows and codes of the own-order simulation kernels (obook._kernels.simulate).

The simulation keeps a *shadow* of each book that has own orders ("tracked" books, index
``tb``) on the replay's book structures (obook._kernels.book, book id ``tb``, time-priority
queues on): the feed's orders, their levels and queues. Beside the book's own columns the
shadow keeps, per feed order, its priority stamp and printed shares (queue node columns
QN_STAMP, QN_PRINTED) and, per level, the shares your crossing orders consumed there (the
level's LX_DRIVER value).
"""

from .layout import _at
from .match_layout import match_row

# the own orders' price lists H[cap, H_WIDTH] (obook._kernels.hashtab, keyed by (2 * tb +
# side, price)): the first / last own order resting there (stamp order), their number
H_BOOK, H_REF, H_STATE, H_FIRST, H_LAST, H_COUNT = range(6)
H_WIDTH = 6
# H_STATE: obook._kernels.hashtab's row states (EMPTY, LIVE, DELETED)
# the shadow's queue nodes: the book's four columns, then the feed order's priority stamp
# and its printed shares: shares of the order a print named (a fill report, e.g.
# Databento's F) that its next cancels have not yet taken (those cancels are executions)
QN_STAMP, QN_PRINTED = 4, 5
QN_WIDTH = 6

# own instructions INS[m, I_WIDTH], sorted by (tracked book, arrival, input row)
(I_ROW, I_ARR, I_TB, I_KEY, I_ACT, I_SIDE, I_MARKET, I_TIF, I_PRICE, I_HAS_PRICE, I_QTY,
 I_REASON, I_PROBE) = range(13)
I_WIDTH = 13
# per-instruction mids MID[m, MID_WIDTH]: bid, ask at arrival; bid, ask at the probe (NONE: absent);
# the seq of the feed record each pair was taken before (END_SEQ: after the feed's last)
MID_WIDTH = 6
NONE = -(1 << 62)

# own orders OO[keys, O_WIDTH]
# O_NEXT / O_PREV: the book's resting own orders; O_PNEXT / O_PPREV: those at its price;
# O_REF (the backtest's): the strategy's ref the venue knows the order by (a replace's new
# one from its acceptance on)
(O_STATE, O_TB, O_SIDE, O_PRICE, O_REM, O_STAMP, O_AHEAD, O_NEXT, O_PREV, O_TIF,
 O_FILLED, O_PNEXT, O_PPREV, O_REF) = range(14)
O_WIDTH = 14
O_NEVER, O_RESTING, O_DONE, O_LIVE = 0, 1, 2, 3     # O_LIVE: accepted, not resting yet

# tracked books BK[T, B_WIDTH]
# B_BID..B_ASKQ: the last bbo_with_own row; B_OWN..: the best own price and shares a side
# (bid, ask), recomputed when B_DIRTY; B_ODIRTY: the own levels OD of the book are stale;
# B_CALL: the venue runs call auctions outside continuous trading, feed times
# [B_CFROM, B_CTO) (0: continuous trading all day); B_OPENED: continuous trading started
# (the own orders resting through the other side took it, obook._kernels.simulate.open_cross)
(B_INS, B_END, B_NEXT, B_PROBE, B_HEAD, B_TAIL, B_RESTING, B_SEQ, B_TIME,
 B_BID, B_BIDQ, B_ASK, B_ASKQ, B_SEEN, B_DIRTY, B_OWN) = range(16)
B_ODIRTY, B_CALL, B_CFROM, B_CTO, B_OPENED = 20, 21, 22, 23, 24
B_WIDTH = 25

# depth_with_own (asked for with W_DEPTH): the top ``levels`` own levels of each book side
# OD[2 * T, levels, 3] = (price, shares, orders), best first (price NONE: none), recomputed
# from the book's resting own orders when B_ODIRTY; the last row written per book
# DL[T, 6 * levels] and the rows DQ[cap, D_HEAD + 6 * levels]: per level (bids 1..levels,
# then asks) price, shares, orders; an empty level is (-1, -1, 0) as in the feed's depth
OD_PX, OD_QTY, OD_N = range(3)
W_BBO, W_DEPTH = 1, 2       # the with-own tables to write (sim_events' ``want`` bits)

# counters ST
ST_USED, ST_LIVE, ST_STAMP, ST_NF, ST_NE, ST_NQ, ST_POS, ST_COUNT, ST_ND = range(9)
ST_WIDTH = 9

# The output tables (fills, events, bbo_with_own), declared once: (name, Arrow type, nullable,
# row column). Every kernel row starts with its sort key (SORT_KEY: seq, phase, time, tracked
# book, counter; phase 0 = before the feed record seq, 1 = at it), then the table's other row
# columns in order of first use; the K_ / F_ / E_ / Q_ constants below are their positions and
# obook.simulation.tables builds the schemas from the declarations: ``book`` -> the
# instrument's name, ``key`` -> your order id, ``side`` -> buy / sell, ``kind`` / ``reason``
# -> their names, ``taker`` -> taker / maker, a negative side, price, ahead or row -> null.
SORT_KEY = ("seq", "phase", "time", "book", "count")
SIM_HEAD_COLUMNS = (
    ("seq", "int64", True, "seq"),               # the feed record (null: after the book's last)
    ("time", "int64", False, "time"),
    ("instrument", "string", False, "book"),
)
SIM_FILL_COLUMNS = SIM_HEAD_COLUMNS + (
    ("order_id", "int64", False, "key"),
    ("side", "string", False, "side"),
    ("price", "int64", False, "price"),
    ("quantity", "int64", False, "qty"),
    ("liquidity", "string", False, "taker"),     # taker / maker
    ("priority_differs", "bool", False, "prio"),
)
SIM_EVENT_COLUMNS = SIM_HEAD_COLUMNS + (
    ("order_id", "int64", False, "key"),
    ("event", "string", False, "kind"),
    ("side", "string", True, "side"),
    ("price", "int64", True, "price"),
    ("quantity", "int64", False, "qty"),
    ("remaining", "int64", False, "rem"),
    ("shares_ahead", "int64", True, "ahead"),
    ("reason", "string", True, "reason"),
    ("row", "int64", True, "row"),               # the instruction's input row
)
SIM_BBO_COLUMNS = SIM_HEAD_COLUMNS + (
    ("bid_px", "int64", True, "bid"), ("bid_qty", "int64", True, "bidq"),
    ("ask_px", "int64", True, "ask"), ("ask_qty", "int64", True, "askq"),
)


def sim_row(columns: tuple) -> tuple:
    """The kernel row of a table: the sort key, then its other row columns in order of first use."""
    return SORT_KEY + tuple(c for c in match_row(columns) if c not in SORT_KEY)


FILL_ROW = sim_row(SIM_FILL_COLUMNS)
EVENT_ROW = sim_row(SIM_EVENT_COLUMNS)
QUOTE_ROW = sim_row(SIM_BBO_COLUMNS)
K_SEQ, K_PHASE, K_TIME, K_TB, K_COUNT = _at(SORT_KEY, "seq phase time book count")
F_KEY, F_PRICE, F_QTY, F_TAKER, F_PRIO, F_SIDE = _at(FILL_ROW, "key price qty taker prio side")
F_WIDTH = len(FILL_ROW)
E_KEY, E_KIND, E_REASON, E_SIDE, E_PRICE, E_QTY, E_REM, E_AHEAD, E_ROW = _at(
    EVENT_ROW, "key kind reason side price qty rem ahead row")
E_WIDTH = len(EVENT_ROW)
Q_BID, Q_BIDQ, Q_ASK, Q_ASKQ = _at(QUOTE_ROW, "bid bidq ask askq")
Q_WIDTH = len(QUOTE_ROW)
D_HEAD = len(SORT_KEY)      # a depth_with_own row: the sort key, then its levels

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
ROOM_HASH = 1       # the own price lists' table
ROOM_OUT = 3
ROOM_SHADOW = 32    # + the shadow book's room request (obook._kernels.book ROOM_*)
