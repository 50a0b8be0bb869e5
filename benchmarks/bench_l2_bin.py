"""The Shenzhen binary path stage by stage, old against new, in one process (alternating
rounds, medians of CPU time, ns per record of the slice): the parent's framer kernel and
checks, a worker's rows (1 of 1 and 1 of 2 workers), ``szse_events`` and the book kernel
(a fresh book each round, growth included) on the front of the bench_l2 binary day.

    python benchmarks/bench_l2_bin.py --baseline /tmp/old_checkout --records 1000000

Old = a checkout whose framer built every record's row (``bin_scan``) and whose workers
copied their own (``owned_rows``); new = the framer's head rows (``bin_heads``) and the
workers' own rows from the bytes (``bin_rows``). The baseline's ``obook`` is imported as a
second package (``obook_baseline``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_book_kernel import _baseline  # noqa: E402
from common import DATA, median  # noqa: E402


def _stages(pkg, buf, n_rec):
    K = __import__(f"{pkg}._kernels.l2_szse", fromlist=["x"])
    books = __import__(f"{pkg}.engine.books", fromlist=["x"])
    codes, details, offs = (np.zeros(n_rec + 1, np.int64) for _ in range(3))
    new = hasattr(K, "bin_heads")
    secs = np.zeros(n_rec + 1, np.int32)     # (since the framer ships each record's security)
    args = K.bin_heads.py_func.__code__.co_varnames if new else ()
    with_secs = "secs" in args
    seq1 = (1,) if "base_seq" in args else ()          # heads numbered from 1 (else indices)
    heads = np.zeros((n_rec + 1, K.B_WIDTH if new else K.R_WIDTH), np.int64)
    rows = np.zeros((n_rec + 1, K.R_WIDTH), np.int64)
    aux = np.zeros((n_rec + 1, K.A_WIDTH), np.int64)
    ev = np.zeros((2 * n_rec + 2, 10), np.int64)
    state = {}

    def framer():
        if new:
            more = (secs,) if with_secs else ()
            n, nb, r, _ = K.bin_heads(buf, len(buf), n_rec, len(buf), *seq1, codes, details, offs, *more, heads)
        else:
            n, nb, r = K.bin_scan(buf, len(buf), n_rec, 1, codes, details, offs, heads)
        state.update(n=n, nbytes=nb, r=r)
        return n

    def check():
        h = heads
        first = 1 if seq1 or not new else 0    # (record numbers: to line indices, as the framer does)
        h[:state["r"], 0] -= first
        K.frame_check(h, state["r"], state["n"], state["n"], np.full(1 << 16, -1, np.int64), True,
                      np.zeros(state["n"] + 1, np.int64), np.zeros(1 << 16, np.int64))
        h[:state["r"], 0] += first

    def worker(w, nw):
        def run():
            if with_secs:
                state["rows"] = K.bin_rows(buf, state["nbytes"], secs[:state["n"]], 1, w, nw, rows)
            elif new:
                state["rows"] = K.bin_rows(buf, state["nbytes"], 1, w, nw, rows)
            else:
                state["rows"] = K.owned_rows(heads, state["r"], w, nw, rows)
            return state["rows"]
        return run

    def events():
        args = (rows, state["rows"], aux, np.zeros(1 << 16, np.int64), np.zeros(K.MAX_SECURITY, np.int32), 0,
                np.zeros((1 << 16, 2), np.int64), ev)
        if new:
            args += (np.zeros(K.RK_WIDTH, np.int64),)
        state["ne"] = K.szse_events(*args)[0]

    def book():
        b = books.BookState(strict=False)
        b.apply(ev, state["ne"], np.zeros((2 * n_rec + 2, 9), np.int64))

    return {"framer kernel": framer, "frame_check": check, "worker rows 1 of 2": worker(0, 2),
            "worker rows 1 of 1": worker(0, 1), "szse_events (1 of 1)": events, "book kernel (1 of 1)": book}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--day", default=str(DATA / "szse_100000x50.bin"))
    args = ap.parse_args()
    _baseline(args.baseline)
    buf = np.fromfile(args.day, np.uint8, count=args.records * 64)
    sides = {"new": _stages("obook", buf, args.records), "old": _stages("obook_baseline", buf, args.records)}
    for fns in sides.values():          # compile / load, and the state each stage reads
        for f in fns.values():
            f()
    n = next(iter(sides.values()))["framer kernel"]()
    times = {(s, k): [] for s in sides for k in sides[s]}
    for rnd in range(args.repeats):
        for s in (list(sides) if rnd % 2 == 0 else list(sides)[::-1]):
            for k, f in sides[s].items():
                t = time.process_time()
                f()
                times[(s, k)].append(time.process_time() - t)
    import os
    print(f"{n:,} records, load {os.getloadavg()[0]:.1f}")
    print("| stage | old ns/record | new ns/record | new/old |")
    print("|---|---|---|---|")
    for k in sides["new"]:
        o, w = (median(times[(s, k)]) * 1e9 / n for s in ("old", "new"))
        print(f"| {k} | {o:.1f} | {w:.1f} | {w / o:.2f} |")


if __name__ == "__main__":
    main()
