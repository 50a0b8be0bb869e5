"""Load obook's cached kernels without numba's compiler registries.

numba's ``Cache.load_overload`` refreshes the target context before it loads a cached
kernel, and the first refresh imports numba's whole library of lowering registries
(``numba.np.arraymath``, ``linalg`` with scipy's BLAS check, the typed containers...):
about 1 s of every ``obook`` command's start-up, none of it needed to run
machine code that is already compiled. A cached kernel needs only numba's runtime (NRT)
for the kernels that allocate, so for obook's own kernels this initialises NRT (for those
not compiled with ``_nrt=False``) and loads.

Anything else keeps numba's behaviour: other packages' functions, and compiling (a cache
miss goes through numba's compiler, which refreshes the context itself). If numba's
private ``Cache`` API changes, nothing is patched and loading is numba's own.
"""

from numba.core import caching

from .jit import NRT_FREE

_numba_load_overload = caching.Cache.load_overload


def _load_overload(self, sig, target_context):
    py_func = getattr(self, "_py_func", None)
    module = getattr(py_func, "__module__", "") or ""
    if not module.startswith("obook."):
        return _numba_load_overload(self, sig, target_context)
    if py_func not in NRT_FREE:     # a kernel that allocates: NRT first (compiled at each start)
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        return self._load_overload(sig, target_context)


def install() -> bool:
    """Route cached loads through ``_load_overload``; False when numba's API differs."""
    cache = caching.Cache
    if not all(hasattr(cache, name) for name in ("_load_overload", "_guard_against_spurious_io_errors")):
        return False
    cache.load_overload = _load_overload
    return True
