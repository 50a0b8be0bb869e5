"""What each kernel loaded by ``obook.engine.worker_main.warm`` before workers fork costs every
replay's start: in fresh processes, the books' first kernels (imports included), then
``crossed_books`` (every worker runs it at the end of a replay), then the growth kernels
``fh_rehash`` and ``ov_rehash`` (run only where a book's table outgrows its first size);
medians of fresh processes, all three timed in each.

    python benchmarks/bench_warm_growth.py --runs 9
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CODE = """
import json, time
import numpy as np
t0 = time.perf_counter()
from obook._kernels.book import ROOM_FAR_HASH, ROOM_OVERFLOW
from obook._kernels.layout import ACT_ADD, EV_WIDTH
from obook.engine.books import BookState
from obook.engine.worker_main import ROW_WIDTH
ev = np.zeros((2, EV_WIDTH), dtype=np.int64)
ev[0, 2:7] = (1, ACT_ADD, 1, 100, 10)
ev[1, 2:7] = (1, 5, 1, 0, 0)
books = BookState()
books.apply(ev, 2, np.zeros((4, ROW_WIDTH), dtype=np.int64))
t1 = time.perf_counter()
_ = books.crossed_books
t2 = time.perf_counter()
for room in (ROOM_FAR_HASH, ROOM_OVERFLOW):
    books.grow(room)
t3 = time.perf_counter()
print(json.dumps({"books": t1 - t0, "crossed_books": t2 - t1, "growth": t3 - t2}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    rows = []
    for _ in range(a.runs):
        out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    ms = {k: statistics.median(r[k] for r in rows) * 1e3 for k in rows[0]}
    print(f"books' first kernels {ms['books']:.1f} ms; crossed_books {ms['crossed_books']:.1f} ms; "
          f"fh_rehash + ov_rehash {ms['growth']:.1f} ms (medians of {a.runs} fresh processes)")


if __name__ == "__main__":
    main()
