"""Turning the workers' BBO rows into Arrow record batches of bbo_schema (merge + columns)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._kernels.layout import BBO_COLUMNS
from .._kernels.merge import BboColumns, gather_names, merge_rows, names_nbytes
from ..schema import bbo_schema


class Tickers:
    """Ticker names by global book id, packed for the gather_names kernel; and the book
    keys of a format whose decoder names them ((book, ticker, key) pairs)."""

    def __init__(self):
        self.names: dict[int, bytes] = {}
        self.keys: dict[int, int] = {}
        self._packed = None
        self._keys = None

    def update(self, pairs) -> None:
        for book, name, *key in pairs:
            raw = name.encode("utf-8")
            if self.names.get(book) != raw:
                self.names[book] = raw
                self._packed = None
            if key:
                self.keys[book] = key[0]
                self._keys = None

    def key_values(self, book: np.ndarray) -> np.ndarray:
        """The book key of global book ids: the decoder's keys, else the ids themselves."""
        if not self.keys:
            return book
        if self._keys is None:
            self._keys = np.zeros(max(self.keys) + 1, np.int64)
            self._keys[list(self.keys)] = list(self.keys.values())
        return self._keys[book]

    def packed(self):
        if self._packed is None:
            size = max(self.names, default=-1) + 1
            off = np.zeros(size, dtype=np.int64)
            ln = np.full(size, -1, dtype=np.int64)
            arena = bytearray()
            for book, raw in self.names.items():
                off[book], ln[book] = len(arena), len(raw)
                arena += raw
            self.max_len = int(ln.max(initial=0))
            self._packed = (off, ln, np.frombuffer(bytes(arena) or b"\0", dtype=np.uint8))
        return self._packed


#: the bbo table's Arrow types by column (its declaration)
_BBO_TYPES = {name: pa.type_for_alias(typ) for name, typ, *_ in BBO_COLUMNS}


def _column(typ, n: int, values: np.ndarray, validity=None) -> pa.Array:
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(values)])


def book_columns(book: np.ndarray, n: int, tickers: Tickers, key_type: pa.DataType | None):
    """The ticker (string) and book key columns of global book ids: the key of type
    ``key_type`` (the format's ``book_key``; None: a null uint16 ``locate``)."""
    off, ln, arena = tickers.packed()
    offsets = np.empty(n + 1, np.int32)
    # the bytes of these rows' names exactly (rows x the longest name would let one hostile
    # 1 MiB ticker cost every later batch 64 GiB)
    data = np.empty(max(1, names_nbytes(book, n, ln)), np.uint8)
    tvalid = np.empty((n + 7) // 8, np.uint8)
    gather_names(book, n, off, ln, arena, offsets, data, tvalid)
    ticker = pa.Array.from_buffers(pa.string(), n, [pa.py_buffer(tvalid), pa.py_buffer(offsets),
                                                   pa.py_buffer(data)])
    if key_type is None:
        return ticker, pa.nulls(n, pa.uint16())
    return ticker, _column(key_type, n, tickers.key_values(book[:n]).astype(key_type.to_pandas_dtype()))


def merge_batch(rows: np.ndarray, counts: np.ndarray, limit: int, book_mul: np.ndarray,
                book_add: np.ndarray, tickers: Tickers, key_type: pa.DataType | None,
                schema: pa.Schema = bbo_schema) -> pa.RecordBatch | None:
    """Merge rows[w, :counts[w]] (seq < limit) in feed order into one batch (None if empty)."""
    cap = int(counts.sum())
    if cap == 0:
        return None
    seq = np.empty(cap, np.int64)
    time = np.empty(cap, np.int64)
    book = np.empty(cap, np.int64)
    px = np.empty((2, cap), np.int64)
    qty = np.empty((2, cap), np.int64)
    n_orders = np.empty((2, cap), np.int32)
    valid = np.empty((2, (cap + 7) // 8), np.uint8)
    n = merge_rows(rows, counts, limit, book_mul, book_add, np.zeros(len(counts), np.int64),
                   BboColumns(seq, time, book, px, qty, n_orders, valid))
    if n == 0:
        return None
    ticker, locate = book_columns(book, n, tickers, key_type)
    cols = {"seq": _column(pa.int64(), n, seq), "time": _column(pa.uint64(), n, time.view(np.uint64)),
            "ticker": ticker, "locate": locate}
    for s, side in enumerate(("bid", "ask")):
        v = pa.py_buffer(valid[s])
        for name, values in (("px", px[s]), ("qty", qty[s]), ("orders", n_orders[s])):
            cols[f"{side}_{name}"] = _column(_BBO_TYPES[f"{side}_{name}"], n, values, v)
    return pa.RecordBatch.from_arrays([cols[name] for name, *_ in BBO_COLUMNS], schema=schema)
