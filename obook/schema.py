"""Arrow schemas, defined once; polars and DuckDB views derive from them."""

from __future__ import annotations

import pyarrow as pa

#: Prices are integers in 1/10000 of a dollar (exact); quantities are 64-bit.
PRICE_SCALE = 10_000

bbo_schema = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),       # record that caused the row
        pa.field("time", pa.uint64(), nullable=False),     # feed time: ITCH ns since midnight, CSV Time column
        pa.field("ticker", pa.string()),
        pa.field("locate", pa.uint16()),                   # ITCH stock locate; null for CSV
        pa.field("bid_px", pa.int64()),                    # null when the side is empty
        pa.field("bid_qty", pa.int64()),
        pa.field("bid_orders", pa.int32()),
        pa.field("ask_px", pa.int64()),
        pa.field("ask_qty", pa.int64()),
        pa.field("ask_orders", pa.int32()),
    ],
    metadata={b"obook.table": b"bbo", b"obook.price_scale": b"10000"},
)

itch_message_schema = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),        # 1-based message number
        pa.field("offset", pa.int64(), nullable=False),     # byte offset of the frame in the (decompressed) file
        pa.field("type", pa.string(), nullable=False),      # one character
        pa.field("locate", pa.uint16(), nullable=False),
        pa.field("tracking", pa.uint16(), nullable=False),
        pa.field("time", pa.int64(), nullable=False),       # ns since midnight
        pa.field("ref", pa.uint64()),
        pa.field("side", pa.string()),
        pa.field("shares", pa.uint64()),
        pa.field("price", pa.int64()),
        pa.field("new_ref", pa.uint64()),
        pa.field("match", pa.uint64()),
        pa.field("stock", pa.string()),
        pa.field("raw", pa.binary()),                        # S, R, H: the message bytes, type byte first
    ],
    metadata={b"obook.table": b"messages", b"obook.price_scale": b"10000"},
)


def _head():
    return [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("time", pa.uint64(), nullable=False),
        pa.field("ticker", pa.string()),
        pa.field("locate", pa.uint16()),
    ]


#: every execution and trade print in feed order: E (at the resting order's price, which
#: only the book knows), printable C (at its own price), P, Q; and B (a break of `match`).
#: CSV feeds: E (at the resting price, the shares executed) and the prints T and X.
trades_schema = pa.schema(
    _head() + [
        pa.field("kind", pa.string(), nullable=False),   # E, C, P, Q or B; CSV E, T or X
        pa.field("price", pa.int64()),                   # null for B
        pa.field("shares", pa.int64()),                  # null for B
        pa.field("side", pa.string()),                   # resting side B/S (P: as given); null for Q, B, T, X
        pa.field("ref", pa.uint64()),                    # ITCH order ref; null for Q, B and CSV
        pa.field("order_id", pa.string()),               # CSV Order column; null for ITCH
        pa.field("match", pa.uint64()),                  # the feed's match number; null for CSV, Databento
        pa.field("broken", pa.bool_(), nullable=False),  # a later B names this trade's match
    ],
    metadata={b"obook.table": b"trades", b"obook.price_scale": b"10000"},
)

#: one row per book-changing record with the resting order's state after it (MBO)
orders_schema = pa.schema(
    _head() + [
        pa.field("action", pa.string(), nullable=False),  # A (A and F), E, C, X, D, U; CSV A, E, C, D (D and F)
        pa.field("side", pa.string(), nullable=False),
        pa.field("price", pa.int64(), nullable=False),    # the order's price (U: the new one)
        pa.field("shares", pa.int64(), nullable=False),   # added / executed / cancelled (CSV C: 0 = no change) / deleted / new
        pa.field("remaining", pa.int64(), nullable=False),  # left on the order after the record
        pa.field("ref", pa.uint64()),                     # ITCH (U: the original ref); null for CSV
        pa.field("order_id", pa.string()),                # CSV Order column; null for ITCH
        pa.field("new_ref", pa.uint64()),                 # U only
        pa.field("match", pa.uint64()),                   # ITCH E and C only
        # time priority after the record: shares and orders in front of the row's order
        # (U: the new one) at its price; null when it does not rest after the record
        pa.field("queue_shares_ahead", pa.int64()),
        pa.field("queue_orders_ahead", pa.int64()),
    ],
    metadata={b"obook.table": b"orders", b"obook.price_scale": b"10000"},
)


def depth_schema(levels: int = 10) -> pa.Schema:
    """The top ``levels`` levels a side, one row per record that changes any of them."""
    fields = _head()
    for side in ("bid", "ask"):
        for i in range(1, levels + 1):
            fields += [pa.field(f"{side}_px_{i}", pa.int64()), pa.field(f"{side}_qty_{i}", pa.int64()),
                       pa.field(f"{side}_orders_{i}", pa.int32())]
    return pa.schema(fields, metadata={b"obook.table": b"depth", b"obook.price_scale": b"10000",
                                       b"obook.levels": str(levels).encode()})
