"""``obook.convert``: one feed file → self-describing Parquet tables in a directory.

Tables (``TABLES``):

* ``bbo`` — the rows of :func:`obook.bbo` (the one replay path), unchanged, plus a
  ``timestamp`` column when the session date is known;
* ``trades``, ``orders``, ``depth`` — the rows of :func:`obook.trades`, :func:`obook.orders`
  and :func:`obook.depth`, from the same replay as the BBO (and a ``timestamp`` likewise);
* ``symbols`` — the ITCH stock directory (``R``): locate, stock and the directory fields;
* ``system_events`` — ITCH ``S``: seq, time, event code;
* ``trading_actions`` — ITCH ``H``: seq, time, locate, stock, trading state, reason.

The three ITCH tables come from :func:`obook.read_itch` (filtered by type); their fields
past the stock are decoded here from its ``raw`` column (the message bytes of S, R and H).
A CSV feed has ``bbo``, ``trades``, ``orders`` and ``depth``.

Every file is ``OUTDIR/<table>.parquet`` (the one Parquet writer, :mod:`obook.parquet`:
row groups sized in bytes, tuned encodings, ``compression`` "fast" or "small"; in feed order), written under a temporary name; the files are renamed into place
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

from .errors import ObookError
from .parquet import COMPRESSIONS, ParquetSink
from .session import TIME_NS as _TIME_NS, TIMEZONE, midnight_ns as _midnight_ns, session_date
from .session import with_timestamp as _with_timestamp

log = logging.getLogger("obook")

__all__ = ["convert", "session_date", "file_digest", "TABLES", "COMPRESSIONS", "TIMEZONE",
           "read_metadata"]

REPLAY_TABLES = ("bbo", "trades", "orders", "depth")
TABLES = REPLAY_TABLES + ("symbols", "system_events", "trading_actions")
ITCH_TYPES = {"symbols": "R", "system_events": "S", "trading_actions": "H"}
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


# --------------------------------------------------------------------------- ITCH side tables


def _chars(raw: list[bytes], start: int, width: int = 1, strip: bool = False) -> pa.Array:
    vals = [r[start:start + width].decode("latin-1") for r in raw]
    return pa.array([v.rstrip() for v in vals] if strip else vals, type=pa.string())


def _u32(raw: list[bytes], start: int) -> pa.Array:
    return pa.array([int.from_bytes(r[start:start + 4], "big") for r in raw], type=pa.uint32())




def _itch_tables(path, wanted: list[str], on_error: str) -> tuple[dict[str, pa.Table], dict]:
    """symbols / system_events / trading_actions from ``read_itch``; plus message counts."""
    # obook.read_itch has no on_error; the function behind it has (tolerant mode)
    from .feeds.itch_messages import read_itch

    types = pa.array(sorted({ITCH_TYPES[t] for t in wanted}))
    parts, counts = [], {}
    for batch in read_itch(path, on_error):
        vc = pc.value_counts(batch.column("type"))
        for v, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            counts[v] = counts.get(v, 0) + c
        keep = batch.filter(pc.is_in(batch.column("type"), value_set=types))
        if keep.num_rows:
            parts.append(keep.select(["seq", "type", "locate", "time", "stock", "raw"]))
    msgs = pa.Table.from_batches(parts, schema=parts[0].schema) if parts else None
    tables = {}
    for name in wanted:
        t = ITCH_TYPES[name]
        rows = msgs.filter(pc.equal(msgs["type"], t)) if msgs is not None else None
        if rows is not None:   # tolerant mode keeps short frames (raw is null): drop them here
            rows = rows.filter(pc.is_valid(rows["raw"]))
        raw = rows["raw"].to_pylist() if rows is not None else []
        tables[name] = _build(name, rows if raw else None, raw)
    return tables, counts


def side_table(path, name: str, on_error: str = "raise") -> pa.Table:
    """One of ``symbols``, ``system_events``, ``trading_actions`` of an ITCH feed (small:
    a few rows per stock a day), decoded from ``obook.read_itch``."""
    if name not in ITCH_TYPES:
        raise ObookError(f"unknown table {name!r}; choose from {', '.join(ITCH_TYPES)}")
    if not Path(path).is_file():
        raise ObookError(f"{path}: no such feed file")
    return _itch_tables(path, [name], on_error)[0][name]


def _build(name: str, rows: pa.Table | None, raw: list[bytes]) -> pa.Table:
    schema = SCHEMAS[name]
    if rows is None:
        return schema.empty_table()
    seq, time = rows["seq"], rows["time"].cast(pa.uint64())
    if name == "system_events":
        arrays = [seq, time, _chars(raw, 11)]
    elif name == "trading_actions":
        arrays = [seq, time, rows["locate"], rows["stock"], _chars(raw, 19), _chars(raw, 21, 4, strip=True)]
    else:
        arrays = [seq, time, rows["locate"], rows["stock"], _chars(raw, 19), _chars(raw, 20), _u32(raw, 21),
                  _chars(raw, 25), _chars(raw, 26), _chars(raw, 27, 2, strip=True), _chars(raw, 29),
                  _chars(raw, 30), _chars(raw, 31), _chars(raw, 32), _chars(raw, 33), _u32(raw, 34),
                  _chars(raw, 38)]
    return pa.Table.from_arrays([pa.chunked_array(a) if isinstance(a, pa.Array) else a for a in arrays],
                                schema=schema)


def _schema(name: str, fields: list) -> pa.Schema:
    return pa.schema(fields, metadata={b"obook.table": name.encode()})


_SEQ_TIME = [pa.field("seq", pa.int64(), nullable=False), pa.field("time", pa.uint64(), nullable=False)]
_S = pa.string()
SCHEMAS = {
    "system_events": _schema("system_events", _SEQ_TIME + [pa.field("event_code", _S)]),
    "trading_actions": _schema("trading_actions", _SEQ_TIME + [
        pa.field("locate", pa.uint16()), pa.field("stock", _S), pa.field("state", _S),
        pa.field("reason", _S)]),
    "symbols": _schema("symbols", _SEQ_TIME + [
        pa.field("locate", pa.uint16()), pa.field("stock", _S), pa.field("market_category", _S),
        pa.field("financial_status", _S), pa.field("round_lot_size", pa.uint32()),
        pa.field("round_lots_only", _S), pa.field("issue_classification", _S),
        pa.field("issue_subtype", _S), pa.field("authenticity", _S),
        pa.field("short_sale_threshold", _S), pa.field("ipo_flag", _S), pa.field("luld_tier", _S),
        pa.field("etp_flag", _S), pa.field("etp_leverage_factor", pa.uint32()),
        pa.field("inverse", _S)]),
}


# --------------------------------------------------------------------------- writing


class _TableWriter:
    """One ``<table>.parquet`` under a temporary name, through the one Parquet writer
    (:class:`obook.parquet.ParquetSink`: row groups sized in bytes, the tuned encodings)."""

    def __init__(self, outdir: Path, table: str, compression: str = "fast"):
        self.final = outdir / f"{table}.parquet"
        self.tmp = outdir / f".{table}.parquet.{os.getpid()}.tmp"
        self.table = table
        self.compression = compression
        self.sink: ParquetSink | None = None

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

    def close(self, metadata: dict) -> None:
        self.sink.close({METADATA_KEY.decode(): json.dumps(metadata, sort_keys=True)})

    def discard(self) -> None:
        if self.sink is not None:
            self.sink.discard()
        self.tmp.unlink(missing_ok=True)


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=schema)


def _check_tables(tables, fmt: str) -> list[str]:
    if isinstance(tables, str):
        tables = [t.strip() for t in tables.split(",") if t.strip()]
    tables = list(dict.fromkeys(tables))
    if not tables:
        raise ObookError("no tables asked for; choose from " + ", ".join(TABLES))
    for t in tables:
        if t not in TABLES:
            raise ObookError(f"unknown table {t!r}; choose from {', '.join(TABLES)}")
        if fmt != "itch" and t in ITCH_TYPES:
            raise ObookError(f"table {t!r} needs an ITCH feed; a {fmt.upper()} feed has only "
                             f"{', '.join(REPLAY_TABLES)}")
    return tables


def convert(feed, outdir, tables=("bbo",), workers: int | None = None, date=None,
            on_error: str = "raise", format: str | None = None, levels: int = 10,
            tickers=None, progress=None, compression: str = "fast", unknown_tickers: str = "raise") -> dict:
    """Convert ``feed`` into ``OUTDIR/<table>.parquet`` for each of ``tables``.

    ``tables``: names from ``TABLES`` (a list, or a comma-separated string); bbo, trades,
    orders and depth (``levels`` a side) come from one replay; a CSV feed has no symbols,
    system_events or trading_actions. ``tickers`` (a list or comma-separated string): replay
    only those tickers' books (the other books' records are skipped); one the feed does not
    name raises ``ObookError`` (``unknown_tickers="warn"``: logged, its rows are none). ``workers``, ``on_error`` and ``format`` as for :func:`obook.bbo`.
    ``date``: the session date (``YYYY-MM-DD``); default from a Nasdaq file name. When it
    is known, the tables get a ``timestamp`` column (``timestamp[ns, America/New_York]``:
    session midnight + the feed time).

    Returns ``{"rows": {table: n}, "stats": {...}, "session_date": ..., "source": {...},
    "files": {table: path}}``. The same dict minus ``files`` (plus ``table``,
    ``obook_version`` and ``options``) is each file's footer metadata under ``obook``.
    ``compression``: "fast" (default) or "small" (:data:`obook.parquet.COMPRESSIONS`).
    ``progress``: called with the bytes of the feed read so far (and a label when a new
    pass over the file starts), e.g. for a progress bar.
    ``stats`` is the replay's (``records``, ``rows``, ``skipped`` by kind, ``live_orders``,
    ``crossed_books``, ``messages_by_type``) when a replay table is converted; with only
    ITCH side tables, ``records`` and ``messages_by_type``.
    """
    import obook
    from .engine.replay import check_feed_path, ticker_tuple
    from .feeds import detect_format, get_format

    feed = Path(feed)
    check_feed_path(str(feed))
    fmt = get_format(format or detect_format(feed)).name
    tables = _check_tables(tables, fmt)
    day = session_date(feed, date)
    from .output import make_output_dir

    outdir = make_output_dir(outdir)
    size, sha = file_digest(feed)
    base = _midnight_ns(day) if day else None     # the side tables' timestamps (the replay stamps its own)

    if compression not in COMPRESSIONS:
        raise ObookError(f"compression must be one of {', '.join(COMPRESSIONS)}, not {compression!r}")
    writers = {t: _TableWriter(outdir, t, compression) for t in tables}
    stats: dict = {}
    try:
        replayed = [t for t in tables if t in REPLAY_TABLES]
        if replayed:
            from .engine.replay import Replay
            replay = Replay(feed, workers=workers, format=fmt, on_error=on_error, tables=replayed,
                            levels=levels, date=day, progress=progress, tickers=tickers or None,
                            unknown_tickers=unknown_tickers)
            for table, batch in replay.table_batches():
                writers[table].write(batch)
            for table in replayed:
                if writers[table].writer is None:   # no batch at all: an empty file of the right schema
                    writers[table].write(_empty_batch(replay.schema(table)))
            stats.update({k: replay.stats.get(k) for k in ("records", "rows", "skipped", "live_orders",
                                                            "crossed_books", "messages_by_type")})
            if replay.tickers:
                stats["missing_tickers"] = replay.stats.get("missing_tickers")
            stats["table_rows"] = replay.stats.get("table_rows")
        side = [t for t in tables if t in ITCH_TYPES]
        if side:
            side_tables, counts = _itch_tables(feed, side, on_error)
            stats.setdefault("messages_by_type", dict(sorted(counts.items())))
            stats.setdefault("records", sum(counts.values()))
            for name, table in side_tables.items():
                b = table.combine_chunks().to_batches()
                for batch in b or [_empty_batch(table.schema)]:
                    writers[name].write(_with_timestamp(batch, base, _TIME_NS["itch"]))
        result = {
            "source": {"name": feed.name, "size": size, "sha256": sha, "format": fmt},
            "session_date": day.isoformat() if day else None,
            "rows": {t: w.rows for t, w in writers.items()},
            "stats": stats,
        }
        options = {"tables": tables, "date": date if date is None else str(date), "on_error": on_error,
                   "format": fmt, "levels": levels, "compression": compression,
                   "tickers": list(ticker_tuple(tickers)) if tickers else None}
        for t, w in writers.items():
            w.close({**result, "table": t, "obook_version": obook.__version__, "options": options})
        for w in writers.values():
            os.replace(w.tmp, w.final)
    except BaseException:
        for w in writers.values():
            w.discard()
        raise
    result["files"] = {t: str(w.final) for t, w in writers.items()}
    log.info("%s: wrote %s", feed, ", ".join(f"{t} ({n} rows)" for t, n in result["rows"].items()))
    return result
