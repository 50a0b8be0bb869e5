"""obook.read_itch: the ITCH reader's decoded messages as Arrow batches."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._kernels import itch as K
from ...schema import itch_message_schema
from ..sources import BLOCK_SIZE, check_source, iter_batches, source_name
from .framer import ItchFramer

_COLUMNS = ("seq", "offset", "type", "locate", "tracking", "time", "ref", "side", "shares",
            "price", "new_ref", "match")
#: each byte's character, and "" (256) for a message without a type (built from numpy: pyarrow's
#: conversion of Python lists imports pandas)
_CHARS = pa.array(np.array([chr(i) for i in range(256)] + [""], object), type=pa.string())


def _raw_column(data: np.ndarray, local: np.ndarray, fields: np.ndarray, n: int) -> pa.Array:
    """The message bytes of the rows flagged F_RAW (S, R, H, Q: a few per stock a day)."""
    keep = (fields & K.F_RAW) != 0
    values = [None] * n
    for i in np.nonzero(keep)[0]:
        p = int(local[i])
        ln = (int(data[p]) << 8) | int(data[p + 1])
        values[i] = bytes(data[p + 2:p + 2 + ln])
    return pa.array(values, type=pa.binary())


def _messages_batch(data: np.ndarray, ints: np.ndarray, fields: np.ndarray,
                    stock_pos: np.ndarray, n: int) -> pa.RecordBatch:
    v = ints[:n].T.copy()
    f = fields[:n]

    def absent(bit):
        return (f & bit) == 0

    types = v[2]
    has_stock = stock_pos[:n] >= 0
    stocks = np.zeros((n, 8), dtype=np.uint8)
    idx = stock_pos[:n][has_stock]
    stocks[has_stock] = data[idx[:, None] + np.arange(8)]
    if stocks.max(initial=0) < 0x80:   # ASCII, as the spec's names are: valid UTF-8 as they are
        stock_col = pa.array(stocks.view("S8").ravel(), type=pa.binary(8)).cast(pa.string())
    else:                              # other bytes read as latin-1, like the replay's tickers
        stock_col = pa.array([bytes(s).decode("latin-1") for s in stocks], type=pa.string())
    import pyarrow.compute as pc
    # nulls and "" as Arrow arrays, not Python scalars (whose conversion imports pandas)
    stock_col = pc.if_else(pa.array(has_stock), pc.utf8_rtrim_whitespace(stock_col), pa.nulls(n, pa.string()))
    type_col = _CHARS.take(pa.array(np.where(types >= 0, types, 256)))
    arrays = [
        pa.array(v[0]), pa.array(v[1]), type_col,
        pa.array(v[3].astype(np.uint16)), pa.array(v[4].astype(np.uint16)), pa.array(v[5]),
        pa.array(v[6].view(np.uint64), mask=absent(K.F_REF)),
        _CHARS.take(pa.array(v[7], mask=absent(K.F_SIDE))),
        pa.array(v[8].view(np.uint64), mask=absent(K.F_SHARES)),
        pa.array(v[9], mask=absent(K.F_PRICE)),
        pa.array(v[10].view(np.uint64), mask=absent(K.F_NEWREF)),
        pa.array(v[11].view(np.uint64), mask=absent(K.F_MATCH)),
        stock_col,
        _raw_column(data, v[1] - v[1][0] if n else v[1], f, n),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=itch_message_schema)


def iter_messages(path, on_error: str = "raise", block_size: int = BLOCK_SIZE):
    framer = ItchFramer(source_name(path), on_error)
    ints = np.empty((0, len(_COLUMNS)), dtype=np.int64)
    for batch in iter_batches(path, framer, block_size):
        n = batch.n_records
        if n:
            if len(ints) < n:
                ints = np.empty((n, len(_COLUMNS)), dtype=np.int64)
                fields = np.empty(n, dtype=np.int64)
                stock_pos = np.empty(n, dtype=np.int64)
            K.itch_messages(batch.data, n, batch.base_seq, batch.offset, K.SIZES, ints, fields, stock_pos)
            yield _messages_batch(batch.data, ints, fields, stock_pos, n)
        if batch.error is not None:
            raise batch.error


def read_itch(path, on_error: str = "raise") -> pa.RecordBatchReader:
    check_source(path)
    return pa.RecordBatchReader.from_batches(itch_message_schema, iter_messages(path, on_error))
