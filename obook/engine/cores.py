"""How many worker processes a run takes by default (cheap to import: no numba, no Arrow)."""

from __future__ import annotations

import os

#: a feed smaller than this many bytes on disk (one read block; a gzipped feed of that
#: size is a few blocks at most) is replayed by one process
SMALL_FEED = 1 << 20


def default_workers(path: str | None = None) -> int:
    """One per core, at most 8; 1 for a feed smaller than one block (``SMALL_FEED``): its
    records are one batch, so worker processes would only add their start-up (the rows do
    not depend on the worker count)."""
    if isinstance(path, (str, os.PathLike)):
        try:
            if os.path.getsize(path) < SMALL_FEED:
                return 1
        except OSError:
            pass
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
