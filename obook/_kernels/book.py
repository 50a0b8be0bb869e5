"""The limit order book: price levels, time-priority queues, order records and the price
index, with the operations every driver builds on (find, add, take shares, remove, the
best levels). It knows nothing of feeds: the replay driver (obook._kernels.replay), the
rules it composes and the tables it writes live beside it.

State is a handful of flat arrays (see obook.engine.books.BookState):

- ``lv[L, 4]``: price levels: price, total shares, order count, owner (book*2 + side;
  -1 once freed). ``lvx[L, 4]``: heap position (far levels, else -1), queue head and
  tail (time priority, below), and a value the driver keeps per level (0 when the level
  is made; the own-order simulation's shares its orders consumed there).
- ``sides[B*2, 4]``: per book and side: start, len and cap of its *near* segment of
  ``pool``, and the number of its *far* levels.
- ``pool[P, 2]``: near segments of (sort key, level), sorted by key, best at the end (key
  = price for bids, -price for asks). A near segment holds at most NEAR_MAX levels, the
  best ones; power-of-two sizes, freed ones on per-size free lists (``seg_free[:64]``).
- Far levels (a side's levels beyond its best NEAR_MAX, all worse than every near one):
  a 4-ary max-heap by key per side, ``hp[H, 2]`` rows (key, level) in segments
  ``heaps[B*2, 2]`` (start, cap; free lists ``seg_free[64:]``), and the hash table ``fh[F,
  4]`` (state, side, price, level; obook._kernels.hashtab on its columns) that finds a far level by price. When a side's near
  segment falls below NEAR_MIN levels it is refilled from its heap. So every level
  operation is O(1) near the touch and O(log levels) far from it, and the top of book,
  the depth walk (at most 50 levels) and the crossed-book check read the near segment.
- ``pages[G * PAGE]``: the paged direct order index for the 2**32 refs from a base
  (``st[ST_REF_BASE]``: 0 when the first order's ref is below 2**32, else 2**31 below
  it, so a feed of large but dense order ids is indexed directly too; set by
  ``order_room`` while the index has no page yet). With ``r = ref - base``, ``page_dir`` is
  two-level (row 0 maps ``r >> 20`` to a row, whose slots map ``r >> 7`` to page + 1; 0:
  none), ``page_key`` is a page's ``r >> 7``, ``page_live`` counts live orders of a page
  (freed at 0). An entry is ``shares << 24 | level + 1`` (0 = empty).
- ``ov_key[O, 2]`` / ``ov_val[O, 2]`` / ``ov_state[O]``: a hash table (obook._kernels.hashtab) for
  orders the direct index can't hold (refs outside its window, a ref live in two books, 2**39 shares
  or more, a level id from 2**24 - 2 up); its values are (level + 1, shares) rows.
- Time priority (only when the caller keeps queues, ``queue``): each level's orders in
  arrival order, a doubly-linked list of nodes ``qn[N, 4+]`` (next, prev, shares, ref;
  a driver may keep more columns per order beside them)
  from ``lvx`` head to tail; ``pnode`` (parallel to ``pages``) and ``ovnode`` (to
  ``ov_val``) give an order's node. Without them these arrays have one row and are never
  touched.
- ``st``: scalar counters (indices ST_*; a driver keeps its own counters from
  ST_BOOK_WIDTH on).

Queue place: a new order goes to the back of its level; taking shares keeps the order's
place; removing an order moves those behind it forward.

Nothing raises: an operation that needs room is preceded by ``level_room`` /
``order_room``, which name the array to grow (ROOM_*); the caller grows it and calls again.
"""

from collections import namedtuple

import numpy as np
from .jit import INTERPRETED, njit
from .hashtab import ht_drop, ht_find, ht_full, ht_put, ht_reinsert, ht_slot, uindex as _u

PAGE_BITS = 7      # 128 refs (1 KiB) a page: a lone old order pins little memory
CHUNK_BITS = 13    # page_dir rows: row 0 maps ref >> 20 to a row of 8192 page slots
PAGE = 1 << PAGE_BITS
DIRECT_REFS = 1 << 32
#: a page entry is shares << LEVEL_BITS | level + 1: orders of PAGED_SHARES shares or more (or
#: on a level id from LEVEL_MASK - 1 up) are kept in the overflow table, whose values are
#: (level + 1, shares) rows: every int64 quantity is exact
LEVEL_BITS = 24
LEVEL_MASK = (1 << LEVEL_BITS) - 1
PAGED_SHARES = 1 << (63 - LEVEL_BITS)
#: the most shares a price level holds (its int64 total): an add past it is refused
LEVEL_MAX_SHARES = (1 << 63) - 1
# st[] indices
ST_LV_TOP = 0      # levels ever handed out
ST_LV_FREE = 1     # free level ids on the lv_free stack
ST_POOL_TOP = 2
ST_PAGE_TOP = 3
ST_PAGE_FREE = 4
ST_OV_USED = 5     # live entries in the overflow table
ST_OV_FILL = 6     # live + tombstones
ST_LIVE = 7        # live orders
ST_CHUNKS = 8      # page_dir rows in use (row 0 is the top level)
ST_HP_TOP = 9      # heap rows ever handed out
ST_FH_USED = 10    # live entries in the far-level hash table
ST_FH_FILL = 11    # live + tombstones
ST_Q_TOP = 12      # queue nodes ever handed out
ST_Q_FREE = 13     # first free queue node (-1: none)
ST_REF_BASE = 14   # the direct index's first ref
ST_BOOK_WIDTH = 15  # the book's counters; a driver's follow
# what NEED_ROOM asks for (the returned detail); a driver's rules may add their own from ROOM_BOOK_END
ROOM_LEVELS = 1
ROOM_POOL = 2
ROOM_PAGES = 3
ROOM_OVERFLOW = 4
ROOM_BOOKS = 5
ROOM_ROWS = 6      # an output table: grow (or hand on) the rows arrays
ROOM_CHUNKS = 7
ROOM_HEAP = 8
ROOM_FAR_HASH = 9
ROOM_NODES = 10
ROOM_BOOK_END = 11

LV_PRICE = 0
LV_QTY = 1
LV_COUNT = 2
LV_OWNER = 3
LX_HPOS = 0
LX_HEAD = 1
LX_TAIL = 2
LX_DRIVER = 3      # the driver's own value for the level (0 when made)
Q_NEXT = 0
Q_PREV = 1
Q_SHARES = 2
Q_REF = 3
#: near segment bounds: at most NEAR_MAX levels; refilled up to NEAR_FILL from the far
#: heap when it falls below NEAR_MIN (>= the deepest depth table, 50 levels)
NEAR_MAX = 128
NEAR_MIN = 64
NEAR_FILL = 96
HEAP_FREE = 64     # seg_free[64:] are the heap segments' free lists

#: one book set's arrays (above), as a driver takes them: one argument, read by name
Books = namedtuple("Books", ("lv", "lv_free", "lvx", "sides", "pool", "seg_free", "heaps", "hp", "fh", "pages",
                             "page_dir", "page_live", "page_key", "page_free", "ov_key", "ov_val", "ov_state",
                             "qn", "pnode", "ovnode", "st"))


# ---------------------------------------------------------------- the order index

if INTERPRETED:      # Python kernels: int64 arithmetic spelt out (numpy would warn as it wraps)
    def direct_ref(ref, st):
        r = (int(ref) - int(st[ST_REF_BASE])) % (1 << 64)
        return np.int64(r) if r < DIRECT_REFS else np.int64(-1)
else:
    @njit(cache=True, _nrt=False, inline="always")
    def direct_ref(ref, st):
        """ref's place in the direct index's window (0 <= r < 2**32), or -1 when outside it:
        ``ref - base`` wraps as the feed's unsigned 64-bit ids do, so each id has one place."""
        r = ref - st[ST_REF_BASE]
        if (r >> 32) == 0:          # 0 <= r < DIRECT_REFS
            return r
        return np.int64(-1)


@njit(cache=True, _nrt=False, inline="always")
def _page_of(r, page_dir):
    """The page holding window place r (0 <= r < 2**32), or -1."""
    c = page_dir[0, _u(r >> (PAGE_BITS + CHUNK_BITS))]
    if c == 0:
        return np.int64(-1)
    return np.int64(page_dir[_u(c), _u((r >> PAGE_BITS) & ((1 << CHUNK_BITS) - 1))]) - 1


@njit(cache=True, _nrt=False)
def find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st):
    """Address of the live order (book, ref): >= 0 in pages, <= -2 in overflow, -1 if none."""
    r = direct_ref(ref, st)
    if r >= 0:
        p = _page_of(r, page_dir)
        if p >= 0:
            a = (p << PAGE_BITS) + (r & (PAGE - 1))
            e = pages[_u(a)]
            if e != 0 and (lv[_u((e & LEVEL_MASK) - 1), LV_OWNER] >> 1) == book:
                return a
    if st[ST_OV_USED] > 0:
        s = ht_find(ov_key, ov_state, book, ref)
        if s >= 0:
            return -2 - s
    return -1


def park_direct_index(st):
    """Keep (almost) every order in the overflow hash table: for books that hold a sparse few
    of a feed's order ids, where the direct index would spend a 1 KiB page on nearly each
    order. The window is parked at the bottom of the int64 ids (a 64-bit feed's ids from
    2**63) and never moves; an order there still works, through the pages."""
    st[ST_REF_BASE] = np.int64(-(1 << 63))
    st[ST_CHUNKS] = max(st[ST_CHUNKS], 2)       # past "no page yet": order_room keeps the window


@njit(cache=True, _nrt=False, inline="always")
def window_base(ref):
    """The direct index's base for a first order ref: 0 for refs below 2**32, else 2**31
    below ref (for a negative ref, never below the smallest int64)."""
    if 0 <= ref < DIRECT_REFS:
        return np.int64(0)
    if ref < np.int64(-(1 << 63)) + (1 << 31):
        return np.int64(-(1 << 63))
    return ref - (1 << 31)


@njit(cache=True, _nrt=False)
def order_room(ref, pages, page_dir, ov_key, qn, queue, st):
    """0 if an order with this ref can be inserted now, else the ROOM_* to grow."""
    if ht_full(ov_key, st, ST_OV_FILL):
        return ROOM_OVERFLOW
    if st[ST_CHUNKS] == 1:          # no page yet: the window moves to this ref
        st[ST_REF_BASE] = window_base(ref)
    r = direct_ref(ref, st)
    if r >= 0 and _page_of(r, page_dir) < 0:
        if st[ST_PAGE_FREE] == 0 and (st[ST_PAGE_TOP] + 1) * PAGE > pages.shape[0]:
            return ROOM_PAGES
        if page_dir[0, _u(r >> (PAGE_BITS + CHUNK_BITS))] == 0 and st[ST_CHUNKS] >= page_dir.shape[0]:
            return ROOM_CHUNKS
    if queue and st[ST_Q_FREE] < 0 and st[ST_Q_TOP] >= qn.shape[0]:
        return ROOM_NODES
    return 0


@njit(cache=True, _nrt=False)
def insert_order(book, ref, lvl, shares, pages, page_dir, page_live, page_key, page_free,
                 ov_key, ov_val, ov_state, st):
    """Store a new order at level lvl with shares (room checked by order_room; (book, ref)
    not live); returns its address."""
    st[ST_LIVE] += 1
    r = direct_ref(ref, st)
    if r >= 0 and shares < PAGED_SHARES and lvl < LEVEL_MASK - 1:
        pn = r >> PAGE_BITS
        p = _page_of(r, page_dir)
        if p < 0:
            c = page_dir[0, _u(pn >> CHUNK_BITS)]
            if c == 0:
                c = st[ST_CHUNKS]
                st[ST_CHUNKS] += 1
                page_dir[0, _u(pn >> CHUNK_BITS)] = c
            if st[ST_PAGE_FREE] > 0:
                st[ST_PAGE_FREE] -= 1
                p = page_free[_u(st[ST_PAGE_FREE])]
            else:
                p = st[ST_PAGE_TOP]
                st[ST_PAGE_TOP] += 1
            page_dir[_u(c), _u(pn & ((1 << CHUNK_BITS) - 1))] = p + 1
            page_key[_u(p)] = pn
        a = (np.int64(p) << PAGE_BITS) + (r & (PAGE - 1))
        if pages[_u(a)] == 0:
            pages[_u(a)] = (shares << LEVEL_BITS) | (lvl + 1)
            page_live[_u(p)] += 1
            return a
    s = ht_put(ov_key, ov_state, st, ST_OV_USED, ST_OV_FILL, book, ref)
    ov_val[_u(s), 0] = lvl + 1
    ov_val[_u(s), 1] = shares
    return -2 - s


@njit(cache=True, _nrt=False)
def remove_order(a, pages, page_dir, page_live, page_key, page_free, ov_state, st):
    st[ST_LIVE] -= 1
    if a >= 0:
        pages[_u(a)] = 0
        p = a >> PAGE_BITS
        page_live[_u(p)] -= 1
        if page_live[_u(p)] == 0:
            pn = page_key[_u(p)]
            page_dir[_u(page_dir[0, _u(pn >> CHUNK_BITS)]), _u(pn & ((1 << CHUNK_BITS) - 1))] = 0
            page_free[_u(st[ST_PAGE_FREE])] = p
            st[ST_PAGE_FREE] += 1
    else:
        ht_drop(ov_state, st, ST_OV_USED, -2 - a)


@njit(cache=True, _nrt=False, inline="always")
def entry_at(a, pages, ov_val):
    """(level, shares) of the live order at address a."""
    if a >= 0:
        e = pages[_u(a)]
        return (e & LEVEL_MASK) - 1, e >> LEVEL_BITS
    return ov_val[_u(-2 - a), 0] - 1, ov_val[_u(-2 - a), 1]


# ---------------------------------------------------------------- time priority

@njit(cache=True, _nrt=False, inline="always")
def node_of(a, pnode, ovnode):
    return pnode[_u(a)] if a >= 0 else ovnode[_u(-2 - a)]


@njit(cache=True, _nrt=False)
def queue_push(lvl, a, shares, ref, qn, lvx, pnode, ovnode, st):
    """A new node for the order at address a, at the back of its level's queue."""
    node = st[ST_Q_FREE]
    if node >= 0:
        st[ST_Q_FREE] = qn[_u(node), Q_NEXT]
    else:
        node = st[ST_Q_TOP]
        st[ST_Q_TOP] += 1
    tail = lvx[_u(lvl), LX_TAIL]
    qn[_u(node), Q_NEXT] = -1
    qn[_u(node), Q_PREV] = tail
    qn[_u(node), Q_SHARES] = shares
    qn[_u(node), Q_REF] = ref
    if tail >= 0:
        qn[_u(tail), Q_NEXT] = node
    else:
        lvx[_u(lvl), LX_HEAD] = node
    lvx[_u(lvl), LX_TAIL] = node
    if a >= 0:
        pnode[_u(a)] = node
    else:
        ovnode[_u(-2 - a)] = node
    return node


@njit(cache=True, _nrt=False)
def _q_unlink(lvl, node, qn, lvx, st):
    """Take a node out of its level's queue (those behind move forward) and free it."""
    p = qn[_u(node), Q_PREV]
    nx = qn[_u(node), Q_NEXT]
    if p >= 0:
        qn[_u(p), Q_NEXT] = nx
    else:
        lvx[_u(lvl), LX_HEAD] = nx
    if nx >= 0:
        qn[_u(nx), Q_PREV] = p
    else:
        lvx[_u(lvl), LX_TAIL] = p
    qn[_u(node), Q_NEXT] = st[ST_Q_FREE]
    st[ST_Q_FREE] = node


@njit(cache=True, _nrt=False)
def queue_ahead(lvl, node, qn, lvx, lv):
    """(shares, orders) in front of node in its level's queue: walks from both ends at
    once, so an order at either end (the usual: a new one at the back, an execution at
    the front) costs O(1), one in the middle O(its distance to the nearer end)."""
    f = lvx[_u(lvl), LX_HEAD]
    b = lvx[_u(lvl), LX_TAIL]
    sf = cf = sb = cb = 0
    while f >= 0 and b >= 0:
        if f == node:
            return sf, cf
        if b == node:
            return lv[_u(lvl), LV_QTY] - sb - qn[_u(node), Q_SHARES], lv[_u(lvl), LV_COUNT] - 1 - cb
        sf += qn[_u(f), Q_SHARES]
        cf += 1
        f = qn[_u(f), Q_NEXT]
        sb += qn[_u(b), Q_SHARES]
        cb += 1
        b = qn[_u(b), Q_PREV]
    return -1, -1


# ---------------------------------------------------------------- price levels

@njit(cache=True, _nrt=False, inline="always")
def level_room(book, sides, pool, heaps, hp, fh, lv, st):
    """0 if a new level can be made in this book (both sides), else the ROOM_* to grow."""
    if book * 2 + 1 >= sides.shape[0]:
        return ROOM_BOOKS
    if st[ST_LV_FREE] == 0 and st[ST_LV_TOP] >= lv.shape[0]:
        return ROOM_LEVELS
    need = 4
    hneed = -1
    for sd in range(book * 2, book * 2 + 2):
        c = sides[_u(sd), 2]
        if c * 2 > need:
            need = c * 2
        if sides[_u(sd), 1] >= NEAR_MAX or sides[_u(sd), 3] > 0:   # a level may go far
            hc = heaps[_u(sd), 1]
            hneed = max(hneed, 0)
            if sides[_u(sd), 3] >= hc:
                hneed = max(hneed, 16, hc * 2)
    if st[ST_POOL_TOP] + need > pool.shape[0]:
        return ROOM_POOL
    if hneed >= 0:
        if st[ST_HP_TOP] + hneed > hp.shape[0]:
            return ROOM_HEAP
        if ht_full(fh, st, ST_FH_FILL):
            return ROOM_FAR_HASH
    return 0


@njit(cache=True, _nrt=False)
def _seg_alloc(cap, arr, seg_free, base, st, top):
    k = 0
    while (1 << k) < cap:
        k += 1
    s = seg_free[base + k]
    if s >= 0:
        seg_free[base + k] = arr[_u(s), 0]
        return s
    s = st[top]
    st[top] += cap
    return s


@njit(cache=True, _nrt=False)
def _seg_release(start, cap, arr, seg_free, base):
    k = 0
    while (1 << k) < cap:
        k += 1
    arr[_u(start), 0] = seg_free[base + k]
    seg_free[base + k] = start


@njit(cache=True, _nrt=False)
def _fh_slot(fh, sd, price, for_insert):
    """Row of (side, price) in the far-level hash table (columns: state, the key, the level)."""
    return ht_slot(fh[:, 1:3], fh[:, 0], sd, price, for_insert)


@njit(cache=True, _nrt=False)
def fh_rehash(old, new):
    """Move the live entries of a far-level hash table into a larger, empty one; returns the count."""
    n = 0
    keys = new[:, 1:3]
    state = new[:, 0]
    for s in range(old.shape[0]):
        if old[s, 0] == 1:
            t = ht_reinsert(keys, state, old[s, 1], old[s, 2])
            new[t, 3] = old[s, 3]
            n += 1
    return n


@njit(cache=True, _nrt=False, inline="always")
def _heap_set(hp, hs, k, key, lvl, lvx):
    hp[_u(hs + k), 0] = key
    hp[_u(hs + k), 1] = lvl
    lvx[_u(lvl), LX_HPOS] = k


@njit(cache=True, _nrt=False)
def _heap_up(hp, hs, k, key, lvl, lvx):
    while k > 0:
        p = (k - 1) >> 2
        if hp[_u(hs + p), 0] >= key:
            break
        _heap_set(hp, hs, k, hp[_u(hs + p), 0], hp[_u(hs + p), 1], lvx)
        k = p
    _heap_set(hp, hs, k, key, lvl, lvx)


@njit(cache=True, _nrt=False)
def _heap_down(hp, hs, size, k, key, lvl, lvx):
    while True:
        c = 4 * k + 1
        if c >= size:
            break
        best = c
        bkey = hp[_u(hs + c), 0]
        for j in range(c + 1, min(c + 4, size)):
            if hp[_u(hs + j), 0] > bkey:
                best = j
                bkey = hp[_u(hs + j), 0]
        if bkey <= key:
            break
        _heap_set(hp, hs, k, bkey, hp[_u(hs + best), 1], lvx)
        k = best
    _heap_set(hp, hs, k, key, lvl, lvx)


@njit(cache=True, _nrt=False)
def _far_add(sd, key, lvl, lv, lvx, sides, heaps, hp, seg_free, fh, st):
    """Put level lvl (key) among its side's far levels (room checked by level_room)."""
    size = sides[_u(sd), 3]
    hs = heaps[_u(sd), 0]
    cap = heaps[_u(sd), 1]
    if size == cap:
        ncap = max(16, cap * 2)
        ns = _seg_alloc(ncap, hp, seg_free, HEAP_FREE, st, ST_HP_TOP)
        for j in range(size):
            hp[_u(ns + j), 0] = hp[_u(hs + j), 0]
            hp[_u(ns + j), 1] = hp[_u(hs + j), 1]
        if cap > 0:
            _seg_release(hs, cap, hp, seg_free, HEAP_FREE)
        hs = ns
        heaps[_u(sd), 0] = ns
        heaps[_u(sd), 1] = ncap
    sides[_u(sd), 3] = size + 1
    _heap_up(hp, hs, size, key, lvl, lvx)
    price = lv[_u(lvl), LV_PRICE]
    s = ht_put(fh[:, 1:3], fh[:, 0], st, ST_FH_USED, ST_FH_FILL, sd, price)
    fh[_u(s), 3] = lvl


@njit(cache=True, _nrt=False)
def far_remove(sd, lvl, lv, lvx, sides, heaps, hp, fh, st):
    """Take far level lvl out of its side's heap and hash table."""
    size = sides[_u(sd), 3]
    hs = heaps[_u(sd), 0]
    k = lvx[_u(lvl), LX_HPOS]
    lvx[_u(lvl), LX_HPOS] = -1
    last = size - 1
    sides[_u(sd), 3] = last
    if k != last:
        key = hp[_u(hs + last), 0]
        moved = hp[_u(hs + last), 1]
        if k > 0 and hp[_u(hs + ((k - 1) >> 2)), 0] < key:
            _heap_up(hp, hs, k, key, moved, lvx)
        else:
            _heap_down(hp, hs, last, k, key, moved, lvx)
    ht_drop(fh[:, 0], st, ST_FH_USED, _fh_slot(fh, sd, lv[_u(lvl), LV_PRICE], False))


@njit(cache=True, _nrt=False)
def _new_level(sd, price, lv, lv_free, lvx, st):
    if st[ST_LV_FREE] > 0:
        st[ST_LV_FREE] -= 1
        lvl = lv_free[_u(st[ST_LV_FREE])]
    else:
        lvl = st[ST_LV_TOP]
        st[ST_LV_TOP] += 1
    lv[_u(lvl), LV_PRICE] = price
    lv[_u(lvl), LV_QTY] = 0
    lv[_u(lvl), LV_COUNT] = 0
    lv[_u(lvl), LV_OWNER] = sd
    lvx[_u(lvl), LX_HPOS] = -1
    lvx[_u(lvl), LX_HEAD] = -1
    lvx[_u(lvl), LX_TAIL] = -1
    lvx[_u(lvl), LX_DRIVER] = 0
    return lvl


@njit(cache=True, _nrt=False, inline="always")
def free_level(lvl, lv, lv_free, st):
    lv[_u(lvl), LV_OWNER] = -1
    lv_free[_u(st[ST_LV_FREE])] = lvl
    st[ST_LV_FREE] += 1


@njit(cache=True, _nrt=False, inline="always")
def _near_find(pool, start, n, key):
    """Index of the last near entry with sort key <= key (-1: none): a short linear scan
    from the best end (where most activity is), then a binary search."""
    i = n - 1
    stop = n - 16
    while i >= 0 and i >= stop and pool[_u(start + i), 0] > key:
        i -= 1
    if i >= 0 and i < stop:          # far from the touch: binary search in [0, stop)
        lo = 0
        hi = stop
        while lo < hi:
            mid = (lo + hi) >> 1
            if pool[_u(start + mid), 0] > key:
                hi = mid
            else:
                lo = mid + 1
        i = lo - 1
    return i


@njit(cache=True, _nrt=False, inline="always")
def level_at(book, side, price, make, lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh, st):
    """The level of (book, side, price); with make, create it (room checked by level_room)."""
    sd = book * 2 + side
    start = sides[_u(sd), 0]
    n = sides[_u(sd), 1]
    key = price if side == 0 else -price
    if sides[_u(sd), 3] > 0 and key < pool[_u(start), 0]:      # among the far levels
        s = _fh_slot(fh, sd, price, False)
        if s >= 0:
            return fh[_u(s), 3]
        if not make:
            return -1
        lvl = _new_level(sd, price, lv, lv_free, lvx, st)
        _far_add(sd, key, lvl, lv, lvx, sides, heaps, hp, seg_free, fh, st)
        return lvl
    i = _near_find(pool, start, n, key)
    if i >= 0 and pool[_u(start + i), 0] == key:
        return pool[_u(start + i), 1]
    if not make:
        return -1
    lvl = _new_level(sd, price, lv, lv_free, lvx, st)
    if n == NEAR_MAX:                # full: the new level or the worst near one goes far
        if i < 0:
            _far_add(sd, key, lvl, lv, lvx, sides, heaps, hp, seg_free, fh, st)
            return lvl
        _far_add(sd, pool[_u(start), 0], pool[_u(start), 1], lv, lvx, sides, heaps, hp, seg_free, fh, st)
        for j in range(i):
            pool[_u(start + j), 0] = pool[_u(start + j + 1), 0]
            pool[_u(start + j), 1] = pool[_u(start + j + 1), 1]
        pool[_u(start + i), 0] = key
        pool[_u(start + i), 1] = lvl
        return lvl
    if n == sides[_u(sd), 2]:        # grow the segment
        cap = sides[_u(sd), 2]
        ncap = 4 if cap == 0 else cap * 2
        ns = _seg_alloc(ncap, pool, seg_free, 0, st, ST_POOL_TOP)
        for j in range(n):
            pool[_u(ns + j), 0] = pool[_u(start + j), 0]
            pool[_u(ns + j), 1] = pool[_u(start + j), 1]
        if cap > 0:
            _seg_release(start, cap, pool, seg_free, 0)
        start = ns
        sides[_u(sd), 0] = ns
        sides[_u(sd), 2] = ncap
    j = n
    while j > i + 1:
        pool[_u(start + j), 0] = pool[_u(start + j - 1), 0]
        pool[_u(start + j), 1] = pool[_u(start + j - 1), 1]
        j -= 1
    pool[_u(start + i + 1), 0] = key
    pool[_u(start + i + 1), 1] = lvl
    sides[_u(sd), 1] = n + 1
    return lvl


@njit(cache=True, _nrt=False)
def _refill(sd, sides, pool, heaps, hp, fh, lv, lvx, st):
    """Move the best far levels of a side into its near segment, up to NEAR_FILL."""
    start = sides[_u(sd), 0]
    n = sides[_u(sd), 1]
    m = min(sides[_u(sd), 3], NEAR_FILL - n)
    for j in range(n - 1, -1, -1):
        pool[_u(start + j + m), 0] = pool[_u(start + j), 0]
        pool[_u(start + j + m), 1] = pool[_u(start + j), 1]
    hs = heaps[_u(sd), 0]
    for j in range(m - 1, -1, -1):
        key = hp[_u(hs), 0]
        lvl = hp[_u(hs), 1]
        far_remove(sd, lvl, lv, lvx, sides, heaps, hp, fh, st)
        pool[_u(start + j), 0] = key
        pool[_u(start + j), 1] = lvl
    sides[_u(sd), 1] = n + m


@njit(cache=True, _nrt=False, inline="always")
def drop_level(lvl, lv, lv_free, lvx, sides, pool, heaps, hp, fh, st):
    """Remove an empty level from its side and free it."""
    sd = lv[_u(lvl), LV_OWNER]
    start = sides[_u(sd), 0]
    n = sides[_u(sd), 1]
    price = lv[_u(lvl), LV_PRICE]
    key = price if (sd & 1) == 0 else -price
    if sides[_u(sd), 3] > 0 and key < pool[_u(start), 0]:
        far_remove(sd, lvl, lv, lvx, sides, heaps, hp, fh, st)
    else:
        i = _near_find(pool, start, n, key)
        for j in range(i, n - 1):
            pool[_u(start + j), 0] = pool[_u(start + j + 1), 0]
            pool[_u(start + j), 1] = pool[_u(start + j + 1), 1]
        sides[_u(sd), 1] = n - 1
        if n - 1 < NEAR_MIN and sides[_u(sd), 3] > 0:
            _refill(sd, sides, pool, heaps, hp, fh, lv, lvx, st)
    free_level(lvl, lv, lv_free, st)


@njit(cache=True, _nrt=False, inline="always")
def take_shares(a, lvl, have, by, remove, lv, lv_free, lvx, sides, pool, heaps, hp, fh, pages, page_dir,
          page_live, page_key, page_free, ov_val, ov_state, queue, qn, pnode, ovnode, st):
    """Take ``by`` shares from the order at address a (level lvl, ``have`` shares); remove
    it at 0 or when ``remove``."""
    left = have - by
    lv[_u(lvl), LV_QTY] -= by
    if left == 0 or remove:
        lv[_u(lvl), LV_QTY] -= left
        if queue:
            _q_unlink(lvl, node_of(a, pnode, ovnode), qn, lvx, st)
        remove_order(a, pages, page_dir, page_live, page_key, page_free, ov_state, st)
        lv[_u(lvl), LV_COUNT] -= 1
        if lv[_u(lvl), LV_COUNT] == 0:
            drop_level(lvl, lv, lv_free, lvx, sides, pool, heaps, hp, fh, st)
        return
    if a >= 0:
        pages[_u(a)] = (left << LEVEL_BITS) | (lvl + 1)
    else:
        ov_val[_u(-2 - a), 1] = left
    if queue:
        qn[_u(node_of(a, pnode, ovnode)), Q_SHARES] = left


@njit(cache=True, _nrt=False, inline="always")
def side_best(sd, sides, pool, lv):
    n = sides[_u(sd), 1]
    if n == 0:
        return -1, -1, 0
    lvl = pool[_u(sides[_u(sd), 0] + n - 1), 1]
    return lv[_u(lvl), LV_PRICE], lv[_u(lvl), LV_QTY], lv[_u(lvl), LV_COUNT]


@njit(cache=True, _nrt=False, inline="always")
def level_by_rank(sd, j, after, sides, pool, heaps, hp):
    """(level, sort key) of side sd's j-th best level (j = 0: the best), or (-1, 0) past
    its last; ``after``: the sort key the walk returned for rank j - 1 (unused for the
    near segment's ranks). The near segment is read in place; past it the far heap is
    searched for the best key below ``after`` (a scan of the side's far levels: walks
    that deep, an order sweeping more than NEAR_MIN levels, are rare)."""
    n = sides[_u(sd), 1]
    if j < n:
        e = sides[_u(sd), 0] + n - 1 - j
        return pool[_u(e), 1], pool[_u(e), 0]
    hs = heaps[_u(sd), 0]
    best = np.int64(-1)
    key = np.int64(0)
    for k in range(sides[_u(sd), 3]):
        kk = hp[_u(hs + k), 0]
        if kk < after and (best < 0 or kk > key):
            best = hp[_u(hs + k), 1]
            key = kk
    return best, key


@njit(cache=True, _nrt=False, inline="always")
def page_addr(ref, page_dir, st):
    r = direct_ref(ref, st)
    if r >= 0:
        p = _page_of(r, page_dir)
        if p >= 0:
            return (p << PAGE_BITS) + (r & (PAGE - 1))
    return -1


@njit(cache=True, _nrt=False, inline="always")
def top_levels(book, sides, pool, lv, out):
    """The top out.shape[1] levels of both sides of a book into out[side, k] = (px, qty, n)."""
    for sd in range(2):
        start = sides[_u(book * 2 + sd), 0]
        ln = sides[_u(book * 2 + sd), 1]
        for k in range(out.shape[1]):
            if k < ln:
                lvl = pool[_u(start + ln - 1 - k), 1]
                out[sd, k, 0] = lv[_u(lvl), LV_PRICE]
                out[sd, k, 1] = lv[_u(lvl), LV_QTY]
                out[sd, k, 2] = lv[_u(lvl), LV_COUNT]
            else:
                out[sd, k, 0] = -1
                out[sd, k, 1] = -1
                out[sd, k, 2] = 0


@njit(cache=True, _nrt=False)
def book_orders(book, sides, pool, heaps, hp, lv):
    """The number of live orders of a book."""
    count = 0
    for sd in range(book * 2, book * 2 + 2):
        start = sides[_u(sd), 0]
        for j in range(sides[_u(sd), 1]):
            count += lv[_u(pool[_u(start + j), 1]), LV_COUNT]
        hs = heaps[_u(sd), 0]
        for k in range(sides[_u(sd), 3]):
            count += lv[_u(hp[_u(hs + k), 1]), LV_COUNT]
    return count


@njit(cache=True, _nrt=False)
def crossed(book, sides, pool, lv):
    bpx, _bq, bn = side_best(book * 2, sides, pool, lv)
    apx, _aq, an = side_best(book * 2 + 1, sides, pool, lv)
    return bn > 0 and an > 0 and bpx >= apx

@njit(cache=True, _nrt=False, inline="always")
def add_order(book, side, price, ref, shares, queue, lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh,
              pages, page_dir, page_live, page_key, page_free, ov_key, ov_val, ov_state, qn, pnode, ovnode, st):
    """Rest a new order at the back of its level (room checked by level_room and
    order_room; (book, ref) not live). Returns its level and, with ``queue``, its queue
    node (else -1); (-1, -1) when the level's total would pass LEVEL_MAX_SHARES (nothing
    changes: a level it found has shares, one it made would hold these alone)."""
    lvl = level_at(book, side, price, True, lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh, st)
    if shares > LEVEL_MAX_SHARES - lv[_u(lvl), LV_QTY]:
        return np.int64(-1), np.int64(-1)
    lv[_u(lvl), LV_QTY] += shares
    lv[_u(lvl), LV_COUNT] += 1
    a = insert_order(book, ref, lvl, shares, pages, page_dir, page_live, page_key, page_free,
                     ov_key, ov_val, ov_state, st)
    node = -1
    if queue:
        node = queue_push(lvl, a, shares, ref, qn, lvx, pnode, ovnode, st)
    return lvl, node


@njit(cache=True, _nrt=False)
def ov_rehash(old_key, old_val, old_state, old_node, new_key, new_val, new_state, new_node):
    """Move the live entries of an overflow table (and their queue nodes, when the node
    arrays are as long as the tables) into a larger, empty one; returns the count."""
    n = 0
    nodes = old_node.shape[0] == old_state.shape[0] and new_node.shape[0] == new_state.shape[0]
    for s in range(old_state.shape[0]):
        if old_state[s] == 1:
            t = ht_reinsert(new_key, new_state, old_key[s, 0], old_key[s, 1])
            new_val[t, 0] = old_val[s, 0]
            new_val[t, 1] = old_val[s, 1]
            if nodes:
                new_node[t] = old_node[s]
            n += 1
    return n


@njit(cache=True, _nrt=False)
def crossed_books(sides, pool, lv):
    """Books whose best bid is at or above their best ask."""
    n = 0
    for b in range(sides.shape[0] // 2):
        nb = sides[2 * b, 1]
        na = sides[2 * b + 1, 1]
        if nb > 0 and na > 0:
            bid = lv[pool[sides[2 * b, 0] + nb - 1, 1], LV_PRICE]
            ask = lv[pool[sides[2 * b + 1, 0] + na - 1, 1], LV_PRICE]
            if bid >= ask:
                n += 1
    return n
