"""Output buffers that are written once, row by row, and grow: zero-filled memory mapped in
ordinary pages.

numpy asks the kernel for transparent huge pages on every array of 4 MiB or more, so the
first write into each 2 MiB of a fresh array zeroes all of it at once. Where the system
hands freed memory back to its host (virtual machines with free page reporting), memory
that a process touches for the first time is slow to get, and huge pages make it slower:
on a 2-core cloud virtual machine a first write cost 1-1.8 ms a MiB in huge pages and
0.4 ms a MiB in ordinary ones. A backtest's rows (its events, fills, orders) are such
memory: tens to hundreds of MiB, written once. ``zeros`` maps them without huge pages;
what is never written is never touched, so a buffer can be made larger than it turns out
to need at no cost. A ``Prefaulter`` maps such a buffer's pages a few MiB ahead of its
writer, from a thread of its own, so that the writer does not stop for them either. Once a
buffer's arrays are gone, its mapping (up to ``KEEP`` of them) serves the next buffer that
fits in it, its written part zeroed: a process that runs backtests one after another
writes into pages it has, not fresh ones (``release_kept`` unmaps them).
"""

from __future__ import annotations

import mmap
import threading
import weakref

import numpy as np

SMALL = 1 << 22      # below numpy's huge page size: numpy's own allocation
#: mappings kept for the next buffers once their arrays are gone (a backtest after another
#: in the same process writes into pages it already has, instead of fresh ones)
KEEP = 16

_lock = threading.Lock()
_kept: list = []           # [mapping, bytes that may be non-zero] no array uses, for the next
_returned: list = []       # the same, given back by finalizers (appended only: never blocks)
_dirty: dict = {}          # a live buffer's address -> [mapping, bytes written (None: unknown)]


def zeros(shape, dtype=np.int64) -> np.ndarray:
    """A zero-filled, writable array of ``shape`` (numpy's when it is small). Once its
    arrays are gone its mapping is kept for a later ``zeros`` of at most its size, if its
    owner said with ``written`` how much of it it wrote (that part is zeroed then)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    nbytes = count * dtype.itemsize
    if nbytes < SMALL:
        return np.zeros(shape, dtype)
    m, dirty = _take(nbytes)
    if m is None:
        m, dirty = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS), 0
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            m.madvise(mmap.MADV_NOHUGEPAGE)
    flat = np.frombuffer(m, dtype, count=count)
    if dirty:
        flat.view(np.uint8)[:min(dirty, nbytes)] = 0
    entry = [m, dirty if dirty > nbytes else None]     # bytes past this array's stay as they were
    _dirty[flat.ctypes.data] = entry
    weakref.finalize(flat, _give_back, flat.ctypes.data, entry).atexit = False
    return flat.reshape(shape)


def written(a: np.ndarray, nbytes: int) -> None:
    """The first ``nbytes`` of buffer ``a`` (from ``zeros``) are all its writer wrote."""
    entry = _dirty.get(a.ctypes.data)
    if entry is not None:
        entry[1] = max(entry[1] or 0, int(nbytes))


def _take(nbytes: int):
    """The smallest kept mapping of at least ``nbytes`` and its bytes to zero (None, 0: none)."""
    with _lock:
        while _returned:
            _kept.append(_returned.pop())
        while len(_kept) > KEEP:
            _kept.pop(0)[0].close()
        fits = [k for k, (m, _) in enumerate(_kept) if len(m) >= nbytes]
        if not fits:
            return None, 0
        m, dirty = _kept.pop(min(fits, key=lambda k: len(_kept[k][0])))
    if hasattr(mmap, "MADV_DOFORK"):
        m.madvise(mmap.MADV_DOFORK)
    return m, dirty


def _give_back(addr: int, entry: list) -> None:
    """A buffer's arrays are gone: its mapping waits for the next ``zeros`` when what it
    holds is known, else it is unmapped."""
    _dirty.pop(addr, None)
    m, dirty = entry
    if dirty is None:
        try:
            m.close()
        except BufferError:     # still exported elsewhere: unmapped with its last user
            pass
    else:
        if hasattr(mmap, "MADV_DONTFORK"):     # no process forked meanwhile copies its pages
            m.madvise(mmap.MADV_DONTFORK)
        _returned.append([m, dirty])


def release_kept() -> None:
    """Unmap the kept mappings (their memory goes back to the system)."""
    with _lock:
        for m, _ in _kept + _returned:
            m.close()
        _kept.clear()
        _returned.clear()


def grown(a: np.ndarray, used: int, rows: int) -> np.ndarray:
    """``a`` with ``rows`` rows (itself when it has them): its first ``used`` kept, the rest
    zero."""
    if a.shape[0] >= rows:
        return a
    b = zeros((rows,) + a.shape[1:], a.dtype)
    b[:used] = a[:used]
    written(a, (used + 2) * a.strides[0])      # kept for a later buffer: what to zero then
    return b


def _libc_address(name: str) -> int:
    """The address of a C library function (0: none)."""
    import ctypes

    try:
        return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value or 0
    except (OSError, AttributeError):
        return 0


def _background(fn, *args) -> None:
    """``fn(*args)`` in this thread at the lowest priority (Linux's SCHED_IDLE): it runs on
    a core that nothing else wants at the moment, never in the place of the work it helps."""
    import os

    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))     # 0: this thread
    except (AttributeError, OSError):
        pass
    fn(*args)


class Prefaulter:
    """A thread that faults in the pages of output buffers ahead of the rows written into
    them, so that their first writes do not stop the writer (obook._kernels.prefault: a
    compiled loop without the GIL, at the lowest priority, on a core the writer and the
    replay's worker leave free).

    The writer calls ``follow`` with its buffers and the rows written into each between
    its kernels' calls, and ``stop`` at the end. Only buffers from ``zeros`` (an mmap of
    their own, page-aligned) are followed. Where ``MADV_POPULATE_WRITE`` is missing (not
    Linux, a kernel before 5.14) or the kernels run as Python, the thread stops or never
    starts, and the writer faults its pages itself, as without it.
    """

    def __init__(self, n: int, ahead: int = 2 << 20, period_us: int = 1000):
        from .._kernels.jit import INTERPRETED
        from .._kernels.prefault import F_STOP, F_WIDTH, P_WIDTH

        self.ctl = np.zeros((n, P_WIDTH), np.int64)
        self.flag = np.zeros(F_WIDTH, np.int64)
        self.ahead, self.period_us = ahead, period_us
        self._addr = [0] * n
        self._thread = None
        self._fns = (_libc_address("madvise"), _libc_address("usleep"))
        self.enabled = not INTERPRETED and all(self._fns) and hasattr(mmap, "MADV_NOHUGEPAGE")
        # a writer dropped without ``stop`` (its replay failed) still stops the thread
        weakref.finalize(self, self.flag.__setitem__, F_STOP, 1)

    def follow(self, buffers) -> None:
        """``buffers``: (array, rows written) per buffer, in the same order every call."""
        from .._kernels.prefault import P_ADDR, P_BYTES, P_DONE, P_ROW, P_USED

        if not self.enabled:
            return
        ctl = self.ctl
        for k, (a, used) in enumerate(buffers):
            addr = a.ctypes.data
            if addr != self._addr[k]:
                self._addr[k] = addr
                ok = a.nbytes >= SMALL and addr % mmap.PAGESIZE == 0
                ctl[k, P_ADDR] = 0          # the row is rewritten: the thread skips it meanwhile
                ctl[k, P_BYTES], ctl[k, P_ROW], ctl[k, P_DONE] = a.nbytes, a.strides[0], 0
                ctl[k, P_USED] = used
                ctl[k, P_ADDR] = addr if ok else 0
            else:
                ctl[k, P_USED] = used
        if self._thread is None and ctl[:, P_ADDR].any():
            import threading

            from .._kernels.prefault import prefault_run

            self._thread = threading.Thread(
                target=_background, name="obook-prefault", daemon=True,
                args=(prefault_run, ctl, self.flag, self._fns[0], self._fns[1], self.ahead, mmap.PAGESIZE,
                      self.period_us))
            self._thread.start()

    @staticmethod
    def compile() -> None:
        """Compile (or load) the thread's loop: a run told to stop before it starts."""
        from .._kernels.jit import INTERPRETED
        from .._kernels.prefault import F_STOP, F_WIDTH, P_WIDTH, prefault_run

        if not INTERPRETED:
            flag = np.zeros(F_WIDTH, np.int64)
            flag[F_STOP] = 1
            prefault_run(np.zeros((1, P_WIDTH), np.int64), flag, 0, 0, 1 << 20, mmap.PAGESIZE, 1000)

    def stop(self) -> None:
        from .._kernels.prefault import F_STOP

        self.flag[F_STOP] = 1
        if self._thread is not None:
            self._thread.join()
