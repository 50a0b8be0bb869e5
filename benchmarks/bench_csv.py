"""CSV order-feed benchmark: obook with 1 and 2 workers on a generated feed.

Alternates the contenders run by run, each in a fresh process, and reports medians:
wall time of the replay (worker start-up included, kernels loaded before timing),
ns per event, events per second, and peak RSS of the process and of its workers.
Target: at least 4 million events/s end to end with 2 workers.

    python benchmarks/bench_csv.py --events 5000000 --tickers 100 --repeats 5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import csv_day, median, run_child  # noqa: E402

OBOOK = """
import time, obook
import obook.engine.worker_main as _wm; getattr(_wm, 'warm', lambda: None)()  # every format's kernels loaded
import obook.feeds.csv.decoder
t = time.perf_counter(); rows = 0
for b in obook.bbo({path!r}, workers={workers}, format='csv'):
    rows += b.num_rows
_r = {{'seconds': time.perf_counter() - t, 'rows': rows}}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=5_000_000)
    ap.add_argument("--tickers", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    path = csv_day(args.events, args.tickers)
    lines = sum(1 for _ in open(path, "rb")) - 1
    print(f"feed: {path} ({path.stat().st_size / 2**20:.0f} MiB, {lines:,} event lines)")
    contenders = {f"obook {w} worker{'s' * (w > 1)}": OBOOK.format(path=str(path), workers=w) for w in (1, 2)}
    results: dict[str, list[dict]] = {k: [] for k in contenders}
    for rep in range(args.repeats):
        for name, code in contenders.items():
            results[name].append(run_child(code))
        print(f"  run {rep + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.2f}s" for k, v in results.items()))
    print(f"\n{'contender':<18}{'median s':>10}{'ns/event':>10}{'M events/s':>12}{'rows':>12}"
          f"{'peak MiB':>10}{'worker peak MiB':>17}")
    for name, rs in results.items():
        s = median([r["seconds"] for r in rs])
        print(f"{name:<18}{s:>10.3f}{s / lines * 1e9:>10.0f}{lines / s / 1e6:>12.2f}{rs[0]['rows']:>12,}"
              f"{max(r['peak_kib'] for r in rs) / 1024:>10.0f}{max(r['children_peak_kib'] for r in rs) / 1024:>17.0f}")


if __name__ == "__main__":
    main()
