"""Before / after of ``obook.spread`` on a generated ITCH day: a fresh process a run (kernels
loaded before timing), this checkout and ``--old DIR`` (e.g. ``git archive <commit> | tar -x
-C DIR``) alternating run by run; wall seconds and peak RSS, medians and new / old.

    python benchmarks/ab_spread.py --old /tmp/old --repeats 5 --messages 2000000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median, run_child  # noqa: E402

CODE = """
import time, obook
obook.spread({warm!r}, workers={workers}).read_all()         # kernels loaded before timing
t0 = time.perf_counter()
n = obook.spread({day!r}, workers={workers}).read_all().num_rows
_r = {{'seconds': time.perf_counter() - t0, 'rows': n}}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the other checkout")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    day, warm = itch_day(a.messages), itch_day(20_000, 50)
    code = CODE.format(day=str(day), warm=str(warm), workers=a.workers)
    runs: dict[str, list] = {"new": [], "old": []}
    for i in range(a.repeats):
        order = ("new", "old") if i % 2 == 0 else ("old", "new")
        for side in order:
            runs[side].append(run_child(code, None if side == "new" else a.old))
    rows = {r["rows"] for side in runs.values() for r in side}
    assert len(rows) == 1, rows
    seconds = {side: [r["seconds"] for r in got] for side, got in runs.items()}
    peak = {side: median([r["peak_kib"] for r in got]) for side, got in runs.items()}
    for side in ("old", "new"):
        each = ", ".join(f"{s:.3f}" for s in seconds[side])
        print(f"{side}: {median(seconds[side]):.3f} s ({each}); peak RSS {peak[side] / 1024:.0f} MiB")
    ratio = median(seconds["new"]) / median(seconds["old"])
    mem = peak["new"] / peak["old"]
    print(f"new / old: time {ratio:.3f}, peak RSS {mem:.3f} ({rows.pop():,} rows)")


if __name__ == "__main__":
    main()
