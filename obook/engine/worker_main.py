"""The body of a worker process (its kernels loaded by ``warm`` before workers start)."""

from __future__ import annotations

import mmap
import os
import signal
from multiprocessing import reduction

import numpy as np

from .._kernels.layout import ROW_WIDTH
from ..errors import WorkerError
from .applier import Applier
from .workers import HELD_SIGNALS, shared_views

PR_SET_PDEATHSIG = 1      # <linux/prctl.h>


def _die_with_parent(parent_pid: int | None = None) -> None:
    """Linux: have the kernel SIGKILL this worker when its parent dies.

    A forked worker inherits the parent's ends of the worker pipes (its own included), so a
    parent killed outright (SIGKILL, the OOM killer) would never give it EOF: it would wait
    forever, holding the shared memory. PR_SET_PDEATHSIG covers that; a parent that died
    before the call is caught by comparing the ppid with ``parent_pid``, the pid the parent
    passed (read here, the ppid may already be the reaper's). None: no check (forkserver).
    """
    ppid = os.getppid() if parent_pid is None else parent_pid
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):   # not Linux: EOF on the pipe stays the only signal
        return
    if os.getppid() != ppid:
        os._exit(0)


def _oversize(conn, n: int) -> mmap.mmap:
    """A record longer than a slot: the parent's memfd, mapped read-only."""
    fd = reduction.recv_handle(conn)
    try:
        return mmap.mmap(fd, n, prot=mmap.PROT_READ)
    finally:
        os.close(fd)


def _release(mm: mmap.mmap) -> None:
    try:
        mm.close()
    except BufferError:   # a view of it is still alive: the GC unmaps it with the view
        pass


def _shared_memory(conn) -> int | None:
    """The descriptor of the replay's shared memory, sent by the parent; None when the parent
    is gone (interrupted while it started its workers)."""
    try:
        return reduction.recv_handle(conn)
    except (EOFError, OSError):
        return None
    except RuntimeError as e:   # the message came, its descriptor did not fit this process
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        raise WorkerError(f"the shared memory's descriptor did not arrive: too many open files "
                          f"(open files limit {soft}, ulimit -n)") from e


def _report(conn, e: BaseException) -> None:
    """A failure, to the parent, which raises it; nothing when the parent is gone."""
    text = str(e) if isinstance(e, WorkerError) else f"{type(e).__name__}: {e}"
    try:
        conn.send(("failed", text))
    except OSError:
        pass


def run(conn, fmt, path, worker, n_workers, on_error, slots, in_capacity, size, layout, want, levels,
        rows_per_slot, parent_pid=None, tickers=None, observer=None):
    _die_with_parent(parent_pid)
    # the parent handles Ctrl-C and a closed terminal, and stops us; SIGTERM (its last resort)
    # ends us at once, not the handler that held it while the parent forked (it only notes it)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)   # held while we were forked
    try:
        fd = _shared_memory(conn)
        if fd is None:
            return
        mm = mmap.mmap(fd, size)
        os.close(fd)
        inputs, outputs = shared_views(mm, n_workers, slots, in_capacity, layout, rows_per_slot)
        mine = {table: out[worker] for table, out in outputs.items()}
        applier = Applier(fmt, path, worker, n_workers, on_error, want, levels, tickers=tickers,
                          observer=observer)
        conn.send(applier.book_map)
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises
        _report(conn, e)
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if msg is None:
            return
        try:
            if msg[0] == "batch":
                _, slot, n, base_seq, data = msg
                record = _oversize(conn, n) if data == "fd" else None
                buf = inputs[slot, :n] if record is None else np.frombuffer(record, np.uint8)
                r = applier.run(buf, base_seq, {table: out[slot] for table, out in mine.items()})
                if record is not None:
                    del buf
                    _release(record)
                conn.send((r.counts, r.error, r.names, r.overflow))
            elif msg[0] == "stats":
                conn.send((applier.skipped(), applier.state(partial=len(msg) > 1 and msg[1])))
        except Exception as e:  # noqa: BLE001
            _report(conn, e)
            return


def warm(formats=()) -> None:
    """Load the compiled kernels (numba cache; compiling them when missing) before workers
    are started from this process: the books' and the decoders' of ``formats`` (FeedFormats
    or names, one or several; ``"*"``: every format's). A forked worker inherits them. Only
    the feed's own format is warmed: every format's cost an ITCH convert ~60 ms before its
    first record, and a first run compiled Shanghai's, Shenzhen's and Databento's kernels
    to read an ITCH file."""
    if isinstance(formats, str) or not isinstance(formats, (list, tuple, set)):
        formats = [formats]
    try:
        from .._kernels.layout import ACT_ADD, EV_WIDTH
        from .books import BookState

        ev = np.zeros((2, EV_WIDTH), dtype=np.int64)
        ev[0, 2:7] = (1, ACT_ADD, 1, 100, 10)
        ev[1, 2:7] = (1, 5, 1, 0, 0)  # ACT_DELETE
        books = BookState()
        books.apply(ev, 2, np.zeros((4, ROW_WIDTH), dtype=np.int64))
        _ = books.crossed_books     # (a property) each worker counts them at the end of a replay
        from ..feeds import formats as every_format, get_format
        chosen = every_format().values() if "*" in formats else [
            get_format(f) if isinstance(f, str) else f for f in formats if f]
        for f in chosen:   # the decoder kernels
            f.decoder_class().warm()
    except Exception:  # noqa: BLE001 - a cold start is slower, not wrong
        pass
