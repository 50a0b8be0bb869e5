"""Temporary files beside an output, renamed into place when the output is complete.

``temp_path(final)`` names ``.<name>.<pid>.tmp`` in the final file's directory (a digest of
the name instead of ``<name>`` when that would make a name too long; a writer
that must keep the final name, as ``obook gen`` does to tell the compression by it, makes a
folder of that name and writes ``<name>`` in it). A writer removes its temp file on any
failure; a writer killed outright (SIGKILL, the OOM killer, a power cut) cannot, so
``temp_path`` first removes the temp files (and such folders) of the same final name whose
process no longer runs: none outlives the next write to the same place.
"""

from __future__ import annotations

import hashlib
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


#: the most bytes of a file name (NAME_MAX of Linux, macOS and Windows' file systems)
NAME_MAX = 255


def _stem(name: str) -> str:
    """What a temp name of ``name`` starts with: the name itself, or, when the temp name would
    pass NAME_MAX (a final name of 240 bytes or more), a digest of it."""
    if len(os.fsencode(f".{name}.{2**22}.tmp")) <= NAME_MAX:
        return name
    return hashlib.sha256(os.fsencode(name)).hexdigest()[:32]


def temp_path(final: Path) -> Path:
    """``.<name>.<pid>.tmp`` beside ``final`` (for a name too long for that, a digest of it
    instead of ``<name>``), after removing those of dead processes."""
    final = Path(final)
    stem = _stem(final.name)
    pattern = re.compile(rf"\.{re.escape(stem)}\.(\d+)\.tmp")
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
    return final.with_name(f".{stem}.{os.getpid()}.tmp")
