"""One worker's share of a replay: decode a batch, apply it to the books, write rows."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

import numpy as np

from .._kernels.layout import BOOK_ERROR_NAMES, EV_WIDTH, MAX_BATCH_RECORDS, OK
from ..feeds import get_format
from ..feeds.base import DecodeResult
from .books import BookState, ExtraRows

#: first rows of the events buffer of a decoder that may emit several events per record
EVENTS_ROWS = 1 << 12
#: feed bytes per order page a worker starts with, and the most pages it starts with (1 KiB
#: each; untouched ones cost address space only): the 15M-message ITCH day (455 MiB) takes
#: 93,002 pages a worker with 2 workers, 105,324 with 1
FEED_BYTES_PER_PAGE = 4096
MAX_FIRST_PAGES = 1 << 17


def first_order_pages(path: str) -> int:
    """Order pages to start a worker's books with: from the feed file's size (a stream or a
    missing file: the books' default). Growing the pages copies them into new memory; in
    this environment that cost 16 ms for 64 MB, and up to 180 ms in some processes
    (benchmarks/bench_parquet_e2e.py)."""
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return 64
    if not stat.S_ISREG(st.st_mode):
        return 64
    return max(64, min(MAX_FIRST_PAGES, st.st_size // FEED_BYTES_PER_PAGE))


@dataclass
class BatchResult:
    counts: dict[str, int]                     # rows written, by table
    error: tuple[int, str] | None = None       # (record number, reason)
    names: list[tuple] = field(default_factory=list)   # (global book, ticker[, book key])
    overflow: dict[str, np.ndarray] = field(default_factory=dict)  # rows beyond the output slot


def with_overflow(rows: np.ndarray, counts: np.ndarray, extra: list) -> np.ndarray:
    """The workers' rows of a batch (workers x slot rows x width) followed, for a worker whose
    rows did not fit its slot, by its overflow rows (``extra[w]``, None when none)."""
    if all(e is None for e in extra):
        return rows
    cap = rows.shape[1]
    out = np.empty((rows.shape[0], max(cap, int(counts.max())), rows.shape[2]), np.int64)
    for w, e in enumerate(extra):
        k = min(int(counts[w]), cap)
        out[w, :k] = rows[w, :k]
        if e is not None:
            out[w, cap:cap + len(e)] = e
    return out


class Applier:
    """Decoder + books of worker ``worker`` of ``n_workers``, kept for the whole replay.

    ``fmt``: a FeedFormat (or a format name). ``events_rows``: the first size of the events
    buffer of a decoder that may emit several events per record (it grows as needed).
    """

    def __init__(self, fmt, path: str, worker: int, n_workers: int, on_error: str,
                 want: int = 0, levels: int = 10, events_rows: int = EVENTS_ROWS,
                 tickers: tuple[str, ...] | None = None, observer=None, kernel=None):
        fmt = get_format(fmt) if isinstance(fmt, str) else fmt
        # an observer (e.g. obook.simulate's) sees every batch's events after the books applied them
        self.observer = observer.worker(worker, n_workers) if observer is not None else None
        self.decoder = fmt.decoder_class()(path, worker, n_workers, on_error, want)
        if tickers:     # decoders that can skip the other books' records do (the engine filters the rest)
            self.decoder.select(tickers)
        try:    # kernel: e.g. a timed one
            self.books = BookState(strict=on_error == "raise", kernel=kernel, pages=first_order_pages(path))
        except MemoryError:     # no address space for the pages up front (strict overcommit): grow them
            self.books = BookState(strict=on_error == "raise", kernel=kernel)
        self.want = want
        self.levels = levels
        per_record = self.decoder.max_events_per_record
        rows = MAX_BATCH_RECORDS * per_record if per_record else max(1, events_rows)
        self.events = np.empty((rows, EV_WIDTH), dtype=np.int64)
        self.failed = False

    @property
    def book_map(self) -> tuple[int, int]:
        return self.decoder.book_mul, self.decoder.book_add

    def run(self, buf: np.ndarray, base_seq: int, outs: dict[str, np.ndarray]) -> BatchResult:
        """Apply the batch in buf; outs[table] (>= its record count rows) receive the rows."""
        if self.failed:
            return BatchResult({t: 0 for t in outs})
        d = self._decode(buf, base_seq)
        extra = None
        if self.want:
            extra = ExtraRows(self.want, 1, self.levels, outs.get("trades"), outs.get("orders"),
                              outs.get("depth"))
        status, i, n_rows = self.books.apply(self.events, d.n_events, outs["bbo"], extra)
        counts = {"bbo": n_rows}
        written = {"bbo": self.books.out_rows}
        for k, t in enumerate(("trades", "orders", "depth")):
            if t in outs:
                counts[t] = int(extra.counts[k])
                written[t] = getattr(extra, t)
        if "events" in outs:    # the events themselves, for an observer in the parent
            counts["events"] = d.n_events if status == OK else i
            written["events"] = self.events
        for t in ("trades", "orders"):   # a decoder's own order keys back to the feed's refs
            if t in written:
                self.decoder.feed_refs(t, written[t][:counts[t]])
        overflow = {}
        for t, rows in written.items():     # grown past the slot: the slot, then the rest
            if rows is not outs[t]:
                cap, c = outs[t].shape[0], counts[t]
                outs[t][:min(c, cap)] = rows[:min(c, cap)]
                if c > cap:
                    overflow[t] = rows[cap:c].copy()
        if self.observer is not None:
            self.observer.batch(self.events, d.n_events if status == OK else i, d.names)
        error = d.error
        if status != OK:
            seq = int(self.events[i, 0])
            if error is None or seq < error[0]:
                error = (seq, self.decoder.describe(status, self.events[i]))
        self.failed = error is not None
        mul, add = self.book_map
        return BatchResult(counts, error, [(b * mul + add, *rest) for b, *rest in d.names], overflow)

    def _decode(self, buf: np.ndarray, base_seq: int) -> DecodeResult:
        """The decoder over the whole batch; a decoder that stops for room is called again with
        the rest of the batch and the rest of the buffer, which doubles (the events so far
        kept) when not one more record fitted."""
        d = self.decoder.decode(buf, base_seq, self.events)
        if d.n_bytes is None:
            return d
        n_events, names, pos, seq = d.n_events, list(d.names), 0, base_seq
        while d.n_bytes is not None and d.error is None:
            pos += d.n_bytes
            seq += d.n_records
            if pos >= len(buf):
                break
            if d.n_bytes == 0 or n_events == len(self.events):   # not one more record fits
                grown = np.empty((2 * len(self.events), EV_WIDTH), dtype=np.int64)
                grown[:n_events] = self.events[:n_events]
                self.events = grown
            d = self.decoder.decode(buf[pos:], seq, self.events[n_events:])
            n_events += d.n_events
            names += d.names
        return DecodeResult(n_events, names, d.error)

    def skipped(self) -> dict[str, int]:
        counts = dict(self.decoder.skipped)
        for code, name in BOOK_ERROR_NAMES.items():
            if self.books.skips[code]:
                counts[name] = counts.get(name, 0) + int(self.books.skips[code])
        return counts

    def state(self, partial: bool = False) -> dict:
        """End-of-replay counts of this worker: live orders, crossed books, and (formats whose
        framer cannot tell types) messages by type; an observer's rows (``partial``: the rows
        so far of a replay stopped by a bad record, without the observer's end of day)."""
        state = {"live_orders": self.books.live_orders, "crossed_books": self.books.crossed_books}
        types = self.decoder.message_counts()
        if types is not None:
            state["messages_by_type"] = types
        if self.observer is not None:
            so_far = getattr(self.observer, "partial", None) if partial else None
            if not partial or so_far is not None:
                state["observed"] = so_far() if partial else self.observer.finish()
        return state
