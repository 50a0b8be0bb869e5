"""Instruments sharded over worker processes, merged back in input order.

Book b goes to worker ``b % workers``; each worker matches its books' instructions and
writes its int64 rows into shared-memory files as the kernels flush them (memfds: nothing
in /dev/shm, freed with the last mapping, whatever happens to either process), whose
descriptors travel over a socket pair to the parent, which maps them. Every row carries its instruction's row number (``seq``) and book, and all
rows of one instruction come from one worker in kernel order, so ordering by (seq, book)
gives the same tables for any number of workers: each worker's rows are already in that
order, so the merge places every row by binary searches in the other workers' keys
instead of sorting, column by column as the tables are converted. Workers start like the replay's (fork when safe, else the
forkserver, which maps the input from one shared copy of it) and never outlive the call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import mmap
import os
import signal
from typing import NamedTuple

import numpy as np

from .._kernels.match_layout import E_BOOK, E_SEQ
from ..errors import WorkerError
from .books import TABLES, run_books, widths

log = logging.getLogger("obook")


class _Sink:
    """A worker's rows, one memfd a table: each flushed chunk of the kernels is written
    straight into it (the parent maps the same pages: the rows are copied once)."""

    def __init__(self, levels: int):
        self.fds = {t: os.memfd_create(f"obook-match-{t}", os.MFD_CLOEXEC) for t in TABLES}
        self.shapes = {t: (0, width) for t, width in widths(levels).items()}

    def __call__(self, table: str, rows: np.ndarray) -> None:
        view = memoryview(np.ascontiguousarray(rows)).cast("B")
        while len(view):
            view = view[os.write(self.fds[table], view):]
        n, width = self.shapes[table]
        self.shapes[table] = (n + len(rows), width)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)


class _At(NamedTuple):
    """Where an array of a plan is in its :class:`SharedPlan`'s memfd."""
    offset: int
    dtype: np.dtype
    shape: tuple


class SharedPlan:
    """The arrays of a plan (the input's columns, each row's reason and key, the books'
    bands) copied once into one memfd that every worker the forkserver starts maps
    read-only: a worker is pickled the plan's small fields and the memfd's descriptor only
    (:meth:`shard`), and takes its books' rows out of the input itself, as a forked one
    does. Nothing is in /dev/shm; the memfd goes with the last descriptor or mapping of it
    (``close`` here once the workers have started, each worker's as it exits)."""

    def __init__(self, prep, workers: int):
        from ..engine.workers import _check_file_size_limit, start_failed

        self.at: dict = {}              # id(array) -> _At
        self._arrays = []               # the arrays themselves: their ids stay theirs
        self.fd, self.size = -1, 0
        arrays = [a for a in _arrays(prep) if not a.dtype.hasobject]
        for a in arrays:
            if id(a) not in self.at:
                self.at[id(a)] = _At(self.size, a.dtype, a.shape)
                self._arrays.append(a)
                self.size += -(-a.nbytes // 64) * 64          # each array 64-byte aligned
        self.size = max(self.size, 64)
        _check_file_size_limit(self.size, workers)
        try:
            self.fd = os.memfd_create("obook-match-input", os.MFD_CLOEXEC)
            os.ftruncate(self.fd, self.size)
            for a in self._arrays:
                _written(self.fd, a, self.at[id(a)].offset)
        except BaseException as e:          # a Ctrl-C meanwhile too: the memfd goes
            self.close()
            if isinstance(e, OSError):
                raise start_failed(workers, e) from e
            raise

    def shard(self, shard):
        """``shard`` (a lazy shard of the plan) as its worker is sent it."""
        return _Sent(self, shard)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _arrays(obj) -> list:
    """The arrays of a plan's fields, and of its fields' fields (the input's columns)."""
    out = []
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            out.append(v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            out.extend(_arrays(v))
    return out


def _swapped(obj, swap):
    """``obj`` (a dataclass) with each array or :class:`_At` of its fields (and its fields'
    fields) replaced by ``swap(value)`` (the value itself: kept)."""
    changes = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            changes[f.name] = _swapped(v, swap)
        elif isinstance(v, (np.ndarray, _At)):
            changes[f.name] = swap(v)
    return dataclasses.replace(obj, **changes)


def _written(fd: int, a: np.ndarray, offset: int) -> None:
    view = memoryview(np.ascontiguousarray(a).reshape(-1).view(np.uint8))
    while len(view):
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


class _Sent:
    """A lazy shard pickled as its plan's small fields, the places of its arrays in the
    :class:`SharedPlan`'s memfd and that memfd's descriptor (given to the child as the
    forkserver starts it); unpickled, the shard over the memfd's pages."""

    def __init__(self, shared: SharedPlan, shard):
        self.shared, self.shard = shared, shard

    def __reduce__(self):
        from multiprocessing.reduction import DupFd

        at = self.shared.at
        stub = _swapped(self.shard, lambda a: at.get(id(a), a))
        return _mapped, (DupFd(self.shared.fd), self.shared.size, stub)


def _mapped(dup, size: int, stub):
    """The plan ``stub`` over the memfd ``dup`` (a DupFd), mapped read-only."""
    fd = dup.detach()
    try:
        mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    finally:
        os.close(fd)

    def array(v):
        if not isinstance(v, _At):
            return v
        count = int(np.prod(v.shape, dtype=np.int64))
        return np.frombuffer(mm, v.dtype, count, v.offset).reshape(v.shape)

    return _swapped(stub, array)


def pipe_socket(conn):
    """A socket of its own (a duplicate descriptor) on a worker's pipe ``conn``."""
    import socket

    return socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)


def detached() -> None:
    """A worker's start: it dies with its parent, which handles Ctrl-C and a closed terminal
    and stops it (its signals were held while it was forked)."""
    from ..engine.worker_main import _die_with_parent
    from ..engine.workers import HELD_SIGNALS

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)


def _worker(conn, prep, books, want, stp, levels, day_end):
    from multiprocessing.reduction import sendfds

    detached()
    sink = None
    try:
        sink = _Sink(levels)
        run_books(prep, books, prep.chunks(), want=want, stp=stp, levels=levels, day_end=day_end, sink=sink)
        conn.send(sink.shapes)
        with pipe_socket(conn) as sock:
            sendfds(sock, [sink.fds[t] for t in TABLES])
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("failed", f"{type(e).__name__}: {e}"))
    finally:
        if sink is not None:
            sink.close()
        conn.close()


def _received(conn):
    """A worker's rows (table -> [array]): their shapes, then the memfds they are in,
    mapped read-only; or ``("failed", reason)``."""
    from multiprocessing.reduction import recvfds

    shapes = conn.recv()
    if isinstance(shapes, tuple):
        return shapes
    with pipe_socket(conn) as sock:
        fds = recvfds(sock, len(TABLES))
    out = {}
    try:
        for t, fd in zip(TABLES, fds):
            rows, width = shapes[t]
            if not rows:
                out[t] = [np.zeros((0, width), np.int64)]
                continue
            buf = mmap.mmap(fd, rows * width * 8, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                            prot=mmap.PROT_READ)
            out[t] = [np.frombuffer(buf, np.int64).reshape(rows, width)]
    finally:
        for fd in fds:
            os.close(fd)
    return out


def _ordered(keys: np.ndarray) -> bool:
    return len(keys) < 2 or bool((keys[1:] >= keys[:-1]).all())


def merge(parts: list[dict]) -> dict:
    """Every table of the workers' rows merged into one array (see ``merge_table``)."""
    out = {}
    for t in TABLES:
        blocks = merge_table(parts, t)
        out[t] = blocks[0] if len(blocks) == 1 and isinstance(blocks[0], np.ndarray) else \
            np.concatenate([b if isinstance(b, np.ndarray) else b.rows() for b in blocks])
    return out


class Merged:
    """The rows of several workers in merged order, built column by column (``rows[:, j]``,
    each column scattered once, on demand): the merged rows are never built whole."""

    def __init__(self, chunks: list, positions: list, width: int):
        self.chunks, self.positions, self.width = chunks, positions, width
        self.n = sum(len(c) for c in chunks)
        self._columns: dict = {}

    @property
    def shape(self) -> tuple:
        return (self.n, self.width)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key) -> np.ndarray:
        rows, col = key
        if rows != slice(None) or not isinstance(col, (int, np.integer)):
            raise TypeError("Merged rows are read a whole column at a time: rows[:, j]")
        col = int(col)
        out = self._columns.get(col)
        if out is None:
            out = self._columns[col] = np.empty(self.n, np.int64)
            for c, pos in zip(self.chunks, self.positions):
                out[pos] = c[:, col]
        return out

    def rows(self) -> np.ndarray:
        """The merged rows as one array."""
        out = np.empty(self.shape, np.int64)
        for c, pos in zip(self.chunks, self.positions):
            out[pos] = c
        return out


def merge_table(parts: list[dict], t: str) -> list:
    """One table from the workers' rows (each part: table -> list of row arrays), as a list
    of row blocks in order: one part's own chunks, or one :class:`Merged` of several parts,
    ordered by (seq, book), ties in worker order (a stable sort of the concatenation).
    Each part is in that order already (checked: a part that is not is sorted first), so
    part p's row i goes to i plus the number of rows of the other parts before it: a
    binary search in each other part's keys."""
    if len(parts) == 1:
        return parts[0][t]
    if not parts:
        return [np.zeros((0, 1), np.int64)]
    chunks = [p[t][0] if len(p[t]) == 1 else np.concatenate(p[t]) for p in parts]
    n_books = 1 + max((int(c[:, E_BOOK].max()) for c in chunks if len(c)), default=0)
    keys = []
    for i, c in enumerate(chunks):
        k = c[:, E_SEQ] * n_books + c[:, E_BOOK]
        if not _ordered(k):
            order = np.argsort(k, kind="stable")
            chunks[i], k = c[order], k[order]
        keys.append(k)
    positions = []
    for p, c in enumerate(chunks):
        pos = np.arange(len(c), dtype=np.int64)
        for q, k in enumerate(keys):
            if q != p and len(k) and len(c):
                pos += np.searchsorted(k, keys[p], side="right" if q < p else "left")
        positions.append(pos)
    width = max(c.shape[1] for c in chunks)
    return [Merged(chunks, positions, width)]


def run_shards(prep, workers: int, *, want: int, stp: int, levels: int, day_end: bool) -> list[dict]:
    """The rows of each worker, table -> list of row arrays (``merge_table`` orders them as one)."""
    nb = len(prep.instruments)
    workers = max(1, min(workers, nb))
    if workers == 1:
        return [run_books(prep, np.arange(nb, dtype=np.int64), prep.chunks(), want=want, stp=stp, levels=levels,
                          day_end=day_end)]
    with shard_workers(prep, workers, _worker, want, stp, levels, day_end) as (procs, conns):
        parts = []
        for w, c in enumerate(conns):
            awaited(conns, procs, [w])
            try:
                r = _received(c)
            except (EOFError, OSError) as e:
                raise died(procs, w) from e
            if isinstance(r, tuple):
                raise WorkerError(f"match worker {w} failed: {r[1]}")
            parts.append(r)
        return parts


def awaited(conns: list, procs: list, watched: list) -> list:
    """The pipes of workers ``watched`` (indices into ``conns``) that can be read, waited
    for as long as those workers make progress: a WorkerError names one stopped (SIGSTOP, a
    debugger) or wedged meanwhile, as a replay's workers are watched."""
    from multiprocessing.connection import wait

    from ..engine import workers as pool

    watch = None
    while True:
        ready = wait([conns[w] for w in watched], timeout=pool._POLL_SECONDS)
        if ready:
            return ready
        watch = watch or pool._Liveness({w: procs[w].pid for w in watched})     # this wait's own
        stuck = watch.check(watched)
        if stuck is not None:
            w, why = stuck
            raise WorkerError(f"match worker {w} (pid {procs[w].pid}) {why}; match stopped")


def died(procs: list, w: int) -> WorkerError:
    """The error of worker ``w``, whose pipe closed before it said it was done."""
    procs[w].join(0.5)
    return WorkerError(f"match worker {w} (pid {procs[w].pid}) died (exit code {procs[w].exitcode})")


@contextlib.contextmanager
def shard_workers(prep, workers: int, target, *args):
    """One process a shard of ``prep``'s books, ``target(conn, prep, books, *args)`` (``prep``
    with the shard's rows only, made into instructions by the worker): yields ``(processes, pipes)``.
    Each worker takes its rows out of the input itself, a chunk at a time (a lazy shard: the
    workers start at once and none waits on the others' rows): a forked one out of the
    pages it shares with this process, one the forkserver starts out of a copy of the input
    made once into shared memory (:class:`SharedPlan`).
    Leaving the block stops them: those of a block left by an exception (a consumer that
    stopped early too) at once, the others once they have exited (killed after 2 s)."""
    from ..engine.workers import _starting, mp_context, start_failed

    ctx = mp_context()
    nb = len(prep.instruments)
    all_books = np.arange(nb, dtype=np.int64)
    procs, conns = [], []
    shared = None
    done = False
    try:
        if ctx.get_start_method() != "fork":
            shared = SharedPlan(prep, workers)
        for w in range(workers):
            books = all_books[all_books % workers == w]
            shard = prep.shard(workers, w, lazy=True)
            parent, child = ctx.Pipe(duplex=True)           # a socket pair: a memfd can travel on it
            p = ctx.Process(target=target, name=f"obook-match-{w}", daemon=True,
                            args=(child, shard if shared is None else shared.shard(shard), books, *args))
            with _starting(ctx):
                try:
                    p.start()
                except OSError as e:
                    raise start_failed(workers, e) from e
                procs.append(p)
                conns.append(parent)
                child.close()
        if shared is not None:
            shared.close()          # the workers hold it now
        yield procs, conns
        done = True
    finally:
        from ..interrupts import deferred

        with deferred():    # a second Ctrl-C: once every worker is stopped
            if shared is not None:
                shared.close()
            for c in conns:
                c.close()
            for p in procs:
                p.join(2.0 if done else 0)
                if p.exitcode is None:
                    p.kill()
                    p.join()
