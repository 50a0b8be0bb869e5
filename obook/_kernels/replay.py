"""The replay driver: ``replay_events`` applies a batch of normalized events
(obook._kernels.layout) to the books of obook._kernels.book and writes the tables' rows
(obook._kernels.book_rows), composing the rules some feeds need in front of the book:
deferred publication (book_rows), clearing a book (book_clear), the Shenzhen price cage
and own-best pricing (price_cage). An event without their bits never reaches them.

The actions, in the book's terms:

- ACT_ADD / ACT_ADD_ZERO_OK: a new order at the back of its level (0 shares: an error /
  a level of 0 shares). An add (of any action) that would take its level's total past
  2**63 - 1 shares is ERR_LEVEL_OVERFLOW: the order is not added.
- ACT_EXEC / ACT_CANCEL: take shares (more than remain: over-execution / over-cancel);
  ACT_REDUCE_TO: reduce TO shares; ACT_EXEC_CLAMP: take min(shares, remaining); all keep
  the order's place. ACT_DELETE removes the order.
- ACT_REPLACE (a feed's "cancel and replace with a new order id", ITCH's U): remove REF,
  add NEWREF with the same side at PRICE, SHARES, at the back of its level.
- ACT_MODIFY (an order changed in place, Databento's and Cboe's modify): REF gets PRICE
  and SHARES, same ref, same side. It keeps its place if the price is unchanged and shares
  did not increase, else it goes to the back of the level at its (new) price (always, with
  the TO_BACK bit). SHARES 0 removes the order. An unknown REF is added with the event's
  side (Databento's book-building rule; a 0-share one is a zero-share add). Orders row:
  action = the event's type letter (``M`` when none), price and shares the new ones,
  remaining the shares left (0 when removed).
- ACT_PRINT: a trade print (or break): a trades row, no book change.
- ACT_CLEAR: every order of the book leaves (obook._kernels.book_clear).

Every kernel returns a status; nothing raises; NEED_ROOM asks the caller to grow
an array and call again from the returned position (no event is half applied; an
event needing many output rows, a clear, asks for them before it starts).
"""

from collections import namedtuple

from .jit import INTERPRETED, njit

from .book import (Books, LEVEL_MASK, LV_OWNER, LV_PRICE, ROOM_ROWS, _u, add_order, book_orders, entry_at,
                   find_order, level_room, node_of, order_room, page_addr, queue_ahead, side_best,
                   take_shares, top_levels)
from .book_clear import clear_book
from .book_rows import (DS_OPEN, ST_OPEN, Tables, bbo_row, depth_row, event_rows, order_row, rows_before,
                        trade_row)
from .layout import (ACT_ADD, ACT_ADD_ZERO_OK, ACT_CANCEL, ACT_CLEAR, ACT_DELETE, ACT_EXEC,
                     ACT_EXEC_CLAMP, ACT_MODIFY, ACT_PRINT, ACT_REDUCE_TO, ACT_REPLACE, CAGE_ADD,
                     CAGE_LIVE, CAGED, DEFER, ERR_DUPLICATE_REF, ERR_LEVEL_OVERFLOW, ERR_OVER_CANCEL,
                     ERR_OVER_EXECUTION, ERR_UNKNOWN_REF, ERR_ZERO_ADD, NEED_ROOM, NO_SIDE, NOT_PRINTABLE, OK,
                     OWN_BEST, TO_BACK, TYPE_SHIFT, WANT_DEPTH, WANT_NO_BBO, WANT_ORDERS, WANT_QUEUE, WANT_TRADES)
from .prefetch import prefetch
from .price_cage import (CG_HELD, ENTRY_OVERFLOW, ROOM_HELD, ST_ENTER, ST_HELD_TOP, after_event, cage_ref,
                         enter_step, held_find, hold_order, outside_cage, own_best_price, reduce_held)

#: the width of ``st``: the book's counters, then the rules'
ST_WIDTH = ST_ENTER + 1
#: the rules' state: deferred publication's ``dstate`` (book_rows), the price cage's
#: ``cage`` and ``held`` (price_cage)
Rules = namedtuple("Rules", ("dstate", "cage", "held"))


#: how far ahead the kernel prefetches, in three steps: the book's sides and the order's
#: index entry at +AHEAD; the best pool rows and the order's level at +AHEAD/2; the
#: best levels at +AHEAD/4 (each step reads only what the previous one fetched)
AHEAD = 16


if INTERPRETED:     # Python kernels: nothing to prefetch
    def _prefetch_ahead(ev, i, n, sides, pool, lv, pages, page_dir, st):
        pass
else:
    @njit(cache=True, _nrt=False, inline="always")
    def _prefetch_ahead(ev, i, n, sides, pool, lv, pages, page_dir, st):
        nsd = sides.shape[0]
        j = i + AHEAD
        if j < n:
            book = ev[_u(j), 2]
            if 0 <= book and book * 2 + 1 < nsd:
                prefetch(sides, book * 8)
                prefetch(sides, book * 8 + 7)
            a = page_addr(ev[_u(j), 4], page_dir, st)
            if a >= 0:
                prefetch(pages, a)
        j = i + AHEAD // 2
        if j < n:
            book = ev[_u(j), 2]
            if 0 <= book and book * 2 + 1 < nsd:
                for sd in range(book * 2, book * 2 + 2):
                    prefetch(pool, (sides[_u(sd), 0] + sides[_u(sd), 1] - 1) * 2)
            a = page_addr(ev[_u(j), 4], page_dir, st)
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


@njit(cache=True, _nrt=False, inline="always")
def changed_anyway(err, act):
    """A failing event the tolerant rules still apply to the book (so it has its orders row):
    an over-execution or over-cancel removes the order, a duplicate ref replaces the live
    order, a replace of zero shares removes its original."""
    return (err == ERR_OVER_EXECUTION or err == ERR_OVER_CANCEL or err == ERR_DUPLICATE_REF
            or (err == ERR_ZERO_ADD and act == ACT_REPLACE))


@njit(cache=True, _nrt=False)
def replay_events(ev, n, i, rows, nrow, skips, strict, books, rules, tables):
    """Apply events ev[i:n] to ``books`` (book.Books), writing a BBO row into ``rows`` for
    each event that changes one (``nrow`` written so far).

    Returns (status, i, nrow, detail): OK when done; NEED_ROOM with detail = ROOM_* and i
    the event to resume at; an ERR_* (strict) with i the failing event. In tolerant mode
    failing events are counted in skips[ERR_*] and handled by the tolerant rules.
    ``rules`` (Rules) is the rules' state; ``tables`` (book_rows.Tables) the other tables:
    with ``want`` (WANT_* bits) it also writes trade, order and depth rows, counting them in
    ``counts``. WANT_QUEUE keeps the time-priority queues (qn, pnode, ovnode sized for them)
    and the order rows' places. WANT_NO_BBO (a replay for its observer alone): no BBO row
    outside a DEFER run or a price cage's entries (whose rows keep their own state).
    """
    (lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh, pages, page_dir, page_live, page_key, page_free,
     ov_key, ov_val, ov_state, qn, pnode, ovnode, st) = books
    dstate, cage, held = rules
    want, trades, orders, depth, nx, snap = tables
    queue = (want & WANT_QUEUE) != 0
    quiet = (want & WANT_NO_BBO) != 0
    tables_on = (want & (WANT_TRADES | WANT_ORDERS | WANT_DEPTH)) != 0
    while i < n:
        if nrow >= rows.shape[0] or (tables_on and (nx[0] >= trades.shape[0] or nx[1] >= orders.shape[0]
                                                    or nx[2] >= depth.shape[0])):
            return NEED_ROOM, i, nrow, ROOM_ROWS
        if st[ST_ENTER] != 0:            # held orders entering after event i (price cage)
            room, nrow, done = enter_step(ev, i, rows, nrow, books, rules, tables)
            if room == ENTRY_OVERFLOW:   # the entry would take its level past 2**63 - 1: dropped
                if strict:
                    return ERR_LEVEL_OVERFLOW, i, nrow, 0
                skips[ERR_LEVEL_OVERFLOW] += 1
                continue
            if room != 0:
                return NEED_ROOM, i, nrow, room
            if done:
                i += 1
            continue
        _prefetch_ahead(ev, i, n, sides, pool, lv, pages, page_dir, st)
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
                trade_row(ev, i, book, typ, ev[_u(i), 6], shares, 2 if word & NO_SIDE else side, ref,
                           trades, nx)
            if (st[ST_OPEN] > 0 and not defer and 0 <= book < dstate.shape[0]
                    and dstate[_u(book), DS_OPEN] != 0):   # the end of a DEFER run
                bpx, bq, apx, aq = rows_before(book, sides, pool, lv, dstate, want, snap, st)
                nrow = event_rows(ev, i, book, False, bpx, bq, apx, aq, rows, nrow, sides, pool, lv,
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
            bpx, bq, apx, aq = rows_before(book, sides, pool, lv, dstate, want, snap, st)
        elif quiet:
            bpx = bq = apx = aq = 0
        else:
            bpx, bq, bn = side_best(book * 2, sides, pool, lv)
            apx, aq, an = side_best(book * 2 + 1, sides, pool, lv)
            if want & WANT_DEPTH:
                top_levels(book, sides, pool, lv, snap[0])
        err = 0
        add = False
        price = ev[_u(i), 6]
        gone = False                     # an own-best order on an empty side: never rests
        if act == ACT_ADD and word & OWN_BEST:   # own-best: at its own side's best
            price = own_best_price(book, side, sides, pool, lv)
            gone = price < 0
        hold = False                     # price cage: held outside the book
        if act == ACT_ADD and word & CAGE_ADD:
            hold = outside_cage(side, price, cage_ref(book, side, sides, pool, lv, cage))
        rest_px = price
        left = shares
        q_lvl = -1                       # the row's order's level and node while it rests
        q_node = -1
        if act == ACT_CLEAR:
            clear_book(ev, i, book, _letter(act, typ), books, queue, (want & WANT_ORDERS) != 0, orders, nx)
        elif hold:
            hold_order(book, ref, side, price, shares, cage, held, st)
        elif act == ACT_ADD or act == ACT_ADD_ZERO_OK:
            add = not gone
        else:
            a = find_order(book, ref, lv, pages, page_dir, ov_key, ov_state, st)
            h = -1
            if a == -1 and cage[_u(book), CG_HELD] > 0 and (act == ACT_CANCEL or act == ACT_DELETE):
                h = held_find(book, ref, held, st)
            if h >= 0:                   # a held order (price cage): reduced where it is
                rest_px, side, shares, left, err = reduce_held(h, act == ACT_DELETE, shares, cage, held, st)
            elif a == -1:
                if act == ACT_MODIFY:   # a modify of an unknown order adds it
                    add = True
                else:
                    err = ERR_UNKNOWN_REF
            else:
                lvl0, have = entry_at(a, pages, ov_val)
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
                    q_node = node_of(a, pnode, ovnode)
                if (err == 0 or not strict) and (remove or by != 0):
                    take_shares(a, lvl0, have, 0 if remove else by, remove, lv, lv_free, lvx, sides, pool,
                                heaps, hp, fh, pages, page_dir, page_live, page_key, page_free, ov_val,
                                ov_state, queue, qn, pnode, ovnode, st)
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
                        dl, dh = entry_at(a, pages, ov_val)
                        take_shares(a, dl, dh, 0, True, lv, lv_free, lvx, sides, pool, heaps, hp, fh,
                                    pages, page_dir, page_live, page_key, page_free, ov_val, ov_state, queue,
                                    qn, pnode, ovnode, st)
                if err == 0 or not strict:
                    q_lvl, q_node = add_order(book, side, price, ref, shares, queue, lv, lv_free, lvx, sides,
                                              pool, seg_free, heaps, hp, fh, pages, page_dir, page_live,
                                              page_key, page_free, ov_key, ov_val, ov_state, qn, pnode,
                                              ovnode, st)
                    left = shares
                    if q_lvl < 0:        # its level's total would pass 2**63 - 1: not added
                        left = 0
                        if err == 0:
                            err = ERR_LEVEL_OVERFLOW
        if err != 0:
            if strict:
                return err, i, nrow, 0
            skips[err] += 1
        enter = False
        tside = side                     # a trade row's side: the resting order's
        if word & (CAGED | CAGE_LIVE):   # price cage: last trade, crossed entry, entries
            tside, defer, enter = after_event(word, book, ev[_u(i), 4], act == ACT_EXEC and err == 0,
                                              ev[_u(i), 9] if typ == 67 else rest_px, side, defer, sides,
                                              pool, lv, cage, st)
        if slow_rows or defer or enter:
            nrow = event_rows(ev, i, book, defer or enter, bpx, bq, apx, aq, rows, nrow, sides, pool, lv,
                              dstate, want, depth, nx, snap, st)
        elif not quiet:
            nrow = bbo_row(ev, i, book, bpx, bq, apx, aq, rows, nrow, sides, pool, lv)
            if want & WANT_DEPTH:
                depth_row(ev, i, book, sides, pool, lv, depth, nx, snap)
        if err == 0 and act != ACT_CLEAR and want & WANT_TRADES and (act == ACT_EXEC or act == ACT_EXEC_CLAMP):
            if not (typ == 67 and word & NOT_PRINTABLE):
                trade_row(ev, i, book, 67 if typ == 67 else 69, ev[_u(i), 9] if typ == 67 else rest_px,
                           shares, tside, ev[_u(i), 4], trades, nx)
        if act != ACT_CLEAR and not gone and (err == 0 or changed_anyway(err, act)):
            if want & WANT_ORDERS:
                qs = qo = -1
                if q_node >= 0:
                    qs, qo = queue_ahead(q_lvl, q_node, qn, lvx, lv)
                moved = act == ACT_ADD or act == ACT_ADD_ZERO_OK or act == ACT_REPLACE or act == ACT_MODIFY
                order_row(ev, i, book, 72 if hold else _letter(act, typ), side, price if moved else rest_px,
                           shares, left,
                           ev[_u(i), 4], ev[_u(i), 7],
                           ev[_u(i), 8] if (typ == 69 or typ == 67 or typ == 0) else 0, qs, qo, orders, nx)
        if not enter:
            i += 1
    return OK, i, nrow, 0

