"""Alternating old-vs-new ablation of matching-kernel variants: each variant against the
others in the same rounds.

Each variant is a module in a package directory (``--dir``, default /tmp/abl/ablk): a copy
of ``obook/_kernels/match.py`` (with its ``match_layout`` / ``prefetch`` / ``match_out``
siblings copied beside it) that also defines ``new_state(levels, n_keys)`` returning the
state tuple its ``match_rows`` takes after ``(*m, start, n, stp, want, levels, pf)``, where
``m`` is ``(rows, owner, clock)`` of the instructions (``obook.matching.prepare.Instructions``),
or what the variant's optional ``convert(instructions)`` returns (a tuple; e.g. the 2-D
int64 rows of older kernels). The seed workload (1.1M instructions) is
generated once and cached as ``seed_msg.npz`` in the directory's parent. Every repeat runs
each variant on a fresh state (100,000 warm-up, 1,000,000 timed, ``want=0`` unless
``--want``), the order reversed every other repeat; it prints each variant's median
thread-CPU ns per instruction and the median of the per-repeat ratios against the first
variant.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_match import positional  # noqa: E402  (match_rows the positional way)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", help="module[@prefetch distance], comma separated; the first is the base")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--dir", default="/tmp/abl/ablk")
    ap.add_argument("--want", type=int, default=0, help="output bits (3: fills + events)")
    a = ap.parse_args()
    pkg = Path(a.dir)
    sys.path.insert(0, str(pkg.parent))
    from obook.matching.prepare import Instructions

    cache = pkg.parent / "seed_msg.npz"
    if not cache.exists():
        from obook.gen.orders import seed_rows
        m = seed_rows(1_100_000)[0]
        np.savez(cache, rows=m.rows, owner=m.owner, clock=m.clock)
    with np.load(cache) as z:
        msg = Instructions(z["rows"], z["owner"], z["clock"])
    names = a.variants.split(",")
    mods = {n: importlib.import_module(f"{pkg.name}.{n.split('@')[0]}") for n in names}
    pfs = {n: int(n.split("@")[1]) if "@" in n else 16 for n in names}

    inputs = {n: mods[n].convert(msg) if hasattr(mods[n], "convert") else (msg.rows, msg.owner, msg.clock)
              for n in names}

    out = (np.zeros((3_000_000, 8), np.int64), np.zeros((4_000_000, 10), np.int64))     # fills, events

    def run(n, warm=100_000, count=1_000_000):
        s = mods[n].new_state(4097, len(msg))
        if a.want:          # the state's fills / events buffers (at the module's OUT_AT) hold the whole run
            k = getattr(mods[n], "OUT_AT", 4)
            s = (*s[:k], *out, *s[k + 2:])
        m = inputs[n]
        match_rows = positional(mods[n])
        assert match_rows(*m, 0, warm, 0, a.want, 1, pfs[n], *s) == 0
        c = time.thread_time_ns()
        assert match_rows(*m, warm, warm + count, 0, a.want, 1, pfs[n], *s) == 0
        return (time.thread_time_ns() - c) / count

    for n in names:
        run(n, 1000, 1000)                        # compile / load
    res = {n: [] for n in names}
    for k in range(a.repeats):
        for n in (names if k % 2 == 0 else names[::-1]):
            res[n].append(run(n))
    for n in names:
        print(f"{n}: median {statistics.median(res[n]):.1f} ns, min {min(res[n]):.1f}, "
              f"runs {[round(x, 1) for x in res[n]]}")
    for n in names[1:]:
        r = [b / a for a, b in zip(res[names[0]], res[n])]
        print(f"{n} / {names[0]}: ratio median {statistics.median(r):.3f}, faster in {sum(x < 1 for x in r)}/{len(r)}")


if __name__ == "__main__":
    main()
