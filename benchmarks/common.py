"""Shared helpers of the benchmarks: generated feeds (cached), timed child runs, medians."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

DATA = Path(os.environ.get("OBOOK_BENCH_DATA", Path(__file__).resolve().parent.parent / "bench-data"))


def generated_file(name: str, write) -> Path:
    """DATA/name, written by ``write(tmp_path)`` the first time (then renamed into place)."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / name
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp" + "".join(path.suffixes[-2:]))
        write(tmp)
        os.replace(tmp, path)
    return path


def itch_day(messages: int, stocks: int = 8000, seed: int = 7, gz: bool = False) -> Path:
    from obook.gen.itch import write_itch
    return generated_file(f"itch_{messages}_{stocks}_{seed}.itch{'.gz' if gz else ''}",
                      lambda tmp: write_itch(tmp, messages, stocks, seed))


def csv_day(events: int, tickers: int = 100, seed: int = 7) -> Path:
    from obook.gen.csv import write_csv
    return generated_file(f"csv_{events}_{tickers}_{seed}.csv", lambda tmp: write_csv(tmp, events, tickers, seed))


def pitch_day(messages: int, stocks: int = 8000, seed: int = 7) -> Path:
    """The Cboe PITCH day of ``itch_day(messages, stocks, seed)`` (the same orders and events)."""
    from obook.gen.pitch import write_pitch
    return generated_file(f"pitch_{messages}_{stocks}_{seed}.pitch", lambda tmp: write_pitch(tmp, messages, stocks, seed))


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


def run_clean(code: str, *args: str) -> dict:
    """Run python ``code`` with ``args`` as its arguments in a fresh process from ``/`` without
    PYTHONPATH (the code puts the checkout it measures on its path); it prints one JSON line."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd="/")
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(xs):
    return statistics.median(xs)


@contextmanager
def captured_batches(observer_class):
    """While inside: every worker ``observer_class.worker`` makes keeps a copy of each batch it
    is given. Yields ``{"observer": the last observer, "batches": [(events, n, names)]}``."""
    got = {"observer": None, "batches": []}
    make = observer_class.worker

    def worker(self, i, n):
        got["observer"] = self
        w = make(self, i, n)
        batch = w.batch

        def keep(events, n, names):
            got["batches"].append((events[:n].copy(), n, list(names)))
            return batch(events, n, names)
        w.batch = keep
        return w
    observer_class.worker = worker
    try:
        yield got
    finally:
        observer_class.worker = make
