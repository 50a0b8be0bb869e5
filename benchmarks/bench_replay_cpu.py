"""A replay's CPU time, this checkout against another (for changes to the BBO path that
must not slow it by more than 5%), robust to a loaded machine: each run is a fresh process that
replays the feed 4 times in-process (``workers=1``) and reports, for the last 3, the
process CPU time of the whole replay and the thread CPU time spent inside the book kernel
calls (``BookState.apply``). Old and new alternate process by process; medians of all
replays, and new/old ratios.

    git archive cc23a2c obook | tar -x -C /tmp/old
    python benchmarks/bench_replay_cpu.py --old /tmp/old --feed ITCH_OR_CSV_FILE --runs 6 [--table bbo]
    python benchmarks/bench_replay_cpu.py --old /tmp/old --feed F --table orders --no-queue   # new side without queue places
    python benchmarks/bench_replay_cpu.py --old /tmp/old --new /tmp/new --feed F   # two copies (edit on meanwhile)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median, run_clean  # noqa: E402

CHILD = r"""
import json, sys, time
if sys.argv[2]:
    sys.path.insert(0, sys.argv[2])
import obook, obook.engine.worker_main, obook.engine.replay, pyarrow.compute
from obook.engine import books
inside = [0.0]
apply = books.BookState.apply
def timed(self, *a, **k):
    t = time.thread_time()
    try:
        return apply(self, *a, **k)
    finally:
        inside[0] += time.thread_time() - t
books.BookState.apply = timed
table = getattr(obook, sys.argv[3])
options = {"queue_positions": False} if sys.argv[4] == "1" else {}
total, kernel = [], []
for _ in range(4):
    inside[0] = 0.0
    t = time.process_time()
    for batch in table(sys.argv[1], workers=1, **options):
        pass
    total.append(time.process_time() - t)
    kernel.append(inside[0])
print(json.dumps({"file": obook.__file__, "total": total[1:], "kernel": kernel[1:]}))
"""


def run(feed: str, old: str, table: str, no_queue: bool = False) -> dict:
    return run_clean(CHILD, feed, old, table, "1" if no_queue else "0")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="directory holding the old obook package")
    ap.add_argument("--new", default="", help="directory holding the new obook package (default: this one)")
    ap.add_argument("--feed", required=True)
    ap.add_argument("--runs", type=int, default=6, help="processes per side (3 timed replays each)")
    ap.add_argument("--table", default="bbo")
    ap.add_argument("--no-queue", action="store_true", help="the new side's orders table without queue places")
    args = ap.parse_args()
    got = {"new": {"total": [], "kernel": []}, "old": {"total": [], "kernel": []}}
    for i in range(args.runs):
        for side, where in (("new", args.new), ("old", args.old)):
            r = run(args.feed, where, args.table, args.no_queue and side == "new")
            assert (side == "old") == r["file"].startswith(args.old), r["file"]
            assert not args.new or side == "old" or r["file"].startswith(args.new), r["file"]
            for k in ("total", "kernel"):
                got[side][k] += r[k]
        print(f"run {i + 1}: " + ", ".join(f"{s} total {median(got[s]['total'][-3:]):.3f}s kernel "
                                           f"{median(got[s]['kernel'][-3:]):.3f}s" for s in got), flush=True)
    print(f"\n{'CPU s (median of ' + str(3 * args.runs) + ')':<28}{'old':>8}{'new':>8}{'new/old':>9}")
    for k in ("total", "kernel"):
        o, n = median(got["old"][k]), median(got["new"][k])
        print(f"{k:<28}{o:>8.3f}{n:>8.3f}{n / o:>9.3f}")


if __name__ == "__main__":
    main()
