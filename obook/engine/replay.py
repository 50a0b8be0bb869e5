"""The replay: feed → batches → (workers: decode + books) → merge → Arrow BBO batches."""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
from collections import deque
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from .._kernels.layout import EV_WIDTH, WANT_NO_BBO, WANT_QUEUE
from ..checks import check_choice
from ..errors import FeedError, ObookError
from ..feeds import load, resolve_format
from ..feeds.pieces import Pieces
from ..feeds.sources import (BLOCK_SIZE, HeadedStream, check_source, headed, is_stream, iter_batches, source_name,
                             source_paths)
from ..interrupts import check_signalled
from ..session import session_date, stamp_of
from .applier import Applier, with_overflow
from .cores import SMALL_FEED, default_workers  # noqa: F401 - part of this module's interface
from .arrow import Tickers, merge_batch
from .tables import MAX_LEVELS, ColumnPool, check_tables, key_type, merge_table_batch, schema_of, want_bits, widths
from .workers import WorkerPool, join_parts

log = logging.getLogger("obook")

ON_ERROR = ("raise", "skip")
NO_LIMIT = np.iinfo(np.int64).max


def ticker_tuple(tickers) -> tuple[str, ...] | None:
    """Tickers as given (a list, or a comma-separated string): stripped, unique, sorted;
    None for none."""
    if tickers is None:
        return None
    if isinstance(tickers, str):
        tickers = tickers.split(",")
    chosen = tuple(sorted({str(t).strip() for t in tickers if str(t).strip()}))
    if not chosen:
        raise ObookError("--tickers / tickers=: no ticker given")
    return chosen


def file_stamps(source) -> list:
    """Each file's (size, modification time) ([] for a stream; None for a file gone)."""
    def stamp(path):
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns
    return [stamp(p) for p in source_paths(source)]


class Replay:
    """One replay of a feed into BBO rows.

    ``path``: a feed file (plain, gzip or zstd), a list of files that form one feed, or a
    binary stream (a file-like object or a socket). ``format``: a format name, a
    ``FeedFormat``, or None (detected from the first file; a stream needs it).

    ``reader()`` streams them as a ``pyarrow.RecordBatchReader``; once it is
    exhausted, ``stats`` holds the record count, row count and (tolerant mode)
    the skipped records by kind. ``progress(done)`` gets the bytes of the file read so
    far; ``progress(done, phase)`` marks the start of a pass over the file (an ITCH trades
    replay first reads the feed for its trade breaks). ``tickers``: replay only these
    tickers' books (a list, or a comma-separated string); ``unknown_tickers``: what a ticker
    the feed never names does at the end: "raise" (ObookError), "warn" (logged) or "ignore".
    ``queue_positions``: the orders table's ``queue_shares_ahead`` / ``queue_orders_ahead``
    (False: null, and the books keep no time-priority queues, which cost the orders table
    most of its time; a clear's rows then come in order-id order, not queue order).
    ``rows``: False for a replay run for its ``observer`` alone (a backtest): the books
    are applied and checked, no BBO row is written, no table batches are built and
    ``table_batches`` yields ``(None, None)`` once the observer has seen each batch (where
    its caller regains control: a backtest hands over the rows made so far there).
    ``observe_here``: the observer runs in this process, one worker process applies the
    books, and the two work side by side (the worker runs ahead by up to ``slots``
    batches, whose events travel back through shared memory); ``workers`` is then 1.
    ``levels``: depth levels a side, 1 to ``max_levels`` (a subclass that reads one level
    past its output's deepest may raise it: the books hold more).
    """

    max_levels = MAX_LEVELS

    def __init__(self, path: str | os.PathLike, workers: int | None = None, format: str | None = None,
                 on_error: str = "raise", slots: int = 4, block_size: int = BLOCK_SIZE,
                 progress: Callable[..., None] | None = None, tables=("bbo",), levels: int = 10,
                 breaks: bool = True, date=None, tickers=None, unknown_tickers: str = "raise",
                 observer=None, book_kernel=None, queue_positions: bool = True, rows: bool = True,
                 observe_here: bool = False):
        self.source = path
        # seen by every worker's Applier: each batch's events after the books applied them;
        # what its workers return at the end is in ``observed`` (a list, one per worker)
        self.observer = observer
        self.observed: list = []
        # (a daemonic process, e.g. a multiprocessing.Pool worker, may not start one: all here)
        self.observe_here = (observe_here and observer is not None and book_kernel is None
                             and not mp.current_process().daemon)
        self._watcher = None     # observe_here: the observer's worker, in this process
        self.rows = rows
        self.path = source_name(path)     # how errors name the feed
        # ticker pushdown: only these books are replayed (the decoders skip the others'
        # records); a ticker the feed never names raises at the end (or, "warn", is logged)
        self.tickers = ticker_tuple(tickers)
        self.unknown_tickers = check_choice("unknown_tickers", unknown_tickers, ("raise", "warn", "ignore"))
        self.tables = check_tables(tables, levels, self.max_levels)
        self.levels = levels
        self.find_breaks = breaks   # False: no pre-pass, every trade's ``broken`` is False
        self.want = want_bits(self.tables) | (WANT_QUEUE if queue_positions and "orders" in self.tables else 0)
        if not rows and observer is not None:     # nothing reads the BBO rows: the books only
            self.want |= WANT_NO_BBO
        self.layout = widths(self.tables, levels)
        if self.observe_here:
            self.layout["events"] = EV_WIDTH
        check_source(path)
        on_error = check_choice("on_error", on_error, ON_ERROR)     # 'Skip' too: every reader sees 'skip'
        path = headed(path)      # a stream: decompressed, its first bytes kept to tell its format
        if is_stream(path) and format is None and not isinstance(path, HeadedStream):
            raise ObookError(f"{self.path}: a socket or live stream needs format=")
        self.format = resolve_format(format, path)
        self._input = path      # (what an error at the first record tells the format of)
        self._pieces = None     # (a replay's files, where each begins: made as it starts)
        self._named = None      # (the books' names: a Tickers, made as it starts)
        self.source = self.format.reading(path)   # e.g. a capture's lines read as one feed
        self.detected = format is None   # told from the file: a framer may refuse plain non-feeds
        # the session date (``date`` or the format's, e.g. a Nasdaq file name): then every
        # table gets ``timestamp`` (always, for a format whose time is epoch)
        self.session = session_date(path, date, self.format)
        self._stamp = stamp_of(self.format, self.session)
        self.workers = default_workers(path) if workers is None else int(workers)
        self.book_kernel = book_kernel   # another book kernel (a timed one): in this process
        if book_kernel is not None or self.observe_here:
            self.workers = 1
        if not 1 <= self.workers <= 64:
            raise ObookError(f"workers must be between 1 and 64, not {workers}")
        if self.workers > 1 and mp.current_process().daemon:
            # a multiprocessing.Pool worker (daemonic) may not start processes
            log.warning("%s: replaying in this process: a daemonic process (a multiprocessing "
                        "pool worker) cannot start worker processes", self.path)
            self.workers = 1
        self.on_error = on_error
        self.slots = max(1, slots)
        self.block_size = block_size
        self.progress = progress
        self.stats: dict = {}
        self._key_type = key_type(self.format)
        self._bbo_schema = schema_of("bbo", levels, self.format, records=False)
        self._ticker_set = None
        self._record_fields = self.format.record_fields()

    def reader(self, table: str = "bbo") -> pa.RecordBatchReader:
        """One table of the replay (one of ``tables``) as a RecordBatchReader."""
        if table not in self.tables:
            raise ObookError(f"table {table!r} was not asked of this replay ({', '.join(self.tables)})")
        batches = (b for t, b in self.table_batches() if t == table)
        return pa.RecordBatchReader.from_batches(self.schema(table), batches)

    def locate_error(self, error: FeedError) -> FeedError:
        """An error of a record of the joined feed (a table built from this replay's rows, the
        record numbered by its ``seq``) naming the file of the feed that holds it."""
        return self._pieces.locate(error) if self._pieces is not None else error

    def schema(self, table: str = "bbo") -> pa.Schema:
        """The schema of a table of this replay (``timestamp`` after ``time`` when the
        session date is known)."""
        return self._stamp.schema(schema_of(table, self.levels, self.format))

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The BBO batches (for a replay of the BBO alone)."""
        return (b for t, b in self.table_batches() if t == "bbo")

    def table_batches(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        """(table, batch) pairs: per batch of records, each asked table's rows in feed order."""
        fmt = self.format
        framer = fmt.framer_class()(self.path, self.on_error)
        framer.detected = self.detected
        self._framer = framer
        tickers = self._named = Tickers()
        self._pool = ColumnPool()
        self.stats = {"records": 0, "rows": 0, "skipped": {}, "complete": False,
                      "table_rows": {t: 0 for t in self.tables}}
        breaks = None
        # a file written to while it is read (cut, appended to, replaced) would give the rows of
        # no one file: checked at the end, on every pass
        stamps = None if is_stream(self.source) else file_stamps(self.source)
        merge = load(fmt.merge) if fmt.merge else None
        # a trade's break comes later: the format's prepass reads them first (a file only)
        if fmt.prepass and "trades" in self.tables and self.find_breaks and stamps is not None:
            phase = (lambda pos: self.progress(pos, "finding trade breaks")) if self.progress else None
            breaks = load(fmt.prepass)(self.source, fmt.framer_class()(self.path, self.on_error), phase)
            if self.progress:
                self.progress(0, "replaying")
            log.debug("%s: %d broken match numbers", self.path, len(breaks))
        elif fmt.prepass and "trades" in self.tables and self.find_breaks:
            log.warning("%s: a stream is read once, and a trade's break comes after it: every trade's broken "
                        "is false; give the feed as a file to have broken trades marked", self.path)
        self._pieces = Pieces(self.path)     # a feed in several files: where each begins
        feed = iter_batches(self.source, framer, self.block_size, merge=merge, pieces=self._pieces)
        local = self.workers == 1 and not self.observe_here
        engine = _Local(self) if local else _Pool(self, getattr(framer, "batch_bytes", 0))
        in_flight = 1 if local else self.slots
        if hasattr(framer, "batches_in_flight"):      # a framer that keeps each batch's order (locate)
            framer.batches_in_flight(in_flight + 1)   # (the pending ones and the one framed after them)
        # text order ids are spans of the batch's bytes, read again by the merge
        keep_bytes = fmt.order_ids == "text" and bool(set(self.tables) & {"trades", "orders"})
        pending: deque = deque()
        try:
            if self.observe_here:     # inside: an observer that fails to start stops the workers too
                self._watcher = self.observer.worker(0, 1)
            for number, batch in enumerate(feed):
                check_signalled()           # (a query's replay in DuckDB's thread: a Ctrl-C)
                if len(pending) == in_flight:
                    yield from self._finish(engine, pending.popleft(), tickers, breaks)
                slot = number % in_flight
                engine.submit(slot, batch)
                pending.append((slot, batch.n_records, batch.error,
                                join_parts(batch.data) if keep_bytes else None, batch.columns))
                self.stats["records"] += batch.n_records
                if self.progress:
                    self.progress(batch.source_pos)
                if local:   # applied already: its rows now (a live feed's latency)
                    yield from self._finish(engine, pending.popleft(), tickers, breaks)
                if batch.error is not None:
                    break
            while pending:
                yield from self._finish(engine, pending.popleft(), tickers, breaks)
            counts = engine.finish()
            self.observed = engine.observed if self._watcher is None else [self._watcher.finish()]
            if stamps is not None:
                self._check_unchanged(stamps)
            for name, n in framer.skipped.items():
                counts[name] = counts.get(name, 0) + n
            self.stats["skipped"] = counts
            self.stats.update(engine.state)
            types = framer.message_counts() or self.stats.get("messages_by_type") or {}
            self.stats["messages_by_type"] = dict(sorted(types.items()))
            if counts and not types and not self.detected:
                self._every_record_skipped(counts)
            self._check_tickers(tickers)
            self.stats["complete"] = True
            if self.stats["records"] == 0:
                log.warning("%s: no records in the feed (%s)", self.path,     # a stream may say why
                            getattr(self.source, "empty_reason", "an empty file?"))
            elif not types and not counts and getattr(framer, "headed", False):
                log.warning("%s: no order line after its header", self.path)
            elif not types and not counts:      # (a text format's lines that carry no message)
                n = self.stats["records"]
                log.warning("%s: none of its %s %s%s holds a message of the format %r: is that the feed's format?",
                            self.path, f"{n:,}", framer.unit, "" if n == 1 else "s", self.format.name)
            for note in framer.notes():
                log.warning("%s", note)
            if counts:
                log.warning("%s: skipped records: %s", self.path,
                            ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
        except BaseException as e:
            if isinstance(e, FeedError) and self.observer is not None and self._watcher is None \
                    and not self.observed:
                self._observed_so_far(engine, pending)      # the rows before the bad record
            if isinstance(e, FeedError) and not self.detected:
                self._name_the_format(e)
            # the last batch holds the feed error: drop it, or error -> traceback -> this
            # frame -> error is a cycle keeping every array of the replay until a gc run
            batch = None  # noqa: F841
            pending.clear()
            raise
        finally:
            engine.close()
            feed.close()
            engine = feed = None  # a kept error's traceback holds this frame, not the arrays

    def _observed_so_far(self, engine, pending) -> None:
        """After a bad record: the workers' observer rows so far (without the observer's end of
        day) in ``observed``, for a caller that keeps what came before the record. The feed's
        error is the one raised: a failure here leaves ``observed`` empty."""
        try:
            while pending:          # the batches in flight answer first
                engine.collect(pending.popleft()[0])
            engine.finish(partial=True)
            self.observed = engine.observed
        except Exception as e:  # noqa: BLE001
            log.debug("%s: no observer rows after the bad record: %s", self.path, e)
            self.observed = []

    def _every_record_skipped(self, counts: dict) -> None:
        """A tolerant replay that skipped every record of a feed given a format the file is
        not (it looks like another: :func:`obook.feeds.other_format`): a FeedError (which
        :meth:`_name_the_format` ends with that format), not 0 rows and a count."""
        from ..feeds import other_format

        if other_format(self._input, self.format) is not None:
            skipped = ", ".join(f"{k}: {v:,}" for k, v in sorted(counts.items()))
            raise FeedError(self.path, None, f"every record was skipped ({skipped}), none replayed")

    def _name_the_format(self, e: FeedError) -> None:
        """A feed given a format that fails (at its first record, or later: another format's
        bytes may frame as a few records): the error adds the format the file looks like, when
        that is another one (the format was most likely wrong), in place of the error's general
        advice (``advice``) to give another format."""
        from ..feeds import other_format

        found = other_format(self._input, self.format)
        if found is None:
            return
        hint = (f" (format {self.format.name!r} was given, and the file looks like {found!r}: leave format out "
                "or give that)")
        advice = getattr(e, "advice", "")
        message = str(e)
        if advice and e.reason.endswith(advice) and message.endswith(advice):
            e.reason, message = e.reason[:-len(advice)], message[:-len(advice)]
        e.reason += hint
        e.args = (message + hint, *e.args[1:])

    def _check_unchanged(self, stamps: list) -> None:
        """The files read are as they were when the replay began: a file written to while it
        was read gives the rows of part of it (a cut, an append), or trades the breaks of another
        file (between the breaks' pass and the replay's). A file deleted once the replay opened
        it was read whole, through the open file."""
        now = file_stamps(self.source)
        changed = [f"{p} ({a[0]:,} bytes, then {b[0]:,})"
                   for p, a, b in zip(source_paths(self.source), stamps, now) if None not in (a, b) and a != b]
        if changed:
            raise FeedError(self.path, None, f"the file changed while it was read: {', '.join(changed)}; "
                            "the rows so far are delivered, but replay a file once it is complete")

    def tickers_named(self) -> set[str]:
        """The tickers the feed has named so far (its books' names)."""
        named = self._named
        return set() if named is None else {raw.decode("utf-8", "replace") for raw in named.names.values()}

    def _check_tickers(self, tickers: Tickers) -> None:
        """A selected ticker the feed never named (no book of that name, no row)."""
        if not self.tickers:
            return
        seen = self.tickers_named()
        missing = [t for t in self.tickers if t not in seen]
        self.stats["missing_tickers"] = missing
        if missing:
            msg = f"{self.path}: not in the feed: {_listed(missing)}"
            cased = _other_case(missing, seen)
            if self.unknown_tickers == "raise":
                raise ObookError(msg + f" (no book of the feed has {'those names' if len(missing) > 1 else 'that name'}"
                                 f"{cased})")
            if self.unknown_tickers == "warn":
                log.warning("%s (no rows for them%s)", msg, cased)

    def _keep_tickers(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        import pyarrow.compute as pc

        if self._ticker_set is None:
            self._ticker_set = pa.array(self.tickers, pa.string())
        return batch.filter(pc.is_in(batch.column("ticker"), value_set=self._ticker_set))

    def _finish(self, engine, item, tickers, breaks=None):
        slot, n_records, frame_error, data, columns = item
        item = None
        results = engine.collect(slot)
        first = None
        for r in results:
            tickers.update(r.names)
            if r.error is not None and (first is None or r.error[0] < first[0]):
                first = r.error
        limit = first[0] if first else NO_LIMIT
        if self._watcher is not None:
            self._observe(engine, slot, results[0])
        built = []
        for table in self.tables if self.rows else ():
            counts = np.array([r.counts[table] for r in results], dtype=np.int64)
            rows = with_overflow(engine.rows(table, slot), counts, [r.overflow.get(table) for r in results])
            if table == "bbo":
                batch = merge_batch(rows, counts, limit, engine.book_mul, engine.book_add, tickers,
                                    self._key_type, self._bbo_schema)
            else:
                batch = merge_table_batch(table, rows, counts, limit, engine.book_mul, engine.book_add,
                                          tickers, self.format, self.levels, data, breaks, self._pool)
            if batch is not None and self.tickers:
                batch = self._keep_tickers(batch)
            if batch is not None and self._record_fields:
                batch = with_record_columns(batch, self._record_fields, columns)
            if batch is not None:
                built.append((table, batch))
            batch = None
        out = self._time_out_of_range(built)     # a row whose timestamp int64 ns cannot hold
        if out is not None and (first is None or out[0] <= first[0]):
            import pyarrow.compute as pc

            first = out
            built = [(t, b.filter(pc.less(b.column("seq"), out[0]))) for t, b in built]
        for table, batch in built:
            batch = self._stamp.batch(batch, checked=True)
            if table == "bbo":
                self.stats["rows"] += batch.num_rows
            self.stats["table_rows"][table] += batch.num_rows
            yield table, batch
        built = batch = None
        if not self.rows:
            yield None, None
        error = FeedError(self.path, first[0], first[1], unit=self.format.unit) if first else frame_error
        if first and hasattr(self._framer, "locate"):     # the framer places (its own line) or explains the record
            error = self._framer.locate(error)
        error = self._pieces.locate(error)
        if error is not None:
            try:
                raise error
            finally:  # no frame -> error reference (a cycle through the traceback), no arrays
                error = frame_error = engine = results = None

    def _time_out_of_range(self, built) -> tuple[int, str] | None:
        """(record, reason) of the first record whose rows' time gives no int64 ns timestamp."""
        from ..session import first_out_of_range, out_of_range_reason

        stamp, worst = self._stamp, None
        if stamp.base_ns is None:
            return None
        for _, batch in built:
            if batch.schema.get_field_index("time") < 0:
                continue
            i = first_out_of_range(batch.column("time"), stamp.base_ns, stamp.scale)
            if i >= 0:
                seq = batch.column("seq")[i].as_py()
                if worst is None or seq < worst[0]:
                    worst = (seq, out_of_range_reason(batch.column("time")[i].as_py()))
        return worst

    def _observe(self, engine, slot, r) -> None:
        """observe_here: the events the worker applied (up to its error, if any) to the
        observer, with the batch's books under their local ids."""
        n = int(r.counts["events"])
        rows = with_overflow(engine.rows("events", slot), np.array([n], np.int64), [r.overflow.get("events")])
        mul, add = int(engine.book_mul[0]), int(engine.book_add[0])
        self._watcher.batch(rows[0], n, [((b - add) // mul, *rest) for b, *rest in r.names])


def with_record_columns(batch: pa.RecordBatch, fields: list, columns) -> pa.RecordBatch:
    """``batch`` with the format's per-record columns (``FeedFormat.record_columns``) at
    its end, their values from the feed reader's ``columns(seq)`` (nulls without one)."""
    if columns is None:
        arrays = [pa.nulls(batch.num_rows, f.type) for f in fields]
    else:
        arrays = columns(batch.column("seq").to_numpy())
    for f, a in zip(fields, arrays):
        batch = batch.append_column(f, a)
    return batch


class _Local:
    """workers=1: the applier runs in this process."""

    def __init__(self, replay: Replay):
        self.applier = Applier(replay.format, replay.path, 0, 1, replay.on_error, replay.want,
                               replay.levels, tickers=replay.tickers, observer=replay.observer,
                               kernel=replay.book_kernel)
        self._rows = {t: np.empty((1, WorkerPool.rows_per_slot, w), dtype=np.int64)
                      for t, w in replay.layout.items()}
        self.book_mul = np.array([self.applier.book_map[0]], dtype=np.int64)
        self.book_add = np.array([self.applier.book_map[1]], dtype=np.int64)
        self._result = None
        self.state = {}
        self.observed = []
        self._parts = np.empty(0, np.uint8)   # a batch given in parts (FrameResult.data), joined

    def submit(self, slot, batch):
        data = batch.data
        if isinstance(data, tuple):
            n = sum(len(d) for d in data)
            if len(self._parts) < n:
                self._parts = np.empty(max(n, 2 * len(self._parts)), np.uint8)
            data = join_parts(data, self._parts)
        self._result = self.applier.run(data, batch.base_seq,
                                        {t: r[0] for t, r in self._rows.items()})

    def collect(self, slot):
        return [self._result]

    def rows(self, table, slot):
        return self._rows[table]

    def finish(self, partial: bool = False):
        self.state = self.applier.state(partial)
        observed = self.state.pop("observed", None)
        self.observed = [] if observed is None else [observed]
        return self.applier.skipped()

    def close(self):
        pass


class _Pool:
    """workers>1: a WorkerPool."""

    def __init__(self, replay: Replay, batch_bytes: int = 0):
        # an input slot holds a batch: the bytes read (two blocks at most, a record longer than
        # that travels on its own), or a framer's parse of up to MAX_BATCH_RECORDS records
        # (``Framer.batch_bytes``, FrameResult.data)
        in_capacity = max(2 * replay.block_size + (1 << 16), batch_bytes)
        self.pool = WorkerPool(replay.format, replay.path, replay.workers, replay.on_error,
                               replay.slots, in_capacity, replay.layout,
                               replay.want, replay.levels, replay.tickers,
                               None if replay.observe_here else replay.observer)
        self.book_mul, self.book_add = self.pool.book_mul, self.pool.book_add
        self.state = {}
        self.observed = []
        from .applier import BatchResult
        self._result = BatchResult

    def submit(self, slot, batch):
        self.pool.submit(slot, batch.data, batch.base_seq)

    def collect(self, slot):
        return [self._result(*r) for r in self.pool.results()]

    def rows(self, table, slot):
        return self.pool.outputs[table][:, slot]

    def finish(self, partial: bool = False):
        counts: dict[str, int] = {}
        self.state = {}
        self.observed = []
        for skipped, state in self.pool.finish(partial):
            observed = state.pop("observed", None)
            if observed is not None:
                self.observed.append(observed)
            for k, v in state.items():
                if isinstance(v, dict):      # counts by name: add them up name by name
                    total = self.state.setdefault(k, {})
                    for name, n in v.items():
                        total[name] = total.get(name, 0) + n
                else:
                    self.state[k] = self.state.get(k, 0) + v
            for k, v in skipped.items():
                counts[k] = counts.get(k, 0) + v
        return counts

    def close(self):
        self.pool.close()


def _other_case(missing: list, seen: set) -> str:
    """What an error about tickers the feed never named adds when some are not in capitals
    (tickers are compared as given: ``aapl`` is not ``AAPL``; a replay of chosen tickers
    decodes no other book, so whether the feed has ``AAPL`` is not known)."""
    upper = [t.upper() for t in missing if t != t.upper() and t.upper() not in seen]
    return f"; tickers are case-sensitive: try {_listed(upper)}" if upper else ""


def _listed(names: list, most: int = 10, limit: int = 40) -> str:
    """Ticker names as an error lists them: the first ``most``, each as given when it is
    short printable text, else quoted (escapes shown) and cut at ``limit`` characters."""
    def one(name: str) -> str:
        if name.isprintable() and len(name) <= limit:
            return name
        text = repr(name)
        return text if len(text) <= limit else f"{text[:limit]}... ({len(name)} characters)"

    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(map(one, names[:most])) + more
