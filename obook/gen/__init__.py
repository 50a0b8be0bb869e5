"""Synthetic feed generators (deterministic for a seed), used by tests and benchmarks."""

from __future__ import annotations

import gzip
from contextlib import contextmanager

@contextmanager
def open_output(path):
    """A generator's output file, open for writing bytes: gzipped when the name ends in .gz
    (level 1, no name or time in the gzip header: the same seed, the same bytes)."""
    with open(path, "wb") as raw:
        if not str(path).endswith(".gz"):
            yield raw
            return
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) as f:
            yield f
