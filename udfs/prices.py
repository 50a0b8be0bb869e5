"""Exact price conversions in any feed's units: integer prices <-> DECIMAL(38,9) currency.

A feed's integer prices count 1/``price_scale`` of its currency (10000 for ITCH and
Shenzhen, 10**9 for Databento, 1000 for Shanghai: the schema's ``obook.price_scale``, see
:func:`obook.tables.units.price_scale`). Every format's scale is a power of ten of at most
10**9, so one decimal type with 9 decimals holds every format's prices exactly.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from obook.errors import ObookError

from ._arrow import as_array, int64_values, validity

#: the currency type of every format's prices: 38 digits, 9 of them decimals
PRICE_TYPE = pa.decimal128(38, 9)
_SCALES = {10**k: k for k in range(10)}


def scale_digits(price_scale) -> int:
    """The decimals of a price scale factor (10000 -> 4); not a power of ten up to 10**9 is an error."""
    digits = _SCALES.get(int(price_scale)) if price_scale is not None else None
    if digits is None:
        raise ObookError(f"price_scale must be a power of ten from 1 to 10^9 (the schema's obook.price_scale), "
                         f"not {price_scale}")
    return digits


def _per_scale(scales, n: int, convert) -> pa.Array:
    """``convert(digits)`` for the one scale of a vector, or row by row for several (null
    scale: null out)."""
    if isinstance(scales, (int, np.integer)):
        return convert(scale_digits(scales))
    scales = as_array(scales)
    found = [s for s in pc.unique(scales).to_pylist() if s is not None]
    if len(found) == 1 and scales.null_count == 0:
        return convert(scale_digits(found[0]))
    out = pa.nulls(n, PRICE_TYPE if convert.__name__ == "price" else pa.int64())
    for s in found:
        out = pc.if_else(pc.equal(scales, s), convert(scale_digits(s)), out)
    return out


def obook_price(ticks, price_scale) -> pa.Array:
    """Integer prices (BIGINT) with their scale factor -> DECIMAL(38,9) currency, exactly."""
    arr = as_array(ticks)
    vals = int64_values(arr)
    bitmap, nulls = validity(arr)
    words = np.empty((len(vals), 2), dtype=np.int64)
    words[:, 0] = vals
    words[:, 1] = vals >> 63          # sign extension to 128 bits

    def price(digits):
        # the integers are the unscaled values of DECIMAL(19, digits); widening to 9 decimals is exact
        exact = pa.Array.from_buffers(pa.decimal128(19, digits), len(vals), [bitmap, pa.py_buffer(words)], nulls)
        return exact.cast(PRICE_TYPE)
    return _per_scale(price_scale, len(vals), price)


def obook_ticks(price, price_scale) -> pa.Array:
    """Currency (DECIMAL) with the feed's scale factor -> its integer prices (BIGINT), rounded
    half to even to a whole price unit; one that does not fit BIGINT is an error."""
    arr = as_array(price)
    if not pa.types.is_decimal(arr.type):
        arr = arr.cast(PRICE_TYPE)

    too_big = "obook_ticks: a price of 2^63 price units or more (either sign) does not fit BIGINT"

    def ticks(digits):
        try:
            units = pc.round(arr, ndigits=digits, round_mode="half_to_even").cast(pa.decimal128(38, digits))
        except pa.ArrowInvalid as e:     # rounded up past the type's 38 digits: 10^20 units at the least
            raise ObookError(too_big) from e
        words = np.frombuffer(units.buffers()[1], dtype=np.int64).reshape(-1, 2)[units.offset:units.offset + len(units)]
        lo, hi = words[:, 0], words[:, 1]
        valid = np.asarray(units.is_valid())
        if np.any(valid & (hi != (lo >> 63))):
            raise ObookError(too_big)
        bitmap, nulls = validity(units)
        return pa.Array.from_buffers(pa.int64(), len(units), [bitmap, pa.py_buffer(lo.copy())], nulls)
    return _per_scale(price_scale, len(arr), ticks)
