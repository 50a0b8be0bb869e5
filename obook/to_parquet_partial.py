"""``convert`` stopped by a bad record (a ``FeedError``): every table asked for keeps the rows
of the records before it, as ``OUTDIR/<table>.parquet.partial``.

The tables come from passes over the feed (the replay's tables from one, the side tables from
another, each other table from its own reader). The pass that fails holds its rows before the
bad record; the passes after it are run up to that record (one that fails earlier, at a
record of its own, keeps its rows before that one); a table complete before the failure is
cut back to the rows of the records before it. A row's record is its ``seq`` (a gap's: its
``first_seq``); a trade is ``broken`` by a break before the bad record only (a later one was
never delivered); bars are those of the trades before the bad record; a table of no record
(a capture's ``line_stats``) is not cut: it counts the packets as far as they were read.
"""

from __future__ import annotations

import json
import logging
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._version import __version__
from .errors import FeedError
from .parquet import ParquetSink
from .tempfiles import remove_quietly, temp_path

log = logging.getLogger("obook")

#: the column that names a row's record: ``seq``, a gap's first record
RECORD_COLUMNS = ("seq", "first_seq")


def record_column(schema: pa.Schema) -> str | None:
    return next((c for c in RECORD_COLUMNS if c in schema.names), None)


def last_record(batch: pa.RecordBatch) -> int | None:
    """The last record a batch's rows come from (None: none, or no record column)."""
    column = record_column(batch.schema)
    if column is None or not batch.num_rows:
        return None
    return pc.max(batch.column(column)).as_py()


def rows_before(batches, names, record: int):
    """The ``(table, batch)`` pairs of a pass over the feed cut to the rows of the records
    before ``record``; the pass is left once each of its tables ``names`` has reached it (a
    table without a record column never does: its pass runs to the end)."""
    reached = set()
    for table, batch in batches:
        last = last_record(batch)
        if last is not None and last >= record:
            batch = batch.filter(pc.less(batch.column(record_column(batch.schema)), record))
            reached.add(table)
        yield table, batch
        if reached >= set(names):
            return


def run_rest_before(e: FeedError, rest, write) -> None:
    """After ``e`` stopped a pass: the passes ``rest`` (``(names, batches)``, ``batches(before)``
    giving a pass's ``(table, batch)`` pairs, bars only of the records before ``before``) run up
    to its record, each pair handed to ``write``. A pass that fails keeps its rows before its
    own bad record; the tables after it are still run."""
    record = e.feed_record
    if record is None:      # no record to stop at: the tables of the passes not run have no rows
        return
    for names, batches in rest:
        made = batches(record)
        try:
            for table, batch in rows_before(made, names, record):
                write(table, batch)
        except FeedError:
            continue
        except Exception as other:  # noqa: BLE001 - the feed error is the one to report; these tables go
            log.debug("the rows before %s of %s: %s", e, ", ".join(names), other)
            continue
        finally:
            made.close()        # a pass left early: its replay's workers stop now


def keep_partial(writers: dict, e: FeedError, outdir) -> list:
    """On a feed error, each table that has rows before the bad record is closed as
    ``OUTDIR/<table>.parquet.partial`` (rows of later records cut off), its footer naming the
    error; ``e.kept_in`` says where. Returns the paths kept (a table that cannot be kept, or
    that has no row, is discarded, and an earlier run's ``.partial`` of it removed)."""
    from .output import drop_stale_partial

    kept = []
    for w in writers.values():
        if w.sink is None or not w.rows:
            drop_stale_partial(w.final)     # an earlier run's, of other rows: it misleads
            continue
        partial = w.final.with_name(w.final.name + ".partial")
        metadata = {"table": w.table, "obook_version": __version__, "partial": True, "error": str(e)}
        try:
            w.close(metadata)
            os.replace(w.tmp, partial)
            w.sink = None
            if e.feed_record is not None:
                breaks = _delivered_breaks(partial, e.feed_record) if w.table == "trades" else None
                if breaks is not None or (w.last is not None and w.last >= e.feed_record):
                    _cut(partial, e.feed_record, w.table, w.compression, metadata, breaks)
        except Exception:  # noqa: BLE001 - the feed error is the one to report; this table goes
            remove_quietly(partial)
            continue
        kept.append(partial)
    if kept:
        e.kept_in = str(kept[0] if len(kept) == 1 else outdir / "TABLE.parquet.partial")
    return kept


def _delivered_breaks(path, record: int):
    """The trade breaks of the records before ``record`` in the trades table ``path`` (None:
    no row of it is broken)."""
    from .output import breaks_before

    return breaks_before(path, "parquet", pq.read_schema(path), record)


def _cut(path, record: int, table: str, compression: str, metadata: dict, breaks=None) -> None:
    """``path`` rewritten with the rows of the records before ``record`` only; ``breaks``: the
    trade breaks of those records, which the trades' ``broken`` is made anew from (a break of
    a later record was never delivered)."""
    from .feeds.breaks import rebroken

    source = pq.ParquetFile(path)
    schema = source.schema_arrow
    schema = schema.with_metadata({k: v for k, v in (schema.metadata or {}).items() if k != b"obook"})
    column = record_column(schema)
    tmp = temp_path(path)
    sink = ParquetSink(tmp, schema, table, compression)
    try:
        for batch in source.iter_batches():
            batch = pa.RecordBatch.from_arrays(batch.columns, schema=schema).filter(
                pc.less(batch.column(column), record))
            sink.write(rebroken(batch, breaks) if breaks is not None else batch)
        sink.close({"obook": json.dumps(metadata, sort_keys=True)})
        os.replace(tmp, path)
    except BaseException:
        sink.discard()
        remove_quietly(tmp)
        raise
    finally:
        source.close()
