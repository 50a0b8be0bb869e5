"""What a Python strategy's call costs the backtest: a generated ITCH day (20,000 messages,
3 stocks, a whole session) with a strategy whose only work is a timer every ``--timer-ns``
(about 2.3 M calls at 10 ms) that reads nothing, in a fresh process. Reports wall seconds
and µs per call, medians of ``--repeats`` rounds; ``--baseline DIR`` runs another
checkout's obook (``PYTHONPATH=DIR``) in the same rounds, the order swapped every round.

    python benchmarks/bench_backtest_calls.py [--repeats 5] [--timer-ns 10000000] [--baseline /tmp/old]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, median, run_child  # noqa: E402

SCRIPT = """
import time
from obook.backtest import backtest

class Idle:
    timer = {timer}
    calls = 0

    def on_timer(self, ctx):
        self.calls += 1

s = Idle()
t = time.perf_counter()
r = backtest({day!r}, s, order_latency=1_000)
_r = {{'seconds': time.perf_counter() - t, 'calls': s.calls}}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--timer-ns", type=int, default=10_000_000)
    ap.add_argument("--baseline", help="another checkout's directory (holding its obook package)")
    args = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    day = DATA / "itch_20000_3_5.itch"
    if not day.exists():
        from obook.gen.itch import write_itch
        write_itch(day, 20_000, 3, seed=5)
    code = SCRIPT.format(timer=args.timer_ns, day=str(day))
    sides = [("this", None)] + ([("baseline", args.baseline)] if args.baseline else [])
    for _, d in sides:                      # kernels compiled and cached first
        run_child(code, d)
    res = {name: [] for name, _ in sides}
    for rep in range(args.repeats):
        for name, d in (sides if rep % 2 == 0 else sides[::-1]):
            res[name].append(run_child(code, d))
        print(f"round {rep + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.2f} s" for k, v in res.items()), flush=True)
    for name, rows in res.items():
        calls = rows[0]["calls"]
        assert all(r["calls"] == calls for r in rows)
        s = median([r["seconds"] for r in rows])
        print(json.dumps({"tree": name, "calls": calls, "seconds": round(s, 3), "us_per_call": round(1e6 * s / calls, 3)}))
    if args.baseline:
        ratios = [a["seconds"] / b["seconds"] for a, b in zip(res["this"], res["baseline"])]
        print(f"this / baseline: median {median(ratios):.3f} ({' '.join(f'{x:.3f}' for x in ratios)})")


if __name__ == "__main__":
    main()
