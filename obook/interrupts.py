"""Ctrl-C, SIGTERM and SIGHUP as exceptions that unwind (temp files go, workers are stopped),
in the ``obook`` command and in the processes it starts (``python -m obook.compiling``).
Work that has no end of its own (a live listener) ends on the first one instead
(``stopping``), and raises it once what it holds is delivered.

:func:`unwind_on_signals` installs the handlers. An exception raised where Python or a
library would drop it is not raised there: the signal is sent again 10 ms later. A library
may still replace the exception with one of its own (DuckDB's "Query interrupted"):
``raised`` tells the command that an interrupt was raised, and how it should end.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager


#: the signal last raised here as an exception, or sent again to be (None: none yet)
raised: int | None = None


def unwind_on_signals() -> None:
    """SIGINT raises KeyboardInterrupt, SIGTERM SystemExit(143) and SIGHUP (a closed terminal
    or ssh session) SystemExit(129), each where it can unwind. A SIGINT or SIGHUP ignored
    already stays ignored, as Python leaves it: a command started in the background by a
    script (``obook ... &``: the shell ignores Ctrl-C for it) or under ``nohup``. ``raised``
    starts again at None."""
    global raised
    raised = None
    signal.signal(signal.SIGTERM, interrupted)
    for s in (signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, interrupted)
    sys.unraisablehook = dropped


def exit_code(signum: int) -> int:
    """What the command exits with after ``signum`` unwound it: 130 for Ctrl-C, else 128 + it."""
    return 130 if signum == signal.SIGINT else 128 + signum


def unsafe_to_raise(frame) -> bool:
    """Whether an exception raised at ``frame`` would be dropped or leave native state
    broken: inside a finaliser (``__del__``: printed as "Exception ignored", the signal
    lost) or inside llvmlite, which numba loads and compiles kernels with: its ctypes
    callbacks drop exceptions too, and between two of its steps (an LLVM module handed to
    the execution engine, then marked as owned by it) an exception leaves a module freed
    twice at exit (a segfault or "double free detected"); or inside an import, which a
    library may wrap in a handler that drops it (pyarrow's first look for pandas swallowed
    a SIGTERM: the command went on and exited 0)."""
    while frame is not None:
        name = frame.f_code.co_filename
        if frame.f_code.co_name == "__del__" or "llvmlite" in name or "importlib._bootstrap" in name:
            return True
        frame = frame.f_back
    return False


def interrupted(signum, frame):
    """Ctrl-C (SIGINT), SIGTERM (kill, a service manager) and SIGHUP: unwind, so temp files and
    workers go (KeyboardInterrupt: exit 130; SystemExit: 128 + the signal). Where the
    exception would be dropped (``unsafe_to_raise``) the signal is sent again 10 ms later
    instead: a SIGTERM as a replay started used to exit 0 after the whole replay in 6 of 30
    runs, and to crash (a segfault, a double free) in a few more
    (tests/test_faults.py::test_cli_sigterm_as_replay_starts_always_exits_143)."""
    global raised
    raised = signum     # set already when sent again: a library's error may come out first
    if unsafe_to_raise(frame):
        send_again(signum)
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


#: the name of the thread that sends a signal again (``send_again``)
SENDING_AGAIN = "obook-send-again"


def send_again(signum: int) -> None:
    """``signum`` to this process again, 10 ms from now, from a thread named ``SENDING_AGAIN``:
    a daemon, which the command's exit does not wait for (the command may end meanwhile, the
    same interrupt raised another way; ``held_for_exit`` notes what it sends then)."""
    timer = threading.Timer(0.01, os.kill, (os.getpid(), signum))
    timer.name = SENDING_AGAIN
    timer.daemon = True
    timer.start()


#: the name of the thread that ends this process when another one ends (``end_with``)
WATCHING = "obook-end-with"


def end_with(pid: int) -> None:
    """End this process (SIGKILL: its own workers see it die) as soon as process ``pid``
    ends, from a daemon thread named ``WATCHING`` that waits on a pidfd (Linux; elsewhere it
    looks twice a second): for a process whose real master is not its parent, such as a
    forkserver's child, which the master's death, outright (SIGKILL, the out-of-memory
    killer), would otherwise leave running. The thread holds no lock a forked child could
    need."""
    import select
    import time

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:          # gone already
        os.kill(os.getpid(), signal.SIGKILL)
    except (AttributeError, OSError):   # not Linux 5.3+
        fd = None

    def watch() -> None:
        if fd is not None:
            select.select([fd], [], [])
        else:
            while True:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name=WATCHING, daemon=True).start()


def dropped(unraisable, _hook=sys.unraisablehook) -> None:
    """``sys.unraisablehook``: an interrupt raised where Python can only drop it (a weakref
    callback such as numba's type-cache cleanup, a finaliser ``unsafe_to_raise`` could
    not see) is sent again instead of printed as "Exception ignored" and lost; anything
    else goes to the default hook."""
    e = unraisable.exc_value
    if isinstance(e, KeyboardInterrupt):
        send_again(signal.SIGINT)
    elif (isinstance(e, SystemExit) and isinstance(e.code, int)
          and e.code - 128 in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)):
        send_again(e.code - 128)
    else:
        _hook(unraisable)


#: the wake-up pipe of ``interrupting`` while one is active (a forked child lets go of it)
_pipe: tuple | None = None


def _forked_child() -> None:
    """In a child forked while ``interrupting`` is active: its signals (a worker stopped by
    SIGTERM) must not wake the parent's watcher, nor stop the parent's query."""
    global _pipe
    if _pipe is not None:
        try:
            signal.set_wakeup_fd(-1)
        except ValueError:
            pass
        for fd in _pipe:
            os.close(fd)
        _pipe = None


os.register_at_fork(after_in_child=_forked_child)


#: set by ``interrupting``'s watcher when a signal came: Python code running in another
#: thread meanwhile (a DuckDB table function's replay), which neither the signal's handler
#: nor ``stop`` reaches, ends at its next ``check_signalled``
signalled = threading.Event()


def check_signalled() -> None:
    """Outside the main thread: KeyboardInterrupt once a signal came inside ``interrupting``
    (the main thread's own handler raises it there)."""
    if signalled.is_set() and threading.current_thread() is not threading.main_thread():
        raise KeyboardInterrupt


@contextmanager
def interrupting(stop):
    """While inside (in the main thread): a signal that has a handler here (Ctrl-C, SIGTERM,
    SIGHUP) also calls ``stop()`` at once, from a thread. Native code that keeps the main
    thread for long runs Python's handler only when it returns, and may never check for it
    (DuckDB running a query: a Ctrl-C was lost in about one run in four on a busy machine);
    ``stop`` makes it return (DuckDB's ``interrupt``), and the handler then unwinds as usual.
    Python's own signal handler writes the signal to a wake-up pipe the thread waits on."""
    global _pipe
    if threading.current_thread() is not threading.main_thread() or _pipe is not None:
        yield
        return
    r, w = _pipe = os.pipe()
    os.set_blocking(w, False)
    done = threading.Event()
    signalled.clear()

    def watch():
        while os.read(r, 64) and not done.is_set():
            signalled.set()
            try:
                stop()
            except Exception:  # noqa: BLE001 - nothing to stop any more
                pass

    old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    watcher = threading.Thread(target=watch, name="obook-interrupt", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old)
        done.set()
        try:
            os.write(w, b"\0")  # the watcher wakes, sees done and ends
        except OSError:
            pass
        watcher.join(5)
        signalled.clear()
        _pipe = None
        os.close(w)
        os.close(r)


#: the signals that unwind (see ``unwind_on_signals``)
UNWINDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def held_for_exit() -> list[int]:
    """From now on, in the main thread, the UNWINDING signals that have a handler here are
    only noted in the list returned, first one first: the command is exiting, and one raised
    inside its exit functions (which stop workers and remove temp files) would cut them short
    and be printed as a traceback. A signal without a Python handler is left as it is."""
    came: list[int] = []
    if threading.current_thread() is threading.main_thread():
        for s in UNWINDING:
            if callable(signal.getsignal(s)):
                signal.signal(s, lambda signum, frame: came.append(signum))
    return came


@contextmanager
def deferred():
    """While inside (in the main thread): Ctrl-C, SIGTERM and SIGHUP wait, and the first that
    came goes to its handler (which raises it) when the block ends. For clean-ups that a
    repeated Ctrl-C would cut short, leaving temp files beside an output or workers not
    stopped: the first Ctrl-C unwinds, the next ones arrive during the clean-up. A signal
    without a Python handler (ignored, or SIGTERM's default) is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield       # signals raise in the main thread only: nothing here to hold
        return
    came: list[int] = []
    try:
        with _handled_by(lambda signum, frame: came.append(signum), callable) as old:
            yield
    finally:
        if came:
            old[came[0]](came[0], sys._getframe())


@contextmanager
def _handled_by(handler, replaced):
    """``handler`` for each of the UNWINDING signals whose handler ``replaced(handler)`` is
    true for; yields those handlers (signal -> handler), put back when the block ends."""
    old = {s: signal.getsignal(s) for s in UNWINDING}
    old = {s: h for s, h in old.items() if replaced(h)}
    for s in old:
        signal.signal(s, handler)
    try:
        yield old
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def stopping(stop):
    """While inside (in the main thread): the first Ctrl-C, SIGTERM or SIGHUP calls ``stop()``,
    which ends the work as its own end would (what it has received is still delivered), and is
    raised as ``interrupted`` raises it when the block ends; a second one is raised at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    first: list[int] = []

    def handler(signum, frame):
        if first:
            interrupted(signum, frame)
            return
        first.append(signum)
        stop()

    with _handled_by(handler, lambda h: h is not None and h is not signal.SIG_IGN):
        yield
    if first:
        global raised
        raised = first[0]
        if first[0] == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + first[0])
