"""Helpers of the hostile-input tests: run a replay under a watchdog and a memory bound.

``run(path, workers, ...)`` returns ``(rows, error, stats)`` where ``error`` is the
``obook.ObookError`` that ended the replay (or None). Any other exception type
propagates and fails the test; a replay that takes longer than ``HANG_SECONDS``
fails it too (a Python-level wait is interrupted by SIGALRM; a compiled loop that
never returns is stopped by faulthandler, which dumps the stacks and exits);
a process that grows by more than ``RSS_SLACK`` bytes fails it.
"""

from __future__ import annotations

import faulthandler
import signal
import sys
from contextlib import contextmanager

import psutil

import obook
from obook.engine.replay import Replay

HANG_SECONDS = 20
RSS_SLACK = 768 << 20
_BASE_RSS = psutil.Process().memory_info().rss


class Hang(AssertionError):
    pass


@contextmanager
def watchdog(seconds: float = HANG_SECONDS, hard: bool = True):
    """Fail (SIGALRM) a replay that does not end in ``seconds``.

    With ``hard`` a faulthandler watchdog thread also kills the process at 3x the
    time (a compiled kernel loop never sees SIGALRM). Its thread ends on cancel, so
    a later replay still sees a single-threaded process (and forks its workers).
    """
    def on_alarm(signum, frame):
        raise Hang(f"replay still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    if hard:
        faulthandler.dump_traceback_later(3 * seconds, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if hard:
            faulthandler.cancel_dump_traceback_later()


def itch_tuples(batch):
    cols = batch.to_pydict()
    return [(s, t, loc, tk, bp, bq, bn or 0, ap, aq, an or 0) for s, t, loc, tk, bp, bq, bn, ap, aq, an in zip(
        cols["seq"], cols["time"], cols["locate"], cols["ticker"], cols["bid_px"], cols["bid_qty"],
        cols["bid_orders"], cols["ask_px"], cols["ask_qty"], cols["ask_orders"])]


def _v(x):
    return "" if x is None else str(x)


def csv_lines(batch):
    return [f"{r['time']},{r['ticker']},{_v(r['bid_px'])},{_v(r['bid_qty'])},{_v(r['ask_px'])},{_v(r['ask_qty'])}"
            for r in batch.to_pylist()]


def run(path, workers: int = 1, on_error: str = "raise", format: str | None = None, rows_of=itch_tuples,
        **kw):
    """(rows, error, stats) of one replay; error is an obook.ObookError or None."""
    rows, error = [], None
    before = psutil.Process().memory_info().rss   # earlier tests of the session may have grown it
    replay = Replay(path, workers=workers, format=format, on_error=on_error, **kw)
    with watchdog(hard=workers == 1):
        try:
            for batch in replay.batches():
                rows.extend(rows_of(batch))
        except obook.ObookError as e:
            error = e
    rss = psutil.Process().memory_info().rss
    assert rss < max(_BASE_RSS, before) + RSS_SLACK, f"RSS grew to {rss >> 20} MiB"
    return rows, error, replay.stats
