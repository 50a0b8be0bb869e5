"""BookState: the arrays of one worker's books, grown on demand around replay_events."""

from __future__ import annotations

import numpy as np

from .._kernels import book as K
from .._kernels import book_rows as R
from .._kernels import price_cage as C
from .._kernels import replay
from .._kernels.hashtab import ht_grown_rows
from .._kernels.layout import (DEPTH_HEAD, N_BOOK_ERRORS, NEED_ROOM, OK, OR_WIDTH, TR_WIDTH,
                               WANT_DEPTH, WANT_ORDERS, WANT_QUEUE, WANT_TRADES)


class BookState:
    """All books of one worker. ``apply`` runs the kernel and grows pools it fills.

    ``queue``: keep each level's orders in time priority (the orders table's queue place);
    turned on by the first ``apply`` that asks for orders rows while no order is live.
    ``node_width``: columns of a queue node (the book's four, then the driver's own: the
    own-order simulation keeps a feed order's priority stamp and printed shares there).
    ``sparse_refs``: these books hold a sparse few of the feed's order ids (the simulation's
    tracked books among all): every order goes to the hash table (``K.park_direct_index``),
    as the direct index would spend a page on almost each one.
    """

    #: the overflow order table (refs the direct index can't hold: all of a feed whose ids
    #: are 64-bit) doubles at each rehash until it has this many rows, even when tombstones,
    #: not live orders, filled it: a small table full of tombstones would send the kernel
    #: back to Python every few hundred orders
    OV_ROWS_KEPT = 1 << 15

    def __init__(self, strict: bool = True, books: int = 1024, levels: int = 4096,
                 pages: int = 64, overflow: int = 64, kernel=None, queue: bool = False,
                 depth_levels: int = 0, node_width: int = 4, sparse_refs: bool = False):
        self.strict = strict
        self.node_width = node_width
        self.kernel = kernel or replay.replay_events  # tests pass replay.replay_events.py_func
        self.lv = np.zeros((levels, 4), dtype=np.int64)
        self.lv_free = np.zeros(levels, dtype=np.int64)
        self.lvx = np.zeros((levels, 4), dtype=np.int64)
        self.sides = np.zeros((books * 2, 4), dtype=np.int64)
        self.pool = np.zeros((levels * 4, 2), dtype=np.int64)
        self.seg_free = np.full(2 * K.HEAP_FREE, -1, dtype=np.int64)
        self.heaps = np.zeros((books * 2, 2), dtype=np.int64)
        self.hp = np.zeros((64, 2), dtype=np.int64)
        self.fh = np.zeros((64, 4), dtype=np.int64)
        self.pages = np.zeros(pages * K.PAGE, dtype=np.int64)
        self.page_dir = np.zeros((4, 1 << K.CHUNK_BITS), dtype=np.int32)  # see obook/_kernels/book.py
        self.page_live = np.zeros(pages, dtype=np.int64)
        self.page_key = np.zeros(pages, dtype=np.int64)
        self.page_free = np.zeros(pages, dtype=np.int64)
        self.ov_key = np.zeros((overflow, 2), dtype=np.int64)
        self.ov_val = np.zeros((overflow, 2), dtype=np.int64)
        self.ov_state = np.zeros(overflow, dtype=np.int8)
        self.st = np.zeros(replay.ST_WIDTH, dtype=np.int64)
        self.st[K.ST_CHUNKS] = 1
        self.st[K.ST_Q_FREE] = -1
        if sparse_refs:
            K.park_direct_index(self.st)
        self.skips = np.zeros(N_BOOK_ERRORS, dtype=np.int64)
        self.cage = np.zeros((books, C.CG_WIDTH), dtype=np.int64)    # price cage (Shenzhen ChiNext)
        self.held = np.zeros((16, C.HW_WIDTH), dtype=np.int64)
        self.queue = False
        self.qn = np.zeros((1, 4), dtype=np.int64)
        self.pnode = np.zeros(1, dtype=np.int64)
        self.ovnode = np.zeros(1, dtype=np.int64)
        self.depth_levels = -1
        self._dstate(depth_levels)
        if queue:
            self._enable_queue()
        self.out_rows = None

    def _enable_queue(self) -> None:
        if self.live_orders:
            raise ValueError("time priority must be on before the first order")
        self.queue = True
        self.qn = np.zeros((max(64, self.lv.shape[0]), self.node_width), dtype=np.int64)
        self.pnode = np.zeros(self.pages.shape[0], dtype=np.int64)
        self.ovnode = np.zeros(self.ov_val.shape[0], dtype=np.int64)

    def _dstate(self, depth_levels: int) -> None:
        """Per-book DEFER state, with room for depth_levels levels a side."""
        if depth_levels != self.depth_levels:
            if self.st[R.ST_OPEN]:
                raise ValueError("the depth levels changed during a DEFER run")
            self.depth_levels = depth_levels
            self.dstate = np.zeros((self.sides.shape[0] // 2, R.DS_WIDTH + 6 * depth_levels), np.int64)

    def books(self) -> K.Books:
        """The book arrays as the kernels take them (after any growth)."""
        return K.Books(self.lv, self.lv_free, self.lvx, self.sides, self.pool, self.seg_free, self.heaps,
                       self.hp, self.fh, self.pages, self.page_dir, self.page_live, self.page_key,
                       self.page_free, self.ov_key, self.ov_val, self.ov_state, self.qn, self.pnode,
                       self.ovnode, self.st)

    @property
    def live_orders(self) -> int:
        return int(self.st[K.ST_LIVE])

    @property
    def crossed_books(self) -> int:
        return int(K.crossed_books(self.sides, self.pool, self.lv))

    def apply(self, ev: np.ndarray, n: int, rows: np.ndarray,
              extra: "ExtraRows | None" = None) -> tuple[int, int, int]:
        """Apply ev[:n]; returns (status, failing event index, BBO rows written).

        ``extra`` (trade, order and depth rows) receives its rows and counts too. When an
        output array fills it is replaced by a larger copy: the BBO rows end in
        ``self.out_rows`` (``rows`` itself unless it grew), the others in ``extra``'s
        attributes."""
        x = extra or _NO_EXTRA
        x.counts[:] = 0
        if x.want & WANT_QUEUE and not self.queue:
            self._enable_queue()
        self._dstate(x.levels if x.want & WANT_DEPTH else 0)
        i = nrow = 0
        while True:
            status, i, nrow, room = self.kernel(ev, n, i, rows, nrow, self.skips, self.strict, self.books(),
                                                replay.Rules(self.dstate, self.cage, self.held), x.tables())
            if status != NEED_ROOM:
                self.out_rows = rows
                return status, i, nrow
            if room == K.ROOM_ROWS:
                rows = _bigger(rows) if nrow >= rows.shape[0] else rows
                x.grow()
            else:
                self.grow(room)

    def grow(self, room: int) -> None:
        """Make room for what a kernel's NEED_ROOM asked (a K.ROOM_* code)."""
        if room == K.ROOM_LEVELS:
            self.lv = _bigger(self.lv)
            self.lv_free = _bigger(self.lv_free)
            self.lvx = _bigger(self.lvx)
        elif room == K.ROOM_POOL:
            self.pool = _bigger(self.pool)
        elif room == K.ROOM_HEAP:
            self.hp = _bigger(self.hp)
        elif room == K.ROOM_FAR_HASH:
            size = ht_grown_rows(self.fh.shape[0], self.st[K.ST_FH_USED])
            fh = np.zeros((size, 4), dtype=np.int64)
            self.st[K.ST_FH_USED] = self.st[K.ST_FH_FILL] = K.fh_rehash(self.fh, fh)
            self.fh = fh
        elif room == K.ROOM_NODES:
            self.qn = _bigger(self.qn)
        elif room == K.ROOM_CHUNKS:
            self.page_dir = _bigger(self.page_dir)
        elif room == K.ROOM_BOOKS:
            self.sides = _bigger(self.sides)
            self.heaps = _bigger(self.heaps)
            self.dstate = _bigger(self.dstate)
            self.cage = _bigger(self.cage)
        elif room == C.ROOM_HELD:
            self.held = _bigger(self.held)
        elif room == K.ROOM_PAGES:
            self.pages = _bigger(self.pages)
            self.page_live = _bigger(self.page_live)
            self.page_key = _bigger(self.page_key)
            self.page_free = _bigger(self.page_free)
            if self.queue:
                self.pnode = _bigger(self.pnode)
        elif room == K.ROOM_OVERFLOW:
            size = ht_grown_rows(self.ov_key.shape[0], self.st[K.ST_OV_USED], self.OV_ROWS_KEPT)
            key = np.zeros((size, 2), dtype=np.int64)
            val = np.zeros((size, 2), dtype=np.int64)
            state = np.zeros(size, dtype=np.int8)
            node = np.zeros(size if self.queue else 1, dtype=np.int64)
            n = K.ov_rehash(self.ov_key, self.ov_val, self.ov_state, self.ovnode, key, val, state, node)
            self.ov_key, self.ov_val, self.ov_state, self.ovnode = key, val, state, node
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

    def tables(self) -> R.Tables:
        return R.Tables(self.want, self.trades, self.orders, self.depth, self.counts, self.snap)

    def grow(self) -> None:
        """Replace each wanted table's array by a copy twice as large (the kernel asked for
        room: a table is full, or an event needs many rows)."""
        for name, bit in (("trades", WANT_TRADES), ("orders", WANT_ORDERS), ("depth", WANT_DEPTH)):
            if self.want & bit:
                setattr(self, name, _bigger(getattr(self, name)))


_NO_EXTRA = ExtraRows()


def _bigger(a: np.ndarray) -> np.ndarray:
    out = np.zeros((a.shape[0] * 2,) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


__all__ = ["BookState", "ExtraRows", "OK"]
