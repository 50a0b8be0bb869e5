"""The replay: feed → batches → (workers: decode + books) → merge → Arrow BBO batches."""

from __future__ import annotations

import logging
import os
from collections import deque
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from .._kernels.layout import MAX_BATCH_RECORDS, ROW_WIDTH
from ..errors import FeedError, ObookError
from ..feeds import detect_format, get_format
from ..schema import bbo_schema
from .applier import Applier
from .arrow import Tickers, merge_batch
from .blocks import BLOCK_SIZE, iter_batches
from .workers import WorkerPool

log = logging.getLogger("obook")

ON_ERROR = ("raise", "skip")
NO_LIMIT = np.iinfo(np.int64).max


def default_workers() -> int:
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


class Replay:
    """One replay of a feed into BBO rows.

    ``reader()`` streams them as a ``pyarrow.RecordBatchReader``; once it is
    exhausted, ``stats`` holds the record count, row count and (tolerant mode)
    the skipped records by kind.
    """

    def __init__(self, path: str | os.PathLike, workers: int | None = None, format: str | None = None,
                 on_error: str = "raise", slots: int = 4, block_size: int = BLOCK_SIZE,
                 progress: Callable[[int], None] | None = None):
        self.path = str(path)
        if not Path(self.path).is_file():
            raise ObookError(f"{self.path}: no such feed file")
        if on_error not in ON_ERROR:
            raise ObookError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
        self.format = get_format(format or detect_format(self.path))
        self.workers = default_workers() if workers is None else int(workers)
        if not 1 <= self.workers <= 64:
            raise ObookError(f"workers must be between 1 and 64, not {workers}")
        self.on_error = on_error
        self.slots = max(1, slots)
        self.block_size = block_size
        self.progress = progress
        self.stats: dict = {}

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(bbo_schema, self.batches())

    def batches(self) -> Iterator[pa.RecordBatch]:
        framer = self.format.framer_class()(self.path, self.on_error)
        tickers = Tickers()
        has_locate = self.format.name == "itch"
        self.stats = {"records": 0, "rows": 0, "skipped": {}, "complete": False}
        feed = iter_batches(self.path, framer, self.block_size)
        engine = _Local(self) if self.workers == 1 else _Pool(self)
        in_flight = 1 if self.workers == 1 else self.slots
        try:
            pending: deque = deque()
            for number, batch in enumerate(feed):
                if len(pending) == in_flight:
                    yield from self._finish(engine, pending.popleft(), tickers, has_locate)
                slot = number % in_flight
                engine.submit(slot, batch)
                pending.append((slot, batch.n_records, batch.error))
                self.stats["records"] += batch.n_records
                if self.progress:
                    self.progress(batch.source_pos)
                if batch.error is not None:
                    break
            while pending:
                yield from self._finish(engine, pending.popleft(), tickers, has_locate)
            counts = engine.finish()
            for name, n in framer.skipped.items():
                counts[name] = counts.get(name, 0) + n
            self.stats["skipped"] = counts
            self.stats.update(engine.state)
            self.stats["complete"] = True
            if counts:
                log.warning("%s: skipped records: %s", self.path,
                            ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
        except BaseException:
            # the last batch holds the feed error: drop it, or error -> traceback -> this
            # frame -> error is a cycle keeping every array of the replay until a gc run
            batch = None  # noqa: F841
            pending.clear()
            raise
        finally:
            engine.close()
            feed.close()
            engine = feed = None  # a kept error's traceback holds this frame, not the arrays

    def _finish(self, engine, item, tickers, has_locate):
        slot, n_records, frame_error = item
        item = None
        results = engine.collect(slot)
        first = None
        for r in results:
            tickers.update(r.names)
            if r.error is not None and (first is None or r.error[0] < first[0]):
                first = r.error
        limit = first[0] if first else NO_LIMIT
        counts = np.array([r.n_rows for r in results], dtype=np.int64)
        batch = merge_batch(engine.rows(slot), counts, limit, engine.book_mul, engine.book_add,
                            tickers, has_locate)
        if batch is not None:
            self.stats["rows"] += batch.num_rows
            yield batch
            batch = None
        error = FeedError(self.path, first[0], first[1], unit=self.format.unit) if first else frame_error
        if error is not None:
            try:
                raise error
            finally:  # no frame -> error reference (a cycle through the traceback), no arrays
                error = frame_error = engine = results = None


class _Local:
    """workers=1: the applier runs in this process."""

    def __init__(self, replay: Replay):
        self.applier = Applier(replay.format.name, replay.path, 0, 1, replay.on_error)
        self._rows = np.empty((1, MAX_BATCH_RECORDS, ROW_WIDTH), dtype=np.int64)
        self.book_mul = np.array([self.applier.book_map[0]], dtype=np.int64)
        self.book_add = np.array([self.applier.book_map[1]], dtype=np.int64)
        self._result = None
        self.state = {}

    def submit(self, slot, batch):
        self._result = self.applier.run(batch.data, batch.base_seq, self._rows[0])

    def collect(self, slot):
        return [self._result]

    def rows(self, slot):
        return self._rows

    def finish(self):
        self.state = self.applier.state()
        return self.applier.skipped()

    def close(self):
        pass


class _Pool:
    """workers>1: a WorkerPool."""

    def __init__(self, replay: Replay):
        self.pool = WorkerPool(replay.format.name, replay.path, replay.workers, replay.on_error,
                               replay.slots, 2 * replay.block_size + (1 << 16))
        self.book_mul, self.book_add = self.pool.book_mul, self.pool.book_add
        self.state = {}
        from .applier import BatchResult
        self._result = BatchResult

    def submit(self, slot, batch):
        self.pool.submit(slot, batch.data, batch.base_seq)

    def collect(self, slot):
        return [self._result(*r) for r in self.pool.results()]

    def rows(self, slot):
        return self.pool.rows[:, slot]

    def finish(self):
        counts: dict[str, int] = {}
        live = 0
        for skipped, state in self.pool.finish():
            live += state["live_orders"]
            for k, v in skipped.items():
                counts[k] = counts.get(k, 0) + v
        self.state = {"live_orders": live}
        return counts

    def close(self):
        self.pool.close()
