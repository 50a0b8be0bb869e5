"""Small Arrow helpers shared by the UDF modules."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def as_array(x) -> pa.Array:
    """DuckDB may hand an arrow UDF a ChunkedArray; work on one contiguous Array."""
    if isinstance(x, pa.ChunkedArray):
        return x.combine_chunks() if x.num_chunks != 1 else x.chunk(0)
    return x


def validity(arr: pa.Array):
    """(bitmap buffer or None, null count) for an array rebuilt at offset 0."""
    if arr.null_count == 0:
        return None, 0
    return pc.is_valid(arr).buffers()[1], arr.null_count


def int64_values(arr: pa.Array) -> np.ndarray:
    """The values as int64 with nulls as 0 (no float round trip)."""
    return arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
