"""A/B end to end: ``obook.bbo`` of a Shanghai log, 1 worker, each run a fresh process,
old and new alternating (the first pair dropped), medians.

    python benchmarks/ab_sse_replay_e2e.py --old /path/to/old/checkout --new /path/to/new [--log FILE] [--rounds 7]

``--old`` / ``--new``: directories holding an ``obook`` package (their kernels compiled).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--log", default="/work/shared/data/AX_sbe_sse_600519.zip")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    code = ("import time, obook; t = time.perf_counter(); "
            f"n = obook.bbo({a.log!r}, workers=1).read_all().num_rows; print(time.perf_counter() - t, n)")
    times: dict = {"old": [], "new": []}
    for r in range(a.rounds + 1):
        for name in ("old", "new") if r % 2 else ("new", "old"):
            env = {**os.environ, "PYTHONPATH": getattr(a, name)}
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                 cwd="/", check=True).stdout.split()
            if r:
                times[name].append(float(out[0]))
    mo, mn = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"{a.rounds} rounds: old {mo:.3f} s, new {mn:.3f} s, new / old {mn / mo:.3f}")


if __name__ == "__main__":
    main()
