"""Workers started while an interrupt comes. Ctrl-C at any moment of a multi-worker replay's
start (imports, kernels loading, workers forking, workers loading their kernels): the command
says "interrupted", exits 130, and no process it started (a worker, a multiprocessing helper)
is left running or unreaped, nor any /dev/shm entry of obook's, when it returns; and the
pieces of that: which way workers are started while an interrupt is being sent again, a
Ctrl-C that lands as a worker (the replay's, the matching engine's) is forked, SIGTERM to a
worker forked while the parent held its handlers."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import threading

import psutil
import pytest

from obook import interrupts
from obook.gen.itch import write_itch


PR_SET_CHILD_SUBREAPER = 36     # <linux/prctl.h>


@pytest.fixture(scope="module")
def long_day(tmp_path_factory):
    """A day whose text output is far more than a pipe holds: a replay writing it into a pipe
    nobody reads waits there, however fast the machine."""
    path = tmp_path_factory.mktemp("start") / "day.itch"
    write_itch(path, 2_000_000, 300, seed=11)
    return path


def _prctl_subreaper(on: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, on, 0, 0, 0) == 0, os.strerror(ctypes.get_errno())


@pytest.fixture
def adopted():
    """This process as the subreaper of its descendants while the test runs: a process a
    command left behind when it exited becomes a child of this process instead of init's.
    Returns the function listing them (zombies too); they are killed and reaped afterwards."""
    before = {p.pid for p in psutil.Process().children()}
    _prctl_subreaper(1)

    def left() -> list[psutil.Process]:
        return [p for p in psutil.Process().children(recursive=True) if p.pid not in before]

    try:
        yield left
    finally:
        _prctl_subreaper(0)
        for p in left():
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(left(), timeout=10)


def _described(procs: list[psutil.Process]) -> list[tuple]:
    out = []
    for p in procs:
        try:
            out.append((p.pid, p.status(), " ".join(p.cmdline())[:100]))
        except psutil.ZombieProcess:
            out.append((p.pid, psutil.STATUS_ZOMBIE, ""))
        except psutil.NoSuchProcess:
            pass
    return out


#: ``python -m obook ARGS`` that first writes a byte to the descriptor ARGV[1]: Python has started
#: (a Ctrl-C while its site module still imports ends in its "Fatal Python error", before obook runs)
STARTED = textwrap.dedent("""
    import os, runpy, sys
    os.write(int(sys.argv[1]), b".")
    sys.argv = ["obook", *sys.argv[2:]]
    runpy.run_module("obook", run_name="__main__", alter_sys=True)
""")


def _ctrl_c_as_from_a_terminal() -> None:
    """The child's Ctrl-C at its default, as a command started from a terminal has it: one
    started with SIGINT ignored (by ``nohup``, or from a test process that ignores it) keeps
    ignoring it until obook's handler is in place, as a background job should."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_cli_ctrl_c_at_any_moment_of_the_start_leaves_no_child_no_shared_memory(long_day, adopted):
    shm_before = set(os.listdir("/dev/shm"))
    failures = []
    for delay in [0.05 * i for i in range(1, 31)]:   # 0.05 .. 1.5 s after Python started
        r, w = os.pipe()
        # its text to a pipe read only after the Ctrl-C: still replaying at 1.5 s on any machine
        p = subprocess.Popen([sys.executable, "-c", STARTED, str(w), "bbo", str(long_day), "-w", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, pass_fds=[w],
                             preexec_fn=_ctrl_c_as_from_a_terminal)
        os.close(w)
        assert os.read(r, 1) == b"."
        os.close(r)
        try:
            p.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            pass
        assert p.poll() is None, f"ended before Ctrl-C at {delay:.2f} s: {p.stderr.read()}"
        os.killpg(p.pid, signal.SIGINT)             # a terminal's Ctrl-C: the whole process group
        _, err = p.communicate(timeout=60)
        left = _described(adopted())                # at once: the command has returned
        # other programs' multiprocessing semaphores come and go in /dev/shm meanwhile
        shm = {n for n in set(os.listdir("/dev/shm")) - shm_before if "obook" in n}
        if (p.returncode, err.decode(), left, shm) != (130, "interrupted\n", [], set()):
            failures.append((round(delay, 2), p.returncode, err.decode()[-300:], left, shm))
        psutil.wait_procs(adopted(), timeout=10)    # the next run starts clean
    assert failures == [], "\n".join(map(repr, failures))


def _forkserver_of(pid: int, timeout: float = 120) -> bool:
    """Wait until ``pid`` has started multiprocessing's forkserver (its Python runs); False
    if ``pid`` ended or ``timeout`` passed first."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            kids = psutil.Process(pid).children()
        except psutil.NoSuchProcess:
            return False
        for k in kids:
            try:
                if "multiprocessing.forkserver" in " ".join(k.cmdline()):
                    return True
            except psutil.Error:
                pass
        time.sleep(0.002)
    return False


def test_cli_sql_ctrl_c_as_the_forkserver_starts_says_interrupted_leaves_no_helper(long_day, adopted):
    """``obook sql`` starts its workers from multiprocessing's forkserver, whose Python takes
    a while to import what it preloads; a terminal's Ctrl-C reaches it too. Sent at moments of
    that start, the command says "interrupted" and nothing else (no traceback of the
    forkserver's), exits 130 and leaves no forkserver or resource tracker behind."""
    failures = []
    query = f"SELECT * FROM obook_bbo('{long_day}', workers := 2)"    # its rows fill the pipe
    for delay in (0.0, 0.01, 0.02, 0.04, 0.07, 0.1):
        p = subprocess.Popen([sys.executable, "-m", "obook", "sql", query], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        assert _forkserver_of(p.pid), f"no forkserver: {p.communicate(timeout=60)}"
        try:
            p.wait(timeout=delay or 0.000001)
        except subprocess.TimeoutExpired:
            pass
        assert p.poll() is None, f"ended before Ctrl-C at {delay:.2f} s: {p.stderr.read()}"
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=60)
        left = _described(adopted())
        if (p.returncode, err.decode(), left) != (130, "interrupted\n", []):
            failures.append((delay, p.returncode, err.decode()[-300:], left))
        psutil.wait_procs(adopted(), timeout=10)
    assert failures == [], "\n".join(map(repr, failures))


def test_cli_sql_workers_from_the_forkserver_leave_no_helper_process(tmp_path, adopted):
    """Next to DuckDB's threads workers come from multiprocessing's forkserver, which with its
    resource tracker would end only after the command exits: the command stops both first."""
    feed = tmp_path / "day.itch"
    write_itch(feed, 20_000, 10, seed=3)
    r = subprocess.run([sys.executable, "-m", "obook", "sql", f"SELECT count(*) AS n FROM obook_bbo('{feed}', "
                        "workers := 2)", "--format", "csv"], capture_output=True, text=True, timeout=300)
    left = _described(adopted())
    assert (r.returncode, left) == (0, []), r.stderr
    assert r.stdout.splitlines()[0] == "n" and int(r.stdout.splitlines()[1]) > 0


def test_leave_interrupt_to_send_again_pending_stops_helpers_no_traceback(adopted):
    """An interrupt that landed where it could not be raised is sent again 10 ms later; the
    command may end before that (the same Ctrl-C raised meanwhile another way): its exit
    still stops multiprocessing's forkserver and resource tracker, and prints nothing more."""
    code = textwrap.dedent("""
        import multiprocessing as mp, os, signal
        from obook import interrupts
        from obook._entry import _leave
        worker = mp.get_context("forkserver").Process(target=os.getpid)
        worker.start()
        worker.join()
        interrupts.unwind_on_signals()
        interrupts.send_again(signal.SIGINT)
        _leave(130)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    left = _described(adopted())
    assert (r.returncode, r.stderr, left) == (130, "", [])


def test_cli_exit_after_a_thread_of_its_own_stops_the_forkserver(tmp_path, adopted):
    """A thread other than a daemon still running as the command ends (a strategy's) makes
    it take Python's own exit, which waits for the thread: the forkserver and the resource
    tracker are stopped there too."""
    feed = tmp_path / "day.itch"
    write_itch(feed, 20_000, 10, seed=3)
    code = textwrap.dedent(f"""
        import sys, threading, time
        from obook._entry import main
        def until_the_exit():
            while threading.main_thread().is_alive():
                time.sleep(0.01)
        threading.Thread(target=until_the_exit).start()
        sys.argv = ["obook", "sql", "SELECT count(*) AS n FROM obook_bbo('{feed}', workers := 2)"]
        main()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    left = _described(adopted())
    assert (r.returncode, r.stderr, left) == (0, "", [])


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


def test_end_with_process_that_ends_kills_this_one_and_fork_stays_safe():
    """A day process (a forkserver's child) ends with the pipeline run it works for; the
    thread that waits for that leaves fork safe for its book workers."""
    code = textwrap.dedent("""
        import subprocess, sys, time
        from obook import interrupts
        from obook.engine import workers
        master = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
        interrupts.end_with(master.pid)
        print(workers._fork_is_safe(), flush=True)
        master.stdin.close()
        master.wait()
        time.sleep(60)
        print("still here")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (-9, "True\n"), r.stderr


def test_worker_pool_ctrl_c_taken_by_another_thread_as_a_worker_forks_stops_it(python_sigint, tmp_path, monkeypatch,
                                                                               no_leaks):
    """A Ctrl-C delivered to another thread (the one sending an interrupt again) while the main
    thread forks a worker: Python runs its handler in the main thread inside
    ``Process.start``, which must not raise there, after the child exists and before the pool
    knows it, but once the pool can stop it."""
    from multiprocessing import popen_fork

    from conftest import worker_children
    from interrupt_support import tick
    from obook.engine import workers
    from obook.engine.replay import Replay

    feed = tmp_path / "day.itch"
    write_itch(feed, 20_000, 10, seed=3)
    go, sent = threading.Event(), threading.Event()

    def send():
        go.wait()
        if forked:                              # (none: the test failed before; no stray Ctrl-C)
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
    # fork, as a command does (DuckDB, which the suite imports, or another thread would pick the forkserver)
    monkeypatch.setattr(workers, "_fork_is_safe", lambda: True)
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
