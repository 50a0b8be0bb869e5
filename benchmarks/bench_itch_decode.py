"""The ITCH decoder kernel alone (``itch_decode``), this checkout against another: the CPU
time of decoding every batch of a feed, for changes to the kernel that must not slow it.

Each run is a fresh process that frames the feed into batches once (kept in memory), then
decodes them all ``--passes`` times in-process (1 worker; BBO only, or with the trades'
prints: ``--prints``) and reports the thread CPU time of each pass after the first. Old and new
alternate process by process; medians of all passes, and the new/old ratio.

    git archive HEAD~1 obook | tar -x -C /tmp/old     # (and copy its compiled kernel cache)
    python benchmarks/bench_itch_decode.py --old /tmp/old --new . --feed DAY.itch --runs 8
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median, run_clean  # noqa: E402

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
import numpy as np
import obook
from obook._kernels import itch as K
from obook._kernels.layout import EV_WIDTH
from obook.feeds.itch.framer import ItchFramer
from obook.feeds.sources import iter_batches
batches = [(b.data.copy(), b.base_seq, b.n_records) for b in iter_batches(sys.argv[1], ItchFramer(sys.argv[1]))]
ev = np.zeros((max(n for _, _, n in batches), EV_WIDTH), np.int64)
names = np.zeros((1 << 16, 2), np.int64)
owner, keep, wanted = K.owners(1), np.ones(1 << 16, np.uint8), np.zeros(0, np.int64)
prints = sys.argv[4] == "1"
times, events = [], 0
for _ in range(int(sys.argv[3])):
    t = time.thread_time()
    events = 0
    for data, seq, n in batches:
        events += K.itch_decode(data, seq, 0, owner, K.SIZES, ev, names, prints, keep, wanted)[0]
    times.append(time.thread_time() - t)
print(json.dumps({"file": obook.__file__, "seconds": times[1:], "events": int(events)}))
"""


def run(feed: str, where: str, passes: int, prints: bool) -> dict:
    return run_clean(CHILD, feed, str(Path(where).resolve()), str(passes), "1" if prints else "0")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="directory holding the old obook package")
    ap.add_argument("--new", default=".", help="directory holding the new obook package (default: here)")
    ap.add_argument("--feed", required=True)
    ap.add_argument("--runs", type=int, default=8, help="processes per side")
    ap.add_argument("--passes", type=int, default=6, help="decodes of the whole feed per process (the first untimed)")
    ap.add_argument("--prints", action="store_true", help="decode the trades' prints too (P, Q, B)")
    args = ap.parse_args()
    got: dict[str, list] = {"new": [], "old": []}
    events = {}
    for i in range(args.runs):
        for side, where in (("new", args.new), ("old", args.old)):
            r = run(args.feed, where, args.passes, args.prints)
            assert r["file"].startswith(str(Path(where).resolve())), r["file"]
            got[side] += r["seconds"]
            events[side] = r["events"]
        print(f"run {i + 1}: " + ", ".join(f"{s} {median(got[s][-(args.passes - 1):]):.4f}s" for s in got), flush=True)
    assert events["new"] == events["old"], events
    o, n = median(got["old"]), median(got["new"])
    print(f"\nitch_decode CPU s a pass (median of {len(got['new'])}): old {o:.4f}, new {n:.4f}, new/old {n / o:.4f}"
          f" ({events['new']:,} events a pass)")


if __name__ == "__main__":
    main()
