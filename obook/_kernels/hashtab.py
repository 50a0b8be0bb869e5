"""The kernels' one hash table: open addressing with linear probing over typed arrays.

A table is three arrays the caller allocates (a power-of-two number of rows ``n``):

- ``keys[n, 2]`` (int64): the key of each row, a pair of integers (k0, k1), for example
  (book, order id), (book side, price) or (0, instrument id);
- ``state[n]`` (any integer type): EMPTY, LIVE or DELETED (a tombstone: probing goes on
  past it, an insert may reuse it);
- the values, as many arrays of ``n`` rows as the user wants: the table hands out slots,
  the caller reads and writes its values at them.

Two counters live in the caller's counter array ``st``: the live rows (``used``) and the
live rows plus tombstones (``fill``). ``ht_full`` says when an insert needs a larger table
first (the table is kept at most half full, so probe chains stay short); the caller
allocates one (``ht_grown_rows``: twice the rows, or as many when most rows are tombstones) and moves every
live key into it with ``ht_reinsert``, its values to the row that returns. An insert into a table without a
free row returns FULL instead of probing for ever.

A table kept whole is a ``Table`` (keys, state, vals) with its values as rows of a 2-D
array: ``table(rows, values)`` makes an empty one and ``ht_move`` fills a larger one from it.
"""

from collections import namedtuple

import numpy as np
from .jit import INTERPRETED, njit

EMPTY = 0
LIVE = 1
DELETED = 2
#: ht_put's answer when no row is free (the caller skipped ht_full)
FULL = -1
_M0 = 0xC2B2AE3D27D4EB4F
_M1 = 0x9E3779B97F4A7C15


#: a table kept whole: ``keys[n, 2]``, ``state[n]`` and ``vals[n, v]``, one values row a key
Table = namedtuple("Table", ("keys", "state", "vals"))


def table(rows: int, values: int = 1) -> Table:
    """An empty ``Table`` of ``rows`` rows (a power of two) with ``values`` int64 values a key."""
    return Table(np.zeros((rows, 2), np.int64), np.zeros(rows, np.int8), np.zeros((rows, values), np.int64))


if INTERPRETED:     # Python kernels: an index as it is (np.uint64 costs ~0.3 us a call there)
    def uindex(i):
        return i
else:
    @njit(cache=True, _nrt=False, inline="always")
    def uindex(i):
        """An array index as unsigned: the compiled access skips the negative-index wrap."""
        return np.uint64(i)
_u = uindex


@njit(cache=True, _nrt=False, inline="always")
def ht_home(k0, k1, mask):
    """The first row probed for key (k0, k1) in a table of mask + 1 rows (at most 2^32):
    the top bits of the keys' multiplicative hash (Fibonacci hashing). A product's bit j
    depends on the key's bits 0..j only, so only its top bits depend on every bit of the
    key: keys that differ only in their high bytes (8-byte symbols, left-aligned text) share
    all the lower bits of their products."""
    h = (np.uint64(np.int64(k1)) * np.uint64(_M1)) ^ (np.uint64(np.int64(k0)) * np.uint64(_M0))
    return np.int64(((h >> np.uint64(32)) * np.uint64(mask + 1)) >> np.uint64(32))


@njit(cache=True, _nrt=False)
def ht_slot(keys, state, k0, k1, for_insert):
    """The live row of key (k0, k1), else -1; with ``for_insert``, the row to put it in when
    it is absent (the first tombstone on its probe chain, else the empty row ending it;
    FULL when the table has neither)."""
    n = state.shape[0]
    mask = n - 1
    i = ht_home(k0, k1, mask)
    first_free = -1
    for _ in range(n):
        s = state[_u(i)]
        if s == EMPTY:
            if for_insert and first_free >= 0:
                return first_free
            return i if for_insert else -1
        if s == DELETED:
            if first_free < 0:
                first_free = i
        elif keys[_u(i), 0] == k0 and keys[_u(i), 1] == k1:
            return i
        i = (i + 1) & mask
    return first_free if for_insert else -1


@njit(cache=True, _nrt=False, inline="always")
def ht_find(keys, state, k0, k1):
    """The live row of key (k0, k1), or -1."""
    return ht_slot(keys, state, k0, k1, False)


def ht_grown_rows(rows, live, at_least=0):
    """The rows of the table a full one of ``rows`` rows, ``live`` of them live, moves into:
    twice as many when a quarter or more are live (or while fewer than ``at_least``), else as
    many (tombstones, not live keys, filled it)."""
    return rows * (2 if 4 * live > rows or rows < at_least else 1)


@njit(cache=True, _nrt=False, inline="always")
def ht_full(keys, st, fill):
    """True when one more insert would leave the table more than half full (``st[fill]``:
    its live rows and tombstones): grow it first."""
    return st[fill] * 2 + 2 > keys.shape[0]


@njit(cache=True, _nrt=False)
def ht_put(keys, state, st, used, fill, k0, k1):
    """Insert key (k0, k1) (not live in the table) and return its row, for the caller's
    values; FULL when the table has no free row."""
    s = ht_slot(keys, state, k0, k1, True)
    if s < 0:
        return FULL
    if state[_u(s)] == EMPTY:
        st[fill] += 1
    state[_u(s)] = LIVE
    keys[_u(s), 0] = k0
    keys[_u(s), 1] = k1
    st[used] += 1
    return s


@njit(cache=True, _nrt=False, inline="always")
def ht_drop(state, st, used, s):
    """Delete the key of live row s (its row becomes a tombstone)."""
    state[_u(s)] = DELETED
    st[used] -= 1


@njit(cache=True, _nrt=False)
def ht_reinsert(keys, state, k0, k1):
    """Put key (k0, k1) into a table being filled from a smaller one (no tombstones, the
    key absent, a free row certain) and return its row; the caller copies the values and
    sets both counters to the number of rows moved."""
    s = ht_slot(keys, state, k0, k1, True)
    state[_u(s)] = LIVE
    keys[_u(s), 0] = k0
    keys[_u(s), 1] = k1
    return s


@njit(cache=True, _nrt=False)
def ht_move(old, new):
    """Put every live key of Table ``old`` into the empty, larger Table ``new``, with its
    values row; returns the number moved (both of new's counters)."""
    n = 0
    for j in range(old.state.shape[0]):
        if old.state[_u(j)] == LIVE:
            s = ht_reinsert(new.keys, new.state, old.keys[_u(j), 0], old.keys[_u(j), 1])
            for c in range(old.vals.shape[1]):
                new.vals[_u(s), c] = old.vals[_u(j), c]
            n += 1
    return n
