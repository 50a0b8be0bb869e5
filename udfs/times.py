"""Feed times (integers since midnight) -> DuckDB TIME."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from obook.errors import ObookError

from ._arrow import as_array, validity

_DAY_US = 86_400_000_000


def _time_from_us(us: np.ndarray, arr: pa.Array) -> pa.Array:
    bitmap, nulls = validity(arr)
    return pa.Array.from_buffers(pa.time64("us"), len(us),
                                 [bitmap, pa.py_buffer(us.astype(np.int64))], nulls)


def _within_day(arr: pa.Array, per_day: int, name: str) -> np.ndarray:
    """The values (nulls as 0); one past 24:00:00 (``per_day`` units) is an error, checked
    before any truncation (a ns past midnight is not 24:00:00)."""
    vals = arr.cast(pa.uint64()).fill_null(0).to_numpy(zero_copy_only=False)
    if len(vals) and int(vals.max()) > per_day:
        raise ObookError(f"{name}: a time past 24:00:00 is not a time of day")
    return vals


def obook_time_of_day(ns) -> pa.Array:
    """Nanoseconds since midnight (ITCH, PITCH, Shanghai, Shenzhen) -> TIME (microseconds; the ns
    are truncated)."""
    arr = as_array(ns)
    return _time_from_us(_within_day(arr, _DAY_US * 1000, "obook_time_of_day") // 1000, arr)


def obook_time_of_day_ms(ms) -> pa.Array:
    """CSV-feed milliseconds since midnight -> TIME (exact)."""
    arr = as_array(ms)
    return _time_from_us(_within_day(arr, _DAY_US // 1000, "obook_time_of_day_ms") * 1000, arr)
