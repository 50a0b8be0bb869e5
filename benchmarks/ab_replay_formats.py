"""Before / after of the BBO replay on every text and binary Level-2 day, an ITCH day and a
CSV day: bench_l2.py's and bench_csv.py's children (a fresh process a run, kernels loaded
before timing), this checkout and ``--old DIR`` (e.g. ``git archive <commit> | tar -x -C
DIR``) alternating run by run; medians and new / old.

    python benchmarks/ab_replay_formats.py --old /tmp/old --repeats 7 --formats szse,szse-bin,sse,itch,csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import bench_csv  # noqa: E402
import bench_l2  # noqa: E402
from common import csv_day, itch_day, median, run_child  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the other checkout")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--formats", default="szse,szse-bin,sse,itch,csv")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--csv-events", type=int, default=2_000_000)
    a = ap.parse_args()
    formats, workers = a.formats.split(","), [int(w) for w in a.workers.split(",")]
    text, binary, recs = bench_l2.files(100_000, 10)
    days = {"szse": (text, len(recs) * 10), "szse-bin": (binary, len(recs) * 10)}
    if "sse" in formats:
        p = bench_l2.sse_day(1_000_000)
        days["sse"] = (p, bench_l2.count_lines(p))
    if "itch" in formats:
        days["itch"] = (itch_day(days["szse"][1]), days["szse"][1])
    if "csv" in formats:
        days["csv"] = (csv_day(a.csv_events, 100), a.csv_events)
    seconds: dict = {}
    for r in range(a.repeats):
        for fmt in formats:
            for w in workers:
                sides = [("new", None), ("old", a.old)]
                for side, where in (sides if r % 2 == 0 else sides[::-1]):
                    if fmt == "csv":
                        code = bench_csv.OBOOK.format(path=str(days[fmt][0]), workers=w)
                    else:
                        code = bench_l2.OBOOK.format(path=str(days[fmt][0]), workers=w, fmt=fmt, preimport="")
                    seconds.setdefault((fmt, w, side), []).append(run_child(code, where)["seconds"])
    for fmt in formats:
        for w in workers:
            new, old = median(seconds[(fmt, w, "new")]), median(seconds[(fmt, w, "old")])
            n = days[fmt][1]
            print(f"{fmt} workers={w}: old {old:.4f} s ({n / old / 1e6:.2f} M/s)  "
                  f"new {new:.4f} s ({n / new / 1e6:.2f} M/s)  new/old {new / old:.3f}")


if __name__ == "__main__":
    main()
