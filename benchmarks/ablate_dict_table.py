"""The Parquet page writer's dictionary hash (``parquet_pages.dict_dense``: an insert-only
table of one int64 key and an int32 entry a row, Fibonacci hashing) against the kernels'
one hash table (``hashtab``: keys of two integers, a state byte, values beside) doing the
same job, on the depth table's price and shares columns.

The depth table of a generated ITCH day is made once; each of its 40 level price / shares
columns (nulls dropped, as ``compact`` leaves them) is dictionary-encoded a row group at a
time (``--rows`` rows) by both, alternating, with tables of the size the writer starts with
(4x the entries, at least 4,096 rows; doubled and redone when a table would pass half full).
Both must give the same dictionary and indices (checked). Prints thread-CPU ns per value and
the median of the per-repeat ratios.

    python benchmarks/ablate_dict_table.py [--messages 1000000] [--rows 1000000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import itch_day  # noqa: E402
from obook._kernels.hashtab import LIVE, ht_full, ht_slot  # noqa: E402
from obook._kernels.jit import njit  # noqa: E402
from obook._kernels.parquet_pages import dict_dense  # noqa: E402


@njit(cache=True, nogil=True)
def dict_dense_hashtab(values, a, b, keys, state, entry, st, dictionary, n_dict, indices):
    """dict_dense on hashtab: the same returns (n_dict, -1 dictionary full, -2 table half full)."""
    for i in range(a, b):
        v = values[i]
        s = ht_slot(keys, state, 0, v, True)
        if state[s] == LIVE:
            k = entry[s]
        else:
            if n_dict == dictionary.shape[0]:
                return -1
            if ht_full(keys, st, 1):
                return -2
            state[s] = LIVE
            keys[s, 0] = 0
            keys[s, 1] = v
            st[0] += 1
            st[1] += 1
            entry[s] = n_dict
            dictionary[n_dict] = v
            k = n_dict
            n_dict += 1
        indices[i] = k
    return n_dict


def _fibonacci(vals, size, dictionary, indices):
    while True:
        keys, slots = np.empty(size, np.int64), np.full(size, -1, np.int32)
        nd = dict_dense(vals, 0, len(vals), keys, slots, dictionary, 0, indices)
        if nd != -2:
            return nd
        size *= 2


def _hashtab(vals, size, dictionary, indices):
    while True:
        keys, state = np.empty((size, 2), np.int64), np.zeros(size, np.int8)
        entry, st = np.empty(size, np.int32), np.zeros(2, np.int64)
        nd = dict_dense_hashtab(vals, 0, len(vals), keys, state, entry, st, dictionary, 0, indices)
        if nd != -2:
            return nd
        size *= 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--stocks", type=int, default=200)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    import obook

    table = obook.depth(itch_day(args.messages, args.stocks), workers=2).read_all().slice(0, args.rows)
    cols = [table.column(f).to_numpy(zero_copy_only=False) for f in table.column_names
            if f.split("_")[1:2] in (["px"], ["qty"])]
    cols = [np.ascontiguousarray(c[~np.isnan(c)].astype(np.int64) if c.dtype.kind == "f" else c) for c in cols]
    n = sum(len(c) for c in cols)
    print(f"{len(cols)} columns, {table.num_rows:,} rows, {n:,} values", flush=True)
    dict_a, dict_b = np.empty(1 << 20, np.int64), np.empty(1 << 20, np.int64)
    idx_a, idx_b = np.empty(table.num_rows, np.int32), np.empty(table.num_rows, np.int32)
    for c in cols[:2]:                      # compile / load, and the two agree
        na, nb = _fibonacci(c, 1 << 12, dict_a, idx_a), _hashtab(c, 1 << 12, dict_b, idx_b)
        assert na == nb and np.array_equal(dict_a[:na], dict_b[:nb]) and np.array_equal(idx_a[:len(c)], idx_b[:len(c)])
    sizes = {}
    times = {"fibonacci": [], "hashtab": []}
    for _ in range(args.repeats):
        for name, fn, d, ix in (("fibonacci", _fibonacci, dict_a, idx_a), ("hashtab", _hashtab, dict_b, idx_b)):
            t = time.thread_time()
            for j, c in enumerate(cols):
                nd = fn(c, sizes.get(j, 1 << 12), d, ix)
                sizes[j] = max(1 << 12, 1 << (4 * max(nd, 1)).bit_length())
            times[name].append(time.thread_time() - t)
    for name, ts in times.items():
        print(f"{name:10} {statistics.median(ts) / n * 1e9:6.2f} ns a value  (runs {', '.join(f'{x:.3f}' for x in ts)} s)")
    ratios = [b / a for a, b in zip(times["fibonacci"], times["hashtab"])]
    print(f"hashtab / fibonacci: median {statistics.median(ratios):.3f} (per repeat {min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
