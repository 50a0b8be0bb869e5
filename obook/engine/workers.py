"""Worker processes: each owns a share of the books for the whole replay.

The parent copies each batch once into a ring of input slots in one anonymous
shared-memory file (memfd: nothing in /dev/shm, freed with the last process
holding it); every worker decodes the records of its books from the slot,
applies them and writes its BBO rows into its own output slot; the parent
merges the slots back into feed order. Control messages are small tuples on a
pipe per worker. Workers are started by multiprocessing's forkserver (safe in
processes that already run DuckDB's or polars' threads) with the compiled
kernels preloaded, or by fork when no foreign thread pool is running.
"""

from __future__ import annotations

import errno
import logging
import mmap
import multiprocessing as mp
import os
import signal
import threading
import time
from contextlib import contextmanager
from multiprocessing import connection, reduction, spawn

import numpy as np

from .._kernels.layout import MAX_BATCH_RECORDS, ROW_WIDTH
from ..errors import WorkerError
from ..interrupts import SENDING_AGAIN, WATCHING, deferred

log = logging.getLogger("obook")

_forkserver = None


#: libraries whose native thread pools make fork unsafe once they are loaded
_THREAD_POOL_OWNERS = ("duckdb", "polars", "torch", "tensorflow", "grpc", "jax")


def _fork_is_safe() -> bool:
    """fork is safe when no other Python thread runs and no library known to keep
    its own thread pool (DuckDB, polars ...) is loaded. numpy's OpenBLAS and
    pyarrow's pools are fork-aware (they register at-fork handlers). The thread that
    sends an interrupt again (``interrupts.send_again``, 10 ms) and the one that waits for
    another process's end (``interrupts.end_with``) hold no lock a child could need;
    choosing the forkserver for them would start a server and a resource tracker that a
    Ctrl-C as the workers start leaves running after the command exits."""
    import sys
    this = threading.current_thread()
    if any(t is not this and t.name not in (SENDING_AGAIN, WATCHING) for t in threading.enumerate()):
        return False
    return not any(name in sys.modules for name in _THREAD_POOL_OWNERS)


#: the environment variable naming the formats the forkserver preloads (comma separated)
WARM_ENV = "OBOOK_FORKSERVER_FORMATS"
#: the formats whose kernels the forkserver holds, or that this process compiled for it
_forkserver_formats: set = set()


def _format_name(fmt) -> str | None:
    return fmt if isinstance(fmt, str) or fmt is None else fmt.name


def mp_context(fmt=None):
    """fork when it is safe (instant, compiled kernels inherited: those of the books and of
    ``fmt``'s decoder; None: no feed's); otherwise, next to DuckDB's or polars' threads, the
    forkserver, since fork in a process whose other threads hold locks can deadlock the
    child. The forkserver preloads the books' kernels and those of the format of the replay
    that starts it; another format's kernels are compiled here first when missing (workers
    then load them from the cache instead of each compiling them)."""
    global _forkserver
    name = _format_name(fmt)
    if _fork_is_safe():
        if fmt is not None:
            from .worker_main import warm
            warm(fmt)       # loads the kernels before forking
        return mp.get_context("fork")
    if _forkserver is None:
        os.environ[WARM_ENV] = name or ""
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["obook.engine.forkserver_preload"])
        _forkserver = ctx
        _forkserver_formats.add(name)
    elif name not in _forkserver_formats:
        from .worker_main import warm
        warm(fmt)
        _forkserver_formats.add(name)
    return _forkserver


_start_lock = threading.Lock()


@contextmanager
def _without_main():
    """Start children without re-running the user's __main__ script.

    Workers run obook code only; re-importing a script that calls obook at the
    top level (no ``if __name__ == "__main__"`` guard) would replay recursively.
    """
    original = spawn.get_preparation_data

    def preparation_data(name):
        data = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    with _start_lock:
        spawn.get_preparation_data = preparation_data
        try:
            yield
        finally:
            spawn.get_preparation_data = original


#: the signals a worker's start holds back (see _signals_held)
HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextmanager
def _signals_held():
    """Hold SIGINT, SIGTERM and SIGHUP while a worker is forked: a Ctrl-C or a kill then
    reaches this process once the child exists (KeyboardInterrupt or the CLI's SystemExit
    here, exit 130, 143 or 129) instead of running inside an after-fork hook (logging's lock
    release), where Python only prints the exception: the interrupt was lost and the replay
    ran on to the end (a SIGTERM right after the workers started: exit 0 in 9-14 of 80
    runs). The child inherits the blocked signals; it ignores SIGINT and SIGHUP, then
    unblocks them. Another thread (the one sending an interrupt again, DuckDB's) may still
    take the signal, and Python runs its handler in this thread all the same: ``deferred``
    holds that handler too, so no interrupt is raised inside ``Process.start`` after the
    child exists and before it is known (it would outlive the command)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    try:
        with deferred():
            yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def _starting(ctx):
    """Where a worker of ``ctx`` is started: without the user's __main__ (``_without_main``),
    its signals held (``_signals_held``), and, with the forkserver, multiprocessing's resource
    tracker and forkserver started first while the signals are held. Each is a Python that
    imports for a while before it ignores Ctrl-C, and a terminal's Ctrl-C reaches it too: it
    printed a KeyboardInterrupt traceback. Started with the signals blocked, they see none
    until they ignore it (obook/engine/forkserver_preload.py for the forkserver); starting the
    tracker unblocks SIGINT and SIGTERM, so they are blocked again before the forkserver."""
    with _without_main(), _signals_held():
        if ctx.get_start_method() == "forkserver":
            from multiprocessing import forkserver, resource_tracker

            resource_tracker.ensure_running()
            signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
            forkserver.ensure_running()
        yield


def shared_views(mm, n_workers: int, slots: int, in_capacity: int, layout: dict[str, int],
                 rows: int = MAX_BATCH_RECORDS):
    """The input slots (slots x in_capacity bytes) and, per table, the output slots
    (indexed workers x slots x rows x width int64) laid out one after the other. Rows that
    do not fit a slot travel with the batch's result (BatchResult.overflow).

    In memory an output is slot by slot (slots x workers x rows x width): one slot's rows
    of every worker, ``outputs[table][:, slot]``, are one C-contiguous array, which the
    merge kernels are compiled for (a strided view made numba's row copies element by
    element: the depth merge took 195 instead of 110 ns a row)."""
    inputs = np.frombuffer(mm, np.uint8, slots * in_capacity).reshape(slots, in_capacity)
    outputs, offset = {}, slots * in_capacity
    for table, width in layout.items():
        count = n_workers * slots * rows * width
        outputs[table] = np.frombuffer(mm, np.int64, count, offset).reshape(
            slots, n_workers, rows, width).transpose(1, 0, 2, 3)
        offset += count * 8
    return inputs, outputs


def join_parts(data, out: np.ndarray | None = None) -> np.ndarray:
    """A batch's bytes (a uint8 array, or a tuple of them: FrameResult.data) copied end to
    end to the front of ``out`` (a new array when None); returns the filled part."""
    parts = data if isinstance(data, tuple) else (data,)
    n = sum(len(d) for d in parts)
    out = np.empty(n, np.uint8) if out is None else out
    at = 0
    for d in parts:
        out[at:at + len(d)] = d
        at += len(d)
    return out[:n]


#: a worker stopped (SIGSTOP, a debugger: state T/t) this long while the parent waits fails the replay
STOPPED_SECONDS = 5.0
#: a worker asleep (not runnable, no CPU time used) this long while the parent waits for its
#: reply is wedged: workers only sleep when they wait for the parent
WEDGED_SECONDS = 120.0
_POLL_SECONDS = 1.0


def _proc_state(pid: int) -> tuple[str, int] | None:
    """(state letter, utime + stime ticks) from /proc/<pid>/stat; None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return fields[0].decode(), int(fields[11]) + int(fields[12])


class _Liveness:
    """Notices a worker that makes no progress while the parent waits for it.

    Stopped (T/t) for ``STOPPED_SECONDS`` -> stopped; asleep without using CPU for
    ``WEDGED_SECONDS`` -> wedged. A runnable or busy worker (R, D, or CPU time growing: a
    huge batch, a loaded machine) is live however long it takes.
    """

    def __init__(self, pids: dict[int, int]):
        self.pids = pids
        self.seen: dict = {}      # filled at the first check: nothing to read while replies come

    def check(self, pending) -> tuple[int, str] | None:
        """(worker, reason) to give up on a pending worker, or None."""
        now = time.monotonic()
        for w in pending:
            state = _proc_state(self.pids[w])
            if state is None:
                continue
            last, stopped_since, idle_since = self.seen.get(w, (None, now, now))
            if state[0] not in "Tt":
                stopped_since = now
            if state[0] in "RD" or last is None or state[1] != last[1]:
                idle_since = now
            self.seen[w] = (state, stopped_since, idle_since)
            if now - stopped_since >= STOPPED_SECONDS:
                return w, f"is stopped (state {state[0]}) for {now - stopped_since:.0f} s"
            if now - idle_since >= WEDGED_SECONDS:
                return w, f"made no progress for {now - idle_since:.0f} s (state {state[0]})"
        return None


#: errno of a refused resource -> (the limit's name, its resource.RLIMIT_ name, the shell's option)
_LIMITS = {errno.EMFILE: ("open files", "RLIMIT_NOFILE", "ulimit -n"),
           errno.EAGAIN: ("process", "RLIMIT_NPROC", "ulimit -u"),
           errno.ENOMEM: ("memory", "RLIMIT_AS", "ulimit -v")}


def start_failed(n_workers: int, e: OSError) -> WorkerError:
    """The error of a pool that could not get its processes, pipes or shared memory, with the
    limit that refused them: not an OSError a caller would take for its own (an output's
    "write failed")."""
    why = e.strerror or str(e)
    if e.errno in _LIMITS:
        what, name, shell = _LIMITS[e.errno]
        try:
            import resource
            soft = resource.getrlimit(getattr(resource, name))[0]
            if soft != resource.RLIM_INFINITY:
                shown = f"{soft / 2**20:.0f} MiB" if name == "RLIMIT_AS" else str(soft)
                why += f" ({what} limit {shown}, {shell})"
        except (ImportError, OSError, AttributeError, ValueError):
            pass
    return WorkerError(f"cannot start {n_workers} worker processes: {why}; "
                       "use fewer workers (workers=1 replays in this process) or raise the limit")


def _check_file_size_limit(size: int, n_workers: int) -> None:
    """The shared memory is a memfd, a file: RLIMIT_FSIZE (``ulimit -f``) applies to it, and
    growing it past the limit would fail with EFBIG (or SIGXFSZ kill the process)."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, AttributeError):
        return
    if soft != resource.RLIM_INFINITY and size > soft:
        raise WorkerError(f"{n_workers} worker processes need {size / 2**20:.0f} MiB of shared memory, "
                          f"more than the file size limit allows ({soft / 2**20:.1f} MiB, ulimit -f); "
                          "raise the limit or use workers=1")


def _join_draining(p, conn, seconds: float) -> None:
    """Wait up to ``seconds`` for worker ``p`` to end, reading and dropping whatever it still
    sends on ``conn`` meanwhile: a worker blocked writing a reply nobody will read (an
    observer's end-of-day rows, larger than a pipe holds, when Ctrl-C stopped the parent)
    takes the stop message only once that write is done. The bytes are dropped as they come,
    not as messages: a reply the interrupt cut in the middle has no message boundary left."""
    deadline = time.monotonic() + seconds
    while p.exitcode is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        if conn in connection.wait([conn, p.sentinel], left):
            try:
                data = os.read(conn.fileno(), 1 << 20)
            except OSError:
                data = b""
            if not data:            # its end closed: nothing more to take
                p.join(max(0.0, deadline - time.monotonic()))
                return
        else:
            p.join(0)


class WorkerPool:
    """N worker processes and their shared slots; use as a context manager."""

    #: output rows per worker, slot and table in shared memory (tests make it tiny)
    rows_per_slot = MAX_BATCH_RECORDS

    def __init__(self, fmt, path: str, n_workers: int, on_error: str, slots: int,
                 in_capacity: int, layout: dict[str, int] | None = None, want: int = 0,
                 levels: int = 10, tickers: tuple[str, ...] | None = None, observer=None):
        self.n = n_workers
        self.slots = slots
        self.in_capacity = in_capacity
        self.layout = layout or {"bbo": ROW_WIDTH}
        rows = self.rows_per_slot
        self.size = slots * in_capacity + sum(
            n_workers * slots * rows * width * 8 for width in self.layout.values())
        self.fd = -1
        self.procs: list = []
        self.conns: list = []
        try:
            self.fd = os.memfd_create("obook-replay", os.MFD_CLOEXEC)
            _check_file_size_limit(self.size, n_workers)
            os.ftruncate(self.fd, self.size)
            self.mm = mmap.mmap(self.fd, self.size)
            self.inputs, self.outputs = shared_views(self.mm, n_workers, slots, in_capacity, self.layout, rows)
            ctx = mp_context(fmt)
            from . import worker_main
            # a forked worker's parent is this process: it checks that after PR_SET_PDEATHSIG
            # (a forkserver's worker is the server's child; the pipes' EOF stop it)
            parent_pid = os.getpid() if ctx.get_start_method() == "fork" else None
            for w in range(n_workers):
                parent, child = ctx.Pipe(duplex=True)
                p = ctx.Process(target=worker_main.run, name=f"obook-worker-{w}", daemon=True,
                                args=(child, fmt, str(path), w, n_workers, on_error, slots,
                                      in_capacity, self.size, self.layout, want, levels, rows,
                                      parent_pid, tickers, observer))
                with _starting(ctx):
                    p.start()
                    self.procs.append(p)        # known before an interrupt held meanwhile is raised
                    self.conns.append(parent)
                    child.close()
                try:
                    reduction.send_handle(parent, self.fd, p.pid)
                except OSError as e:
                    raise self._died(w) from e
            self.book_mul = np.zeros(n_workers, dtype=np.int64)
            self.book_add = np.zeros(n_workers, dtype=np.int64)
            for w, reply in enumerate(self._replies()):
                self.book_mul[w], self.book_add[w] = reply
        except OSError as e:        # no pipe, process or shared memory to be had
            self.close()
            raise start_failed(n_workers, e) from e
        except BaseException:
            self.close()
            raise

    def submit(self, slot: int, data, base_seq: int) -> None:
        """Copy a batch (a uint8 array, or a tuple of them laid end to end) to input slot
        ``slot`` and have every worker run it."""
        n = sum(len(d) for d in data) if isinstance(data, tuple) else len(data)
        if n <= self.in_capacity:
            join_parts(data, self.inputs[slot])
            msg = ("batch", slot, n, base_seq, None)
        else:
            self._submit_oversize(slot, join_parts(data), base_seq)
            return
        for w, c in enumerate(self.conns):
            try:
                c.send(msg)
            except OSError as e:
                raise self._died(w) from e

    def _submit_oversize(self, slot: int, data: np.ndarray, base_seq: int) -> None:
        """A record longer than a slot (a huge CSV line) travels in a memfd of its own whose
        descriptor each worker receives: a pipe would block on a stopped worker once its
        buffer is full, before the liveness check could name it."""
        fd = os.memfd_create("obook-record", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, len(data))
            with mmap.mmap(fd, len(data)) as mm:
                mm[:] = data.tobytes() if not data.flags.c_contiguous else memoryview(data)
            for w, c in enumerate(self.conns):
                try:
                    c.send(("batch", slot, len(data), base_seq, "fd"))
                    reduction.send_handle(c, fd, self.procs[w].pid)
                except OSError as e:
                    raise self._died(w) from e
        finally:
            os.close(fd)

    def results(self) -> list:
        """The next reply of every worker (in worker order)."""
        return list(self._replies())

    def _replies(self):
        pending = dict(enumerate(self.conns))
        got: dict[int, object] = {}
        sentinels = {p.sentinel: w for w, p in enumerate(self.procs)}
        watch = _Liveness({w: p.pid for w, p in enumerate(self.procs)})
        while pending:
            waiting = [self.procs[w].sentinel for w in pending]
            ready = connection.wait(list(pending.values()) + waiting, timeout=_POLL_SECONDS)
            if not ready:
                stuck = watch.check(pending)
                if stuck is not None:
                    w, why = stuck
                    raise WorkerError(f"worker process {w} (pid {self.procs[w].pid}) {why}; "
                                      "replay stopped")
                continue
            for r in ready:
                if r in sentinels:
                    w = sentinels[r]
                    if w in pending and not pending[w].poll():
                        raise self._died(w)
                    continue
                if not any(c is r for c in pending.values()):
                    continue
                w = next(k for k, c in pending.items() if c is r)
                try:
                    reply = r.recv()
                except (EOFError, OSError) as e:
                    raise self._died(w) from e
                if isinstance(reply, tuple) and reply and reply[0] == "failed":
                    raise WorkerError(f"worker {w} failed: {reply[1]}")
                got[w] = reply
                del pending[w]
        return [got[w] for w in range(self.n)]

    def _died(self, w: int) -> WorkerError:
        p = self.procs[w]
        p.join(0.5)
        return WorkerError(f"worker process {w} (pid {p.pid}) died (exit code {p.exitcode}); replay stopped")

    def finish(self, partial: bool = False) -> list:
        """Ask every worker for its final counts (``partial``: after a bad record, an
        observer's rows so far)."""
        for w, c in enumerate(self.conns):
            try:
                c.send(("stats", partial))
            except OSError as e:
                raise self._died(w) from e
        return self.results()

    def close(self) -> None:
        """Stop the workers and free the shared memory; a Ctrl-C that comes meanwhile (the
        first one is what ends the replay) is raised once they are stopped."""
        with deferred():
            self._close()

    def _close(self) -> None:
        for c in self.conns:
            try:
                c.send(None)
            except OSError:
                pass
        for p, c in zip(self.procs, self.conns):
            _join_draining(p, c, 2.0)
            if p.exitcode is None:
                log.warning("worker %s did not stop; terminating it", p.pid)
                p.terminate()
                p.join(1.0)
            if p.exitcode is None:
                p.kill()
                p.join()
        for c in self.conns:
            c.close()
        self.procs, self.conns = [], []
        self.inputs = self.outputs = None
        mm = getattr(self, "mm", None)
        if mm is not None:
            try:
                mm.close()
            except BufferError:  # a view is still alive somewhere; the GC frees the mapping
                pass
            self.mm = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
