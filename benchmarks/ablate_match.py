"""Alternating old-vs-new ablation of matching-kernel variants (the method of the
"#16 matcher speed" ledger rows).

Each variant is a module in a package directory (``--dir``, default /tmp/abl/ablk): a copy
of ``obook/_kernels/match.py`` (with its ``match_layout`` / ``prefetch`` / ``match_out``
siblings copied beside it) that also defines ``new_state(levels, n_keys)`` returning the
state tuple its ``match_rows`` takes after ``(m, start, n, stp, want, levels, pf)``. The
seed workload (SPEC §8, 1.1M instructions) is generated once and cached as ``seed_msg.npy``
in the directory's parent. Every repeat runs each variant on a fresh state (100,000
warm-up, 1,000,000 timed, ``want=0``), the order reversed every other repeat; it prints
each variant's median thread-CPU ns per instruction and the median of the per-repeat
ratios against the first variant.

    python benchmarks/ablate_match.py old,new@16,new@0 --repeats 13
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", help="module[@prefetch distance], comma separated; the first is the base")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--dir", default="/tmp/abl/ablk")
    a = ap.parse_args()
    pkg = Path(a.dir)
    sys.path.insert(0, str(pkg.parent))
    cache = pkg.parent / "seed_msg.npy"
    if not cache.exists():
        from obook.gen.orders import seed_rows
        np.save(cache, seed_rows(1_100_000)[0])
    msg = np.load(cache)
    names = a.variants.split(",")
    mods = {n: importlib.import_module(f"{pkg.name}.{n.split('@')[0]}") for n in names}
    pfs = {n: int(n.split("@")[1]) if "@" in n else 16 for n in names}

    def run(n, warm=100_000, count=1_000_000):
        s = mods[n].new_state(4097, len(msg))
        assert mods[n].match_rows(msg, 0, warm, 0, 0, 1, pfs[n], *s) == 0
        c = time.thread_time_ns()
        assert mods[n].match_rows(msg, warm, warm + count, 0, 0, 1, pfs[n], *s) == 0
        return (time.thread_time_ns() - c) / count

    for n in names:
        run(n, 1000, 1000)                        # compile / load
    res = {n: [] for n in names}
    for k in range(a.repeats):
        for n in (names if k % 2 == 0 else names[::-1]):
            res[n].append(run(n))
    for n in names:
        print(f"{n}: median {statistics.median(res[n]):.1f} ns, runs {[round(x, 1) for x in res[n]]}")
    for n in names[1:]:
        r = [b / a for a, b in zip(res[names[0]], res[n])]
        print(f"{n} / {names[0]}: ratio median {statistics.median(r):.3f}, faster in {sum(x < 1 for x in r)}/{len(r)}")


if __name__ == "__main__":
    main()
