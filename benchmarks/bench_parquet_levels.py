"""One depth row group encoded by Arrow's writer alone against obook's level writer
(obook/parquet_levels.py: Arrow writes the head columns, obook's kernels and zstd the 60
level columns): thread CPU per row group, alternating rounds, medians; the two bodies must
be the same bytes. The row group is the first ``--rows`` depth rows of the generated ITCH
day (as the replay's batches make them: a level's three columns share one bitmap).

    python benchmarks/bench_parquet_levels.py --messages 3000000 --stocks 2000 --repeats 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=3_000_000)
    ap.add_argument("--stocks", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=152_303, help="rows of the row group (a 64 MiB one: 152,303)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--profile", action="store_true", help="cProfile the level writer's rounds")
    args = ap.parse_args()

    import pyarrow as pa

    import obook
    import obook.parquet as P

    batches, n = [], 0
    for b in obook.depth(str(itch_day(args.messages, args.stocks)), workers=1, levels=10):
        batches.append(b)
        n += b.num_rows
        if n >= args.rows:
            break
    table = pa.Table.from_batches(batches).slice(0, args.rows)
    import tempfile
    tmp = tempfile.TemporaryDirectory()
    sink = P.ParquetSink(os.path.join(tmp.name, "depth.parquet"), table.schema, "depth")   # its options, its writer

    def arrow():
        return [P._encode(table.schema, sink.options, table)[0]]

    def levels():
        body, meta = P._encode(sink._head_schema, sink._head_options, sink._levels.head(table))
        return sink._levels.append(body, meta, table)[0]

    same = bytes(arrow()[0]) == b"".join(bytes(p) for p in levels())
    times = {"arrow": [], "levels": []}
    for _ in range(args.repeats):
        for name, fn in (("arrow", arrow), ("levels", levels)):
            t = time.thread_time()
            fn()
            times[name].append(time.thread_time() - t)
    a, lv = statistics.median(times["arrow"]), statistics.median(times["levels"])
    print(f"{table.num_rows:,} rows, {table.num_columns} columns ({len(sink._levels.names)} level columns), "
          f"same bytes: {same}")
    print(f"Arrow alone {a * 1e3:.1f} ms, level writer {lv * 1e3:.1f} ms ({lv / a:.2f}x), "
          f"medians of {args.repeats} alternating rounds (thread CPU)")
    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile(time.thread_time)
        prof.enable()
        for _ in range(args.repeats):
            levels()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(10)
    sink.discard()
    tmp.cleanup()


if __name__ == "__main__":
    main()
