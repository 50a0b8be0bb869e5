"""Matching engine benchmark (the seed workload of obook.gen.orders).

1. Book only: 100,000 warm-up then 1,000,000 timed instructions of one book through
   ``match_rows`` with no output (``want=0``), and again with fills + events written;
   mean ns per instruction (CPU time of the thread, and wall time), median of
   ``--repeats`` fresh runs, configurations alternated.
2. Latency: a second run with the cycle counter read around every instruction
   (``match_rows_timed``); p50 / p99 / p99.9 / max in ns (TSC calibrated against
   perf_counter_ns), and the cost of an empty pair of counter reads.
3. End to end: ``obook.match`` on a Parquet file of ``--e2e`` instructions over 100
   instruments (workers 1 and 2), instructions per second.

4. Reader (``--reader N``, instead of 1-3): ``table_reader(path, "fills", workers=2)`` on
   ``N`` instructions over 100 instruments, in fresh processes started with PYTHONPATH set
   to each of ``--trees`` in turn (alternating, the order reversed every other pair), the
   workers forked (``--start fork``) or started by the forkserver (``--start forkserver``:
   DuckDB imported first, as the SQL front end runs); the time to the first batch, to the
   last, and the parent's peak resident memory (``ru_maxrss``), medians of ``--pairs``.
   Kernels and the forkserver are started before the clock (a 5,000-row read).
   ``--sql-limit``: instead, DuckDB's ``SELECT * FROM obook_match(path, workers := 2) LIMIT
   10`` (the forkserver), its time as both the first and the last.

    python benchmarks/bench_match.py [--repeats 5] [--e2e 1000000] [--old DIR]
    python benchmarks/bench_match.py --reader 10000000 --start forkserver --trees OLD,NEW [--pairs 5]

``--old DIR``: also run the book-only configurations with the kernels of an older checkout
(``git archive main obook | tar -x -C DIR``), alternated with this one's in the same
process, and print the median of the per-repeat ratios new / old. The old kernels are
imported as a package of their own; older layouts (2-D int64 instruction rows,
4-column level rows, 32-byte order records) and this one's are understood.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def fresh(levels, n_keys, want):
    from obook.matching.books import new_state

    lv, od, ow, bk, st, ds = new_state(levels, [0], [levels - 1], n_keys, 1)
    cap = 4_000_000 if want else 1
    fl = np.zeros((cap, 8), np.int64)
    ev = np.zeros((cap, 10), np.int64)
    qt = np.zeros((1, 9), np.int64)
    dq = np.zeros((1, 9), np.int64)
    return lv, od, ow, bk, st, fl, ev, qt, dq, ds


def positional(mod):
    """``mod.match_rows`` called the positional way (m, mw, mt, start, n, stp, want, levels,
    pf, lv, od, ow, bk, st, fl, ev, qt, dq, ds): a kernel module that takes named state gets
    its tuples packed (once a call: the calls here are a million instructions each)."""
    if not hasattr(mod, "Stream"):
        return mod.match_rows

    def call(*a):
        return mod.match_rows(mod.Stream(*a[:3]), *a[3:9], mod.MatchState(*a[9:14]), mod.MatchRows(*a[14:19]))
    return call


def book_only(msg, levels, warm, n, want, pf=16, kernel=None):
    """(CPU ns, wall ns per instruction, live orders at the end); kernel: (match_rows,
    instruction arguments, state) of an old checkout (``old_kernel``), else this one's."""
    if kernel is None:
        from obook._kernels import match

        match_rows = positional(match)
        lv, od, ow, bk, st, fl, ev, qt, dq, ds = fresh(levels, len(msg), want)
        m, state = (msg.rows, msg.owner, msg.clock), (lv, od, ow, bk, st, fl, ev, qt, dq, ds)
    else:
        match_rows, m, new_state = kernel
        state, st = new_state(want)
    assert match_rows(*m, 0, warm, 0, want, 1, pf, *state) == 0
    t, c = time.perf_counter_ns(), time.thread_time_ns()
    status = match_rows(*m, warm, warm + n, 0, want, 1, pf, *state)
    dc, dt = time.thread_time_ns() - c, time.perf_counter_ns() - t
    assert status == 0, status
    return dc / n, dt / n, int(st[6])


def old_kernel(root, msg, levels):
    """(match_rows, instruction arguments, new_state(want)) of the kernels in root/obook/_kernels."""
    import importlib
    import shutil
    import tempfile

    pkg = Path(tempfile.mkdtemp(prefix="obook_old_")) / "obook_old_kernels"
    shutil.copytree(Path(root) / "obook" / "_kernels", pkg)
    sys.path.insert(0, str(pkg.parent))
    lay = importlib.import_module("obook_old_kernels.match_layout")
    match_rows = positional(importlib.import_module("obook_old_kernels.match"))
    n = len(msg)
    if hasattr(lay, "M_WIDTH"):             # an older layout: 2-D int64 instruction rows
        m = np.zeros((n, lay.M_WIDTH), np.int64)
        m[:, lay.M_SEQ], m[:, lay.M_TIME] = msg.clock[:, 0], msg.clock[:, 1]
        for col, f in ((lay.M_BOOK, "book"), (lay.M_KEY, "key"), (lay.M_OP, "op"), (lay.M_PRICE, "price"),
                       (lay.M_QTY, "qty")):
            m[:, col] = msg.rows[f]
        m[:, lay.M_OWNER] = msg.owner
        args = (m,)
    else:
        args = (msg.rows, msg.owner, msg.clock)

    def new_state(want):
        if hasattr(lay, "LV_DTYPE"):
            lv = np.zeros(levels, lay.LV_DTYPE)
            lv["head"] = lv["tail"] = -1
        else:
            lv = np.zeros((levels, lay.LV_WIDTH), np.int64)
            lv[:, lay.LV_HEAD] = lv[:, lay.LV_TAIL] = -1
        od = np.zeros(n, lay.OD_DTYPE)
        od["state" if "state" in lay.OD_DTYPE.names else "lv"] = lay.NEVER
        bk = np.zeros((1, lay.BK_WIDTH), np.int64)
        bk[:, lay.BK_LO], bk[:, lay.BK_HI] = 0, levels - 1
        bk[:, lay.BK_BID], bk[:, lay.BK_ASK] = -1, levels
        bk[:, lay.BK_LAST:lay.BK_LAST + 6] = (-1, 0, 0, -1, 0, 0)
        *_, st, fl, ev, qt, dq, ds = fresh(levels, 1, want)
        state = (lv, od, bk, st, fl, ev, qt, dq, ds)
        if "owner" not in lay.OD_DTYPE.names:      # owners in their own array
            state = (lv, od, np.zeros(n, np.int64), *state[2:])
        return state, st

    return match_rows, args, new_state


def tsc_per_ns():
    from numba import njit

    from obook._kernels.clock import cycles

    @njit
    def read():
        return cycles()

    read()
    a, t = read(), time.perf_counter_ns()
    time.sleep(0.2)
    b, t2 = read(), time.perf_counter_ns()
    return (b - a) / (t2 - t)


def latency(msg, levels, warm, n, pf=16):
    from numba import njit

    from obook._kernels.clock import cycles
    from obook._kernels.match import MatchRows, MatchState, Stream
    from obook._kernels.match_timed import match_rows_timed

    lv, od, ow, bk, st, fl, ev, qt, dq, ds = fresh(levels, len(msg), 0)
    lat = np.zeros(max(warm, n), np.int64)
    m = (msg.rows, msg.owner, msg.clock)
    state, out = MatchState(lv, od, ow, bk, st), MatchRows(fl, ev, qt, dq, ds)
    match_rows_timed(Stream(*m), 0, warm, pf, state, out, lat)
    match_rows_timed(Stream(*m), warm, warm + n, pf, state, out, lat)

    @njit
    def empty_pairs(out):
        for i in range(out.shape[0]):
            t0 = cycles()
            out[i] = cycles() - t0

    pairs = np.zeros(100_000, np.int64)
    empty_pairs(pairs)
    k = tsc_per_ns()
    lat_ns = lat[:n] / k
    return {"p50": float(np.percentile(lat_ns, 50)), "p99": float(np.percentile(lat_ns, 99)),
            "p99.9": float(np.percentile(lat_ns, 99.9)), "max": float(lat_ns.max()),
            "mean_timed": float(lat_ns.mean()), "empty_pair_p50": float(np.median(pairs) / k),
            "tsc_ghz": k}


def cpu_seconds():
    """CPU time of this process and its (waited-for) children: the match workers."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def end_to_end(n, repeats):
    from common import DATA

    import obook.matching as matching
    from obook.gen.orders import write_orders

    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"orders_{n}_100_42.parquet"
    if not path.exists():
        write_orders(path, n, 100, 42)
    matching.match(path, workers=1, tables=("fills",))       # compile / load caches
    out = {}
    for workers in (1, 2):
        for tables in (("fills",), ("fills", "events", "bbo")):
            times, cpus = [], []
            for _ in range(repeats):
                t, c = time.perf_counter(), cpu_seconds()
                r = matching.match(path, workers=workers, tables=tables)
                times.append(time.perf_counter() - t)
                cpus.append(cpu_seconds() - c)
            med = statistics.median(times)
            out[f"workers={workers} tables={'+'.join(tables)}"] = {
                "wall_s": round(med, 3), "instructions_per_s": round(n / med),
                "cpu_s": round(statistics.median(cpus), 3), "fills": r.fills.num_rows}
    return out


_READER_CHILD = """
import time
if {start!r} == "forkserver":
    import duckdb  # noqa: F401  (its threads make the workers start by the forkserver)
import obook
from obook.engine.workers import mp_context
from obook.matching import table_reader

assert mp_context().get_start_method() == {start!r}
table_reader({warm!r}, "fills", workers=2).read_all()
t = time.perf_counter()
reader = table_reader({path!r}, "fills", workers=2)
rows = reader.read_next_batch().num_rows
first = time.perf_counter() - t
rows += sum(b.num_rows for b in reader)
_r = {{"first_s": first, "total_s": time.perf_counter() - t, "rows": rows, "obook": obook.__file__}}
"""


_SQL_LIMIT_CHILD = """
import time
import obook

con = obook.connect()
con.sql("SELECT * FROM obook_match('{warm}', workers := 2) LIMIT 10").fetchall()
t = time.perf_counter()
rows = len(con.sql("SELECT * FROM obook_match('{path}', workers := 2) LIMIT 10").fetchall())
first = time.perf_counter() - t
_r = {{"first_s": first, "total_s": first, "rows": rows, "obook": obook.__file__}}
"""


def reader_runs(n: int, start: str, trees: list, pairs: int, sql_limit: bool = False) -> dict:
    """Section 4 of the module doc: per tree, the runs and their medians; ratios later / first tree."""
    from common import DATA, run_child, generated_file

    from obook.gen.orders import write_orders

    path = generated_file(f"orders_{n}_100_42.parquet", lambda tmp: write_orders(tmp, n, 100, 42))
    warm = generated_file("orders_5000_100_42.parquet", lambda tmp: write_orders(tmp, 5000, 100, 42))
    assert path.parent == DATA
    code = (_SQL_LIMIT_CHILD if sql_limit else _READER_CHILD).format(start=start, warm=str(warm), path=str(path))
    runs = {t: [] for t in trees}
    for p in range(pairs):
        for t in (trees if p % 2 == 0 else trees[::-1]):
            r = run_child(code, t)
            assert r["obook"].startswith(str(Path(t).resolve())), r["obook"]
            runs[t].append(r)
            print(t, {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items() if k != "obook"},
                  file=sys.stderr)
    out = {"load": os.getloadavg()[0], "instructions": n, "start": "forkserver" if sql_limit else start,
           "what": "DuckDB LIMIT 10" if sql_limit else "table_reader fills"}
    for t, rs in runs.items():
        out[t] = {"first_s": round(statistics.median(r["first_s"] for r in rs), 3),
                  "total_s": round(statistics.median(r["total_s"] for r in rs), 3),
                  "peak_mb": round(statistics.median(r["peak_kib"] for r in rs) / 1024),
                  "first_s_runs": [round(r["first_s"], 2) for r in rs], "rows": rs[0]["rows"]}
    for t in trees[1:]:
        for k in ("first_s", "total_s", "peak_kib"):
            ratios = [b[k] / a[k] for a, b in zip(runs[trees[0]], runs[t])]
            out[t][f"{k}_ratio"] = round(statistics.median(ratios), 3)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warmup", type=int, default=100_000)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--e2e", type=int, default=1_000_000, help="instructions of the 100-instrument run (0: skip)")
    ap.add_argument("--old", help="a checkout whose obook/_kernels to alternate with (book only)")
    ap.add_argument("--reader", type=int, default=0, help="instructions of the reader runs (section 4; 0: skip)")
    ap.add_argument("--start", choices=("fork", "forkserver"), default="forkserver")
    ap.add_argument("--trees", default=str(Path(__file__).resolve().parent.parent),
                    help="checkouts to alternate, comma separated (the first is the baseline)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--sql-limit", action="store_true", help="reader runs: DuckDB's LIMIT 10 instead")
    a = ap.parse_args()
    if a.reader:
        print(json.dumps(reader_runs(a.reader, a.start, a.trees.split(","), a.pairs, a.sql_limit), indent=1))
        return
    from obook.gen.orders import seed_rows

    msg, _, levels = seed_rows(a.warmup + a.messages)
    res = {"load": os.getloadavg()[0]}
    configs = {"book only": (0, 16, None), "book only, no prefetch": (0, 0, None),
               "with fills + events": (3, 16, None)}
    if a.old:
        old = old_kernel(a.old, msg, levels)
        configs.update({f"old {k}": (w, pf, old) for k, (w, pf, _) in configs.items()})
    for want, pf, kernel in configs.values():
        book_only(msg, levels, 1000, 1000, want, pf, kernel)
    runs = {name: [] for name in configs}
    for r in range(a.repeats):            # alternate the configurations (reversed every other repeat)
        for name, (want, pf, kernel) in (configs.items() if r % 2 == 0 else list(configs.items())[::-1]):
            cpu, wall, live = book_only(msg, levels, a.warmup, a.messages, want, pf, kernel)
            runs[name].append((cpu, wall))
    for name, r in runs.items():
        res[name] = {"cpu_ns": round(statistics.median(c for c, _ in r), 2),
                     "wall_ns": round(statistics.median(w for _, w in r), 2),
                     "cpu_ns_runs": [round(c, 1) for c, _ in r]}
        if a.old and not name.startswith("old "):
            ratios = [c / o for (c, _), (o, _) in zip(r, runs[f"old {name}"])]
            res[name]["ratio_new_old"] = round(statistics.median(ratios), 3)
            res[name]["faster_than_old"] = f"{sum(x < 1 for x in ratios)}/{len(ratios)}"
    res["live_orders_at_end"] = live
    res["latency_ns"] = {k: round(v, 2) for k, v in latency(msg, levels, a.warmup, a.messages).items()}
    if a.e2e:
        res["end_to_end_100_instruments"] = end_to_end(a.e2e, max(1, min(a.repeats, 3)))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
