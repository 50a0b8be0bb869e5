"""The audit table's schema (cheap to import: no numba)."""

from __future__ import annotations

import pyarrow as pa

LEVELS = 10
#: the day tallies compared (snapshot NumTrades, TotalVolumeTrade, TotalValueTrade, LastPx,
#: HighPx, LowPx)
TALLIES = ("num_trades", "volume", "value", "last_px", "high_px", "low_px")

audit_schema = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),        # the snapshot's physical line
        pa.field("time", pa.uint64(), nullable=False),      # DataTimeStamp as ns since midnight
        pa.field("ticker", pa.string(), nullable=False),
        pa.field("security_id", pa.int32(), nullable=False),
        pa.field("continuous", pa.bool_(), nullable=False),  # 09:30-11:30, 13:00-14:57
        pa.field("matched", pa.bool_(), nullable=False),     # 10 levels equal some book state of the window
        pa.field("side", pa.string()),                       # first difference (null when matched): B or S
        pa.field("level", pa.int32()),                       # 1..10
        pa.field("snap_px", pa.int64()),
        pa.field("snap_qty", pa.int64()),
        pa.field("book_px", pa.int64()),
        pa.field("book_qty", pa.int64()),
    ] + [pa.field(f"{who}{name}", pa.int64(), nullable=False)   # snapshot's, then rebuilt
         for name in TALLIES for who in ("", "book_")] + [
        pa.field("tallies_matched", pa.bool_(), nullable=False),
    ],
    metadata={b"obook.table": b"audit", b"obook.price_scale": b"1000"},
)


def table_schema(name: str) -> pa.Schema:
    """The schema of one of the format's own tables (``FORMAT.tables``)."""
    return audit_schema
