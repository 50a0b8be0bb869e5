"""The rows a replay publishes after each event: BBO, depth, trade and order rows, and
deferred publication.

Deferred publication (the DEFER bit of an event): the event is applied and writes its
trades and orders rows but no BBO or depth row; the next event of the same book without
the bit (any action, a print too) writes them, compared with the book before the first
deferred event. A feed uses it where one change of the book arrives as several records
(Databento's records before the one whose flags carry F_LAST; the Shanghai and Shenzhen
trades that fill two orders at once).

- ``dstate[B, 5 (+ depth)]``: per book, an open run of DEFER events: open, the BBO
  (bid px, qty, ask px, qty) and the depth levels before its first event.
- ``st[ST_OPEN]``: books with an open run.
"""

from collections import namedtuple

from .jit import njit

from .book import ST_BOOK_WIDTH, _u, side_best, top_levels
from .layout import (DEPTH_HEAD, EV_MATCH, EV_SEQ, EV_TIME, OR_ACTION, OR_MATCH, OR_NEW_REF, OR_PRICE,
                     OR_Q_ORDERS, OR_Q_SHARES, OR_REF, OR_REMAINING, OR_SHARES, OR_SIDE, ROW_ASK_N, ROW_ASK_PX,
                     ROW_ASK_QTY, ROW_BID_N, ROW_BID_PX, ROW_BID_QTY, ROW_BOOK, ROW_SEQ, ROW_TIME, TR_KIND,
                     TR_MATCH, TR_PRICE, TR_REF, TR_SHARES, TR_SIDE, WANT_DEPTH)

ST_OPEN = ST_BOOK_WIDTH     # books with an open run of DEFER events
DS_OPEN, DS_BID_PX, DS_BID_QTY, DS_ASK_PX, DS_ASK_QTY = range(5)
DS_WIDTH = 5

#: the tables besides the BBO, as the replay driver takes them: ``want`` (WANT_* bits),
#: their row arrays, ``counts`` (rows written: trades, orders, depth) and ``snap`` ((2, 2,
#: levels, 3) scratch for the depth comparison)
Tables = namedtuple("Tables", ("want", "trades", "orders", "depth", "counts", "snap"))


@njit(cache=True, _nrt=False, inline="always")
def _row_head(out, r, ev, i, book):
    """The columns every table's row starts with (layout.py): seq, time, book."""
    out[r, ROW_SEQ] = ev[_u(i), EV_SEQ]
    out[r, ROW_TIME] = ev[_u(i), EV_TIME]
    out[r, ROW_BOOK] = book


@njit(cache=True, _nrt=False)
def order_row(ev, i, book, letter, side, price, shares, left, ref, new_ref, match, q_shares,
               q_orders, orders, nx):
    o = _u(nx[1])
    _row_head(orders, o, ev, i, book)
    orders[o, OR_ACTION] = letter
    orders[o, OR_SIDE] = side
    orders[o, OR_PRICE] = price
    orders[o, OR_SHARES] = shares
    orders[o, OR_REMAINING] = left
    orders[o, OR_REF] = ref
    orders[o, OR_NEW_REF] = new_ref
    orders[o, OR_MATCH] = match
    orders[o, OR_Q_SHARES] = q_shares
    orders[o, OR_Q_ORDERS] = q_orders
    nx[1] += 1


@njit(cache=True, _nrt=False)
def trade_row(ev, i, book, kind, price, shares, side, ref, trades, nx):
    t = _u(nx[0])
    _row_head(trades, t, ev, i, book)
    trades[t, TR_KIND] = kind
    trades[t, TR_PRICE] = price
    trades[t, TR_SHARES] = shares
    trades[t, TR_SIDE] = side
    trades[t, TR_REF] = ref
    trades[t, TR_MATCH] = ev[_u(i), EV_MATCH]    # ITCH: the match number; CSV: the order id's bytes
    nx[0] += 1


@njit(cache=True, _nrt=False, inline="always")
def bbo_row(ev, i, book, bpx, bq, apx, aq, rows, nrow, sides, pool, lv):
    """A BBO row when the book's (bid px, qty, ask px, qty) changed; returns the row count."""
    nbpx, nbq, nbn = side_best(book * 2, sides, pool, lv)
    napx, naq, nan_ = side_best(book * 2 + 1, sides, pool, lv)
    if nbpx != bpx or nbq != bq or napx != apx or naq != aq:
        r = _u(nrow)
        _row_head(rows, r, ev, i, book)
        rows[r, ROW_BID_PX] = nbpx
        rows[r, ROW_BID_QTY] = nbq
        rows[r, ROW_BID_N] = nbn
        rows[r, ROW_ASK_PX] = napx
        rows[r, ROW_ASK_QTY] = naq
        rows[r, ROW_ASK_N] = nan_
        nrow += 1
    return nrow


@njit(cache=True, _nrt=False)
def rows_before(book, sides, pool, lv, dstate, want, snap, st):
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
        top_levels(book, sides, pool, lv, snap[0])
    bpx, bq, bn = side_best(book * 2, sides, pool, lv)
    apx, aq, an = side_best(book * 2 + 1, sides, pool, lv)
    return bpx, bq, apx, aq


@njit(cache=True, _nrt=False)
def event_rows(ev, i, book, defer, bpx, bq, apx, aq, rows, nrow, sides, pool, lv, dstate, want,
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
    nrow = bbo_row(ev, i, book, bpx, bq, apx, aq, rows, nrow, sides, pool, lv)
    if want & WANT_DEPTH:
        depth_row(ev, i, book, sides, pool, lv, depth, nx, snap)
    return nrow


@njit(cache=True, _nrt=False)
def depth_row(ev, i, book, sides, pool, lv, depth, nx, snap):
    """A depth row when the book's top levels differ from snap[0] (the book before)."""
    top_levels(book, sides, pool, lv, snap[1])
    same = True
    for sd in range(2):
        for k in range(snap.shape[2]):
            for c in range(3):
                if snap[0, sd, k, c] != snap[1, sd, k, c]:
                    same = False
    if not same:
        d = _u(nx[2])
        _row_head(depth, d, ev, i, book)
        w = DEPTH_HEAD       # then each level as top_levels gives it: DEPTH_LEVEL's (px, qty, orders)
        for sd in range(2):
            for k in range(snap.shape[2]):
                for c in range(3):
                    depth[d, w] = snap[1, sd, k, c]
                    w += 1
        nx[2] += 1
