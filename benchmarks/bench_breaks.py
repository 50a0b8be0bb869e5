"""Cost of the trades' ``broken`` column: the pre-pass that collects a feed's breaks
(obook.feeds.breaks with the format's kernel: ITCH B, PITCH Trade Break) against the BBO and
trades replays it adds to, alternating runs in fresh processes, medians.

    python benchmarks/bench_breaks.py --messages 5000000 --repeats 3 [--workers 2] [--gz] [--format pitch]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median, pitch_day, run_child  # noqa: E402

RUNS = {
    "breaks pre-pass": """
import time
from obook.feeds import get_format, load
fmt = get_format({fmt!r})
t = time.perf_counter()
b = load(fmt.prepass)({path!r}, fmt.framer_class()({path!r}))
_r = {{'seconds': time.perf_counter() - t, 'rows': len(b)}}
""",
    "bbo replay": """
import time, obook
import obook.engine.worker_main as _wm; getattr(_wm, 'warm', lambda: None)()  # every format's kernels loaded
t = time.perf_counter()
n = sum(b.num_rows for b in obook.bbo({path!r}, workers={workers}))
_r = {{'seconds': time.perf_counter() - t, 'rows': n}}
""",
    "trades replay": """
import time, obook
import obook.engine.worker_main as _wm; getattr(_wm, 'warm', lambda: None)()  # every format's kernels loaded
t = time.perf_counter()
n = sum(b.num_rows for b in obook.trades({path!r}, workers={workers}))
_r = {{'seconds': time.perf_counter() - t, 'rows': n}}
""",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gz", action="store_true", help="a gzipped feed (the pre-pass gunzips it again; ITCH)")
    ap.add_argument("--format", choices=("itch", "pitch"), default="itch")
    args = ap.parse_args()
    path = pitch_day(args.messages) if args.format == "pitch" else itch_day(args.messages, gz=args.gz)
    results = {k: [] for k in RUNS}
    for rep in range(args.repeats):
        for name, code in RUNS.items():
            results[name].append(run_child(code.format(path=str(path), workers=args.workers, fmt=args.format)))
        print(f"  run {rep + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.2f}s" for k, v in results.items()))
    base = median([r["seconds"] for r in results["trades replay"]])
    print(f"\n{path.name}\n{'run':<18}{'median s':>10}{'/ trades':>10}  rows")
    for name, rs in results.items():
        m = median([r["seconds"] for r in rs])
        print(f"{name:<18}{m:>10.3f}{m / base:>9.2f}x  {rs[0]['rows']}")


if __name__ == "__main__":
    main()
