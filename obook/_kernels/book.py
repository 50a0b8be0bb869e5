"""The limit order book kernels: orders, price levels, sides, and apply_events.

State is a handful of flat arrays (see obook.engine.books.BookState):

- ``lv[L, 4]``: price levels: price, total shares, order count, owner (book*2 + side).
- ``sides[B*2, 3]``: per book and side, a segment of ``pool``: start, len, cap.
- ``pool[P, 2]``: side segments of (sort key, level); sorted by key, best at the end
  (key = price for bids, -price for asks). Segments have power-of-two sizes and
  freed ones are kept on per-size free lists (``seg_free``).
- ``pages[G * PAGE]``: the paged direct order index for refs < 2**32: ``page_dir``
  is two-level (row 0 maps ``ref >> 20`` to a row, whose slots map ``ref >> 7`` to
  page + 1; 0: none), ``page_live`` counts live orders of a page
  (freed at 0). An entry is ``shares << 32 | level + 1`` (0 = empty).
- ``ov_key[O, 2]`` / ``ov_val[O]`` / ``ov_state[O]``: an open-addressing table for
  orders the direct index can't hold (refs >= 2**32, or a ref live in two books).
- ``st``: scalar counters (indices ST_*).

Every kernel returns a status; nothing raises; NEED_ROOM asks the caller to grow
an array and call again from the returned position (no event is half applied).
"""

import numpy as np
from numba import njit

from .prefetch import prefetch
from .layout import (ACT_ADD, ACT_ADD_ZERO_OK, ACT_CANCEL, ACT_DELETE, ACT_EXEC,
                     ACT_EXEC_CLAMP, ACT_PRINT, ACT_REDUCE_TO, ACT_REPLACE, ERR_DUPLICATE_REF,
                     ERR_OVER_CANCEL, ERR_OVER_EXECUTION, ERR_UNKNOWN_REF, ERR_ZERO_ADD,
                     NEED_ROOM, NOT_PRINTABLE, OK, TYPE_SHIFT, WANT_DEPTH, WANT_ORDERS,
                     WANT_TRADES)

PAGE_BITS = 7      # 128 refs (1 KiB) a page: a lone old order pins little memory
CHUNK_BITS = 13    # page_dir rows: row 0 maps ref >> 20 to a row of 8192 page slots
PAGE = 1 << PAGE_BITS
DIRECT_REFS = 1 << 32
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
ST_WIDTH = 9
# what NEED_ROOM asks for (the returned detail)
ROOM_LEVELS = 1
ROOM_POOL = 2
ROOM_PAGES = 3
ROOM_OVERFLOW = 4
ROOM_BOOKS = 5
ROOM_ROWS = 6
ROOM_CHUNKS = 7

LV_PRICE = 0
LV_QTY = 1
LV_COUNT = 2
LV_OWNER = 3


@njit(cache=True, _nrt=False, inline="always")
def _u(i):
    return np.uint64(i)


@njit(cache=True, _nrt=False)
def _ov_slot(ov_key, ov_state, book, ref, for_insert):
    """Slot of (book, ref) in the overflow table; with for_insert, the first reusable slot."""
    mask = ov_key.shape[0] - 1
    h = (np.uint64(ref) * np.uint64(0x9E3779B97F4A7C15)) ^ (np.uint64(book) * np.uint64(0xC2B2AE3D27D4EB4F))
    i = np.int64((h >> np.uint64(20)) & np.uint64(mask))
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
            if e != 0 and (lv[_u((e & 0xFFFFFFFF) - 1), LV_OWNER] >> 1) == book:
                return a
    if st[ST_OV_USED] > 0:
        s = _ov_slot(ov_key, ov_state, book, ref, False)
        if s >= 0:
            return -2 - s
    return -1


@njit(cache=True, _nrt=False)
def order_room(ref, pages, page_dir, ov_key, st):
    """0 if an order with this ref can be inserted now, else the ROOM_* to grow."""
    if st[ST_OV_FILL] * 2 + 2 > ov_key.shape[0]:
        return ROOM_OVERFLOW
    if 0 <= ref < DIRECT_REFS and _page_of(ref, page_dir) < 0:
        if st[ST_PAGE_FREE] == 0 and (st[ST_PAGE_TOP] + 1) * PAGE > pages.shape[0]:
            return ROOM_PAGES
        if page_dir[0, _u(ref >> (PAGE_BITS + CHUNK_BITS))] == 0 and st[ST_CHUNKS] >= page_dir.shape[0]:
            return ROOM_CHUNKS
    return 0


@njit(cache=True, _nrt=False)
def insert_order(book, ref, entry, pages, page_dir, page_live, page_key, page_free,
                 ov_key, ov_val, ov_state, st):
    """Store a new order's entry (room checked by order_room; (book, ref) not live)."""
    st[ST_LIVE] += 1
    if 0 <= ref < DIRECT_REFS:
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
            pages[_u(a)] = entry
            page_live[_u(p)] += 1
            return
    s = _ov_slot(ov_key, ov_state, book, ref, True)
    if ov_state[_u(s)] == 0:
        st[ST_OV_FILL] += 1
    ov_state[_u(s)] = 1
    ov_key[_u(s), 0] = book
    ov_key[_u(s), 1] = ref
    ov_val[_u(s)] = entry
    st[ST_OV_USED] += 1


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


@njit(cache=True, _nrt=False)
def level_room(book, sides, pool, lv, st):
    """0 if a new level can be made in this book (both sides), else the ROOM_* to grow."""
    if book * 2 + 1 >= sides.shape[0]:
        return ROOM_BOOKS
    if st[ST_LV_FREE] == 0 and st[ST_LV_TOP] >= lv.shape[0]:
        return ROOM_LEVELS
    need = 4
    for sd in range(2):
        c = sides[_u(book * 2 + sd), 2]
        if c * 2 > need:
            need = c * 2
    if st[ST_POOL_TOP] + need > pool.shape[0]:
        return ROOM_POOL
    return 0


@njit(cache=True, _nrt=False)
def _seg_alloc(cap, pool, seg_free, st):
    k = 0
    while (1 << k) < cap:
        k += 1
    s = seg_free[k]
    if s >= 0:
        seg_free[k] = pool[_u(s), 0]
        return s
    s = st[ST_POOL_TOP]
    st[ST_POOL_TOP] += cap
    return s


@njit(cache=True, _nrt=False)
def _seg_release(start, cap, pool, seg_free):
    k = 0
    while (1 << k) < cap:
        k += 1
    pool[_u(start), 0] = seg_free[k]
    seg_free[k] = start


@njit(cache=True, _nrt=False)
def level_at(book, side, price, make, lv, lv_free, sides, pool, seg_free, st):
    """The level of (book, side, price); with make, create it (room checked by level_room)."""
    sd = book * 2 + side
    start = sides[_u(sd), 0]
    n = sides[_u(sd), 1]
    key = price if side == 0 else -price
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
    if i >= 0 and pool[_u(start + i), 0] == key:
        return pool[_u(start + i), 1]
    if not make:
        return -1
    if n == sides[_u(sd), 2]:        # grow the segment
        cap = sides[_u(sd), 2]
        ncap = 4 if cap == 0 else cap * 2
        ns = _seg_alloc(ncap, pool, seg_free, st)
        for j in range(n):
            pool[_u(ns + j), 0] = pool[_u(start + j), 0]
            pool[_u(ns + j), 1] = pool[_u(start + j), 1]
        if cap > 0:
            _seg_release(start, cap, pool, seg_free)
        start = ns
        sides[_u(sd), 0] = ns
        sides[_u(sd), 2] = ncap
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
def drop_level(lvl, lv, lv_free, sides, pool, st):
    """Remove an empty level from its side and free it."""
    sd = lv[_u(lvl), LV_OWNER]
    start = sides[_u(sd), 0]
    n = sides[_u(sd), 1]
    i = n - 1
    while pool[_u(start + i), 1] != lvl:
        i -= 1
    for j in range(i, n - 1):
        pool[_u(start + j), 0] = pool[_u(start + j + 1), 0]
        pool[_u(start + j), 1] = pool[_u(start + j + 1), 1]
    sides[_u(sd), 1] = n - 1
    lv_free[_u(st[ST_LV_FREE])] = lvl
    st[ST_LV_FREE] += 1


@njit(cache=True, _nrt=False, inline="always")
def _entry_at(a, pages, ov_val):
    return pages[_u(a)] if a >= 0 else ov_val[_u(-2 - a)]


@njit(cache=True, _nrt=False)
def _take(a, entry, by, remove, lv, lv_free, sides, pool, pages, page_dir, page_live,
          page_key, page_free, ov_val, ov_state, st):
    """Take ``by`` shares from the order at address a; remove it at 0 or when ``remove``."""
    lvl = (entry & 0xFFFFFFFF) - 1
    left = ((entry >> 32) & 0xFFFFFFFF) - by
    lv[_u(lvl), LV_QTY] -= by
    if left == 0 or remove:
        lv[_u(lvl), LV_QTY] -= left
        remove_order(a, pages, page_dir, page_live, page_key, page_free, ov_state, st)
        lv[_u(lvl), LV_COUNT] -= 1
        if lv[_u(lvl), LV_COUNT] == 0:
            drop_level(lvl, lv, lv_free, sides, pool, st)
    elif a >= 0:
        pages[_u(a)] = (left << 32) | (lvl + 1)
    else:
        ov_val[_u(-2 - a)] = (left << 32) | (lvl + 1)


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


@njit(cache=True, _nrt=False, inline="always")
def _prefetch_ahead(ev, i, n, sides, pool, lv, pages, page_dir):
    nsd = sides.shape[0]
    j = i + AHEAD
    if j < n:
        book = ev[_u(j), 2]
        if 0 <= book and book * 2 + 1 < nsd:
            prefetch(sides, book * 6)
            prefetch(sides, book * 6 + 5)
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
                prefetch(lv, ((e & 0xFFFFFFFF) - 1) * 4)
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


@njit(cache=True, _nrt=False, inline="always")
def _letter(act, typ):
    """The orders table's action letter: the ITCH type, or the CSV action's."""
    if typ == 70:
        return 65                      # F is an add
    if typ != 0:
        return typ
    if act == ACT_ADD or act == ACT_ADD_ZERO_OK:
        return 65
    if act == ACT_REDUCE_TO:
        return 67
    if act == ACT_EXEC_CLAMP:
        return 69
    return 68


@njit(cache=True, _nrt=False)
def _extra_rows(ev, i, book, act, typ, side, shares, price, rest_px, left, want, trades,
                orders, depth, nx, snap, sides, pool, lv):
    """The trade, order and depth rows of an event applied without error."""
    if want & WANT_TRADES and (act == ACT_EXEC or act == ACT_EXEC_CLAMP):
        if not (typ == 67 and ev[_u(i), 3] & NOT_PRINTABLE):
            t = _u(nx[0])
            trades[t, 0] = ev[_u(i), 0]
            trades[t, 1] = ev[_u(i), 1]
            trades[t, 2] = book
            trades[t, 3] = 67 if typ == 67 else 69
            trades[t, 4] = ev[_u(i), 9] if typ == 67 else rest_px
            trades[t, 5] = shares
            trades[t, 6] = side
            trades[t, 7] = ev[_u(i), 4]
            trades[t, 8] = ev[_u(i), 8]    # ITCH: the match number; CSV: the order id's bytes
            nx[0] += 1
    if want & WANT_ORDERS:
        o = _u(nx[1])
        orders[o, 0] = ev[_u(i), 0]
        orders[o, 1] = ev[_u(i), 1]
        orders[o, 2] = book
        orders[o, 3] = _letter(act, typ)
        orders[o, 4] = side
        orders[o, 5] = price if (act == ACT_ADD or act == ACT_ADD_ZERO_OK or act == ACT_REPLACE) else rest_px
        orders[o, 6] = shares
        orders[o, 7] = left
        orders[o, 8] = ev[_u(i), 4]
        orders[o, 9] = ev[_u(i), 7]
        orders[o, 10] = ev[_u(i), 8] if (typ == 69 or typ == 67 or typ == 0) else 0
        nx[1] += 1
    if want & WANT_DEPTH:
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


@njit(cache=True, _nrt=False)
def apply_events(ev, n, i, rows, nrow, skips, strict, lv, lv_free, sides, pool, seg_free,
                 pages, page_dir, page_live, page_key, page_free, ov_key, ov_val, ov_state, st,
                 want, trades, orders, depth, nx, snap):
    """Apply events ev[i:n] to the books, writing a BBO row for each event that changes one.

    Returns (status, i, nrow, detail): OK when done; NEED_ROOM with detail = ROOM_* and i
    the event to resume at; an ERR_* (strict) with i the failing event. In tolerant mode
    failing events are counted in skips[ERR_*] and handled by SPEC's tolerant rules.
    With ``want`` (WANT_* bits) it also writes trade, order and depth rows; nx holds their
    counts; snap is (2, 2, levels, 3) scratch for the depth comparison.
    """
    while i < n:
        if nrow >= rows.shape[0] or (want != 0 and (nx[0] >= trades.shape[0] or nx[1] >= orders.shape[0]
                                                    or nx[2] >= depth.shape[0])):
            return NEED_ROOM, i, nrow, ROOM_ROWS
        _prefetch_ahead(ev, i, n, sides, pool, lv, pages, page_dir)
        book = ev[_u(i), 2]
        act = ev[_u(i), 3] & 0xFF
        side = (ev[_u(i), 3] >> 8) & 1
        typ = (ev[_u(i), 3] >> TYPE_SHIFT) & 0xFF
        ref = ev[_u(i), 4]
        shares = ev[_u(i), 5]
        if act == ACT_PRINT:
            if want & WANT_TRADES:
                t = _u(nx[0])
                trades[t, 0] = ev[_u(i), 0]
                trades[t, 1] = ev[_u(i), 1]
                trades[t, 2] = book
                trades[t, 3] = typ
                trades[t, 4] = ev[_u(i), 6]
                trades[t, 5] = shares
                trades[t, 6] = side
                trades[t, 7] = ref
                trades[t, 8] = ev[_u(i), 8]
                nx[0] += 1
            i += 1
            continue
        if act == ACT_ADD or act == ACT_ADD_ZERO_OK or act == ACT_REPLACE:
            room = level_room(book, sides, pool, lv, st)
            if room == 0:
                room = order_room(ev[_u(i), 7] if act == ACT_REPLACE else ref, pages, page_dir, ov_key, st)
            if room != 0:
                return NEED_ROOM, i, nrow, room
        elif book < 0 or book * 2 + 1 >= sides.shape[0]:
            if strict:
                return ERR_UNKNOWN_REF, i, nrow, 0
            skips[ERR_UNKNOWN_REF] += 1
            i += 1
            continue
        bpx, bq, bn = _top(book * 2, sides, pool, lv)
        apx, aq, an = _top(book * 2 + 1, sides, pool, lv)
        if want & WANT_DEPTH:
            _levels(book, sides, pool, lv, snap[0])
        err = 0
        add = False
        price = ev[_u(i), 6]
        rest_px = price
        left = shares
        if act == ACT_ADD or act == ACT_ADD_ZERO_OK:
            add = True
        else:
            a = find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st)
            if a == -1:
                err = ERR_UNKNOWN_REF
            else:
                e = _entry_at(a, pages, ov_val)
                have = (e >> 32) & 0xFFFFFFFF
                rest_px = lv[_u((e & 0xFFFFFFFF) - 1), LV_PRICE]
                side = lv[_u((e & 0xFFFFFFFF) - 1), LV_OWNER] & 1
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
                if (err == 0 or not strict) and (remove or by != 0):
                    _take(a, e, 0 if remove else by, remove, lv, lv_free, sides, pool, pages,
                          page_dir, page_live, page_key, page_free, ov_val, ov_state, st)
                if act == ACT_EXEC_CLAMP or act == ACT_REDUCE_TO:
                    shares = by              # what the record executed / cancelled
        if add and (err == 0 or not strict):
            if shares == 0 and act == ACT_ADD:
                err = ERR_ZERO_ADD
            else:
                a = find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st)
                if a != -1:
                    err = ERR_DUPLICATE_REF
                    if not strict:
                        _take(a, _entry_at(a, pages, ov_val), 0, True, lv, lv_free, sides, pool,
                              pages, page_dir, page_live, page_key, page_free, ov_val, ov_state, st)
                if err == 0 or not strict:
                    lvl = level_at(book, side, price, True, lv, lv_free, sides, pool, seg_free, st)
                    lv[_u(lvl), LV_QTY] += shares
                    lv[_u(lvl), LV_COUNT] += 1
                    insert_order(book, ref, (shares << 32) | (lvl + 1), pages, page_dir, page_live,
                                 page_key, page_free, ov_key, ov_val, ov_state, st)
                    left = shares
        if err != 0:
            if strict:
                return err, i, nrow, 0
            skips[err] += 1
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
        if want != 0 and err == 0:
            _extra_rows(ev, i, book, act, typ, side, shares, price, rest_px, left, want, trades,
                        orders, depth, nx, snap, sides, pool, lv)
        i += 1
    return OK, i, nrow, 0


@njit(cache=True, _nrt=False)
def ov_rehash(old_key, old_val, old_state, new_key, new_val, new_state):
    """Move the live entries of an overflow table into a larger, empty one; returns the count."""
    n = 0
    for s in range(old_state.shape[0]):
        if old_state[s] == 1:
            t = _ov_slot(new_key, new_state, old_key[s, 0], old_key[s, 1], True)
            new_state[t] = 1
            new_key[t, 0] = old_key[s, 0]
            new_key[t, 1] = old_key[s, 1]
            new_val[t] = old_val[s]
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
