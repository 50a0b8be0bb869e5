"""The backtest's events table with each event's ref and side taken from its instruction
when the venue rejected it as naming no order (``Rows.event_ref_side``) against the
columns read straight from the rows (as before): CPU of building the events table from
the rows of bench_backtest.py's market maker day, alternating in one process, medians.

    python benchmarks/ablate_event_refs.py [RECORDS] [RUNS]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    answer_help(__doc__)
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 41
    import obook.backtest.columns as C
    import obook.backtest.tables as T
    from bench_backtest_equity import rows_of_day
    from obook._kernels.simulate_layout import E_KEY, E_SIDE

    rows = rows_of_day(records)
    new = C.EVENT_COLUMNS
    old = tuple((n, t, k, (lambda r: r.refs(r.ev[:, E_KEY])) if n == "ref" else
                 (lambda r: C._sides(r.ev[:, E_SIDE])) if n == "side" else f) for n, t, k, f in new)
    result = T.build(rows, *BUILD_ARGS(rows))[0]
    times = {"old": [], "new": []}
    for i in range(runs):
        for side in (("new", "old") if i % 2 == 0 else ("old", "new")):
            C.EVENT_COLUMNS = new if side == "new" else old
            C.COLUMNS["events"] = C.EVENT_COLUMNS
            r = T.build(rows, *BUILD_ARGS(rows))[0]
            t = time.process_time()
            r["events"]
            times[side].append(time.process_time() - t)
    print(f"events of {result['events'].num_rows:,} rows: old {statistics.median(times['old']) * 1e3:.2f} ms, "
          f"new {statistics.median(times['new']) * 1e3:.2f} ms (medians of {runs}), new/old "
          f"{statistics.median(times['new']) / statistics.median(times['old']):.3f}")


def BUILD_ARGS(rows):  # noqa: N802 - the build's other arguments as bench_backtest_equity passes them
    from obook.backtest.tables import Fees

    return (Fees(), 1, 60_000_000_000)


if __name__ == "__main__":
    main()
