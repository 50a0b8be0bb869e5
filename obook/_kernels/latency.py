"""Latency histograms (HdrHistogram's log-linear buckets, 7 significant bits: < 0.8% error)
and the book kernel timed event by event (``obook bbo --latency``; the normal replay path
stays ``replay_events``).

A value v >= 0 falls in bucket v when v < 128, else in 128 + (s - 1) * 64 + (v >> s) - 64
with s = bitlen(v) - 7: 64 buckets per power of two above 128, ``N_BUCKETS`` in all.
"""

import numpy as np
from .jit import njit

from .replay import replay_events
from .clock import cycles
from .layout import OK

SUB = 128
HALF = 64
N_BUCKETS = SUB + 57 * HALF


@njit(cache=True, _nrt=False, inline="always")
def bucket_of(v):
    if v < SUB:
        return v if v > 0 else 0
    s = 0
    x = v >> 7
    while x:
        x >>= 1
        s += 1
    return SUB + (s - 1) * HALF + ((v >> s) - HALF)


@njit(cache=True, _nrt=False)
def record(counts, v):
    """Count one value (counts: int64[N_BUCKETS + 1]; the last cell keeps the max)."""
    counts[bucket_of(v)] += 1
    if v > counts[N_BUCKETS]:
        counts[N_BUCKETS] = v


@njit(cache=True, _nrt=False)
def record_many(counts, values, n):
    for i in range(n):
        record(counts, values[i])


@njit(cache=True, _nrt=False)
def apply_events_timed(ev, n, i, rows, nrow, skips, strict, books, rules, tables, counts):
    """``replay_events`` one event at a time, the cycles each took counted in ``counts``
    (a histogram of ``record``); same arguments, results and NEED_ROOM protocol."""
    while i < n:
        t0 = cycles()
        status, j, nrow, room = replay_events(ev, i + 1, i, rows, nrow, skips, strict, books, rules, tables)
        if status != OK:
            return status, j, nrow, room
        record(counts, cycles() - t0)
        i = j
    return OK, i, nrow, 0


@njit(cache=True, _nrt=False)
def read_cycles():
    return cycles()


def new_counts() -> np.ndarray:
    return np.zeros(N_BUCKETS + 1, np.int64)
