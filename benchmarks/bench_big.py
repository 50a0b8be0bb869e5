"""A big gzipped ITCH day end to end: 50 million messages, replayed by the CLI
with 2 workers and with 1 into Parquet; the row counts must be equal.

    python benchmarks/bench_big.py [--messages 50000000] [--stocks 8000] [--keep]

Generating the day takes about a minute and ~1 GB of disk (cached in bench-data/,
or $OBOOK_BENCH_DATA); each replay prints its wall time and the peak RSS of the CLI
process and of its largest worker (getrusage of the child and its children).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day  # noqa: E402

MEASURE = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)      # the CLI and, through it, its workers
print(json.dumps({"rc": p.returncode, "wall": wall, "peak_kib": ru.ru_maxrss,
                  "stderr": p.stderr.decode()[-2000:]}))
"""


def replay(feed: Path, workers: int, out: Path) -> dict:
    """Run ``obook bbo`` in a fresh process; wall time, peak RSS, the output's row count."""
    cmd = [sys.executable, "-m", "obook", "bbo", str(feed), "--workers", str(workers), "--output", str(out)]
    p = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, check=True)
    r = json.loads(p.stdout)
    if r["rc"] != 0:
        raise SystemExit(f"obook bbo --workers {workers} failed ({r['rc']}):\n{r['stderr']}")
    import pyarrow.parquet as pq
    r["rows"] = pq.ParquetFile(out).metadata.num_rows
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=50_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--keep", action="store_true", help="keep the Parquet outputs")
    args = ap.parse_args()

    t = time.perf_counter()
    feed = itch_day(args.messages, args.stocks, seed=7, gz=True)
    print(f"feed: {feed} ({feed.stat().st_size / 1e9:.2f} GB gzipped; ready in {time.perf_counter() - t:.1f} s)")

    results = {}
    for workers in (2, 1):
        out = feed.with_name(f"bbo_big_w{workers}.parquet")
        r = results[workers] = replay(feed, workers, out)
        print(f"workers={workers}: {r['wall']:.1f} s, {args.messages / r['wall'] / 1e6:.2f} M msg/s, "
              f"{r['rows']:,} rows, peak RSS {r['peak_kib'] / 1024:.0f} MiB (largest of CLI and workers)")
        if not args.keep:
            out.unlink()
    if results[1]["rows"] != results[2]["rows"]:
        raise SystemExit(f"row counts differ: workers=1 {results[1]['rows']:,}, workers=2 {results[2]['rows']:,}")
    print("row counts equal")


if __name__ == "__main__":
    main()
