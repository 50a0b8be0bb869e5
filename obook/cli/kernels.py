"""The first run after an install (or an upgrade) compiles the numba kernels, which takes a
while: say so in one line instead of a silent pause."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

log = logging.getLogger("obook")

#: kernel modules every replay loads (the book and the merge; a format's own kernels are
#: compiled on the same first run)
_KERNELS = ("book", "merge")


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
    if not kernels_cached():
        log.warning("compiling the replay kernels (first run after installing obook; once, about a minute)")
