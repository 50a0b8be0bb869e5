"""Synthetic feed generators (deterministic for a seed), used by tests and benchmarks."""

from __future__ import annotations

import gzip
from contextlib import contextmanager

@contextmanager
def open_output(path):
    """A generator's output file, open for writing bytes: gzipped when the name ends in .gz
    (level 1, no name or time in the gzip header), zstd-compressed when it ends in .zst;
    the same seed, the same bytes. A file object open for writing bytes is written plain
    (and left open)."""
    if hasattr(path, "write"):
        yield path
        return
    with open(path, "wb") as raw:
        if str(path).endswith(".gz"):
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) as f:
                yield f
        elif str(path).endswith(".zst"):
            try:
                from compression.zstd import ZstdFile
            except ImportError:         # before Python 3.14
                from backports.zstd import ZstdFile
            with ZstdFile(raw, "wb") as f:
                yield f
        else:
            yield raw
