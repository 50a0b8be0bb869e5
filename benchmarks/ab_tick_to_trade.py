"""bench_tick_to_trade.py in two source trees, fresh runs alternating (the order swapped each
round): per tree and rate the medians of tick to trade p50 / p99, recv-to-book p50, and the
runs with any loss or re-request.

    git archive HEAD | tar -x -C /tmp/old_tree && (cd /tmp/old_tree && python -m obook compile live itch)
    python benchmarks/ab_tick_to_trade.py --rounds 3 [--old /tmp/old_tree] [--new .] [bench options...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(tree: str, extra: list) -> list:
    out = subprocess.run([sys.executable, os.path.join(tree, "benchmarks", "bench_tick_to_trade.py"), *extra],
                         env={**os.environ, "PYTHONPATH": tree}, cwd="/tmp", capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old", default="/tmp/old_tree")
    ap.add_argument("--new", default=HERE)
    args, extra = ap.parse_known_args()
    trees = {"old": args.old, "new": args.new}
    got: dict = {}
    for r in range(args.rounds):
        for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
            for res in _run(trees[name], extra):
                got.setdefault((name, res.get("rate_asked")), []).append(res)
                print(name, json.dumps(res), flush=True)
    for (name, rate), runs in sorted(got.items(), key=lambda kv: (str(kv[0][1]), kv[0][0])):
        med = {f"{h} {q}": statistics.median(x[h][q] for x in runs if x[h][q] is not None)
               for h, q in (("t2t", "p50"), ("t2t", "p99"), ("r2b", "p50")) if any(x[h][q] is not None for x in runs)}
        cpu = [x["loop_cpu_ns_per_msg"] for x in runs if x.get("loop_cpu_ns_per_msg") is not None]
        if cpu:
            med["loop ns/msg"] = statistics.median(cpu)
        lossy = sum(1 for x in runs if x.get("lost_a") or x.get("lost_b") or x.get("requests"))
        print(f"{name} rate {rate}: {len(runs)} runs, medians {med}, runs with loss or re-requests {lossy}")


if __name__ == "__main__":
    main()
