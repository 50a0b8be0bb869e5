"""Cost of reading tables through the table registry (units metadata, the shaping of each
batch): ``obook.<table>(day).read_all()`` in fresh processes, or with ``--duckdb`` a query
over ``obook_<table>(day)`` on ``obook.connect()`` (the helper views, the stream per query),
or with ``--install`` ``obook.duckdb.install`` on a fresh connection (its helper views and
macros), this checkout against another checkout's obook (``--baseline DIR``), alternating,
medians.

    python benchmarks/bench_registry.py --messages 1000000 --stocks 1000 --repeats 5 --baseline DIR [--duckdb | --install]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median  # noqa: E402

CODE = """
import sys, time, json
{path}
import obook
t = time.perf_counter()
n = getattr(obook, {table!r})({day!r}, workers={workers}).read_all().num_rows
print(json.dumps({{"seconds": time.perf_counter() - t, "rows": n}}))
"""

SQL = """
import sys, time, json
{path}
import obook
con = obook.connect()
t = time.perf_counter()
n = con.sql("SELECT count(*), count(ticker) FROM obook_{table}('{day}', workers := {workers})").fetchall()[0][0]
print(json.dumps({{"seconds": time.perf_counter() - t, "rows": n}}))
"""

INSTALL = """
import sys, time, json
{path}
import duckdb, obook, obook.duckdb
t = time.perf_counter()
obook.duckdb.install(duckdb.connect())
print(json.dumps({{"seconds": time.perf_counter() - t, "rows": 0}}))
"""


def run(day, table, workers, baseline=None, mode="read") -> dict:
    path = f"sys.path.insert(0, {baseline!r})" if baseline else ""
    code = {"read": CODE, "duckdb": SQL, "install": INSTALL}[mode].format(path=path, table=table, day=str(day),
                                                                          workers=workers)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--stocks", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tables", default="bbo,trades")
    ap.add_argument("--baseline", required=True, help="a directory holding another checkout's obook package")
    ap.add_argument("--duckdb", action="store_true", help="time a DuckDB query over obook_<table> instead")
    ap.add_argument("--install", action="store_true", help="time obook.duckdb.install on a fresh connection")
    args = ap.parse_args()
    day = itch_day(args.messages, args.stocks)
    mode = "install" if args.install else "duckdb" if args.duckdb else "read"
    tables = args.tables.split(",")
    for table in tables:            # warm-up: compile both checkouts' kernels
        run(day, table, args.workers, None, mode), run(day, table, args.workers, args.baseline, mode)
    times: dict = {}
    for r in range(args.repeats):
        for table in tables:
            for who, base in (("new", None), ("baseline", args.baseline)):
                got = run(day, table, args.workers, base, mode)
                times.setdefault((table, who), []).append(got["seconds"])
                print(f"run {r + 1}: {table} {who} {got['seconds']:.2f}s ({got['rows']} rows)", flush=True)
    for table in tables:
        new, old = median(times[table, "new"]), median(times[table, "baseline"])
        print(f"{table}: new {new:.3f}s baseline {old:.3f}s ratio {new / old:.3f}")


if __name__ == "__main__":
    main()
