"""A progress bar on stderr, shown only when stderr is a terminal."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager


@contextmanager
def file_progress(path, label: str = "replaying", enabled: bool = True):
    """Yields a callback taking the bytes of ``path`` (a file, or a list of files read as one
    feed: their total) read so far and, when a new pass over the feed starts, its label (or
    None when stderr is not a tty, or not ``enabled``, or a path is no regular file)."""
    paths = list(path) if isinstance(path, (list, tuple)) else [path]
    if not enabled or not sys.stderr.isatty() or not paths or not all(os.path.isfile(p) for p in paths):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(), console=Console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task(label, total=sum(os.path.getsize(p) for p in paths))
        def update(done: int, phase: str | None = None) -> None:
            if phase is None:
                bar.update(task, completed=done)
            else:
                bar.update(task, completed=done, description=phase)
        yield update


@contextmanager
def days_progress():
    """Yields ``(say, days_done)`` for a pipeline run: ``say(text)`` prints a line on stderr
    (above the bar), ``days_done(finished, total)`` moves a bar of days (on a tty only)."""
    import typer

    if not sys.stderr.isatty():
        yield (lambda msg: typer.echo(msg, err=True)), None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task("days", total=None)

        def days_done(finished: int, total: int) -> None:
            bar.update(task, completed=finished, total=total)
        yield (lambda msg: bar.console.print(msg, markup=False, highlight=False)), days_done


@contextmanager
def rows_progress(label: str = "rows"):
    """Yields a callback ``rows(n)`` counting the rows written so far, shown with the elapsed
    time on stderr when it is a tty (a query's rows: their total is not known ahead)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.completed:,} " + label), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda n: bar.update(task, completed=n)
