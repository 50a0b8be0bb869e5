"""Backtests one after another in one process, their output buffers' mappings kept for the
next one (obook.engine.buffers: ``KEEP``) or not (``KEEP = 0``), alternating; each backtest
followed by an hftbacktest run of the same day, as in bench_backtest.py (other work that
allocates and frees memory between them). Wall time, the process's system time and page
faults, medians.

    pip install --no-deps hftbacktest==2.4.4
    python benchmarks/bench_backtest_kept.py [ROUNDS]
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


def main(rounds: int = 8) -> None:
    from bench_backtest import FEED, day, run_hbt_market_maker, run_market_maker
    from hftbacktest_support import hbt_events, hbt_market_maker, obook_market_maker
    from obook.engine import buffers

    path, flow = day(5_000_000)
    events = hbt_events(flow, int(flow["instrument_id"][0]), FEED)
    mm, hmm = obook_market_maker(), hbt_market_maker()
    keep = buffers.KEEP

    def run(kept: bool):
        buffers.KEEP = keep if kept else 0
        if not kept:
            buffers.release_kept()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        run_market_maker(path, mm)
        wall = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        return wall, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt

    def run_hbt():
        t = time.perf_counter()
        run_hbt_market_maker(events, hmm)
        return time.perf_counter() - t

    run(True), run(False), run_hbt()
    got, between = {True: [], False: []}, []
    for i in range(rounds):
        for kept in ((True, False) if i % 2 == 0 else (False, True)):
            got[kept].append(run(kept))
            between.append(run_hbt())
    buffers.KEEP = keep
    for kept, rows in got.items():
        print(f"{'kept' if kept else 'not kept'}: wall {statistics.median(r[0] for r in rows):.3f} s "
              f"(runs {' '.join('%.3f' % r[0] for r in rows)}), system {statistics.median(r[1] for r in rows):.3f} s, "
              f"page faults {statistics.median(r[2] for r in rows):,.0f}")
    print(f"hftbacktest between them: median {statistics.median(between):.3f} s")


if __name__ == "__main__":
    answer_help(__doc__)
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
