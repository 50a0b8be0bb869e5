"""BookState: the arrays of one worker's books, grown on demand around apply_events."""

from __future__ import annotations

import numpy as np

from .._kernels import book as K
from .._kernels.layout import (DEPTH_HEAD, N_BOOK_ERRORS, NEED_ROOM, OK, OR_WIDTH, TR_WIDTH,
                               WANT_DEPTH, WANT_ORDERS, WANT_TRADES)


class BookState:
    """All books of one worker. ``apply`` runs the kernel and grows pools it fills."""

    def __init__(self, strict: bool = True, books: int = 1024, levels: int = 4096,
                 pages: int = 64, overflow: int = 64, kernel=None):
        self.strict = strict
        self.kernel = kernel or K.apply_events  # tests pass K.apply_events.py_func
        self.lv = np.zeros((levels, 4), dtype=np.int64)
        self.lv_free = np.zeros(levels, dtype=np.int64)
        self.sides = np.zeros((books * 2, 3), dtype=np.int64)
        self.pool = np.zeros((levels * 4, 2), dtype=np.int64)
        self.seg_free = np.full(64, -1, dtype=np.int64)
        self.pages = np.zeros(pages * K.PAGE, dtype=np.int64)
        self.page_dir = np.zeros((4, 1 << K.CHUNK_BITS), dtype=np.int32)  # see _kernels/book.py
        self.page_live = np.zeros(pages, dtype=np.int64)
        self.page_key = np.zeros(pages, dtype=np.int64)
        self.page_free = np.zeros(pages, dtype=np.int64)
        self.ov_key = np.zeros((overflow, 2), dtype=np.int64)
        self.ov_val = np.zeros(overflow, dtype=np.int64)
        self.ov_state = np.zeros(overflow, dtype=np.int8)
        self.st = np.zeros(K.ST_WIDTH, dtype=np.int64)
        self.st[K.ST_CHUNKS] = 1
        self.skips = np.zeros(N_BOOK_ERRORS, dtype=np.int64)

    @property
    def live_orders(self) -> int:
        return int(self.st[K.ST_LIVE])

    @property
    def crossed_books(self) -> int:
        return int(K.crossed_books(self.sides, self.pool, self.lv))

    def apply(self, ev: np.ndarray, n: int, rows: np.ndarray,
              extra: "ExtraRows | None" = None) -> tuple[int, int, int]:
        """Apply ev[:n]; returns (status, failing event index, BBO rows written).

        ``extra`` (trade, order and depth rows) receives its rows and counts too."""
        x = extra or _NO_EXTRA
        x.counts[:] = 0
        i = nrow = 0
        while True:
            status, i, nrow, room = self.kernel(
                ev, n, i, rows, nrow, self.skips, self.strict, self.lv, self.lv_free, self.sides,
                self.pool, self.seg_free, self.pages, self.page_dir, self.page_live, self.page_key,
                self.page_free, self.ov_key, self.ov_val, self.ov_state, self.st,
                x.want, x.trades, x.orders, x.depth, x.counts, x.snap)
            if status != NEED_ROOM:
                return status, i, nrow
            if room == K.ROOM_ROWS:
                raise ValueError("rows buffer smaller than the events")  # engine sizes it; a bug
            self._grow(room)

    def _grow(self, room: int) -> None:
        if room == K.ROOM_LEVELS:
            self.lv = _bigger(self.lv)
            self.lv_free = _bigger(self.lv_free)
        elif room == K.ROOM_POOL:
            self.pool = _bigger(self.pool)
        elif room == K.ROOM_CHUNKS:
            self.page_dir = _bigger(self.page_dir)
        elif room == K.ROOM_BOOKS:
            self.sides = _bigger(self.sides)
        elif room == K.ROOM_PAGES:
            self.pages = _bigger(self.pages)
            self.page_live = _bigger(self.page_live)
            self.page_key = _bigger(self.page_key)
            self.page_free = _bigger(self.page_free)
        elif room == K.ROOM_OVERFLOW:
            size = self.ov_key.shape[0] * (2 if self.st[K.ST_OV_USED] * 4 > self.ov_key.shape[0] else 1)
            key = np.zeros((size, 2), dtype=np.int64)
            val = np.zeros(size, dtype=np.int64)
            state = np.zeros(size, dtype=np.int8)
            n = K.ov_rehash(self.ov_key, self.ov_val, self.ov_state, key, val, state)
            self.ov_key, self.ov_val, self.ov_state = key, val, state
            self.st[K.ST_OV_USED] = self.st[K.ST_OV_FILL] = n
        else:
            raise ValueError(f"unknown room request {room}")


class ExtraRows:
    """Where the kernel writes trade, order and depth rows (the tables besides the BBO)."""

    def __init__(self, want: int = 0, capacity: int = 1, levels: int = 10, trades=None,
                 orders=None, depth=None):
        self.want = want
        self.levels = levels
        cap = lambda on: capacity if want & on else 1  # noqa: E731
        self.trades = trades if trades is not None else np.zeros((cap(WANT_TRADES), TR_WIDTH), np.int64)
        self.orders = orders if orders is not None else np.zeros((cap(WANT_ORDERS), OR_WIDTH), np.int64)
        self.depth = depth if depth is not None else np.zeros(
            (cap(WANT_DEPTH), DEPTH_HEAD + 6 * levels), np.int64)
        self.counts = np.zeros(3, np.int64)
        self.snap = np.zeros((2, 2, levels, 3), np.int64)


_NO_EXTRA = ExtraRows()


def _bigger(a: np.ndarray) -> np.ndarray:
    out = np.zeros((a.shape[0] * 2,) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


__all__ = ["BookState", "ExtraRows", "OK"]
