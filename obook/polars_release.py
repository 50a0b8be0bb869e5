"""A replay that polars lets go of is closed at once, not at polars' next call.

polars drops a query's source (the scan's generator, paused at a batch) on one of its own
threads, which is not attached to Python; pyo3 then only queues the reference, and it is
released the next time any thread calls into polars. A query that stops early without
telling the source — a filter then ``head(n)``: polars gives the source no row limit then —
would keep its replay paused and its worker processes idle until that next call.

While a scan's replay is open, a thread (``obook-polars-release``) calls into polars every
``PERIOD`` seconds: a replay polars has let go of is closed within that time (its worker
processes stopped); one polars still reads from is not touched. The thread ends with the
last open replay.
"""

from __future__ import annotations

import threading
import time

import polars as pl

PERIOD = 0.05   # seconds between calls into polars while a scan's replay is open

_lock = threading.Lock()
_open = 0
_thread: threading.Thread | None = None


def replay_opened() -> None:
    """A scan's replay started: watch for polars letting go of it."""
    global _open, _thread
    with _lock:
        _open += 1
        if _thread is None:
            _thread = threading.Thread(target=_release, name="obook-polars-release", daemon=True)
            _thread.start()


def replay_closed() -> None:
    """A scan's replay ended (exhausted, failed or closed)."""
    global _open
    with _lock:
        _open -= 1


def _release() -> None:
    global _thread
    while True:
        time.sleep(PERIOD)
        pl.thread_pool_size()   # a call into polars: pyo3 releases the references it queued
        with _lock:
            if _open <= 0:
                _thread = None
                return
