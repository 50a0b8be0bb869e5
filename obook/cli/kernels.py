"""Which kernels a command runs: the Python functions for tiny inputs, compiled otherwise.
(A first compile says so itself: ``obook._kernels.cached_load``.)"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger("obook")

#: obook._kernels.jit's switch (not imported from there: that would import numba first)
ENV, PYTHON = "OBOOK_KERNELS", "python"


#: inputs up to this many bytes (after decompression, estimated) run on the Python kernels:
#: below it importing numba and loading compiled kernels (~0.5 s) costs more than running
#: the kernels as Python (benchmarks/bench_startup.py)
PYTHON_KERNELS_BYTES = 64 * 1024
#: how much larger a compressed input is taken to be (gzip, zstd and zip magic numbers)
_COMPRESSED = ((b"\x1f\x8b", 8), (b"\x28\xb5\x2f\xfd", 8), (b"PK\x03\x04", 8))


def choose_kernels(args: list[str]) -> None:
    """Run the kernels as Python (``obook._kernels.jit``) in this process and its workers
    when the command's inputs are tiny: every argument naming an existing regular file
    adds its size, and the sum must be at most ``PYTHON_KERNELS_BYTES``. Nothing to read
    (stdin, sockets, captures by address), ``--latency``, an ``OBOOK_KERNELS`` already set,
    or kernels already imported: unchanged."""
    if ENV in os.environ or "obook._kernels" in sys.modules or "--latency" in args:
        return
    total = 0
    for arg in args:
        if arg == "-" or ":" in arg and not os.path.exists(arg):
            return                      # stdin or a capture line: size unknown
        try:
            if not os.path.isfile(arg):
                continue
            with open(arg, "rb") as f:
                head = f.read(4)
                size = os.fstat(f.fileno()).st_size
        except (OSError, ValueError):
            continue
        size *= next((factor for magic, factor in _COMPRESSED if head.startswith(magic)), 1)
        total += size
        if total > PYTHON_KERNELS_BYTES:
            return
    if total:
        os.environ[ENV] = PYTHON
        log.debug("tiny input (%d bytes): Python kernels", total)
