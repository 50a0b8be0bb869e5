"""The orders rows of a Databento clear (R) of one busy book: with queue places (the queues
walked) and without (``queue_positions=False``: the book's orders found in the order index,
then sorted: bids then asks, best price first, by order id). One instrument with N resting
orders at 200 prices a side, then its clear; wall seconds of each table, warm, alternating.

    python benchmarks/bench_clear_rows.py [--orders 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def write_day(path: Path, k: int) -> None:
    from obook.gen.databento import MBO_DTYPE, START_NS, write_dbn

    rng = np.random.default_rng(1)
    rows = np.zeros(k + 1, dtype=MBO_DTYPE)
    rows["length"], rows["rtype"], rows["publisher_id"], rows["ts_in_delta"] = 14, 0xA0, 1, 250
    rows["instrument_id"] = 7
    rows["ts_event"] = START_NS + np.arange(k + 1) * 1000
    rows["ts_recv"] = rows["ts_event"] + 1000
    rows["order_id"] = np.arange(1, k + 2)
    side = rng.integers(0, 2, k + 1)
    ticks = rng.integers(1, 200, k + 1) * 10_000_000
    rows["price"] = np.where(side == 0, 100_000_000_000 - ticks, 100_000_000_000 + ticks)
    rows["size"], rows["flags"], rows["action"] = 100, 0x80, b"A"
    rows["side"] = np.where(side == 0, b"B", b"A")
    rows["action"][-1], rows["side"][-1], rows["price"][-1], rows["order_id"][-1] = b"R", b"N", 0, 0
    rows["sequence"] = np.arange(1, k + 2)
    write_dbn(path, rows)


def main() -> None:
    import obook

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clear.dbn"
        write_day(path, a.orders)
        times = {True: [], False: []}
        for r in range(a.rounds + 1):
            for queues in (False, True):
                t = time.perf_counter()
                n = obook.orders(path, workers=1, queue_positions=queues).read_all().num_rows
                if r:               # round 0 warms up (kernels loaded)
                    times[queues].append(time.perf_counter() - t)
        for queues in (False, True):
            print(f"{'with queues' if queues else 'index, sorted'}: {n} rows, median "
                  f"{statistics.median(times[queues]):.3f} s")


if __name__ == "__main__":
    main()
