"""The plug-in seam must not slow the replays: this checkout's obook against
another checkout's (``--old DIR``, e.g. ``git archive main obook | tar -x -C /tmp/old``),
alternating run by run in fresh processes, on the ITCH benchmark day (1 and 2 workers) and
the CSV day (1 worker); ``--formats`` adds the PITCH day written from the ITCH day (1 and 2
workers) and a Databento MBO day (1 worker). Reports medians and new/old ratios.

    python benchmarks/bench_seam.py --old /tmp/old --messages 2000000 --events 2000000 --repeats 5
    python benchmarks/bench_seam.py --old /tmp/old --formats itch,csv,pitch,databento
    python benchmarks/bench_seam.py --old /tmp/old --formats pitch --no-warm   # old: only `obook compile pitch`
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import csv_day, itch_day, median, pitch_day  # noqa: E402

# wall seconds, and CPU seconds of the process and its workers (steadier on a loaded machine)
REPLAY = """
import time, obook, json, resource
{warm}
import obook.engine.replay, pyarrow.compute  # and the modules a replay imports: a thin
# ``import obook`` leaves them to the first replay (the old front imported them eagerly)
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
t, c = time.perf_counter(), cpu(); rows = 0
for b in obook.bbo({path!r}, workers={workers}, format={fmt!r}):
    rows += b.num_rows
print(json.dumps({{'seconds': time.perf_counter() - t, 'cpu': cpu() - c, 'rows': rows,
                  'file': obook.__file__}}))
"""


#: every format's kernels loaded before the clock starts (--no-warm: the replay loads its own
#: from numba's cache as it starts, the same for both checkouts; the old one then needs only
#: the parts compiled that the formats use)
WARM = "import obook.engine.worker_main as _wm; getattr(_wm, 'warm', lambda: None)()"


def run(code: str, old: str | None) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if old:
        env["PYTHONPATH"] = old
    # run from / : a checkout in the working directory would shadow PYTHONPATH
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/")
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="directory holding the old obook package")
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--formats", default="itch,csv", help="of itch, csv, pitch, databento")
    ap.add_argument("--no-warm", action="store_true", help="time the kernels' load from the cache too")
    args = ap.parse_args()
    warm = "" if args.no_warm else WARM
    formats = args.formats.split(",")
    cases = {}
    if "itch" in formats:
        itch = itch_day(args.messages, args.stocks)
        cases.update({"itch 1 worker": (itch, 1, "itch"), "itch 2 workers": (itch, 2, "itch")})
    if "csv" in formats:
        cases["csv 1 worker"] = (csv_day(args.events), 1, "csv")
    if "pitch" in formats:
        pitch = pitch_day(args.messages, args.stocks)
        cases.update({"pitch 1 worker": (pitch, 1, "pitch"), "pitch 2 workers": (pitch, 2, "pitch")})
    if "databento" in formats:
        from bench_dbn import dbn_day
        cases["dbn 1 worker"] = (dbn_day(args.events), 1, "databento")
    res = {(c, side): [] for c in cases for side in ("old", "new")}
    for name, (path, workers, fmt) in cases.items():    # warm the numba caches of both
        for side, old in (("old", args.old), ("new", None)):
            r = run(REPLAY.format(path=str(path), workers=workers, fmt=fmt, warm=warm), old)
            assert (side == "old") == r["file"].startswith(args.old), r["file"]
    for rep in range(args.repeats):
        for name, (path, workers, fmt) in cases.items():
            order = (("old", args.old), ("new", None)) if rep % 2 == 0 else (("new", None), ("old", args.old))
            for side, old in order:
                res[(name, side)].append(run(REPLAY.format(path=str(path), workers=workers, fmt=fmt, warm=warm), old))
        print(f"run {rep + 1}: " + ", ".join(f"{k[0]} {k[1]} {v[-1]['seconds']:.2f}s" for k, v in res.items()),
              flush=True)
    for key in ("seconds", "cpu"):
        print(f"\n{key:<16}{'old':>8}{'new':>8}{'new/old':>9}   ratios (per run)")
        for name in cases:
            o = [r[key] for r in res[(name, "old")]]
            n = [r[key] for r in res[(name, "new")]]
            assert {r["rows"] for r in res[(name, "old")]} == {r["rows"] for r in res[(name, "new")]}
            ratios = [b / a for a, b in zip(o, n)]
            print(f"{name:<16}{median(o):>8.2f}{median(n):>8.2f}{median(ratios):>9.3f}   "
                  f"{' '.join(f'{x:.3f}' for x in ratios)}")


if __name__ == "__main__":
    main()
