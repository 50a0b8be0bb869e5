"""Temporary files beside an output, renamed into place when the output is complete.

``temp_path(final)`` names ``.<name>.<pid>.tmp`` in the final file's directory (a writer
that must keep the final name, as ``obook gen`` does to tell the compression by it, makes a
folder of that name and writes ``<name>`` in it). A writer removes its temp file on any
failure; a writer killed outright (SIGKILL, the OOM killer, a power cut) cannot, so
``temp_path`` first removes the temp files (and such folders) of the same final name whose
process no longer runs: none outlives the next write to the same place.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .interrupts import deferred

__all__ = ["temp_path", "remove_quietly", "remove_dir_quietly"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # another user's process
        return True
    return True


def remove_quietly(path) -> None:
    """Remove a temp file during cleanup; a failure (read-only file system, gone already)
    must not hide the error being handled, and a Ctrl-C that comes meanwhile is raised once
    the file is gone."""
    with deferred():
        try:
            os.unlink(path)
        except OSError:
            pass


def remove_dir_quietly(path) -> None:
    """Remove an empty temp folder during cleanup, as :func:`remove_quietly` a file (a folder
    that is not empty stays)."""
    with deferred():
        try:
            os.rmdir(path)
        except OSError:
            pass


def temp_path(final: Path) -> Path:
    """``.<name>.<pid>.tmp`` beside ``final``, after removing those of dead processes."""
    final = Path(final)
    pattern = re.compile(rf"\.{re.escape(final.name)}\.(\d+)\.tmp")
    try:
        names = os.listdir(final.parent)
    except OSError:             # no directory: the write itself will say so
        names = []
    for name in names:
        m = pattern.fullmatch(name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            stale = final.parent / name
            if stale.is_dir() and not stale.is_symlink():
                remove_quietly(stale / final.name)
                remove_dir_quietly(stale)
            else:
                remove_quietly(stale)
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")
