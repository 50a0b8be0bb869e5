"""Arrow schemas, defined once; polars and DuckDB views derive from them."""

from __future__ import annotations

import pyarrow as pa

from ._kernels.layout import (BBO_COLUMNS, DEPTH_COLUMNS, DEPTH_LEVEL_COLUMNS, ORDER_COLUMNS, ROW,
                             TRADE_COLUMNS)

#: The default price scale (ITCH's 1/10000 of a dollar); each reader's schema records its
#: feed's own scale as obook.price_scale. Prices are exact integers; quantities 64-bit.
PRICE_SCALE = 10_000


def fields(columns) -> list[pa.Field]:
    """The Arrow fields of a table's column declarations (obook._kernels.layout)."""
    return [pa.field(name, pa.type_for_alias(typ), nullable=nullable) for name, typ, nullable, _ in columns]


def _metadata(table: str, **more) -> dict:
    return {b"obook.table": table.encode(), b"obook.price_scale": str(PRICE_SCALE).encode(),
            **{f"obook.{k}".encode(): v.encode() for k, v in more.items()}}


#: the best bid and offer after every record that changes it
bbo_schema = pa.schema(fields(BBO_COLUMNS), metadata=_metadata("bbo"))

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
        pa.field("raw", pa.binary()),                        # S, R, H, Q: the message bytes, type byte first
    ],
    metadata={b"obook.table": b"messages", b"obook.price_scale": b"10000"},
)


#: every execution and trade print in feed order: E (at the resting order's price, which
#: only the book knows), printable C (at its own price), P, Q; and B (a break of `match`).
#: CSV feeds: E (at the resting price, the shares executed) and the prints T and X.
trades_schema = pa.schema(fields(TRADE_COLUMNS), metadata=_metadata("trades"))

#: one row per book-changing record with the resting order's state after it (MBO)
orders_schema = pa.schema(fields(ORDER_COLUMNS), metadata=_metadata("orders"))


def depth_schema(levels: int = 10) -> pa.Schema:
    """The top ``levels`` levels a side, one row per record that changes any of them."""
    level = [(f"{side}_{name}_{i}", typ, True, ROW) for side in ("bid", "ask") for i in range(1, levels + 1)
             for name, typ in DEPTH_LEVEL_COLUMNS]
    return pa.schema(fields(DEPTH_COLUMNS + tuple(level)), metadata=_metadata("depth", levels=str(levels)))
