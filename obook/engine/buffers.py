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
to need at no cost.
"""

from __future__ import annotations

import mmap

import numpy as np

SMALL = 1 << 22      # below numpy's huge page size: numpy's own allocation


def zeros(shape, dtype=np.int64) -> np.ndarray:
    """A zero-filled, writable array of ``shape`` (numpy's when it is small)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if nbytes < SMALL:
        return np.zeros(shape, dtype)
    m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        m.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(m, dtype).reshape(shape)


def grown(a: np.ndarray, used: int, rows: int) -> np.ndarray:
    """``a`` with ``rows`` rows (itself when it has them): its first ``used`` kept, the rest
    zero."""
    if a.shape[0] >= rows:
        return a
    b = zeros((rows,) + a.shape[1:], a.dtype)
    b[:used] = a[:used]
    return b
