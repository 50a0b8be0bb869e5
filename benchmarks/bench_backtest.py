"""Closed-loop backtest speed: the market maker (tests/hftbacktest_support.py: one share at
each best, re-quoted on a timer) as an obook compiled strategy against the same strategy in
hftbacktest 2.4.4's L3 FIFO model, on one generated Databento MBO day; and obook's backtest
against a plain replay (bbo) of the same day, in one worker (the backtest's books are one
process's) and with the default workers. Medians of alternating runs in one process
(each tool warmed up on a small day first, so no compile time is counted).

    pip install --no-deps hftbacktest==2.4.4     # without its numba and numpy pins
    python benchmarks/bench_backtest.py [RECORDS[,RECORDS...]] [RUNS]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

FEED, ORDER, RESPONSE, PERIOD = 1_000, 2_000, 3_000, 100_000     # ns


def day(records: int, seed: int = 7):
    from common import DATA
    from obook.gen.databento import mbo_flow, write_dbn

    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"mbo_{records}_{seed}.dbn"
    flow = mbo_flow(records, instruments=1, seed=seed, clears=0.0)
    write_dbn(path, flow, encoder=False)     # always: hftbacktest gets this flow, obook the file
    return str(path), flow


def run_market_maker(path, mm):
    """obook's backtest of the day at ``path`` with the market maker ``mm``
    (hftbacktest_support.obook_market_maker) on the benchmark's timer and latencies."""
    from obook.backtest import backtest, compiled
    from obook.live.risk import RiskGate

    return backtest(path, compiled(mm, on=("timer",), timer=PERIOD), feed_latency=FEED, order_latency=ORDER,
                    response_latency=RESPONSE, risk=RiskGate(max_orders_per_second=100_000))


def run_hbt_market_maker(events, hmm) -> int:
    """hftbacktest's backtest of ``events`` (hbt_events) with its market maker ``hmm``
    (L3 FIFO, the same latencies); returns its fills."""
    from hftbacktest import BacktestAsset, HashMapMarketDepthBacktest

    asset = (BacktestAsset().data([events]).linear_asset(1.0).constant_order_latency(ORDER, RESPONSE)
             .l3_fifo_queue_model().no_partial_fill_exchange().trading_value_fee_model(0.0, 0.0)
             .tick_size(0.01).lot_size(1.0))
    hbt = HashMapMarketDepthBacktest([asset])
    n = hmm(hbt, PERIOD, np.zeros((1 << 20, 3), np.int64))
    hbt.close()
    return n


def main(sizes=(5_000_000,), runs: int = 3) -> None:
    import obook
    from hftbacktest_support import hbt_events, hbt_market_maker, obook_market_maker

    mm, hmm = obook_market_maker(), hbt_market_maker()

    def run_obook(path):
        t = time.perf_counter()
        r = run_market_maker(path, mm)
        return time.perf_counter() - t, r.summary["fills"]

    def run_replay(path, workers=1):
        t = time.perf_counter()
        for _ in obook.bbo(path, workers=workers):
            pass
        return time.perf_counter() - t, 0

    def run_replay_default(path):
        return run_replay(path, None)

    def run_hbt(events):
        t = time.perf_counter()
        n = run_hbt_market_maker(events, hmm)
        return time.perf_counter() - t, n

    small, sflow = day(20_000, seed=3)
    run_obook(small), run_replay(small), run_hbt(hbt_events(sflow, int(sflow["instrument_id"][0]), FEED))
    for records in sizes:
        path, flow = day(records)
        events = hbt_events(flow, int(flow["instrument_id"][0]), FEED)
        times = {"obook backtest": [], "obook replay (bbo)": [], "replay, default workers": [], "hftbacktest": []}
        fills = {}
        loads = [os.getloadavg()[0]]
        for _ in range(runs):
            for name, fn, arg in (("obook backtest", run_obook, path), ("hftbacktest", run_hbt, events),
                                  ("obook replay (bbo)", run_replay, path),
                                  ("replay, default workers", run_replay_default, path)):
                s, n = fn(arg)
                times[name].append(s)
                fills[name] = n
            loads.append(os.getloadavg()[0])
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"day: {records:,} MBO records ({len(events):,} hftbacktest events), timer {PERIOD} ns, "
              f"latencies feed {FEED} order {ORDER} response {RESPONSE} ns; load {min(loads):.1f}-{max(loads):.1f}")
        for k, v in med.items():
            print(f"{k:23s} median {v:7.2f} s  ({records / v / 1e6:6.2f} M records/s)  runs {['%.2f' % x for x in times[k]]}"
                  f"  fills {fills[k]}")
        print(f"obook / hftbacktest throughput: {med['hftbacktest'] / med['obook backtest']:.2f}x")
        print(f"backtest / plain replay time:   {med['obook backtest'] / med['obook replay (bbo)']:.2f}x "
              f"(one worker), {med['obook backtest'] / med['replay, default workers']:.2f}x (default workers)")


if __name__ == "__main__":
    answer_help(__doc__)
    main(tuple(int(x) for x in sys.argv[1].split(",")) if len(sys.argv) > 1 else (5_000_000,),
         int(sys.argv[2]) if len(sys.argv) > 2 else 3)
