"""The Shenzhen text framer alone (the parent's share of a replay with workers): read the
log in blocks, frame it, copy each batch into a slot as the engine does; this checkout
against ``--baseline`` (another checkout's folder holding obook/), alternating in one
process, medians, ns per line.

    python benchmarks/bench_l2_framer.py --baseline /tmp/old --mib 300
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_book_kernel import _baseline  # noqa: E402
from common import DATA, median  # noqa: E402


def _side(pkg: str, path: str, slot: np.ndarray):
    feed = __import__(f"{pkg}.feeds.szse.feed", fromlist=["x"])
    sources = __import__(f"{pkg}.feeds.sources", fromlist=["x"])

    def run():
        lines = 0
        for b in sources.iter_batches(path, feed.SzseTextFramer(path)):
            parts = b.data if isinstance(b.data, tuple) else (b.data,)
            at = 0
            for d in parts:
                slot[at:at + len(d)] = d
                at += len(d)
            lines += b.n_records
        return lines
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--mib", type=int, default=300, help="the log's first MiB (whole lines)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--day", default=str(DATA / "szse_100000x50.log"))
    args = ap.parse_args()
    _baseline(args.baseline)
    buf = np.fromfile(args.day, np.uint8, count=args.mib << 20)
    buf = buf[: int(np.flatnonzero(buf == 10)[-1]) + 1]
    part = Path("/tmp") / f"bench_l2_framer_{args.mib}.log"
    if not part.exists() or part.stat().st_size != len(buf):
        buf.tofile(part)
    slot = np.zeros(64 << 20, np.uint8)
    sides = {"new": _side("obook", str(part), slot), "old": _side("obook_baseline", str(part), slot)}
    for f in sides.values():
        f()
    times = {s: [] for s in sides}
    lines = 0
    for _ in range(args.repeats):
        for s, f in sides.items():
            t = time.perf_counter()
            lines = f()
            times[s].append(time.perf_counter() - t)
    new, old = median(times["new"]), median(times["old"])
    print(f"{lines:,} lines, {len(buf) / 2**20:.0f} MiB: old {old / lines * 1e9:.0f} ns/line, "
          f"new {new / lines * 1e9:.0f} ns/line, new/old {new / old:.2f}")


if __name__ == "__main__":
    main()
