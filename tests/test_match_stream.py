"""obook.matching.stream: one table from several workers, merged in input order as the
workers hand their rows over, and a consumer that stops early stops them."""

from __future__ import annotations

import contextlib
import signal

import psutil
import pyarrow as pa
import pytest

import obook
from obook.matching import books as books_mod
from obook.matching import stream, table_reader
from match_flows import random_flow, to_table

TABLES = ("fills", "events", "bbo", "depth")


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    import pyarrow.csv as pcsv

    p = tmp_path_factory.mktemp("match_stream") / "orders.csv"
    pcsv.write_csv(to_table(random_flow(17, 6000, instruments=("AAA", "BBB", "CCC", "DDD", "EEE"), tick=1)), p)
    return p


@pytest.fixture
def small_chunks(monkeypatch):
    """Tiny kernel buffers (the workers hand over many chunks, the merge waits on each) and
    a count of the handovers the parent reads."""
    seen = {"received": 0}
    received = stream._received

    def counted(*args):
        seen["received"] += 1
        return received(*args)

    monkeypatch.setattr(books_mod, "CHUNK", 64)
    monkeypatch.setattr(stream, "AHEAD", 256)
    monkeypatch.setattr(stream, "_received", counted)
    return seen


@pytest.mark.parametrize("options", [dict(), dict(date="2024-03-01", levels=3, stp="cancel_resting"),
                                     dict(day_end=False, instruments=["AAA", "CCC", "EEE"])])
def test_table_reader_workers_give_the_rows_of_match_workers_two(orders, small_chunks, options, no_leaks):
    whole = obook.match(orders, workers=2, **options)
    assert whole.table("events").equals(obook.match(orders, workers=1, **options).table("events"))
    for t in TABLES:
        for workers in (2, 3):
            got = table_reader(orders, t, workers=workers, **options).read_all()
            assert got.schema.equals(whole.table(t).schema, check_metadata=True), t
            assert got.equals(whole.table(t)), (t, workers)
    assert small_chunks["received"] > 50          # the rows came over in many handovers


def test_table_reader_workers_unread_rest_stops_the_workers(orders, small_chunks, no_leaks):
    table_reader(orders, "events", workers=2).read_all()
    whole, small_chunks["received"] = small_chunks["received"], 0
    reader = table_reader(orders, "events", workers=2)
    first = reader.read_next_batch()
    reader.close()
    del reader
    assert first.num_rows > 0 and 0 < small_chunks["received"] < whole / 4


def test_duckdb_match_workers_two_limit_stops_before_a_later_bad_row(tmp_path, no_leaks):
    from match_flows import csv_with_bad_row, tuples

    orders = csv_with_bad_row(tmp_path / "orders.csv", 3, 3000, 2900)
    with pytest.raises(obook.FeedError, match="row 2900") as err:
        obook.match(orders, workers=2)
    con = obook.connect()
    got = con.sql(f"SELECT * FROM obook_match_events('{orders}', workers := 2) LIMIT 10").fetchall()
    assert got == tuples(err.value.partial.events.slice(0, 10))
    con.close()


def test_polars_scan_match_workers_two_head_gives_the_first_rows(orders, no_leaks):
    import polars as pl

    got = obook.scan_match(orders, table="fills", workers=2).head(10).collect()
    assert got.equals(pl.from_arrow(obook.match(orders, tables=("fills",)).fills.slice(0, 10)))


@pytest.fixture
def long_orders(tmp_path):
    """Order entry long enough that the workers still run after the first batch."""
    from obook.gen.orders import write_orders

    path = tmp_path / "orders.parquet"
    write_orders(path, 1_500_000, instruments=6)
    return path


@pytest.fixture
def stop_limit(monkeypatch):
    """A worker stopped for a second is given up on (polled every 0.1 s)."""
    from obook.engine import workers

    monkeypatch.setattr(workers, "STOPPED_SECONDS", 1.0)
    monkeypatch.setattr(workers, "_POLL_SECONDS", 0.1)


def _signalled_worker_raises(run, signum, says: str) -> None:
    """``run(signal_one)``, ``signal_one()`` sending ``signum`` to a match worker: a
    WorkerError naming it (``says``: what it says of it), within the watchdog's time."""
    from conftest import worker_children
    from fuzz_support import watchdog

    sent = []

    def signal_one():
        victim = worker_children()[-1]
        victim.send_signal(signum)
        sent.append(victim)

    try:
        with watchdog(30, hard=False):
            with pytest.raises(obook.WorkerError, match=rf"match worker \d \(pid \d+\) {says}") as err:
                run(signal_one)
        assert f"pid {sent[0].pid}" in str(err.value)
    finally:
        for victim in sent:
            with contextlib.suppress(psutil.NoSuchProcess):
                victim.send_signal(signal.SIGCONT)


def _stopped_worker_raises(run) -> None:
    _signalled_worker_raises(run, signal.SIGSTOP, "is stopped")


def _read_signalled(path, signal_one) -> None:
    """The events of ``path`` read with two workers, ``signal_one()`` after the first batch."""
    reader = table_reader(path, "events", workers=2)
    assert reader.read_next_batch().num_rows > 0
    signal_one()
    reader.read_all()


def test_table_reader_workers_worker_killed_mid_stream_raises_worker_error(long_orders, no_leaks):
    _signalled_worker_raises(lambda kill: _read_signalled(long_orders, kill), signal.SIGKILL, r"died \(exit code -9\)")


def test_table_reader_workers_worker_stopped_mid_stream_raises_worker_error(long_orders, stop_limit, no_leaks):
    _stopped_worker_raises(lambda stop: _read_signalled(long_orders, stop))


def test_match_workers_worker_stopped_raises_worker_error(long_orders, stop_limit, monkeypatch, no_leaks):
    from obook.matching import shards

    started = shards.shard_workers

    @contextlib.contextmanager
    def stopping(*args):
        with started(*args) as (procs, conns):
            stop()
            yield procs, conns

    def run(stop_one):
        nonlocal stop
        stop = stop_one
        obook.match(long_orders, workers=2, tables=("fills",))

    stop = None
    monkeypatch.setattr(shards, "shard_workers", stopping)
    _stopped_worker_raises(run)


def test_table_reader_workers_worker_paused_briefly_gives_every_row(long_orders, no_leaks):
    """A worker paused for a second (well under the stop limit) is waited for, not given up on."""
    import time

    from conftest import worker_children

    whole = obook.match(long_orders, workers=2, tables=("events",)).events
    reader = table_reader(long_orders, "events", workers=2)
    got = [reader.read_next_batch()]
    victim = worker_children()[-1]
    victim.send_signal(signal.SIGSTOP)
    try:
        time.sleep(1.0)
    finally:
        victim.send_signal(signal.SIGCONT)
    got.extend(reader)
    assert pa.Table.from_batches(got).equals(whole)


@pytest.fixture
def forkserver_held(monkeypatch):
    """Workers started by the forkserver (as next to DuckDB or polars); after the test,
    neither this process nor the forkserver holds the input's shared copy."""
    import os
    from multiprocessing import forkserver

    from counted_plan import shared_held
    from obook.engine import workers

    monkeypatch.setattr(workers, "_fork_is_safe", lambda: False)
    yield
    assert shared_held(os.getpid()) == []
    assert shared_held(forkserver._forkserver._forkserver_pid) == []


def test_table_reader_workers_forkserver_worker_killed_leaves_nothing_behind(long_orders, forkserver_held,
                                                                              no_leaks):
    _signalled_worker_raises(lambda kill: _read_signalled(long_orders, kill), signal.SIGKILL, r"died \(exit code -9\)")


def test_match_workers_forkserver_second_start_refused_raises_worker_error(orders, forkserver_held, monkeypatch,
                                                                          no_leaks):
    """The first worker started, the second refused (a process limit): a WorkerError, the
    first worker stopped and the shared input freed."""
    import errno
    from multiprocessing.context import ForkServerProcess

    started = ForkServerProcess.start
    calls = []

    def start(self):
        calls.append(self.name)
        if len(calls) == 2:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        started(self)

    monkeypatch.setattr(ForkServerProcess, "start", start)
    with pytest.raises(obook.WorkerError, match="cannot start 2 worker processes: Resource temporarily unavailable"):
        obook.match(orders, workers=2, tables=("fills",))
    assert calls == ["obook-match-0", "obook-match-1"]
