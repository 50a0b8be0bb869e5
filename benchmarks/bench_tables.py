"""Cost of the tables besides the BBO: `obook convert` of the benchmark day to Parquet with
bbo alone, bbo + trades, bbo + depth(10), and bbo + trades + depth(10), alternating runs in
fresh processes, medians, and each set's cost over bbo alone.

    python benchmarks/bench_tables.py --messages 5000000 --repeats 3 [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median, run_child  # noqa: E402

CONVERT = """
import time, tempfile, obook.engine.worker_main
from obook.convert import convert
out = tempfile.mkdtemp()
t = time.perf_counter()
res = convert({path!r}, out, tables={tables!r}, workers={workers})
_r = {{'seconds': time.perf_counter() - t, 'rows': res['rows']}}
import shutil; shutil.rmtree(out)
"""

SETS = ["bbo", "bbo,trades", "bbo,depth", "bbo,trades,depth"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    path = itch_day(args.messages)
    results = {s: [] for s in SETS}
    for rep in range(args.repeats):
        for s in SETS:
            results[s].append(run_child(CONVERT.format(path=str(path), tables=s, workers=args.workers)))
        print(f"  run {rep + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.2f}s" for k, v in results.items()))
    base = median([r["seconds"] for r in results["bbo"]])
    print(f"\n{'tables':<20}{'median s':>10}{'vs bbo':>9}  rows")
    for s, rs in results.items():
        m = median([r["seconds"] for r in rs])
        print(f"{s:<20}{m:>10.3f}{m / base:>8.2f}x  {rs[0]['rows']}")


if __name__ == "__main__":
    main()
