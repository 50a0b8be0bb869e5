"""Own-order simulation benchmark: 10,000 own orders inside a generated ITCH day.

The plain replay (the bbo table of ``Replay``, read whole) and ``obook.simulate`` with the
same feed table plus the own orders, alternated in one process after a warm-up run of
each; medians of ``--repeats`` runs and the ratio simulate / replay (target <= 1.3).

Own orders are drawn from the feed's own bbo rows (so they sit at or near the touch) for
``--instruments`` random instruments: 70% new (limit at the bid / ask +- 0-2 ticks, either
side, every TIF, some market), 20% cancels, 10% modifies, 50 us of latency.

    python benchmarks/bench_simulate.py [--messages 5000000] [--orders 10000] [--instruments 100]
        [--workers 1] [--repeats 3] [--no-warm] [--depth]

``--no-warm``: do not load the simulation kernels in this process first (as older code
did: forked workers then load them from numba's cache at every simulation).
``--depth``: the simulation also builds depth_with_own (10 levels).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))


def own_orders(bbo: pa.Table, n: int, instruments: int, seed: int = 42) -> pa.Table:
    rng = np.random.default_rng(seed)
    both = bbo.filter(pc.and_(pc.is_valid(bbo["bid_px"]), pc.is_valid(bbo["ask_px"])))
    tickers = np.array(sorted(set(both.column("ticker").to_pylist())), dtype=object)
    chosen = rng.choice(tickers, size=min(instruments, len(tickers)), replace=False)
    rows = both.filter(pc.is_in(both["ticker"], value_set=pa.array(list(chosen))))
    pick = np.sort(rng.choice(rows.num_rows, size=n, replace=True))
    t = rows.take(pa.array(pick))
    time_ = t.column("time").to_numpy().astype(np.int64)
    ticker = np.array(t.column("ticker").to_pylist(), dtype=object)
    bid, ask = t.column("bid_px").to_numpy(), t.column("ask_px").to_numpy()
    kind = rng.random(n)
    side = rng.integers(0, 2, n)
    price = np.where(side == 0, bid, ask) + 100 * rng.integers(-2, 3, n) * np.where(rng.random(n) < 0.3, -1, 1)
    oid = np.arange(1, n + 1)
    action = np.where(kind < 0.7, "new", np.where(kind < 0.9, "cancel", "modify")).astype(object)
    # a cancel / modify names an earlier order of the same instrument (else an unknown id: rejected)
    target = oid.copy()
    last: dict = {}
    for i in range(n):
        if action[i] == "new":
            last.setdefault(ticker[i], []).append(oid[i])
        elif last.get(ticker[i]):
            target[i] = last[ticker[i]][rng.integers(len(last[ticker[i]]))]
    tif = np.array(["GTC", "DAY", "IOC", "FOK"], dtype=object)[rng.choice(4, n, p=[0.5, 0.3, 0.15, 0.05])]
    market = (rng.random(n) < 0.05) & (action == "new")
    return pa.table({
        "time": time_, "instrument": ticker.astype(str), "order_id": np.where(action == "new", oid, target),
        "action": action.astype(str), "side": np.where(side == 0, "buy", "sell"),
        "type": np.where(market, "market", "limit"), "tif": np.where(market, "IOC", tif.astype(str)),
        "price": pa.array(np.where(market, 0, price), mask=market | (action == "cancel")),
        "quantity": pa.array(rng.integers(1, 500, n), mask=action == "cancel"),
    })


def _cpu() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=5_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--orders", type=int, default=10_000)
    ap.add_argument("--instruments", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-warm", action="store_true")
    ap.add_argument("--depth", action="store_true")
    a = ap.parse_args()

    from common import itch_day

    import obook
    from obook.engine.replay import Replay

    day = itch_day(a.messages, a.stocks)
    if a.no_warm:
        import obook.simulation.observer as observer
        observer.warm = lambda: None
    own_tables = ("bbo_with_own", "depth_with_own") if a.depth else ("bbo_with_own",)

    def plain():
        return Replay(day, workers=a.workers, format="itch").reader().read_all()

    bbo = plain()
    orders = own_orders(bbo, a.orders, a.instruments)

    def sim():
        return obook.simulate(day, orders, workers=a.workers, format="itch", latency=50_000, own_tables=own_tables)

    def sim_own_books():      # no feed tables: only the own instruments' books are replayed
        return obook.simulate(day, orders, workers=a.workers, format="itch", latency=50_000, feed_tables=(),
                              own_tables=own_tables)

    r = sim()
    sim_own_books()
    # wall and CPU time (this process and its workers) of alternated runs; the machine is
    # shared, so the ratio of each pair (and CPU time, for workers=1) is what to read
    times = {"replay": [], "simulate": [], "own_books": []}
    cpu = {"replay": [], "simulate": [], "own_books": []}
    for _ in range(a.repeats):
        for name, fn in (("replay", plain), ("simulate", sim), ("own_books", sim_own_books)):
            t, c = time.perf_counter(), _cpu()
            fn()
            times[name].append(time.perf_counter() - t)
            cpu[name].append(_cpu() - c)
    med = {k: statistics.median(v) for k, v in times.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    pairs = [s / p for s, p in zip(cpu["simulate"], cpu["replay"])]
    print(json.dumps({
        "messages": a.messages, "own_orders": a.orders, "instruments": a.instruments, "workers": a.workers,
        "warm": not a.no_warm, "depth_with_own": a.depth,
        "fills": r.fills.num_rows, "events": r.events.num_rows, "bbo_rows": r.bbo.num_rows,
        "replay_s": round(med["replay"], 3), "simulate_s": round(med["simulate"], 3),
        "ratio": round(med["simulate"] / med["replay"], 3),
        "replay_cpu_s": round(cmed["replay"], 3), "simulate_cpu_s": round(cmed["simulate"], 3),
        "cpu_ratio": round(cmed["simulate"] / cmed["replay"], 3),
        "median_pair_cpu_ratio": round(statistics.median(pairs), 3),
        "median_pair_wall_ratio": round(statistics.median(
            [s / p for s, p in zip(times["simulate"], times["replay"])]), 3),
        "own_books_cpu_s": round(cmed["own_books"], 3),
        "own_books_cpu_ratio": round(cmed["own_books"] / cmed["replay"], 3),
        "runs": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "cpu_runs": {k: [round(x, 3) for x in v] for k, v in cpu.items()},
    }))


if __name__ == "__main__":
    main()
