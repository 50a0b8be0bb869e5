"""Feed times (integers since midnight, in the feed's time unit) -> DuckDB TIME.

A feed's ``time`` counts its own unit since the session's midnight: ns for ITCH, PITCH,
Shanghai and Shenzhen, ms for CSV (the schema's ``obook.time_unit``; ``obook.time_origin``
``epoch`` for Databento, whose ``time`` is an instant, not a time of day). The conversions
here take the unit given (:func:`obook_scaled_time`) or read it from the table's schema
(:func:`obook_time_of_day`); none takes a unit for granted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from obook.checks import not_int
from obook.errors import ObookError

from ._arrow import as_array, validity

_DAY_NS = 86_400_000_000_000


def _time_from_us(us: np.ndarray, arr: pa.Array) -> pa.Array:
    bitmap, nulls = validity(arr)
    return pa.Array.from_buffers(pa.time64("us"), len(us),
                                 [bitmap, pa.py_buffer(us.astype(np.int64))], nulls)


def _one_unit(unit_ns: int) -> int:
    if isinstance(unit_ns, bool) or not isinstance(unit_ns, (int, np.integer)) or unit_ns < 1:
        raise ObookError(f"time_unit_ns must be an integer of ns of at least 1 (the schema's "
                         f"obook.time_unit), not {not_int(unit_ns)}")
    return int(unit_ns)


def _scaled(arr: pa.Array, unit_ns: int, name: str) -> pa.Array:
    """``arr`` (times of ``unit_ns`` ns each, nulls kept) as TIME; one past 24:00:00 is an error,
    checked before any truncation (a ns past midnight is not 24:00:00)."""
    vals = arr.cast(pa.uint64()).fill_null(0).to_numpy(zero_copy_only=False)
    if len(vals) and int(vals.max()) > _DAY_NS // unit_ns:
        raise ObookError(f"{name}: a time past 24:00:00 is not a time of day")
    return _time_from_us(vals.astype(np.int64) * unit_ns // 1000, arr)


def obook_scaled_time(time, time_unit_ns) -> pa.Array:
    """Feed times since midnight, ``time_unit_ns`` ns each (an int, or an array of one unit a
    row: the SQL function's), -> TIME (microseconds; a finer unit is truncated). A null unit
    gives null."""
    arr = as_array(time)
    if isinstance(time_unit_ns, (int, np.integer)):
        return _scaled(arr, _one_unit(time_unit_ns), "obook_scaled_time")
    units = as_array(time_unit_ns)
    found = [u for u in pc.unique(units).to_pylist() if u is not None]
    if len(found) == 1 and units.null_count == 0:
        return _scaled(arr, _one_unit(found[0]), "obook_scaled_time")
    out = pa.nulls(len(arr), pa.time64("us"))
    for u in found:
        rows = pc.equal(units, u)
        picked = pc.if_else(rows, arr, pa.scalar(0, arr.type))
        out = pc.if_else(rows, _scaled(picked, _one_unit(u), "obook_scaled_time"), out)
    return out


def obook_time_of_day_ms(ms) -> pa.Array:
    """Milliseconds since midnight (a CSV feed's ``time``) -> TIME (exact)."""
    return _scaled(as_array(ms), 1_000_000, "obook_time_of_day_ms")


def obook_time_of_day(table, column: str = "time") -> pa.Array:
    """The TIME of day of ``column`` of ``table`` (a ``pyarrow.Table`` or ``RecordBatch`` obook
    produced), its unit read from the table's schema (``obook.time_unit``, ``obook.time_origin``):
    right on a CSV feed's ms as on ITCH's ns. A schema without them (a bare array, a table another
    tool made) or a time since the epoch (Databento: use its ``timestamp``) is an error."""
    from obook.tables.units import time_unit_ns, units

    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        raise ObookError(f"obook_time_of_day reads the time unit from a table's schema: give the table "
                         f"(a pyarrow Table or RecordBatch obook produced), not {type(table).__name__}; "
                         "for bare times, obook_scaled_time(time, time_unit_ns)")
    meta = units(table.schema)
    if "time_unit" not in meta or "time_origin" not in meta:
        raise ObookError("obook_time_of_day: the table's schema records no time unit (obook.time_unit, "
                         "obook.time_origin); give its times to obook_scaled_time(time, time_unit_ns)")
    if column not in meta.get("time_columns", "").split(","):
        raise ObookError(f"obook_time_of_day: {column!r} is not a feed time column of the table "
                         f"(obook.time_columns: {meta.get('time_columns', '')!r})")
    if meta["time_origin"] != "midnight":
        raise ObookError(f"obook_time_of_day: the table's {column} counts from the {meta['time_origin']} "
                         "(obook.time_origin), not midnight: use its timestamp column")
    return _scaled(as_array(table.column(column)), time_unit_ns(meta["time_unit"]), "obook_time_of_day")

