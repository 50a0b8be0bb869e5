"""Where obook's kernel cache can be written, and seeding a fresh one from a read-only one.

The places, in order (``roots``): ``NUMBA_CACHE_DIR`` when it is set, else beside the
sources; the user's cache directory (``~/.cache/numba``); a private directory of the user's
in the system's temporary directory (``private_temp_root``), for an install nobody may
write to run by a user without a writable home. The first that takes a file is the cache.

A cache directory made fresh while the one beside the sources holds compiled kernels of the
same sources (``obook compile`` run by whoever installed obook, before the install was made
read-only) starts as a copy of it (``seed``): its kernels load instead of compiling again.
"""

import logging
import os
import shutil
import stat
import tempfile

log = logging.getLogger("obook")


def roots(configured: str, user_cache: str):
    """The cache roots to try, lazily: ``configured`` (``NUMBA_CACHE_DIR``) or None (beside
    the sources), ``user_cache``, then the private temporary root when it can be made."""
    yield configured or None
    yield user_cache
    private = private_temp_root()
    if private is not None:
        yield private


def private_temp_root() -> str | None:
    """``obook-kernels-<uid>`` in the temporary directory, made with mode 0700; None when it
    cannot be made, or is not a directory of this user's that only this user may write to
    (numba runs the machine code it finds in a cache)."""
    try:
        path = os.path.join(tempfile.gettempdir(), f"obook-kernels-{os.getuid()}")
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        log.warning("not caching compiled kernels in %s: another user owns it or may write to it", path)
        return None
    return path


def seed(source: str, target: str) -> bool:
    """Copy the cache files of ``source`` into ``target``, a directory that does not exist yet;
    True when copied. The copy is made beside ``target`` (under a name that is not a cache
    directory's) and renamed, so a process sees all of it or none; files numba was still
    writing (``*.tmp.*``) are left out."""
    parent = os.path.dirname(target)
    staging = os.path.join(parent, f".seed-{os.getpid()}-{os.path.basename(target)}")
    try:
        os.makedirs(parent, exist_ok=True)
        os.makedirs(staging)
        for entry in os.scandir(source):
            if entry.is_file() and ".tmp." not in entry.name:
                shutil.copyfile(entry.path, os.path.join(staging, entry.name))
        os.rename(staging, target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return False
    return True
