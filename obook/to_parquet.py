"""``obook.convert``: one feed file → self-describing Parquet tables in a directory.

Tables (``TABLES``):

* ``bbo`` — the rows of :func:`obook.bbo` (the one replay path), unchanged, plus a
  ``timestamp`` column when the session date is known;
* ``trades``, ``orders``, ``depth`` — the rows of :func:`obook.trades`, :func:`obook.orders`
  and :func:`obook.depth`, from the same replay as the BBO (and a ``timestamp`` likewise);
* the format's side tables (``FORMAT.side_tables``): ITCH ``symbols`` (the stock directory
  ``R``), ``system_events`` (``S``) and ``trading_actions`` (``H``), read by the format's
  own reader. A CSV feed has ``bbo``, ``trades``, ``orders`` and ``depth``.

Every file is ``OUTDIR/<table>.parquet`` (zstd, row groups of up to ``ROW_GROUP_ROWS``
rows or ``ROW_GROUP_BYTES`` bytes, in feed order), written under a temporary name; the files are renamed into place
only when every table is complete, so a failing feed leaves no final file. The footer's
key-value metadata holds JSON under the key ``obook`` (see :func:`convert`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._version import __version__
from .errors import ObookError, OutputError
from .feeds import side_table_names
from .session import TIMEZONE, session_date, stamp_of
from .tempfiles import remove_quietly, temp_path

log = logging.getLogger("obook")

__all__ = ["convert", "session_date", "file_digest", "TABLES", "ROW_GROUP_ROWS", "TIMEZONE",
           "read_metadata"]

REPLAY_TABLES = ("bbo", "trades", "orders", "depth")
ROW_GROUP_ROWS = 1 << 20
#: a row group is also cut at this many bytes of buffered rows (1 M rows of 50-level depth
#: would be ~3.4 GB in memory)
ROW_GROUP_BYTES = 128 << 20
METADATA_KEY = b"obook"



# --------------------------------------------------------------------------- provenance


_digests: dict[tuple, tuple[int, str]] = {}


def file_digest(path) -> tuple[int, str]:
    """(size, sha256 hex) of a file's bytes as stored (compressed for .gz); cached per
    (path, size, mtime) in this process."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    hit = _digests.get(key)
    if hit is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        hit = _digests[key] = (st.st_size, h.hexdigest())
    return hit


def read_metadata(path) -> dict:
    """The ``obook`` footer metadata of a Parquet file written by :func:`convert`."""
    meta = pq.read_metadata(path).metadata or {}
    if METADATA_KEY not in meta:
        raise ObookError(f"{path}: no obook metadata in the Parquet footer")
    return json.loads(meta[METADATA_KEY])


#: every table ``convert`` writes: the replay's, then every format's side tables
TABLES = REPLAY_TABLES + tuple(side_table_names())


# --------------------------------------------------------------------------- writing


# seq and time (and timestamp) grow along every file, where DELTA_BINARY_PACKED is smaller
# and faster than a dictionary that overflows into PLAIN (benchmarks/LEDGER.md #15, #20). The
# depth table's 60 level columns (price, shares, orders for each level) mix every ticker, so
# row-group min/max statistics on them prune nothing; its orders counts (small int32) are
# smaller and faster as BYTE_STREAM_SPLIT (zstd drops the zero high bytes) than as a
# dictionary (#16).
_DELTA_COLUMNS = ("seq", "time", "timestamp")
_STATS_COLUMNS = ("seq", "time", "timestamp", "ticker", "locate")


def _parquet_options(table: str, schema: pa.Schema) -> dict:
    """ParquetWriter options of a table besides zstd."""
    names = schema.names
    encoding = {n: "DELTA_BINARY_PACKED" for n in _DELTA_COLUMNS if n in names}
    if table == "depth":
        encoding.update({n: "BYTE_STREAM_SPLIT" for n in names if "_orders_" in n})
    options = {"use_dictionary": [n for n in names if n not in encoding], "column_encoding": encoding}
    if table == "depth":
        options["write_statistics"] = [n for n in names if n in _STATS_COLUMNS]
    return options


class _TableWriter:
    """One ``<table>.parquet`` under a temporary name; row groups of ``ROW_GROUP_ROWS``."""

    def __init__(self, outdir: Path, table: str):
        self.final = outdir / f"{table}.parquet"
        self.tmp = temp_path(self.final)
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.tmp, batch.schema, compression="zstd",
                                           **_parquet_options(self.final.stem, batch.schema))
        if batch.num_rows:
            self.pending.append(batch)
            self.pending_rows += batch.num_rows
            self.pending_bytes += batch.nbytes
            self.rows += batch.num_rows
        if self.pending_rows >= ROW_GROUP_ROWS or self.pending_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending), row_group_size=ROW_GROUP_ROWS)
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0

    def close(self, metadata: dict) -> None:
        self._flush()
        self.writer.add_key_value_metadata({METADATA_KEY.decode(): json.dumps(metadata, sort_keys=True)})
        self.writer.close()
        self.writer = None

    def discard(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001 - already failing; the temp file goes anyway
                pass
        remove_quietly(self.tmp)


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=schema)


def _ticker_set(tickers) -> pa.Array | None:
    if not tickers:
        return None
    if isinstance(tickers, str):
        tickers = tickers.split(",")
    return pa.array(sorted({t.strip() for t in tickers if t.strip()}), pa.string())


def _check_tables(tables, fmt) -> list[str]:
    if isinstance(tables, str):
        tables = [t.strip() for t in tables.split(",") if t.strip()]
    tables = list(dict.fromkeys(tables))
    if not tables:
        raise ObookError("no tables asked for; choose from " + ", ".join(TABLES))
    for t in tables:
        if t not in TABLES:
            raise ObookError(f"unknown table {t!r}; choose from {', '.join(TABLES)}")
        if t not in REPLAY_TABLES and t not in fmt.side_tables:
            owners = [f.name.upper() for f in _formats().values() if t in f.side_tables]
            raise ObookError(f"table {t!r} needs an {' or '.join(owners)} feed; a {fmt.name.upper()} "
                             f"feed has only {', '.join(REPLAY_TABLES + tuple(fmt.side_tables))}")
    return tables


def _formats():
    from .feeds import formats

    return formats()


def convert(feed, outdir, tables=("bbo",), workers: int | None = None, date=None,
            on_error: str = "raise", format: str | None = None, levels: int = 10,
            tickers=None, progress=None) -> dict:
    """Convert ``feed`` into ``OUTDIR/<table>.parquet`` for each of ``tables``.

    ``tables``: names from ``TABLES`` (a list, or a comma-separated string); bbo, trades,
    orders and depth (``levels`` a side) come from one replay; a CSV feed has no symbols,
    system_events or trading_actions. ``tickers`` (a list or comma-separated string) keeps
    only those tickers' rows. ``workers``, ``on_error`` and ``format`` as for :func:`obook.bbo`.
    ``date``: the session date (``YYYY-MM-DD``); default from a Nasdaq file name. When it
    is known, the tables get a ``timestamp`` column (``timestamp[ns, America/New_York]``:
    session midnight + the feed time).

    Returns ``{"rows": {table: n}, "stats": {...}, "session_date": ..., "source": {...},
    "files": {table: path}}``. The same dict minus ``files`` (plus ``table``,
    ``obook_version`` and ``options``) is each file's footer metadata under ``obook``.
    ``progress``: called with the bytes of the feed read so far (and a label when a new
    pass over the file starts), e.g. for a progress bar.
    ``stats`` is the replay's (``records``, ``rows``, ``skipped`` by kind, ``live_orders``,
    ``crossed_books``, ``messages_by_type``) when a replay table is converted; with only
    ITCH side tables, ``records`` and ``messages_by_type``.
    """
    from .feeds import resolve_format

    feed = Path(feed)
    if not feed.is_file():
        raise ObookError(f"{feed}: no such feed file")
    feed_format = resolve_format(format, feed)
    fmt = feed_format.name
    tables = _check_tables(tables, feed_format)
    day = session_date(feed, date, feed_format)
    outdir = Path(outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{outdir}: cannot create the output directory: {e.strerror or e}") from e
    size, sha = file_digest(feed)
    stamp = stamp_of(feed_format, day)     # the side tables' timestamps (the replay stamps its own)

    writers = {t: _TableWriter(outdir, t) for t in tables}
    stats: dict = {}
    try:
        replayed = [t for t in tables if t in REPLAY_TABLES]
        if replayed:
            from .engine.replay import Replay
            keep = _ticker_set(tickers)
            replay = Replay(feed, workers=workers, format=feed_format, on_error=on_error, tables=replayed,
                            levels=levels, date=day, progress=progress)
            for table, batch in replay.table_batches():
                if keep is not None:
                    batch = batch.filter(pc.is_in(batch.column("ticker"), value_set=keep))
                writers[table].write(batch)
            for table in replayed:
                if writers[table].writer is None:   # no batch at all: an empty file of the right schema
                    writers[table].write(_empty_batch(replay.schema(table)))
            stats.update({k: replay.stats.get(k) for k in ("records", "rows", "skipped", "live_orders",
                                                            "crossed_books", "messages_by_type")})
            stats["table_rows"] = replay.stats.get("table_rows")
        side = [t for t in tables if t not in REPLAY_TABLES]
        if side:
            counts: dict = {}    # streamed: a feed of millions of R costs one batch, not the feed
            for name, batch in feed_format.side_batches(feed, side, on_error, counts):
                writers[name].write(stamp.batch(batch))
            for name in side:
                if writers[name].writer is None:   # no row at all: an empty file of the right schema
                    writers[name].write(stamp.batch(_empty_batch(feed_format.side_table(name).schema)))
            stats.setdefault("messages_by_type", dict(sorted(counts.items())))
            stats.setdefault("records", sum(counts.values()))
        result = {
            "source": {"name": feed.name, "size": size, "sha256": sha, "format": fmt},
            "session_date": day.isoformat() if day else None,
            "rows": {t: w.rows for t, w in writers.items()},
            "stats": stats,
        }
        options = {"tables": tables, "date": date if date is None else str(date), "on_error": on_error,
                   "format": fmt, "levels": levels,
                   "tickers": sorted(_ticker_set(tickers).to_pylist()) if tickers else None}
        for t, w in writers.items():
            w.close({**result, "table": t, "obook_version": __version__, "options": options})
        for w in writers.values():
            os.replace(w.tmp, w.final)
    except BaseException as e:
        for w in writers.values():
            w.discard()
        if isinstance(e, OSError):    # the feed's read errors are ObookErrors: this is the output
            raise OutputError(f"{outdir}: write failed: {e.strerror or e}") from e
        raise
    result["files"] = {t: str(w.final) for t, w in writers.items()}
    log.info("%s: wrote %s", feed, ", ".join(f"{t} ({n} rows)" for t, n in result["rows"].items()))
    return result
