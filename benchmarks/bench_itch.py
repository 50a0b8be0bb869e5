"""ITCH replay benchmark: obook with 1 and 2 workers against itch-book (C++ core).

Alternates the contenders run by run, each in a fresh process, and reports medians:
wall time of the replay (from the call to the last BBO batch, worker start-up
included), ns per message, peak RSS of the process and of its workers, and the
ratio to itch-book's time measured in the same run.

    python benchmarks/bench_itch.py --messages 5000000 --repeats 5
    python benchmarks/bench_itch.py --baseline /tmp/old_checkout --workers 1 --no-itch-book

``--baseline`` adds the same obook runs of another checkout (old against new, alternating).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median, run_child  # noqa: E402

OBOOK = """
import time, obook
import obook.engine.worker_main  # load the compiled kernels before timing (as a warm process would)
import obook.engine.replay, pyarrow.compute  # and the replay's modules: a thin ``import obook``
# leaves them to the first replay, an old checkout's front imported them (benchmarks/bench_seam.py)
t = time.perf_counter(); rows = 0
for b in obook.bbo({path!r}, workers={workers}):
    rows += b.num_rows
_r = {{'seconds': time.perf_counter() - t, 'rows': rows}}
"""

ITCH_BOOK = """
import time, datetime, itch_book
t = time.perf_counter(); rows = 0
feed = itch_book.Feed({path!r}, date=datetime.date(2019, 12, 30), price_type='fixed')
for b in feed.batches(tables=('bbo',)):
    rows += len(b.bbo['seq'])
_r = {{'seconds': time.perf_counter() - t, 'rows': rows}}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--gz", action="store_true", help="replay the gzipped file")
    ap.add_argument("--workers", default="1,2", help="obook worker counts to run")
    ap.add_argument("--baseline", help="a checkout whose obook to run too (old against new)")
    ap.add_argument("--no-itch-book", action="store_true")
    args = ap.parse_args()
    path = itch_day(args.messages, args.stocks, gz=args.gz)
    print(f"feed: {path} ({path.stat().st_size / 2**20:.0f} MiB, {args.messages:,} messages)")
    contenders = {}
    for w in (int(x) for x in args.workers.split(",")):
        contenders[f"obook {w} worker{'s' * (w > 1)}"] = (OBOOK.format(path=str(path), workers=w), None)
        if args.baseline:
            contenders[f"baseline {w} worker{'s' * (w > 1)}"] = (OBOOK.format(path=str(path), workers=w),
                                                                  args.baseline)
    if not args.no_itch_book:
        contenders["itch-book"] = (ITCH_BOOK.format(path=str(path)), None)
    results: dict[str, list[dict]] = {k: [] for k in contenders}
    for rep in range(args.repeats):
        for name, (code, code_dir) in contenders.items():
            results[name].append(run_child(code, code_dir))
        print(f"  run {rep + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.2f}s" for k, v in results.items()))
    first = "itch-book" if "itch-book" in results else next(iter(results))
    base = median([r["seconds"] for r in results[first]])
    print(f"\n{'contender':<18}{'median s':>10}{'ns/msg':>9}{'vs ' + first:>14}{'rows':>12}"
          f"{'peak MiB':>10}{'worker peak MiB':>17}")
    for name, rs in results.items():
        s = median([r["seconds"] for r in rs])
        print(f"{name:<18}{s:>10.3f}{s / args.messages * 1e9:>9.0f}{s / base:>13.2f}x{rs[0]['rows']:>12,}"
              f"{max(r['peak_kib'] for r in rs) / 1024:>10.0f}{max(r['children_peak_kib'] for r in rs) / 1024:>17.0f}")


if __name__ == "__main__":
    main()
