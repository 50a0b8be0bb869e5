"""numba's cache of a kernel is keyed on its own file only: a kernel that calls (and so
compiles in) kernels of other modules would keep their old machine code after they change.
``depends_on`` keys the cache of every kernel of a module on the files of the kernel
modules it uses too (the live loop compiles in the books, the ITCH decoder, MoldUDP64's
header reader...). A no-op for Python kernels, or if numba's private cache API differs."""

import importlib
import os
import sys


def depends_on(module_name: str, *names: str) -> None:
    """Key the cached kernels of module ``module_name`` on its file and the files of the
    kernel modules ``names`` (obook._kernels.<name>)."""
    module = sys.modules[module_name]
    files = sorted({importlib.import_module(f"{__package__}.{n}").__file__ for n in names} | {module.__file__})
    stamp = tuple((os.path.basename(f), os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files)
    for value in list(vars(module).values()):
        cache = getattr(value, "_cache", None)
        cache_file = getattr(cache, "_cache_file", None)
        py_func = getattr(value, "py_func", None)
        if cache_file is None or getattr(py_func, "__module__", None) != module_name:
            continue
        if hasattr(cache_file, "_source_stamp"):
            cache_file._source_stamp = (cache_file._source_stamp, stamp)
