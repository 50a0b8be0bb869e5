"""Bounded resources: memory follows the live book, not the feed's length, the
consumer's speed, or the range of the order refs; a failed replay frees its arrays at once."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import obook
from obook._kernels.layout import ACT_ADD, EV_WIDTH, ROW_WIDTH
from obook.engine.books import BookState
from obook.engine.replay import Replay
from obook.gen.itch import write_itch

from itch_builder import ItchBuilder

SHORT = 400_000
STOCKS = 200                   # the generator caps live orders per stock: a constant live book

PEAK = textwrap.dedent("""
    import json, resource, sys, threading, time
    import psutil
    import obook
    path, workers, sleep = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    for _ in obook.bbo(path, workers=workers):   # warm up: kernels, pyarrow, worker start
        break
    import gc; gc.collect()
    me = psutil.Process()
    base = me.memory_info().rss
    peak = [base, 0]
    done = threading.Event()
    def sample():                                # parent RSS and the sum of the workers' RSS
        while not done.is_set():
            peak[0] = max(peak[0], me.memory_info().rss)
            try:
                peak[1] = max(peak[1], sum(c.memory_info().rss for c in me.children()))
            except psutil.Error:
                pass
            time.sleep(0.005)
    t = threading.Thread(target=sample); t.start()
    rows = 0
    for batch in obook.bbo(path, workers=workers):
        rows += batch.num_rows
        if sleep:
            time.sleep(sleep)
    done.set(); t.join()
    print(json.dumps({"grow": peak[0] - base, "children": peak[1], "rows": rows}))
""")


def peak(path, workers: int, sleep: float = 0.0) -> dict:
    p = subprocess.run([sys.executable, "-c", PEAK, str(path), str(workers), str(sleep)],
                       capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def feeds(tmp_path_factory):
    d = tmp_path_factory.mktemp("res")
    short, long = d / "short.itch", d / "long.itch"
    write_itch(short, SHORT, STOCKS, seed=2)
    write_itch(long, 10 * SHORT, STOCKS, seed=2)
    return short, long


MiB = 1 << 20


@pytest.mark.parametrize("workers", [1, 2])
def test_peak_memory_10x_longer_feed_same_live_book_within_small_factor(feeds, workers):
    short, long = feeds
    a, b = peak(short, workers), peak(long, workers)
    assert b["rows"] > 5 * a["rows"]
    # the parent's growth during the replay: batches in flight + books, never the feed
    assert b["grow"] <= 1.5 * a["grow"] + 32 * MiB, (a, b)
    if workers > 1:
        assert b["children"] <= 1.5 * a["children"] + 32 * MiB, (a, b)


def test_slow_consumer_does_not_grow_parent_memory(feeds):
    short, _ = feeds
    fast, slow = peak(short, 2), peak(short, 2, sleep=0.02)
    assert slow["rows"] == fast["rows"]
    assert slow["grow"] <= fast["grow"] + 32 * MiB, (fast, slow)


def book_bytes(b: BookState) -> int:
    return sum(v.nbytes for v in vars(b).values() if isinstance(v, np.ndarray))


def apply_adds(refs) -> BookState:
    b = BookState()
    ev = np.zeros((len(refs), EV_WIDTH), dtype=np.int64)
    ev[:, 0] = np.arange(1, len(refs) + 1)
    ev[:, 2] = 1
    ev[:, 3] = ACT_ADD
    ev[:, 4] = np.array(refs, dtype=np.uint64).view(np.int64)
    ev[:, 5] = 100
    ev[:, 6] = 1000 + np.arange(len(refs)) % 50
    status, _, _ = b.apply(ev, len(refs), np.zeros((len(refs), ROW_WIDTH), dtype=np.int64))
    assert status == 0 and b.live_orders == len(refs)
    return b


def test_book_refs_near_2_32_and_2_63_cost_memory_for_live_orders_not_range():
    base = book_bytes(BookState())
    b = apply_adds([2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 0])
    assert book_bytes(b) - base < 1 * MiB


def test_book_thousands_of_refs_spread_over_2_64_stay_small():
    refs = [(i * 0x9E3779B97F4A7C15) % 2**64 | 2**32 for i in range(1, 5001)]
    b = apply_adds(refs)
    assert book_bytes(b) < 8 * MiB


def test_book_refs_spread_over_direct_range_cost_memory_for_live_orders():
    b = apply_adds([i * 4096 for i in range(5000)])
    assert book_bytes(b) < 16 * MiB


@pytest.mark.parametrize("workers", [1, 2])
def test_bbo_refs_near_2_32_and_2_63_small_feed_matches_and_stays_small(tmp_path, workers):
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 2**32 - 5, "B", 100, 1000)
    b.add(1, 2**63 + 5, "B", 50, 1000)
    b.add(1, 2**64 - 1, "S", 10, 1100)
    b.delete(1, 2**32 - 5)
    path = b.write(tmp_path / "far.itch")
    stats = {}
    rows = obook.bbo(path, workers=workers, stats=stats).read_all().to_pylist()
    assert [(r["bid_qty"], r["ask_qty"]) for r in rows] == [(100, None), (150, None), (150, 10), (50, 10)]
    assert stats["live_orders"] == 2


def test_failed_replay_frees_its_state_without_the_cycle_collector(tmp_path, monkeypatch):
    """Regression: the feed error sat in the replay's frame, and error -> traceback -> frame
    -> error kept every array of the replay (~20 MB, far more with big books) alive until a
    gc run. Found by the truncation fuzz test (RSS grew by ~4 MB per failed replay)."""
    import obook.engine.applier as applier
    books = []

    class Tracked(BookState):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            books.append(weakref.ref(self))

    monkeypatch.setattr(applier, "BookState", Tracked)
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 1, "B", 100, 1000)
    path = b.write(tmp_path / "cut.itch", tail=b"\x00\x24A")
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            try:
                for _ in Replay(path, workers=1).batches():
                    pass
            except obook.TruncatedFeedError as e:
                kept = e                      # even a kept error holds no books
        assert len(books) == 3 and all(r() is None for r in books)
        assert "truncated" in str(kept)
    finally:
        gc.enable()


# ---------------------------------------------------------------- side tables

SIDE_PEAK = textwrap.dedent("""
    import json, resource, sys
    import obook
    path, out, small = sys.argv[1], sys.argv[2], sys.argv[3]
    obook.convert(small, out + "-warm", tables="symbols", workers=1)   # warm up: imports, kernels
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    obook.convert(path, out, tables="symbols", workers=1)
    rows = sum(b.num_rows for b in obook.symbols(path))
    print(json.dumps({"grow": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) << 10,
                      "rows": rows}))
""")


def _directory_feed(path, n):
    b = ItchBuilder()
    for i in range(n):
        b.directory(i % 65536, f"S{i:07d}")
    return b.write(path)


def test_symbols_side_table_memory_does_not_grow_with_the_number_of_r_messages(tmp_path):
    """The symbols side table used to keep every R (~370 B each): 4x more R, 4x the memory."""
    grow = {}
    small = _directory_feed(tmp_path / "small.itch", 1000)
    for n in (100_000, 400_000):
        feed = _directory_feed(tmp_path / f"r{n}.itch", n)
        p = subprocess.run([sys.executable, "-c", SIDE_PEAK, str(feed), str(tmp_path / f"out{n}"), str(small)],
                           capture_output=True, timeout=600)
        assert p.returncode == 0, p.stderr.decode()[-2000:]
        got = json.loads(p.stdout)
        assert got["rows"] == n
        grow[n] = got["grow"]
    # 300,000 more R kept would be >= 100 MB more; streamed, the peak stays about one batch's
    assert grow[400_000] < grow[100_000] + (60 << 20), grow


# ---------------------------------------------------------------- limits that refuse resources

def _small_feed(tmp_path):
    path = tmp_path / "day.itch"
    write_itch(path, 5_000, 20, seed=1)
    return path


def test_replay_shared_memory_refused_raises_worker_error_naming_the_limit(tmp_path, monkeypatch):
    """An OSError while the workers start (the memfd, a pipe, fork) is the pool's: a
    WorkerError saying what ran out, not an OSError an output's writer reports as its own."""
    import errno

    feed = _small_feed(tmp_path)

    def memfd_create(name, flags=0):
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(os, "memfd_create", memfd_create)
    with pytest.raises(obook.WorkerError, match=r"cannot start 2 worker processes: Too many open files.*fewer workers"):
        obook.bbo(feed, workers=2).read_all()


def test_cli_open_files_limit_below_workers_needs_one_line_error_no_file(tmp_path):
    """``ulimit -n 16`` and 8 workers: their pipes do not fit. One error line naming the limit
    (not "<output>: write failed"), exit 1, nothing left beside the output."""
    feed = _small_feed(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    code = textwrap.dedent("""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
        sys.argv = ["obook", "bbo", sys.argv[1], "--workers", "8", "--output", sys.argv[2]]
        from obook._entry import main
        main()
    """)
    p = subprocess.run([sys.executable, "-c", code, str(feed), str(out / "bbo.parquet")], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "OBOOK_KERNELS": "python"})
    assert p.returncode == 1, p.stderr
    assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
    assert "ulimit -n" in p.stderr and "write failed" not in p.stderr, p.stderr
    assert list(out.iterdir()) == []


def test_cli_memory_error_one_line_out_of_memory_no_file(tmp_path):
    """An allocation refused (a memory limit, ``ulimit -v``) ends the command with one
    ``error: out of memory`` line and no temp file, not a traceback."""
    feed = _small_feed(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    code = textwrap.dedent("""
        import sys
        import obook.engine.replay as replay

        def submit(self, slot, batch):
            raise MemoryError("Unable to allocate 5.00 MiB for an array with shape (65536, 10)")

        replay._Local.submit = submit
        sys.argv = ["obook", "bbo", sys.argv[1], "--workers", "1", "--output", sys.argv[2]]
        from obook._entry import main
        main()
    """)
    p = subprocess.run([sys.executable, "-c", code, str(feed), str(out / "bbo.parquet")], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "OBOOK_KERNELS": "python"})
    assert p.returncode == 1, p.stderr
    assert p.stderr == "error: out of memory: Unable to allocate 5.00 MiB for an array with shape (65536, 10)\n"
    assert list(out.iterdir()) == []
