"""A compiled strategy's backtest in a fresh process: the whole process's wall time for the
market maker (tests/hftbacktest_support.py) on a small generated CSV day, as a user's
script or one day of a many-day run pays it. Kernels compiled and cached first (one run
each, not timed); medians of ``--repeats`` alternating runs. ``--baseline DIR`` runs
another checkout's obook (``PYTHONPATH=DIR``) in the same rounds.

    python benchmarks/bench_backtest_start.py [--repeats 5] [--baseline /tmp/old]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median  # noqa: E402

TESTS = Path(__file__).resolve().parent.parent / "tests"
SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from hftbacktest_support import obook_market_maker
from obook.backtest import backtest, compiled
r = backtest({day!r}, compiled(obook_market_maker(), on=("timer",), timer=3_000_000), format="csv",
             order_latency=1_000_000)
print(r.summary["orders"], r.summary["fills"])
"""


def _day(path: Path, rows: int = 2_000) -> None:
    lines = ["Time,Ticker,Order,T,Shares,Price"]
    for t in range(1, rows):
        buy = t % 2
        lines.append(f"{t},AAA,o{t},{'B' if buy else 'S'},100,{990 - t % 7 if buy else 1000 + t % 5}")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline", help="another checkout's directory (holding obook/)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        day = Path(tmp) / "day.csv"
        _day(day)
        script = SCRIPT.format(tests=str(TESTS), day=str(day))
        envs = {"this": {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OBOOK_KERNELS")}}
        if args.baseline:
            envs["baseline"] = {**envs["this"], "PYTHONPATH": os.path.abspath(args.baseline)}
        out = {}
        for name, env in envs.items():     # compile and cache what a first run needs
            out[name] = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                                       text=True, cwd=tmp, env=env).stdout
        if len(set(out.values())) != 1:
            raise SystemExit(f"the checkouts disagree: {out}")
        times: dict[str, list[float]] = {k: [] for k in envs}
        for _ in range(args.repeats):
            for name, env in envs.items():
                t = time.perf_counter()
                subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, cwd=tmp, env=env)
                times[name].append(time.perf_counter() - t)
    print(f"{'obook':<10}{'median s':>10}{'min s':>8}")
    for name, ts in times.items():
        print(f"{name:<10}{median(ts):>10.3f}{min(ts):>8.3f}")
    if "baseline" in times:
        print(f"this / baseline: {median(times['this']) / median(times['baseline']):.3f}")


if __name__ == "__main__":
    main()
