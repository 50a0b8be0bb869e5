"""The backtest's equity and positions (obook.backtest.equity) on the rows of the market
maker's day of bench_backtest.py: CPU of ``equity()`` (and of the whole tables' build: the summary's, and every table read), medians
of alternating calls in one process. ``--baseline REV`` also times obook/backtest/equity.py
as it was at git revision REV (loaded beside this one), alternating with it.

    python benchmarks/bench_backtest_equity.py [RECORDS] [RUNS] [--baseline REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def rows_of_day(records: int) -> dict:
    """The rows a backtest of the day hands its tables' build."""
    import obook.backtest.tables as tables
    from bench_backtest import day, run_market_maker
    from hftbacktest_support import obook_market_maker

    got = {}
    build = tables.build

    def keep(rows, *args):
        got["rows"] = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in rows.items()}
        return build(rows, *args)
    tables.build = keep
    try:
        run_market_maker(day(records)[0], obook_market_maker())
    finally:
        tables.build = build
    return got["rows"]


def baseline_module(rev: str):
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:obook/backtest/equity.py"], check=True,
                          capture_output=True, text=True).stdout
    text = text.replace("from .._kernels", "from obook._kernels")
    path = Path(tempfile.mkdtemp()) / "equity_baseline.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("equity_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("records", nargs="?", type=int, default=5_000_000)
    ap.add_argument("runs", nargs="?", type=int, default=15)
    ap.add_argument("--baseline")
    a = ap.parse_args()
    from obook._kernels.simulate_layout import F_PRICE, F_QTY, F_TAKER
    from obook.backtest import equity as current
    from obook.backtest.tables import Fees, build

    rows = rows_of_day(a.records)
    fl, mk = rows["fills"], rows["marks"]
    fee = Fees().scaled(fl[:, F_PRICE], fl[:, F_QTY], fl[:, F_TAKER])
    ways = {"current": current.equity}
    if a.baseline:
        ways["baseline " + a.baseline] = baseline_module(a.baseline).equity
    for fn in ways.values():
        fn(rows["names"], fl, fee, mk)          # warm (and compiled)
    times = {k: [] for k in ways}
    names = list(ways)
    for i in range(a.runs):
        for k in (names if i % 2 == 0 else names[::-1]):
            t = time.process_time()
            ways[k](rows["names"], fl, fee, mk)
            times[k].append(time.process_time() - t)
    builds, every = [], []
    for _ in range(a.runs):
        t = time.process_time()
        tables, _ = build(rows, Fees(), 1, 10 ** 9)
        builds.append(time.process_time() - t)
        for name in tables:
            tables[name]
        every.append(time.process_time() - t)
    print(f"{len(fl):,} fills, {len(mk):,} marks; {a.runs} calls each, alternating")
    for k, v in times.items():
        print(f"equity ({k}): median {statistics.median(v) * 1e3:.1f} ms (min {min(v) * 1e3:.1f})")
    print(f"tables' build (current): median {statistics.median(builds) * 1e3:.1f} ms")
    print(f"tables' build, every table read (current): median {statistics.median(every) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
