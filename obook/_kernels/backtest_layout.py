"""Rows and codes of the closed-loop backtest kernel (obook._kernels.backtest).

The backtest keeps the own-order simulation's shadow books (obook._kernels.simulate_layout:
the exchange side, where own orders queue and fill) and, when the feed latency is not zero,
the strategy's *view*, which applies each feed event when the strategy receives it: for a
Python strategy a second shadow of the same books without own orders, for a compiled one
the best bid and ask each event left (the view's tops, VT).
"""

from .simulate_layout import I_ACT, I_KEY, I_MARKET, I_PRICE, I_QTY, I_SIDE, I_TB, I_TIF, I_WIDTH, ROOM_SHADOW

# instruction rows: the simulation's columns, then the backtest's own
X_POST = I_WIDTH          # post-only
X_SEND = I_WIDTH + 1      # local time the strategy sent it
X_REF = I_WIDTH + 2       # the strategy's reference
X_ORIG = I_WIDTH + 3      # a replace's original reference
X_REFUSED = I_WIDTH + 4   # refused by the risk gate (reason code; the row never reaches the venue)
X_WIDTH = I_WIDTH + 5
#: the fields of an order a Python strategy sends (``bt_send``'s ``X``), in this order; the
#: rest of its row is the kernel's
SEND_FIELDS = (I_TB, I_KEY, I_ACT, I_SIDE, I_QTY, I_PRICE, I_TIF, I_MARKET, X_POST, X_SEND, X_REF, X_ORIG,
               X_REFUSED)

R_POST_ONLY = 20          # event reason: a post-only order would have taken liquidity

# risk refusals (orders table)
RISK_NAMES = ("", "rate", "size", "notional", "band", "no price")
RISK_RATE, RISK_SIZE, RISK_NOTIONAL, RISK_BAND, RISK_NO_PRICE = 1, 2, 3, 4, 5

# latency kinds (rows of the latency arrays)
LAT_FEED, LAT_ORDER, LAT_RESPONSE = 0, 1, 2
# latency modes: constant, a table (times, values) interpolated in time, seeded draws in turn
LM_CONST, LM_TABLE, LM_DRAWS = 0, 1, 2

# responses queued for the strategy RQ[cap, R_WIDTH] (R_ROW: the instruction's row, I_ROW; -1: none)
(R_DUE, R_KEY, R_KIND, R_REASON, R_SIDE, R_PRICE, R_QTY, R_REM, R_FILL_PX, R_TAKER, R_TIME, R_ROW) = range(12)
R_WIDTH = 12

# feed events queued for the view LAG[cap, LAG_WIDTH]: the event row, then its due time
# (obook._kernels.layout EV_WIDTH = 10), then (compiled strategies) the book's best bid key
# and shares, best ask key and shares after the event (shares -1: the side is empty)
LAG_DUE = 10
LAG_TOP = 11
LAG_WIDTH = 15

# the strategy's local order table LO[keys, LO_WIDTH]
LO_REF, LO_STATE, LO_SIDE, LO_PRICE, LO_REM, LO_FILLED, LO_TB = range(7)
LO_WIDTH = 7
LO_NONE, LO_PENDING, LO_OPEN, LO_DONE = 0, 1, 2, 3

# marks MK[cap, M_WIDTH]: the exchange book's best bid and ask of a book at a time (every
# fill, every interval boundary), for mark-to-market equity
M_TIME, M_TB, M_BID, M_ASK, M_SEQ = range(5)
M_WIDTH = 5

# a strategy call C[C_WIDTH]
(C_KIND, C_TIME, C_TB, C_BID, C_BIDQ, C_ASK, C_ASKQ, C_POS, C_KEY, C_EVENT, C_REASON, C_PRICE,
 C_QTY, C_REM, C_FILL_PX, C_TAKER, C_SEQ, C_REF) = range(18)
C_WIDTH = 18
C_RAISED = C_WIDTH        # set while the strategy runs (its entry clears it when it returns): it raised
C_ROW = C_WIDTH + 1       # the call row's length (the strategy sees its first C_WIDTH)
CALL_BOOK, CALL_ORDER, CALL_TIMER = 1, 2, 3

# a compiled strategy's order rows OUT[cap, O_OUT_WIDTH]
(Q_ACT, Q_SIDE, Q_QTY, Q_PRICE, Q_TIF, Q_MARKET, Q_POST, Q_REF, Q_ORIG, Q_TB) = range(10)
Q_WIDTH = 10
OUT_ROWS = 16             # orders a compiled strategy may return per call
#: an order row's price: a limit price is 0 to MAX_PRICE (the risk gate's products stay in 64 bits)
MAX_PRICE = (1 << 62) - 1

# subscriptions
SUB_BBO, SUB_BOOK, SUB_ORDERS, SUB_TIMER = 1, 2, 4, 8

# state S
(S_POS, S_PHASE, S_INS_HEAD, S_INS_TAIL, S_LAG_HEAD, S_LAG_TAIL, S_RQ_HEAD, S_RQ_TAIL,
 S_TIMER_NEXT, S_TIMER_PERIOD, S_LAST_ARR, S_LAST_RESP, S_LAST_FEED, S_NOW, S_CALL,
 S_NKEY, S_SUB, S_IMM, S_ZERO_FEED, S_CALLS, S_NM, S_MARK_NEXT, S_MARK_PERIOD, S_TMAX,
 S_NEXT_SEQ, S_DRAW0, S_DRAW1, S_DRAW2, S_FINISH, S_NQ, S_COMPILED, S_WIN_HEAD, S_WIN_N,
 S_REFUSED, S_SEEN_T, S_NBOOKS, S_ERR, S_ERR_ROW, S_ERR_VAL) = range(39)
S_WIDTH = 40

# kernel status
OK = 0
NEED_ROOM = 1
CALL = 2          # a Python strategy's call is due (S_CALL: its kind; the call row C)
STOP = 3          # a compiled strategy's call failed: S_ERR (ERR_*), S_ERR_ROW (its order row), S_ERR_VAL
# why a compiled strategy's call failed (S_ERR); an ERR_* above ERR_COUNT names the order
# row's column that is out of range (ERR_FIELDS)
ERR_RAISED, ERR_COUNT, ERR_ACT, ERR_SIDE, ERR_TIF, ERR_PRICE, ERR_MARKET, ERR_POST, ERR_TB = range(1, 10)
#: the order row's column each ERR_* names (by code)
ERR_COLUMN = (0, 0, 0, Q_ACT, Q_SIDE, Q_TIF, Q_PRICE, Q_MARKET, Q_POST, Q_TB)
ERR_FIELDS = {ERR_ACT: "Q_ACT", ERR_SIDE: "Q_SIDE", ERR_TIF: "Q_TIF", ERR_PRICE: "Q_PRICE", ERR_MARKET: "Q_MARKET",
              ERR_POST: "Q_POST", ERR_TB: "Q_TB"}
# room kinds; ROOM_SHADOW / ROOM_VSHADOW + k: the exchange's / the view's shadow book asks
# for its room k (obook._kernels.book ROOM_*)
ROOM_HASH, _, ROOM_OUT, ROOM_VHASH, ROOM_KEYS, ROOM_INS, ROOM_RQ, ROOM_LAG, ROOM_MARKS = range(1, 10)
ROOM_VSHADOW = 2 * ROOM_SHADOW
