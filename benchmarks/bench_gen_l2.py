"""The Level-2 generators' time against their size: ``obook gen szse`` and ``obook gen sse``
at a few sizes, each in a fresh process, alternating, medians of the CPU seconds (user +
system: the machine is shared) and of the wall time. Linear generators take about ten
times as long for ten times the messages. Target: 1 M messages in under 30 s.

    python benchmarks/bench_gen_l2.py [--sizes 60000,1000000] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run(kind: str, n: int, path: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "obook", "gen", kind, path, "-n", str(n)], check=True,
                   capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="60000,1000000")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"# load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'generator':10s} {'messages':>10s} {'cpu s':>8s} {'wall s':>8s} {'cpu us/msg':>10s}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            got: dict[str, list] = {"szse": [], "sse": []}
            for _ in range(args.repeats):
                for kind in got:            # alternating
                    got[kind].append(run(kind, n, os.path.join(tmp, f"{kind}.log")))
            for kind, runs in got.items():
                cpu = statistics.median(r[0] for r in runs)
                wall = statistics.median(r[1] for r in runs)
                print(f"{kind:10s} {n:10d} {cpu:8.2f} {wall:8.2f} {cpu / n * 1e6:10.2f}", flush=True)
    print(f"# load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
