"""L2 backtest speed: a quoting strategy (re-quotes 100 at each best when it moves, Python)
against obook's ``mbp10`` table of a generated Databento MBO day, with each queue model;
rows a second, medians of alternating runs in one process (warmed up first: no compile).

    python benchmarks/bench_backtest_l2.py [RECORDS] [RUNS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main(records: int = 200_000, runs: int = 3) -> None:
    import obook
    from obook.backtest import backtest
    from obook.gen.databento import mbo_flow, write_dbn
    from obook.live.risk import RiskGate
    from test_backtest_l2 import Quote          # the tests' quoting strategy

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mbo.dbn"
        write_dbn(path, mbo_flow(records, instruments=1, seed=3))
        day = obook.table("mbp10", str(path)).read_all()
    risk = RiskGate(max_orders_per_second=10**6, band_bps=10**6, max_notional=10**18)
    models = ("power:2", "log", "risk-averse")
    for q in models:                                      # warm-up (compiles on a first run)
        backtest(day.slice(0, 2000), Quote(), queue=q, risk=risk)
    took = {q: [] for q in models}
    fills = {}
    for _ in range(runs):
        for q in models:
            start = time.perf_counter()
            r = backtest(day, Quote(), queue=q, order_latency=50_000, response_latency=50_000, risk=risk)
            took[q].append(time.perf_counter() - start)
            fills[q] = (r.summary["orders"], r.summary["fills"])
    for q in models:
        med = statistics.median(took[q])
        print(f"{q:12s} {day.num_rows:8d} rows  {med:6.2f} s  {day.num_rows / med / 1e3:7.1f} k rows/s  "
              f"orders, fills {fills[q]}  runs {', '.join(f'{t:.2f}' for t in took[q])}")


if __name__ == "__main__":
    answer_help(__doc__)
    main(*(int(a) for a in sys.argv[1:3]))
