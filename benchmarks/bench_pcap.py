"""Replaying an ITCH day from two pcap lines (drops on both, filled from the other) against
the plain file replay of the same messages: alternating runs, medians, the ratio (the goal: <= 1.3x).

    python benchmarks/bench_pcap.py --messages 15000000 --workers 2 --repeats 3 --dir /tmp/bench_pcap
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from pathlib import Path

import obook
from obook.gen.itch import write_itch
from obook.gen.pcap import LINE_A, LINE_B, write_pcap


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _run(src, workers, cpu=None, **kw):
    """(seconds, rows); ``cpu``: a list that gets the parent's CPU seconds (every thread)."""
    t0, c0 = time.perf_counter(), _cpu()
    rows = sum(b.num_rows for b in obook.bbo(src, workers=workers, **kw))
    if cpu is not None:
        cpu.append(_cpu() - c0)
    return time.perf_counter() - t0, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=15_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--drop", type=float, default=0.01)
    ap.add_argument("--dir", default="/tmp/bench_pcap")
    ap.add_argument("--dated", action="store_true",
                    help="also alternate the plain replay given the captures' date (the capture replay "
                         "knows its date from the packets and adds the timestamp column; the plain file does not)")
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
    plain, caps, wholes, cpu_plain, cpu_caps, dated, cpu_dated = [], [], [], [], [], [], []
    for _ in range(a.repeats):
        t, n_plain = _run(day, a.workers, cpu_plain)
        plain.append(t)
        if a.dated:
            t, _n = _run(day, a.workers, cpu_dated, date="2026-11-30")      # write_pcap's default date
            dated.append(t)
            print(f"plain with the date {t:.2f} s (parent CPU {cpu_dated[-1]:.2f} s)")
        t, n_cap = _run(obook.lines(*lines), a.workers, cpu_caps)
        caps.append(t)
        assert n_cap == n_plain
        if a.whole:
            t, n_whole = whole_run(lines, a.workers)
            wholes.append(t)
            assert n_whole == n_plain
        print(f"plain {plain[-1]:.2f} s (parent CPU {cpu_plain[-1]:.2f} s), pcap lines {caps[-1]:.2f} s "
              f"(parent CPU {cpu_caps[-1]:.2f} s)"
              + (f", whole arbitration {wholes[-1]:.2f} s" if a.whole else "") + f" ({n_plain} rows)")
    mp, mc = statistics.median(plain), statistics.median(caps)
    print(f"medians: plain {mp:.2f} s, pcap lines {mc:.2f} s: {mc / mp:.2f}x (goal <= 1.3x), "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"parent CPU medians (the workers' work is the same): plain {statistics.median(cpu_plain):.2f} s, "
          f"pcap lines {statistics.median(cpu_caps):.2f} s")
    if a.dated:
        md = statistics.median(dated)
        print(f"plain with the date {md:.2f} s (parent CPU {statistics.median(cpu_dated):.2f} s): pcap lines "
              f"{mc / md:.2f}x of it")
    if a.whole:
        mw = statistics.median(wholes)
        print(f"whole-capture arbitration {mw:.2f} s: {mw / mp:.2f}x")


if __name__ == "__main__":
    main()
