"""DuckDB front-end overhead: a query over obook_bbo vs consuming obook.bbo directly.

    python benchmarks/bench_duckdb.py [--messages 5000000] [--workers N] [--repeat 5] [--feed PATH]

Generates a synthetic ITCH day (obook.gen.itch.write_itch) unless --feed is given, then
alternates the two runs (so drift in machine load hits both alike) and prints the medians
and their ratio. The target is DuckDB / plain <= 1.1.

* plain:  count the rows and sum ask_px - bid_px with pyarrow.compute, batch by batch;
* duckdb: SELECT count(*), avg(ask_px - bid_px) FROM obook_bbo(path, workers := N).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc

import obook
from obook.duckdb import connect


def run_plain(feed: str, workers: int | None) -> tuple[int, float | None]:
    rows, total, n_spread = 0, 0, 0
    for batch in obook.bbo(feed, workers=workers):
        rows += batch.num_rows
        spread = pc.subtract(batch.column("ask_px"), batch.column("bid_px"))
        total += pc.sum(spread).as_py() or 0
        n_spread += batch.num_rows - spread.null_count
    return rows, (total / n_spread if n_spread else None)


def run_duckdb(con, feed: str, workers: int | None) -> tuple[int, float | None]:
    (rows, avg), = con.execute("SELECT count(*), avg(ask_px - bid_px) FROM obook_bbo(?, workers := ?)",
                               [feed, workers]).fetchall()
    return rows, avg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5_000_000, help="messages of the generated day")
    ap.add_argument("--stocks", type=int, default=500, help="stocks of the generated day")
    ap.add_argument("--workers", type=int, default=None, help="replay workers (default: obook's)")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each, alternating")
    ap.add_argument("--feed", type=Path, default=None, help="use this feed instead of generating one")
    args = ap.parse_args()

    tmp = None
    if args.feed is None:
        from obook.gen.itch import write_itch

        tmp = tempfile.mkdtemp(prefix="obook-bench-")
        feed = str(Path(tmp) / "day.itch")
        start = time.perf_counter()
        write_itch(feed, args.messages, args.stocks, 1)
        print(f"generated {args.messages:,} messages in {time.perf_counter() - start:.1f} s: {feed}")
    else:
        feed = str(args.feed)

    try:
        con = connect()
        con.execute("SET enable_progress_bar = false")
        # warm-up: JIT compilation, page cache, worker start-up code paths
        expected = run_plain(feed, args.workers)
        got = run_duckdb(con, feed, args.workers)
        assert got[0] == expected[0], (got, expected)
        print(f"{expected[0]:,} BBO rows, avg spread {expected[1]:.3f} ticks")

        plain, duck = [], []
        for i in range(args.repeat):
            for name, fn, times in (("plain", lambda: run_plain(feed, args.workers), plain),
                                    ("duckdb", lambda: run_duckdb(con, feed, args.workers), duck)):
                start = time.perf_counter()
                result = fn()
                times.append(time.perf_counter() - start)
                assert result[0] == expected[0]
                print(f"  run {i + 1} {name:6s} {times[-1]:.3f} s")
        con.close()
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    p, d = statistics.median(plain), statistics.median(duck)
    print(f"median plain  {p:.3f} s  ({expected[0] / p / 1e6:.2f} M rows/s)")
    print(f"median duckdb {d:.3f} s  ({expected[0] / d / 1e6:.2f} M rows/s)")
    print(f"ratio duckdb/plain = {d / p:.3f}  (target <= 1.1)")


if __name__ == "__main__":
    main()
