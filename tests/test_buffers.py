"""obook.engine.buffers: zero-filled output buffers, in ordinary pages when large."""

from __future__ import annotations

import mmap

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
