"""numba's cache of a kernel is keyed on its own file only: a kernel that calls (and so
compiles in) kernels of other modules would keep their old machine code after they change.
``depends_on`` keys the cache of every kernel of a module on the files of the kernel
modules it uses too (the live loop compiles in the books, the ITCH decoder, MoldUDP64's
header reader...). A no-op for Python kernels, or if numba's private cache API differs."""

import os


def depends_on(module_globals: dict, *names: str) -> None:
    """Key the cached kernels defined in a module (its ``globals()``) on its file and the
    files of the kernel modules ``names`` (beside it)."""
    here = module_globals["__file__"]
    folder = os.path.dirname(here)
    files = sorted({os.path.join(folder, n + ".py") for n in names} | {here})
    stamp = tuple((os.path.basename(f), os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files)
    for value in list(module_globals.values()):
        cache_file = getattr(getattr(value, "_cache", None), "_cache_file", None)
        py_func = getattr(value, "py_func", None)
        if cache_file is None or getattr(py_func, "__module__", None) != module_globals["__name__"]:
            continue
        if hasattr(cache_file, "_source_stamp"):
            cache_file._source_stamp = (cache_file._source_stamp, stamp)
