"""Feed times (integers since midnight) -> DuckDB TIME."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from obook.errors import ObookError

from ._arrow import as_array, validity

_DAY_US = 86_400_000_000


def _time_from_us(us: np.ndarray, arr: pa.Array, name: str) -> pa.Array:
    if len(us) and int(us.max()) > _DAY_US:
        raise ObookError(f"{name}: a time past 24:00:00 is not a time of day")
    bitmap, nulls = validity(arr)
    return pa.Array.from_buffers(pa.time64("us"), len(us),
                                 [bitmap, pa.py_buffer(us.astype(np.int64))], nulls)


def _uint64_values(arr: pa.Array) -> np.ndarray:
    return arr.cast(pa.uint64()).fill_null(0).to_numpy(zero_copy_only=False)


def obook_time_of_day(ns) -> pa.Array:
    """ITCH nanoseconds since midnight -> TIME (microseconds; the ns are truncated)."""
    arr = as_array(ns)
    return _time_from_us(_uint64_values(arr) // 1000, arr, "obook_time_of_day")


def obook_time_of_day_ms(ms) -> pa.Array:
    """CSV-feed milliseconds since midnight -> TIME (exact)."""
    arr = as_array(ms)
    vals = _uint64_values(arr)
    if len(vals) and int(vals.max()) > _DAY_US // 1000:
        raise ObookError("obook_time_of_day_ms: a time past 24:00:00 is not a time of day")
    return _time_from_us(vals * 1000, arr, "obook_time_of_day_ms")
