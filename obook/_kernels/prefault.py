"""Faulting in output buffers' pages ahead of their writer, from a thread of its own (numba,
without the GIL: it never waits for the interpreter, nor makes the writer wait).

A buffer that rows are written into once, in order, takes a page fault at each new page;
on a virtual machine each costs microseconds, on the writer's time. ``prefault_run`` loops
(until ``flag[F_STOP]``) over the buffers of ``ctl`` (one row each: address, size, bytes a
row, rows written, bytes done; addresses page-aligned) and faults in, with ``madvise(MADV_POPULATE_WRITE)`` (Linux
5.14), the pages up to ``ahead`` bytes past the rows written. That call keeps what a page
holds, so the writer may write the same pages meanwhile. The writer's side updates the
rows written (and a replaced buffer's row) between its own kernels' calls.
"""

from .ccall import ccall_int
from .jit import njit

P_ADDR, P_BYTES, P_ROW, P_USED, P_DONE = range(5)
P_WIDTH = 5
F_STOP, F_FAILED, F_CALLS = range(3)
F_WIDTH = 3
MADV_POPULATE_WRITE = 23


@njit(cache=True, _nrt=False, inline="always")
def _pages(n, page):
    return (n + page - 1) // page * page


@njit(cache=True, _nrt=False)
def prefault_pass(ctl, flag, madvise, ahead, page):
    """One pass over the buffers; False when madvise failed on a buffer whose pages it had
    never faulted in (the call is not there: stop)."""
    for k in range(ctl.shape[0]):
        addr = ctl[k, P_ADDR]
        if addr == 0:
            continue
        done = ctl[k, P_DONE]
        end = min(_pages(ctl[k, P_BYTES], page), _pages(ctl[k, P_USED] * ctl[k, P_ROW] + ahead, page))
        if end - done < ahead // 4:
            continue
        flag[F_CALLS] += 1
        if ccall_int(madvise, addr + done, end - done, MADV_POPULATE_WRITE, 0, 0) != 0:
            if flag[F_CALLS] == 1:
                flag[F_FAILED] = 1
                return False
        if ctl[k, P_ADDR] == addr:      # not replaced meanwhile
            ctl[k, P_DONE] = end
    return True


@njit(cache=True, _nrt=False, nogil=True)
def prefault_run(ctl, flag, madvise, usleep, ahead, page, period_us):
    """Passes every ``period_us`` microseconds until flag[F_STOP] (or madvise is missing)."""
    while flag[F_STOP] == 0:
        if not prefault_pass(ctl, flag, madvise, ahead, page):
            return
        ccall_int(usleep, period_us, 0, 0, 0, 0)
