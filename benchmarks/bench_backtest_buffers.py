"""A backtest's output buffers: first sized from the feed and faulted in ahead of their rows
by the prefaulter's thread (obook.engine.buffers.Prefaulter), against small first buffers
that grow and take their page faults in the backtest's own thread. The market maker of
bench_backtest.py on the same generated Databento MBO day, the two ways alternating in one
process; wall time, the calling thread's CPU (user and system) and its page faults.

    python benchmarks/bench_backtest_buffers.py [RECORDS] [RUNS]
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main(records: int = 5_000_000, runs: int = 5) -> None:
    from bench_backtest import FEED, ORDER, PERIOD, RESPONSE, day
    from hftbacktest_support import obook_market_maker
    from obook.backtest import backtest, compiled, worker
    from obook.engine import buffers
    from obook.live.risk import RiskGate

    path, _ = day(records)
    mm = obook_market_maker()
    sized, enabled = worker.first_rows, buffers.Prefaulter.__init__

    def small(n):
        return worker.CHUNK, worker.CHUNK

    def off(self, *a, **kw):
        enabled(self, *a, **kw)
        self.enabled = False

    def run(variant):
        worker.first_rows = sized if variant == "prefaulted" else small
        buffers.Prefaulter.__init__ = enabled if variant == "prefaulted" else off
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        t = time.perf_counter()
        r = backtest(path, compiled(mm, on=("timer",), timer=PERIOD), feed_latency=FEED, order_latency=ORDER,
                     response_latency=RESPONSE, risk=RiskGate(max_orders_per_second=100_000))
        wall = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        return (wall, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt,
                r.summary["fills"])

    variants = ("growing", "prefaulted")
    for v in variants:
        run(v)      # warm
    got = {v: [] for v in variants}
    for i in range(runs):
        for v in (variants if i % 2 == 0 else variants[::-1]):
            got[v].append(run(v))
    print(f"{records:,} MBO records, {runs} runs each, alternating")
    for v in variants:
        rows = got[v]
        med = [statistics.median(x[k] for x in rows) for k in range(4)]
        print(f"{v:11s} wall {med[0]:.3f} s (runs {', '.join('%.3f' % x[0] for x in rows)})  calling thread "
              f"user {med[1]:.3f} s, system {med[2]:.3f} s, page faults {med[3]:,.0f}; fills {rows[0][4]:,}")
    a, b = (statistics.median(x[0] for x in got[v]) for v in variants)
    print(f"prefaulted / growing wall: {b / a:.3f}")


if __name__ == "__main__":
    answer_help(__doc__)
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
