"""obook._kernels.simulate's shadow order hash: the kernels' one hash table (hashtab) on the
hash's columns; growth keeps the size when tombstones, not live orders, fill it."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels import simulate as K
from obook._kernels.simulate_layout import H_PRICE, H_SHARES, H_SIDE, H_STAMP, H_WIDTH, ST_LIVE, ST_STAMP, ST_USED, \
    ST_WIDTH


def _kernels(compiled: bool):
    if compiled:
        return K.h_put, K.h_find, K.h_drop
    return K.h_put.py_func, K.h_find.py_func, K.h_drop.py_func


@pytest.mark.parametrize("compiled", [True, False])
def test_simulate_hash_put_find_drop_keeps_counts(compiled):
    put, find, drop = _kernels(compiled)
    H, st = np.zeros((64, H_WIDTH), np.int64), np.zeros(ST_WIDTH, np.int64)
    slots = {(b, ref): put(H, st, b, ref, b % 2, 1000 + ref, 10 * ref) for b in (0, 3, -2) for ref in range(1, 8)}
    assert len(set(slots.values())) == 21 and st[ST_LIVE] == st[ST_USED] == 21 and st[ST_STAMP] == 21
    for (b, ref), s in slots.items():
        assert find(H, b, ref) == s
        assert (H[s, H_SIDE], H[s, H_PRICE], H[s, H_SHARES]) == (b % 2, 1000 + ref, 10 * ref)
    assert find(H, 1, 1) == -1 and find(H, 0, 9) == -1
    drop(H, st, slots[(3, 4)])
    assert find(H, 3, 4) == -1 and st[ST_LIVE] == 20 and st[ST_USED] == 21     # a tombstone stays counted
    s = put(H, st, 3, 4, 1, 7, 5)
    assert find(H, 3, 4) == s and H[s, H_STAMP] == 21 and st[ST_LIVE] == 21


def test_simulate_hash_grown_keeps_size_when_tombstones_fill_it():
    H, st = np.zeros((64, H_WIDTH), np.int64), np.zeros(ST_WIDTH, np.int64)
    for ref in range(28):
        K.h_put(H, st, 0, ref, 0, ref, 1)
    for ref in range(24):
        K.h_drop(H, st, K.h_find(H, 0, ref))
    new = K.h_grown(H, st)
    assert new.shape == H.shape and st[ST_USED] == st[ST_LIVE] == 4
    assert [int(new[K.h_find(new, 0, ref), H_PRICE]) for ref in range(24, 28)] == [24, 25, 26, 27]
    assert all(K.h_find(new, 0, ref) == -1 for ref in range(24))


def test_simulate_hash_grown_doubles_when_a_quarter_is_live():
    H, st = np.zeros((64, H_WIDTH), np.int64), np.zeros(ST_WIDTH, np.int64)
    for ref in range(28):
        K.h_put(H, st, 5, ref, 1, 100 + ref, ref)
    new = K.h_grown(H, st)
    assert new.shape == (128, H_WIDTH) and st[ST_USED] == st[ST_LIVE] == 28
    assert all(new[K.h_find(new, 5, ref), H_SHARES] == ref for ref in range(28))


@pytest.mark.parametrize("compiled", [True, False])
def test_simulate_levels_find_matches_a_search_of_the_sorted_keys(compiled):
    """lv_find walks the levels next to the best and bisects the rest: the same answer as a
    search of the sorted keys, for keys present, absent, past either end, in either part."""
    from obook._kernels.simulate_layout import L_KEY, L_WIDTH

    find = K.lv_find if compiled else K.lv_find.py_func
    rng = np.random.default_rng(3)
    for n in (0, 1, K.NEAR - 1, K.NEAR, K.NEAR + 1, 3 * K.NEAR, 200):
        keys = np.sort(rng.choice(np.arange(-1000, 1000, 3), n, replace=False))
        L, nl = np.zeros((2, max(n, 1), L_WIDTH), np.int64), np.array([0, n], np.int64)
        L[1, :n, L_KEY] = keys
        probes = set(keys.tolist()) | {k + 1 for k in keys.tolist()} | {-2000, 2000, int(keys[0]) - 1 if n else 0}
        for key in sorted(probes):
            at = int(np.searchsorted(keys, key))
            want = at if at < n and keys[at] == key else -at - 1
            assert find(L, nl, 1, key) == want, (n, key)
