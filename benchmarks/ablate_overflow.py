"""The overflow order table's growth rule (``BookState.OV_ROWS_KEPT``) on a Databento MBO
day (its dense 64-bit order ids now live in the direct index, whose window follows the
first order's ref, so the table sees only scattered ids; the growth counts printed show
how many times it grew): the plain replay (bbo) and the
closed-loop backtest of bench_backtest.py, with the floor at 64 rows (a table full of
tombstones is rehashed at the same size: the kernel returns to Python every few hundred
orders) and at the default, alternating in one process; medians of the rounds, and how
many times the table grew.

    python benchmarks/ablate_overflow.py [RECORDS] [ROUNDS]
"""

from __future__ import annotations

import collections
import statistics
import sys
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main(records: int = 5_000_000, rounds: int = 3) -> None:
    import obook
    from bench_backtest import FEED, ORDER, PERIOD, RESPONSE, day
    from hftbacktest_support import obook_market_maker
    from obook._kernels.book import ROOM_OVERFLOW
    from obook.backtest import backtest, compiled
    from obook.engine.books import BookState
    from obook.live.risk import RiskGate

    path, _ = day(records)
    mm = obook_market_maker()
    grows = collections.Counter()
    grow = BookState._grow

    def counted(self, room):
        grows[room] += 1
        return grow(self, room)
    BookState._grow = counted

    def run_backtest():
        return backtest(path, compiled(mm, on=("timer",), timer=PERIOD), feed_latency=FEED, order_latency=ORDER,
                        response_latency=RESPONSE, risk=RiskGate(max_orders_per_second=100_000)).summary["fills"]

    def run_replay():
        for _ in obook.bbo(path, workers=1):
            pass
        return 0

    default = BookState.OV_ROWS_KEPT
    run_backtest(), run_replay()
    res = collections.defaultdict(list)
    for r in range(rounds):
        for kept in (64, default):
            BookState.OV_ROWS_KEPT = kept
            for name, fn in (("backtest", run_backtest), ("replay", run_replay)):
                grows.clear()
                t = time.perf_counter()
                fills = fn()
                res[(name, kept)].append(time.perf_counter() - t)
                if r == 0:
                    print(f"{name:8s} floor {kept:6d}: overflow growths {grows[ROOM_OVERFLOW]}, fills {fills}", flush=True)
    BookState.OV_ROWS_KEPT = default
    for (name, kept), v in sorted(res.items()):
        print(f"{name:8s} floor {kept:6d}: median {statistics.median(v):.3f} s  runs {[round(x, 3) for x in v]}")


if __name__ == "__main__":
    answer_help(__doc__)
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
