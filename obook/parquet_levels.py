"""The depth table's level columns written by obook's own page writer, beside Arrow's.

A depth row group is 60 nullable level columns (each level's price, shares and orders count)
behind a few head columns. Arrow's column writer spends ~2.5 ms on each level column of a
152,303-row group (definition levels, dictionary, index runs: 16 ns a value), about three
quarters of a depth convert's CPU (benchmarks/bench_parquet_levels.py). :class:`LevelPages`
writes those columns' chunks itself, in the encodings Arrow would use (``obook.parquet``:
a dictionary for the int64 prices and shares, PLAIN once the dictionary passes Arrow's 1 MiB
limit; BYTE_STREAM_SPLIT for the int32 orders counts; zstd at the sink's level; data pages
v1 of ``PAGE_ROWS`` rows; no statistics, as the sink asks of these columns): the kernels of
:mod:`obook._kernels.parquet_pages` make the pages, ``zstandard`` compresses them and the
Thrift structs come from :mod:`obook.parquet_footer`. The row group's other columns are
Arrow's; :meth:`LevelPages.append` puts the level chunks after them and lists every column
in the schema's order. Readers see the same values, types and encodings as from Arrow alone
(tests/test_parquet_levels.py reads them back with pyarrow, DuckDB and polars).
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from .parquet_footer import (FILE_ROW_GROUPS, GROUP_COLUMNS, MAGIC, T_BINARY, T_FALSE, T_I32, T_I64, T_LIST,
                             T_STRUCT, Struct, encode_struct)

__all__ = ["LevelPages", "level_columns", "PAGE_ROWS"]

#: rows a data page (Arrow's max_rows_per_page)
PAGE_ROWS = 20_000
#: dictionary entries of a column chunk at most (Arrow's 1 MiB dictionary_pagesize_limit of
#: int64 values); a column with more distinct values is written PLAIN
DICT_ENTRIES = (1 << 20) // 8

# parquet.thrift values
_INT32, _INT64 = 1, 2
_PLAIN, _RLE, _RLE_DICTIONARY, _BYTE_STREAM_SPLIT = 0, 3, 8, 9
_DATA_PAGE, _DICTIONARY_PAGE = 0, 2
_ZSTD = 6
_NO_BITMAP = np.zeros(0, np.uint8)


def level_columns(schema: pa.Schema, options: dict) -> list[str]:
    """The columns of ``schema`` that :class:`LevelPages` writes under the sink's
    ``options`` (``obook.parquet.parquet_options``): nullable int64 columns with a
    dictionary and int32 ones with BYTE_STREAM_SPLIT, none with statistics, all compressed
    with zstd; only the depth table's level columns (``*_px_*``, ``*_qty_*``, ``*_orders_*``)."""
    if options.get("compression") != "zstd":
        return []
    dictionary = set(options.get("use_dictionary") or ())
    encodings = options.get("column_encoding") or {}
    stats = options.get("write_statistics", True)
    names = []
    for f in schema:
        if not any(k in f.name for k in ("_px_", "_qty_", "_orders_")) or not f.nullable:
            continue
        if stats is True or (stats and f.name in stats):
            continue
        if pa.types.is_int64(f.type) and f.name in dictionary and f.name not in encodings:
            names.append(f.name)
        elif pa.types.is_int32(f.type) and encodings.get(f.name) == "BYTE_STREAM_SPLIT":
            names.append(f.name)
    return names


class _Scratch(threading.local):
    """One encoding thread's buffers, grown to the largest row group seen."""

    rows = -1
    bitmaps = None       # the validity bitmaps whose level sections are in ``levels``
    pages = 0

    def fit(self, rows: int, level: int) -> "_Scratch":
        if rows > self.rows:
            import zstandard

            self.rows = rows
            self.defs = np.empty(rows, np.uint8)
            self.indices = np.empty(rows, np.int32)
            self.values = np.empty(rows, np.int64)
            self.dictionary = np.empty(min(rows, DICT_ENTRIES), np.int64)
            size = 1 << max(12, (2 * min(rows, DICT_ENTRIES) - 1).bit_length())
            self.keys = np.empty(size, np.int64)
            self.slots = np.empty(size, np.int32)
            self.out = np.empty(rows * 9 + (rows // PAGE_ROWS + 1) * 64, np.uint8)
            pages = rows // PAGE_ROWS + 1
            self.ends = np.empty(pages, np.int64)
            self.counts = np.empty(pages, np.int64)
            self.levels = np.empty(rows + pages * 16, np.uint8)
            self.level_ends = np.empty(pages, np.int64)
            self.zstd = {}
            self._zstandard = zstandard
        if level not in self.zstd:
            self.zstd[level] = self._zstandard.ZstdCompressor(level=level)
        return self


class LevelPages:
    """Writes ``names`` (from :func:`level_columns`) of ``schema``'s row groups, compressed
    with zstd at ``level``."""

    def __init__(self, schema: pa.Schema, names: list[str], level: int):
        self.schema = schema
        self.names = list(names)
        self.level = level
        self.int32 = {n: pa.types.is_int32(schema.field(n).type) for n in names}
        self._scratch = _Scratch()
        self._table_size: dict[str, int] = {}    # a column's hash table size, from its last row group
        from ._kernels import parquet_pages
        self._k = parquet_pages

    def head(self, table: pa.Table) -> pa.Table:
        """The columns Arrow writes."""
        return table.drop_columns(self.names)

    def append(self, body, meta: Struct, table: pa.Table) -> tuple[list, Struct]:
        """Arrow's part (``body`` after the magic, its footer ``meta``: one row group of
        ``table``'s other columns) with the level columns of ``table`` after it: (the
        part's bytes as a list of buffers, the footer with every column in the schema's
        order)."""
        group = meta.get(FILE_ROW_GROUPS)[1][0]
        at = len(MAGIC) + len(body)
        parts, chunks = [body], {}
        unc = comp = 0
        s = self._scratch.fit(table.num_rows, self.level)
        s.bitmaps = None     # addresses name buffers only while this table holds them
        for name in self.names:
            # the kernels' dictionary hash wraps around on purpose; run as Python (a tiny
            # input), numpy warns of it unless told not to, and np.seterr in obook._kernels.jit
            # holds for the thread that imported them only, not this encoding thread
            with np.errstate(over="ignore"):
                chunk, bytes_, u = self._column(s, name, table.column(name), at)
            parts += bytes_
            size = sum(len(b) for b in bytes_)
            chunks[name] = chunk
            at += size
            unc += u
            comp += size
        head = iter(group.get(GROUP_COLUMNS)[1])
        columns = [chunks[n] if n in chunks else next(head) for n in self.schema.names]
        group.set(GROUP_COLUMNS, T_LIST, (T_STRUCT, columns))
        group.set(2, T_I64, group.get(2, 0) + unc)        # total_byte_size
        group.set(6, T_I64, group.get(6, 0) + comp)       # total_compressed_size
        return parts, meta

    def _column(self, s: _Scratch, name: str, col: pa.ChunkedArray, at: int):
        """One column chunk at file offset ``at``: (its ColumnChunk, its bytes, its
        uncompressed size with headers)."""
        k = self._k
        n = len(col)
        chunks = [(c, c.offset, len(c)) for c in col.chunks if len(c)]
        is32 = self.int32[name]
        dtype = np.int32 if is32 else np.int64
        vals = s.values.view(dtype)
        ni = done = 0
        for c, off, ln in chunks:
            validity, data = c.buffers()
            valid = np.frombuffer(validity, np.uint8) if validity is not None and c.null_count else _NO_BITMAP
            ni = k.compact(np.frombuffer(data, dtype, ln, off * dtype().itemsize), valid, off, ln, vals, ni,
                           s.defs, done)
            done += ln
        nd = -1
        if not is32:
            # the hash table: 4x the entries this column had in the last row group, doubled
            # when it would be more than half full
            size = self._table_size.get(name, 1 << 12)
            while True:
                s.slots[:size].fill(-1)
                nd = k.dict_dense(vals, 0, ni, s.keys[:size], s.slots[:size], s.dictionary, 0, s.indices)
                if nd != -2 or size >= s.keys.shape[0]:
                    break
                size *= 2
            if nd >= 0:
                self._table_size[name] = max(1 << 12, 1 << (4 * nd).bit_length())
        if nd >= 0:
            mode, raw, width, encoding = k.DICT_INDICES, _NO_BITMAP, 8, _RLE_DICTIONARY
        else:       # BYTE_STREAM_SPLIT (int32) or PLAIN (a dictionary too large)
            mode = k.BYTE_SPLIT if is32 else k.PLAIN
            raw, width = vals[:ni].view(np.uint8), dtype().itemsize
            encoding = _BYTE_STREAM_SPLIT if is32 else _PLAIN
        # the definition levels' sections, unless the column before had the same bitmaps
        bitmaps = tuple((c.buffers()[0].address if c.null_count else 0, off, ln) for c, off, ln in chunks)
        if bitmaps != s.bitmaps:
            s.pages = k.level_sections(s.defs, n, PAGE_ROWS, s.levels, s.level_ends, s.counts)
            s.bitmaps = bitmaps
        pages = s.pages
        k.page_bodies(s.levels, s.level_ends, s.counts, pages, s.indices, raw, width, mode, s.out, s.ends)
        zstd = s.zstd[self.level]
        out, unc, dict_at = [], 0, None
        if encoding == _RLE_DICTIONARY:
            dict_at = at
            page = s.dictionary[:nd].tobytes()
            packed = zstd.compress(page)
            header = encode_struct(Struct([
                [1, T_I32, _DICTIONARY_PAGE], [2, T_I32, len(page)], [3, T_I32, len(packed)],
                [7, T_STRUCT, Struct([[1, T_I32, nd], [2, T_I32, _PLAIN], [3, T_FALSE, False]])]]))
            out += [header, packed]
            unc += len(header) + len(page)
        data_at = at + sum(len(b) for b in out)
        start = 0
        for p in range(pages):
            end = int(s.ends[p])
            rows = min(PAGE_ROWS, n - p * PAGE_ROWS)
            packed = zstd.compress(s.out[start:end])
            header = _data_page_header(end - start, len(packed), rows, encoding)
            out += [header, packed]
            unc += len(header) + end - start
            start = end
        page_kinds = [(_DATA_PAGE, encoding, pages)]
        if dict_at is not None:
            page_kinds.insert(0, (_DICTIONARY_PAGE, _PLAIN, 1))
        encodings = sorted({_RLE, encoding} | ({_PLAIN} if dict_at is not None else set()))
        meta = Struct([
            [1, T_I32, _INT32 if is32 else _INT64],
            [2, T_LIST, (T_I32, encodings)],
            [3, T_LIST, (T_BINARY, [name.encode()])],
            [4, T_I32, _ZSTD],
            [5, T_I64, n],
            [6, T_I64, unc],
            [7, T_I64, sum(len(b) for b in out)],
            [9, T_I64, data_at]]
            + ([[11, T_I64, dict_at]] if dict_at is not None else [])
            + [[13, T_LIST, (T_STRUCT, [Struct([[1, T_I32, t], [2, T_I32, e], [3, T_I32, c]]) for t, e, c in page_kinds])],
               [16, T_STRUCT, Struct([[2, T_LIST, (T_I64, [])], [3, T_LIST, (T_I64, [n - ni, ni])]])]])
        return Struct([[2, T_I64, 0], [3, T_STRUCT, meta]]), out, unc


def _zigzag(n: int) -> bytes:
    """A non-negative i32 as the compact protocol writes it (zigzag varint)."""
    n <<= 1
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _data_page_header(size: int, packed: int, rows: int, encoding: int) -> bytes:
    """A data page's PageHeader (v1, definition and repetition levels RLE, empty statistics):
    ``encode_struct`` of the same struct, written out directly (540 of them a depth row
    group; tests/test_parquet_levels.py checks the two agree)."""
    return b"".join((b"\x15\x00\x15", _zigzag(size), b"\x15", _zigzag(packed), b"\x2c\x15", _zigzag(rows),
                     b"\x15", _zigzag(encoding), b"\x15\x06\x15\x06\x1c\x00\x00\x00"))
