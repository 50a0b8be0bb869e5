"""Cost of the tables besides the BBO: `obook convert` of the benchmark day to Parquet with
bbo alone, bbo + trades, bbo + depth(10), and bbo + trades + depth(10), alternating runs in
fresh processes, medians, and each set's cost over bbo alone.

    python benchmarks/bench_tables.py --messages 5000000 --repeats 3 [--workers 2]

Old against new in the same run (``--variants``, comma-separated; ``+`` joins patches):
``new`` is the code as it is; ``no-options`` writes depth with the default Parquet options
(dictionary and statistics on every column); ``orders-dict`` keeps the depth options but
dictionary-encodes the orders counts; ``depth-only-options`` writes every table but depth
with the default options. For example:

    python benchmarks/bench_tables.py --sets depth --variants no-options,orders-dict,new
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median, run_child  # noqa: E402

CONVERT = """
import os, sys, time, tempfile, obook.engine.worker_main
from obook.to_parquet import convert
import obook.parquet as _op              # the one Parquet writer's options
{patch}
out = tempfile.mkdtemp()
t, c = time.perf_counter(), time.process_time()
res = convert({path!r}, out, tables={tables!r}, workers={workers})
_r = {{'seconds': time.perf_counter() - t, 'cpu': time.process_time() - c, 'rows': res['rows'],
       'bytes': {{k: os.path.getsize(v) for k, v in res['files'].items()}}}}
import shutil, resource; shutil.rmtree(out)
_ru = resource.getrusage(resource.RUSAGE_CHILDREN)
_r['workers_cpu'] = _ru.ru_utime + _ru.ru_stime
"""

SETS = ["bbo", "bbo,trades", "bbo,depth", "bbo,trades,depth"]
PATCHES = {
    "new": "",
    "depth-only-options": """
_options = _op.parquet_options
_op.parquet_options = lambda table, schema, c="fast": (_options(table, schema, c) if table == "depth"
                                                       else {"compression": "zstd"})
""",
    "no-options": "_op.parquet_options = lambda table, schema, c='fast': {'compression': 'zstd'}",
    "orders-dict": """
_options = _op.parquet_options
def _dict_orders(table, schema, c="fast"):
    o = _options(table, schema, c)
    if o:
        enc = {k: v for k, v in o["column_encoding"].items() if v != "BYTE_STREAM_SPLIT"}
        o = dict(o, column_encoding=enc, use_dictionary=[n for n in schema.names if n not in enc])
    return o
_op.parquet_options = _dict_orders
""",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sets", default=";".join(SETS),
                    help="table sets separated by ';' (a set is comma-separated), or 'bbo,depth' "
                         "for the two sets bbo and bbo,depth")
    ap.add_argument("--variants", default="new")
    args = ap.parse_args()
    sets = args.sets.split(";") if ";" in args.sets else ["bbo"] + [f"bbo,{t}" for t in args.sets.split(",")
                                                                   if t != "bbo"]
    variants = args.variants.split(",")
    path = itch_day(args.messages)
    runs = [(s, v) for s in sets for v in variants]
    results = {r: [] for r in runs}
    for rep in range(args.repeats):
        for s, v in runs:
            patch = "\n".join(PATCHES[p] for p in v.split("+"))
            results[s, v].append(run_child(CONVERT.format(path=str(path), tables=s, workers=args.workers,
                                                          patch=patch)))
        print(f"  run {rep + 1}: " + ", ".join(f"{s} [{v}] {r[-1]['seconds']:.2f}s "
                                               f"(cpu {r[-1]['cpu']:.2f}+{r[-1]['workers_cpu']:.2f})"
                                               for (s, v), r in results.items()), flush=True)
    print(f"\n{'tables':<20}{'variant':<22}{'median s':>10}{'vs bbo':>9}{'cpu s':>8}{'vs bbo':>9}"
          f"{'peak MiB':>10}  bytes / rows")
    med = {k: (median([r["seconds"] for r in rs]), median([r["cpu"] for r in rs])) for k, rs in results.items()}
    for (s, v), rs in results.items():
        (m, c), (m0, c0) = med[s, v], med[sets[0], v]
        peak = max(r["peak_kib"] for r in rs) / 1024
        print(f"{s:<20}{v:<22}{m:>10.3f}{m / m0:>8.2f}x{c:>8.2f}{c / c0:>8.2f}x{peak:>10.0f}  "
              f"{rs[0]['bytes']} {rs[0]['rows']}")
    if len(variants) > 1:
        print(f"\nratio to {variants[0]} (medians of the same set): wall, parent CPU")
        for (s, v) in results:
            (m, c), (m0, c0) = med[s, v], med[s, variants[0]]
            print(f"{s:<20}{v:<22}{m / m0:>8.3f}x{c / c0:>8.3f}x")


if __name__ == "__main__":
    main()
