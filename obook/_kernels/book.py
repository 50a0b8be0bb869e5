"""The limit order book kernels: orders, price levels, time priority, and apply_events.

Every kernel apply_events links lives in this one module: numba's ``cache=True`` keys a
kernel's cache on its own file, so a helper in another module could change without the
cached apply_events noticing.

State is a handful of flat arrays (see obook.engine.books.BookState):

- ``lv[L, 4]``: price levels: price, total shares, order count, owner (book*2 + side;
  -1 once freed). ``lvx[L, 4]``: heap position (far levels, else -1), queue head and
  tail (time priority, below), unused.
- ``sides[B*2, 4]``: per book and side: start, len and cap of its *near* segment of
  ``pool``, and the number of its *far* levels.
- ``pool[P, 2]``: near segments of (sort key, level), sorted by key, best at the end (key
  = price for bids, -price for asks). A near segment holds at most NEAR_MAX levels, the
  best ones; power-of-two sizes, freed ones on per-size free lists (``seg_free[:64]``).
- Far levels (a side's levels beyond its best NEAR_MAX, all worse than every near one):
  a 4-ary max-heap by key per side, ``hp[H, 2]`` rows (key, level) in segments
  ``heaps[B*2, 2]`` (start, cap; free lists ``seg_free[64:]``), and the hash table ``fh[F,
  4]`` (state, side, price, level) that finds a far level by price. When a side's near
  segment falls below NEAR_MIN levels it is refilled from its heap. So every level
  operation is O(1) near the touch and O(log levels) far from it, and the top of book,
  the depth walk (at most 50 levels) and the crossed-book check read the near segment.
- ``pages[G * PAGE]``: the paged direct order index for refs < 2**32: ``page_dir``
  is two-level (row 0 maps ``ref >> 20`` to a row, whose slots map ``ref >> 7`` to
  page + 1; 0: none), ``page_live`` counts live orders of a page
  (freed at 0). An entry is ``shares << 24 | level + 1`` (0 = empty).
- ``ov_key[O, 2]`` / ``ov_val[O, 2]`` / ``ov_state[O]``: an open-addressing table for
  orders the direct index can't hold (refs >= 2**32, a ref live in two books, 2**39 shares
  or more, a level id from 2**24 - 2 up); its values are (level + 1, shares) rows.
- Time priority (only when the orders table's queue places are asked for, ``want & WANT_QUEUE``):
  each level's orders in arrival order, a doubly-linked list of nodes ``qn[N, 4]``
  (next, prev, shares, ref) from ``lvx`` head to tail; ``pnode`` (parallel to
  ``pages``) and ``ovnode`` (to ``ov_val``) give an order's node. Without them these
  arrays have one row and are never touched (the orders rows' places are then -1).
- ``dstate[B, 5 (+ depth)]``: per book, an open run of DEFER events: open, the BBO
  (bid px, qty, ask px, qty) and the depth levels before its first event.
- ``st``: scalar counters (indices ST_*).

Event semantics:

- Queue place: an add, a replace's new order and a modify that moves go to the back of
  their level; executions, cancels and CSV reduce-to keep the order's place; removing an
  order moves those behind it forward.
- ACT_MODIFY: REF gets PRICE and SHARES, same ref, same side. It keeps its place if the
  price is unchanged and shares did not increase, else it goes to the back of the level
  at its (new) price (always, with the TO_BACK bit). SHARES 0 removes the order. An
  unknown REF is added with the event's side (Databento's book-building rule; a 0-share
  one is a zero-share add).
  Orders row: action = the event's type letter (``M`` when none), price and shares the
  new ones, remaining the shares left (0 when removed).
- ACT_CLEAR: removes every order of the book (a book never seen: nothing). With the
  orders table it writes one orders row per removed order, bids then asks, best level
  first, each level front to back: action = the event's type letter (``R`` when none),
  the order's side, price and ref, shares = what it had, remaining 0, no queue place.
  Without the orders table it finds the book's orders by scanning the order index
  (O(live orders of the worker): a clear is rare).
- DEFER (a bit of EV_ACTION): the event is applied and writes its trades and orders rows
  but no BBO or depth row; the next event of the same book without the bit (any action,
  a print too) writes them, compared with the book before the first deferred event.

The price cage (Shenzhen ChiNext; only events carrying the CAGE_* bits pay for it):

- ``cage[B, CG_WIDTH]``: per book its held orders, last trade price (0: none) and a
  crossed-entry flag; ``held[H, HW_WIDTH]``: the held orders (book, ref, side, price,
  shares, live) in arrival order; ``st[ST_HELD]`` counts the live ones.
- An ACT_ADD with CAGE_ADD whose price is outside the cage (a buy above 102% of the buy
  reference: the best ask, else the best bid, else the book's last trade; a sell below
  98% of the sell reference: the best bid, else the best ask, else the last trade; no
  reference: no cage) is held: not in the book, an orders row with action ``H`` and no
  queue place. A cancel naming a held order reduces it there (no book change).
- After an event with CAGE_LIVE, the book's held orders that the cage now admits enter
  it one by one (first held first, the reference taken again after each), at the back of
  their level, each with an orders row ``A`` at that event; the event's BBO and depth
  rows come after the entries (a DEFER run, ``st[ST_ENTER]`` set while it lasts, so an
  entry that needs room resumes there). An entry that crosses the book (its fills follow
  in the feed) keeps the book's rows deferred until an event leaves it uncrossed: no
  crossed book is published between an entry and its fills. Its fills come as fills of
  two resting orders (the first printable): while the book is crossed, a printed fill
  whose order is that entry takes the other order's side (the resting one's, as every
  trade row's side is).
- An execution with CAGED sets the book's last trade price (EV_AUX for type C, else the
  order's price).

Every kernel returns a status; nothing raises; NEED_ROOM asks the caller to grow
an array and call again from the returned position (no event is half applied; an
event needing many output rows, a clear, asks for them before it starts).
"""

import numpy as np
from .jit import INTERPRETED, njit

from .prefetch import prefetch
from .layout import (ACT_ADD, ACT_ADD_ZERO_OK, ACT_CANCEL, ACT_CLEAR, ACT_DELETE, ACT_EXEC,
                     ACT_EXEC_CLAMP, ACT_MODIFY, ACT_PRINT, ACT_REDUCE_TO, ACT_REPLACE, CAGE_ADD,
                     CAGE_LIVE, CAGED, DEFER,
                     ERR_DUPLICATE_REF, ERR_OVER_CANCEL, ERR_OVER_EXECUTION, ERR_UNKNOWN_REF,
                     ERR_ZERO_ADD, NEED_ROOM, NO_SIDE, NOT_PRINTABLE, OK, OWN_BEST, TO_BACK, TYPE_SHIFT, WANT_DEPTH,
                     WANT_ORDERS, WANT_QUEUE, WANT_TRADES)

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
ST_OPEN = 14       # books with an open run of DEFER events
ST_HELD = 15       # live held orders (price cage)
ST_HELD_TOP = 16   # held rows in use
ST_ENTER = 17      # entering held orders after event i: 1, 2 when its rows stay deferred (0: not)
ST_WIDTH = 18
# what NEED_ROOM asks for (the returned detail)
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
ROOM_HELD = 11

LV_PRICE = 0
LV_QTY = 1
LV_COUNT = 2
LV_OWNER = 3
LX_HPOS = 0
LX_HEAD = 1
LX_TAIL = 2
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
DS_OPEN, DS_BID_PX, DS_BID_QTY, DS_ASK_PX, DS_ASK_QTY = range(5)
DS_WIDTH = 5
CG_HELD, CG_LAST, CG_CROSS, CG_ENTERED = range(4)   # CG_ENTERED: the last entry that crossed
CG_WIDTH = 4
HW_BOOK, HW_REF, HW_SIDE, HW_PRICE, HW_SHARES, HW_LIVE = range(6)
HW_WIDTH = 6


if INTERPRETED:     # Python kernels: an index as it is (np.uint64 costs ~0.3 us a call there)
    def _u(i):
        return i
else:
    @njit(cache=True, _nrt=False, inline="always")
    def _u(i):
        return np.uint64(i)


@njit(cache=True, _nrt=False, inline="always")
def _hash(a, b, mask):
    h = (np.uint64(a) * np.uint64(0x9E3779B97F4A7C15)) ^ (np.uint64(b) * np.uint64(0xC2B2AE3D27D4EB4F))
    return np.int64((h >> np.uint64(20)) & np.uint64(mask))


# ---------------------------------------------------------------- the order index

@njit(cache=True, _nrt=False)
def _ov_slot(ov_key, ov_state, book, ref, for_insert):
    """Slot of (book, ref) in the overflow table; with for_insert, the first reusable slot."""
    mask = ov_key.shape[0] - 1
    i = _hash(ref, book, mask)
    first_free = -1
    while True:
        s = ov_state[_u(i)]
        if s == 0:
            if for_insert:
                return first_free if first_free >= 0 else i
            return -1
        if s == 2:
            if first_free < 0:
                first_free = i
        elif ov_key[_u(i), 0] == book and ov_key[_u(i), 1] == ref:
            return i
        i = (i + 1) & mask


@njit(cache=True, _nrt=False, inline="always")
def _page_of(ref, page_dir):
    """The page holding ref (0 <= ref < 2**32), or -1."""
    c = page_dir[0, _u(ref >> (PAGE_BITS + CHUNK_BITS))]
    if c == 0:
        return np.int64(-1)
    return np.int64(page_dir[_u(c), _u((ref >> PAGE_BITS) & ((1 << CHUNK_BITS) - 1))]) - 1


@njit(cache=True, _nrt=False)
def find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st):
    """Address of the live order (book, ref): >= 0 in pages, <= -2 in overflow, -1 if none."""
    if 0 <= ref < DIRECT_REFS:
        p = _page_of(ref, page_dir)
        if p >= 0:
            a = (p << PAGE_BITS) + (ref & (PAGE - 1))
            e = pages[_u(a)]
            if e != 0 and (lv[_u((e & LEVEL_MASK) - 1), LV_OWNER] >> 1) == book:
                return a
    if st[ST_OV_USED] > 0:
        s = _ov_slot(ov_key, ov_state, book, ref, False)
        if s >= 0:
            return -2 - s
    return -1


@njit(cache=True, _nrt=False)
def order_room(ref, pages, page_dir, ov_key, qn, queue, st):
    """0 if an order with this ref can be inserted now, else the ROOM_* to grow."""
    if st[ST_OV_FILL] * 2 + 2 > ov_key.shape[0]:
        return ROOM_OVERFLOW
    if 0 <= ref < DIRECT_REFS and _page_of(ref, page_dir) < 0:
        if st[ST_PAGE_FREE] == 0 and (st[ST_PAGE_TOP] + 1) * PAGE > pages.shape[0]:
            return ROOM_PAGES
        if page_dir[0, _u(ref >> (PAGE_BITS + CHUNK_BITS))] == 0 and st[ST_CHUNKS] >= page_dir.shape[0]:
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
    if 0 <= ref < DIRECT_REFS and shares < PAGED_SHARES and lvl < LEVEL_MASK - 1:
        pn = ref >> PAGE_BITS
        p = _page_of(ref, page_dir)
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
        a = (np.int64(p) << PAGE_BITS) + (ref & (PAGE - 1))
        if pages[_u(a)] == 0:
            pages[_u(a)] = (shares << LEVEL_BITS) | (lvl + 1)
            page_live[_u(p)] += 1
            return a
    s = _ov_slot(ov_key, ov_state, book, ref, True)
    if ov_state[_u(s)] == 0:
        st[ST_OV_FILL] += 1
    ov_state[_u(s)] = 1
    ov_key[_u(s), 0] = book
    ov_key[_u(s), 1] = ref
    ov_val[_u(s), 0] = lvl + 1
    ov_val[_u(s), 1] = shares
    st[ST_OV_USED] += 1
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
        ov_state[_u(-2 - a)] = 2
        st[ST_OV_USED] -= 1


@njit(cache=True, _nrt=False, inline="always")
def _entry_at(a, pages, ov_val):
    """(level, shares) of the live order at address a."""
    if a >= 0:
        e = pages[_u(a)]
        return (e & LEVEL_MASK) - 1, e >> LEVEL_BITS
    return ov_val[_u(-2 - a), 0] - 1, ov_val[_u(-2 - a), 1]


# ---------------------------------------------------------------- time priority

@njit(cache=True, _nrt=False, inline="always")
def _node_of(a, pnode, ovnode):
    return pnode[_u(a)] if a >= 0 else ovnode[_u(-2 - a)]


@njit(cache=True, _nrt=False)
def _q_push(lvl, a, shares, ref, qn, lvx, pnode, ovnode, st):
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
        if st[ST_FH_FILL] * 2 + 2 > fh.shape[0]:
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
    """Slot of (side, price) in the far-level hash table (-1: absent), or where to insert."""
    mask = fh.shape[0] - 1
    i = _hash(price, sd, mask)
    first_free = -1
    while True:
        s = fh[_u(i), 0]
        if s == 0:
            if for_insert:
                return first_free if first_free >= 0 else i
            return -1
        if s == 2:
            if first_free < 0:
                first_free = i
        elif fh[_u(i), 1] == sd and fh[_u(i), 2] == price:
            return i
        i = (i + 1) & mask


@njit(cache=True, _nrt=False)
def fh_rehash(old, new):
    """Move the live entries of a far-level hash table into a larger, empty one; returns the count."""
    n = 0
    for s in range(old.shape[0]):
        if old[s, 0] == 1:
            t = _fh_slot(new, old[s, 1], old[s, 2], True)
            for c in range(4):
                new[t, c] = old[s, c]
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
    s = _fh_slot(fh, sd, price, True)
    if fh[_u(s), 0] == 0:
        st[ST_FH_FILL] += 1
    fh[_u(s), 0] = 1
    fh[_u(s), 1] = sd
    fh[_u(s), 2] = price
    fh[_u(s), 3] = lvl
    st[ST_FH_USED] += 1


@njit(cache=True, _nrt=False)
def _far_remove(sd, lvl, lv, lvx, sides, heaps, hp, fh, st):
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
    s = _fh_slot(fh, sd, lv[_u(lvl), LV_PRICE], False)
    fh[_u(s), 0] = 2
    st[ST_FH_USED] -= 1


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
    return lvl


@njit(cache=True, _nrt=False, inline="always")
def _free_level(lvl, lv, lv_free, st):
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
        _far_remove(sd, lvl, lv, lvx, sides, heaps, hp, fh, st)
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
        _far_remove(sd, lvl, lv, lvx, sides, heaps, hp, fh, st)
    else:
        i = _near_find(pool, start, n, key)
        for j in range(i, n - 1):
            pool[_u(start + j), 0] = pool[_u(start + j + 1), 0]
            pool[_u(start + j), 1] = pool[_u(start + j + 1), 1]
        sides[_u(sd), 1] = n - 1
        if n - 1 < NEAR_MIN and sides[_u(sd), 3] > 0:
            _refill(sd, sides, pool, heaps, hp, fh, lv, lvx, st)
    _free_level(lvl, lv, lv_free, st)


@njit(cache=True, _nrt=False, inline="always")
def _take(a, lvl, have, by, remove, lv, lv_free, lvx, sides, pool, heaps, hp, fh, pages, page_dir,
          page_live, page_key, page_free, ov_val, ov_state, queue, qn, pnode, ovnode, st):
    """Take ``by`` shares from the order at address a (level lvl, ``have`` shares); remove
    it at 0 or when ``remove``."""
    left = have - by
    lv[_u(lvl), LV_QTY] -= by
    if left == 0 or remove:
        lv[_u(lvl), LV_QTY] -= left
        if queue:
            _q_unlink(lvl, _node_of(a, pnode, ovnode), qn, lvx, st)
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
        qn[_u(_node_of(a, pnode, ovnode)), Q_SHARES] = left


@njit(cache=True, _nrt=False, inline="always")
def _top(sd, sides, pool, lv):
    n = sides[_u(sd), 1]
    if n == 0:
        return -1, -1, 0
    lvl = pool[_u(sides[_u(sd), 0] + n - 1), 1]
    return lv[_u(lvl), LV_PRICE], lv[_u(lvl), LV_QTY], lv[_u(lvl), LV_COUNT]


#: how far ahead the kernel prefetches, in three steps: the book's sides and the order's
#: index entry at +AHEAD; the best pool rows and the order's level at +AHEAD/2; the
#: best levels at +AHEAD/4 (each step reads only what the previous one fetched)
AHEAD = 16


@njit(cache=True, _nrt=False, inline="always")
def _page_addr(ref, page_dir):
    if 0 <= ref < DIRECT_REFS:
        p = _page_of(ref, page_dir)
        if p >= 0:
            return (p << PAGE_BITS) + (ref & (PAGE - 1))
    return -1


if INTERPRETED:     # Python kernels: nothing to prefetch
    def _prefetch_ahead(ev, i, n, sides, pool, lv, pages, page_dir):
        pass
else:
    @njit(cache=True, _nrt=False, inline="always")
    def _prefetch_ahead(ev, i, n, sides, pool, lv, pages, page_dir):
        nsd = sides.shape[0]
        j = i + AHEAD
        if j < n:
            book = ev[_u(j), 2]
            if 0 <= book and book * 2 + 1 < nsd:
                prefetch(sides, book * 8)
                prefetch(sides, book * 8 + 7)
            a = _page_addr(ev[_u(j), 4], page_dir)
            if a >= 0:
                prefetch(pages, a)
        j = i + AHEAD // 2
        if j < n:
            book = ev[_u(j), 2]
            if 0 <= book and book * 2 + 1 < nsd:
                for sd in range(book * 2, book * 2 + 2):
                    prefetch(pool, (sides[_u(sd), 0] + sides[_u(sd), 1] - 1) * 2)
            a = _page_addr(ev[_u(j), 4], page_dir)
            if a >= 0:
                e = pages[_u(a)]
                if e != 0:
                    prefetch(lv, ((e & LEVEL_MASK) - 1) * 4)
        j = i + AHEAD // 4
        if j < n:
            book = ev[_u(j), 2]
            if 0 <= book and book * 2 + 1 < nsd:
                for sd in range(book * 2, book * 2 + 2):
                    ln = sides[_u(sd), 1]
                    if ln > 0:
                        prefetch(lv, pool[_u(sides[_u(sd), 0] + ln - 1), 1] * 4)


@njit(cache=True, _nrt=False, inline="always")
def _levels(book, sides, pool, lv, out):
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


# ---------------------------------------------------------------- clearing a book

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
def _clear_level(ev, i, book, lvl, letter, lv, lv_free, lvx, pages, page_dir, page_live, page_key,
                 page_free, ov_key, ov_state, queue, qn, st, orders, nx):
    """Free a level of a book being cleared; with the queues, remove its orders and write
    their orders rows, front to back (without, the caller removed them)."""
    if queue:
        node = lvx[_u(lvl), LX_HEAD]
        while node >= 0:
            nxt = qn[_u(node), Q_NEXT]
            ref = qn[_u(node), Q_REF]
            a = find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st)
            remove_order(a, pages, page_dir, page_live, page_key, page_free, ov_state, st)
            _order_row(ev, i, book, letter, lv[_u(lvl), LV_OWNER] & 1, lv[_u(lvl), LV_PRICE],
                       qn[_u(node), Q_SHARES], 0, ref, 0, 0, -1, -1, orders, nx)
            qn[_u(node), Q_NEXT] = st[ST_Q_FREE]
            st[ST_Q_FREE] = node
            node = nxt
    _free_level(lvl, lv, lv_free, st)


@njit(cache=True, _nrt=False, inline="always")
def _cleared_row(ev, i, book, letter, lvl, shares, ref, lv, orders, nx):
    _order_row(ev, i, book, letter, lv[_u(lvl), LV_OWNER] & 1, lv[_u(lvl), LV_PRICE],
               shares, 0, ref, 0, 0, -1, -1, orders, nx)


@njit(cache=True, _nrt=False)
def _clear_book(ev, i, book, letter, lv, lv_free, lvx, sides, pool, heaps, hp, fh, pages, page_dir,
                page_live, page_key, page_free, ov_key, ov_val, ov_state, queue, write, qn, st, orders, nx):
    """ACT_CLEAR: remove every order and level of a book (see the module docstring); with
    ``write``, an orders row for each (without the queues: in the index's order)."""
    if not queue:                # no queues to walk: find the book's orders in the index
        for p in range(st[ST_PAGE_TOP]):
            if page_live[_u(p)] > 0:
                for k in range(PAGE):
                    a = (p << PAGE_BITS) + k
                    e = pages[_u(a)]
                    if e != 0 and (lv[_u((e & LEVEL_MASK) - 1), LV_OWNER] >> 1) == book:
                        if write:
                            _cleared_row(ev, i, book, letter, (e & LEVEL_MASK) - 1, e >> LEVEL_BITS,
                                         (page_key[_u(p)] << PAGE_BITS) + k, lv, orders, nx)
                        remove_order(a, pages, page_dir, page_live, page_key, page_free, ov_state, st)
        for s in range(ov_state.shape[0]):
            if ov_state[s] == 1 and ov_key[s, 0] == book:
                if write:
                    _cleared_row(ev, i, book, letter, ov_val[s, 0] - 1, ov_val[s, 1], ov_key[s, 1], lv, orders,
                                 nx)
                remove_order(-2 - s, pages, page_dir, page_live, page_key, page_free, ov_state, st)
    for sd in range(book * 2, book * 2 + 2):
        start = sides[_u(sd), 0]
        for j in range(sides[_u(sd), 1] - 1, -1, -1):
            _clear_level(ev, i, book, pool[_u(start + j), 1], letter, lv, lv_free, lvx, pages,
                         page_dir, page_live, page_key, page_free, ov_key, ov_state, queue, qn, st,
                         orders, nx)
        sides[_u(sd), 1] = 0
        while sides[_u(sd), 3] > 0:          # far levels, best first
            lvl = hp[_u(heaps[_u(sd), 0]), 1]
            _far_remove(sd, lvl, lv, lvx, sides, heaps, hp, fh, st)
            _clear_level(ev, i, book, lvl, letter, lv, lv_free, lvx, pages, page_dir, page_live,
                         page_key, page_free, ov_key, ov_state, queue, qn, st, orders, nx)


# ---------------------------------------------------------------- output rows

@njit(cache=True, _nrt=False, inline="always")
def _letter(act, typ):
    """The orders table's action letter: the feed's type letter, or the action's."""
    if typ == 70:
        return 65                      # ITCH F is an add
    if typ != 0:
        return typ
    if act == ACT_ADD or act == ACT_ADD_ZERO_OK:
        return 65
    if act == ACT_REDUCE_TO:
        return 67
    if act == ACT_EXEC_CLAMP:
        return 69
    if act == ACT_MODIFY:
        return 77
    if act == ACT_CLEAR:
        return 82
    return 68


@njit(cache=True, _nrt=False)
def _order_row(ev, i, book, letter, side, price, shares, left, ref, new_ref, match, q_shares,
               q_orders, orders, nx):
    o = _u(nx[1])
    orders[o, 0] = ev[_u(i), 0]
    orders[o, 1] = ev[_u(i), 1]
    orders[o, 2] = book
    orders[o, 3] = letter
    orders[o, 4] = side
    orders[o, 5] = price
    orders[o, 6] = shares
    orders[o, 7] = left
    orders[o, 8] = ref
    orders[o, 9] = new_ref
    orders[o, 10] = match
    orders[o, 11] = q_shares
    orders[o, 12] = q_orders
    nx[1] += 1


@njit(cache=True, _nrt=False)
def _trade_row(ev, i, book, kind, price, shares, side, ref, trades, nx):
    t = _u(nx[0])
    trades[t, 0] = ev[_u(i), 0]
    trades[t, 1] = ev[_u(i), 1]
    trades[t, 2] = book
    trades[t, 3] = kind
    trades[t, 4] = price
    trades[t, 5] = shares
    trades[t, 6] = side
    trades[t, 7] = ref
    trades[t, 8] = ev[_u(i), 8]    # ITCH: the match number; CSV: the order id's bytes
    nx[0] += 1


@njit(cache=True, _nrt=False, inline="always")
def _bbo_row(ev, i, book, bpx, bq, apx, aq, rows, nrow, sides, pool, lv):
    """A BBO row when the book's (bid px, qty, ask px, qty) changed; returns the row count."""
    nbpx, nbq, nbn = _top(book * 2, sides, pool, lv)
    napx, naq, nan_ = _top(book * 2 + 1, sides, pool, lv)
    if nbpx != bpx or nbq != bq or napx != apx or naq != aq:
        r = _u(nrow)
        rows[r, 0] = ev[_u(i), 0]
        rows[r, 1] = ev[_u(i), 1]
        rows[r, 2] = book
        rows[r, 3] = nbpx
        rows[r, 4] = nbq
        rows[r, 5] = nbn
        rows[r, 6] = napx
        rows[r, 7] = naq
        rows[r, 8] = nan_
        nrow += 1
    return nrow


@njit(cache=True, _nrt=False)
def _before(book, sides, pool, lv, dstate, want, snap, st):
    """The book's (bid px, qty, ask px, qty) before an event (before the first event of
    an open DEFER run), and with depth its levels into snap[0]."""
    if st[ST_OPEN] > 0 and dstate[_u(book), DS_OPEN] != 0:
        if want & WANT_DEPTH:
            w = DS_WIDTH
            for sd in range(2):
                for k in range(snap.shape[2]):
                    for c in range(3):
                        snap[0, sd, k, c] = dstate[_u(book), w]
                        w += 1
        return (dstate[_u(book), DS_BID_PX], dstate[_u(book), DS_BID_QTY],
                dstate[_u(book), DS_ASK_PX], dstate[_u(book), DS_ASK_QTY])
    if want & WANT_DEPTH:
        _levels(book, sides, pool, lv, snap[0])
    bpx, bq, bn = _top(book * 2, sides, pool, lv)
    apx, aq, an = _top(book * 2 + 1, sides, pool, lv)
    return bpx, bq, apx, aq


@njit(cache=True, _nrt=False)
def _book_rows(ev, i, book, defer, bpx, bq, apx, aq, rows, nrow, sides, pool, lv, dstate, want,
               depth, nx, snap, st):
    """After an event: its BBO and depth rows where the book changed, or (DEFER) none,
    keeping the book before the run's first event. Returns the BBO row count."""
    if defer:
        if dstate[_u(book), DS_OPEN] == 0:
            dstate[_u(book), DS_OPEN] = 1
            st[ST_OPEN] += 1
            dstate[_u(book), DS_BID_PX] = bpx
            dstate[_u(book), DS_BID_QTY] = bq
            dstate[_u(book), DS_ASK_PX] = apx
            dstate[_u(book), DS_ASK_QTY] = aq
            if want & WANT_DEPTH:
                w = DS_WIDTH
                for sd in range(2):
                    for k in range(snap.shape[2]):
                        for c in range(3):
                            dstate[_u(book), w] = snap[0, sd, k, c]
                            w += 1
        return nrow
    if st[ST_OPEN] > 0 and dstate[_u(book), DS_OPEN] != 0:
        dstate[_u(book), DS_OPEN] = 0
        st[ST_OPEN] -= 1
    nrow = _bbo_row(ev, i, book, bpx, bq, apx, aq, rows, nrow, sides, pool, lv)
    if want & WANT_DEPTH:
        _depth_row(ev, i, book, sides, pool, lv, depth, nx, snap)
    return nrow


@njit(cache=True, _nrt=False)
def _depth_row(ev, i, book, sides, pool, lv, depth, nx, snap):
    """A depth row when the book's top levels differ from snap[0] (the book before)."""
    _levels(book, sides, pool, lv, snap[1])
    same = True
    for sd in range(2):
        for k in range(snap.shape[2]):
            for c in range(3):
                if snap[0, sd, k, c] != snap[1, sd, k, c]:
                    same = False
    if not same:
        d = _u(nx[2])
        depth[d, 0] = ev[_u(i), 0]
        depth[d, 1] = ev[_u(i), 1]
        depth[d, 2] = book
        w = 3
        for sd in range(2):
            for k in range(snap.shape[2]):
                for c in range(3):
                    depth[d, w] = snap[1, sd, k, c]
                    w += 1
        nx[2] += 1


# ---------------------------------------------------------------- the price cage

@njit(cache=True, _nrt=False)
def cage_ref(book, side, sides, pool, lv, cage):
    """The cage's reference price for an order of ``side`` (0 buy): the other side's best,
    else its own side's best, else the book's last trade; 0: none."""
    px, _q, n = _top(book * 2 + 1 - side, sides, pool, lv)
    if n > 0:
        return px
    px, _q, n = _top(book * 2 + side, sides, pool, lv)
    if n > 0:
        return px
    return cage[_u(book), CG_LAST]


@njit(cache=True, _nrt=False, inline="always")
def outside_cage(side, price, ref):
    """A buy above 102% of ``ref``, a sell below 98% (exact integers); never without ref."""
    if ref <= 0:
        return False
    return price * 100 > ref * 102 if side == 0 else price * 100 < ref * 98


@njit(cache=True, _nrt=False)
def crossed(book, sides, pool, lv):
    bpx, _bq, bn = _top(book * 2, sides, pool, lv)
    apx, _aq, an = _top(book * 2 + 1, sides, pool, lv)
    return bn > 0 and an > 0 and bpx >= apx


@njit(cache=True, _nrt=False)
def held_find(book, ref, held, st):
    """The held row of (book, ref), -1 if none."""
    for h in range(st[ST_HELD_TOP]):
        if held[h, HW_LIVE] != 0 and held[h, HW_REF] == ref and held[h, HW_BOOK] == book:
            return h
    return -1


@njit(cache=True, _nrt=False)
def held_drop(h, cage, held, st):
    held[h, HW_LIVE] = 0
    cage[_u(held[h, HW_BOOK]), CG_HELD] -= 1
    st[ST_HELD] -= 1
    if st[ST_HELD] == 0:
        st[ST_HELD_TOP] = 0


@njit(cache=True, _nrt=False)
def _hold(book, ref, side, price, shares, cage, held, st):
    h = st[ST_HELD_TOP]
    held[h, HW_BOOK] = book
    held[h, HW_REF] = ref
    held[h, HW_SIDE] = side
    held[h, HW_PRICE] = price
    held[h, HW_SHARES] = shares
    held[h, HW_LIVE] = 1
    st[ST_HELD_TOP] += 1
    st[ST_HELD] += 1
    cage[_u(book), CG_HELD] += 1


@njit(cache=True, _nrt=False)
def _enter_step(ev, i, rows, nrow, lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh, pages,
                page_dir, page_live, page_key, page_free, ov_key, ov_val, ov_state, qn, pnode, ovnode,
                dstate, cage, held, st, want, orders, depth, nx, snap):
    """One step of the entries after event i (st[ST_ENTER] set): the first held order of its
    book the cage admits enters; with none left the event's rows are written (or stay
    deferred). Returns (room or 0, nrow, done)."""
    book = ev[_u(i), 2]
    for h in range(st[ST_HELD_TOP]):
        if held[h, HW_LIVE] == 0 or held[h, HW_BOOK] != book:
            continue
        side = held[h, HW_SIDE]
        price = held[h, HW_PRICE]
        if outside_cage(side, price, cage_ref(book, side, sides, pool, lv, cage)):
            continue
        ref = held[h, HW_REF]
        room = level_room(book, sides, pool, heaps, hp, fh, lv, st)
        if room == 0:
            room = order_room(ref, pages, page_dir, ov_key, qn, (want & WANT_QUEUE) != 0, st)
        if room != 0:
            return room, nrow, False
        shares = held[h, HW_SHARES]
        held_drop(h, cage, held, st)
        lvl = level_at(book, side, price, True, lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh, st)
        lv[_u(lvl), LV_QTY] += shares
        lv[_u(lvl), LV_COUNT] += 1
        a = insert_order(book, ref, lvl, shares, pages, page_dir, page_live, page_key,
                         page_free, ov_key, ov_val, ov_state, st)
        if want & WANT_ORDERS:
            qs = qo = -1
            if want & WANT_QUEUE:
                node = _q_push(lvl, a, shares, ref, qn, lvx, pnode, ovnode, st)
                qs, qo = queue_ahead(lvl, node, qn, lvx, lv)
            _order_row(ev, i, book, 65, side, price, shares, shares, ref, 0, 0, qs, qo, orders, nx)
        opx, _oq, on = _top(book * 2 + 1 - side, sides, pool, lv)
        if on > 0 and (price >= opx if side == 0 else price <= opx):
            cage[_u(book), CG_CROSS] = 1       # its fills follow in the feed
            cage[_u(book), CG_ENTERED] = ref
        return 0, nrow, False
    keep = st[ST_ENTER] == 2
    st[ST_ENTER] = 0
    if cage[_u(book), CG_CROSS] != 0:
        if crossed(book, sides, pool, lv):
            keep = True
        else:
            cage[_u(book), CG_CROSS] = 0
    bpx, bq, apx, aq = _before(book, sides, pool, lv, dstate, want, snap, st)
    nrow = _book_rows(ev, i, book, keep, bpx, bq, apx, aq, rows, nrow, sides, pool, lv, dstate, want,
                      depth, nx, snap, st)
    return 0, nrow, True


# ---------------------------------------------------------------- applying events

@njit(cache=True, _nrt=False)
def apply_events(ev, n, i, rows, nrow, skips, strict, lv, lv_free, lvx, sides, pool, seg_free,
                 heaps, hp, fh, pages, page_dir, page_live, page_key, page_free, ov_key, ov_val,
                 ov_state, qn, pnode, ovnode, dstate, cage, held, st, want, trades, orders, depth, nx, snap):
    """Apply events ev[i:n] to the books, writing a BBO row for each event that changes one.

    Returns (status, i, nrow, detail): OK when done; NEED_ROOM with detail = ROOM_* and i
    the event to resume at; an ERR_* (strict) with i the failing event. In tolerant mode
    failing events are counted in skips[ERR_*] and handled by the tolerant rules.
    With ``want`` (WANT_* bits) it also writes trade, order and depth rows; nx holds their
    counts; snap is (2, 2, levels, 3) scratch for the depth comparison. WANT_QUEUE keeps
    the time-priority queues (qn, pnode, ovnode sized for them) and the order rows' places.
    """
    queue = (want & WANT_QUEUE) != 0
    while i < n:
        if nrow >= rows.shape[0] or (want != 0 and (nx[0] >= trades.shape[0] or nx[1] >= orders.shape[0]
                                                    or nx[2] >= depth.shape[0])):
            return NEED_ROOM, i, nrow, ROOM_ROWS
        if st[ST_ENTER] != 0:            # held orders entering after event i (price cage)
            room, nrow, done = _enter_step(ev, i, rows, nrow, lv, lv_free, lvx, sides, pool, seg_free, heaps,
                                           hp, fh, pages, page_dir, page_live, page_key, page_free, ov_key,
                                           ov_val, ov_state, qn, pnode, ovnode, dstate, cage, held, st, want,
                                           orders, depth, nx, snap)
            if room != 0:
                return NEED_ROOM, i, nrow, room
            if done:
                i += 1
            continue
        _prefetch_ahead(ev, i, n, sides, pool, lv, pages, page_dir)
        word = ev[_u(i), 3]
        book = ev[_u(i), 2]
        act = word & 0xFF
        side = (word >> 8) & 1
        typ = (word >> TYPE_SHIFT) & 0xFF
        defer = (word & DEFER) != 0
        ref = ev[_u(i), 4]
        shares = ev[_u(i), 5]
        if act == ACT_PRINT:
            if want & WANT_TRADES:
                _trade_row(ev, i, book, typ, ev[_u(i), 6], shares, 2 if word & NO_SIDE else side, ref,
                           trades, nx)
            if (st[ST_OPEN] > 0 and not defer and 0 <= book < dstate.shape[0]
                    and dstate[_u(book), DS_OPEN] != 0):   # the end of a DEFER run
                bpx, bq, apx, aq = _before(book, sides, pool, lv, dstate, want, snap, st)
                nrow = _book_rows(ev, i, book, False, bpx, bq, apx, aq, rows, nrow, sides, pool, lv,
                                  dstate, want, depth, nx, snap, st)
            i += 1
            continue
        if act == ACT_ADD or act == ACT_ADD_ZERO_OK or act == ACT_REPLACE or act == ACT_MODIFY:
            room = level_room(book, sides, pool, heaps, hp, fh, lv, st)
            if room == 0:
                room = order_room(ev[_u(i), 7] if act == ACT_REPLACE else ref, pages, page_dir, ov_key,
                                  qn, queue, st)
            if room == 0 and word & CAGE_ADD and st[ST_HELD_TOP] >= held.shape[0]:
                room = ROOM_HELD
            if room != 0:
                return NEED_ROOM, i, nrow, room
        elif book < 0 or book * 2 + 1 >= sides.shape[0]:
            if act != ACT_CLEAR:         # clearing a book never seen changes nothing
                if strict:
                    return ERR_UNKNOWN_REF, i, nrow, 0
                skips[ERR_UNKNOWN_REF] += 1
            i += 1
            continue
        elif act == ACT_CLEAR and want & WANT_ORDERS and nx[1] + book_orders(book, sides, pool, heaps, hp, lv) > orders.shape[0]:
            return NEED_ROOM, i, nrow, ROOM_ROWS
        slow_rows = defer or st[ST_OPEN] > 0          # a DEFER run: rows through helpers
        if slow_rows:
            bpx, bq, apx, aq = _before(book, sides, pool, lv, dstate, want, snap, st)
        else:
            bpx, bq, bn = _top(book * 2, sides, pool, lv)
            apx, aq, an = _top(book * 2 + 1, sides, pool, lv)
            if want & WANT_DEPTH:
                _levels(book, sides, pool, lv, snap[0])
        err = 0
        add = False
        price = ev[_u(i), 6]
        if act == ACT_ADD and word & OWN_BEST:   # Shenzhen own-best: at its own side's best
            opx, _oq, on = _top(book * 2 + side, sides, pool, lv)
            if on > 0:
                price = opx
        hold = False                     # price cage: held outside the book
        if act == ACT_ADD and word & CAGE_ADD:
            hold = outside_cage(side, price, cage_ref(book, side, sides, pool, lv, cage))
        rest_px = price
        left = shares
        q_lvl = -1                       # the row's order's level and node while it rests
        q_node = -1
        if act == ACT_CLEAR:
            _clear_book(ev, i, book, _letter(act, typ), lv, lv_free, lvx, sides, pool, heaps, hp, fh,
                        pages, page_dir, page_live, page_key, page_free, ov_key, ov_val, ov_state, queue,
                        (want & WANT_ORDERS) != 0, qn, st, orders, nx)
        elif hold:
            _hold(book, ref, side, price, shares, cage, held, st)
        elif act == ACT_ADD or act == ACT_ADD_ZERO_OK:
            add = True
        else:
            a = find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st)
            h = -1
            if a == -1 and cage[_u(book), CG_HELD] > 0 and (act == ACT_CANCEL or act == ACT_DELETE):
                h = held_find(book, ref, held, st)
            if h >= 0:                   # a held order (price cage): reduced where it is
                have = held[h, HW_SHARES]
                rest_px = held[h, HW_PRICE]
                side = held[h, HW_SIDE]
                if act == ACT_DELETE:
                    shares = have
                elif shares > have:
                    err = ERR_OVER_CANCEL
                left = have - shares if shares < have else 0
                held[h, HW_SHARES] = left
                if left == 0:
                    held_drop(h, cage, held, st)
            elif a == -1:
                if act == ACT_MODIFY:   # Databento: a modify of an unknown order adds it
                    add = True
                else:
                    err = ERR_UNKNOWN_REF
            else:
                lvl0, have = _entry_at(a, pages, ov_val)
                rest_px = lv[_u(lvl0), LV_PRICE]
                side = lv[_u(lvl0), LV_OWNER] & 1
                by = shares
                remove = False
                if act == ACT_EXEC or act == ACT_CANCEL:
                    if shares > have:
                        err = ERR_OVER_EXECUTION if act == ACT_EXEC else ERR_OVER_CANCEL
                        remove = True
                elif act == ACT_REDUCE_TO:
                    by = have - shares if shares < have else 0
                elif act == ACT_EXEC_CLAMP:
                    by = shares if shares < have else have
                    remove = by == have
                elif act == ACT_MODIFY:
                    if shares != 0 and price == rest_px and shares <= have and not (word & TO_BACK):
                        by = have - shares   # keeps its place
                    else:
                        remove = True        # 0 shares: gone; else to the back at price
                        add = shares != 0
                else:  # delete, replace
                    remove = True
                left = 0 if remove else have - by
                if act == ACT_DELETE:
                    shares = have
                if act == ACT_REPLACE:  # checked while the original is still live
                    ref = ev[_u(i), 7]
                    add = shares != 0
                    if shares == 0:
                        err = ERR_ZERO_ADD
                    elif find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st) != -1:
                        err = ERR_DUPLICATE_REF
                if queue and not remove and (left != 0 or by == 0):
                    q_lvl = lvl0
                    q_node = _node_of(a, pnode, ovnode)
                if (err == 0 or not strict) and (remove or by != 0):
                    _take(a, lvl0, have, 0 if remove else by, remove, lv, lv_free, lvx, sides, pool, heaps,
                          hp, fh, pages, page_dir, page_live, page_key, page_free, ov_val, ov_state, queue,
                          qn, pnode, ovnode, st)
                if act == ACT_EXEC_CLAMP or act == ACT_REDUCE_TO:
                    shares = by              # what the record executed / cancelled
        if add and (err == 0 or not strict):
            if shares == 0 and (act == ACT_ADD or act == ACT_MODIFY):
                err = ERR_ZERO_ADD
            else:
                a = find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st)
                if a != -1:
                    err = ERR_DUPLICATE_REF
                    if not strict:
                        dl, dh = _entry_at(a, pages, ov_val)
                        _take(a, dl, dh, 0, True, lv, lv_free, lvx, sides, pool, heaps, hp, fh, pages,
                              page_dir, page_live, page_key, page_free, ov_val, ov_state, queue, qn, pnode,
                              ovnode, st)
                if err == 0 or not strict:
                    lvl = level_at(book, side, price, True, lv, lv_free, lvx, sides, pool, seg_free, heaps,
                                   hp, fh, st)
                    lv[_u(lvl), LV_QTY] += shares
                    lv[_u(lvl), LV_COUNT] += 1
                    a = insert_order(book, ref, lvl, shares, pages, page_dir, page_live,
                                     page_key, page_free, ov_key, ov_val, ov_state, st)
                    if queue:
                        q_lvl = lvl
                        q_node = _q_push(lvl, a, shares, ref, qn, lvx, pnode, ovnode, st)
                    left = shares
        if err != 0:
            if strict:
                return err, i, nrow, 0
            skips[err] += 1
        enter = False
        tside = side                     # a trade row's side: the resting order's
        if word & (CAGED | CAGE_LIVE):   # price cage: last trade, crossed entry, entries
            if act == ACT_EXEC and err == 0:
                cage[_u(book), CG_LAST] = ev[_u(i), 9] if typ == 67 else rest_px
            if cage[_u(book), CG_CROSS] != 0:
                if ev[_u(i), 4] == cage[_u(book), CG_ENTERED]:
                    tside = 1 - side     # the entry's own fill: the other order rests
                if crossed(book, sides, pool, lv):
                    defer = True
                else:
                    cage[_u(book), CG_CROSS] = 0
                    cage[_u(book), CG_ENTERED] = 0
            if word & CAGE_LIVE and cage[_u(book), CG_HELD] > 0:
                enter = True
                st[ST_ENTER] = 2 if defer else 1
        if slow_rows or defer or enter:
            nrow = _book_rows(ev, i, book, defer or enter, bpx, bq, apx, aq, rows, nrow, sides, pool, lv,
                              dstate, want, depth, nx, snap, st)
        else:
            nrow = _bbo_row(ev, i, book, bpx, bq, apx, aq, rows, nrow, sides, pool, lv)
            if want & WANT_DEPTH:
                _depth_row(ev, i, book, sides, pool, lv, depth, nx, snap)
        if err == 0 and act != ACT_CLEAR:
            if want & WANT_TRADES and (act == ACT_EXEC or act == ACT_EXEC_CLAMP):
                if not (typ == 67 and word & NOT_PRINTABLE):
                    _trade_row(ev, i, book, 67 if typ == 67 else 69, ev[_u(i), 9] if typ == 67 else rest_px,
                               shares, tside, ev[_u(i), 4], trades, nx)
            if want & WANT_ORDERS:
                qs = qo = -1
                if q_node >= 0:
                    qs, qo = queue_ahead(q_lvl, q_node, qn, lvx, lv)
                moved = act == ACT_ADD or act == ACT_ADD_ZERO_OK or act == ACT_REPLACE or act == ACT_MODIFY
                _order_row(ev, i, book, 72 if hold else _letter(act, typ), side, price if moved else rest_px,
                           shares, left,
                           ev[_u(i), 4], ev[_u(i), 7],
                           ev[_u(i), 8] if (typ == 69 or typ == 67 or typ == 0) else 0, qs, qo, orders, nx)
        if not enter:
            i += 1
    return OK, i, nrow, 0


@njit(cache=True, _nrt=False)
def ov_rehash(old_key, old_val, old_state, old_node, new_key, new_val, new_state, new_node):
    """Move the live entries of an overflow table (and their queue nodes, when the node
    arrays are as long as the tables) into a larger, empty one; returns the count."""
    n = 0
    nodes = old_node.shape[0] == old_state.shape[0] and new_node.shape[0] == new_state.shape[0]
    for s in range(old_state.shape[0]):
        if old_state[s] == 1:
            t = _ov_slot(new_key, new_state, old_key[s, 0], old_key[s, 1], True)
            new_state[t] = 1
            new_key[t, 0] = old_key[s, 0]
            new_key[t, 1] = old_key[s, 1]
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
