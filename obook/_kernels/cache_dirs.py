"""Where obook's kernel cache can be written.

The places, in order (``roots``): ``NUMBA_CACHE_DIR`` when it is set, else beside the
sources; the user's cache directory (``~/.cache/numba``); a private directory of the user's
in the system's temporary directory (``private_temp_root``), for an install nobody may
write to run by a user without a writable home. The first that takes a file is the cache.
"""

import logging
import os
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

