"""Databento clears (R: "remove every order of this book") in a replay without queue places
(the bbo table): an MBO snapshot as Databento streams one (per instrument a clear of its
still empty book, then its orders as adds: ``snapshot``), and the generator's day with
clears of busy books among many instruments (``busy``), against ``--old DIR``'s obook
(``PYTHONPATH=DIR``), alternating fresh processes; CPU seconds of a warm replay (min of 3).

    python benchmarks/bench_dbn_clears.py --old /tmp/old [--instruments 5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RUN = """
import sys, time, obook
for f in sys.argv[1:]:
    obook.bbo(f, workers=1).read_all()
    best = min((lambda t: (obook.bbo(f, workers=1).read_all(), time.process_time() - t)[1])(time.process_time())
               for _ in range(3))
    print(f"{best:.3f}")
"""


def snapshot_day(path: Path, instruments: int, adds: int = 500_000) -> None:
    """Per instrument: a clear, then its adds (a snapshot's shape), instruments in turn."""
    from obook.gen.databento import mbo_flow, write_dbn

    a = mbo_flow(3 * adds, instruments=instruments, seed=1, clears=0.0)
    add = a[a["action"] == b"A"][:adds]
    add = add[np.argsort(add["instrument_id"], kind="stable")]
    iids, first = np.unique(add["instrument_id"], return_index=True)
    bounds = list(first) + [len(add)]
    clear = a[a["action"] == b"R"][:1]
    parts = []
    for j, iid in enumerate(iids):
        r = clear.copy()
        r["instrument_id"] = iid
        parts += [r, add[bounds[j]:bounds[j + 1]]]
    recs = np.concatenate(parts)
    recs["ts_event"] = 1_700_000_000_000_000_000 + np.arange(len(recs)) * 1_000
    recs["ts_recv"] = recs["ts_event"] + 1_000
    recs["sequence"] = np.arange(1, len(recs) + 1)
    recs["flags"] = 0x80
    write_dbn(path, recs, encoder=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="directory holding the old obook package")
    ap.add_argument("--instruments", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    data = ROOT / "bench-data"
    data.mkdir(exist_ok=True)
    snap, busy = data / f"dbn_snapshot_{a.instruments}.dbn", data / f"dbn_busy_clears_{a.instruments}.dbn"
    if not snap.exists():
        snapshot_day(snap, a.instruments)
    if not busy.exists():
        from obook.gen.databento import mbo_flow, write_dbn
        write_dbn(busy, mbo_flow(1_000_000, instruments=a.instruments, seed=0), encoder=False)
    times = {("new", f): [] for f in ("snapshot", "busy")} | {("old", f): [] for f in ("snapshot", "busy")}
    for r in range(a.rounds):
        for side, where in ((("new", str(ROOT)), ("old", a.old)) if r % 2 == 0 else (("old", a.old), ("new", str(ROOT)))):
            env = dict(os.environ, PYTHONPATH=where)
            out = subprocess.run([sys.executable, "-c", RUN, str(snap), str(busy)], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            times[(side, "snapshot")].append(float(out[0]))
            times[(side, "busy")].append(float(out[1]))
    for f in ("snapshot", "busy"):
        old, new = sorted(times[("old", f)]), sorted(times[("new", f)])
        print(f"{f:9s} old {old} new {new} new/old {new[len(new) // 2] / old[len(old) // 2]:.3f}")


if __name__ == "__main__":
    main()
