"""A/B of the Shanghai framer's line scan (``l2_sse.sse_scan``) with and without the checks
of lines that no message should hold (``l2_text.marker_at`` on every message line: a second
``//``; ``binary_at`` on lines that are no message): the kernel alone over the real day's log
(decompressed into memory), old and new alternating, medians.

    python benchmarks/ab_sse_scan_checks.py --old /path/to/old/checkout [--log FILE.zip] [--rounds 9]

``--old``: a directory holding an ``obook`` package of the code before the checks (its
kernels compiled beside it, or they compile on the first round, which is dropped).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
import zipfile

import numpy as np


def load(root: str | None):
    """(l2_sse, l2_text) of the obook package under ``root`` (None: the one imported now)."""
    for name in [m for m in sys.modules if m == "obook" or m.startswith("obook.")]:
        del sys.modules[name]
    if root:
        sys.path.insert(0, root)
    try:
        return importlib.import_module("obook._kernels.l2_sse"), importlib.import_module("obook._kernels.l2_text")
    finally:
        if root:
            sys.path.remove(root)


def scan_all(K, T, buf) -> float:
    n, want = len(buf), 1 << 16
    arrays = [np.zeros(want, np.int64) for _ in range(6)]
    lines = K.Lines(*arrays)
    F = T.fields()
    t = time.perf_counter()
    p = 0
    while p < n:
        k = K.sse_scan(buf[p:], n - p, True, want, F, lines)
        p += int(lines.ends[k - 1]) + 1
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--log", default="/work/shared/data/AX_sbe_sse_600519.zip")
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    with zipfile.ZipFile(a.log) as z:
        buf = np.frombuffer(z.read(z.namelist()[0]), np.uint8).copy()
    old, new = load(a.old), load(None)
    times = {"old": [], "new": []}
    for r in range(a.rounds + 1):
        for name, mods in (("old", old), ("new", new)) if r % 2 else (("new", new), ("old", old)):
            dt = scan_all(*mods, buf)
            if r:
                times[name].append(dt)
    mo, mn = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"{len(buf):,} bytes, {a.rounds} rounds: old {mo * 1e3:.1f} ms, new {mn * 1e3:.1f} ms, new / old {mn / mo:.3f}")


if __name__ == "__main__":
    main()
