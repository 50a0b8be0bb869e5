"""obook._kernels.simulate's own price lists (the kernels' one hash table, hashtab, on the
list table's columns; growth keeps the size when tombstones, not live lists, fill it) and
its reads of the shadow book's levels."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels import book as BK
from obook._kernels import simulate as K
from obook._kernels.simulate_layout import H_COUNT, H_FIRST, H_LAST, H_WIDTH, ST_LIVE, ST_USED, ST_WIDTH
from obook.simulation.observer import shadow_book


def _kernels(compiled: bool):
    if compiled:
        return K.h_put, K.h_find, K.h_drop
    return K.h_put.py_func, K.h_find.py_func, K.h_drop.py_func


@pytest.mark.parametrize("compiled", [True, False])
def test_simulate_price_lists_put_find_drop_keeps_counts(compiled):
    put, find, drop = _kernels(compiled)
    H, st = np.zeros((64, H_WIDTH), np.int64), np.zeros(ST_WIDTH, np.int64)
    slots = {(sd, px): put(H, st, sd, px) for sd in (0, 3, 6) for px in range(1, 8)}
    assert len(set(slots.values())) == 21 and st[ST_LIVE] == st[ST_USED] == 21
    for (sd, px), s in slots.items():
        assert find(H, sd, px) == s
        assert (H[s, H_FIRST], H[s, H_LAST], H[s, H_COUNT]) == (-1, -1, 0)
    assert find(H, 1, 1) == -1 and find(H, 0, 9) == -1
    drop(H, st, slots[(3, 4)])
    assert find(H, 3, 4) == -1 and st[ST_LIVE] == 20 and st[ST_USED] == 21     # a tombstone stays counted
    s = put(H, st, 3, 4)
    assert find(H, 3, 4) == s and st[ST_LIVE] == 21


def test_simulate_price_lists_grown_keeps_size_when_tombstones_fill_it():
    H, st = np.zeros((64, H_WIDTH), np.int64), np.zeros(ST_WIDTH, np.int64)
    for px in range(28):
        H[K.h_put(H, st, 0, px), H_COUNT] = px
    for px in range(24):
        K.h_drop(H, st, K.h_find(H, 0, px))
    new = K.h_grown(H, st)
    assert new.shape == H.shape and st[ST_USED] == st[ST_LIVE] == 4
    assert [int(new[K.h_find(new, 0, px), H_COUNT]) for px in range(24, 28)] == [24, 25, 26, 27]
    assert all(K.h_find(new, 0, px) == -1 for px in range(24))


def test_simulate_price_lists_grown_doubles_when_a_quarter_is_live():
    H, st = np.zeros((64, H_WIDTH), np.int64), np.zeros(ST_WIDTH, np.int64)
    for px in range(28):
        H[K.h_put(H, st, 5, px), H_COUNT] = px
    new = K.h_grown(H, st)
    assert new.shape == (128, H_WIDTH) and st[ST_USED] == st[ST_LIVE] == 28
    assert all(new[K.h_find(new, 5, px), H_COUNT] == px for px in range(28))


def _shadow(orders):
    """A shadow book of one tracked book with orders (side, price, shares), grown as the
    kernels ask."""
    b = shadow_book(1, 2)
    for ref, (side, price, shares) in enumerate(orders, 1):
        while room := BK.level_room(0, b.sides, b.pool, b.heaps, b.hp, b.fh, b.lv, b.st) \
                or BK.order_room(ref, b.pages, b.page_dir, b.ov_key, b.qn, True, b.st):
            b.grow(room)
        BK.add_order(0, side, price, ref, shares, True, *b.books())
    return b


@pytest.mark.parametrize("compiled", [True, False])
def test_simulate_side_levels_deep_book_best_first_past_the_near_levels(compiled):
    """side_levels walks a side best first, also past the levels kept next to the touch
    (the far ones): prices, shares and order counts as a sort of the orders gives them."""
    levels = K.side_levels if compiled else K.side_levels.py_func
    rng = np.random.default_rng(7)
    prices = rng.choice(np.arange(1_000, 5_000), 2 * BK.NEAR_MAX + 40, replace=False)
    orders = [(int(p) % 2, int(p), int(rng.integers(1, 90))) for p in prices]
    orders += orders[:50]                           # a second order at some levels
    b = _shadow(orders)
    assert b.sides[0, 3] > 0 and b.sides[1, 3] > 0     # both sides have far levels
    for side in (0, 1):
        want: dict = {}
        for s, p, q in orders:
            if s == side:
                shares, n = want.get(p, (0, 0))
                want[p] = (shares + q, n + 1)
        best_first = sorted(want, reverse=side == 0)
        out = np.zeros((len(want) + 5, 3), np.int64)
        n = levels(b.books(), side, out)
        assert n == len(want)
        assert [tuple(r) for r in out[:n].tolist()] == [(p, *want[p]) for p in best_first]
        top = np.zeros((3, 3), np.int64)
        assert levels(b.books(), side, top) == 3 and top.tolist() == out[:3].tolist()
    assert K.top_level(b.books(), 1) == (out[0, 0], out[0, 1])
