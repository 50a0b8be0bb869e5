"""Exact price conversions: integer ticks (1/10000 $) <-> DECIMAL(18,4) dollars."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from obook.errors import ObookError
from obook.schema import PRICE_SCALE

from ._arrow import as_array, int64_values, validity

PRICE_TYPE = pa.decimal128(18, 4)
_MAX_UNSCALED = 10**18 - 1   # largest unscaled value of a DECIMAL(18, x)
assert PRICE_SCALE == 10**PRICE_TYPE.scale


def obook_price(ticks) -> pa.Array:
    """BIGINT ticks -> DECIMAL(18,4) dollars, exactly (the ticks are the unscaled value)."""
    arr = as_array(ticks)
    vals = int64_values(arr)
    if len(vals) and (vals.max() > _MAX_UNSCALED or vals.min() < -_MAX_UNSCALED):
        raise ObookError("obook_price: a price of 10^18 ticks or more does not fit DECIMAL(18,4)")
    words = np.empty((len(vals), 2), dtype=np.int64)
    words[:, 0] = vals
    words[:, 1] = vals >> 63          # sign extension to 128 bits
    bitmap, nulls = validity(arr)
    return pa.Array.from_buffers(PRICE_TYPE, len(vals), [bitmap, pa.py_buffer(words)], nulls)


def obook_ticks(price) -> pa.Array:
    """DECIMAL(18,4) dollars -> BIGINT ticks, exactly (the unscaled value)."""
    arr = as_array(price)
    if arr.type != PRICE_TYPE:
        arr = arr.cast(PRICE_TYPE)
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64).reshape(-1, 2)
    vals = words[arr.offset:arr.offset + len(arr), 0].copy()
    bitmap, nulls = validity(arr)
    return pa.Array.from_buffers(pa.int64(), len(vals), [bitmap, pa.py_buffer(vals)], nulls)
