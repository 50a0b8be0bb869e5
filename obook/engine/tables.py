"""The tables besides the BBO (trades, orders, depth): row widths, merge and Arrow batches."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa

from .._kernels.layout import (DEPTH_COLUMNS, DEPTH_HEAD, DEPTH_LEVEL_COLUMNS, DEPTH_LEVEL_WIDTH, OR_ACTION,
                               OR_MATCH, OR_NEW_REF, OR_PRICE, OR_Q_ORDERS, OR_Q_SHARES, OR_REF, OR_REMAINING,
                               OR_SHARES, OR_SIDE, OR_WIDTH, ORDER_COLUMNS, ROW_BOOK, ROW_SEQ, ROW_TIME, ROW_WIDTH,
                               TR_KIND, TR_MATCH, TR_PRICE, TR_REF, TR_SEQ, TR_SHARES, TR_SIDE, TR_WIDTH,
                               TRADE_COLUMNS, WANT_DEPTH, WANT_ORDERS, WANT_TRADES)
from .._kernels.merge import TABLE_BLOCK, merge_depth, merge_table
from ..checks import check_levels
from ..errors import ObookError
from ..schema import depth_schema, orders_schema, trades_schema
from .arrow import Tickers, book_columns

TABLES = ("bbo", "trades", "orders", "depth")
WANT = {"trades": WANT_TRADES, "orders": WANT_ORDERS, "depth": WANT_DEPTH}
_CHARS = pa.array([chr(i) for i in range(256)], type=pa.string())
_SIDES = pa.array(["B", "S", None], type=pa.string())   # 2: a print without a side
#: a price no feed means as a price (Databento's undefined price): the trades show null
UNDEF_PRICE = np.iinfo(np.int64).max


def order_ids(spans: np.ndarray, data: np.ndarray) -> pa.Array:
    """The CSV order ids whose bytes in ``data`` are ``spans`` (start << 32 | length)."""
    starts = spans >> 32
    lens = spans & 0xFFFFFFFF
    offsets = np.zeros(len(spans) + 1, np.int32)
    offsets[1:] = np.cumsum(lens)
    index = np.repeat(starts - offsets[:-1], lens) + np.arange(offsets[-1])
    ids = pa.StringArray.from_buffers(len(spans), pa.py_buffer(offsets),
                                      pa.py_buffer(np.ascontiguousarray(data[index])))
    try:
        ids.validate(full=True)
    except pa.ArrowInvalid:      # not UTF-8: replacement characters, as the tickers get
        ids = pa.array([bytes(data[a:a + ln]).decode("utf-8", "replace")
                        for a, ln in zip(starts.tolist(), lens.tolist())], pa.string())
    return ids


#: the most depth levels a side a table has
MAX_LEVELS = 50


def check_tables(tables, levels: int, most: int = MAX_LEVELS) -> tuple[str, ...]:
    """The tables asked for, each once; an ObookError for an unknown one or for ``levels``
    outside 1 to ``most``."""
    tables = tuple(dict.fromkeys(tables))
    bad = [t for t in tables if t not in TABLES]
    if bad or not tables:
        raise ObookError(f"unknown table(s) {', '.join(bad) or '(none)'}; choose from {', '.join(TABLES)}")
    check_levels(levels, most)
    return tables


def want_bits(tables) -> int:
    return sum(WANT.get(t, 0) for t in set(tables))


def widths(tables, levels: int) -> dict[str, int]:
    """Row width of every table the workers write (the BBO always: the books compute it)."""
    out = {"bbo": ROW_WIDTH}
    for t in tables:
        if t == "trades":
            out[t] = TR_WIDTH
        elif t == "orders":
            out[t] = OR_WIDTH
        elif t == "depth":
            out[t] = DEPTH_HEAD + 2 * DEPTH_LEVEL_WIDTH * levels
    return out


def schema_of(table: str, levels: int, fmt=None, records: bool = True) -> pa.Schema:
    """The schema of a replay table; ``fmt`` (a FeedFormat) names its book key column and
    its price scale (None: the ITCH/CSV schemas of ``obook.schema``) and, with ``records``,
    adds its per-record columns at the end (``FeedFormat.record_columns``)."""
    from ..schema import bbo_schema
    schema = {"bbo": bbo_schema, "trades": trades_schema, "orders": orders_schema}.get(table) or depth_schema(levels)
    if fmt is None:
        return schema
    schema = format_schema(schema, fmt)
    for f in fmt.record_fields() if records else ():
        schema = schema.append(f)
    return schema


def key_type(fmt) -> pa.DataType | None:
    """The Arrow type of a format's book key column (None: the format has none)."""
    return None if fmt is None or fmt.book_key is None else pa.type_for_alias(fmt.book_key_type)


_formatted: dict = {}     # (schema, format name) -> format_schema's result


def format_schema(schema: pa.Schema, fmt) -> pa.Schema:
    """``schema`` with the ``locate`` column named and typed as the format's book key, and
    the units of the format's table in the metadata (obook.tables.units)."""
    key = (schema, fmt.name)
    hit = _formatted.get(key)
    if hit is not None:
        return hit
    from ..tables import table
    from ..tables.units import metadata as units

    if fmt.book_key is not None and "locate" in schema.names:
        i = schema.get_field_index("locate")
        schema = schema.set(i, pa.field(fmt.book_key, key_type(fmt)))
    metadata = dict(schema.metadata or {})
    metadata.update(units(table(metadata[b"obook.table"].decode()), fmt, schema.names))
    hit = _formatted[key[0], key[1]] = schema.with_metadata(metadata)
    return hit


class ColumnPool:
    """Output arrays of the merge, used again once no batch holds them any more.

    A batch's Arrow columns are views of the merge's output (no copy); the Parquet writer
    keeps them until their row group is encoded, a few batches later. A new array for every
    batch costs the kernel's page faults and zeroing of fresh memory, about a third of the
    merge's CPU time on the depth table (benchmarks/bench_depth_batches.py). An array is free when
    no view of it is alive: its reference count (CPython) is the pool's alone. At most
    ``keep`` arrays are kept; a caller holding every batch only makes the pool allocate.
    """

    def __init__(self, keep: int = 32):
        self.keep = keep
        self.arrays: list[np.ndarray] = []

    def get(self, need: int) -> np.ndarray:
        """A flat int64 array of ``need`` elements, reused when one at most twice its size is free."""
        best = None
        for k in range(len(self.arrays)):
            # references: the list's and getrefcount's argument (no loop variable: enumerate's
            # reused tuple would hold one more)
            if need <= self.arrays[k].size <= 2 * need and sys.getrefcount(self.arrays[k]) == 2 and (
                    best is None or self.arrays[k].size < self.arrays[best].size):
                best = k
        if best is None:
            flat = np.empty(need + need // 8, np.int64)    # room for a slightly larger batch
            if len(self.arrays) < self.keep:
                self.arrays.append(flat)
        else:
            flat = self.arrays[best]
        return flat[:need]


def carve(pool: ColumnPool | None, *parts: tuple[tuple[int, int], type]) -> list[np.ndarray]:
    """Arrays of the given (shape, dtype) parts, one after the other in one int64 array of
    ``pool`` (None: a new one); each part starts on an 8-byte boundary."""
    words = [-(-(a * b * np.dtype(t).itemsize) // 8) for (a, b), t in parts]
    flat = np.empty(sum(words), np.int64) if pool is None else pool.get(sum(words))
    out, at = [], 0
    for ((a, b), t), w in zip(parts, words):
        out.append(flat[at:at + w].view(t)[:a * b].reshape(a, b))
        at += w
    return out


def merge_table_batch(table: str, rows: np.ndarray, counts: np.ndarray, limit: int,
                      book_mul: np.ndarray, book_add: np.ndarray, tickers: Tickers,
                      fmt, levels: int, data: np.ndarray | None = None,
                      breaks=None, pool: ColumnPool | None = None) -> pa.RecordBatch | None:
    """One batch of ``table``: the workers' rows merged into feed order (seq < limit).

    ``fmt``: the FeedFormat (its book key, order ids, sideless trade kinds).
    ``data``: the batch's bytes, for text order ids (the rows hold their spans).
    ``breaks``: the format's prepass result (``broken(seq, match, is_trade)``) for the
    trades' ``broken``. ``pool``: where the merge's output arrays come from (None: new ones).
    """
    cap = int(counts.sum())
    if cap == 0:
        return None
    if table == "depth":
        return _depth_batch(rows, counts, limit, book_mul, book_add, tickers, fmt, levels, pool, cap)
    out, = carve(pool, ((rows.shape[2], cap), np.int64))
    n = merge_table(rows, counts, limit, book_mul, book_add, np.zeros(len(counts), np.int64),
                    np.empty((2, TABLE_BLOCK), np.int64), np.empty((TABLE_BLOCK, rows.shape[2]), np.int64), out)
    if n == 0:
        return None
    c = out[:, :n]
    ticker, locate = book_columns(c[ROW_BOOK].copy(), n, tickers, key_type(fmt))
    cols = {"seq": pa.array(c[ROW_SEQ]), "time": pa.array(c[ROW_TIME].view(np.uint64)), "ticker": ticker,
            "locate": locate}
    text_ids = fmt.order_ids == "text"
    if table == "trades":
        kind = c[TR_KIND]
        is_b = kind == ord("B")
        no_side = np.isin(kind, np.frombuffer(fmt.sideless_kinds.encode(), np.uint8))
        if text_ids:
            cols.update(ref=pa.nulls(n, pa.uint64()), order_id=order_ids(c[TR_MATCH], data),
                        match=pa.nulls(n, pa.uint64()))
        else:
            cols.update(ref=pa.array(c[TR_REF].view(np.uint64), mask=no_side), order_id=pa.nulls(n, pa.string()),
                        match=pa.array(c[TR_MATCH].view(np.uint64)) if fmt.match_numbers
                        else pa.nulls(n, pa.uint64()))
        broken = breaks.broken(c[TR_SEQ], c[TR_MATCH], ~is_b) if breaks is not None else np.zeros(n, bool)
        side = c[TR_SIDE]
        if fmt.aggressor_kinds:     # the resting side is the aggressor's other side
            flip = np.isin(kind, np.frombuffer(fmt.aggressor_kinds.encode(), np.uint8)) & (side < 2)
            side = np.where(flip, 1 - side, side)
        price = c[TR_PRICE]
        cols.update(kind=_CHARS.take(pa.array(kind)), price=pa.array(price, mask=is_b | (price == UNDEF_PRICE)),
                    shares=pa.array(c[TR_SHARES], mask=is_b), side=_SIDES.take(pa.array(side, mask=no_side)),
                    broken=pa.array(broken))
        batch = _batch(cols, TRADE_COLUMNS, trades_schema, fmt)
        if fmt.trade_kinds is not None:
            keep = np.isin(kind, np.frombuffer(fmt.trade_kinds.encode(), np.uint8))
            if not keep.all():
                batch = batch.filter(pa.array(keep))
                return batch if batch.num_rows else None
        return batch
    if table == "orders":
        action = c[OR_ACTION]
        if not text_ids:
            cols.update(ref=pa.array(c[OR_REF].view(np.uint64)), order_id=pa.nulls(n, pa.string()),
                        new_ref=pa.array(c[OR_NEW_REF].view(np.uint64), mask=action != ord("U")),
                        match=pa.array(c[OR_MATCH].view(np.uint64), mask=(action != ord("E")) & (action != ord("C")))
                        if fmt.match_numbers else pa.nulls(n, pa.uint64()))
        else:
            cols.update(ref=pa.nulls(n, pa.uint64()), order_id=order_ids(c[OR_MATCH], data),
                        new_ref=pa.nulls(n, pa.uint64()), match=pa.nulls(n, pa.uint64()))
        resting = c[OR_Q_SHARES] >= 0
        cols.update(action=_CHARS.take(pa.array(action)), side=_SIDES.take(pa.array(c[OR_SIDE])),
                    price=pa.array(c[OR_PRICE]), shares=pa.array(c[OR_SHARES]), remaining=pa.array(c[OR_REMAINING]),
                    queue_shares_ahead=pa.array(c[OR_Q_SHARES], mask=~resting),
                    queue_orders_ahead=pa.array(c[OR_Q_ORDERS], mask=~resting))
        return _batch(cols, ORDER_COLUMNS, orders_schema, fmt)
    raise ValueError(f"no table {table!r}")


def _batch(cols: dict, columns: tuple, schema: pa.Schema, fmt) -> pa.RecordBatch:
    """A record batch of the arrays ``cols`` by column name, in the order of the table's
    declaration (``columns``, obook._kernels.layout)."""
    return pa.RecordBatch.from_arrays([cols[name] for name, *_ in columns], schema=format_schema(schema, fmt))


def _depth_batch(rows, counts, limit, book_mul, book_add, tickers, fmt, levels, pool, cap):
    """The depth table's batch: merge_depth writes the Arrow buffers (int64 prices and
    shares, int32 orders, a validity bitmap a level) straight from the workers' rows."""
    sides = 2 * levels                    # bids 1..levels then asks 1..levels
    out, n_orders, valid = carve(pool, ((DEPTH_HEAD + 2 * sides, cap), np.int64),
                                 ((sides, cap), np.int32), ((sides, (cap + 7) // 8), np.uint8))
    n = merge_depth(rows, counts, limit, book_mul, book_add, np.zeros(len(counts), np.int64),
                    np.empty((2, TABLE_BLOCK), np.int64), np.empty((TABLE_BLOCK, rows.shape[2]), np.int64),
                    out, n_orders, valid)
    if n == 0:
        return None
    ticker, locate = book_columns(out[ROW_BOOK, :n].copy(), n, tickers, key_type(fmt))
    cols = {"seq": pa.array(out[ROW_SEQ, :n]), "time": pa.array(out[ROW_TIME, :n].view(np.uint64)), "ticker": ticker,
            "locate": locate}
    nb = (n + 7) // 8
    arrays = [cols[name] for name, *_ in DEPTH_COLUMNS]
    for k in range(sides):      # merge_depth's columns: price, shares (out), orders (n_orders)
        v = pa.py_buffer(valid[k, :nb])
        level = {"px": out[DEPTH_HEAD + 2 * k, :n], "qty": out[DEPTH_HEAD + 1 + 2 * k, :n], "orders": n_orders[k, :n]}
        arrays += [pa.Array.from_buffers(pa.type_for_alias(typ), n, [v, pa.py_buffer(level[name])])
                   for name, typ in DEPTH_LEVEL_COLUMNS]
    return pa.RecordBatch.from_arrays(arrays, schema=format_schema(depth_schema(levels), fmt))


__all__ = ["ColumnPool", "TABLES", "check_tables", "want_bits", "widths", "schema_of", "format_schema", "key_type",
           "merge_table_batch"]
