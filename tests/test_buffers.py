"""obook.engine.buffers: zero-filled output buffers, in ordinary pages when large."""

from __future__ import annotations

import mmap
import os

import numba
import numpy as np

from obook.engine.buffers import SMALL, grown, zeros


def _root(a):
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a.obj if isinstance(a, memoryview) else a


def test_buffers_zeros_large_is_a_writable_zeroed_mapping():
    a = zeros((SMALL // 8 + 1000, 1))
    assert isinstance(_root(a), mmap.mmap)
    assert a.flags["C_CONTIGUOUS"] and a.flags["WRITEABLE"] and a.flags["ALIGNED"] and not a.any()
    a[-1, 0] = 7
    assert a.sum() == 7


def test_buffers_zeros_small_is_numpy_own():
    a = zeros((10, 3), np.int32)
    assert a.dtype == np.int32 and a.shape == (10, 3) and not a.any() and _root(a) is a


def test_buffers_zeros_large_has_the_kernels_array_type():
    assert numba.typeof(zeros((SMALL, 2))) == numba.typeof(np.zeros((SMALL, 2), np.int64))


def test_buffers_grown_keeps_used_rows_and_zeroes_the_rest():
    a = np.arange(12, dtype=np.int64).reshape(6, 2)
    b = grown(a, 4, SMALL // 8)
    assert b.shape == (SMALL // 8, 2)
    assert np.array_equal(b[:4], a[:4]) and not b[4:].any()
    assert grown(a, 4, 6) is a


# ---------------------------------------------------------------- the prefaulter


def _resident(a) -> int:
    """Pages of ``a`` in memory (mincore(2))."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    n = -(-a.nbytes // mmap.PAGESIZE)
    vec = (ctypes.c_ubyte * n)()
    assert libc.mincore(ctypes.c_void_p(a.ctypes.data), ctypes.c_size_t(a.nbytes), vec) == 0
    return sum(v & 1 for v in vec)


def _wait(cond, seconds=10.0):
    import time

    deadline = time.time() + seconds
    while not cond() and time.time() < deadline:
        time.sleep(0.01)
    return cond()


def test_buffers_prefaulter_faults_pages_ahead_of_the_rows_written(no_leaks):
    from obook._kernels.prefault import P_DONE
    from obook.engine.buffers import Prefaulter

    a = zeros((1 << 20, 8))                     # 64 MiB, mapped as written
    a[:1000] = np.arange(8000).reshape(1000, 8)
    assert _resident(a) < 100
    p = Prefaulter(1, ahead=8 << 20)
    p.follow([(a, 1000)])
    assert _wait(lambda: p.ctl[0, P_DONE] >= 1000 * 64 + (8 << 20))
    assert _resident(a) >= (8 << 20) // mmap.PAGESIZE          # faulted in...
    assert _resident(a) < (20 << 20) // mmap.PAGESIZE          # ...not the whole buffer
    assert np.array_equal(a[:1000], np.arange(8000).reshape(1000, 8)) and not a[1000:].any()
    assert os.sched_getscheduler(p._thread.native_id) == os.SCHED_IDLE     # only on a free core
    p.stop()


def test_buffers_prefaulter_rows_written_meanwhile_are_kept(no_leaks):
    from obook.engine.buffers import Prefaulter

    a = zeros((1 << 19, 8))
    p = Prefaulter(1, ahead=1 << 20, period_us=10)
    for step in range(0, 1 << 19, 1 << 13):     # the writer writes while the thread faults ahead
        a[step:step + (1 << 13)] = step + np.arange(1 << 13)[:, None]
        p.follow([(a, step + (1 << 13))])
    p.stop()
    assert np.array_equal(a[:, 3], np.arange(1 << 19))


def test_buffers_prefaulter_replaced_buffer_is_followed(no_leaks):
    from obook._kernels.prefault import P_ADDR, P_DONE
    from obook.engine.buffers import Prefaulter

    a, b = zeros((1 << 19, 8)), zeros((1 << 20, 8))
    p = Prefaulter(1, ahead=4 << 20)
    p.follow([(a, 10)])
    assert _wait(lambda: p.ctl[0, P_DONE] > 0)
    p.follow([(b, 10)])
    assert p.ctl[0, P_ADDR] == b.ctypes.data
    assert _wait(lambda: p.ctl[0, P_DONE] >= 4 << 20 and p.ctl[0, P_ADDR] == b.ctypes.data)
    assert _resident(b) >= (4 << 20) // mmap.PAGESIZE
    p.stop()


def test_buffers_prefaulter_small_buffers_start_no_thread(no_leaks):
    import threading

    from obook.engine.buffers import Prefaulter

    p = Prefaulter(2)
    p.follow([(np.zeros((100, 8), np.int64), 5), (zeros((10, 3)), 1)])
    assert p._thread is None and "obook-prefault" not in [t.name for t in threading.enumerate()]
    p.stop()


def test_buffers_prefaulter_dropped_without_stop_ends_its_thread(no_leaks):
    import gc

    from obook.engine.buffers import Prefaulter

    p = Prefaulter(1)
    p.follow([(zeros((1 << 19, 8)), 1)])
    thread = p._thread
    assert thread.is_alive()
    del p
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()


def test_prefault_kernels_pass_faults_in_and_a_bad_address_flags_failure():
    from obook._kernels.prefault import (F_CALLS, F_FAILED, F_WIDTH, P_ADDR, P_BYTES, P_DONE, P_ROW, P_USED,
                                         P_WIDTH, prefault_pass)
    from obook.engine.buffers import _libc_address

    a = zeros((1 << 19, 8))
    ctl, flag = np.zeros((1, P_WIDTH), np.int64), np.zeros(F_WIDTH, np.int64)
    ctl[0, P_ADDR], ctl[0, P_BYTES], ctl[0, P_ROW], ctl[0, P_USED] = a.ctypes.data, a.nbytes, 64, 100
    assert prefault_pass(ctl, flag, _libc_address("madvise"), 1 << 20, mmap.PAGESIZE)
    assert ctl[0, P_DONE] == -(-(100 * 64 + (1 << 20)) // mmap.PAGESIZE) * mmap.PAGESIZE
    assert flag[F_CALLS] == 1 and not flag[F_FAILED]
    assert prefault_pass(ctl, flag, _libc_address("madvise"), 1 << 20, mmap.PAGESIZE)   # nothing new: no call
    assert flag[F_CALLS] == 1
    ctl[0, P_ADDR], ctl[0, P_DONE] = a.ctypes.data + 1, 0      # not page-aligned: madvise refuses
    flag[:] = 0
    assert not prefault_pass(ctl, flag, _libc_address("madvise"), 1 << 20, mmap.PAGESIZE)
    assert flag[F_FAILED] == 1


def test_buffers_zeros_mapping_kept_after_its_arrays_reused_zeroed():
    from obook.engine.buffers import release_kept, written

    release_kept()
    a = zeros((1 << 20, 4))
    addr = a.ctypes.data
    a[:1000] = 7
    written(a, 1000 * 32)
    del a
    b = zeros((1 << 19, 4))            # smaller: the kept mapping serves it
    assert b.ctypes.data == addr and not b[:2000].any()
    del b
    release_kept()


def test_buffers_zeros_mapping_not_told_what_was_written_not_kept():
    from obook.engine.buffers import release_kept

    release_kept()
    a = zeros((1 << 20, 4))
    addr = a.ctypes.data
    a[:1000] = 7
    del a
    b = zeros((1 << 20, 4))
    assert not b[:2000].any()
    assert b.ctypes.data != addr or not b.any()
    release_kept()


def test_buffers_zeros_bytes_past_a_smaller_reuse_zeroed_later():
    from obook.engine.buffers import release_kept, written

    release_kept()
    a = zeros((1 << 20, 4))
    a[:] = 3                            # all of it written
    written(a, a.nbytes)
    del a
    b = zeros((1 << 19, 4))             # the first half, zeroed; the rest still holds 3s
    b[:10] = 1
    written(b, 10 * 32)
    del b
    c = zeros((1 << 20, 4))             # the same mapping again: all of it zero
    assert not c.any()
    del c
    release_kept()


def test_buffers_grown_keeps_the_old_mapping_for_later():
    from obook.engine import buffers

    buffers.release_kept()
    a = zeros((1 << 18, 4))
    a[:100] = 9
    b = grown(a, 100, 1 << 19)
    assert (b[:100] == 9).all() and not b[100:].any()
    addr = a.ctypes.data
    del a
    c = zeros((1 << 18, 4))
    assert c.ctypes.data == addr and not c.any()
    del b, c
    buffers.release_kept()
