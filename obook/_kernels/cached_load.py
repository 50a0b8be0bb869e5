"""Where obook's compiled kernels are cached, how they are loaded, and when compiling is said.

**A cache that is never stale.** numba keys a cached kernel on its own source file only,
so editing a kernel file left the compiled code of the kernels in *other* files that call
it (or inline it) stale. obook's kernels are cached instead in a directory named after a
hash of every source file of ``obook/_kernels`` (``KernelCacheLocator``): any edit there
starts a fresh directory, and every kernel compiles again against the new code. Kernels
compiled elsewhere in obook (the generators') are keyed by the same hash and by their own
file, as numba does. ``NUMBA_CACHE_DIR`` still chooses the root when set; a read-only
install falls back to the user's cache directory, then to a private one in the temporary
directory (``cache_dirs``), starting as a copy of the compiled kernels beside the sources
when there are any (``obook compile`` run before the install was made read-only).

**Loading without numba's compiler registries.** numba's ``Cache.load_overload``
refreshes the target context before it loads a cached kernel, and the first refresh
imports numba's whole library of lowering registries (about 1 s of every ``obook``
command's start-up), none of it needed to run machine code that is already compiled. A
cached kernel needs only numba's runtime (NRT) for the kernels that allocate, so for
obook's own kernels this initialises NRT (for those not compiled with ``_nrt=False``) and
loads.

**Compiling says so.** A kernel missing from the cache is compiled by numba; the first
miss of each kernel module logs one warning on the ``obook`` logger naming what is
compiled and roughly how long it takes (``obook compile`` compiles them all at once).

Anything else keeps numba's behaviour: other packages' functions, and compiling (a cache
miss goes through numba's compiler, which refreshes the context itself). If numba's
private ``Cache`` API changes, nothing is patched and loading is numba's own.
"""

import hashlib
import logging
import os
import shutil

from numba.core import caching, config

from . import cache_dirs

log = logging.getLogger("obook")

#: the package whose functions the locator and the loader handle
_PACKAGE = __name__.split(".")[0] + "."
#: the directory of the kernel sources the cache key hashes
KERNELS_DIR = os.path.dirname(os.path.abspath(__file__))
#: cache directories of older sources kept beside the current one (switching branches back)
KEEP_OLD = 2

_hash: str | None = None


def kernels_hash(directory: str = KERNELS_DIR) -> str:
    """A hash of every ``.py`` file of ``directory`` (names and contents), 16 hex digits."""
    h = hashlib.sha256()
    for name in sorted(os.listdir(directory)):
        if name.endswith(".py"):
            h.update(name.encode() + b"\0")
            with open(os.path.join(directory, name), "rb") as f:
                h.update(f.read())
            h.update(b"\0")
    return h.hexdigest()[:16]


def _current_hash() -> str:
    global _hash
    if _hash is None:
        _hash = kernels_hash()
    return _hash


def cache_dir_name() -> str:
    """The name of the cache directory of the current kernel sources."""
    return f"kernels-{_current_hash()}"


def _prune(parent: str, current: str) -> None:
    """Remove all but the ``KEEP_OLD`` newest other ``kernels-*`` directories of ``parent``."""
    try:
        old = [e for e in os.scandir(parent) if e.name.startswith("kernels-") and e.name != current
               and e.is_dir()]
    except OSError:
        return
    old.sort(key=lambda e: e.stat().st_mtime, reverse=True)
    for entry in old[KEEP_OLD:]:
        shutil.rmtree(entry.path, ignore_errors=True)


class KernelCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's in-tree locator, with the cache in ``__pycache__/kernels-<hash of obook/_kernels>``
    (under ``NUMBA_CACHE_DIR`` when set; under the user's cache directory, or a private
    temporary one, when the package's own directory is read-only: ``cache_dirs.roots``)."""

    def __init__(self, py_func, py_file, root: str | None = None):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        beside = os.path.join(os.path.dirname(os.path.abspath(py_file)), "__pycache__", cache_dir_name())
        if root is None:
            self._cache_path, self._seed = beside, None
        else:       # elsewhere: a fresh cache starts as a copy of the one beside the sources
            parent = os.path.join(root, self.get_suitable_cache_subpath(py_file))
            self._cache_path, self._seed = os.path.join(parent, cache_dir_name()), beside
        self._parent = os.path.dirname(self._cache_path)

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        fresh = not os.path.isdir(self._cache_path)
        if fresh and self._seed and os.path.isdir(self._seed) and cache_dirs.seed(self._seed, self._cache_path):
            log.info("compiled kernels copied from %s to %s", self._seed, self._cache_path)
        super().ensure_cache_path()
        if fresh:
            _prune(self._parent, os.path.basename(self._cache_path))

    @classmethod
    def from_function(cls, py_func, py_file):
        if not (getattr(py_func, "__module__", "") or "").startswith(_PACKAGE) or not os.path.exists(py_file):
            return None
        user_cache = caching.AppDirs(appname="numba", appauthor=False).user_cache_dir
        for root in cache_dirs.roots(config.CACHE_DIR, user_cache):
            self = cls(py_func, py_file, root)
            try:
                self.ensure_cache_path()
            except OSError:
                continue
            return self
        return None


#: what each kernel module (or its name's prefix) compiles for, and roughly how long that
#: takes on two idle cores
_WHAT = dict((
    ("book", ("the order book", 40)), ("replay", ("the order book", 40)), ("price_cage", ("the order book", 40)),
    ("merge", ("the order book", 40)), ("itch", ("Nasdaq ITCH", 10)),
    ("csv_decode", ("the CSV feed", 15)), ("dbn", ("Databento", 15)), ("l2_sse", ("Shanghai Level-2", 20)),
    ("l2_szse", ("Shenzhen Level-2", 40)), ("l2_text", ("Level-2 text logs", 10)), ("mold", ("MoldUDP64 lines", 15)),
    ("pcap", ("packet captures", 10)), ("match_gen", ("the order generator", 10)), ("match", ("the matching engine", 45)),
    ("simulate", ("the own-order simulation", 75)), ("parquet_pages", ("the Parquet depth writer", 10)),
    ("latency", ("latency counters", 10)), ("live", ("the live loop", 120)), ("backtest", ("the backtest", 60)),
    ("equity", ("the backtest", 60)), ("prefault", ("the backtest", 60)),
    ("l2_queue", ("the L2 queue model", 10)), ("hashtab", ("the hash tables", 10)), ("pitch", ("Cboe PITCH", 10)),
    ("gen.", ("the feed generators", 15)),
))   # keyed by kernel module (a name or a prefix of one), not by format
_announced: set = set()
#: True in ``obook compile`` (obook.compiling), whose own lines say what is compiling: the
#: first-use message then leaves out the hint to run it
AHEAD = False


def what_compiles(module: str) -> tuple[str, int]:
    """What the kernels of ``module`` (a name under ``obook``) compile for, and about how many
    seconds (``_WHAT``; a module it does not name: its own name, 10 s)."""
    module = module.split(".", 1)[-1].removeprefix("_kernels.")
    key = next((k for k in _WHAT if module == k), None) or next((k for k in _WHAT if module.startswith(k)), module)
    return _WHAT.get(key, (module, 10))


def _announce_compile(py_func) -> None:
    """One warning per kind of kernel (``_WHAT``) the first time one of them compiles."""
    what, seconds = what_compiles(py_func.__module__)
    if what in _announced:
        return
    _announced.add(what)
    if AHEAD:
        log.warning("compiling the kernels of %s (about %d s)", what, seconds)
        return
    log.warning("compiling the kernels of %s (once after installing or changing obook; about %d s; "
                "'obook compile' compiles them all ahead)", what, seconds)


_numba_load_overload = caching.Cache.load_overload


def _load_overload(self, sig, target_context):
    py_func = getattr(self, "_py_func", None)
    module = getattr(py_func, "__module__", "") or ""
    if not module.startswith(_PACKAGE):
        return _numba_load_overload(self, sig, target_context)
    from .jit import NRT_FREE       # here: jit imports this module to install it

    if py_func not in NRT_FREE:     # a kernel that allocates: NRT first (compiled at each start)
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        loaded = self._load_overload(sig, target_context)
    if loaded is None:
        _announce_compile(py_func)
    return loaded


def install() -> bool:
    """Cache obook's kernels by ``KernelCacheLocator`` and route their cached loads through
    ``_load_overload``; False when numba's API differs (numba's own caching then)."""
    cache = caching.Cache
    needed = ("_load_overload", "_guard_against_spurious_io_errors")
    if not all(hasattr(cache, name) for name in needed) or not hasattr(caching, "CacheImpl"):
        return False
    if KernelCacheLocator not in caching.CacheImpl._locator_classes:
        caching.CacheImpl._locator_classes.insert(0, KernelCacheLocator)
    cache.load_overload = _load_overload
    return True
