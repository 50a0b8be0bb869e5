"""``obook.convert``: one feed (a file, a stream, or several files read as one) → self-describing
Parquet tables in a directory.

Tables (``TABLES``):

* ``bbo`` — the rows of :func:`obook.bbo` (the one replay path), unchanged, plus a
  ``timestamp`` column when the session date is known;
* ``trades``, ``orders``, ``depth`` — the rows of :func:`obook.trades`, :func:`obook.orders`
  and :func:`obook.depth`, from the same replay as the BBO (and a ``timestamp`` likewise);
* the format's side tables (``FORMAT.side_tables``): ITCH ``symbols`` (the stock directory
  ``R``), ``system_events`` (``S``), ``trading_actions`` (``H``) and ``cross_trades``
  (``Q``), read by the format's own reader. A CSV feed has ``bbo``, ``trades``, ``orders`` and ``depth``.

Every file is ``OUTDIR/<table>.parquet`` (the one Parquet writer, :mod:`obook.parquet`:
row groups sized in bytes, tuned encodings, ``compression`` "fast" or "small"; in feed order), written under a temporary name; the files are renamed into place
only when every table is complete, so a failing feed leaves no final file (a bad record: each
table's rows of the records before it as ``<table>.parquet.partial``). The footer's
key-value metadata holds JSON under the key ``obook`` (see :func:`convert`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ._version import __version__
from .errors import FeedError, ObookError, OutputError
from .interrupts import deferred
from .parquet import COMPRESSIONS, ParquetSink
from .session import TIMEZONE, partition_date, session_date, stamp_of
from .tempfiles import remove_quietly, temp_path
from .to_parquet_partial import keep_partial, last_record, run_rest_before

log = logging.getLogger("obook")

__all__ = ["convert", "session_date", "partition_date", "feed_format", "file_digest", "empty_once_decompressed",
           "check_tables", "TABLES", "COMPRESSIONS", "TIMEZONE", "read_metadata"]

REPLAY_TABLES = ("bbo", "trades", "orders", "depth")
METADATA_KEY = b"obook"


def feed_format(path) -> str:
    """The name of the feed format of a day file, told from its name and first bytes (an
    ObookError when no format knows it)."""
    from .feeds import detect_format

    return detect_format(path)


def format_names() -> tuple[str, ...]:
    """The registered feed formats' names (what ``format=`` takes)."""
    from .feeds import formats

    return tuple(formats())


# --------------------------------------------------------------------------- provenance


_digests: dict[tuple, tuple[int, str]] = {}


def file_digest(path) -> tuple[int, str]:
    """(size, sha256 hex) of a file's bytes as stored (compressed for .gz); cached in this
    process per path and what tells the file rewritten or replaced (device, inode, size,
    modification and change times: a rewrite of the same size whose modification time was
    put back still changes the change time)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    hit = _digests.get(key)
    if hit is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        hit = _digests[key] = (st.st_size, h.hexdigest())
    return hit


def empty_once_decompressed(path) -> bool:
    """Whether a feed file that holds bytes holds none once decompressed (a gzip or zstd
    file, or a zip of one file, of nothing), read as a replay reads it; a damaged file is
    not (its replay says what is wrong)."""
    from .feeds.sources import read_head

    try:
        return read_head(path, 1) == b""
    except ObookError:
        return False


def read_metadata(path) -> dict:
    """The ``obook`` footer metadata of a Parquet file written by :func:`convert`."""
    meta = pq.read_metadata(path).metadata or {}
    if METADATA_KEY not in meta:
        raise ObookError(f"{path}: no obook metadata in the Parquet footer")
    return json.loads(meta[METADATA_KEY])


def __getattr__(name):
    if name == "TABLES":    # every table ``convert`` writes: the registry's (obook.tables)
        from .tables import offered, tables

        return tuple(t for t in tables() if offered(t, "convert"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- writing


class _TableWriter:
    """One ``<table>.parquet`` under a temporary name, through the one Parquet writer
    (:class:`obook.parquet.ParquetSink`: row groups sized in bytes, the tuned encodings)."""

    def __init__(self, outdir: Path, table: str, compression: str = "fast"):
        self.final = outdir / f"{table}.parquet"
        self.tmp = temp_path(self.final)
        self.table = table
        self.compression = compression
        self.sink: ParquetSink | None = None
        self.last: int | None = None      # the last record of its rows (obook.to_parquet_partial)

    @property
    def rows(self) -> int:
        return self.sink.rows if self.sink is not None else 0

    @property
    def writer(self):
        return self.sink

    def write(self, batch: pa.RecordBatch) -> None:
        if self.sink is None:
            self.sink = ParquetSink(self.tmp, batch.schema, self.table, self.compression)
        self.sink.write(batch)
        last = last_record(batch)
        if last is not None:
            self.last = last if self.last is None else max(self.last, last)

    def close(self, metadata: dict) -> None:
        self.sink.close({METADATA_KEY.decode(): json.dumps(metadata, sort_keys=True)})

    def discard(self) -> None:
        if self.sink is not None:
            try:
                self.sink.discard()
            except Exception:  # noqa: BLE001 - already failing; the temp file goes anyway
                pass
        remove_quietly(self.tmp)


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=schema)


def _check_tables(tables, fmt) -> list[str]:
    from .tables import check_offered, check_produces, offered, tables_of

    if isinstance(tables, str):
        tables = [t.strip() for t in tables.split(",") if t.strip()]
    mine = [t for t in tables_of(fmt) if offered(t, "convert")]
    tables = list(dict.fromkeys(u for t in tables for u in (mine if t == "all" else [t])))
    choices = ", ".join(mine)
    if not tables:
        raise ObookError(f"no tables asked for; {fmt.name} feeds convert to {choices}")
    for t in tables:
        check_offered(t, "convert")
        check_produces(fmt, t, "convert")
    return tables


def check_tables(tables, format: str) -> list[str]:
    """``tables`` (names, or a comma-separated string) checked against what :func:`convert`
    writes for a feed of the format named ``format``: the names, or an ObookError naming
    the format's tables."""
    from .feeds import get_format

    return _check_tables(tables, get_format(format))


def _registry_options(name, workers, on_error, fmt, day, tickers, levels, interval) -> dict:
    from .tables import table

    given = {"workers": workers, "on_error": on_error, "format": fmt.name, "date": day,
             "tickers": tickers or None, "levels": levels, "interval": interval}
    return {k: v for k, v in given.items() if k in table(name).options and v is not None}


def _one_feed(feed, format):
    """``feed`` as :func:`convert` reads it: a path or a stream as given; a list or tuple of
    one path, that path; of several, a tuple (one feed in pieces). A list of several files of
    a format whose feed is one file is several feeds, refused. A glob pattern is its files,
    sorted, one feed in pieces (as ``obook convert 'parts/*.csv' out/`` reads it)."""
    from .feeds import resolve_format
    from .feeds.sources import check_source
    from .tables.open import expand, is_pattern

    if is_pattern(feed):
        feed = tuple(expand(feed))
    if not isinstance(feed, (list, tuple)):
        return feed
    paths = tuple(os.fspath(p) for p in feed)
    check_source(paths)         # none given, a missing file, '-': named before any is read
    if len(paths) == 1:
        return Path(paths[0])
    if isinstance(feed, list) and resolve_format(format, paths).merge is None:
        raise ObookError(f"convert reads one feed: a list of {len(paths)} files is a feed each; give a tuple "
                         "for one feed in pieces, or convert each file (a pipeline converts many days)")
    return paths


def _digests_of(paths) -> list[tuple[int, str]]:
    return [file_digest(p) for p in paths]


def _provenance(paths, digests, fmt) -> dict:
    """The footer's ``source``: a file's name, size and sha256; a feed of several files,
    their names joined by ``+``, their total size and each one's (``files``)."""
    if len(paths) == 1:
        (size, sha), = digests
        return {"name": Path(paths[0]).name, "size": size, "sha256": sha, "format": fmt}
    files = [{"name": Path(p).name, "size": size, "sha256": sha} for p, (size, sha) in zip(paths, digests)]
    return {"name": "+".join(f["name"] for f in files), "size": sum(f["size"] for f in files), "sha256": None,
            "format": fmt, "files": files}


def _passes(feed, fmt, tables, stats, *, workers, on_error, levels, day, progress, tickers, unknown_tickers,
            stamp, interval) -> list:
    """The passes over ``feed`` that make ``tables``, in order: ``(names, batches)``, where
    ``batches(before)`` gives the pass's ``(table, batch)`` pairs, each of its tables an
    empty batch of its schema at least, ``stats`` filled in; ``before``: a record number
    bars stop before (None: the whole feed). The replay's tables come from one replay, the
    side tables from one reading, every other table from its reader, bars last (they are
    cut only as they are made: :mod:`obook.to_parquet_partial`)."""
    replayed = [t for t in tables if t in REPLAY_TABLES]
    side = [t for t in tables if t in fmt.side_tables]
    rest = sorted((t for t in tables if t not in replayed and t not in side), key=lambda t: t == "bars")

    def replay_batches(before):
        from .engine.replay import Replay

        replay = Replay(feed, workers=workers, format=fmt, on_error=on_error, tables=replayed, levels=levels,
                        date=day, progress=progress, tickers=tickers, unknown_tickers=unknown_tickers)
        seen = set()
        for table, batch in replay.table_batches():
            seen.add(table)
            yield table, batch
        for table in replayed:
            if table not in seen:       # no batch at all: an empty file of the right schema
                yield table, _empty_batch(replay.schema(table))
        stats.update({k: replay.stats.get(k) for k in ("records", "rows", "skipped", "live_orders",
                                                        "crossed_books", "messages_by_type")})
        if replay.tickers:
            stats["missing_tickers"] = replay.stats.get("missing_tickers")
        stats["table_rows"] = replay.stats.get("table_rows")

    def side_batches(before):
        from .tables import table
        from .tables.units import Shape

        counts: dict = {}    # streamed: a feed of millions of R costs one batch, not the feed
        shapes = {name: Shape(table(name), fmt) for name in side}   # the units metadata
        seen = set()
        for name, batch in fmt.side_batches(feed, side, on_error, counts):
            seen.add(name)
            yield name, shapes[name].batch(stamp.batch(batch))
        for name in side:
            if name not in seen:   # no row at all: an empty file of the right schema
                yield name, shapes[name].batch(stamp.batch(_empty_batch(fmt.side_table(name).schema)))
        stats.setdefault("messages_by_type", dict(sorted(counts.items())))
        stats.setdefault("records", sum(counts.values()))

    def reader_batches(name):
        def batches(before):       # the registry's reader (bars, messages, the format's own tables)
            from .tables import open_table

            options = _registry_options(name, workers, on_error, fmt, day, tickers, levels, interval)
            if name == "bars" and before is not None:
                options["before"] = before
            reader = open_table(name, feed, **options)
            seen = False
            for batch in reader:
                seen = True
                yield name, batch
            if not seen:
                yield name, _empty_batch(reader.schema)
        return batches

    return ([(replayed, replay_batches)] if replayed else []) + ([(side, side_batches)] if side else []) + [
        ([name], reader_batches(name)) for name in rest]


def convert(feed, outdir, tables=("bbo",), workers: int | None = None, date=None,
            on_error: str = "raise", format: str | None = None, levels: int = 10,
            tickers=None, progress=None, compression: str = "fast", unknown_tickers: str = "raise",
            interval="1 minute") -> dict:
    """Convert ``feed`` into ``OUTDIR/<table>.parquet`` for each of ``tables``.

    ``feed``: a file path, a tuple of paths (one feed in pieces, read in order or merged by
    the format's own sequence numbers, as :func:`obook.table` reads a tuple; a list is
    that too for a format whose feed is several files by nature, Shenzhen vendor CSV; a glob
    pattern is its files, sorted, as such a tuple), or a
    binary stream (stdin, a pipe) with its ``format`` given; a stream's provenance (size,
    sha256) is what it delivered when it has a ``digest()``
    (:class:`obook.feeds.sources.DigestingStream`), else null, and it offers the replay
    tables only (side tables read a file twice).

    ``tables``: names from ``TABLES`` (a list, or a comma-separated string; ``all``: every
    table the feed's format converts to); bbo, trades,
    orders and depth (``levels`` a side) come from one replay; bars are ``interval`` long (as
    :func:`obook.bars` takes it: '1 minute', '5s', '100 ms' ...); a CSV feed has no ITCH side
    tables (symbols, system_events, trading_actions, cross_trades). ``tickers`` (a list or comma-separated string): replay
    only those tickers' books (the other books' records are skipped); one the feed does not
    name raises ``ObookError`` (``unknown_tickers="warn"``: logged, its rows are none). ``workers``, ``on_error`` and ``format`` as for :func:`obook.bbo`.
    ``date``: the session date (``YYYY-MM-DD``); default from a Nasdaq file name. When it
    is known, the tables get a ``timestamp`` column (``timestamp[ns, UTC]``:
    the session's midnight in the feed's zone + the feed time).

    The files appear when every table is complete; those of tables not asked for stay in
    ``outdir`` as they are. One convert at a time writes into ``outdir``: another one while
    it runs is an ``OutputError`` (where the folder can be locked). On a bad record (a ``FeedError``) every
    table asked for keeps the rows of the records before it as ``OUTDIR/<table>.parquet.partial``
    (the side tables and the other tables, which read the feed apart, run up to it; a table
    with no such row: no file; :mod:`obook.to_parquet_partial`), the error's ``kept_in`` says
    where, and the error is raised; on any other failure nothing is left.

    Returns ``{"rows": {table: n}, "stats": {...}, "session_date": ..., "source": {...},
    "files": {table: path}}``. The same dict minus ``files`` (plus ``table``,
    ``obook_version`` and ``options``) is each file's footer metadata under ``obook``.
    ``source``: the feed's ``name``, ``size``, ``sha256`` and ``format``; for a feed of
    several files, ``name`` is their names joined by ``+``, ``size`` their total, ``sha256``
    null, and ``files`` lists each file's ``name``, ``size`` and ``sha256`` in the feed's order.
    ``compression``: "fast" (default) or "small" (:data:`obook.parquet.COMPRESSIONS`).
    ``progress``: called with the bytes of the feed read so far (and a label when a new
    pass over the file starts), e.g. for a progress bar.
    ``stats`` is the replay's (``records``, ``rows``, ``skipped`` by kind, ``live_orders``,
    ``crossed_books``, ``messages_by_type``) when a replay table is converted; with only
    ITCH side tables, ``records`` and ``messages_by_type``.
    """
    from .checks import (check_choice, check_feed_path, check_format_name, check_levels, check_names, check_path,
                         check_progress, check_tickers, check_workers)
    from .engine.replay import ON_ERROR, ticker_tuple
    from .klines import interval_ns
    from .feeds import resolve_format
    from .feeds.sources import check_source, headed, is_stream, source_name, source_paths
    from .output import (check_not_an_input, drop_stale_partial, hold_output_dir, make_output_dir, new_folders,
                         release_output_dir, remove_new_folders, write_failure)

    check_feed_path(feed)
    if not isinstance(outdir, (str, os.PathLike)) or not os.fspath(outdir):
        raise ObookError(f"outdir must be a folder's path, not {outdir!r}")
    check_path("outdir", outdir)
    check_format_name(format)
    workers = check_workers(workers)
    levels = check_levels(levels)
    tickers = ticker_tuple(check_tickers(tickers))     # '' or ',' is an error, as on every reader
    on_error = check_choice("on_error", on_error, ON_ERROR)      # in any case, as on every reader
    compression = check_choice("compression", compression, tuple(COMPRESSIONS))    # before the folder is made
    if not isinstance(tables, str):
        tables = check_names("tables", tables)
    check_progress(progress)
    interval_ns(interval)       # 'five minutes': an error before the folder is made
    feed = _one_feed(feed, format)
    feed = headed(feed)       # a stream: decompressed, its first bytes kept to tell its format
    stream = is_stream(feed)
    feed = feed if stream or isinstance(feed, tuple) else Path(feed)      # (a tuple: one feed in pieces)
    check_source(feed)
    feed_format = resolve_format(format, feed)
    fmt = feed_format.name
    tables = _check_tables(tables, feed_format)
    if stream and any(t not in REPLAY_TABLES for t in tables):
        raise ObookError(f"{feed.name}: the side tables ({', '.join(t for t in tables if t not in REPLAY_TABLES)}) "
                         "read the feed a second time: give a file, not a stream")
    day = session_date(feed, date, feed_format)
    stamp = stamp_of(feed_format, day)     # the side tables' timestamps (the replay stamps its own)
    made = new_folders(outdir)
    outdir = make_output_dir(outdir)
    held = hold_output_dir(outdir)      # another convert into it: an error, before any file is touched
    try:
        for t in tables:        # a folder under a final name, the feed itself: found before any file is replaced
            final = outdir / f"{t}.parquet"
            if final.is_dir():
                raise OutputError(f"{final}: is a directory; the {t} table cannot be written there")
            check_not_an_input(final, source_paths(feed))
        writers = {t: _TableWriter(outdir, t, compression) for t in tables}
        # the files' sha256 on a thread of its own while the replay runs (hashlib and the reads
        # release the GIL): it was a serial ~0.1 s before the first record of a 3M-message day.
        # Started once the first batch is out: the workers are forked by then (a live thread
        # before that makes the engine start them through the forkserver, ~1 s slower)
        digest = None if stream else ThreadPoolExecutor(1, thread_name_prefix="obook-digest")
    except BaseException:       # (from here on the finally below lets the folder go)
        release_output_dir(held)
        raise
    stats: dict = {}
    digested = None
    try:
        passes = _passes(feed, feed_format, tables, stats, workers=workers, on_error=on_error, levels=levels,
                         day=day, progress=progress, tickers=tickers, unknown_tickers=unknown_tickers, stamp=stamp,
                         interval=interval)
        for i, (names, batches) in enumerate(passes):
            try:
                for table, batch in batches(None):
                    if digest is not None and digested is None and names[0] in REPLAY_TABLES:
                        digested = digest.submit(_digests_of, source_paths(feed))   # the workers are forked
                    writers[table].write(batch)
            except FeedError as e:      # the other tables: their rows before the bad record too
                run_rest_before(e, passes[i + 1:], lambda t, b: writers[t].write(b))
                raise
        if digest is not None and digested is None:
            digested = digest.submit(_digests_of, source_paths(feed))
        if stream:      # a stream's bytes are known once read
            size, sha = feed.digest() if hasattr(feed, "digest") else (None, None)
            source = {"name": feed.name, "size": size, "sha256": sha, "format": fmt}
        else:
            source = _provenance(source_paths(feed), digested.result(), fmt)
        result = {
            "source": source,
            "session_date": day.isoformat() if day else None,
            "rows": {t: w.rows for t, w in writers.items()},
            "stats": stats,
        }
        options = {"tables": tables, "date": date if date is None else str(date), "on_error": on_error,
                   "format": fmt, "levels": levels, "compression": compression,
                   "tickers": list(tickers) if tickers else None}
        if "bars" in tables:
            options["interval"] = interval if isinstance(interval, (str, int)) else str(interval)
        for t, w in writers.items():
            w.close({**result, "table": t, "obook_version": __version__, "options": options})
        with deferred():    # a Ctrl-C: once every table is in place (not some of them)
            for w in writers.values():
                os.replace(w.tmp, w.final)
                drop_stale_partial(w.final)
    except BaseException as e:
        with deferred():    # a second Ctrl-C: once every temp file is gone
            kept = keep_partial(writers, e, outdir) if isinstance(e, FeedError) else []
            for w in writers.values():
                w.discard()
            if not kept:
                remove_new_folders(made)    # the folders this call made, nothing kept in them (Ctrl-C, a full disk)
        if isinstance(e, OSError):    # the feed's read errors are ObookErrors: this is the output
            raise OutputError(f"{outdir}: write failed: {write_failure(e)}") from e
        raise
    finally:
        if digest is not None:
            digest.shutdown(wait=True)
        release_output_dir(held)
    result["files"] = {t: str(w.final) for t, w in writers.items()}
    log.info("%s: wrote %s", source_name(feed), ", ".join(f"{t} ({n} rows)" for t, n in result["rows"].items()))
    return result
