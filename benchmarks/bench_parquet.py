"""Compression of the one Parquet writer (obook/parquet.py): the BBO and depth(10) tables of a
generated day, held in memory, written with each candidate codec/level and the tuned
encodings; alternating runs, medians of CPU time and the file size.

    python benchmarks/bench_parquet.py [--messages 3000000] [--stocks 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median  # noqa: E402

def _c(codec, level=None, levels_encoding=None, **more):
    out = {"compression": codec, **({"compression_level": level} if level else {}), **more}
    return {**out, "levels_encoding": levels_encoding} if levels_encoding else out


CANDIDATES = {"zstd-1": _c("zstd", 1), "zstd-3": _c("zstd", 3), "zstd-7": _c("zstd", 7),
              "zstd-12": _c("zstd", 12), "lz4": _c("lz4"), "snappy": _c("snappy"),
              "zstd-1-delta": _c("zstd", 1, "DELTA_BINARY_PACKED"), "zstd-1-bss": _c("zstd", 1, "BYTE_STREAM_SPLIT"),
              "lz4-delta": _c("lz4", None, "DELTA_BINARY_PACKED"), "zstd-1-plain": _c("zstd", 1, "PLAIN"),
              "zstd-1-dict8m": _c("zstd", 1, dictionary_pagesize_limit=8 << 20),
              "zstd-3-dict8m": _c("zstd", 3, dictionary_pagesize_limit=8 << 20),
              "zstd-1-rg16m": _c("zstd", 1), "zstd-1-rg256m": _c("zstd", 1)}
#: candidates that change the row-group size (bytes)
ROW_GROUPS = {"zstd-1-rg16m": 16 << 20, "zstd-1-rg256m": 256 << 20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=3_000_000)
    ap.add_argument("--stocks", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tables", default="bbo,depth")
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    args = ap.parse_args()
    import obook
    import obook.parquet as op

    path = itch_day(args.messages, args.stocks)
    readers = {"bbo": lambda: obook.bbo(path, workers=2, date="2019-12-30"),
               "depth": lambda: obook.depth(path, workers=2, levels=10, date="2019-12-30")}
    tables = {t: readers[t]().read_all() for t in args.tables.split(",")}
    results = {(t, c): [] for t in tables for c in args.candidates.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "x.parquet"
        for _ in range(args.repeats):
            for (t, c) in results:
                op.COMPRESSIONS["bench"] = CANDIDATES[c]
                op.ROW_GROUP_BYTES = ROW_GROUPS.get(c, 64 << 20)
                table = tables[t]
                cpu = time.process_time()
                sink = op.ParquetSink(out, table.schema, compression="bench")
                for b in table.to_batches():
                    sink.write(b)
                sink.close()
                results[t, c].append((time.process_time() - cpu, os.path.getsize(out)))
    print(f"{'table':<7}{'codec':<10}{'CPU s':>8}{'vs zstd-1':>10}{'MB':>9}{'vs zstd-1':>10}")
    for (t, c), rs in results.items():
        s, b = median([r[0] for r in rs]), median([r[1] for r in rs])
        s0, b0 = median([r[0] for r in results[t, "zstd-1"]]), median([r[1] for r in results[t, "zstd-1"]])
        print(f"{t:<7}{c:<10}{s:>8.2f}{s / s0:>9.2f}x{b / 1e6:>9.1f}{b / b0:>9.3f}x")


if __name__ == "__main__":
    main()
