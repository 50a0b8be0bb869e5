"""numba kernels: arrays and scalars in, counts and status codes out.

Every kernel is ``@njit(cache=True)`` and small; the Python layer turns the
status codes into exceptions. Kernels live in their own modules so that
``cache=True`` (keyed on the source file) is not invalidated by driver edits.
"""

from .jit import INTERPRETED

if not INTERPRETED:     # Python kernels (obook._kernels.jit) never import numba
    from .cached_load import install as _install_cached_load

    _install_cached_load()
