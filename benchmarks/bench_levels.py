"""Price levels at scale: one book receiving N adds at N distinct prices, then executions
that sweep every level, best first. Prints ns per message of the book kernel
(BookState.apply in batches of 65,536 events, as a worker runs it) at each N: flat as N
grows means level operations do not depend on the number of levels.

Orders of arrival (``--order``): ``worst-first`` (each add is a new worst bid: the old
sorted array shifted every level on each add), ``random`` (a random permutation of the
prices), ``best-first`` (each add a new best bid).

    python benchmarks/bench_levels.py --levels 10000,100000,1000000 --repeats 3
    python benchmarks/bench_levels.py --code /tmp/old_checkout --levels 10000,100000

``--code`` runs the obook package found in another checkout (old against new).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median  # noqa: E402

CHILD = r"""
import json, sys, time
import numpy as np
from obook._kernels.layout import ACT_ADD, ACT_EXEC, EV_WIDTH, ROW_WIDTH, MAX_BATCH_RECORDS
from obook.engine.books import BookState

n, order, queue = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
rng = np.random.default_rng(5)
prices = 1_000_000 + np.arange(n, dtype=np.int64) * 100        # distinct, one cent apart
if order == "worst-first":
    prices = prices[::-1]
elif order == "random":
    prices = rng.permutation(prices)
ev = np.zeros((2 * n, EV_WIDTH), np.int64)
ev[:, 0] = np.arange(1, 2 * n + 1)
ev[:, 1] = ev[:, 0] * 10
ev[:, 2] = 1
ev[:n, 3] = ACT_ADD                                          # bids
ev[:n, 4] = np.arange(1, n + 1)
ev[:n, 5] = 100
ev[:n, 6] = prices
ev[n:, 3] = ACT_EXEC                                         # sweep: best (highest) first
ev[n:, 4] = 1 + np.argsort(-prices, kind="stable")
ev[n:, 5] = 100
ev[n:, 8] = np.arange(n)

def run(events, check=True):
    kw = {"queue": True} if queue else {}
    b = BookState(**kw)
    rows = np.zeros((MAX_BATCH_RECORDS, ROW_WIDTH), np.int64)
    t = [time.perf_counter()]
    for s in range(0, len(events), MAX_BATCH_RECORDS):
        batch = np.ascontiguousarray(events[s:s + MAX_BATCH_RECORDS])
        status, i, nrow = b.apply(batch, len(batch), rows)
        assert status == 0, (status, i)
        if s + MAX_BATCH_RECORDS == n or (s < n <= s + MAX_BATCH_RECORDS):
            t.append(time.perf_counter())
    t.append(time.perf_counter())
    assert b.live_orders == 0 or not check
    return t

run(ev[:200].copy(), check=False)                            # compile / load the cache
t = run(ev)
print(json.dumps({"total": t[-1] - t[0]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="10000,100000,1000000")
    ap.add_argument("--order", default="worst-first", choices=["worst-first", "random", "best-first"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--queue", action="store_true", help="keep time priority (as with the orders table)")
    ap.add_argument("--code", help="a checkout whose obook package to run (default: this one)")
    args = ap.parse_args()
    env = None
    if args.code:
        import os
        env = dict(os.environ, PYTHONPATH=str(Path(args.code).resolve()))
    print(f"order {args.order}, queue {'on' if args.queue else 'off'}, code {args.code or 'this checkout'}")
    print(f"{'levels':>10}{'messages':>12}{'median s':>10}{'ns/message':>12}")
    for n in (int(x) for x in args.levels.split(",")):
        times = []
        for _ in range(args.repeats):
            out = subprocess.run([sys.executable, "-c", CHILD, str(n), args.order, "1" if args.queue else "0"],
                                 capture_output=True, text=True, env=env, cwd="/")
            if out.returncode != 0:
                raise RuntimeError(out.stderr[-2000:])
            times.append(json.loads(out.stdout.strip().splitlines()[-1])["total"])
        s = median(times)
        print(f"{n:>10,}{2 * n:>12,}{s:>10.3f}{s / (2 * n) * 1e9:>12.0f}", flush=True)


if __name__ == "__main__":
    main()
