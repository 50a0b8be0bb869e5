"""Workers started while an interrupt comes: which way they are started while one is being
sent again, a Ctrl-C that lands as a worker (the replay's, the matching engine's) is forked,
and SIGTERM to a worker forked while the parent held its handlers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from obook import interrupts
from obook.gen.itch import write_itch


def test_fork_is_safe_with_an_interrupt_to_send_again_pending_true():
    """An interrupt that landed where it could not be raised (an import) is sent again from a
    short-lived timer thread; that thread does not make fork unsafe: a forkserver started
    then would outlive the interrupted command."""
    code = textwrap.dedent("""
        import os, signal
        from obook import interrupts
        from obook.engine import workers
        print(workers._fork_is_safe())
        os.kill = lambda pid, signum: None
        interrupts.send_again(signal.SIGINT)
        print(workers._fork_is_safe())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout == "True\nTrue\n", r.stderr


def test_worker_pool_ctrl_c_taken_by_another_thread_as_a_worker_forks_stops_it(python_sigint, tmp_path, monkeypatch,
                                                                               no_leaks):
    """A Ctrl-C delivered to another thread (the one sending an interrupt again) while the main
    thread forks a worker: Python runs its handler in the main thread inside
    ``Process.start``, which must not raise there, after the child exists and before the pool
    knows it, but once the pool can stop it."""
    from multiprocessing import popen_fork

    from conftest import worker_children
    from interrupt_support import tick
    from obook.engine.replay import Replay

    feed = tmp_path / "day.itch"
    write_itch(feed, 20_000, 10, seed=3)
    go, sent = threading.Event(), threading.Event()

    def send():
        go.wait()
        os.kill(os.getpid(), signal.SIGINT)     # process-directed: this thread does not block it
        sent.set()

    sender = threading.Thread(target=send, name=interrupts.SENDING_AGAIN)
    sender.start()
    launch, forked = popen_fork.Popen._launch, []

    def launched(self, process_obj):
        launch(self, process_obj)
        forked.append(self.pid)
        if len(forked) == 1:                    # the first worker exists: Ctrl-C now
            go.set()
            sent.wait(10)
            tick()                              # where the handler runs, unless it is held

    monkeypatch.setattr(popen_fork.Popen, "_launch", launched)
    try:
        with pytest.raises(KeyboardInterrupt):
            next(Replay(feed, workers=2).batches())
    finally:
        go.set()
        sender.join()
    assert forked and worker_children() == []


def test_match_worker_ctrl_c_before_it_ignores_it_is_held_not_raised():
    """A terminal's Ctrl-C reaches the match workers too; one that comes as a worker is forked,
    before it ignores Ctrl-C (the parent answers it), is held until then: no KeyboardInterrupt
    traceback of the worker, no worker lost, the same tables as one process makes."""
    code = textwrap.dedent("""
        import os, signal
        import pyarrow as pa
        import obook
        from obook.engine import worker_main

        real = worker_main._die_with_parent

        def die_with_parent(parent_pid=None):     # the first thing a forked worker does
            os.kill(os.getpid(), signal.SIGINT)
            real(parent_pid)

        rows = [{"time": i, "instrument": f"S{i % 3}", "order_id": i, "action": "new",
                 "side": "buy" if i % 2 else "sell", "type": "limit", "tif": "gtc",
                 "price": 100 + i % 5, "quantity": 10} for i in range(1, 400)]
        table = pa.Table.from_pylist(rows)
        one = obook.match(table, workers=1, levels=3)
        worker_main._die_with_parent = die_with_parent
        two = obook.match(table, workers=2, levels=3)
        print(all(two.table(t).equals(one.table(t)) for t in ("fills", "events")))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert (r.returncode, r.stdout, r.stderr) == (0, "True\n", "")


def test_worker_sigterm_ends_it_though_its_start_held_the_parents_handler(tmp_path):
    """A worker forked while the parent held its signal handlers (the command line's) ends on
    SIGTERM, the parent's last resort to stop it, instead of only noting it."""
    feed = tmp_path / "day.itch"
    write_itch(feed, 200_000, 30, seed=3)
    code = textwrap.dedent(f"""
        import psutil
        from obook.engine.replay import Replay
        from obook.interrupts import unwind_on_signals

        unwind_on_signals()
        gen = Replay({str(feed)!r}, workers=2).batches()
        next(gen)
        worker = psutil.Process().children()[0]
        worker.terminate()
        print(worker.wait(5))
        gen.close()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (0, "-15\n"), r.stderr
