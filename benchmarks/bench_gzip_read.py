"""Reading a compressed feed's bytes as the replay does (``open_file``, then blocks of
``BLOCK_SIZE`` through ``read_block``): CPU seconds per file against ``--old DIR``'s obook
(``PYTHONPATH=DIR``), fresh processes alternating, medians.

    python benchmarks/bench_gzip_read.py --old /tmp/old FILE [FILE ...] [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = """
import sys, time
from obook.feeds import sources
from obook.feeds.sources import BLOCK_SIZE, open_file
read_block = getattr(sources, "read_block", None) or sources._read_block     # (its name in older trees)
f, raw = open_file(sys.argv[1])
view = memoryview(bytearray(BLOCK_SIZE))
t, total = time.process_time(), 0
while n := read_block(f, view):
    total += n
print(time.process_time() - t, total)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="directory holding the old obook package")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    for path in a.files:
        times = {"old": [], "new": []}
        sizes = set()
        for r in range(a.rounds):
            for side in (("new", "old") if r % 2 == 0 else ("old", "new")):
                env = dict(os.environ, PYTHONPATH=str(ROOT) if side == "new" else a.old)
                out = subprocess.run([sys.executable, "-c", RUN, path], env=env, check=True, capture_output=True,
                                     text=True, cwd="/").stdout.split()
                times[side].append(float(out[0]))
                sizes.add(int(out[1]))
        old, new = statistics.median(times["old"]), statistics.median(times["new"])
        print(f"{Path(path).name}: {sizes} bytes; old {old:.3f} s, new {new:.3f} s (median of {a.rounds}); "
              f"new/old {new / old:.3f}; per-round {[round(n / o, 3) for n, o in zip(times['new'], times['old'])]}")


if __name__ == "__main__":
    main()
