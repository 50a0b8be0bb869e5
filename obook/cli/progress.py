"""A progress bar on stderr, shown only when stderr is a terminal."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager


@contextmanager
def file_progress(path, label: str = "replaying", enabled: bool = True):
    """Yields a callback taking the bytes of ``path`` read so far and, when a new pass over
    the file starts, its label (or None when stderr is not a tty, or not ``enabled``)."""
    if not enabled or not sys.stderr.isatty() or not os.path.isfile(path):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(), console=Console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task(label, total=os.path.getsize(path))
        def update(done: int, phase: str | None = None) -> None:
            if phase is None:
                bar.update(task, completed=done)
            else:
                bar.update(task, completed=done, description=phase)
        yield update
