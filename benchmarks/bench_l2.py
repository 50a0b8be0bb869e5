"""Shenzhen Level-2 benchmark: messages/s of obook's BBO replay of a generated multi-security
day as the AX-SBE text log and as AX-SBE binary, 1 and 2 workers, against the pure-Python
reference replayer (tests/reference_l2.py, timed on a slice of the same day).

The day: a generated base day (``--base`` messages, 6 securities on 2 channels) copied
``--copies`` times onto other securities and channels, the copies interleaved in chunks
of 1,000 records. Alternates the contenders run by run, each in a fresh process
(kernels loaded before timing), and reports medians. Goal (issue 14): text >= 2M msg/s
with 2 workers, binary >= 8M msg/s.

    python benchmarks/bench_l2.py --base 100000 --copies 50 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from common import DATA, median, run_child  # noqa: E402

OBOOK = """
import time, obook
import obook.engine.worker_main, obook.feeds.szse.feed
t = time.perf_counter(); rows = 0
for b in obook.bbo({path!r}, workers={workers}, format={fmt!r}):
    rows += b.num_rows
_r = {{'seconds': time.perf_counter() - t, 'rows': rows}}
"""


def day(base: int, copies: int, seed: int = 7):
    """The generated records, copied onto other securities and channels and interleaved."""
    from obook.gen.szse import generate

    recs = generate(base, 6, seed)
    chunks = []
    for k in range(copies):
        out = []
        for r in recs:
            r = dict(r)
            r["SecurityID"] = f"{int(r['SecurityID']) + 1000 * k:06d}"
            r["ChannelNo"] = r["ChannelNo"] + 10 * k
            out.append(r)
        chunks.append([out[i:i + 100] for i in range(0, len(out), 100)])
    merged = []
    for i in range(max(len(c) for c in chunks)):
        for c in chunks:
            if i < len(c):
                merged += c[i]
    return recs, merged


def files(base: int, copies: int) -> tuple[Path, Path, list]:
    from obook.gen.szse import binary_record, text_line

    DATA.mkdir(parents=True, exist_ok=True)
    text = DATA / f"szse_{base}x{copies}.log"
    binary = DATA / f"szse_{base}x{copies}.bin"
    recs, merged = day(base, copies)
    if not text.exists():
        with open(str(text) + ".tmp", "w") as f:
            for i in range(0, len(merged), 100_000):
                f.write("\n".join(text_line(r) for r in merged[i:i + 100_000]) + "\n")
        os.replace(str(text) + ".tmp", text)
    if not binary.exists():
        with open(str(binary) + ".tmp", "wb") as f:
            for i in range(0, len(merged), 100_000):
                f.write(b"".join(binary_record(r) for r in merged[i:i + 100_000]))
        os.replace(str(binary) + ".tmp", binary)
    return text, binary, recs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=100_000)
    ap.add_argument("--copies", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reference", type=int, default=20_000, help="messages the reference replays")
    args = ap.parse_args()
    text, binary, recs = files(args.base, args.copies)
    n = len(recs) * args.copies
    print(f"day: {n:,} messages; text {text.stat().st_size / 2**20:.0f} MiB, binary "
          f"{binary.stat().st_size / 2**20:.0f} MiB")
    from reference_l2 import szse_bbo
    part = recs[:args.reference]
    t = time.perf_counter()
    szse_bbo(part)
    ref = len(part) / (time.perf_counter() - t)
    print(f"pure-Python reference (records already parsed, first {len(part):,} messages): {ref:,.0f} msg/s")
    contenders = {f"{fmt} {w} worker{'s' * (w > 1)}": OBOOK.format(path=str(p), workers=w, fmt=fmt)
                  for fmt, p in (("szse", text), ("szse-bin", binary)) for w in (1, 2)}
    results: dict[str, list[dict]] = {k: [] for k in contenders}
    for _ in range(args.repeats):
        for name, code in contenders.items():
            results[name].append(run_child(code))
    print("| contender | median s | M msg/s | vs reference | peak RSS MiB (parent / workers) |")
    print("|---|---|---|---|---|")
    for name, rs in results.items():
        s = median([r["seconds"] for r in rs])
        print(f"| {name} | {s:.2f} | {n / s / 1e6:.2f} | {n / s / ref:.0f}x | "
              f"{median([r['peak_kib'] for r in rs]) / 1024:.0f} / "
              f"{median([r['children_peak_kib'] for r in rs]) / 1024:.0f} |")


if __name__ == "__main__":
    main()
