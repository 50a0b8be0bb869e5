"""The atomic word operations: a compare-and-swap that two threads race on loses no
increment, and a wait on ``atomic_load`` sees the other thread's ``atomic_store``; the
Python versions (``OBOOK_KERNELS=python``) do the same for one thread."""

from __future__ import annotations

import threading

import numpy as np

from obook._kernels import atomic
from obook._kernels.jit import njit


@njit(cache=False, nogil=True)
def _add_by_cas(addr, times):
    lost = 0
    for _ in range(times):
        while True:
            old = atomic.atomic_load(addr)
            if atomic.atomic_cas(addr, old, old + 1) == old:
                break
            lost += 1
    return lost


@njit(cache=False, nogil=True)
def _wait_for(addr, value, limit):
    spins = 0
    while atomic.atomic_load(addr) != value and spins < limit:
        spins += 1
    return atomic.atomic_load(addr)


def test_atomic_cas_two_threads_racing_lose_no_increment():
    word = np.zeros(1, np.int64)
    times = 300_000
    _add_by_cas(word.ctypes.data, 1)
    word[0] = 0
    ths = [threading.Thread(target=_add_by_cas, args=(word.ctypes.data, times)) for _ in range(2)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert word[0] == 2 * times


@njit(cache=False)
def _cas(addr, expected, new):
    return atomic.atomic_cas(addr, expected, new)


def test_atomic_cas_other_value_held_returns_it_and_stores_nothing():
    word = np.array([7], np.int64)
    assert _cas(word.ctypes.data, 6, 9) == 7 and word[0] == 7
    assert _cas(word.ctypes.data, 7, 9) == 7 and word[0] == 9


def test_atomic_load_in_wait_loop_sees_other_threads_store():
    word = np.zeros(1, np.int64)
    _wait_for(word.ctypes.data, 0, 1)
    got = []
    t = threading.Thread(target=lambda: got.append(_wait_for(word.ctypes.data, 5, 1 << 62)))
    t.start()
    threading.Event().wait(0.05)
    _store(word.ctypes.data, 5)
    t.join(timeout=10)
    assert not t.is_alive() and got == [5]


@njit(cache=False)
def _store(addr, value):
    atomic.atomic_store(addr, value)


_PYTHON_CHECK = """
import numpy as np
from obook._kernels import atomic, jit
assert jit.INTERPRETED
word = np.array([3], np.int64)
addr = word.ctypes.data
assert atomic.atomic_load(addr) == 3
assert atomic.atomic_cas(addr, 2, 8) == 3 and word[0] == 3
assert atomic.atomic_cas(addr, 3, 8) == 3 and word[0] == 8
atomic.atomic_store(addr, -4)
assert word[0] == -4 and atomic.atomic_load(addr) == -4
print("ok")
"""


def test_atomic_python_kernels_one_thread_same_results():
    import os
    import subprocess
    import sys

    from obook._kernels.jit import ENV, PYTHON

    run = subprocess.run([sys.executable, "-c", _PYTHON_CHECK], env={**os.environ, ENV: PYTHON},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
