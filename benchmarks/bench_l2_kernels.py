"""The Shenzhen text log's framer and decoder kernels alone, old against new, in one
process (alternating rounds, medians): ``line_ends`` + ``text_scan`` (the framer, every
line; then ``text_heads``, line ends and heads only, now with the parser's state and its
results as named tuples), a worker's decoder (1 of 1
and 1 of 2 workers: ``text_records``, which parsed the text again, or in older code
``owned_rows``, which copied the framer's rows, or now ``text_rows``, the rest
of the worker's own lines), and the two together (all the parsing of a batch with 1 worker) on the front of the bench_l2
text day.

    python benchmarks/bench_l2_kernels.py --baseline /tmp/old_checkout --mib 60

The baseline's ``obook`` is imported as a second package (``obook_baseline``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_book_kernel import _baseline  # noqa: E402,F401  (registers obook_baseline)
from common import DATA, median  # noqa: E402


def _runs(pkg, buf, n_lines):
    K = __import__(f"{pkg}._kernels.l2_szse", fromlist=["x"])
    T = __import__(f"{pkg}._kernels.l2_text", fromlist=["x"])
    vals, have = np.zeros(T.N_KEYS, np.int64), np.zeros(T.N_KEYS, np.int8)
    ends = np.zeros(n_lines + 1, np.int64)
    codes, details = np.zeros(n_lines + 1, np.int64), np.zeros(n_lines + 1, np.int64)
    rec = np.zeros((n_lines + 1, K.R_WIDTH), np.int64)

    made = [0]
    split = hasattr(K, "text_heads")      # the framer reads heads, the workers the rest
    heads = np.zeros((n_lines + 1, K.H_WIDTH if split else 1), np.int64)
    bad = np.zeros((n_lines + 1, 3), np.int64)

    named = hasattr(T, "fields")          # the parser's state as one Fields, the heads as one Heads
    F = T.fields() if named else None
    H = K.Heads(ends, codes, details, heads) if named else None

    def framer():
        if named:
            made[0] = K.text_heads(buf, 0, len(buf), True, 0, n_lines + 1, 1, F, H, 0)[1]
            return made[0]
        if split:
            made[0] = K.text_heads(buf, 0, len(buf), True, ends, 0, n_lines + 1, 1, T.KHASH, T.KID, vals,
                                   have, codes, details, heads, 0)[1]
            return made[0]
        k = T.line_ends(buf, 0, len(buf), True, ends, 0, n_lines + 1)
        made[0] = K.text_scan(buf, ends, k, 1, T.KHASH, T.KID, vals, have, codes, details, rec)
        return made[0]

    rows = np.zeros((n_lines + 1, K.R_WIDTH), np.int64)

    def decoder(w, nw):
        if named:
            return lambda: K.text_rows(buf, heads, made[0], w, nw, F, rows, bad)[0]
        if split:
            return lambda: K.text_rows(buf, heads, made[0], w, nw, T.KHASH, T.KID, vals, have, rows, bad)[0]
        if hasattr(K, "text_records"):
            return lambda: K.text_records(buf, 1, w, nw, T.KHASH, T.KID, vals, have, rows, True)[0]
        return lambda: K.owned_rows(rec, made[0], w, nw, rows)

    def both():
        framer()
        return decoder(0, 1)()
    return {"framer": framer, "decoder 1 of 1": decoder(0, 1), "decoder 1 of 2": decoder(0, 2),
            "framer + decoder": both}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--mib", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--day", default=str(DATA / "szse_100000x10.log"))
    args = ap.parse_args()
    _baseline(args.baseline)
    buf = np.fromfile(args.day, np.uint8, count=args.mib << 20)
    buf = buf[: int(np.flatnonzero(buf == 10)[-1]) + 1]
    n_lines = int((buf == 10).sum())
    sides = {"new": _runs("obook", buf, n_lines), "old": _runs("obook_baseline", buf, n_lines)}
    for fns in sides.values():
        fns["framer"]()             # (a decoder of the rows replays the framer's last rows)
        for f in fns.values():
            f()
    times = {(s, k): [] for s in sides for k in sides[s]}
    for _ in range(args.repeats):
        for k in sides["new"]:
            for s in sides:
                t = time.perf_counter()
                r = sides[s][k]()
                times[(s, k)].append(time.perf_counter() - t)
                times.setdefault(("rows", s, k), r)
    print(f"{n_lines:,} lines, {len(buf) / 2**20:.0f} MiB")
    for k in sides["new"]:
        new, old = median(times[("new", k)]), median(times[("old", k)])
        print(f"{k:<16} old {old / n_lines * 1e9:6.0f} ns/line  new {new / n_lines * 1e9:6.0f} ns/line  "
              f"new/old {new / old:.2f}  rows {times[('rows', 'old', k)]} / {times[('rows', 'new', k)]}")


if __name__ == "__main__":
    main()
