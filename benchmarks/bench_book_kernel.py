"""The book kernel alone, old against new, in one process (alternating): an ITCH BBO
replay in this process (1 worker) whose book kernel is timed call by call.

    python benchmarks/bench_book_kernel.py --baseline /tmp/old_checkout --messages 2000000

The baseline's ``obook`` is imported, from a copy, as a second package (``obook_baseline``); its
kernel gets the arguments it knows: the named structures (books, rules, tables) spread into
its positional arrays when it takes them one by one (``apply_events``), without the
price-cage arrays when it predates them. Reports the medians of the time spent inside
the kernel calls and of the whole replay.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day, median  # noqa: E402


def _baseline(checkout: str):
    """The checkout's obook imported as ``obook_baseline``, from a copy of it (numba's
    cache files name the module: the checkout's own caches stay loadable as ``obook``)."""
    src = Path(checkout).resolve() / "obook"
    tag = hashlib.md5(str(src).encode()).hexdigest()[:12]
    copy = Path(tempfile.gettempdir()) / f"obook_baseline_{tag}" / "obook_baseline"
    if not copy.exists():
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
    spec = importlib.util.spec_from_file_location(
        "obook_baseline", copy / "__init__.py", submodule_search_locations=[str(copy)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["obook_baseline"] = mod
    spec.loader.exec_module(mod)
    from obook_baseline._kernels import book
    if not hasattr(book, "apply_events"):       # the driver moved beside the book
        from obook_baseline._kernels import replay
        return replay.replay_events if hasattr(replay, "replay_events") else replay.apply_events
    return book.apply_events


def _positional(a, with_cage):
    """(ev, n, i, rows, nrow, skips, strict, books, rules, tables) as an older kernel takes
    them: (..., the book arrays but st, dstate[, cage, held], st, want, trades, ...)."""
    head, books, rules, tables = a[:7], a[7], a[8], a[9]
    return head + tuple(books[:-1]) + (tuple(rules) if with_cage else (rules[0],)) + (books[-1],) + tuple(tables)


def _timed(kernel, acc, form):
    def run(*a):
        if form:                      # "cage" / "no cage": an older kernel's positional arrays
            a = _positional(a, form == "cage")
        t = time.perf_counter()
        r = kernel(*a)
        acc[0] += time.perf_counter() - t
        return r
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--stocks", type=int, default=8000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--baseline", required=True, help="a checkout whose book kernel to run too")
    args = ap.parse_args()
    from obook._kernels.replay import replay_events
    from obook.engine.replay import Replay

    path = itch_day(args.messages, args.stocks)
    old = _baseline(args.baseline)
    res = {"new": ([], []), "old": ([], [])}
    for rep in range(args.repeats + 1):
        # a baseline taking its arrays one by one; before the price cage, two fewer
        argc = old.py_func.__code__.co_argcount
        form = None if argc == replay_events.py_func.__code__.co_argcount else "cage" if argc == 37 else "no cage"
        for name, kernel, drop in (("new", replay_events, None), ("old", old, form)):
            acc = [0.0]
            t = time.perf_counter()
            rows = sum(b.num_rows for b in Replay(path, workers=1, book_kernel=_timed(kernel, acc, drop))
                       .reader())
            wall = time.perf_counter() - t
            if rep:                   # the first round compiles / loads the caches
                res[name][0].append(acc[0])
                res[name][1].append(wall)
            print(f"  round {rep}: {name} kernel {acc[0]:.3f}s replay {wall:.3f}s rows {rows:,}")
    for name, (k, w) in res.items():
        print(f"{name}: kernel median {median(k):.3f}s ({median(k) / args.messages * 1e9:.0f} ns/msg), "
              f"replay median {median(w):.3f}s")
    print(f"new/old kernel: {median(res['new'][0]) / median(res['old'][0]):.3f}")


if __name__ == "__main__":
    main()
