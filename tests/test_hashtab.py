"""The kernels' hash table (obook._kernels.hashtab) against a dict, compiled and as Python."""

import numpy as np
import pytest

from obook._kernels import hashtab as H

USED, FILL = 0, 1
RUNS = ["compiled", "py_func"]


def _fns(run):
    names = ("ht_find", "ht_full", "ht_put", "ht_drop", "ht_reinsert")
    if run == "compiled":
        return [getattr(H, n) for n in names]
    return [getattr(H, n).py_func for n in names]


def _table(rows):
    return np.zeros((rows, 2), np.int64), np.zeros(rows, np.int8), np.zeros(rows, np.int64)


@pytest.mark.parametrize("run", RUNS)
def test_hashtab_random_operations_match_a_dict(run):
    find, full, put, drop, reinsert = _fns(run)
    rng = np.random.default_rng(7)
    keys, state, vals = _table(8)
    st = np.zeros(2, np.int64)
    ref = {}
    # keys far apart (64-bit ids, negative ones) and close together (one book's refs)
    pool = [(int(rng.integers(-4, 4)), int(rng.integers(-2**62, 2**62))) for _ in range(60)]
    pool += [(3, r) for r in range(60)]
    for _ in range(4000):
        k = pool[int(rng.integers(len(pool)))]
        s = find(keys, state, k[0], k[1])
        assert (s >= 0) == (k in ref)
        if s >= 0:
            assert vals[s] == ref[k]
            if rng.random() < 0.5:
                drop(state, st, USED, s)
                del ref[k]
            continue
        if full(keys, st, FILL):        # grow: twice the rows, or as many when mostly tombstones
            rows = len(keys) * (2 if st[USED] * 4 > len(keys) else 1)
            nk, ns, nv = _table(rows)
            for j in np.flatnonzero(state == H.LIVE):
                nv[reinsert(nk, ns, keys[j, 0], keys[j, 1])] = vals[j]
            keys, state, vals = nk, ns, nv
            st[:] = len(ref)
        s = put(keys, state, st, USED, FILL, k[0], k[1])
        assert s >= 0
        vals[s] = ref[k] = int(rng.integers(1 << 40))
    assert st[USED] == len(ref) == int((state == H.LIVE).sum())
    assert st[FILL] == int((state != H.EMPTY).sum())
    assert st[FILL] * 2 <= len(keys)
    for k, v in ref.items():
        assert vals[find(keys, state, k[0], k[1])] == v


@pytest.mark.parametrize("run", RUNS)
def test_hashtab_full_table_put_returns_full(run):
    find, full, put, drop, _ = _fns(run)
    keys, state, _ = _table(4)
    st = np.zeros(2, np.int64)
    for r in range(4):
        assert put(keys, state, st, USED, FILL, 1, r) >= 0
    assert full(keys, st, FILL)
    assert put(keys, state, st, USED, FILL, 1, 99) == H.FULL       # no row: a status, not a hang
    assert find(keys, state, 1, 99) == -1
    drop(state, st, USED, find(keys, state, 1, 2))                 # a tombstone is reused
    s = put(keys, state, st, USED, FILL, 1, 99)
    assert s >= 0 and find(keys, state, 1, 99) == s and find(keys, state, 1, 2) == -1
    assert st.tolist() == [4, 4]


@pytest.mark.parametrize("run", RUNS)
def test_hashtab_move_keeps_every_live_key_and_its_values_drops_tombstones(run):
    find, _, put, drop, _ = _fns(run)
    move = H.ht_move if run == "compiled" else H.ht_move.py_func
    old = H.table(64, 3)
    st = np.zeros(2, np.int64)
    ref = {}
    for r in range(30):
        s = put(old.keys, old.state, st, USED, FILL, r % 4, -(r << 40))
        old.vals[s] = ref[(r % 4, -(r << 40))] = (r, 2 * r, -3 * r)
    for r in range(0, 30, 3):                  # tombstones stay behind
        k = (r % 4, -(r << 40))
        drop(old.state, st, USED, find(old.keys, old.state, *k))
        del ref[k]
    new = H.table(128, 3)
    assert move(old, new) == len(ref) == st[USED]
    assert int((new.state == H.LIVE).sum()) == len(ref) and not (new.state == H.DELETED).any()
    for k, v in ref.items():
        s = find(new.keys, new.state, *k)
        assert s >= 0 and tuple(new.vals[s]) == v
    for r in range(0, 30, 3):
        assert find(new.keys, new.state, r % 4, -(r << 40)) == -1


@pytest.mark.parametrize("run", RUNS)
def test_hashtab_keys_differing_in_high_bytes_only_short_probe_chains(run):
    """Eight-byte symbols as big-endian integers (PITCH's, left-aligned and space padded)
    differ only in their high bytes; so do ids with their low bits zero. Their rows must
    still spread over the table: short probe chains, not one chain of every key."""
    find, full, put, drop, reinsert = _fns(run)
    home = H.ht_home if run == "compiled" else H.ht_home.py_func
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    symbols = [int.from_bytes((a + b + c).ljust(8).encode(), "big")
               for a in letters[:12] for b in letters for c in letters]         # 8,112 symbols
    for keys_of in (symbols, [i << 40 for i in range(1, 8_113)]):
        _probe_chains(keys_of, find, full, put, home)


def _probe_chains(keys_of, find, full, put, home):
    with np.errstate(over="ignore"):            # the Python kernels' uint64 products wrap
        rows = 16_384
        keys, state, vals = _table(rows)
        st = np.zeros(2, np.int64)
        for k in keys_of:
            assert not full(keys, st, FILL)
            s = put(keys, state, st, USED, FILL, 0, k)
            vals[s] = k
        dist = [(find(keys, state, 0, k) - home(0, k, rows - 1)) % rows for k in keys_of]
        assert all(vals[find(keys, state, 0, k)] == k for k in keys_of)
        assert np.mean(dist) < 2 and max(dist) < 64, (np.mean(dist), max(dist))
