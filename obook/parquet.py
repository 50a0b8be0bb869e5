"""The one Parquet writer: every Parquet file obook writes (``obook convert`` and the
pipelines, ``obook bbo --output x.parquet``, ``obook sql --output x.parquet``) goes through
:class:`ParquetSink`, so the same rows make the same file.

* Row groups are sized in bytes (``ROW_GROUP_BYTES`` of Arrow data, whatever the table's
  width): the batches of the stream are collected and cut into row groups of that size.
* Encodings (benchmarks/bench_parquet.py): integer ``seq``, ``time`` and
  ``timestamp`` grow along every file, where ``DELTA_BINARY_PACKED`` is smaller and faster
  than a dictionary that overflows into PLAIN; the depth table's int32 orders counts are
  ``BYTE_STREAM_SPLIT`` and its level columns carry no statistics (they mix every ticker:
  nothing to prune); every other column is dictionary-encoded.
* Compression (``COMPRESSIONS``, benchmarks/bench_parquet.py): ``fast`` (the default)
  or ``small`` (smaller files, slower to write).
* The depth table's level columns are written by obook's own page writer
  (:mod:`obook.parquet_levels`: numba kernels and zstd, half of Arrow's CPU for them), the
  other columns by Arrow; the bytes are the ones Arrow alone writes.
* Row groups are encoded in parallel (``ENCODE_THREADS`` threads of the sink's own; pyarrow
  encodes without the GIL) while the caller goes on collecting the next one: each full row
  group is written by a ``pq.ParquetWriter`` of its own into memory, then appended to the
  file by its thread once the one before is in, its footer's offsets moved to where they
  land (:mod:`obook.parquet_footer`); ``close`` writes the one footer. The file is the one a
  single ``pq.ParquetWriter`` writes, byte for byte up to the footer (whose key-value
  metadata may be in another order). At most ``ENCODE_THREADS`` row groups are in flight,
  and only one while the rest of the machine keeps the other cores busy (:class:`SpareCores`:
  a second encoder then only makes two hash tables share one core, benchmarks/bench_tables.py);
  a failure of one is raised by the next ``write``/``close``.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .interrupts import deferred
from .parquet_footer import FILE_ROW_GROUPS, MAGIC, footer, shifted, split
from .parquet_levels import LevelPages, level_columns

__all__ = ["ParquetSink", "parquet_options", "COMPRESSIONS", "ROW_GROUP_BYTES", "ENCODE_THREADS"]

#: Arrow bytes a row group collects before it is written (read at each flush)
ROW_GROUP_BYTES = 64 << 20
#: the CPUs this process may run on
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
#: row groups encoded at once, each on a thread of the sink's own (two at most: each one in
#: flight holds its ~64 MiB of Arrow data and its encoded bytes, ~90 MiB)
ENCODE_THREADS = max(1, min(2, _CPUS))
#: name -> ParquetWriter options, plus "levels_encoding": the encoding of the depth table's
#: price and shares columns (None: a dictionary), and "split": the integer columns written
#: BYTE_STREAM_SPLIT instead of with a dictionary; measured in benchmarks/bench_parquet.py
#: and, for "split", one 908,407-row BBO group (with zstd 1 the
#: dictionaries of locate, shares and order counts cost 1.5-2x the time for the same size,
#: with zstd 7 the locate's dictionary is 10% smaller)
COMPRESSIONS = {
    "fast": {"compression": "zstd", "compression_level": 1,
             "split": ("locate", "bid_qty", "ask_qty", "bid_orders", "ask_orders")},
    "small": {"compression": "zstd", "compression_level": 7,
              "split": ("bid_qty", "ask_qty", "bid_orders", "ask_orders")},
}

#: values Arrow's column writers take at a time (its default, 1,024, cost a BBO row group 2%
#: more CPU for the same bytes)
WRITE_BATCH_ROWS = 1 << 16

_DELTA_COLUMNS = ("seq", "time", "timestamp")
_STATS_COLUMNS = ("seq", "time", "timestamp", "ticker", "locate")


def _delta_ok(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_timestamp(t)


class SpareCores:
    """Whether the machine has a core to spare for a second encoder: the CPU that the rest of
    the machine (other processes, this one's workers) used since the last look, from Linux's
    ``/proc/stat`` less this process's own CPU. Unknown (no ``/proc/stat``): yes."""

    def __init__(self):
        self.cpus = _CPUS
        self.last = self.sample()
        self.answer = True

    @staticmethod
    def sample() -> tuple[float, float, float] | None:
        """(machine busy CPU s, this process's CPU s, monotonic s), or None."""
        try:
            with open("/proc/stat", "rb") as f:
                ticks = [int(x) for x in f.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        mine = os.times()
        return ((sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK"), mine.user + mine.system,
                time.monotonic())

    def __call__(self) -> bool:
        now = self.sample()
        if now is None or self.last is None:
            return True
        if now[2] - self.last[2] >= 0.05:           # a shorter window says nothing
            elsewhere = max(0.0, (now[0] - self.last[0]) - (now[1] - self.last[1])) / (now[2] - self.last[2])
            self.answer = elsewhere <= self.cpus - 1.0     # (this process's workers count as elsewhere)
            self.last = now
        return self.answer


def parquet_options(table: str | None, schema: pa.Schema, compression: str = "fast") -> dict:
    """``pq.ParquetWriter`` keyword options for ``schema`` (``table``: obook's table name,
    e.g. "depth", or None for any other stream)."""
    try:
        chosen = dict(COMPRESSIONS[compression])
    except KeyError:
        raise ValueError(f"compression must be one of {', '.join(COMPRESSIONS)}, not {compression!r}") from None
    levels_encoding = chosen.pop("levels_encoding", None)
    split = chosen.pop("split", ())
    encoding = {f.name: "DELTA_BINARY_PACKED" for f in schema
                if f.name in _DELTA_COLUMNS and _delta_ok(f.type)}
    encoding.update({f.name: "BYTE_STREAM_SPLIT" for f in schema
                     if f.name in split and pa.types.is_integer(f.type)})
    if table == "depth":
        encoding.update({f.name: "BYTE_STREAM_SPLIT" for f in schema
                         if "_orders_" in f.name and pa.types.is_int32(f.type)})
        if levels_encoding:
            encoding.update({f.name: levels_encoding for f in schema
                             if ("_px_" in f.name or "_qty_" in f.name) and pa.types.is_int64(f.type)})
    options = {**chosen, "use_dictionary": [n for n in schema.names if n not in encoding],
               "column_encoding": encoding, "write_batch_size": WRITE_BATCH_ROWS}
    if table in ("depth", "bbo"):      # min/max where they prune row groups (the BBO's prices,
        # shares and counts span every ticker in every group; their statistics cost 6% of a
        # group's encoding)
        options["write_statistics"] = [n for n in schema.names if n in _STATS_COLUMNS]
    return options


def table_name(schema: pa.Schema) -> str | None:
    """obook's table name of a schema (its ``obook.table`` metadata), or None."""
    name = (schema.metadata or {}).get(b"obook.table")
    return name.decode() if name else None


class ParquetSink:
    """A Parquet file written batch by batch: row groups of ``ROW_GROUP_BYTES``, the tuned
    encodings of ``table`` (default: from the schema's metadata). The caller owns the path
    (write to a temporary name, rename when complete); ``discard()`` removes it."""

    def __init__(self, path: str | Path, schema: pa.Schema, table: str | None = None,
                 compression: str = "fast"):
        self.path = Path(path)
        self.schema = schema
        self.table = table_name(schema) if table is None else table
        self.options = parquet_options(self.table, schema, compression)
        # a writer's footer without row groups: the schema, ARROW:schema, created_by
        self._meta = _encode(schema, self.options, None)[1]
        # the depth table's level columns: obook's page writer (Arrow writes the others)
        levels = level_columns(schema, self.options)
        self._levels = LevelPages(schema, levels, self.options.get("compression_level", 1)) if levels else None
        self._head_schema = schema if self._levels is None else pa.schema(
            [f for f in schema if f.name not in levels], metadata=schema.metadata)
        self._head_options = self.options if self._levels is None else _without(self.options, levels)
        self._file = open(self.path, "wb")
        self._file.write(MAGIC)
        self._offset = len(MAGIC)
        self._groups: list = []          # every row group written, offsets as in the file
        self.pending: list[pa.RecordBatch] = []
        self.pending_bytes = 0
        self.rows = 0
        self._encoder: ThreadPoolExecutor | None = None
        self._in_flight: deque[Future] = deque()
        self._spare = SpareCores()

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self.pending.append(batch)
        self.pending_bytes += batch.nbytes
        self.rows += batch.num_rows
        if self.pending_bytes >= ROW_GROUP_BYTES:
            self.flush(whole_groups=True)

    def flush(self, whole_groups: bool = False, last: bool = False) -> None:
        """Write the collected batches: with ``whole_groups``, as many row groups of
        ``ROW_GROUP_BYTES`` as they fill (the rest stays collected), else all of them as
        one row group. ``last`` (the file's end, nothing else to encode): a rest of at least
        a quarter of ``ROW_GROUP_BYTES`` is cut into ``ENCODE_THREADS`` row groups encoded at
        once (one encoded after the replay took ~0.12 s of a 15M-message BBO's wall,
        benchmarks/bench_parquet_e2e.py)."""
        if not self.pending:
            return
        table = pa.Table.from_batches(self.pending, schema=self.schema)
        n = table.num_rows
        if whole_groups:
            per_group = max(1, int(ROW_GROUP_BYTES * n / max(1, self.pending_bytes)))
            full = n // per_group * per_group
        elif last and ENCODE_THREADS > 1 and self.pending_bytes * 4 >= ROW_GROUP_BYTES:
            per_group, full = -(-n // ENCODE_THREADS), n
        else:
            per_group = full = n
        for start in range(0, full, per_group):
            self._write_group(table.slice(start, per_group), at_once=last)
            self._keep(table.slice(start + per_group))    # (an interrupt: what is left, once)
        self._keep(table.slice(full))

    def _keep(self, rest: pa.Table) -> None:
        """``rest`` is what is still to be written."""
        self.pending = rest.to_batches() if rest.num_rows else []
        self.pending_bytes = rest.nbytes if rest.num_rows else 0

    def _write_group(self, table: pa.Table, at_once: bool = False) -> None:
        """Hand ``table`` (one row group) to an encoding thread once fewer than
        ``ENCODE_THREADS`` are in flight (one when no core is spare, unless ``at_once``)."""
        limit = ENCODE_THREADS if ENCODE_THREADS > 1 and (at_once or self._spare()) else 1
        while self._in_flight and (len(self._in_flight) >= limit or self._in_flight[0].done()):
            self._in_flight.popleft().result()
        if self._encoder is None:
            self._encoder = ThreadPoolExecutor(ENCODE_THREADS, thread_name_prefix="obook-parquet")
        prev = self._in_flight[-1] if self._in_flight else None
        self._in_flight.append(self._encoder.submit(self._encode_group, table, prev))

    def _encode_group(self, table: pa.Table, prev: Future | None) -> None:
        """(On an encoding thread.) Encode ``table``, then, once the row group before it is in
        the file, append it: its bytes, and its footer's row groups moved to where they land."""
        if self._levels is None:
            body, meta = _encode(self.schema, self.options, table)
            parts = [body]
        else:
            body, meta = _encode(self._head_schema, self._head_options, self._levels.head(table))
            parts, meta = self._levels.append(body, meta, table)
        if prev is not None:
            prev.result()       # in the file (or failed: so does this one)
        delta = self._offset - len(MAGIC)
        for group in meta.get(FILE_ROW_GROUPS, (0, []))[1]:
            self._groups.append(shifted(group, delta, len(self._groups)))
        for part in parts:
            self._file.write(part)
            self._offset += len(part)

    def _stop_encoder(self) -> None:
        for f in self._in_flight:
            f.cancel()
        if self._encoder is not None:
            self._encoder.shutdown(wait=True)
            self._encoder = None

    def close(self, metadata: dict[str, str] | None = None) -> None:
        try:
            self.flush(last=True)
            while self._in_flight:
                self._in_flight.popleft().result()
        finally:
            self._stop_encoder()
        self._file.write(footer(self._meta, self._groups, metadata))
        self._file.close()

    def discard(self) -> None:
        """Stop writing and remove the file; a Ctrl-C that comes meanwhile is raised once it is gone."""
        with deferred():
            self._stop_encoder()
            self._in_flight.clear()
            self._file.close()
            self.pending = []
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


def _without(options: dict, names: list[str]) -> dict:
    """``options`` for a schema without the columns ``names``."""
    gone = set(names)
    out = dict(options)
    for key in ("use_dictionary", "write_statistics"):
        if isinstance(out.get(key), list):
            out[key] = [n for n in out[key] if n not in gone]
    out["column_encoding"] = {k: v for k, v in out.get("column_encoding", {}).items() if k not in gone}
    return out


def _encode(schema: pa.Schema, options: dict, table: pa.Table | None):
    """``table`` (one row group; None: none) as a Parquet file in memory: (its body, its footer)."""
    buf = pa.BufferOutputStream()
    writer = pq.ParquetWriter(buf, schema, **options)
    try:
        if table is not None:
            writer.write_table(table, row_group_size=table.num_rows)
    finally:
        writer.close()
    return split(buf.getvalue())
