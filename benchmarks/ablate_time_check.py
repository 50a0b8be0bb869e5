"""The replay's check that every row's time has an int64 ns timestamp (rows before an out of
range time delivered, then an error naming its record) against no check, in one process,
alternating: CPU of a dated replay of a feed's tables, medians.

    python benchmarks/ablate_time_check.py FEED DATE [--tables bbo,trades] [--runs 8]
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("feed")
    ap.add_argument("date")
    ap.add_argument("--tables", default="bbo")
    ap.add_argument("--runs", type=int, default=8)
    a = ap.parse_args()
    import obook
    from obook.engine.replay import Replay

    checked = Replay._time_out_of_range
    tables = a.tables.split(",")

    def run():
        t = time.process_time()
        for name in tables:
            getattr(obook, name)(a.feed, workers=1, date=a.date).read_all()
        return time.process_time() - t

    run()
    times = {"check": [], "none": []}
    for i in range(a.runs):
        for side in (("check", "none") if i % 2 == 0 else ("none", "check")):
            Replay._time_out_of_range = checked if side == "check" else (lambda self, built: None)
            times[side].append(run())
    c, n = statistics.median(times["check"]), statistics.median(times["none"])
    print(f"{a.feed} {a.tables}: check {c:.3f} s, none {n:.3f} s (medians of {a.runs}); check/none {c / n:.3f}")


if __name__ == "__main__":
    main()
