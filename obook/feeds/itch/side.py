"""The ITCH side tables: ``symbols`` (R), ``system_events`` (S), ``trading_actions`` (H),
``cross_trades`` (Q).

Streamed batch by batch from the messages reader (filtered by type): their memory is one
batch's however many records the feed has. Their fields past the stock are decoded here from
its ``raw`` column (the message bytes) by the ITCH layout (``obook._kernels.itch_layout``):
a column is the message field of its name.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..._kernels.itch_layout import field
from ..base import SideTable

TYPES = {"symbols": "R", "system_events": "S", "trading_actions": "H", "cross_trades": "Q"}


def _chars(raw: list[bytes], start: int, width: int = 1, strip: bool = False) -> pa.Array:
    vals = [r[start:start + width].decode("latin-1") for r in raw]
    return pa.array([v.rstrip() for v in vals] if strip else vals, type=pa.string())


def _type_scalar(name: str):
    """The message type of side table ``name`` as an Arrow scalar (a Python one would be
    converted by pyarrow's Python-object path, which imports pandas)."""
    import numpy as np

    return pa.array(np.array([TYPES[name]], object), pa.string())[0]


def side_batches(path, wanted, on_error: str = "raise", counts: dict | None = None):
    """``(name, pyarrow.RecordBatch)`` of the wanted side tables of an ITCH feed, in one pass,
    batch by batch of the messages reader: nothing is kept past its batch (a feed of millions
    of ``R`` costs one batch). ``counts`` gets the messages by type as they go by."""
    from .messages import read_itch

    for batch in read_itch(path, on_error):
        if counts is not None:
            vc = pc.value_counts(batch.column("type"))
            for v, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
                counts[v] = counts.get(v, 0) + c
        for name in wanted:
            rows = batch.filter(pc.equal(batch.column("type"), _type_scalar(name)))
            rows = rows.filter(pc.is_valid(rows.column("raw")))   # tolerant mode keeps short frames
            if rows.num_rows:
                yield name, _build(name, rows, rows.column("raw").to_pylist())


def _uint(raw: list[bytes], start: int, width: int) -> pa.Array:
    return pa.array([int.from_bytes(r[start:start + width], "big") for r in raw],
                    type=pa.uint32() if width == 4 else pa.uint64())


def _column(raw: list[bytes], typ: str, name: str) -> pa.Array:
    """One field of the raw messages, decoded by its layout (text is right-stripped)."""
    start, width, kind = field(typ, name)
    if kind == "u":
        return _uint(raw, start, width)
    return _chars(raw, start, width, strip=kind == "s")


def _build(name: str, rows: pa.RecordBatch, raw: list[bytes]) -> pa.RecordBatch:
    schema = SCHEMAS[name]
    arrays = [rows.column("seq"), rows.column("time").cast(pa.uint64())]
    for col in schema.names[2:]:   # locate and stock from the reader; the rest from the bytes
        arrays.append(rows.column(col) if col in ("locate", "stock") else _column(raw, TYPES[name], col))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _schema(name: str, fields: list) -> pa.Schema:
    return pa.schema(fields, metadata={b"obook.table": name.encode()})


_SEQ_TIME = [pa.field("seq", pa.int64(), nullable=False), pa.field("time", pa.uint64(), nullable=False)]
_S = pa.string()
SCHEMAS = {
    "system_events": _schema("system_events", _SEQ_TIME + [pa.field("event_code", _S)]),
    "trading_actions": _schema("trading_actions", _SEQ_TIME + [
        pa.field("locate", pa.uint16()), pa.field("stock", _S), pa.field("state", _S),
        pa.field("reason", _S)]),
    "cross_trades": _schema("cross_trades", _SEQ_TIME + [
        pa.field("locate", pa.uint16()), pa.field("stock", _S), pa.field("shares", pa.uint64()),
        pa.field("price", pa.uint32()), pa.field("match", pa.uint64()), pa.field("cross_type", _S)]),
    "symbols": _schema("symbols", _SEQ_TIME + [
        pa.field("locate", pa.uint16()), pa.field("stock", _S), pa.field("market_category", _S),
        pa.field("financial_status", _S), pa.field("round_lot_size", pa.uint32()),
        pa.field("round_lots_only", _S), pa.field("issue_classification", _S),
        pa.field("issue_subtype", _S), pa.field("authenticity", _S),
        pa.field("short_sale_threshold", _S), pa.field("ipo_flag", _S), pa.field("luld_tier", _S),
        pa.field("etp_flag", _S), pa.field("etp_leverage_factor", pa.uint32()),
        pa.field("inverse", _S)]),
}

SYMBOLS = SideTable("symbols", SCHEMAS["symbols"], side_batches)
SYSTEM_EVENTS = SideTable("system_events", SCHEMAS["system_events"], side_batches)
TRADING_ACTIONS = SideTable("trading_actions", SCHEMAS["trading_actions"], side_batches)
CROSS_TRADES = SideTable("cross_trades", SCHEMAS["cross_trades"], side_batches)
