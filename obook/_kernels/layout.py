"""The normalized event row shared by every decoder and the replay driver.

A decoder turns the records of a batch that its worker owns into rows of an
int64 array of shape (n, EV_WIDTH); the replay driver (obook._kernels.replay) applies
them to the books. This is the
seam between feed formats and the engine: a new format writes a decoder that
emits these rows and nothing else changes.
"""

# event columns
EV_SEQ = 0      # record number (ITCH: 1-based message number, CSV: physical line)
EV_TIME = 1     # feed time (ITCH: ns since midnight, CSV: Time column)
EV_BOOK = 2     # book index local to the worker's decoder (ITCH: locate)
EV_ACTION = 3   # action code | side << 8
EV_REF = 4      # order key within the book (ITCH ref, CSV interned id)
EV_SHARES = 5
EV_PRICE = 6
EV_NEWREF = 7   # REPLACE: the new order key
EV_MATCH = 8    # ITCH E, C, P, Q, B: match number; CSV: the order id's bytes in the batch
                #   (start << 32 | length), shown by the trades and orders tables
EV_AUX = 9      # an execution's price where the record gives one (ITCH C, PITCH executed at
                #   price, Level-2 fills); 0: the resting order's (ITCH and CSV E). Every decoder
                #   writes it: the own-order simulation reads it as a call auction's price
EV_WIDTH = 10
# EV_ACTION bits: action (0-7), side (8), C not printable (9), defer (10), own best (11), no side (12),
# caged (13), cage live (14), cage add (15), message type letter (16-23), filled (24), to back (25)
NOT_PRINTABLE = 1 << 9
#: "more records of this event follow": apply the event but write no BBO or depth row; the
#: next event of the same book without the bit writes them, compared with the book before
#: the first deferred event (Databento: rows at the record whose flags carry F_LAST)
DEFER = 1 << 10
#: ACT_ADD: the order takes its own side's best price at the add (Shenzhen own-best 'U');
#: the event's PRICE when that side is empty
OWN_BEST = 1 << 11
#: ACT_PRINT: a print without a side (Databento T/F of side N): its trades row's side is null
NO_SIDE = 1 << 12
#: the ChiNext price cage (Shenzhen; obook._kernels.price_cage).
#: CAGED: an event of a caged book (its executions set the book's last trade price);
#: CAGE_LIVE: after the event, held orders of the book that the cage now admits enter it;
#: CAGE_ADD (ACT_ADD): an order outside the cage is held instead of added
CAGED = 1 << 13
CAGE_LIVE = 1 << 14
CAGE_ADD = 1 << 15
#: ACT_DELETE: the order left because it was filled (CSV F): its remaining shares were
#: executed. The books apply it as the delete (their tables do not look at the bit); the
#: own-order simulation counts those shares as an execution
FILLED = 1 << 24      # above the message type letter (16-23)
#: ACT_MODIFY: the order goes to the back of its level even when it could keep its place
#: (a feed that says the modify lost the order's priority)
TO_BACK = 1 << 25
TYPE_SHIFT = 16

# sides
BID = 0
ASK = 1

# actions
ACT_ADD = 1          # add; 0 shares is an error ("zero-share add"; ITCH)
ACT_ADD_ZERO_OK = 2  # add; 0 shares makes a level of 0 shares (CSV)
ACT_EXEC = 3         # reduce by shares; more than remain is "over-execution"
ACT_CANCEL = 4       # reduce by shares; more than remain is "over-cancel"
ACT_DELETE = 5       # remove the order
ACT_REPLACE = 6      # remove REF, add NEWREF with the same side at PRICE, SHARES (back of queue)
ACT_REDUCE_TO = 7    # CSV C: reduce TO shares; shares >= remaining changes nothing
ACT_EXEC_CLAMP = 8   # CSV E: reduce by min(shares, remaining); removed at 0
ACT_PRINT = 9        # ITCH P, Q, B, CSV T, X: a trade print (or break); no book change
ACT_CLEAR = 10       # remove every order of the book (Databento R)
ACT_MODIFY = 11      # REF gets PRICE and SHARES (same ref, same side): keeps its queue place
                     #   if the price is unchanged and shares did not increase, else goes to
                     #   the back at its (new) price; 0 shares removes it; an unknown REF is
                     #   added (Databento M)

# status / error codes returned by the book kernel (and counted in tolerant mode)
OK = 0
ERR_UNKNOWN_REF = 1
ERR_DUPLICATE_REF = 2
ERR_OVER_EXECUTION = 3
ERR_OVER_CANCEL = 4
ERR_ZERO_ADD = 5
ERR_LEVEL_OVERFLOW = 6   # an add that would take its price level's total past 2**63 - 1 shares
N_BOOK_ERRORS = 7
NEED_ROOM = 100      # a pool is full: grow it and call again from the returned position

BOOK_ERROR_NAMES = {
    ERR_UNKNOWN_REF: "unknown order ref",
    ERR_DUPLICATE_REF: "duplicate order ref",
    ERR_OVER_EXECUTION: "over-execution",
    ERR_OVER_CANCEL: "over-cancel",
    ERR_ZERO_ADD: "zero-share add",
    ERR_LEVEL_OVERFLOW: "level total past 2**63 - 1 shares",
}

# The replay tables' columns, declared once: (name, Arrow type, nullable, source). Source
# ROW: the kernels write it into the table's rows, in this order (the ROW_ / TR_ / OR_
# constants below are its positions there); BOOK: made from the rows' ``book`` column (the
# worker's local book): the ticker and the format's book key (``locate``, which
# obook.engine.tables.format_schema names and types as the format's); ENGINE: made by the
# engine from the batch. obook.schema builds the Arrow schemas from these, the engine's Arrow
# builders (obook.engine.arrow, obook.engine.tables) name their columns by them, and the
# kernels that write rows (book_rows, merge) use the constants.
ROW = 0
BOOK = 1
ENGINE = 2
#: every table starts with these; the rows: seq, time, book
HEAD_COLUMNS = (
    ("seq", "int64", False, ROW),        # the record that caused the row (ITCH: 1-based message number)
    ("time", "uint64", False, ROW),      # feed time (ITCH: ns since midnight, CSV: the Time column)
    ("ticker", "string", True, BOOK),
    ("locate", "uint16", True, BOOK),    # the format's book key (ITCH: stock locate); null when it has none
)
#: bbo: the best bid and ask after a record that changed them; a side is null when empty
#: (its orders 0 in the rows)
BBO_COLUMNS = HEAD_COLUMNS + (
    ("bid_px", "int64", True, ROW), ("bid_qty", "int64", True, ROW), ("bid_orders", "int32", True, ROW),
    ("ask_px", "int64", True, ROW), ("ask_qty", "int64", True, ROW), ("ask_orders", "int32", True, ROW),
)
#: trades: every execution and trade print in feed order. kind: the letter E, C, P, Q or B
#: (CSV: E, T or X); the rows' match of a CSV row is its order id's bytes (EV_MATCH:
#: start << 32 | length), which the engine turns into order_id
TRADE_COLUMNS = HEAD_COLUMNS + (
    ("kind", "string", False, ROW),      # E, C, P, Q or B; CSV E, T or X
    ("price", "int64", True, ROW),       # null for B
    ("shares", "int64", True, ROW),      # null for B
    ("side", "string", True, ROW),       # resting side B/S (P: as given); null for Q, B, T, X
    ("ref", "uint64", True, ROW),        # the order ref; null for Q, B and text order ids
    ("order_id", "string", True, ENGINE),  # a text order id (CSV Order column); null for ITCH
    ("match", "uint64", True, ROW),      # the feed's match number; null for CSV, Databento
    ("broken", "bool", False, ENGINE),   # a later B names this trade's match
)
#: orders: one row per book-changing record with the resting order's state after it (MBO);
#: the queue columns: shares and orders ahead of it at its price (rows: -1, the table:
#: null, when it does not rest after the record)
ORDER_COLUMNS = HEAD_COLUMNS + (
    ("action", "string", False, ROW),    # A (A and F), E, C, X, D, U; CSV A, E, C, D (D and F)
    ("side", "string", False, ROW),
    ("price", "int64", False, ROW),      # the order's price (U: the new one)
    ("shares", "int64", False, ROW),     # added / executed / cancelled (CSV C: 0 = no change) / deleted / new
    ("remaining", "int64", False, ROW),  # left on the order after the record
    ("ref", "uint64", True, ROW),        # the order ref (U: the original one); null for text order ids
    ("order_id", "string", True, ENGINE),  # a text order id (CSV Order column); null for ITCH
    ("new_ref", "uint64", True, ROW),    # U only
    ("match", "uint64", True, ROW),      # ITCH E and C only
    ("queue_shares_ahead", "int64", True, ROW),
    ("queue_orders_ahead", "int64", True, ROW),
)
#: depth: the head, then per level (bids 1..levels, then asks) these, named side_name_level
#: (bid_px_1); a level is null when it has no orders
DEPTH_COLUMNS = HEAD_COLUMNS
DEPTH_LEVEL_COLUMNS = (("px", "int64"), ("qty", "int64"), ("orders", "int32"))


def row_of(columns: tuple) -> tuple:
    """The names of a table's row as the kernels write it: its ROW columns, with ``book``
    where its BOOK columns are."""
    out = []
    for name, _, _, source in columns:
        if source == ROW:
            out.append(name)
        elif source == BOOK and "book" not in out:
            out.append("book")
    return tuple(out)


BBO_ROW = row_of(BBO_COLUMNS)
TRADE_ROW = row_of(TRADE_COLUMNS)
ORDER_ROW = row_of(ORDER_COLUMNS)
DEPTH_ROW_HEAD = row_of(DEPTH_COLUMNS)
DEPTH_LEVEL = tuple(name for name, _ in DEPTH_LEVEL_COLUMNS)


def _at(row: tuple, names: str) -> tuple:
    """The positions of the columns ``names`` (space-separated) in ``row``."""
    return tuple(row.index(name) for name in names.split())


(ROW_SEQ, ROW_TIME, ROW_BOOK, ROW_BID_PX, ROW_BID_QTY, ROW_BID_N, ROW_ASK_PX, ROW_ASK_QTY,
 ROW_ASK_N) = _at(BBO_ROW, "seq time book bid_px bid_qty bid_orders ask_px ask_qty ask_orders")
ROW_WIDTH = len(BBO_ROW)
TR_SEQ, TR_TIME, TR_BOOK, TR_KIND, TR_PRICE, TR_SHARES, TR_SIDE, TR_REF, TR_MATCH = _at(
    TRADE_ROW, "seq time book kind price shares side ref match")
TR_WIDTH = len(TRADE_ROW)
(OR_SEQ, OR_TIME, OR_BOOK, OR_ACTION, OR_SIDE, OR_PRICE, OR_SHARES, OR_REMAINING, OR_REF, OR_NEW_REF,
 OR_MATCH, OR_Q_SHARES, OR_Q_ORDERS) = _at(
    ORDER_ROW, "seq time book action side price shares remaining ref new_ref match queue_shares_ahead "
               "queue_orders_ahead")
OR_WIDTH = len(ORDER_ROW)
DEPTH_HEAD = len(DEPTH_ROW_HEAD)
DP_PX, DP_QTY, DP_ORDERS = _at(DEPTH_LEVEL, "px qty orders")    # within a level's columns
DEPTH_LEVEL_WIDTH = len(DEPTH_LEVEL)
WANT_TRADES = 1
WANT_ORDERS = 2
WANT_DEPTH = 4
#: with WANT_ORDERS: keep the time-priority queues and fill OR_Q_SHARES / OR_Q_ORDERS (else -1)
WANT_QUEUE = 8
#: no BBO rows (a replay run only for its observer): the books are applied and checked, nothing written
WANT_NO_BBO = 16

#: at most this many records in one batch handed to the workers
MAX_BATCH_RECORDS = 1 << 16
