"""Shared helpers of the benchmarks: generated feeds (cached), timed child runs, medians."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

DATA = Path(os.environ.get("OBOOK_BENCH_DATA", Path(__file__).resolve().parent.parent / "bench-data"))


def itch_day(messages: int, stocks: int = 8000, seed: int = 7, gz: bool = False) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"itch_{messages}_{stocks}_{seed}.itch{'.gz' if gz else ''}"
    if not path.exists():
        from obook.gen.itch import write_itch
        tmp = path.with_name(path.name + ".tmp" + (".gz" if gz else ""))
        write_itch(tmp, messages, stocks, seed)
        os.replace(tmp, path)
    return path


def csv_day(events: int, tickers: int = 100, seed: int = 7) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"csv_{events}_{tickers}_{seed}.csv"
    if not path.exists():
        from obook.gen.csv import write_csv
        tmp = path.with_name(path.name + ".tmp.csv")
        write_csv(tmp, events, tickers, seed)
        os.replace(tmp, path)
    return path


def run_child(code: str, code_dir: str | None = None) -> dict:
    """Run python code in a fresh process; it prints one JSON line; peak RSS (KiB) of the
    process and its children is added as 'peak_kib' / 'children_peak_kib'. ``code_dir``:
    import obook from that checkout instead (old against new)."""
    wrapper = code + (
        "\nimport resource, json as _j\n"
        "_r['peak_kib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "_r['children_peak_kib'] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(_j.dumps(_r))\n")
    env = dict(os.environ, PYTHONPATH=str(Path(code_dir).resolve())) if code_dir else None
    out = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, env=env,
                         cwd="/" if code_dir else None)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(xs):
    return statistics.median(xs)
