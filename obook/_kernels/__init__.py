"""numba kernels: arrays and scalars in, counts and status codes out.

Every kernel is ``@njit(cache=True)`` and small; the Python layer turns the
status codes into exceptions. Kernels live in their own modules so that
``cache=True`` (keyed on the source file) is not invalidated by driver edits.

Importing the package imports nothing: the modules of plain declarations (``layout``,
the row layouts) stay cheap to import for the schemas; ``jit``, which every compiled
kernel imports, routes numba's cache through ``cached_load``.
"""
