"""ITCH -> Parquet end to end against itch-book, command lines in fresh processes,
alternating, medians of wall time:

* ``bbo``: ``obook bbo DAY --output bbo.parquet`` with 1 and 2 workers against
  ``itch2parquet convert DAY OUT --tables bbo`` (15M messages, 8,000 stocks by default);
* ``depth``: ``obook convert DAY OUT --tables bbo,depth --levels 10`` with 2 workers against
  ``itch2parquet convert DAY OUT --tables bbo,depth --depth 10`` (3M messages, 2,000 stocks).

Both sides write a timestamp column (session date given) and fixed-point prices; itch-book
hashes its input (md5) as obook convert does (sha256); `obook bbo` and the itch-book BBO run
do not hash.

    python benchmarks/bench_parquet_e2e.py --set bbo --messages 15000000 --stocks 8000 --repeats 3
    python benchmarks/bench_parquet_e2e.py --set depth --messages 3000000 --stocks 2000 --repeats 3

``--baseline DIR`` adds the obook runs of another checkout's package (``DIR/obook``, e.g.
``git archive HEAD~1 obook | tar -x -C DIR``), alternating with this one's.

``--bytecode DIR``: the Python commands read and write their bytecode under DIR
(``PYTHONPYCACHEPREFIX``, ``PYTHONDONTWRITEBYTECODE`` unset), as an installed package has it.
Without it they run in the caller's environment: a virtual environment installed with
``PYTHONDONTWRITEBYTECODE=1`` has no ``__pycache__``, and every obook process then compiles
numba, numpy and llvmlite from source before it starts (~0.6 s of CPU here); itch-book,
compiled, pays nothing of the kind.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median  # noqa: E402

DATE = "2019-12-30"


def commands(which: str, day: Path, out: Path, baseline: str | None = None) -> dict[str, list[str]]:
    cmds = _commands(which, day, out, [sys.executable, "-m", "obook"])
    if baseline:   # the same obook runs with the other package first on the path (env marks them)
        old = [sys.executable, "-c", f"import runpy, sys; sys.path.insert(0, {baseline!r}); "
                                     "sys.argv[0] = 'obook'; runpy.run_module('obook', run_name='__main__')"]
        for name, cmd in _commands(which, day, out / "baseline", old).items():
            if name != "itch-book":
                cmds[f"baseline: {name}"] = cmd
    return cmds


def _commands(which: str, day: Path, out: Path, obook: list[str]) -> dict[str, list[str]]:
    itch_book = ["itch2parquet", "convert", str(day), str(out / "ib"), "--price-type", "fixed", "--date", DATE]
    if which == "bbo":
        return {
            "obook bbo 1 worker": obook + ["bbo", str(day), "-w", "1", "--date", DATE, "-o", str(out / "b1.parquet")],
            "obook bbo 2 workers": obook + ["bbo", str(day), "-w", "2", "--date", DATE, "-o", str(out / "b2.parquet")],
            "itch-book": itch_book + ["--tables", "bbo", "--no-md5"],
        }
    return {
        "obook convert 2 workers": obook + ["convert", str(day), str(out / "c2"), "--tables", "bbo,depth",
                                            "--levels", "10", "-w", "2", "--date", DATE],
        "obook convert 1 worker": obook + ["convert", str(day), str(out / "c1"), "--tables", "bbo,depth",
                                           "--levels", "10", "-w", "1", "--date", DATE],
        "obook convert 2 workers small": obook + ["convert", str(day), str(out / "c2s"), "--tables", "bbo,depth",
                                                  "--levels", "10", "-w", "2", "--date", DATE, "-c", "small"],
        "itch-book": itch_book + ["--tables", "bbo,depth", "--depth", "10"],
    }


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet")) if path.is_dir() else path.stat().st_size


def target_of(cmd: list[str]) -> Path:
    return Path(cmd[cmd.index("-o") + 1] if "-o" in cmd else cmd[3] if cmd[0] == "itch2parquet"
                else cmd[cmd.index("convert") + 2])


def remove(target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=("bbo", "depth"), default="bbo")
    ap.add_argument("--messages", type=int, default=15_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", help="a directory holding another checkout's obook package")
    ap.add_argument("--no-small", action="store_true", help="skip the --compression small run")
    ap.add_argument("--no-one-worker", action="store_true", help="skip the 1-worker runs")
    ap.add_argument("--bytecode", metavar="DIR", help="a bytecode cache for the Python commands (PYTHONPYCACHEPREFIX)")
    args = ap.parse_args()
    day = itch_day(args.messages, args.stocks)
    print(f"feed: {day} ({day.stat().st_size / 2**20:.0f} MiB)")
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        out = Path(tmp)
        (out / "baseline").mkdir()
        cmds = commands(args.set, day, out, args.baseline)
        if args.no_small:
            cmds = {k: v for k, v in cmds.items() if "small" not in k}
        if args.no_one_worker:
            cmds = {k: v for k, v in cmds.items() if "1 worker" not in k}
        times: dict[str, list[float]] = {k: [] for k in cmds}
        cpus: dict[str, list[float]] = {k: [] for k in cmds}
        sizes: dict[str, int] = {}
        env = None
        if args.bytecode:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = str(Path(args.bytecode).resolve())
            for name, cmd in cmds.items():    # one untimed run of each fills the cache
                if cmd[0] == sys.executable:
                    subprocess.run(cmd, check=True, capture_output=True, env=env)
                    remove(target_of(cmd))
        for rep in range(args.repeats):
            for name, cmd in cmds.items():
                t = time.perf_counter()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(cmd, check=True, capture_output=True, env=env)
                times[name].append(time.perf_counter() - t)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)   # the command's whole tree
                cpus[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                target = target_of(cmd)
                sizes[name] = size(target)
                remove(target)
            print(f"  run {rep + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items())
                  + f" (load {os.getloadavg()[0]:.2f})", flush=True)
    base = median(times["itch-book"])
    print(f"\n{'contender':<32}{'median s':>10}{'vs itch-book':>14}{'CPU s':>8}{'MB':>9}")
    for name, ts in times.items():
        print(f"{name:<32}{median(ts):>10.2f}{median(ts) / base:>13.2f}x{median(cpus[name]):>8.2f}"
              f"{sizes[name] / 1e6:>9.1f}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}"
          + (f"; bytecode cached in {args.bytecode}" if args.bytecode else ""))


if __name__ == "__main__":
    main()
