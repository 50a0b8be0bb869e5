"""Where one closed-loop backtest's wall time goes: the market maker of bench_backtest.py on
its generated Databento MBO day, split into the backtest worker (its kernel over every
batch), its finish, the tables and summary, and the rest (reading, decoding and the replay's
books). Each run is a whole ``obook.backtest``; run the script a few times, alternating with
another tree on PYTHONPATH, to compare (fresh processes see fresh memory, as users do).

    python benchmarks/bench_backtest_parts.py [RECORDS] [RUNS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main(records: int = 5_000_000, runs: int = 3) -> None:
    import obook.backtest.tables as tables
    import obook.backtest.worker as worker
    from bench_backtest import FEED, ORDER, PERIOD, RESPONSE, day
    from hftbacktest_support import obook_market_maker
    from obook.backtest import backtest, compiled
    from obook.live.risk import RiskGate

    spent = {"worker": 0.0, "finish": 0.0, "tables": 0.0}

    def timed(owner, name, part):
        fn = getattr(owner, name)

        def run(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[part] += time.perf_counter() - t
        setattr(owner, name, run)

    timed(worker.BacktestWorker, "batch", "worker")
    timed(worker.BacktestWorker, "finish", "finish")
    timed(tables, "build", "tables")
    mm = obook_market_maker()

    def one(path):
        return backtest(path, compiled(mm, on=("timer",), timer=PERIOD), feed_latency=FEED, order_latency=ORDER,
                        response_latency=RESPONSE, risk=RiskGate(max_orders_per_second=100_000))

    one(day(20_000, seed=3)[0])
    path, _ = day(records)
    for _ in range(runs):
        for k in spent:
            spent[k] = 0.0
        t = time.perf_counter()
        fills = one(path).summary["fills"]
        total = time.perf_counter() - t
        parts = "  ".join(f"{k} {v:.3f}" for k, v in spent.items())
        print(f"total {total:.3f} s  {parts}  rest {total - sum(spent.values()):.3f}  fills {fills}", flush=True)


if __name__ == "__main__":
    answer_help(__doc__)
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
