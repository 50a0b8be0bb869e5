"""Read order-entry instructions (see the package doc) into numpy columns, vectorized.

Every malformed value is found by a vectorized check; the error names the first bad row
(1-based data row) and why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import FeedError, ObookError
from . import COLUMNS, UNIT

ACTIONS = {"new": 0, "n": 0, "modify": 1, "m": 1, "cancel": 2, "c": 2}
SIDES = {"buy": 0, "b": 0, "bid": 0, "sell": 1, "s": 1, "ask": 1}
TYPES = {"limit": 0, "l": 0, "market": 1, "mkt": 1}
TIFS = {"gtc": 0, "day": 1, "ioc": 2, "fok": 3}
_INT = r"^\s*[+-]?[0-9]+\s*$"


@dataclass
class Orders:
    """Instructions as columns; ``has_*`` masks mark the non-empty values."""
    name: str
    time: np.ndarray
    instruments: list          # book -> instrument name (sorted)
    book: np.ndarray
    order_id: np.ndarray
    has_id: np.ndarray
    action: np.ndarray
    side: np.ndarray           # -1 where not given (modify, cancel)
    market: np.ndarray
    tif: np.ndarray
    price: np.ndarray
    has_price: np.ndarray
    quantity: np.ndarray
    has_quantity: np.ndarray
    owner: np.ndarray

    @property
    def n(self) -> int:
        return len(self.time)


def _sniff(path: str) -> str:
    low = path.lower()
    for ext, kind in ((".parquet", "parquet"), (".pq", "parquet"), (".arrow", "ipc"),
                      (".feather", "ipc"), (".ipc", "ipc"), (".csv", "csv"), (".csv.gz", "csv")):
        if low.endswith(ext):
            return kind
    with open(path, "rb") as f:
        head = f.read(8)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1") or head.startswith(b"\xff\xff\xff\xff"):
        return "ipc"
    return "csv"


def _numpy(arr, null=0) -> np.ndarray:
    """A boolean or numeric Arrow (chunked) array as numpy, nulls as ``null``, read from its
    buffers: pyarrow's own ``to_numpy`` imports pandas on its first call (a fraction of a
    second of every ``obook match``)."""
    if isinstance(arr, pa.ChunkedArray):
        parts = [_numpy(c, null) for c in arr.chunks]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, _dtype(arr.type))
    n, off = len(arr), arr.offset
    validity, data = arr.buffers()[:2]
    if pa.types.is_boolean(arr.type):
        values = _bits(data, off, n)
    else:
        dtype = _dtype(arr.type)
        values = np.frombuffer(data, dtype, n, off * dtype.itemsize) if n else np.zeros(0, dtype)
    if arr.null_count:
        values = np.where(_bits(validity, off, n), values, np.asarray(null).astype(values.dtype))
    return values


def _bits(buf, off: int, n: int) -> np.ndarray:
    if buf is None or not n:
        return np.zeros(n, bool)
    return np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little", count=off + n)[off:].astype(bool)


def _dtype(t) -> np.dtype:
    if pa.types.is_boolean(t):
        return np.dtype(bool)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return np.dtype(t.to_pandas_dtype())
    raise TypeError(f"not a numeric Arrow type: {t}")


def _read_path(path: str) -> pa.Table:
    if not Path(path).is_file():
        what = "a directory, not an order file" if Path(path).is_dir() else \
            "not a regular file" if Path(path).exists() else "no such order file"
        raise ObookError(f"{path}: {what}")
    kind = _sniff(path)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq
            with pq.ParquetFile(path) as f:      # one file: no dataset layer (and no pandas import)
                return f.read()
        if kind == "ipc":
            import pyarrow.ipc as ipc
            try:
                return ipc.open_file(path).read_all()
            except pa.ArrowInvalid:
                return ipc.open_stream(path).read_all()
        import pyarrow.csv as pcsv
        # only an empty field is null: an instrument named NA, nan or null stays a name
        table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            column_types={c: pa.string() for c in COLUMNS}, strings_can_be_null=True, null_values=[""]))
        table.column_names           # noqa: B018 - decodes the header (UTF-8) here
        return table
    except UnicodeDecodeError as e:
        raise ObookError(f"{path}: cannot read the order file: not UTF-8 text (byte {e.start} of a "
                         f"column name)") from e
    except (pa.ArrowInvalid, OSError) as e:
        raise ObookError(f"{path}: cannot read the order file: {e}") from e


def to_table(source) -> pa.Table:
    """An Arrow table of a path, an Arrow table / reader, or a polars / DuckDB table."""
    if isinstance(source, (str, os.PathLike)):
        return _read_path(os.fspath(source))
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, pa.RecordBatchReader):
        return source.read_all()
    if hasattr(source, "collect") and hasattr(source, "lazy"):   # a polars LazyFrame
        source = source.collect()
    for method in ("to_arrow_table", "to_arrow", "fetch_arrow_table", "arrow"):     # polars, DuckDB relations
        fn = getattr(source, method, None)
        if fn is not None:
            t = fn()
            return t.read_all() if isinstance(t, pa.RecordBatchReader) else t
    if hasattr(source, "__arrow_c_stream__"):
        return pa.table(source)
    raise ObookError(f"cannot read orders from a {type(source).__name__}: give a path, an Arrow, "
                     "polars or DuckDB table")


class _Rows:
    def __init__(self, name: str):
        self.name = name

    def fail(self, bad: np.ndarray, reason: str):
        rows = np.flatnonzero(bad)
        if len(rows):
            raise FeedError(self.name, int(rows[0]) + 1, reason.format(row=int(rows[0])), unit=UNIT)


def _ints(table: pa.Table, column: str, rows: _Rows):
    """(values, present) of an integer column; a value that is not an integer is an error."""
    n = table.num_rows
    if column not in table.column_names:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    col = table.column(column)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        empty = _numpy(pc.utf8_length(pc.utf8_trim_whitespace(col))) == 0       # (no Python scalars:
        col = pc.if_else(pa.array(empty), pa.nulls(n, col.type), col)            # they import pandas)
        ok = _numpy(pc.match_substring_regex(col, _INT), True)
        rows.fail(~ok, f"{column} is not an integer")
        present = _numpy(col.is_valid())
        out = np.zeros(n, np.int64)
        text = pc.utf8_trim_whitespace(col.filter(col.is_valid()))
        try:
            out[present] = _numpy(pc.cast(text, pa.int64()))
        except pa.ArrowInvalid:         # more than 64 bits
            big = np.zeros(n, bool)
            big[np.flatnonzero(present)] = [not -(1 << 63) <= int(v) < (1 << 63) for v in text.to_pylist()]
            rows.fail(big, f"{column} is out of range (64-bit integers)")
            raise
        return out, present
    if pa.types.is_floating(col.type):
        f = _numpy(col.cast(pa.float64()), np.nan)
        present = ~np.isnan(f)
        rows.fail(present & (f != np.round(f)), f"{column} is not an integer")
        return np.where(present, f, 0).astype(np.int64), present
    if pa.types.is_integer(col.type) or pa.types.is_boolean(col.type):
        present = _numpy(col.is_valid())
        if col.type == pa.uint64():         # past 2**63 - 1 does not fit
            big = present & (_numpy(col.cast(pa.int64(), safe=False)) < 0)
            rows.fail(big, f"{column} is out of range (64-bit integers)")
        return _numpy(col.cast(pa.int64())), present
    raise ObookError(f"{rows.name}: column {column} has type {col.type}, not integers")


def _codes(table: pa.Table, column: str, codes: dict, rows: _Rows, default: int | None):
    """The code of each value of a text column (trimmed, any case); empty -> default
    (None: -1). Only the column's distinct values are looked at (dictionary encoding)."""
    n = table.num_rows
    empty = -1 if default is None else default
    if column not in table.column_names:
        return np.full(n, empty, np.int8)
    col = table.column(column)
    if not pa.types.is_dictionary(col.type):
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            col = col.cast(pa.string())
        col = col.dictionary_encode()
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    words = [None if v is None else str(v).strip().lower() for v in col.dictionary.to_pylist()]
    lookup = np.array([empty if not w else codes.get(w, -2) for w in words] + [empty], np.int64)
    idx = _numpy(col.indices.cast(pa.int64()), len(words))
    out = lookup[idx]
    keys = [k for k in codes if len(k) > 1]
    rows.fail(out == -2, f"unknown {column} value (one of {', '.join(keys)})")
    return out.astype(np.int8)


def read_orders(source, *, name: str | None = None) -> Orders:
    table = to_table(source)
    name = name or (os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<orders>")
    rows = _Rows(name)
    n = table.num_rows
    twice = sorted({c for c in table.column_names if table.column_names.count(c) > 1})
    if twice:
        raise ObookError(f"{name}: the column{'s' if len(twice) > 1 else ''} {', '.join(map(repr, twice))} "
                         "given more than once")
    for need in ("instrument", "action"):
        if need not in table.column_names:
            raise ObookError(f"{name}: no {need!r} column (columns: {', '.join(table.column_names)})")
    inst = table.column("instrument")
    if not (pa.types.is_string(inst.type) or pa.types.is_large_string(inst.type)):
        inst = inst.cast(pa.string())
    inst = pc.utf8_trim_whitespace(inst)
    rows.fail(~_numpy(inst.is_valid()), "no instrument")
    distinct = pc.unique(inst).drop_null()
    distinct = distinct.take(pc.array_sort_indices(distinct))    # code point order, as sorted()
    names = distinct.to_pylist()
    book = _numpy(pc.index_in(inst, value_set=distinct))
    action = _codes(table, "action", ACTIONS, rows, None)
    rows.fail(action < 0, "no action (new, modify or cancel)")
    side = _codes(table, "side", SIDES, rows, None)
    rows.fail((action == 0) & (side < 0), "a new order needs a side (buy or sell)")
    mtype = _codes(table, "type", TYPES, rows, 0)
    tif = _codes(table, "tif", TIFS, rows, 0)
    time, has_time = _ints(table, "time", rows)
    if not has_time.any():
        time = np.arange(1, n + 1, dtype=np.int64)
    order_id, has_id = _ints(table, "order_id", rows)
    rows.fail((action != 0) & ~has_id, "a modify or cancel needs an order_id")
    price, has_price = _ints(table, "price", rows)
    quantity, has_qty = _ints(table, "quantity", rows)
    rows.fail((action == 0) & ~has_qty, "a new order needs a quantity")
    for col, (vals, mask) in (("new_price", (price, has_price)), ("new_quantity", (quantity, has_qty))):
        if col in table.column_names:
            nv, nm = _ints(table, col, rows)
            use = (action == 1) & nm
            vals[use] = nv[use]
            mask[use] = True
    owner, _ = _ints(table, "owner", rows)
    return Orders(name, time, names, np.asarray(book, np.int64), order_id, has_id, action, side,
                  mtype == 1, tif, price, has_price, quantity, has_qty, owner)
