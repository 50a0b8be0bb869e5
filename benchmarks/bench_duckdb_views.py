"""How DuckDB reads a Python Arrow stream source through each kind of view, in one process,
alternating (the order reversed every other round), medians:

* register: ``con.register(name, source)`` (a temporary view of the default catalog);
* relation view: ``con.from_arrow(source).create_view(name)``;
* each of the two made while an attached in-memory catalog is the default, as
  ``obook.duckdb`` keeps its helper views out of ``SHOW TABLES``.

    python benchmarks/bench_duckdb_views.py [--rows 4000000] [--rounds 31]
"""

from __future__ import annotations

import argparse
import statistics
import time

import duckdb
import numpy as np
import pyarrow as pa


class Source:
    """A fresh stream of the same batches at every scan, like obook's pool entries."""

    def __init__(self, table: pa.Table):
        self.table, self.batches = table, table.to_batches(max_chunksize=65536)

    def __arrow_c_schema__(self):
        return self.table.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema=None):
        reader = pa.RecordBatchReader.from_batches(self.table.schema, iter(self.batches))
        return reader.__arrow_c_stream__(requested_schema)


def _connection(table: pa.Table, relation: bool, attached: bool):
    con = duckdb.connect()
    if attached:
        con.execute("ATTACH ':memory:' AS hidden (READ_WRITE)")
        con.execute("USE hidden")
    if relation:
        con.from_arrow(Source(table)).create_view("v")
    else:
        con.register("v", Source(table))
    if attached:
        con.execute("USE memory")
    return con, ("hidden.main.v" if attached and relation else "v")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--rounds", type=int, default=31)
    args = ap.parse_args()
    n = args.rows
    table = pa.table({"seq": np.arange(n, dtype=np.uint64), "bid_px": np.arange(n, dtype=np.int64)})
    kinds = {"register": _connection(table, False, False), "relation view": _connection(table, True, False),
             "register, attached default": _connection(table, False, True),
             "relation view, attached catalog": _connection(table, True, True)}
    times: dict = {k: [] for k in kinds}
    for r in range(args.rounds):
        for kind, (con, view) in (list(kinds.items()) if r % 2 else list(kinds.items())[::-1]):
            t = time.perf_counter()
            con.sql(f"SELECT count(*), sum(bid_px) FROM query_table('{view}')").fetchall()
            times[kind].append(time.perf_counter() - t)
    base = statistics.median(times["register"])
    for kind, ts in times.items():
        print(f"{kind}: {statistics.median(ts) * 1000:.2f} ms ({statistics.median(ts) / base:.3f}x register)")


if __name__ == "__main__":
    main()
