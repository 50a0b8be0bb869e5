"""Shared by the examples: the feed path from argv, or a small generated ITCH day."""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path


def feed_path(default_messages: int = 200_000) -> Path:
    """``sys.argv[1]`` if given, else a synthetic ITCH feed in a temp dir removed at exit."""
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    from obook.gen.itch import write_itch

    folder = tempfile.mkdtemp(prefix="obook-example-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = Path(folder) / "sample.itch"
    write_itch(str(path), default_messages, 20, 1)
    print(f"generated {default_messages:,} ITCH messages in {path}", file=sys.stderr)
    return path
