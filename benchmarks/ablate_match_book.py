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
    python benchmarks/ablate_match_book.py --band i64,i32w4c-x32 [--repeats 5]

``--price-cache``: a rest finds its level through a price-indexed array (a cache in front
of the book's price search). ``--room-checks``: test for level / order room before every instruction, as a driver that
grows its arrays must (without it the arrays are allocated large enough up front).
``--band``: the same driver on the book's level arrays (lv, lvx) and queue nodes (qn)
indexed the matching engine's way instead (a level row per tick of the band, the order
key as the node's row, so no price search and no order index), in the variants of
``BAND_VARIANTS`` (node and lvx types, node columns, the widths as constants); every
variant and ``match_rows`` run in each repeat, in a rotating order.
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
from obook._kernels.book import (LV_COUNT, LV_OWNER, LV_PRICE, LV_QTY, LX_HEAD, LX_TAIL, Q_NEXT,  # noqa: E402
                                 Q_PREV, Q_REF, Q_SHARES, add_order, entry_at, find_order, insert_order, level_at, level_room,
                                 order_room, queue_push, take_shares)
from obook._kernels.hashtab import uindex as _u  # noqa: E402
from obook._kernels.jit import njit  # noqa: E402
from obook._kernels.prefetch import prefetch  # noqa: E402
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


# ---------------------------------------------------------------- a banded index on the same arrays
# The book's level arrays (lv / lvx: price, total, count, owner / -, head, tail, -) and
# queue nodes (qn: next, prev, shares, ref, [level]), indexed the matching engine's way:
# a level row per tick of the band (preallocated), the order key as the node's row. The
# arrays are passed flat (their memory as it is), column c of row i at i * width + c; the
# widths w = (lv, lvx, qn, bd) are run-time values as a 2-D array's are (``run_band``), or
# constants (``run_band_fixed``, 4-column nodes). A node's level row is its last column
# (with 4 columns, the ref's: the key is the row).
Q_NEVER, Q_DONE = -1, -2    # a node's level while it does not rest
BD_BEST, BD_N = 0, 2        # bd[book, BD_BEST + side]: best row (lo - 1 / hi + 1: none); BD_N + side: levels
BD_LO, BD_HI = 4, 5         # the book's first and last row
W_LV, W_LX, W_QN, W_BD = range(4)
FIXED_WIDTHS = (4, 4, 4, 8)


@njit(cache=True, _nrt=False, inline="always")
def _i(row, width, col):
    return _u(row * width + col)


@njit(cache=True, _nrt=False, inline="always")
def _q_append(lvl, node, shares, ref, qn, lvx, w):
    """Node at the back of level lvl's queue (as queue_push links it)."""
    tail = lvx[_i(lvl, w[W_LX], LX_TAIL)]
    qn[_i(node, w[W_QN], Q_NEXT)] = -1
    qn[_i(node, w[W_QN], Q_PREV)] = tail
    qn[_i(node, w[W_QN], Q_SHARES)] = shares
    qn[_i(node, w[W_QN], Q_REF)] = ref
    if tail >= 0:
        qn[_i(tail, w[W_QN], Q_NEXT)] = node
    else:
        lvx[_i(lvl, w[W_LX], LX_HEAD)] = node
    lvx[_i(lvl, w[W_LX], LX_TAIL)] = node


@njit(cache=True, _nrt=False, inline="always")
def _q_out(lvl, node, qn, lvx, w):
    """Node out of its level's queue (as _q_unlink takes it out; the node is not freed)."""
    p = qn[_i(node, w[W_QN], Q_PREV)]
    nx = qn[_i(node, w[W_QN], Q_NEXT)]
    if p >= 0:
        qn[_i(p, w[W_QN], Q_NEXT)] = nx
    else:
        lvx[_i(lvl, w[W_LX], LX_HEAD)] = nx
    if nx >= 0:
        qn[_i(nx, w[W_QN], Q_PREV)] = p
    else:
        lvx[_i(lvl, w[W_LX], LX_TAIL)] = p


@njit(cache=True, _nrt=False, inline="always")
def _band_rest(book, side, row, node, shares, lv, lvx, qn, bd, st, w):
    ql = w[W_QN] - 1
    _q_append(row, node, shares, row if ql == Q_REF else node, qn, lvx, w)
    qn[_i(node, w[W_QN], ql)] = row
    st[K.ST_LIVE] += 1
    lv[_i(row, w[W_LV], LV_QTY)] += shares
    n = lv[_i(row, w[W_LV], LV_COUNT)]
    lv[_i(row, w[W_LV], LV_COUNT)] = n + 1
    if n == 0:
        lv[_i(row, w[W_LV], LV_OWNER)] = book * 2 + side
        bd[_i(book, w[W_BD], BD_N + side)] += 1
        if (row - bd[_i(book, w[W_BD], BD_BEST + side)]) * (1 - 2 * side) > 0:
            bd[_i(book, w[W_BD], BD_BEST + side)] = row


@njit(cache=True, _nrt=False, inline="always")
def _band_gone(book, side, row, lv, bd, w):
    left = bd[_i(book, w[W_BD], BD_N + side)] - 1
    bd[_i(book, w[W_BD], BD_N + side)] = left
    if row == bd[_i(book, w[W_BD], BD_BEST + side)]:
        step = 1 - 2 * side
        if left == 0:
            bd[_i(book, w[W_BD], BD_BEST + side)] = bd[_i(book, w[W_BD], BD_LO + side)] - step
        else:
            row -= step
            while lv[_i(row, w[W_LV], LV_COUNT)] == 0:
                row -= step
            bd[_i(book, w[W_BD], BD_BEST + side)] = row


@njit(cache=True, _nrt=False, inline="always")
def _band_take(book, side, row, node, have, by, remove, lv, lvx, qn, bd, st, w):
    left = have - by
    lv[_i(row, w[W_LV], LV_QTY)] -= by
    if left == 0 or remove:
        lv[_i(row, w[W_LV], LV_QTY)] -= left
        _q_out(row, node, qn, lvx, w)
        qn[_i(node, w[W_QN], w[W_QN] - 1)] = Q_DONE
        st[K.ST_LIVE] -= 1
        n = lv[_i(row, w[W_LV], LV_COUNT)] - 1
        lv[_i(row, w[W_LV], LV_COUNT)] = n
        if n == 0:
            _band_gone(book, side, row, lv, bd, w)
        return
    qn[_i(node, w[W_QN], Q_SHARES)] = left


@njit(cache=True, _nrt=False, inline="always")
def _band_cross(book, side, limit, qty, lv, lvx, qn, bd, st, w):
    other = 1 - side
    sign = 1 - 2 * side
    while qty > 0:
        r = bd[_i(book, w[W_BD], BD_BEST + other)]
        if bd[_i(book, w[W_BD], BD_N + other)] == 0 or (r - limit) * sign > 0:
            break
        o = lvx[_i(r, w[W_LX], LX_HEAD)]
        have = np.int64(qn[_i(o, w[W_QN], Q_SHARES)])
        q = qty if qty < have else have
        qty -= q
        _band_take(book, other, r, o, have, q, False, lv, lvx, qn, bd, st, w)
    return qty


@njit(cache=True, _nrt=False, inline="always")
def _band_run(m, start, n, lv, lvx, qn, bd, st, pf, w):
    """Apply m[start:n] on the banded index (prices are rows, keys are nodes)."""
    ql = w[W_QN] - 1
    for i in range(start, n):
        if pf > 0:
            j = min(i + pf, n - 1)
            prefetch(qn, m[_u(j)]['key'] * w[W_QN])
            prefetch(lvx, max(m[_u(j)]['price'], 0) * w[W_LX])
        book = np.int64(m[_u(i)]['book'])
        key = np.int64(m[_u(i)]['key'])
        op = np.int64(m[_u(i)]['op'])
        price = np.int64(m[_u(i)]['price'])
        qty = np.int64(m[_u(i)]['qty'])
        action = op & 3
        if action == OP_CANCEL or action == OP_MODIFY:
            row = np.int64(qn[_i(key, w[W_QN], ql)])
            if row < 0:
                continue
            have = np.int64(qn[_i(key, w[W_QN], Q_SHARES)])
            side = lv[_i(row, w[W_LV], LV_OWNER)] & 1
            if action == OP_CANCEL:
                _band_take(book, side, row, key, have, have, True, lv, lvx, qn, bd, st, w)
                continue
            nr = row if price < 0 else price
            nq = have if qty < 0 else qty
            if nr == row and nq <= have:           # keeps its place
                _band_take(book, side, row, key, have, have - nq, False, lv, lvx, qn, bd, st, w)
                continue
            _band_take(book, side, row, key, have, have, True, lv, lvx, qn, bd, st, w)   # cancel and replace
            left = _band_cross(book, side, nr, nq, lv, lvx, qn, bd, st, w)
            if left > 0:
                _band_rest(book, side, nr, key, left, lv, lvx, qn, bd, st, w)
            continue
        if qn[_i(key, w[W_QN], ql)] != Q_NEVER:
            continue
        side = (op >> SIDE_SHIFT) & 1
        tif = (op >> TIF_SHIFT) & 3
        market = (op & MARKET_BIT) != 0
        limit = price if not market else ((1 << 62) if side == 0 else -(1 << 62))
        left = _band_cross(book, side, limit, qty, lv, lvx, qn, bd, st, w)
        if left == 0 or market or tif == TIF_IOC or tif == TIF_FOK:
            qn[_i(key, w[W_QN], ql)] = Q_DONE
            continue
        _band_rest(book, side, price, key, left, lv, lvx, qn, bd, st, w)


@njit(cache=True, _nrt=False)
def run_band(m, start, n, lv, lvx, qn, bd, st, pf, w):
    _band_run(m, start, n, lv, lvx, qn, bd, st, pf, w)


@njit(cache=True, _nrt=False)
def run_band_fixed(m, start, n, lv, lvx, qn, bd, st, pf):
    _band_run(m, start, n, lv, lvx, qn, bd, st, pf, FIXED_WIDTHS)


def band_index_book(m, levels, warm, n, nodes, width, links, pf, fixed):
    """(CPU ns per timed instruction, live orders, {(side, price): qty}) on the book's level
    arrays and queue nodes (``nodes``: their type, ``width`` columns; ``links``: lvx's type)
    with the banded index."""
    lv = np.zeros((levels, 4), np.int64)
    lv[:, LV_PRICE] = np.arange(levels)
    lv[:, LV_OWNER] = -1
    lvx = np.full((levels, 4), -1, links)
    qn = np.zeros((len(m), width), nodes)
    qn[:, width - 1] = Q_NEVER
    bd = np.zeros((1, 8), np.int64)
    bd[0, BD_LO], bd[0, BD_HI] = 0, levels - 1
    bd[0, BD_BEST], bd[0, BD_BEST + 1] = -1, levels
    st = np.zeros(K.ST_BOOK_WIDTH, np.int64)
    w = tuple(a.shape[1] for a in (lv, lvx, qn, bd))
    if fixed and w != FIXED_WIDTHS:
        raise ValueError(f"constant widths {FIXED_WIDTHS}, the arrays' are {w}")
    flat = (m, lv.ravel(), lvx.ravel(), qn.ravel(), bd.ravel(), st)
    for s, e in ((0, warm), (warm, warm + n)):
        c = time.thread_time_ns()
        if fixed:
            run_band_fixed(flat[0], s, e, *flat[1:], pf)
        else:
            run_band(flat[0], s, e, *flat[1:], pf, w)
        dc = time.thread_time_ns() - c
    used = lv[lv[:, LV_COUNT] > 0]
    depth = {(int(o & 1), int(p)): int(q) for p, q, _, o in used}
    return dc / n, int(st[K.ST_LIVE]), depth


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


#: --band variants: (queue nodes' type, their columns, lvx's type, widths as constants)
BAND_VARIANTS = {
    "i64": (np.int64, 5, np.int64, False),          # the book's types: int64 nodes with a level column
    "i32": (np.int32, 5, np.int64, False),          # int32 nodes
    "i32w4": (np.int32, 4, np.int64, False),        # int32 nodes, the level row in the ref's column
    "i32w4c": (np.int32, 4, np.int64, True),        # and the widths as constants
    "i32w4-x32": (np.int32, 4, np.int32, False),    # int32 lvx, the widths as run-time values
    "i32w4c-x32": (np.int32, 4, np.int32, True),    # and int32 lvx
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=100_000)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--room-checks", action="store_true")
    ap.add_argument("--price-cache", action="store_true",
                    help="find a resting order's level through a price-indexed array, as the banded book does")
    ap.add_argument("--band", default="",
                    help="instead of the book's price search and order index, the banded index on the book's "
                         f"arrays: comma-separated variants of {', '.join(BAND_VARIANTS)} (each against match_rows)")
    ap.add_argument("--prefetch", type=int, default=16, help="prefetch distance (--band; 0: none)")
    a = ap.parse_args()
    from obook.gen.orders import seed_rows

    msg, _, levels = seed_rows(a.warmup + a.messages)
    runs = {}
    for v in filter(None, a.band.split(",")):
        if v not in BAND_VARIANTS:
            raise SystemExit(f"--band: no variant {v!r} (variants: {', '.join(BAND_VARIANTS)})")
        runs[v] = (lambda v: lambda w, n: band_index_book(msg.rows, levels, w, n, *BAND_VARIANTS[v][:3], a.prefetch,
                                                           BAND_VARIANTS[v][3]))(v)
    if not runs:
        runs["shared"] = lambda w, n: shared_book(msg.rows, w, n, a.room_checks, a.price_cache)
    runs["banded"] = lambda w, n: banded_book(msg, levels, w, n)
    for f in runs.values():
        f(1000, 1000)                # compile / load
    names = list(runs)
    took = {name: [] for name in names}
    for r in range(a.repeats):       # every order of the runs in turn
        order = names[r % len(names):] + names[:r % len(names)]
        got = {name: runs[name](a.warmup, a.messages) for name in (order if r % 2 == 0 else order[::-1])}
        for name in names:
            assert got[name][1:] == got["banded"][1:], f"{name}: the two books differ"
            took[name].append(got[name][0])
        print(f"repeat {r}: " + ", ".join(f"{name} {got[name][0]:.1f} ns" for name in names) +
              f" ({got['banded'][1]:,} live orders, {len(got['banded'][2])} levels)", flush=True)
    for name in names[:-1]:
        ratio = statistics.median(s / b for s, b in zip(took[name], took["banded"]))
        print(f"median {name} / banded: {ratio:.3f}x ({name} {statistics.median(took[name]):.1f} ns, "
              f"banded {statistics.median(took['banded']):.1f} ns a instruction)")


if __name__ == "__main__":
    main()
