"""A progress bar on stderr, shown only when stderr is a terminal."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager


@contextmanager
def file_progress(path, label: str = "replaying"):
    """Yields a callback taking the bytes of ``path`` read so far (or None when not a tty)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(), console=Console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task(label, total=os.path.getsize(path))
        yield lambda done: bar.update(task, completed=done)
