"""Ctrl-C pressed again during a clean-up: a user pressing it twice, the second landing as
the first file of the clean-up goes."""

from __future__ import annotations

import os
import signal
import threading


def tick():
    """A Python call: where a pending signal's handler runs."""


def ctrl_c() -> None:
    """SIGINT (Ctrl-C) to the main thread, its handler run before this returns. (``os.kill`` of
    the process may land on another thread, the handler running some bytecodes later: after
    the block under test, or after the test.)"""
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    tick()


def ctrl_c_at_first_unlink(monkeypatch) -> list:
    """From now on the first ``os.unlink`` sends this process SIGINT (Ctrl-C), lets its
    handler run, then removes the file; the list returned holds that file's path once it
    has (empty: nothing was removed)."""
    real_unlink, again = os.unlink, []

    def unlink(path, *args, **kwargs):
        if not again:
            again.append(path)
            ctrl_c()
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    return again


def ctrl_c_after_first_replace(monkeypatch) -> list:
    """From now on the first ``os.replace`` renames its file, then sends this process SIGINT
    (Ctrl-C) and lets its handler run; the list returned holds that rename's target once it
    has (empty: nothing was renamed)."""
    real_replace, renamed = os.replace, []

    def replace(src, dst, *args, **kwargs):
        moved = real_replace(src, dst, *args, **kwargs)
        if not renamed:
            renamed.append(dst)
            ctrl_c()
        return moved

    monkeypatch.setattr(os, "replace", replace)
    return renamed
