"""The own-order simulation's kernels alone: the decoded batches of a generated ITCH day and
the prepared own orders of ``bench_simulate.py`` (10,000 orders in 100 instruments) are
captured once into a file, then a fresh simulation worker (``SimWorker``: its shadow books,
``sim_events``, ``sim_finish``) runs over them, in CPU seconds (``time.process_time``),
median of ``--repeats`` runs after a warm-up run.

    python benchmarks/bench_simulate_kernel.py capture FILE [--messages 2000000] [--depth]
    python benchmarks/bench_simulate_kernel.py run FILE [--repeats 7]

To compare two trees, capture once, then run the file in each tree's fresh processes,
alternating (``PYTHONPATH=TREE``); the batches and orders do not depend on the tree.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def capture(path: str, messages: int, depth: bool) -> None:
    from bench_simulate import own_orders
    from common import captured_batches, itch_day

    import obook
    from obook.engine.replay import Replay
    from obook.simulation import observer

    day = itch_day(messages, 8000)
    orders = own_orders(Replay(day, workers=1, format="itch").reader().read_all(), 10_000, 100)
    own = ("bbo_with_own", "depth_with_own") if depth else ("bbo_with_own",)
    with captured_batches(observer.SimObserver) as got:
        obook.simulate(day, orders, workers=1, format="itch", latency=50_000, own_tables=own)
    with open(path, "wb") as f:
        pickle.dump(got, f)
    print(f"captured {len(got['batches'])} batches, {sum(b[1] for b in got['batches']):,} events")


def run(path: str, repeats: int) -> None:
    with open(path, "rb") as f:
        got = pickle.load(f)
    obs, batches = got["observer"], got["batches"]

    def once():
        w = obs.worker(0, 1)
        t = time.process_time()
        for events, n, names in batches:
            w.batch(events, n, names)
        w.finish()
        return time.process_time() - t
    once()
    runs = [once() for _ in range(repeats)]
    print(json.dumps({"cpu_s": round(statistics.median(runs), 4), "runs": [round(r, 4) for r in runs]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("capture", "run"))
    ap.add_argument("file")
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--depth", action="store_true")
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    if a.mode == "capture":
        capture(a.file, a.messages, a.depth)
    else:
        run(a.file, a.repeats)


if __name__ == "__main__":
    main()
