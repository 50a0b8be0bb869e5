"""Ticker pushdown: the BBO of 1 ticker of an 8,000-stock day against the full
replay, same workers, fresh processes, alternating, medians of wall time.

    python benchmarks/bench_pushdown.py [--messages 5000000] [--workers 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median, run_child  # noqa: E402

CODE = """
import time, obook
import obook.engine.worker_main  # kernels loaded before timing
t = time.perf_counter(); rows = 0
for b in obook.bbo({path!r}, workers={workers}, tickers={tickers!r}):
    rows += b.num_rows
_r = {{'seconds': time.perf_counter() - t, 'rows': rows}}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    path = itch_day(args.messages, args.stocks)
    import obook

    ticker = obook.symbols(path).read_all()["stock"][args.stocks // 2].as_py()
    runs = {"full replay": None, f"1 ticker ({ticker})": [ticker]}
    results = {k: [] for k in runs}
    for rep in range(args.repeats):
        for name, tickers in runs.items():
            results[name].append(run_child(CODE.format(path=str(path), workers=args.workers, tickers=tickers)))
        print(f"  run {rep + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.2f}s" for k, v in results.items()),
              flush=True)
    base = median([r["seconds"] for r in results["full replay"]])
    for name, rs in results.items():
        s = median([r["seconds"] for r in rs])
        print(f"{name:<24}{s:>8.2f} s{s / base:>8.2f}x{rs[0]['rows']:>12,} rows")


if __name__ == "__main__":
    main()
