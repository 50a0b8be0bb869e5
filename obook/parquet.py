"""The one Parquet writer: every Parquet file obook writes (``obook convert`` and the
pipelines, ``obook bbo --output x.parquet``, ``obook sql --output x.parquet``) goes through
:class:`ParquetSink`, so the same rows make the same file.

* Row groups are sized in bytes (``ROW_GROUP_BYTES`` of Arrow data, whatever the table's
  width): the batches of the stream are collected and cut into row groups of that size.
* Encodings (benchmarks/LEDGER.md #15, #16, #20): integer ``seq``, ``time`` and
  ``timestamp`` grow along every file, where ``DELTA_BINARY_PACKED`` is smaller and faster
  than a dictionary that overflows into PLAIN; the depth table's int32 orders counts are
  ``BYTE_STREAM_SPLIT`` and its level columns carry no statistics (they mix every ticker:
  nothing to prune); every other column is dictionary-encoded.
* Compression (``COMPRESSIONS``, benchmarks/LEDGER.md, issue 13): ``fast`` (the default)
  or ``small`` (smaller files, slower to write).
* A full row group is encoded on a thread of the sink's own while the caller goes on
  collecting the next one (pyarrow encodes without the GIL); at most one row group is in
  flight, and a failure of its write is raised by the next ``write``/``close``.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["ParquetSink", "parquet_options", "COMPRESSIONS", "ROW_GROUP_BYTES"]

#: Arrow bytes a row group collects before it is written (read at each flush)
ROW_GROUP_BYTES = 64 << 20
#: name -> ParquetWriter options, plus "levels_encoding": the encoding of the depth table's
#: price and shares columns (None: a dictionary); measured in benchmarks/bench_parquet.py
#: (benchmarks/LEDGER.md, issue 13)
COMPRESSIONS = {
    "fast": {"compression": "zstd", "compression_level": 1},
    "small": {"compression": "zstd", "compression_level": 7},
}

_DELTA_COLUMNS = ("seq", "time", "timestamp")
_STATS_COLUMNS = ("seq", "time", "timestamp", "ticker", "locate")


def _delta_ok(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_timestamp(t)


def parquet_options(table: str | None, schema: pa.Schema, compression: str = "fast") -> dict:
    """``pq.ParquetWriter`` keyword options for ``schema`` (``table``: obook's table name,
    e.g. "depth", or None for any other stream)."""
    try:
        chosen = dict(COMPRESSIONS[compression])
    except KeyError:
        raise ValueError(f"compression must be one of {', '.join(COMPRESSIONS)}, not {compression!r}") from None
    levels_encoding = chosen.pop("levels_encoding", None)
    encoding = {f.name: "DELTA_BINARY_PACKED" for f in schema
                if f.name in _DELTA_COLUMNS and _delta_ok(f.type)}
    if table == "depth":
        encoding.update({f.name: "BYTE_STREAM_SPLIT" for f in schema
                         if "_orders_" in f.name and pa.types.is_int32(f.type)})
        if levels_encoding:
            encoding.update({f.name: levels_encoding for f in schema
                             if ("_px_" in f.name or "_qty_" in f.name) and pa.types.is_int64(f.type)})
    options = {**chosen, "use_dictionary": [n for n in schema.names if n not in encoding],
               "column_encoding": encoding}
    if table == "depth":
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
        self.writer = pq.ParquetWriter(self.path, schema,
                                       **parquet_options(self.table, schema, compression))
        self.pending: list[pa.RecordBatch] = []
        self.pending_bytes = 0
        self.rows = 0
        self._encoder: ThreadPoolExecutor | None = None
        self._in_flight: Future | None = None

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self.pending.append(batch)
        self.pending_bytes += batch.nbytes
        self.rows += batch.num_rows
        if self.pending_bytes >= ROW_GROUP_BYTES:
            self.flush(whole_groups=True)

    def flush(self, whole_groups: bool = False) -> None:
        """Write the collected batches: with ``whole_groups``, as many row groups of
        ``ROW_GROUP_BYTES`` as they fill (the rest stays collected), else all of them as
        one row group."""
        if not self.pending:
            return
        table = pa.Table.from_batches(self.pending, schema=self.schema)
        n = table.num_rows
        if whole_groups:
            per_group = max(1, int(ROW_GROUP_BYTES * n / max(1, self.pending_bytes)))
            full = n // per_group * per_group
        else:
            per_group = full = n
        self._write_group(table.slice(0, full), per_group)
        rest = table.slice(full)
        self.pending = rest.to_batches() if rest.num_rows else []
        self.pending_bytes = rest.nbytes if rest.num_rows else 0

    def _write_group(self, table: pa.Table, per_group: int) -> None:
        """Hand ``table`` to the encoding thread once the previous row group is written."""
        self._wait()
        if self._encoder is None:
            self._encoder = ThreadPoolExecutor(1, thread_name_prefix="obook-parquet")
        self._in_flight = self._encoder.submit(self.writer.write_table, table, row_group_size=per_group)

    def _wait(self) -> None:
        """Wait for the row group in flight (raising its write's error)."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            in_flight.result()

    def _stop_encoder(self) -> None:
        if self._encoder is not None:
            self._encoder.shutdown(wait=True)
            self._encoder = None

    def close(self, metadata: dict[str, str] | None = None) -> None:
        try:
            self.flush()
            self._wait()
        finally:
            self._stop_encoder()
        if metadata:
            self.writer.add_key_value_metadata(metadata)
        self.writer.close()

    def discard(self) -> None:
        try:
            self._wait()
        except Exception:  # noqa: BLE001 - already failing; the file goes anyway
            pass
        self._stop_encoder()
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - already failing; the file goes anyway
            pass
        self.pending = []
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
