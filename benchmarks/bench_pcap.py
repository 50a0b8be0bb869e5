"""Replaying an ITCH day from two pcap lines (drops on both, filled from the other) against
the plain file replay of the same messages: alternating runs, medians, the ratio (#15: <= 1.3x).

    python benchmarks/bench_pcap.py --messages 15000000 --workers 2 --repeats 3 --dir /tmp/bench_pcap
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import obook
from obook.gen.itch import write_itch
from obook.gen.pcap import LINE_A, LINE_B, write_pcap


def _run(src, workers):
    t0 = time.perf_counter()
    rows = sum(b.num_rows for b in obook.bbo(src, workers=workers))
    return time.perf_counter() - t0, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=15_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--drop", type=float, default=0.01)
    ap.add_argument("--dir", default="/tmp/bench_pcap")
    ap.add_argument("--whole", action="store_true",
                    help="also alternate the whole-capture arbitration (rounds.USE_ROUNDS off) for a comparison")
    a = ap.parse_args()
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    day = d / f"day{a.messages}.itch"
    cap_a, cap_b = d / f"a{a.messages}.pcap", d / f"b{a.messages}.pcap"
    if not day.exists():
        t = time.perf_counter()
        write_itch(day, a.messages, a.stocks, seed=1)
        print(f"generated {day} in {time.perf_counter() - t:.1f} s")
    if not cap_b.exists():
        t = time.perf_counter()
        info = write_pcap(day, cap_a, cap_b, seed=1, drop=a.drop, dup=0.002, reorder=0.002)
        assert not info["lost"]
        print(f"wrote captures ({info['packets']} packets a line) in {time.perf_counter() - t:.1f} s")
    lines = obook.lines(a=f"{cap_a}:{LINE_A[0]}:{LINE_A[1]}", b=f"{cap_b}:{LINE_B[0]}:{LINE_B[1]}")
    sizes = (os.path.getsize(day), os.path.getsize(cap_a), os.path.getsize(cap_b))
    print(f"day {sizes[0] / 1e6:.0f} MB, captures {sizes[1] / 1e6:.0f} + {sizes[2] / 1e6:.0f} MB, "
          f"load {os.getloadavg()[0]:.1f}")
    from obook.feeds.mold import rounds

    def whole_run(src, workers):               # the lines arbitrated whole before the replay
        keep, rounds.USE_ROUNDS = rounds.USE_ROUNDS, False
        try:
            return _run(obook.lines(*src), workers)
        finally:
            rounds.USE_ROUNDS = keep

    _run(day, a.workers)                        # warm the kernels and the page cache
    _run(lines, a.workers)
    plain, caps, wholes = [], [], []
    for _ in range(a.repeats):
        t, n_plain = _run(day, a.workers)
        plain.append(t)
        t, n_cap = _run(obook.lines(*lines), a.workers)
        caps.append(t)
        assert n_cap == n_plain
        if a.whole:
            t, n_whole = whole_run(lines, a.workers)
            wholes.append(t)
            assert n_whole == n_plain
        print(f"plain {plain[-1]:.2f} s, pcap lines {caps[-1]:.2f} s"
              + (f", whole arbitration {wholes[-1]:.2f} s" if a.whole else "") + f" ({n_plain} rows)")
    mp, mc = statistics.median(plain), statistics.median(caps)
    print(f"medians: plain {mp:.2f} s, pcap lines {mc:.2f} s: {mc / mp:.2f}x (goal <= 1.3x), "
          f"load {os.getloadavg()[0]:.1f}")
    if a.whole:
        mw = statistics.median(wholes)
        print(f"whole-capture arbitration {mw:.2f} s: {mw / mp:.2f}x")


if __name__ == "__main__":
    main()
