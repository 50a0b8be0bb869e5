"""The own-order simulation's feed events on the replay's book structures, against the
simulation's shadow book.

The simulation keeps a shadow of each tracked book (obook._kernels.simulate: the order hash
H keyed by (book, ref), per book side a sorted level array L with the feed's shares, the
consumed shares and the order count). This applies a captured feed event stream (a
generated ITCH day, decoded by the replay into its normalized events; the events of the
``--books`` busiest books) to:

- shadow: ``SimWorker.batch`` (obook.simulation.observer) with no own orders, i.e.
  ``sim_events`` -> ``feed_event`` -> ``take`` / ``put`` -> ``h_find`` / ``h_put`` /
  ``lv_find`` / ``lv_add`` / ``lv_drop``, the shadow's arrays grown on demand as the
  simulation grows them (its starting sizes);
- shared: a small driver here on ``obook._kernels.book`` (near segments and far heap, the
  paged order index, time-priority queue nodes: the shadow needs queue places) with the
  shadow's semantics for each action, the consumed shares of a level in ``lvx`` column 3
  (kept as the shadow keeps L_USED); book ids are the tracked books' (0..T-1).

Both must end with the same levels (resting shares, orders and consumed shares at each
(book, side, price)), the same live orders (side, price, shares) and, with queues, each
level's orders in the shadow's stamp order (checked every repeat). Thread CPU per event of
the whole stream from empty books (growth included), medians of the per-repeat ratios,
the variants alternating (their order rotated each repeat) after a warm-up run of each.

    python benchmarks/ablate_shadow_book.py [--books 1,8,64] [--repeats 5]
        [--messages 2000000] [--stocks 8000] [--feed PATH]

``shadow lean``: the shadow's arrays and ``feed_event`` driven by a loop here
(``shadow_events``: the tracked-book test and the shadow's hash / level room only), without
``sim_events``' other per-event bookkeeping. Variants of the shared book: ``shared`` (room
tested before every add / replace as the replay tests it, BookState's starting sizes,
grown on demand), ``prealloc`` (no room tests, every array allocated at its final size up
front), ``no queue`` (as ``shared``, time-priority queues off) and ``prefetch`` (as
``shared``, plus the replay driver's prefetch of the order's index entry and level a few
events ahead). Also printed: the returns to Python for room (array growth, the shadow
hash's rehashes) and their CPU.
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
from obook._kernels.book import (LEVEL_MASK, LV_COUNT, LV_OWNER, LV_PRICE, LV_QTY, LX_HEAD, Q_NEXT,  # noqa: E402
                                 Q_REF, _u, add_order, entry_at, find_order, level_room, order_room,
                                 page_addr, take_shares)
from obook._kernels.jit import njit  # noqa: E402
from obook._kernels.layout import (ACT_ADD, ACT_ADD_ZERO_OK, ACT_CANCEL, ACT_DELETE, ACT_EXEC,  # noqa: E402
                                   ACT_EXEC_CLAMP, ACT_MODIFY, ACT_REDUCE_TO, ACT_REPLACE, EV_ACTION,
                                   EV_BOOK, EV_NEWREF, EV_PRICE, EV_REF, EV_SHARES, FILLED)
from obook._kernels.prefetch import prefetch  # noqa: E402
from obook._kernels.simulate import feed_event, h_drop, h_find, h_put  # noqa: E402
from obook._kernels.simulate_layout import H_SHARES, ROOM_HASH, ROOM_LEVELS, ST_USED  # noqa: E402

LX_USED = 3          # lvx's unused column: the level's consumed shares (the shadow's L_USED)
AHEAD = 8            # --prefetch: events ahead


# ---------------------------------------------------------------- the shared book's driver


@njit(cache=True, _nrt=False, inline="always")
def _take(a, lvl, have, x, is_exec, remove, b, queue):
    """The shadow's ``take`` on the shared book: order at address a (level lvl, ``have``
    shares) loses x shares (an execution or not), removed when ``remove`` or at 0; its
    level keeps consumed <= shares."""
    used = b.lvx[lvl, LX_USED]
    if is_exec:
        used -= min(used, x)
    left = b.lv[lvl, LV_QTY] - (have if remove or x == have else x)
    b.lvx[lvl, LX_USED] = min(used, left)
    take_shares(a, lvl, have, 0 if remove else x, remove, b.lv, b.lv_free, b.lvx, b.sides, b.pool, b.heaps,
                b.hp, b.fh, b.pages, b.page_dir, b.page_live, b.page_key, b.page_free, b.ov_val, b.ov_state,
                queue, b.qn, b.pnode, b.ovnode, b.st)


@njit(cache=True, _nrt=False, inline="always")
def _put(tb, side, price, ref, shares, b, queue):
    """A feed order joins the back of its level (a new level: nothing consumed)."""
    lvl, _node = add_order(tb, side, price, ref, shares, queue, b.lv, b.lv_free, b.lvx, b.sides, b.pool,
                           b.seg_free, b.heaps, b.hp, b.fh, b.pages, b.page_dir, b.page_live, b.page_key,
                           b.page_free, b.ov_key, b.ov_val, b.ov_state, b.qn, b.pnode, b.ovnode, b.st)
    if lvl >= 0 and b.lv[lvl, LV_COUNT] == 1:
        b.lvx[lvl, LX_USED] = 0


@njit(cache=True, _nrt=False, inline="always")
def _drop(tb, ref, b, queue):
    """(tb, ref) leaves if live (an add of a live ref, a replace's new ref)."""
    a = find_order(tb, ref, b.lv, b.pages, b.page_dir, b.ov_key, b.ov_state, b.st)
    if a != -1:
        lvl, have = entry_at(a, b.pages, b.ov_val)
        _take(a, lvl, have, 0, False, True, b, queue)


@njit(cache=True, _nrt=False)
def shared_events(ev, i, n, tmap, b, checks, queue, ahead):
    """Apply ev[i:n] as ``simulate.feed_event`` does (no own orders). Returns (0, n), or
    (ROOM_*, the event to resume at) when ``checks`` finds an array to grow first."""
    for i in range(i, n):
        if ahead:                      # the replay driver's prefetch, one step
            j = i + AHEAD
            if j < n:
                pa = page_addr(ev[j, EV_REF], b.page_dir, b.st)
                if pa >= 0:
                    prefetch(b.pages, pa)
                    e = b.pages[_u(pa)]
                    if e != 0:
                        prefetch(b.lv, ((e & LEVEL_MASK) - 1) * 4)
        bk = ev[i, EV_BOOK]
        if bk >= tmap.shape[0] or tmap[bk] < 0:
            continue
        tb = tmap[bk]
        word = ev[i, EV_ACTION]
        act = word & 0xFF
        side = (word >> 8) & 1
        ref, shares, price = ev[i, EV_REF], ev[i, EV_SHARES], ev[i, EV_PRICE]
        if checks and (act == ACT_ADD or act == ACT_ADD_ZERO_OK or act == ACT_REPLACE or act == ACT_MODIFY):
            room = level_room(tb, b.sides, b.pool, b.heaps, b.hp, b.fh, b.lv, b.st)
            if room == 0:
                room = order_room(ev[i, EV_NEWREF] if act == ACT_REPLACE else ref, b.pages, b.page_dir,
                                  b.ov_key, b.qn, queue, b.st)
            if room != 0:
                return room, i
        if act == ACT_ADD or act == ACT_ADD_ZERO_OK:
            if act == ACT_ADD and shares == 0:
                continue
            _drop(tb, ref, b, queue)
            _put(tb, side, price, ref, shares, b, queue)
            continue
        a = find_order(tb, ref, b.lv, b.pages, b.page_dir, b.ov_key, b.ov_state, b.st)
        if a == -1:
            if act == ACT_MODIFY and shares > 0:
                _put(tb, side, price, ref, shares, b, queue)
            continue
        lvl, have = entry_at(a, b.pages, b.ov_val)
        if act == ACT_EXEC or act == ACT_EXEC_CLAMP:
            _take(a, lvl, have, min(shares, have), True, False, b, queue)
        elif act == ACT_CANCEL:        # (the shadow's printed shares: no prints in this stream)
            _take(a, lvl, have, min(shares, have), False, False, b, queue)
        elif act == ACT_REDUCE_TO:
            if shares < have:
                _take(a, lvl, have, have - shares, False, False, b, queue)
        elif act == ACT_DELETE:
            _take(a, lvl, have, have, (word & FILLED) != 0, True, b, queue)
        elif act == ACT_REPLACE:
            side = b.lv[lvl, LV_OWNER] & 1
            _take(a, lvl, have, have, False, True, b, queue)
            _drop(tb, ev[i, EV_NEWREF], b, queue)
            _put(tb, side, price, ev[i, EV_NEWREF], shares, b, queue)
        elif act == ACT_MODIFY:
            side = b.lv[lvl, LV_OWNER] & 1
            if price == b.lv[lvl, LV_PRICE] and shares <= have:
                _take(a, lvl, have, have - shares, False, shares == 0, b, queue)
            else:
                _take(a, lvl, have, have, False, True, b, queue)
                if shares > 0:
                    _put(tb, side, price, ref, shares, b, queue)
    return 0, n


@njit(cache=True, _nrt=False)
def shadow_events(ev, i, n, tmap, books, at):
    """``sim_events``' loop without its per-event bookkeeping (own instructions to come,
    output room, position, time): the tracked-book test, the shadow's room (hash, levels)
    and ``feed_event``. Returns (0, n) or (1, the event to resume at)."""
    H, L, nl, INS, MID, OO, BK, FL, EV, st = books
    for i in range(i, n):
        bk = ev[i, EV_BOOK]
        if bk >= tmap.shape[0] or tmap[bk] < 0:
            continue
        tb = tmap[bk]
        if 2 * st[ST_USED] + 8 > H.shape[0] or max(nl[2 * tb], nl[2 * tb + 1]) + 2 > L.shape[1]:
            return 1, i
        feed_event(ev[i], H, L, nl, OO, BK, FL, EV, st, at, tb)
    return 0, n


# ---------------------------------------------------------------- --parts: the order index alone


@njit(cache=True, _nrt=False)
def shadow_index(ev, i, n, tmap, H, st):
    """The shadow's order hash alone (no levels): each event's h_find / h_put / h_drop."""
    for i in range(i, n):
        bk = ev[i, EV_BOOK]
        if bk >= tmap.shape[0] or tmap[bk] < 0:
            continue
        if 2 * st[ST_USED] + 8 > H.shape[0]:
            return 1, i
        act = ev[i, EV_ACTION] & 0xFF
        ref, shares = ev[i, EV_REF], ev[i, EV_SHARES]
        slot = h_find(H, bk, ref)
        if act == ACT_ADD:
            if slot >= 0:
                h_drop(H, st, slot)
            h_put(H, st, bk, ref, 0, 0, shares)
        elif slot >= 0:
            have = H[slot, H_SHARES]
            if act == ACT_EXEC or act == ACT_CANCEL:
                H[slot, H_SHARES] -= min(shares, have)
                if H[slot, H_SHARES] == 0:
                    h_drop(H, st, slot)
            else:
                h_drop(H, st, slot)
                if act == ACT_REPLACE:
                    nref = ev[i, EV_NEWREF]
                    old = h_find(H, bk, nref)
                    if old >= 0:
                        h_drop(H, st, old)
                    h_put(H, st, bk, nref, 0, 0, shares)
    return 0, n


@njit(cache=True, _nrt=False)
def shared_index(ev, i, n, tmap, b):
    """The shared book's paged order index alone: every order of book tb on level tb
    (made by the caller), each event's find_order / insert_order / remove_order."""
    for i in range(i, n):
        bk = ev[i, EV_BOOK]
        if bk >= tmap.shape[0] or tmap[bk] < 0:
            continue
        tb = tmap[bk]
        act = ev[i, EV_ACTION] & 0xFF
        ref, shares = ev[i, EV_REF], ev[i, EV_SHARES]
        if act == ACT_ADD or act == ACT_REPLACE:
            room = order_room(ev[i, EV_NEWREF] if act == ACT_REPLACE else ref, b.pages, b.page_dir, b.ov_key,
                              b.qn, False, b.st)
            if room != 0:
                return room, i
        a = find_order(tb, ref, b.lv, b.pages, b.page_dir, b.ov_key, b.ov_state, b.st)
        if act == ACT_ADD:
            if a != -1:
                K.remove_order(a, b.pages, b.page_dir, b.page_live, b.page_key, b.page_free, b.ov_state, b.st)
            K.insert_order(tb, ref, tb, shares, b.pages, b.page_dir, b.page_live, b.page_key, b.page_free,
                           b.ov_key, b.ov_val, b.ov_state, b.st)
        elif a != -1:
            _lvl, have = entry_at(a, b.pages, b.ov_val)
            x = min(shares, have)
            if (act == ACT_EXEC or act == ACT_CANCEL) and x < have:
                if a >= 0:
                    b.pages[a] = ((have - x) << K.LEVEL_BITS) | (tb + 1)
                else:
                    b.ov_val[-2 - a, 1] = have - x
            else:
                K.remove_order(a, b.pages, b.page_dir, b.page_live, b.page_key, b.page_free, b.ov_state, b.st)
                if act == ACT_REPLACE:
                    nref = ev[i, EV_NEWREF]
                    old = find_order(tb, nref, b.lv, b.pages, b.page_dir, b.ov_key, b.ov_state, b.st)
                    if old != -1:
                        K.remove_order(old, b.pages, b.page_dir, b.page_live, b.page_key, b.page_free,
                                       b.ov_state, b.st)
                    K.insert_order(tb, nref, tb, shares, b.pages, b.page_dir, b.page_live, b.page_key,
                                   b.page_free, b.ov_key, b.ov_val, b.ov_state, b.st)
    return 0, n


def index_run(ev, tmap, nt, which):
    """(CPU ns per event, live orders) of the order index alone."""
    if which == "shadow":
        from obook._kernels.simulate_layout import H_WIDTH, ST_LIVE, ST_WIDTH
        from obook.simulation.observer import HASH
        from obook._kernels.simulate import h_grown

        H, st = np.zeros((HASH, H_WIDTH), np.int64), np.zeros(ST_WIDTH, np.int64)
        i, n = 0, len(ev)
        c = time.thread_time_ns()
        while True:
            room, i = shadow_index(ev, i, n, tmap, H, st)
            if room == 0:
                break
            H = h_grown(H, st)
        return (time.thread_time_ns() - c) / n, int(st[ST_LIVE])
    s = _shared_state(nt, False)
    s.lv[:nt, LV_OWNER] = 2 * np.arange(nt)        # level tb: book tb's
    s.st[K.ST_LV_TOP] = nt
    i, n = 0, len(ev)
    c = time.thread_time_ns()
    while True:
        room, i = shared_index(ev, i, n, tmap, s.books())
        if room == 0:
            break
        s._grow(room)
    return (time.thread_time_ns() - c) / n, int(s.st[K.ST_LIVE])


# ---------------------------------------------------------------- the two runs


class Grows:
    """Counts an object's ``_grow`` calls (the returns to Python for room) and their CPU."""

    def __init__(self, obj):
        self.n, self.ns, self.grow = 0, 0, obj._grow
        obj._grow = self

    def __call__(self, room):
        c = time.thread_time_ns()
        self.grow(room)
        self.ns += time.thread_time_ns() - c
        self.n += 1


def _shared_state(nt, queue, like=None):
    from obook.engine.books import BookState

    s = BookState(books=nt, queue=queue)
    if like is not None:               # every array at its size after a whole run
        for name in K.Books._fields:
            if name not in ("seg_free", "st"):
                old = getattr(like, name)
                setattr(s, name, np.zeros_like(old))
    return s


def shared_run(ev, tmap, nt, queue, checks, ahead=False, like=None):
    """(CPU ns per event, the BookState)."""
    s = _shared_state(nt, queue, like)
    s.grows = Grows(s)
    i, n = 0, len(ev)
    c = time.thread_time_ns()
    while True:
        room, i = shared_events(ev, i, n, tmap, s.books(), checks, queue, ahead)
        if room == 0:
            break
        s._grow(room)
    dc = time.thread_time_ns() - c
    return dc / n, s


def shadow_run(ev, names, tmap=None):
    """(CPU ns per event, the SimWorker): the simulation's worker, no own orders; with
    ``tmap``, its arrays driven by ``shadow_events`` instead of ``batch`` (``sim_events``)."""
    from obook._kernels.simulate_layout import I_WIDTH
    from obook.simulation.observer import SimObserver
    from obook.simulation.prepare import Own

    nt = len(names)
    own = Own(np.zeros((0, I_WIDTH), np.int64), [t for _, t in names], np.zeros(1, np.int64),
              np.zeros((nt, 2), np.int64), np.zeros(0, np.int64), 0)
    w = SimObserver(own, want_bbo=False, day_end=False).worker(0, 1)
    w.grows = Grows(w)
    n = len(ev)
    c = time.thread_time_ns()
    if tmap is None:
        w.batch(ev, n, names)
    else:
        i = 0
        while True:
            room, i = shadow_events(ev, i, n, tmap, w._books(), w.at)
            if room == 0:
                break
            w._grow(ROOM_HASH if 2 * w.st[ST_USED] + 8 > w.H.shape[0] else ROOM_LEVELS)
    dc = time.thread_time_ns() - c
    return dc / n, w


# ---------------------------------------------------------------- the same books


def _shadow_state(w, books):
    from obook._kernels.hashtab import LIVE
    from obook._kernels.simulate_layout import (H_BOOK, H_PRICE, H_REF, H_SHARES, H_SIDE, H_STAMP, H_STATE,
                                                L_COUNT, L_KEY, L_QTY, L_USED)

    tb_of = {b: tb for tb, b in enumerate(books)}
    levels = {}
    for row in range(w.L.shape[0]):
        for j in range(int(w.nl[row])):
            k, q, u, c = (int(x) for x in w.L[row, j, [L_KEY, L_QTY, L_USED, L_COUNT]])
            side = row & 1
            levels[(row >> 1, side, k if side == 0 else -k)] = (q, c, u)
    H = w.H[(w.H[:, H_STATE] == LIVE) & (w.H[:, H_BOOK] >= 0)]
    orders = {(tb_of[int(r[H_BOOK])], int(r[H_REF])): (int(r[H_SIDE]), int(r[H_PRICE]), int(r[H_SHARES]))
              for r in H}
    queues = {}
    for r in H[np.argsort(H[:, H_STAMP], kind="stable")]:
        queues.setdefault((tb_of[int(r[H_BOOK])], int(r[H_SIDE]), int(r[H_PRICE])), []).append(int(r[H_REF]))
    return levels, orders, queues


def _shared_state_of(s, orders, queue):
    used = np.flatnonzero(s.lv[: s.st[K.ST_LV_TOP], LV_OWNER] >= 0)
    levels, queues = {}, {}
    for lvl in used:
        p, q, c, o = (int(x) for x in s.lv[lvl])
        key = (o >> 1, o & 1, p)
        levels[key] = (q, c, int(s.lvx[lvl, LX_USED]))
        if queue:
            refs, node = [], int(s.lvx[lvl, LX_HEAD])
            while node >= 0:
                refs.append(int(s.qn[node, Q_REF]))
                node = int(s.qn[node, Q_NEXT])
            queues[key] = refs
    got = {}
    for tb, ref in orders:          # the shadow's live orders, looked up in the shared book
        a = find_order(tb, ref, s.lv, s.pages, s.page_dir, s.ov_key, s.ov_state, s.st)
        if a != -1:
            lvl, have = entry_at(a, s.pages, s.ov_val)
            got[(tb, ref)] = (int(s.lv[lvl, LV_OWNER]) & 1, int(s.lv[lvl, LV_PRICE]), int(have))
    return levels, got, int(s.st[K.ST_LIVE]), queues


def check_same(w, s, books, queue):
    levels, orders, queues = _shadow_state(w, books)
    slevels, sorders, live, squeues = _shared_state_of(s, orders, queue)
    assert levels == slevels, "the levels differ"
    assert orders == sorders and live == len(orders), "the live orders differ"
    if queue:
        assert queues == squeues, "the queues differ"
    return len(levels), len(orders)


# ---------------------------------------------------------------- the stream


def capture(path):
    """Every normalized event of the feed (the replay's decoder and books, one worker) and
    {local book: ticker}."""
    from obook.engine.replay import Replay

    class Capture:
        def __init__(self):
            self.parts, self.names = [], {}

        def worker(self, worker, n_workers):
            return self

        def batch(self, events, n, names):
            self.parts.append(events[:n].copy())
            for book, ticker, *_ in names:
                self.names[book] = ticker

        def finish(self):
            return None

    c = Capture()
    for _ in Replay(path, workers=1, observer=c, rows=False).table_batches():
        pass
    return np.concatenate(c.parts), c.names


def tracked(ev, names, nt):
    """The events of the nt busiest books, tmap (book -> 0..nt-1) and [(book, ticker)]."""
    books, counts = np.unique(ev[:, EV_BOOK], return_counts=True)
    top = books[np.argsort(-counts, kind="stable")[:nt]]
    sub = ev[np.isin(ev[:, EV_BOOK], top)]
    tmap = np.full(int(ev[:, EV_BOOK].max()) + 1, -1, np.int64)
    tmap[top] = np.arange(len(top))
    return np.ascontiguousarray(sub), tmap, [(int(b), names[int(b)]) for b in top]


def mix(ev):
    names = {ACT_ADD: "add", ACT_EXEC: "exec", ACT_CANCEL: "cancel", ACT_DELETE: "delete",
             ACT_REPLACE: "replace"}
    act, cnt = np.unique(ev[:, EV_ACTION] & 0xFF, return_counts=True)
    assert set(act.tolist()) <= set(names), f"actions this driver does not mirror: {act}"
    return ", ".join(f"{names[a]} {100 * c / len(ev):.0f}%" for a, c in zip(act.tolist(), cnt))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--books", default="1,8,64")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--feed", help="a feed file instead of the generated ITCH day")
    ap.add_argument("--parts", action="store_true",
                    help="also time each side's order index alone (the shadow's hash, the paged index)")
    a = ap.parse_args()
    if a.feed:
        path = a.feed
    else:
        from common import itch_day
        path = itch_day(a.messages, a.stocks)
    ev_all, names = capture(path)
    print(f"{path}: {len(ev_all):,} events, {len(names)} books")
    for nt in (int(x) for x in a.books.split(",")):
        ev, tmap, tnames = tracked(ev_all, names, nt)
        books = [b for b, _ in tnames]
        # a warm-up run of each (compile / load, growth paths included); the final sizes
        # for the preallocated variant
        shadow_run(ev, tnames)
        shadow_run(ev, tnames, tmap)
        _, grown = shared_run(ev, tmap, nt, True, True)
        for q, ahead in ((False, False), (True, True)):
            shared_run(ev, tmap, nt, q, True, ahead)
        shared_run(ev, tmap, nt, True, False, like=grown)
        runs = {
            "shadow": lambda: shadow_run(ev, tnames),
            "shadow lean": lambda: shadow_run(ev, tnames, tmap),
            "shared": lambda: shared_run(ev, tmap, nt, True, True),
            "prealloc": lambda: shared_run(ev, tmap, nt, True, False, like=grown),
            "no queue": lambda: shared_run(ev, tmap, nt, False, True),
            "prefetch": lambda: shared_run(ev, tmap, nt, True, True, ahead=True),
        }
        if a.parts:
            for k in ("shadow", "shared"):
                index_run(ev, tmap, nt, k)
            runs["shadow index"] = lambda: index_run(ev, tmap, nt, "shadow")
            runs["shared index"] = lambda: index_run(ev, tmap, nt, "shared")
        order = list(runs)
        ns = {k: [] for k in runs}
        print(f"{nt} book(s): {len(ev):,} events ({mix(ev)})", flush=True)
        for r in range(a.repeats):
            got = {}
            for k in order[r % len(order):] + order[: r % len(order)]:
                got[k] = runs[k]()
                ns[k].append(got[k][0])
            for k in runs:
                if not k.startswith("shadow") and not k.endswith("index"):
                    nlev, nord = check_same(got["shadow"][1], got[k][1], books, k != "no queue")
            print(f"  repeat {r}: " + ", ".join(f"{k} {ns[k][-1]:.1f}" for k in runs)
                  + f" ns/event ({nlev} levels, {nord:,} live orders at the end: same)", flush=True)
            assert _shadow_state(got["shadow lean"][1], books) == _shadow_state(got["shadow"][1], books)
            gr = {k: got[k][1].grows for k in runs if not k.endswith("index")}
            if a.parts:
                assert got["shadow index"][1] == got["shared index"][1] == len(_shadow_state(got["shadow"][1], books)[1])
        med = {k: statistics.median(v) for k, v in ns.items()}
        print("  median ns/event: " + ", ".join(f"{k} {med[k]:.1f}" for k in runs))
        print("  returns for room (last repeat): " + ", ".join(
            f"{k} {g.n} ({g.ns / len(ev):.1f} ns/event)" for k, g in gr.items()))
        print("  median ratio to shadow: " + ", ".join(
            f"{k} {statistics.median(x / y for x, y in zip(ns[k], ns['shadow'])):.2f}x"
            for k in runs if k != "shadow"), flush=True)


if __name__ == "__main__":
    main()
