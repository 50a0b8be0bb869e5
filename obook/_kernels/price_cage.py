"""The Shenzhen ChiNext price cage and own-best pricing: rules the replay applies in front
of the book for the events that carry their bits (obook._kernels.layout: OWN_BEST,
CAGE_ADD, CAGE_LIVE, CAGED); other events never reach them.

- Own-best (OWN_BEST on an ACT_ADD, Shenzhen's order type 'U'): the order takes its own
  side's best price at the add; with that side empty the exchange cancels it: it is not
  added (no orders row), whether or not its cancel follows in the feed.
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
  rows come after the entries (a deferred run, ``st[ST_ENTER]`` set while it lasts, so an
  entry that needs room resumes there). An entry that crosses the book (its fills follow
  in the feed) keeps the book's rows deferred until an event leaves it uncrossed: no
  crossed book is published between an entry and its fills. Its fills come as fills of
  two resting orders (the first printable): while the book is crossed, a printed fill
  whose order is that entry takes the other order's side (the resting one's, as every
  trade row's side is).
- An execution with CAGED sets the book's last trade price (EV_AUX for type C, else the
  order's price).
"""

from .jit import njit

from .book import (LEVEL_MAX_SHARES, LV_COUNT, LV_QTY, ROOM_BOOK_END, _u, crossed, insert_order, level_at,
                   level_room, order_room, queue_ahead, queue_push, side_best)
from .book_rows import ST_OPEN, event_rows, order_row, rows_before
from .layout import CAGE_LIVE, ERR_OVER_CANCEL, WANT_ORDERS, WANT_QUEUE

CG_HELD, CG_LAST, CG_CROSS, CG_ENTERED = range(4)   # CG_ENTERED: the last entry that crossed
CG_WIDTH = 4
HW_BOOK, HW_REF, HW_SIDE, HW_PRICE, HW_SHARES, HW_LIVE = range(6)
HW_WIDTH = 6
ST_HELD = ST_OPEN + 1       # live held orders
ST_HELD_TOP = ST_OPEN + 2   # held rows in use
ST_ENTER = ST_OPEN + 3      # entering held orders after event i: 1, 2 when its rows stay deferred (0: not)
ROOM_HELD = ROOM_BOOK_END   # NEED_ROOM's detail: grow ``held``
ENTRY_OVERFLOW = -1         # enter_step: an entry that its level's total cannot hold


@njit(cache=True, _nrt=False, inline="always")
def own_best_price(book, side, sides, pool, lv):
    """An own-best order's price: its own side's best; -1 when that side is empty (the
    exchange cancels the order: it never rests)."""
    opx, _oq, on = side_best(book * 2 + side, sides, pool, lv)
    return opx if on > 0 else -1


@njit(cache=True, _nrt=False)
def cage_ref(book, side, sides, pool, lv, cage):
    """The cage's reference price for an order of ``side`` (0 buy): the other side's best,
    else its own side's best, else the book's last trade; 0: none."""
    px, _q, n = side_best(book * 2 + 1 - side, sides, pool, lv)
    if n > 0:
        return px
    px, _q, n = side_best(book * 2 + side, sides, pool, lv)
    if n > 0:
        return px
    return cage[_u(book), CG_LAST]


@njit(cache=True, _nrt=False, inline="always")
def outside_cage(side, price, ref):
    """A buy above 102% of ``ref``, a sell below 98%; never without ref. Exact integers
    that cannot wrap (prices are not negative): price * 100 > ref * 102 is
    price - ref > ref // 50, price * 100 < ref * 98 is ref - price > ref // 50."""
    if ref <= 0:
        return False
    return price - ref > ref // 50 if side == 0 else ref - price > ref // 50


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
def hold_order(book, ref, side, price, shares, cage, held, st):
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
def enter_step(ev, i, rows, nrow, books, rules, tables):
    """One step of the entries after event i (st[ST_ENTER] set): the first held order of its
    book the cage admits enters; with none left the event's rows are written (or stay
    deferred). ``books``, ``rules``, ``tables``: the replay driver's named state
    (obook._kernels.replay). Returns (room or 0, nrow, done); room ENTRY_OVERFLOW: the
    entering order would take its level's total past 2**63 - 1 shares, and was dropped."""
    (lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh, pages, page_dir, page_live, page_key, page_free,
     ov_key, ov_val, ov_state, qn, pnode, ovnode, st) = books
    dstate, cage, held = rules
    want, _trades, orders, depth, nx, snap = tables
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
        if shares > LEVEL_MAX_SHARES - lv[_u(lvl), LV_QTY]:
            return ENTRY_OVERFLOW, nrow, False        # dropped, not entered
        lv[_u(lvl), LV_QTY] += shares
        lv[_u(lvl), LV_COUNT] += 1
        a = insert_order(book, ref, lvl, shares, pages, page_dir, page_live, page_key,
                         page_free, ov_key, ov_val, ov_state, st)
        if want & WANT_ORDERS:
            qs = qo = -1
            if want & WANT_QUEUE:
                node = queue_push(lvl, a, shares, ref, qn, lvx, pnode, ovnode, st)
                qs, qo = queue_ahead(lvl, node, qn, lvx, lv)
            order_row(ev, i, book, 65, side, price, shares, shares, ref, 0, 0, qs, qo, orders, nx)
        opx, _oq, on = side_best(book * 2 + 1 - side, sides, pool, lv)
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
    bpx, bq, apx, aq = rows_before(book, sides, pool, lv, dstate, want, snap, st)
    nrow = event_rows(ev, i, book, keep, bpx, bq, apx, aq, rows, nrow, sides, pool, lv, dstate, want,
                      depth, nx, snap, st)
    return 0, nrow, True


@njit(cache=True, _nrt=False, inline="always")
def reduce_held(h, delete, shares, cage, held, st):
    """A cancel (``delete``: a delete) of held order h, applied where it is. Returns its
    (price, side, shares cancelled, shares left, error code or 0)."""
    have = held[h, HW_SHARES]
    err = 0
    if delete:
        shares = have
    elif shares > have:
        err = ERR_OVER_CANCEL
    left = have - shares if shares < have else 0
    held[h, HW_SHARES] = left
    if left == 0:
        held_drop(h, cage, held, st)
    return held[h, HW_PRICE], held[h, HW_SIDE], shares, left, err


@njit(cache=True, _nrt=False, inline="always")
def after_event(word, book, ref, executed, exec_px, side, defer, sides, pool, lv, cage, st):
    """The cage's part after an event of a caged book: the last trade price (``executed``
    at ``exec_px``), an entry's crossing fills, and whether held orders enter now.
    Returns (the trade row's side, defer, enter)."""
    tside = side
    enter = False
    if executed:
        cage[_u(book), CG_LAST] = exec_px
    if cage[_u(book), CG_CROSS] != 0:
        if ref == cage[_u(book), CG_ENTERED]:
            tside = 1 - side     # the entry's own fill: the other order rests
        if crossed(book, sides, pool, lv):
            defer = True
        else:
            cage[_u(book), CG_CROSS] = 0
            cage[_u(book), CG_ENTERED] = 0
    if word & CAGE_LIVE and cage[_u(book), CG_HELD] > 0:
        enter = True
        st[ST_ENTER] = 2 if defer else 1
    return tside, defer, enter
