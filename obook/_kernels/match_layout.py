"""Rows and codes shared by the matching kernels (obook._kernels.match) and their driver.

Prices inside the kernels are *level rows*: every book owns a contiguous band of rows of
the level array, one per tick from its lowest to its highest price, so comparing rows of
one book compares prices and a level is found by indexing (no search). The driver maps
prices to rows before and rows to prices after.
"""

import numpy as np

from .layout import _at       # the positions of named columns in a row

# instructions: the kernels stream 24-byte rows m[n] (MSG_DTYPE: order key, price as a
# level row (-1: none), op bits, book, quantity (-1: none)); an instruction's owner (mw[n],
# int64) is read only with self-trade prevention on and its seq / time (mt[n, 2], int64)
# only when output rows are wanted
MSG_DTYPE = np.dtype([("key", "i4"), ("price", "i4"), ("op", "i4"), ("book", "i4"), ("qty", "i8")], align=True)
T_SEQ, T_TIME = range(2)
# M_OP bits: action (0-1), side (2), time in force (3-4), market (5), pre-checked reason (8-15)
OP_NEW = 0
OP_MODIFY = 1
OP_CANCEL = 2
SIDE_SHIFT = 2
TIF_SHIFT = 3
MARKET_BIT = 1 << 5
REASON_SHIFT = 8
BUY = 0
SELL = 1
TIF_GTC = 0
TIF_DAY = 1
TIF_IOC = 2
TIF_FOK = 3

# levels lv[L] (LV_DTYPE, 24-byte rows): first and last order of the FIFO (-1: none),
# order count, total quantity
LV_DTYPE = np.dtype([("head", "i4"), ("tail", "i4"), ("count", "i4"), ("qty", "i8")], align=True)
# orders od[K]: one 16-byte record per order key (the key is the row: no index, no free
# list): FIFO links (order keys; keys < 2**31), `lv` = the order's state and, while it
# rests, its level row (< 2**26) | (side | tif << 1) << LV_SHIFT, and its quantity; when a
# quantity of the run does not fit in int32, OD_WIDE_DTYPE (24 bytes, int64 quantity). An
# order's owner (ow[K], int64) is written and read only with self-trade prevention on.
OD_DTYPE = np.dtype([("next", "i4"), ("prev", "i4"), ("lv", "i4"), ("qty", "i4")])
OD_WIDE_DTYPE = np.dtype([("next", "i4"), ("prev", "i4"), ("lv", "i4"), ("qty", "i8")], align=True)
LV_SHIFT = 26
LV_MASK = (1 << LV_SHIFT) - 1
# books bk[B, BK_WIDTH]: band, best rows (LO-1 / HI+1 when empty), levels a side, last bbo
BK_LO, BK_HI, BK_BID, BK_ASK, BK_NBID, BK_NASK = range(6)      # BK_BID + side, BK_NBID + side: sides by index
BK_LAST = 6         # 6 values: bid row, qty, orders, ask row, qty, orders of the last bbo row
BK_WIDTH = 12
# od["lv"] of an order that does not rest (>= 0: it rests)
NEVER = -1
DONE = -2
# counters st[]
ST_NF, ST_NE, ST_NQ, ST_ND, _ST_4, _ST_5, ST_LIVE, ST_POS = range(8)
ST_WIDTH = 8

# The output tables' columns, declared once: (name, Arrow type, nullable, row column). The
# kernels write int64 rows whose columns are the declared row columns in order of first use
# (the F_ / E_ / Q_ constants below are their positions); obook.matching.tables builds the
# Arrow schemas from the declarations and turns each row column into its table columns:
# ``book`` -> the instrument's name, ``price`` / ``*_row`` -> the level row's price (null
# when -1), ``taker`` / ``maker`` / ``key`` -> the caller's order id, ``side`` -> buy / sell,
# ``kind`` -> the event (its low byte) and the reason (the rest).
MATCH_HEAD_COLUMNS = (
    ("seq", "int64", False, "seq"),          # 1-based input row (end of session: n + 1)
    ("time", "int64", False, "time"),
    ("instrument", "string", False, "book"),
)
FILL_COLUMNS = MATCH_HEAD_COLUMNS + (
    ("price", "int64", False, "price"),      # the resting order's price
    ("quantity", "int64", False, "qty"),
    ("taker_order_id", "int64", False, "taker"),
    ("maker_order_id", "int64", False, "maker"),
    ("taker_side", "string", False, "side"),  # buy / sell
)
EVENT_COLUMNS = MATCH_HEAD_COLUMNS + (
    ("order_id", "int64", False, "key"),
    ("event", "string", False, "kind"),      # accepted, rejected, rested, ...
    ("side", "string", True, "side"),        # null: a rejected modify / cancel
    ("price", "int64", True, "price"),       # the order's limit; null: market
    ("quantity", "int64", False, "qty"),     # what the event is about
    ("remaining", "int64", False, "remaining"),  # open quantity after it
    ("queue_position", "int64", True, "qpos"),   # rested: 1 = front of its level
    ("reason", "string", True, "kind"),      # rejected / cancelled / expired
)
#: bbo ("quotes") and depth: the head, then per level (bids 1..levels, then asks) these,
#: named side_name (bbo) or side_name_level (depth); a level is null when it has no orders
LEVEL_COLUMNS = (("px", "int64", True, "row"), ("qty", "int64", True, "qty"), ("orders", "int32", True, "orders"))


def match_row(columns: tuple) -> tuple:
    """The kernel row's columns of a table: its row columns in order of first use."""
    out = []
    for *_, source in columns:
        if source not in out:
            out.append(source)
    return tuple(out)


FILL_ROW = match_row(FILL_COLUMNS)
EVENT_ROW = match_row(EVENT_COLUMNS)
HEAD_ROW = match_row(MATCH_HEAD_COLUMNS)
LEVEL_ROW = match_row(LEVEL_COLUMNS)
F_SEQ, F_TIME, F_BOOK, F_PRICE, F_QTY, F_TAKER, F_MAKER, F_SIDE = _at(
    FILL_ROW, "seq time book price qty taker maker side")
F_WIDTH = len(FILL_ROW)
E_SEQ, E_TIME, E_BOOK, E_KEY, E_KIND, E_SIDE, E_PRICE, E_QTY, E_REMAINING, E_QPOS = _at(
    EVENT_ROW, "seq time book key kind side price qty remaining qpos")
E_WIDTH = len(EVENT_ROW)
Q_SEQ, Q_TIME, Q_BOOK = _at(HEAD_ROW, "seq time book")
LC_ROW, LC_QTY, LC_ORDERS = _at(LEVEL_ROW, "row qty orders")     # within a level's columns
LC_WIDTH = len(LEVEL_ROW)
D_HEAD = len(HEAD_ROW)                # then per level (bids, then asks) LEVEL_ROW: row, qty, orders
Q_WIDTH = D_HEAD + 2 * LC_WIDTH
# want bits
W_FILLS = 1
W_EVENTS = 2
W_BBO = 4
W_DEPTH = 8
# self-trade prevention
STP_NONE = 0
STP_CANCEL_RESTING = 1
STP_CANCEL_INCOMING = 2

# event kinds (E_KIND = kind | reason << 8)
K_ACCEPTED = 1
K_REJECTED = 2
K_RESTED = 3
K_PARTIAL = 4
K_FILLED = 5
K_CANCELLED = 6
K_EXPIRED = 7
K_MODIFIED = 8
KIND_NAMES = ("", "accepted", "rejected", "rested", "partially_filled", "filled", "cancelled",
              "expired", "modified")
# reasons
R_NONE = 0
R_UNKNOWN_ID = 1
R_NOT_LIVE = 2
R_DUPLICATE_ID = 3
R_BAD_QUANTITY = 4
R_OFF_TICK = 5
R_UNKNOWN_INSTRUMENT = 6
R_NO_PRICE = 7
R_FOK = 8
R_SELF_TRADE = 9
R_REQUEST = 10
R_UNFILLED = 11
R_SESSION_END = 12
REASON_NAMES = ("", "unknown order id", "order is not live (filled, cancelled or expired)",
                "duplicate order id", "quantity must be positive", "price is not a multiple of the tick",
                "unknown instrument", "limit order without a price",
                "fill-or-kill order cannot fill completely", "self-trade prevention",
                "cancel request", "unfilled rest of an IOC, FOK or market order", "end of session")

# kernel status
OK = 0
NEED_OUTPUT = 1     # flush the output rows (or grow the buffers) and call again from st[ST_POS]
