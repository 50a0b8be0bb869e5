"""Price levels beyond the near segment (NEAR_MAX): the far heap and hash, refills, and the
top of book and depth they feed, against a plain dict book; kernel compiled and .py_func."""

import numpy as np
import pytest

from obook._kernels import book as K
from obook._kernels import replay
from obook._kernels.layout import (ACT_ADD, ACT_CANCEL, ACT_DELETE, ACT_EXEC, ACT_MODIFY,
                                   ACT_REPLACE, EV_WIDTH, OK, ROW_WIDTH, WANT_DEPTH, WANT_ORDERS,
                                   WANT_QUEUE)
from obook.engine.books import BookState, ExtraRows

LEVELS = 50


def reference(events):
    """(bbo rows, depth rows) of a dict book: ref -> [side, price, shares], one book."""
    book, bbo, depth = {}, [], []
    last = None
    last_depth = None
    for seq, act, side, ref, shares, price, new_ref in events:
        if act == ACT_ADD:
            book[ref] = [side, price, shares]
        elif act in (ACT_EXEC, ACT_CANCEL):
            book[ref][2] -= shares
            if book[ref][2] == 0:
                del book[ref]
        elif act == ACT_DELETE:
            del book[ref]
        elif act == ACT_REPLACE:
            s = book.pop(ref)[0]
            book[new_ref] = [s, price, shares]
        elif act == ACT_MODIFY:
            if shares == 0:
                del book[ref]
            else:
                book[ref][1:] = [price, shares]
        sides = []
        for s, best in ((0, max), (1, min)):
            agg = {}
            for os_, px, sh in book.values():
                if os_ == s:
                    a = agg.setdefault(px, [0, 0])
                    a[0] += sh
                    a[1] += 1
            prices = sorted(agg, reverse=s == 0)[:LEVELS]
            sides.append([(p, agg[p][0], agg[p][1]) for p in prices] + [(-1, -1, 0)] * (LEVELS - len(prices)))
        top = sides[0][0] + sides[1][0]
        if last is None or (top[0], top[1], top[3], top[4]) != (last[0], last[1], last[3], last[4]):
            if not (last is None and top == (-1, -1, 0, -1, -1, 0)):
                bbo.append((seq,) + top)
        last = top
        flat = tuple(x for s in sides for lvl in s for x in lvl)
        if flat != (last_depth or tuple([-1, -1, 0] * 2 * LEVELS)):
            depth.append((seq,) + flat)
        last_depth = flat
    return bbo, depth


def flow(seed, n, spread):
    """Adds over `spread` prices a side, executions of the best order, cancels and deletes of
    random orders, replaces and modifies: many more levels than NEAR_MAX."""
    rng = np.random.default_rng(seed)
    live, out, ref = {}, [], 0
    for seq in range(1, n + 1):
        r = rng.random()
        if not live or r < 0.5:
            ref += 1
            side = int(rng.integers(2))
            price = 100_000 + (int(rng.integers(spread)) if side else -int(rng.integers(spread)))
            live[ref] = [side, price, int(rng.integers(1, 9)) * 100]
            out.append((seq, ACT_ADD, side, ref, live[ref][2], price, 0))
            continue
        keys = list(live)
        k = keys[int(rng.integers(len(keys)))]
        side, price, shares = live[k]
        if r < 0.62:                                      # execute the best order of a side
            s = int(rng.integers(2))
            best = [(p, kk) for kk, (ss, p, _) in live.items() if ss == s]
            if not best:
                continue
            k = (max if s == 0 else min)(best)[1]
            take = min(live[k][2], 100 * int(rng.integers(1, 4)))
            live[k][2] -= take
            if live[k][2] == 0:
                del live[k]
            out.append((seq, ACT_EXEC, 0, k, take, 0, 0))
        elif r < 0.75:
            del live[k]
            out.append((seq, ACT_DELETE, 0, k, 0, 0, 0))
        elif r < 0.82:
            take = min(shares, 100)
            live[k][2] -= take
            if live[k][2] == 0:
                del live[k]
            out.append((seq, ACT_CANCEL, 0, k, take, 0, 0))
        elif r < 0.9:
            ref += 1
            del live[k]
            np_ = price + int(rng.integers(-5, 6))
            live[ref] = [side, np_, 100]
            out.append((seq, ACT_REPLACE, 0, k, 100, np_, ref))
        else:
            np_ = price + int(rng.integers(-3, 4))
            sh = int(rng.integers(0, 4)) * 100
            if sh == 0:
                del live[k]
            else:
                live[k][1:] = [np_, sh]
            out.append((seq, ACT_MODIFY, 0, k, sh, np_, 0))
    return out


def engine(events, kernel, **sizes):
    ev = np.zeros((len(events), EV_WIDTH), np.int64)
    for i, (seq, act, side, ref, shares, price, new_ref) in enumerate(events):
        ev[i, :8] = (seq, seq * 10, 3, act | (side << 8), ref, shares, price, new_ref)
    b = BookState(kernel=kernel, **sizes)
    x = ExtraRows(WANT_DEPTH | WANT_ORDERS | WANT_QUEUE, 1, LEVELS)
    rows = np.zeros((1, ROW_WIDTH), np.int64)
    status, i, n = b.apply(ev, len(ev), rows, x)
    assert status == OK, (status, i)
    bbo = [(int(r[0]),) + tuple(int(v) for v in r[3:]) for r in b.out_rows[:n]]
    depth = [(int(r[0]),) + tuple(int(v) for v in r[3:]) for r in x.depth[:x.counts[2]]]
    return bbo, depth, b


@pytest.mark.parametrize("seed,spread", [(1, 400), (2, 2000), (3, 150)])
def test_levels_far_from_touch_match_dict_book(seed, spread):
    events = flow(seed, 6000, spread)
    bbo, depth, b = engine(events, replay.replay_events, books=4, levels=8)
    assert b.st[K.ST_HP_TOP] > 0                              # far levels were used
    assert (bbo, depth) == reference(events)


def test_levels_far_from_touch_py_func_same_rows():
    events = flow(4, 1500, 600)
    assert engine(events, replay.replay_events.py_func)[:2] == reference(events)


def test_levels_sweep_of_a_thousand_refills_near_segment():
    n = 1200                                                  # bids at 1,200 prices (NEAR_MAX: 128), worst first
    events = [(i + 1, ACT_ADD, 0, i + 1, 100, 50_000 - i, 0) for i in range(n)]
    events += [(n + i + 1, ACT_EXEC, 0, i + 1, 100, 0, 0) for i in range(n)]   # best first
    bbo, depth, b = engine(events, replay.replay_events)
    assert (bbo, depth) == reference(events)
    assert b.live_orders == 0 and b.sides[6, 1] == 0 and b.sides[6, 3] == 0
    assert b.st[K.ST_FH_USED] == 0
