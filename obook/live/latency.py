"""Latency stamps and histograms.

One clock for every process of the live path: ``CLOCK_MONOTONIC`` (``time.monotonic_ns``),
system-wide on Linux, so the sender, the listener and the venue read the same time line.
The kernel's receive stamps (``SO_TIMESTAMPNS``) are ``CLOCK_REALTIME``: :class:`Clock`
turns them into monotonic time with an offset measured at start (the tightest of a few
paired readings).

:class:`Histogram` is an HdrHistogram-style log-linear histogram (7 significant bits,
under 0.8% error per value) kept in one int64 numpy array, so a numba kernel can count
into it (``obook._kernels.latency.record``).
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from .._kernels.latency import HALF, N_BUCKETS, SUB, new_counts, record_many

now = time.monotonic_ns

#: the stages of the tick-to-trade path, in order (a stamp is taken at the end of each)
STAGES = ("recv", "decode", "handover", "book", "strategy", "risk", "gateway", "venue")
QUANTILES = (("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9))


class Clock:
    """Monotonic ns, and kernel (realtime) stamps mapped onto it."""

    def __init__(self):
        best = None
        for _ in range(16):
            a = time.monotonic_ns()
            r = time.clock_gettime_ns(time.CLOCK_REALTIME)
            b = time.monotonic_ns()
            if best is None or b - a < best[0]:
                best = (b - a, r - (a + b) // 2)
        self.offset = best[1]       # realtime - monotonic

    def from_realtime(self, ns: int) -> int:
        return ns - self.offset


class Histogram:
    """Counts of values (ns, or cycles with ``scale`` ns per unit) in log-linear buckets."""

    def __init__(self, name: str = "", scale: float = 1.0):
        self.name = name
        self.scale = scale
        self.counts = new_counts()

    def record(self, values) -> None:
        v = np.ascontiguousarray(values, dtype=np.int64)
        if len(v):
            record_many(self.counts, v, len(v))

    def add(self, other: "Histogram") -> None:
        self.counts[:N_BUCKETS] += other.counts[:N_BUCKETS]
        self.counts[N_BUCKETS] = max(self.counts[N_BUCKETS], other.counts[N_BUCKETS])

    @property
    def total(self) -> int:
        return int(self.counts[:N_BUCKETS].sum())

    def value_at(self, q: float) -> float:
        """The highest value of the bucket holding quantile q (percent), in ns."""
        c = self.counts[:N_BUCKETS]
        n = int(c.sum())
        if n == 0:
            return float("nan")
        rank = max(1, int(np.ceil(q / 100.0 * n)))
        idx = int(np.searchsorted(np.cumsum(c), rank))
        return min(bucket_high(idx), int(self.counts[N_BUCKETS])) * self.scale

    @property
    def max(self) -> float:
        return float(self.counts[N_BUCKETS]) * self.scale if self.total else float("nan")

    def summary(self) -> dict:
        out = {"stage": self.name, "count": self.total}
        for label, q in QUANTILES:
            out[label] = self.value_at(q)
        out["max"] = self.max
        return out


def bucket_high(idx: int) -> int:
    """The largest value counted in bucket ``idx``."""
    if idx < SUB:
        return idx
    k = idx - SUB
    s = k // HALF + 1
    m = k % HALF + HALF
    return ((m + 1) << s) - 1


def report_table(hists: list[Histogram]) -> pa.Table:
    """One row per histogram: stage, count, p50, p99, p99.9, max (ns), and the whole
    distribution: ``bucket_ns`` (each non-empty bucket's highest value, ns) and
    ``bucket_count`` (what it counted), from which ``obook plot latency`` draws."""
    rows = [h.summary() for h in hists]
    highs, counts = [], []
    for h in hists:
        idx = np.flatnonzero(h.counts[:N_BUCKETS])
        highs.append([min(bucket_high(int(i)), int(h.counts[N_BUCKETS])) * h.scale for i in idx])
        counts.append(h.counts[idx].tolist())
    return pa.table({
        "stage": pa.array([r["stage"] for r in rows], pa.string()),
        "count": pa.array([r["count"] for r in rows], pa.int64()),
        **{k: pa.array([r[k] for r in rows], pa.float64()) for k in ("p50", "p99", "p99.9", "max")},
        "bucket_ns": pa.array(highs, pa.list_(pa.float64())),
        "bucket_count": pa.array(counts, pa.list_(pa.int64())),
    })


def report_text(hists: list[Histogram], title: str = "latency (ns)") -> str:
    lines = [f"{title}", f"{'stage':<22}{'count':>10}{'p50':>12}{'p99':>12}{'p99.9':>12}{'max':>12}"]
    for h in hists:
        s = h.summary()
        lines.append(f"{s['stage']:<22}{s['count']:>10}" + "".join(
            f"{s[k]:>12.0f}" if s["count"] else f"{'-':>12}" for k in ("p50", "p99", "p99.9", "max")))
    return "\n".join(lines)


def cycles_per_ns(seconds: float = 0.05) -> float:
    """The cycle counter's rate against the monotonic clock (busy-waits ``seconds``)."""
    from .._kernels.latency import read_cycles

    read_cycles()
    a, t = read_cycles(), time.perf_counter_ns()
    while time.perf_counter_ns() - t < seconds * 1e9:
        pass
    b, t2 = read_cycles(), time.perf_counter_ns()
    return (b - a) / (t2 - t)


class BookTimer:
    """The book kernel timed event by event, for a file replay (``Replay(book_kernel=
    timer.kernel)``, one worker): ``histogram()`` gives ns per event."""

    def __init__(self):
        from .._kernels.latency import apply_events_timed

        self.counts = new_counts()
        counts = self.counts

        def kernel(*args):
            return apply_events_timed(*args, counts)

        self.kernel = kernel

    def histogram(self, name: str = "book") -> Histogram:
        h = Histogram(name, scale=1.0 / cycles_per_ns())
        h.counts[:] = self.counts
        return h
