"""Where the live tables go: rolling Parquet files (one per interval, written through
obook's one Parquet writer, named ``<table>-<n>.parquet`` once complete: a file is written as
``.part`` and renamed when closed), an Arrow IPC stream, or a DuckDB table (appended)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa

from ..errors import ObookError
from ..parquet import ParquetSink


class RollingParquet:
    def __init__(self, outdir, table: str, schema: pa.Schema, interval: float = 60.0):
        self.dir = Path(outdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.table, self.schema, self.interval = table, schema, interval
        self.n = 0
        self.sink = None
        self.opened = 0.0
        self.files: list[Path] = []

    def write(self, batch: pa.RecordBatch) -> None:
        if self.sink is not None and time.monotonic() - self.opened >= self.interval:
            self._finish()
        if self.sink is None:
            self.n += 1
            self.sink = ParquetSink(self._path(self.n).with_suffix(".part"), self.schema, self.table)
            self.opened = time.monotonic()
        self.sink.write(batch)

    def _path(self, n: int) -> Path:
        return self.dir / f"{self.table}-{n:05d}.parquet"

    def _finish(self) -> None:
        self.sink.close()
        final = self._path(self.n)
        os.replace(self.sink.path, final)
        self.files.append(final)
        self.sink = None

    def close(self) -> None:
        if self.sink is not None:
            self._finish()


class ArrowStream:
    def __init__(self, path, schema: pa.Schema):
        self.path = Path(path)
        self.file = open(self.path, "wb")
        self.writer = pa.ipc.new_stream(self.file, schema)

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)
        self.file.flush()

    def close(self) -> None:
        self.writer.close()
        self.file.close()


class DuckDBTable:
    """Appends to ``table`` of the DuckDB database ``path`` (created on the first batch),
    every ``rows`` rows and at close."""

    def __init__(self, path, table: str, schema: pa.Schema, rows: int = 50_000):
        import duckdb

        self.con = duckdb.connect(str(path))
        self.table, self.schema, self.rows = table, schema, rows
        self.pending: list[pa.RecordBatch] = []
        self.count = 0
        self.created = False

    def write(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch)
        self.count += batch.num_rows
        if self.count >= self.rows:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        data = pa.Table.from_batches(self.pending, schema=self.schema)  # noqa: F841 - read by name
        name = '"' + self.table.replace('"', '""') + '"'
        if not self.created:
            self.con.execute(f"CREATE TABLE IF NOT EXISTS {name} AS SELECT * FROM data LIMIT 0")
            self.created = True
        self.con.execute(f"INSERT INTO {name} SELECT * FROM data")
        self.pending, self.count = [], 0

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.con.close()


def open_sinks(kind: str, path, tables, schema_of, interval: float = 60.0) -> dict:
    """One sink per table: kind "parquet" (``path`` a directory), "arrow" (``path`` a file,
    ``<table>`` inserted before the suffix for several tables) or "duckdb" (a database)."""
    check_place(kind, Path(path), tables)
    sinks = {}
    try:
        for t in tables:
            if kind == "parquet":
                sinks[t] = RollingParquet(path, t, schema_of(t), interval)
            elif kind == "arrow":
                sinks[t] = ArrowStream(_arrow_path(Path(path), t, tables), schema_of(t))
            elif kind == "duckdb":
                sinks[t] = DuckDBTable(path, t, schema_of(t))
            else:
                raise ValueError(f"unknown sink {kind!r}")
    except BaseException as e:
        close_sinks(sinks)
        if isinstance(e, Exception) and not isinstance(e, ObookError):   # OSError, DuckDB's IOException
            raise ObookError(f"{path}: cannot write the live tables there: {str(e).splitlines()[0]}") from e
        raise
    return sinks


def _arrow_path(path: Path, table: str, tables) -> Path:
    """The Arrow stream of ``table``: ``path``, or NAME-TABLE.arrow beside it for several tables."""
    return path if len(tables) == 1 else path.with_name(f"{path.stem}-{table}{path.suffix}")


def check_place(kind: str, path: Path, tables=()) -> None:
    """Where the tables go must be free for them: a folder without another session's Parquet
    files (parquet), a file that is no folder (duckdb: appended to), a new file (arrow: a
    stream is written from its first byte, it would replace what is there)."""
    if kind == "parquet":
        if path.exists() and not path.is_dir():
            raise ObookError(f"{path}: exists and is not a folder (--to parquet writes a folder of files)")
        if path.is_dir() and any(path.glob("*.parquet")):
            raise ObookError(f"{path}: holds Parquet files of another session; give an empty or new folder")
    elif path.is_dir():
        raise ObookError(f"{path}: is a folder; --to {kind} writes a file")
    elif kind == "arrow":
        for t in tables:
            f = _arrow_path(path, t, tables)
            if f.exists() or f.is_symlink():
                raise ObookError(f"{f}: exists; --to arrow writes a new file (give another name, or remove it)")


def close_sinks(sinks: dict) -> None:
    err = None
    for s in sinks.values():
        try:
            s.close()
        except Exception as e:  # noqa: BLE001 - close the others, then report the first
            err = err or e
    if err is not None:
        raise err
