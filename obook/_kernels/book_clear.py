"""Clearing a book (ACT_CLEAR, a feed's "remove every order of this book": Databento's R).

It removes every order of the book (a book never seen: nothing). With the orders table it
writes one orders row per removed order, bids then asks, best level first, each level
front to back: action = the event's type letter (``R`` when none), the order's side,
price and ref, shares = what it had, remaining 0, no queue place. Without the queues it
finds the book's orders by scanning the order index (O(live orders of the worker): a
clear of a busy book is rare), and writes their rows bids then asks, best level first,
each level by ref (the index's order depends on the worker's other books: sorted, the
rows are the same for any worker count); a clear of an empty book (each instrument's
first record in a Databento session) scans nothing.
"""

import numpy as np

from .jit import njit

from .book import (LEVEL_BITS, LEVEL_MASK, LV_OWNER, LV_PRICE, LX_HEAD, PAGE, PAGE_BITS, Q_NEXT, Q_REF,
                   Q_SHARES, ST_PAGE_TOP, ST_Q_FREE, ST_REF_BASE, _u, book_orders, far_remove, find_order, free_level,
                   remove_order)
from .book_rows import order_row
from .layout import OR_PRICE, OR_REF, OR_SIDE


@njit(cache=True, _nrt=False, inline="always")
def _cleared_row(ev, i, book, letter, lvl, shares, ref, lv, orders, nx):
    order_row(ev, i, book, letter, lv[_u(lvl), LV_OWNER] & 1, lv[_u(lvl), LV_PRICE],
               shares, 0, ref, 0, 0, -1, -1, orders, nx)


@njit(cache=True, _nrt=False, inline="always")
def _before(orders, a, b):
    """Row a comes before row b: bids before asks, the better price first, then the ref."""
    if orders[a, OR_SIDE] != orders[b, OR_SIDE]:
        return orders[a, OR_SIDE] < orders[b, OR_SIDE]
    if orders[a, OR_PRICE] != orders[b, OR_PRICE]:
        return (orders[a, OR_PRICE] > orders[b, OR_PRICE]) == (orders[a, OR_SIDE] == 0)
    return np.uint64(orders[a, OR_REF]) < np.uint64(orders[b, OR_REF])      # refs are unsigned


@njit(cache=True, _nrt=False, inline="always")
def _swap(orders, a, b):
    for c in range(orders.shape[1]):
        orders[a, c], orders[b, c] = orders[b, c], orders[a, c]


@njit(cache=True, _nrt=False)
def _sift(orders, lo, root, end):
    """Rows [lo, end) as a heap whose root is the row that comes last: sift ``root`` down."""
    while True:
        child = lo + 2 * (root - lo) + 1
        if child >= end:
            return
        if child + 1 < end and _before(orders, child, child + 1):
            child += 1
        if not _before(orders, root, child):
            return
        _swap(orders, root, child)
        root = child


@njit(cache=True, _nrt=False)
def _sort_rows(orders, lo, hi):
    """Rows [lo, hi) of ``orders`` in ``_before`` order, in place (a heap sort: no allocation,
    O(n log n) for the n orders of a cleared book; their refs differ, so no ties)."""
    for root in range(lo + (hi - lo) // 2 - 1, lo - 1, -1):
        _sift(orders, lo, root, hi)
    for end in range(hi - 1, lo, -1):
        _swap(orders, lo, end)
        _sift(orders, lo, lo, end)


@njit(cache=True, _nrt=False)
def _clear_level(ev, i, book, lvl, letter, lv, lv_free, lvx, pages, page_dir, page_live, page_key,
                 page_free, ov_key, ov_state, queue, qn, st, write, orders, nx):
    """Free a level of a book being cleared; with the queues, remove its orders (and with
    ``write`` write their orders rows, front to back); without, the caller removed them."""
    if queue:
        node = lvx[_u(lvl), LX_HEAD]
        while node >= 0:
            nxt = qn[_u(node), Q_NEXT]
            ref = qn[_u(node), Q_REF]
            a = find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st)
            remove_order(a, pages, page_dir, page_live, page_key, page_free, ov_state, st)
            if write:
                _cleared_row(ev, i, book, letter, lvl, qn[_u(node), Q_SHARES], ref, lv, orders, nx)
            qn[_u(node), Q_NEXT] = st[ST_Q_FREE]
            st[ST_Q_FREE] = node
            node = nxt
    free_level(lvl, lv, lv_free, st)


@njit(cache=True, _nrt=False)
def clear_book(ev, i, book, letter, books, queue, write, orders, nx):
    """ACT_CLEAR: remove every order and level of a book (see the module docstring) of
    ``books`` (book.Books); with ``write``, an orders row for each (without the queues: in
    the index's order)."""
    (lv, lv_free, lvx, sides, pool, _seg_free, heaps, hp, fh, pages, page_dir, page_live, page_key, page_free,
     ov_key, ov_val, ov_state, qn, _pnode, _ovnode, st) = books
    # no queues to walk: find the book's orders in the index (an empty one has none)
    if not queue and book_orders(book, sides, pool, heaps, hp, lv) > 0:
        first = nx[1]
        for p in range(st[ST_PAGE_TOP]):
            if page_live[_u(p)] > 0:
                for k in range(PAGE):
                    a = (p << PAGE_BITS) + k
                    e = pages[_u(a)]
                    if e != 0 and (lv[_u((e & LEVEL_MASK) - 1), LV_OWNER] >> 1) == book:
                        if write:
                            _cleared_row(ev, i, book, letter, (e & LEVEL_MASK) - 1, e >> LEVEL_BITS,
                                         st[ST_REF_BASE] + (page_key[_u(p)] << PAGE_BITS) + k, lv, orders, nx)
                        remove_order(a, pages, page_dir, page_live, page_key, page_free, ov_state, st)
        for s in range(ov_state.shape[0]):
            if ov_state[s] == 1 and ov_key[s, 0] == book:
                if write:
                    _cleared_row(ev, i, book, letter, ov_val[s, 0] - 1, ov_val[s, 1], ov_key[s, 1], lv, orders,
                                 nx)
                remove_order(-2 - s, pages, page_dir, page_live, page_key, page_free, ov_state, st)
        if write:
            _sort_rows(orders, first, nx[1])
    for sd in range(book * 2, book * 2 + 2):
        start = sides[_u(sd), 0]
        for j in range(sides[_u(sd), 1] - 1, -1, -1):
            _clear_level(ev, i, book, pool[_u(start + j), 1], letter, lv, lv_free, lvx, pages,
                         page_dir, page_live, page_key, page_free, ov_key, ov_state, queue, qn, st,
                         write, orders, nx)
        sides[_u(sd), 1] = 0
        while sides[_u(sd), 3] > 0:          # far levels, best first
            lvl = hp[_u(heaps[_u(sd), 0]), 1]
            far_remove(sd, lvl, lv, lvx, sides, heaps, hp, fh, st)
            _clear_level(ev, i, book, lvl, letter, lv, lv_free, lvx, pages, page_dir, page_live,
                         page_key, page_free, ov_key, ov_state, queue, qn, st, write, orders, nx)
