"""One worker's share of a replay: decode a batch, apply it to the books, write rows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._kernels.layout import BOOK_ERROR_NAMES, EV_WIDTH, MAX_BATCH_RECORDS, OK
from ..feeds import get_format
from .books import BookState, ExtraRows


@dataclass
class BatchResult:
    counts: dict[str, int]                     # rows written, by table
    error: tuple[int, str] | None = None       # (record number, reason)
    names: list[tuple[int, str]] = field(default_factory=list)   # (global book, ticker)


class Applier:
    """Decoder + books of worker ``worker`` of ``n_workers``, kept for the whole replay."""

    def __init__(self, fmt: str, path: str, worker: int, n_workers: int, on_error: str,
                 want: int = 0, levels: int = 10, tickers: tuple[str, ...] | None = None):
        self.decoder = get_format(fmt).decoder_class()(path, worker, n_workers, on_error, want)
        if tickers:     # decoders that can skip the other books' records do (the engine filters the rest)
            self.decoder.select(tickers)
        self.books = BookState(strict=on_error == "raise")
        self.want = want
        self.levels = levels
        self.events = np.empty((MAX_BATCH_RECORDS, EV_WIDTH), dtype=np.int64)
        self.failed = False

    @property
    def book_map(self) -> tuple[int, int]:
        return self.decoder.book_mul, self.decoder.book_add

    def run(self, buf: np.ndarray, base_seq: int, outs: dict[str, np.ndarray]) -> BatchResult:
        """Apply the batch in buf; outs[table] (>= its record count rows) receive the rows."""
        if self.failed:
            return BatchResult({t: 0 for t in outs})
        d = self.decoder.decode(buf, base_seq, self.events)
        extra = None
        if self.want:
            extra = ExtraRows(self.want, 1, self.levels, outs.get("trades"), outs.get("orders"),
                              outs.get("depth"))
        status, i, n_rows = self.books.apply(self.events, d.n_events, outs["bbo"], extra)
        counts = {"bbo": n_rows}
        for k, t in enumerate(("trades", "orders", "depth")):
            if t in outs:
                counts[t] = int(extra.counts[k])
        error = d.error
        if status != OK:
            seq = int(self.events[i, 0])
            if error is None or seq < error[0]:
                error = (seq, self.decoder.describe(status, self.events[i]))
        self.failed = error is not None
        mul, add = self.book_map
        return BatchResult(counts, error, [(b * mul + add, name) for b, name in d.names])

    def skipped(self) -> dict[str, int]:
        counts = dict(self.decoder.skipped)
        for code, name in BOOK_ERROR_NAMES.items():
            if self.books.skips[code]:
                counts[name] = counts.get(name, 0) + int(self.books.skips[code])
        return counts

    def state(self) -> dict:
        """End-of-replay counts of this worker: live orders, crossed books, and (formats whose
        framer cannot tell types) messages by type."""
        state = {"live_orders": self.books.live_orders, "crossed_books": self.books.crossed_books}
        types = self.decoder.message_counts()
        if types is not None:
            state["messages_by_type"] = types
        return state
