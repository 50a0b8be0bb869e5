"""How obook's kernels run: compiled by numba (the default), or as the plain Python
functions they are written as (``OBOOK_KERNELS=python`` in the environment when the
kernels are first imported, or numba's own ``NUMBA_DISABLE_JIT=1``: numba's ``njit`` then
hands back each function bare, without the ``py_func`` and the intrinsics the kernels use,
and the Python kernels are what runs).

Importing numba and loading even cached machine code costs a fresh process about 0.5 s,
most of what ``obook bbo`` spends on a file of a few thousand messages. So the
command line runs the kernels as Python when every input is that small (see
``obook.cli.kernels.choose_kernels``): the same functions, the same results (the test suite
runs replays both ways and compares), at a few microseconds a message instead of tens of
nanoseconds. Anything that runs for longer, the library included, compiles. The choice
is made once per process, before the first kernel module is imported; worker processes
inherit it through the environment.

Kernel modules import ``njit`` from here instead of numba; the few numba intrinsics
(prefetch, memcpy, the cycle counter, unaligned loads) have Python equivalents beside them.
One rule keeps both runs equal: numba computes on a byte read from a uint8 array as an
int64, numpy keeps it a uint8 (``b[i] - 48`` wraps), so a kernel casts bytes
(``np.int64(b[i])``) before arithmetic that could leave 0..255.
tests/test_python_kernels.py checks every format's tables both ways.
"""

import os

#: the environment variable and the value that selects the Python kernels (any other: compiled)
ENV = "OBOOK_KERNELS"
PYTHON = "python"


def _numba_disabled() -> bool:
    """numba's ``NUMBA_DISABLE_JIT`` is set to a non-zero integer (as numba reads it)."""
    try:
        return int(os.environ.get("NUMBA_DISABLE_JIT", "0") or 0) != 0
    except ValueError:
        return False


#: True when this process runs the kernels as Python (fixed at first import)
INTERPRETED = os.environ.get(ENV, "").strip().lower() == PYTHON or _numba_disabled()

if INTERPRETED:
    import numpy as np

    # the kernels' hashes and word-at-a-time scans wrap around on purpose, as machine
    # integers (and numba) do; numpy's scalars wrap the same way but warn
    np.seterr(over="ignore")


#: the Python functions of kernels compiled with ``_nrt=False``: their machine code calls
#: nothing of numba's runtime, so loading them from the cache does not start it
#: (``obook._kernels.cached_load``: 11 ms of every command's start)
NRT_FREE: set = set()


def njit(*args, **options):
    """numba's ``njit`` (same arguments); under ``OBOOK_KERNELS=python`` the function
    itself, with ``py_func`` pointing at it as a compiled kernel's does."""
    if not INTERPRETED:
        from numba import njit as numba_njit

        if options.get("_nrt") is False and not args:
            def compiled(fn):
                NRT_FREE.add(fn)
                return numba_njit(**options)(fn)
            return compiled
        return numba_njit(*args, **options)

    def plain(fn):
        fn.py_func = fn
        return fn

    if len(args) == 1 and callable(args[0]) and not options:
        return plain(args[0])
    return plain


if not INTERPRETED:     # Python kernels never import numba
    from .cached_load import install as _install_cached_load

    _install_cached_load()
