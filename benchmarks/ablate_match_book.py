"""The matching engine's seed workload on the replay's book structures, against the
matching engine's own banded book.

A small price-time matching driver (new limit / market orders, IOC, modify, cancel; no
output rows, no self-trade prevention: the seed workload's mix) written on
``obook._kernels.book`` (near segments and far heap for the price index, the paged order
index, time-priority queue nodes) runs the same 100,000 warm-up + 1,000,000 timed
instructions as ``bench_match.py``'s book-only configuration. Both books must end with the
same resting quantity at every price (checked); the script prints each side's thread-CPU
ns per instruction and the median of the per-repeat ratios, alternating the two.

    python benchmarks/ablate_match_book.py [--repeats 5] [--room-checks]

``--price-cache``: a rest finds its level through a price-indexed array (a cache in front
of the book's price search). ``--room-checks``: test for level / order room before every instruction, as a driver that
grows its arrays must (without it the arrays are allocated large enough up front).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from obook._kernels import book as K  # noqa: E402
from obook._kernels.book import (LV_COUNT, LV_OWNER, LV_PRICE, LV_QTY, LX_HEAD, Q_REF, Q_SHARES,  # noqa: E402
                                 add_order, entry_at, find_order, insert_order, level_at, level_room,
                                 order_room, queue_push, take_shares)
from obook._kernels.jit import njit  # noqa: E402
from obook._kernels.match_layout import (MARKET_BIT, OP_CANCEL, OP_MODIFY, SIDE_SHIFT, TIF_FOK,  # noqa: E402
                                         TIF_IOC, TIF_SHIFT)

NEVER, LIVE, DONE = 0, 1, 2
ST_AT = K.ST_BOOK_WIDTH      # where run() stops for room


@njit(cache=True, _nrt=False, inline="always")
def _take(a, lvl, have, by, remove, b):
    take_shares(a, lvl, have, by, remove, b.lv, b.lv_free, b.lvx, b.sides, b.pool, b.heaps, b.hp, b.fh,
                b.pages, b.page_dir, b.page_live, b.page_key, b.page_free, b.ov_val, b.ov_state, True, b.qn,
                b.pnode, b.ovnode, b.st)


@njit(cache=True, _nrt=False, inline="always")
def _rest(book, side, price, key, qty, b, band):
    """Rest qty at price; with a price cache (``band``: price -> level + 1, 0 when there is
    none), a level it still names is used without the book's price search."""
    if band.shape[0] > 1:
        lvl = band[price] - 1
        if lvl < 0 or b.lv[lvl, LV_OWNER] != book * 2 + side or b.lv[lvl, LV_PRICE] != price:
            lvl = level_at(book, side, price, True, b.lv, b.lv_free, b.lvx, b.sides, b.pool, b.seg_free,
                           b.heaps, b.hp, b.fh, b.st)
            band[price] = lvl + 1
        b.lv[lvl, LV_QTY] += qty
        b.lv[lvl, LV_COUNT] += 1
        a = insert_order(book, key, lvl, qty, b.pages, b.page_dir, b.page_live, b.page_key, b.page_free,
                         b.ov_key, b.ov_val, b.ov_state, b.st)
        queue_push(lvl, a, qty, key, b.qn, b.lvx, b.pnode, b.ovnode, b.st)
        return
    add_order(book, side, price, key, qty, True, b.lv, b.lv_free, b.lvx, b.sides, b.pool, b.seg_free, b.heaps,
              b.hp, b.fh, b.pages, b.page_dir, b.page_live, b.page_key, b.page_free, b.ov_key, b.ov_val,
              b.ov_state, b.qn, b.pnode, b.ovnode, b.st)


@njit(cache=True, _nrt=False, inline="always")
def _cross(book, side, limit, qty, b):
    """Trade qty against the other side's best levels up to limit; the quantity left."""
    sd = book * 2 + 1 - side
    while qty > 0:
        n = b.sides[sd, 1]
        if n == 0:
            break
        lvl = b.pool[b.sides[sd, 0] + n - 1, 1]
        px = b.lv[lvl, LV_PRICE]
        if (side == 0 and px > limit) or (side == 1 and px < limit):
            break
        node = b.lvx[lvl, LX_HEAD]
        have = b.qn[node, Q_SHARES]
        a = find_order(book, b.qn[node, Q_REF], b.lv, b.pages, b.page_dir, b.ov_key, b.ov_state, b.st)
        q = qty if qty < have else have
        qty -= q
        _take(a, lvl, have, q, False, b)
    return qty


@njit(cache=True, _nrt=False)
def run(m, start, n, b, ks, checks, band):
    """Apply m[start:n]; 0, or 1 with st[ST_AT] at the instruction that needs room."""
    for i in range(start, n):
        book = np.int64(m[i]['book'])
        key = np.int64(m[i]['key'])
        op = np.int64(m[i]['op'])
        price = np.int64(m[i]['price'])
        qty = np.int64(m[i]['qty'])
        if checks and (level_room(book, b.sides, b.pool, b.heaps, b.hp, b.fh, b.lv, b.st) != 0 or
                       order_room(key, b.pages, b.page_dir, b.ov_key, b.qn, True, b.st) != 0):
            b.st[ST_AT] = i
            return 1
        action = op & 3
        if action == OP_CANCEL or action == OP_MODIFY:
            if ks[key] != LIVE:
                continue
            a = find_order(book, key, b.lv, b.pages, b.page_dir, b.ov_key, b.ov_state, b.st)
            lvl, have = entry_at(a, b.pages, b.ov_val)
            if action == OP_CANCEL:
                _take(a, lvl, have, have, True, b)
                ks[key] = DONE
                continue
            r = b.lv[lvl, LV_PRICE]
            side = b.lv[lvl, LV_OWNER] & 1
            nr = r if price < 0 else price
            nq = have if qty < 0 else qty
            if nr == r and nq <= have:           # keeps its place
                _take(a, lvl, have, have - nq, False, b)
                continue
            _take(a, lvl, have, have, True, b)   # cancel and replace
            left = _cross(book, side, nr, nq, b)
            if left > 0:
                _rest(book, side, nr, key, left, b, band)
            else:
                ks[key] = DONE
            continue
        if ks[key] != NEVER:
            continue
        side = (op >> SIDE_SHIFT) & 1
        tif = (op >> TIF_SHIFT) & 3
        market = (op & MARKET_BIT) != 0
        limit = price if not market else ((1 << 62) if side == 0 else -(1 << 62))
        left = _cross(book, side, limit, qty, b)
        if left == 0 or market or tif == TIF_IOC or tif == TIF_FOK:
            ks[key] = DONE
            continue
        ks[key] = LIVE
        _rest(book, side, price, key, left, b, band)
    return 0


def shared_book(m, warm, n, checks, price_cache=False):
    """(CPU ns per timed instruction, live orders, {(side, price): qty}) on the shared book."""
    from obook.engine.books import BookState

    size = 1 if checks else 1 << 16
    b = BookState(books=4, levels=max(64, size), pages=max(64, size >> 2), queue=True)
    b.qn = np.zeros((max(64, size), 4), np.int64)
    ks = np.zeros(len(m), np.int8)
    band = np.zeros(int(m['price'].max()) + 1 if price_cache else 1, np.int64)
    for s, e in ((0, warm), (warm, warm + n)):
        i = s
        c = time.thread_time_ns()
        while run(m, i, e, b.books(), ks, checks, band):
            i = int(b.st[ST_AT])
            b._grow(K.level_room(int(m[i]['book']), b.sides, b.pool, b.heaps, b.hp, b.fh, b.lv, b.st)
                    or K.order_room(int(m[i]['key']), b.pages, b.page_dir, b.ov_key, b.qn, True, b.st))
        dc = time.thread_time_ns() - c
    used = b.lv[: b.st[K.ST_LV_TOP]]
    used = used[(used[:, LV_OWNER] >= 0) & (used[:, 2] > 0)]
    depth = {(int(o & 1), int(p)): int(q) for p, q, _, o in used}
    return dc / n, int(b.st[K.ST_LIVE]), depth


def banded_book(msg, levels, warm, n):
    """The same through the matching engine's kernel (obook._kernels.match)."""
    from bench_match import fresh, positional

    from obook._kernels import match

    match_rows = positional(match)
    lv, od, ow, bk, st, fl, ev, qt, dq, ds = fresh(levels, len(msg), 0)
    args = (msg.rows, msg.owner, msg.clock)
    state = (lv, od, ow, bk, st, fl, ev, qt, dq, ds)
    assert match_rows(*args, 0, warm, 0, 0, 1, 16, *state) == 0
    c = time.thread_time_ns()
    assert match_rows(*args, warm, warm + n, 0, 0, 1, 16, *state) == 0
    dc = time.thread_time_ns() - c
    depth = {}
    for r in np.flatnonzero(lv["count"] > 0):
        o = lv["head"][r]
        side = (int(od["lv"][o]) >> 26) & 1
        depth[(side, int(r))] = int(lv["qty"][r])
    return dc / n, int(st[6]), depth


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=100_000)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--room-checks", action="store_true")
    ap.add_argument("--price-cache", action="store_true",
                    help="find a resting order's level through a price-indexed array, as the banded book does")
    a = ap.parse_args()
    from obook.gen.orders import seed_rows

    msg, _, levels = seed_rows(a.warmup + a.messages)
    shared_book(msg.rows, 1000, 1000, a.room_checks, a.price_cache)           # compile / load
    banded_book(msg, levels, 1000, 1000)
    shared, banded = [], []
    for r in range(a.repeats):
        runs = [("shared", lambda: shared_book(msg.rows, a.warmup, a.messages, a.room_checks, a.price_cache)),
                ("banded", lambda: banded_book(msg, levels, a.warmup, a.messages))]
        got = {}
        for name, f in runs if r % 2 == 0 else runs[::-1]:
            got[name] = f()
        assert got["shared"][1:] == got["banded"][1:], "the two books differ"
        shared.append(got["shared"][0])
        banded.append(got["banded"][0])
        print(f"repeat {r}: shared book {shared[-1]:.1f} ns, banded book {banded[-1]:.1f} ns "
              f"({got['shared'][1]:,} live orders, {len(got['shared'][2])} levels)", flush=True)
    print(f"median shared / banded: {statistics.median(s / b for s, b in zip(shared, banded)):.2f}x "
          f"(shared {statistics.median(shared):.1f} ns, banded {statistics.median(banded):.1f} ns a instruction)")


if __name__ == "__main__":
    main()
