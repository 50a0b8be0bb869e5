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
