"""Read order-entry instructions (see the package doc) into numpy columns, vectorized.

Every malformed value is found by a vectorized check; the error names the first bad row
(1-based data row) and why.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
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
#: what a text integer may be, told after a value that is none
_WHOLE = " (a whole number: no decimal point, exponent or thousands separator)"
#: other names of the order columns that order files of other tools use: a column of such a
#: name is not read, and the warning (or the error of a column missing) names the one it may be
OTHER_NAMES = {"qty": "quantity", "size": "quantity", "shares": "quantity", "px": "price", "id": "order_id",
               "symbol": "instrument", "ticker": "instrument"}


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
        from ...checks import not_a_file

        if Path(path).exists():
            raise ObookError(not_a_file(path, "order"))
        what = "order files are read from a file, not from stdin" if path == "-" else "no such order file"
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
        return _read_csv(path)
    except UnicodeDecodeError as e:
        raise ObookError(f"{path}: cannot read the order file: not UTF-8 text (byte {e.start} of a "
                         f"column name)") from e
    except (pa.ArrowInvalid, OSError) as e:
        cut = _cut_short(path) if kind == "csv" else None
        if cut is not None:
            _read_cut(path, *cut)
        raise ObookError(f"{path}: cannot read the order file: {e}") from e


def _cut_short(path: str):
    """(the decompressed bytes, why) of a compressed file whose stream ends early or is
    damaged, up to there; None for a plain file or one that decompresses whole."""
    from ..sources import open_file

    with open(path, "rb") as f:
        magic = f.read(4)
    if not any(magic.startswith(start) for start, _, _ in _COMPRESSED):
        return None
    stream, raw = open_file(path)
    out, view = bytearray(), memoryview(bytearray(1 << 20))
    try:
        while True:
            try:
                n = stream.readinto(view)
            except (OSError, EOFError) as e:     # (the decompressors' errors)
                return bytes(out), e
            if not n:
                return None
            out += view[:n]
    finally:
        raw.close()


def _read_cut(path: str, data: bytes, why: Exception):
    """The error of an order file cut short in its compressed stream: its whole lines are
    read (an error of theirs comes first), the line the cut ends is not (its fields may
    be cut to other values); the error names that row, the rows before it go with it."""
    if b"\n" not in data.lstrip(b"\r\n"):
        raise ObookError(f"{path}: cannot read the order file: its compressed stream is cut short before the "
                         f"end of the header line ({why})")
    before = _read_csv(path, data=data[:data.rindex(b"\n") + 1])
    error = FeedError(path, before.num_rows + 1, f"the file's compressed stream is cut short at this row ({why})", unit=UNIT)
    error.table_before = before
    raise error


def _as_feed(path: str) -> str | None:
    """Why an order file that cannot be read cannot be, when it is a feed of a binary format
    (the feed given for the orders, or the two swapped); else None."""
    from .. import detect_format

    try:
        fmt = detect_format(path)
    except (ObookError, OSError):
        return None
    if fmt == "csv":            # (a CSV feed is text: an order file of other columns is named as such)
        return None
    return (f"it is a feed ({fmt}), not orders (give the feed first, then the orders: obook simulate FEED "
            f"ORDERS; an order file is a CSV, Parquet or Arrow table of instructions)")


def column_key(name: str) -> str:
    """The column a header name means: names are matched without case or surrounding spaces."""
    return name.strip().lower()


#: (first bytes, compression, the name ending a file of it needs)
_COMPRESSED = ((b"\x1f\x8b", "gzip", ".gz"), (b"\x28\xb5\x2f\xfd", "zstd", ".zst"))


def _read_csv(path: str, data: bytes | None = None) -> pa.Table:
    """A CSV order file as a table: the known columns as text (only an empty field is null:
    an instrument named NA, nan or null stays a name), the others as pyarrow infers them.
    Comma-separated; a header without a comma but with semicolons or tabs gives the
    separator. Whitespace-only lines are skipped as blank ones are; a line of another
    number of fields than the header, or a value that is not UTF-8, is an error naming
    its row. ``data``: the file's (decompressed) bytes to read in its place."""
    import pyarrow.csv as pcsv

    if data is not None:
        return _csv_table(path, pa.py_buffer(data), pcsv)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise ObookError(f"{path}: cannot read the order file: UTF-16 text; save it as UTF-8 CSV")
    for start, kind, ext in _COMPRESSED:      # (the name's ending tells pyarrow the compression)
        if magic.startswith(start) and not path.lower().endswith(ext):
            raise ObookError(f"{path}: cannot read the order file: {kind}-compressed; name it ending in {ext} "
                             f"(or decompress it)")
        skippable = kind == "zstd" and magic[1:4] == b"\x2a\x4d\x18" and magic[:1] >= b"\x50"   # (a zstd frame)
        if path.lower().endswith(ext) and magic and not magic.startswith(start) and not skippable:
            raise ObookError(f"{path}: cannot read the order file: named {ext} but not {kind}-compressed; "
                             f"name it without {ext}")
    return _csv_table(path, path, pcsv)


@contextmanager
def _signals_to_python():
    """While inside (in the main thread): Ctrl-C, SIGTERM and SIGHUP go to Python's handlers,
    not to pyarrow's. pyarrow's own (a handler it sets while it reads a CSV file, which turns
    the signal into a request to stop) held back about one in ten that came during a read
    with a handler of bad lines, until some later pyarrow call: a simulation ran to its end
    and exited 0. Python raises the signal once pyarrow returns."""
    if threading.current_thread() is not threading.main_thread():
        yield       # pyarrow sets its handler in the main thread only
        return
    pa.enable_signal_handlers(False)
    try:
        yield
    finally:
        pa.enable_signal_handlers(True)     # (pyarrow's default; it has no way to ask)


def _csv_table(path: str, whole, pcsv) -> pa.Table:
    """:func:`_read_csv` of the file's bytes ``whole`` (its path, or a buffer)."""
    with _signals_to_python():
        return _csv_table_read(path, whole, pcsv)


def _csv_table_read(path: str, whole, pcsv) -> pa.Table:
    with pa.input_stream(whole, compression="detect" if whole is path else None) as f:
        head = f.read(1 << 16)
    if not head.strip():
        raise ObookError(f"{path}: cannot read the order file: it is empty (no header line)")
    try:
        head.decode()
    except UnicodeDecodeError as e:
        feed = _as_feed(path) if e.start < len(head) - 3 else None      # (not a character cut at the end)
        if feed:
            raise ObookError(f"{path}: cannot read the order file: {feed}") from None
    line, nl, _ = head.lstrip(b"\r\n").partition(b"\n")     # (empty lines before it are skipped)
    # the header from its own line (a header alone without a line end is one too)
    first = pa.py_buffer(line + b"\n") if nl or len(head) < 1 << 16 else whole
    source = whole if nl or len(head) == 1 << 16 else first
    names = _bigger_blocks(lambda block: _header(first, pcsv, ",", block))
    delimiter = ","
    if len(names) == 1 and (";" in names[0] or "\t" in names[0]):
        delimiter = max((";", "\t"), key=names[0].count)
        names = _bigger_blocks(lambda block: _header(first, pcsv, delimiter, block))
    convert = pcsv.ConvertOptions(column_types={n: pa.string() for n in names if column_key(n) in COLUMNS},
                                  strings_can_be_null=True, null_values=[""], check_utf8=False)
    table, bad = _bigger_blocks(lambda block: _csv_rows(source, pcsv, delimiter, convert, block, True))
    if bad:     # once more in one thread, where pyarrow knows the row numbers
        table, (row, skipped) = _bigger_blocks(lambda block: _csv_rows(source, pcsv, delimiter, convert, block, False))
        lines = None if row.number is None else \
            row.number - 1 - sum(1 for s in skipped if s is not None and s < row.number)
        before = None if lines is None else _without_empty_rows(table.slice(0, lines - 1))
        error = FeedError(path, None if before is None else before.num_rows + 1,
                          f"{row.actual_columns} field{'s' if row.actual_columns != 1 else ''} "
                          f"where the header has {row.expected_columns}", unit=UNIT)
        error.table_before = before
        raise error
    for name, column in zip(table.column_names, table.columns):
        if pa.types.is_string(column.type):
            _check_utf8(path, name, column, table)
    return _without_empty_rows(table)


def _without_empty_rows(table: pa.Table) -> pa.Table:
    """The rows with a value: a line of separators and spaces only (',,,,', as spreadsheets
    export below their data) is skipped as a blank line is."""
    empty = np.ones(table.num_rows, bool)
    for column in table.columns:
        if pa.types.is_string(column.type):
            column = pc.utf8_length(pc.utf8_trim_whitespace(column))
            empty &= _numpy(column, 0) == 0
        else:
            empty &= ~_numpy(column.is_valid())
    return table.filter(pa.array(~empty)) if empty.any() else table


def _bigger_blocks(read):
    """``read(block_size)``, again with bigger blocks while a line is longer than one."""
    block = 1 << 20
    while True:
        try:
            return read(block)
        except pa.ArrowInvalid as e:
            if "straddling object" not in str(e) or block >= 1 << 30:
                raise
            block <<= 4


def _header(source, pcsv, delimiter: str, block: int) -> list:
    """The column names of line 1, read by pyarrow as the rows will be."""
    with pcsv.open_csv(source, parse_options=pcsv.ParseOptions(delimiter=delimiter, invalid_row_handler=_skip),
                       read_options=pcsv.ReadOptions(block_size=block)) as reader:
        return reader.schema.names


def _skip(row):
    return "skip"


def _csv_rows(source, pcsv, delimiter: str, convert, block: int, threads: bool):
    """(table, None), or at a line of another number of fields than the header: with
    ``threads`` (None, True); without (the table of the other lines, (the first such line,
    the numbers of the whitespace-only lines skipped))."""
    skipped, bad = [], []

    def invalid(row):
        if not row.text.replace(delimiter, "").strip():
            skipped.append(row.number)
            return "skip"
        bad.append(row)
        return "error" if threads else "skip"

    try:
        table = pcsv.read_csv(source, convert_options=convert,
                              read_options=pcsv.ReadOptions(use_threads=threads, block_size=block),
                              parse_options=pcsv.ParseOptions(delimiter=delimiter, invalid_row_handler=invalid))
    except pa.ArrowInvalid:
        if not bad:
            raise
        return None, True
    return (table, (bad[0], skipped)) if bad else (table, None)


def _check_utf8(path: str, name: str, column: pa.ChunkedArray, table: pa.Table):
    start = 0
    for chunk in column.chunks:
        try:
            chunk.validate(full=True)
        except pa.ArrowInvalid:
            for i, v in enumerate(chunk.cast(pa.binary()).to_pylist()):
                if v is not None and not _is_utf8(v):
                    before = _without_empty_rows(table.slice(0, start + i))
                    error = FeedError(path, before.num_rows + 1, f"{name} is not UTF-8 text: {v[:40]!r}", unit=UNIT)
                    error.table_before = before
                    raise error from None
        start += len(chunk)


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
    from ...checks import a_or_an

    raise ObookError(f"cannot read orders from {a_or_an(type(source).__name__)}: give a path, an Arrow, "
                     "polars or DuckDB table")


class _Rows:
    def __init__(self, name: str):
        self.name = name

    def fail(self, bad: np.ndarray, reason: str, values=None):
        """A FeedError naming the first row of ``bad``; ``values``: the column whose value of
        that row ``reason`` shows as ``{value}``."""
        rows = np.flatnonzero(bad)
        if len(rows):
            i = int(rows[0])
            v = None if values is None else values[i].as_py()
            value = repr(v) if isinstance(v, str) else str(v)
            raise FeedError(self.name, i + 1, reason.format(row=i, value=value), unit=UNIT)


def _ints(table: pa.Table, column: str, rows: _Rows):
    """(values, present) of an integer column; a value that is not an integer is an error."""
    n = table.num_rows
    col = table.column(column) if column in table.column_names else None
    if col is None or pa.types.is_null(col.type):       # (an all-empty column of a DataFrame has no type)
        return np.zeros(n, np.int64), np.zeros(n, bool)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_string_view(col.type):
        col = col.cast(pa.string())
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        empty = _numpy(pc.utf8_length(pc.utf8_trim_whitespace(col))) == 0       # (no Python scalars:
        col = pc.if_else(pa.array(empty), pa.nulls(n, col.type), col)            # they import pandas)
        ok = _numpy(pc.match_substring_regex(col, _INT), True)
        rows.fail(~ok, f"{column} is not an integer: {{value}}{_WHOLE}", col)
        present = _numpy(col.is_valid())
        out = np.zeros(n, np.int64)
        text = pc.utf8_trim_whitespace(col.filter(col.is_valid()))
        try:
            out[present] = _numpy(pc.cast(text, pa.int64()))
        except pa.ArrowInvalid:         # a plus sign (Arrow's cast takes none), or more than 64 bits
            text = pc.replace_substring_regex(text, r"^\+", "")
            try:
                out[present] = _numpy(pc.cast(text, pa.int64()))
                return out, present
            except pa.ArrowInvalid:
                pass
            big = np.zeros(n, bool)
            big[np.flatnonzero(present)] = [not _fits_int64(v) for v in text.to_pylist()]
            rows.fail(big, f"{column} is out of range (64-bit integers)")
            raise
        return out, present
    if pa.types.is_floating(col.type):
        f = _numpy(col.cast(pa.float64()), 0.0)
        present = _numpy(col.is_valid())         # a NaN is a value, not an empty cell
        rows.fail(present & np.isnan(f), f"{column} is NaN, not an integer")
        rows.fail(present & ((f != np.round(f)) | np.isinf(f)), f"{column} is not an integer: {{value}}", col)
        rows.fail(present & ((f < -2.0 ** 63) | (f >= 2.0 ** 63)), f"{column} is out of range (64-bit integers)")
        return np.where(present, f, 0).astype(np.int64), present
    if pa.types.is_decimal(col.type):          # whole values only, as of a float column
        present = _numpy(col.is_valid())
        rows.fail(present & _numpy(pc.not_equal(pc.floor(col), col), False), f"{column} is not an integer: {{value}}",
                  col)
        try:
            return _numpy(col.cast(pa.int64()), 0), present
        except pa.ArrowInvalid:
            big = np.array([v is not None and not -2 ** 63 <= v < 2 ** 63 for v in col.to_pylist()], bool)
            rows.fail(big, f"{column} is out of range (64-bit integers)")
            raise
    if pa.types.is_integer(col.type):
        present = _numpy(col.is_valid())
        if col.type == pa.uint64():         # past 2**63 - 1 does not fit
            big = present & (_numpy(col.cast(pa.int64(), safe=False)) < 0)
            rows.fail(big, f"{column} is out of range (64-bit integers)")
        return _numpy(col.cast(pa.int64())), present
    raise ObookError(f"{rows.name}: column {column} has type {col.type}, not integers")


def _warn_near_misses(name: str, columns) -> None:
    """A column obook does not read whose name is close to one it does (``prce``, ``quantiy``)
    and that is not given too: a warning, since its values are not read (other columns are
    the user's own and pass quietly)."""
    import difflib
    import logging

    for c in columns:
        if c in COLUMNS:
            continue
        near = [OTHER_NAMES[column_key(c)]] if column_key(c) in OTHER_NAMES else \
            difflib.get_close_matches(column_key(c), list(COLUMNS), n=1, cutoff=0.75)
        if near and near[0] not in columns:
            logging.getLogger("obook").warning("%s: column %r is not read (did you mean %r?)", name, c, near[0])


def _other_name(columns, need: str) -> str | None:
    """The column of ``columns`` whose name (:data:`OTHER_NAMES`) says it may be ``need``."""
    return next((c for c in columns if OTHER_NAMES.get(column_key(c)) == need), None)


def _no_column(table: pa.Table, need: str) -> str:
    """What an error about values of the column ``need`` adds when ``table`` has no such
    column: the column of another name that may be it, else the columns it has (braces
    doubled: the text is a ``_Rows.fail`` reason)."""
    if need in table.column_names:
        return ""
    other = _other_name(table.column_names, need)
    said = f"rename {other!r} to {need!r}" if other else f"columns: {', '.join(table.column_names)}"
    return f" (there is no {need!r} column; {said})".replace("{", "{{").replace("}", "}}")


def _fits_int64(text: str) -> bool:
    digits = text.lstrip("-").lstrip("0")
    return len(digits) <= 19 and -(1 << 63) <= int(text) < (1 << 63)      # (no int() of thousands of digits)


def _text(col, column: str, rows: _Rows):
    """A column of another type as text; a binary value that is not UTF-8 is an error naming its row."""
    try:
        return col.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        if not (pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)):
            raise ObookError(f"{rows.name}: column {column} has type {col.type}, not text") from e
        bad = np.array([v is not None and not _is_utf8(v) for v in col.to_pylist()], bool)
        value = repr(col[int(np.argmax(bad))].as_py()[:40]).replace("{", "{{").replace("}", "}}")
        rows.fail(bad, f"{column} is not UTF-8 text: {value}")
        raise


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode()
        return True
    except UnicodeDecodeError:
        return False


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
            col = _text(col, column, rows)
        col = col.dictionary_encode()
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    words = [None if v is None else str(v).strip().lower() for v in col.dictionary.to_pylist()]
    lookup = np.array([empty if not w else codes.get(w, -2) for w in words] + [empty], np.int64)
    idx = _numpy(col.indices.cast(pa.int64()), len(words))
    out = lookup[idx]
    keys = [k for k in codes if len(k) > 1]
    rows.fail(out == -2, f"unknown {column} value {{value}} (one of {', '.join(keys)})", col.dictionary.take(
        pa.array(np.minimum(idx, len(words) - 1))) if words else None)
    return out.astype(np.int8)


def read_orders(source, *, name: str | None = None) -> Orders:
    """The instructions of ``source``; a row that cannot be read is a FeedError naming the
    first such row, with the instructions before it as ``orders_before``."""
    name = name or (os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<orders>")
    try:
        table = to_table(source)
    except FeedError as e:      # a line of a CSV file that cannot be read: its rows before it
        if getattr(e, "table_before", None) is None:
            raise
        table, error = e.table_before, e
    else:
        try:
            return _orders(table, name)
        except FeedError as e:
            error = e
    # the checks go column by column: a row before the one named may fail a later check
    while True:
        before = table.slice(0, error.record - 1)
        try:
            error.orders_before = _orders(before, name)
        except FeedError as earlier:
            error = earlier
            continue
        raise error


def _orders(table: pa.Table, name: str) -> Orders:
    rows = _Rows(name)
    n = table.num_rows
    keys = [column_key(c) if column_key(c) in COLUMNS else c for c in table.column_names]
    twice = sorted({c for c in keys if c in COLUMNS and keys.count(c) > 1})     # (others are not read)
    if twice:
        given = [repr(c) for c, k in zip(table.column_names, keys) if k in twice]
        raise ObookError(f"{name}: the column{'s' if len(twice) > 1 else ''} {', '.join(map(repr, twice))} "
                         f"given more than once ({', '.join(given)})")
    table = table.rename_columns(keys)
    _warn_near_misses(name, table.column_names)
    for need in ("instrument", "action"):
        if need not in table.column_names:
            other = _other_name(table.column_names, need)
            hint = f"; rename {other!r} to {need!r}" if other else "" if set(keys) & set(COLUMNS) else \
                f"; the order columns are {', '.join(COLUMNS[:9])} ... (a CSV file names them in its first line)"
            raise ObookError(f"{name}: no {need!r} column (columns: {', '.join(table.column_names)}){hint}")
    inst = table.column("instrument")
    if pa.types.is_boolean(inst.type):
        raise ObookError(f"{name}: column instrument has type bool, not text or whole numbers (an "
                         "instrument's name or number)")
    if pa.types.is_floating(inst.type) or pa.types.is_decimal(inst.type):     # ids written as numbers:
        ids, present = _ints(table, "instrument", rows)                       # whole ones only (1.0 -> '1')
        inst = pa.array(ids, mask=~present).cast(pa.string())
    elif not (pa.types.is_string(inst.type) or pa.types.is_large_string(inst.type)):
        inst = _text(inst, "instrument", rows)
    inst = pc.utf8_trim_whitespace(inst)
    rows.fail(~_numpy(inst.is_valid()), "no instrument")
    distinct = pc.unique(inst).drop_null()
    distinct = distinct.take(pc.array_sort_indices(distinct))    # code point order, as sorted()
    names = distinct.to_pylist()
    book = _numpy(pc.index_in(inst, value_set=distinct))
    action = _codes(table, "action", ACTIONS, rows, None)
    rows.fail(action < 0, "no action (new, modify or cancel)")
    side = _codes(table, "side", SIDES, rows, None)
    rows.fail((action == 0) & (side < 0), "a new order needs a side (buy or sell)" + _no_column(table, "side"))
    mtype = _codes(table, "type", TYPES, rows, 0)
    tif = _codes(table, "tif", TIFS, rows, 0)
    time, has_time = _ints(table, "time", rows)
    if not has_time.any():
        time = np.arange(1, n + 1, dtype=np.int64)
    rows.fail(has_time.any() & ~has_time, "no time (other rows have one; without any, the row number is the time)")
    order_id, has_id = _ints(table, "order_id", rows)
    rows.fail((action != 0) & ~has_id, "a modify or cancel needs an order_id" + _no_column(table, "order_id"))
    price, has_price = _ints(table, "price", rows)
    quantity, has_qty = _ints(table, "quantity", rows)
    rows.fail((action == 0) & ~has_qty, "a new order needs a quantity" + _no_column(table, "quantity"))
    for col, (vals, mask) in (("new_price", (price, has_price)), ("new_quantity", (quantity, has_qty))):
        if col in table.column_names:
            nv, nm = _ints(table, col, rows)
            use = (action == 1) & nm
            vals[use] = nv[use]
            mask[use] = True
    owner, _ = _ints(table, "owner", rows)
    return Orders(name, time, names, np.asarray(book, np.int64), order_id, has_id, action, side,
                  mtype == 1, tif, price, has_price, quantity, has_qty, owner)
