"""The first run after an install (or an upgrade) compiles the numba kernels, which takes a
while: say so in one line instead of a silent pause."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

log = logging.getLogger("obook")

#: kernel modules every replay loads (the book and the merge; a format's own kernels are
#: compiled on the same first run)
_KERNELS = ("book", "merge")
#: obook._kernels.jit's switch (not imported from there: that would import numba first)
ENV, PYTHON = "OBOOK_KERNELS", "python"


def kernels_cached(kernels_dir: Path | None = None) -> bool:
    """True when numba's cache beside the kernels holds an index newer than each kernel
    module's source (numba's own check is finer; this one only decides the message)."""
    if kernels_dir is None:
        import importlib.util

        kernels_dir = Path(importlib.util.find_spec("obook._kernels").origin).parent
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    for name in _KERNELS:
        src = kernels_dir / f"{name}.py"
        index = list((kernels_dir / "__pycache__").glob(f"{name}.*.{tag}.nbi"))
        try:
            if not index or max(p.stat().st_mtime for p in index) < src.stat().st_mtime:
                return False
        except OSError:
            return False
    return True


def announce_first_compile() -> None:
    if os.environ.get(ENV, "").strip().lower() != PYTHON and not kernels_cached():
        log.warning("compiling the replay kernels (first run after installing obook; once, about a minute)")


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
