"""The ITCH side tables: ``symbols`` (R), ``system_events`` (S), ``trading_actions`` (H).

Small (a few rows per stock a day): read whole from the messages reader (filtered by type);
their fields past the stock are decoded here from its ``raw`` column (the message bytes) by
the ITCH layout (``obook._kernels.itch_layout``): a column is the message field of its name.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..._kernels.itch_layout import field
from ..base import SideTable

TYPES = {"symbols": "R", "system_events": "S", "trading_actions": "H"}


def _chars(raw: list[bytes], start: int, width: int = 1, strip: bool = False) -> pa.Array:
    vals = [r[start:start + width].decode("latin-1") for r in raw]
    return pa.array([v.rstrip() for v in vals] if strip else vals, type=pa.string())


def _u32(raw: list[bytes], start: int) -> pa.Array:
    return pa.array([int.from_bytes(r[start:start + 4], "big") for r in raw], type=pa.uint32())


def read_side_tables(path, wanted, on_error: str = "raise") -> tuple[dict[str, pa.Table], dict]:
    """The wanted side tables of an ITCH feed in one pass; plus its message counts by type."""
    from .messages import read_itch

    types = pa.array(sorted({TYPES[t] for t in wanted}))
    parts, counts = [], {}
    for batch in read_itch(path, on_error):
        vc = pc.value_counts(batch.column("type"))
        for v, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            counts[v] = counts.get(v, 0) + c
        keep = batch.filter(pc.is_in(batch.column("type"), value_set=types))
        if keep.num_rows:
            parts.append(keep.select(["seq", "type", "locate", "time", "stock", "raw"]))
    msgs = pa.Table.from_batches(parts, schema=parts[0].schema) if parts else None
    tables = {}
    for name in wanted:
        t = TYPES[name]
        rows = msgs.filter(pc.equal(msgs["type"], t)) if msgs is not None else None
        if rows is not None:   # tolerant mode keeps short frames (raw is null): drop them here
            rows = rows.filter(pc.is_valid(rows["raw"]))
        raw = rows["raw"].to_pylist() if rows is not None else []
        tables[name] = _build(name, rows if raw else None, raw)
    return tables, counts


def _column(raw: list[bytes], typ: str, name: str) -> pa.Array:
    """One field of the raw messages, decoded by its layout (text is right-stripped)."""
    start, width, kind = field(typ, name)
    if kind == "u":
        return _u32(raw, start)
    return _chars(raw, start, width, strip=kind == "s")


def _build(name: str, rows: pa.Table | None, raw: list[bytes]) -> pa.Table:
    schema = SCHEMAS[name]
    if rows is None:
        return schema.empty_table()
    arrays = [rows["seq"], rows["time"].cast(pa.uint64())]
    for col in schema.names[2:]:   # locate and stock from the reader; the rest from the bytes
        arrays.append(rows[col] if col in ("locate", "stock") else _column(raw, TYPES[name], col))
    return pa.Table.from_arrays([pa.chunked_array(a) if isinstance(a, pa.Array) else a for a in arrays],
                                schema=schema)


def _schema(name: str, fields: list) -> pa.Schema:
    return pa.schema(fields, metadata={b"obook.table": name.encode()})


_SEQ_TIME = [pa.field("seq", pa.int64(), nullable=False), pa.field("time", pa.uint64(), nullable=False)]
_S = pa.string()
SCHEMAS = {
    "system_events": _schema("system_events", _SEQ_TIME + [pa.field("event_code", _S)]),
    "trading_actions": _schema("trading_actions", _SEQ_TIME + [
        pa.field("locate", pa.uint16()), pa.field("stock", _S), pa.field("state", _S),
        pa.field("reason", _S)]),
    "symbols": _schema("symbols", _SEQ_TIME + [
        pa.field("locate", pa.uint16()), pa.field("stock", _S), pa.field("market_category", _S),
        pa.field("financial_status", _S), pa.field("round_lot_size", pa.uint32()),
        pa.field("round_lots_only", _S), pa.field("issue_classification", _S),
        pa.field("issue_subtype", _S), pa.field("authenticity", _S),
        pa.field("short_sale_threshold", _S), pa.field("ipo_flag", _S), pa.field("luld_tier", _S),
        pa.field("etp_flag", _S), pa.field("etp_leverage_factor", pa.uint32()),
        pa.field("inverse", _S)]),
}

SYMBOLS = SideTable("symbols", SCHEMAS["symbols"], read_side_tables)
SYSTEM_EVENTS = SideTable("system_events", SCHEMAS["system_events"], read_side_tables)
TRADING_ACTIONS = SideTable("trading_actions", SCHEMAS["trading_actions"], read_side_tables)
