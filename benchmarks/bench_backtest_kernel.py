"""Where a closed-loop backtest's time goes, without the replay: the decoded batches of a
generated Databento MBO day are captured once (the backtest's observer), then the backtest
worker alone (its kernel, its buffers, its rows) runs over them for a few strategies and
feed latencies, in CPU seconds (``time.process_time``: fairer than wall time on a shared
machine), medians of alternating runs.

    python benchmarks/bench_backtest_kernel.py [RECORDS] [RUNS] [VARIANT]

VARIANT (a prefix of a variant's name, e.g. "market"): run that one alone; to compare two
trees, run it in fresh processes alternating between them (the minimum is the least
disturbed run on a shared machine).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

FEED, ORDER, RESPONSE, PERIOD = 1_000, 2_000, 3_000, 100_000     # ns


def capture(path, strategy, **kw):
    """(spec, batches) of one backtest: batches as (events copy, n, names)."""
    from common import captured_batches
    from obook.backtest import backtest, worker

    with captured_batches(worker.BacktestObserver) as got:
        backtest(path, strategy, **kw)
    return got["observer"].spec, got["batches"]


def run(spec, batches, build=True):
    """CPU seconds of the worker's batches, of its finish and rows, of the tables."""
    import numpy as np

    from obook.backtest.tables import Fees, build as build_tables
    from obook.backtest.worker import BacktestWorker

    spec.state[:] = 0
    w = BacktestWorker(spec)
    t0 = time.process_time()
    for ev, n, names in batches:
        w.batch(ev, n, names)
    t1 = time.process_time()
    rows = w.finish()
    t2 = time.process_time()
    if build:
        build_tables(rows, Fees(), 1, 60_000_000_000, None)
    t3 = time.process_time()
    return t1 - t0, t2 - t1, t3 - t2, int(len(rows["fills"])), int(np.asarray(rows["events"]).shape[0])


def main(records: int = 1_000_000, runs: int = 3, only: str = "") -> None:
    from bench_backtest import day
    from hftbacktest_support import obook_market_maker
    from obook.backtest import compiled
    from obook._kernels.backtest import noop
    from obook.live.risk import RiskGate

    path, _ = day(records)
    risk = RiskGate(max_orders_per_second=100_000)
    mm = obook_market_maker()
    variants = {
        "noop, zero latency": (compiled(noop, on=("timer",), timer=PERIOD), dict()),
        "noop, feed 1 us": (compiled(noop, on=("timer",), timer=PERIOD), dict(feed_latency=FEED)),
        "noop on bbo, zero lat.": (compiled(noop, on=("bbo",)), dict()),
        "noop on bbo, feed 1 us": (compiled(noop, on=("bbo",)), dict(feed_latency=FEED)),
        "market maker": (compiled(mm, on=("timer",), timer=PERIOD),
                         dict(feed_latency=FEED, order_latency=ORDER, response_latency=RESPONSE)),
    }
    variants = {k: v for k, v in variants.items() if k.startswith(only)}
    if not variants:
        sys.exit(f"no variant starts with {only!r}")
    caps = {k: capture(path, s, risk=risk, **kw) for k, (s, kw) in variants.items()}
    n_ev = sum(n for _, n, _ in next(iter(caps.values()))[1])
    res = {k: [] for k in caps}
    for _ in range(runs):
        for k, (spec, batches) in caps.items():
            res[k].append(run(spec, batches))
    print(f"day: {records:,} records, {n_ev:,} events")
    for k, v in res.items():
        kern = statistics.median(x[0] for x in v)
        fin = statistics.median(x[1] for x in v)
        tab = statistics.median(x[2] for x in v)
        print(f"{k:22s} batches {kern:6.3f} s ({kern / n_ev * 1e9:5.0f} ns/event, min {min(x[0] for x in v):.3f})  "
              f"finish+rows {fin:6.3f} s  "
              f"tables {tab:6.3f} s  fills {v[0][3]} events {v[0][4]}")


if __name__ == "__main__":
    answer_help(__doc__)
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 3,
         sys.argv[3] if len(sys.argv) > 3 else "")
