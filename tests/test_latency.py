"""Latency histograms, the timed book kernel (``obook bbo --latency``) and no allocation on
the live book path after warm-up."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from obook._kernels import latency as K
from obook.cli import app
from obook.engine.replay import Replay
from obook.gen.itch import write_itch
from obook.live.latency import BookTimer, Histogram, bucket_high, report_table


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("lat") / "day.itch"
    write_itch(str(path), 20_000, 10, 2)
    return path


def _bucket_low(idx: int) -> int:
    return bucket_high(idx - 1) + 1 if idx else 0


@pytest.mark.parametrize("fn", [K.bucket_of, K.bucket_of.py_func])
def test_bucket_of_values_fall_inside_their_bucket(fn):
    rng = np.random.default_rng(1)
    values = np.concatenate([np.arange(0, 600), 2 ** np.arange(7, 62), 2 ** np.arange(7, 62) - 1,
                             rng.integers(0, 2 ** 40, 2000)])
    for v in values.tolist():
        b = fn(v)
        assert 0 <= b < K.N_BUCKETS
        assert _bucket_low(b) <= v <= bucket_high(b)
        assert bucket_high(b) - _bucket_low(b) <= max(0, v // 64)   # under 1/64 relative width


def test_histogram_quantiles_match_numpy_within_bucket_precision():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.lognormal(8, 1, 100_000), rng.uniform(1e6, 5e6, 100)]).astype(np.int64)
    h = Histogram("x")
    h.record(values[:50_000])
    h.record(values[50_000:])
    for q in (50, 99, 99.9):
        exact = np.percentile(values, q, method="inverted_cdf")
        assert exact <= h.value_at(q) <= exact * (1 + 1 / 64) + 1
    assert h.max == values.max() and h.total == len(values)
    t = report_table([h])
    assert t.column_names == ["stage", "count", "p50", "p99", "p99.9", "max", "bucket_ns", "bucket_count"]
    assert t["count"][0].as_py() == len(values) == sum(t["bucket_count"][0].as_py())


def test_record_compiled_and_python_count_alike():
    values = np.array([0, 1, 127, 128, 129, 255, 256, 10 ** 9, 7], np.int64)
    a, b = K.new_counts(), K.new_counts()
    K.record_many(a, values, len(values))
    K.record_many.py_func(b, values, len(values))
    assert (a == b).all() and a[K.N_BUCKETS] == 10 ** 9 and a[:K.N_BUCKETS].sum() == len(values)


def test_timed_book_kernel_same_rows_counts_every_event(day):
    plain = Replay(day, workers=1, tables=("bbo", "trades"))
    timer = BookTimer()
    timed = Replay(day, workers=3, tables=("bbo", "trades"), book_kernel=timer.kernel)
    assert timed.workers == 1
    got = {t: [] for t in ("bbo", "trades")}
    want = {t: [] for t in ("bbo", "trades")}
    for t, b in timed.table_batches():
        got[t].append(b)
    for t, b in plain.table_batches():
        want[t].append(b)
    for t in got:
        assert pa.Table.from_batches(got[t]).equals(pa.Table.from_batches(want[t]))
    h = timer.histogram()
    assert h.total > 0.9 * 20_000 and h.value_at(50) > 0      # one count per book event


def test_cli_bbo_latency_prints_percentiles(day, tmp_path):
    out = tmp_path / "bbo.parquet"
    r = CliRunner().invoke(app, ["bbo", str(day), "--latency", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "book (itch)" in r.output and "p99.9" in r.output
    assert pa.parquet.read_metadata(out).num_rows == Replay(day, workers=1).reader().read_all().num_rows


def test_live_book_path_allocates_nothing_after_warm_up(day):
    from live_support import allocation_stats
    from obook.live.send import read_messages

    stats = allocation_stats()

    msgs = read_messages(day)

    class Packets:       # the listener's hand-over: whole messages, a packet's worth a read
        partial_reads = True

        def __init__(self):
            self.chunks = [b"".join(len(m).to_bytes(2, "big") + m for m in msgs[i:i + 20])
                           for i in range(0, len(msgs), 20)]
            self.i = 0
            self.warm = None

        def readinto(self, view):
            if self.i == len(self.chunks) // 4:
                self.warm = stats()
            if self.i == len(self.chunks):
                return 0
            c = self.chunks[self.i]
            self.i += 1
            view[:len(c)] = c
            return len(c)

    src = Packets()
    for _ in Replay(src, workers=1, format="itch", tables=("bbo", "trades")).table_batches():
        pass
    end = stats()
    assert src.warm is not None
    assert (end.alloc - src.warm.alloc, end.mi_alloc - src.warm.mi_alloc) == (0, 0)
