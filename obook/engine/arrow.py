"""Turning merged BBO row columns into Arrow record batches of bbo_schema."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._kernels.layout import (ROW_ASK_N, ROW_ASK_PX, ROW_ASK_QTY, ROW_BID_N, ROW_BID_PX,
                               ROW_BID_QTY, ROW_BOOK, ROW_SEQ, ROW_TIME)
from ..schema import bbo_schema


class Tickers:
    """Ticker names by global book id, as an Arrow array to ``take`` from."""

    def __init__(self):
        self._names: list[str | None] = []
        self._array: pa.Array | None = None

    def update(self, pairs) -> None:
        for book, name in pairs:
            if book >= len(self._names):
                self._names.extend([None] * (book + 1 - len(self._names)))
            if self._names[book] != name:
                self._names[book] = name
                self._array = None

    def take(self, books: np.ndarray) -> pa.Array:
        if len(books) and int(books.max()) >= len(self._names):
            self._names.extend([None] * (int(books.max()) + 1 - len(self._names)))
            self._array = None
        if self._array is None:
            self._array = pa.array(self._names, type=pa.string())
        return self._array.take(pa.array(books))


def bbo_batch(cols: np.ndarray, n: int, tickers: Tickers, has_locate: bool) -> pa.RecordBatch:
    """cols: int64 (ROW_WIDTH, >= n) merged rows; copies out of cols (a reused buffer)."""
    c = cols[:, :n].copy()
    books = c[ROW_BOOK]
    bid_empty = c[ROW_BID_N] == 0
    ask_empty = c[ROW_ASK_N] == 0
    locate = pa.array(books.astype(np.uint16)) if has_locate else pa.nulls(n, pa.uint16())
    arrays = [
        pa.array(c[ROW_SEQ]),
        pa.array(c[ROW_TIME].view(np.uint64)),
        tickers.take(books),
        locate,
        pa.array(c[ROW_BID_PX], mask=bid_empty),
        pa.array(c[ROW_BID_QTY], mask=bid_empty),
        pa.array(c[ROW_BID_N].astype(np.int32), mask=bid_empty),
        pa.array(c[ROW_ASK_PX], mask=ask_empty),
        pa.array(c[ROW_ASK_QTY], mask=ask_empty),
        pa.array(c[ROW_ASK_N].astype(np.int32), mask=ask_empty),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=bbo_schema)
