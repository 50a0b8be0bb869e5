"""Many days: one backtest per feed file, each in its own process (the strategy loaded
there from ``FILE.py:NAME``, so every day starts from a fresh strategy) or as a task on a
Dask cluster, the tables concatenated with a ``date`` column (the day's date when the
caller knows it, else the feed's session date, else its file name)."""

from __future__ import annotations

import pyarrow as pa

from ..errors import FeedError, ObookError


def day_name(path, format=None) -> str:
    """A day's name: the feed's session date (by the naming rule of ``format`` when given,
    else of the format told from the file), else its file name before the first dot (a day
    of several files: its first file's)."""
    from pathlib import Path

    from ..session import session_date

    if isinstance(path, (list, tuple)):
        path = path[0]
    try:
        d = session_date(path, fmt=format or None)
    except ObookError:
        d = None
    return d.isoformat() if d is not None else Path(path).name.split(".")[0]


def one_feed_a_day(feeds: list, format=None) -> list:
    """The feeds of a run of several files, one a day: the files of a format read as one
    feed from several files (a Shenzhen vendor day: an orders and a ticks file for each
    security) go together as their day's feed (a list), by their day (day_name); other
    files are a day each."""
    from ..feeds import resolve_format

    if len(feeds) < 2 or resolve_format(format, feeds[0]).merge is None:
        return list(feeds)
    days: dict[str, list] = {}
    for f in feeds:
        days.setdefault(day_name(f, format), []).append(f)
    return [files if len(files) > 1 else files[0] for files in days.values()]


def feed_text(feed) -> str:
    """A day's feed in a message: its file, or its files joined by '+'."""
    return "+".join(map(str, feed)) if isinstance(feed, (list, tuple)) else str(feed)


def _one(path, strategy: str, kwargs: dict, option_names: dict | None = None):
    """One day: (tables, summary, stats), or the ObookError that stopped it (returned, not
    raised, so the caller knows which day failed and keeps the days before it)."""
    from . import TABLES, BacktestResult, backtest_named
    from .arguments import load_backtest_strategy

    try:
        r = backtest_named(path, load_backtest_strategy(strategy), option_names, **kwargs)
    except ObookError as e:
        # what goes back to the caller's process must pickle: the partial result's tables made
        # now (not lazily)
        partial = getattr(e, "partial", None)
        if partial is not None:
            e.partial = BacktestResult({name: partial.table(name) for name in TABLES}, partial.summary, {})
        return e
    return {name: r.table(name) for name in r.names}, r.summary, r.stats


def _joined(names, got):
    """The days' results as one BacktestResult: each table with a ``date`` column first."""
    from . import BacktestResult

    tables = {}
    for name in got[0][0]:
        parts = []
        for day, (t, _, _) in zip(names, got):
            t = t[name]
            parts.append(t.add_column(0, "date", pa.array([day] * t.num_rows, pa.string())))
        tables[name] = pa.concat_tables(parts)
    return BacktestResult(tables, {d: s for d, (_, s, _) in zip(names, got)},
                          {d: st for d, (_, _, st) in zip(names, got)})


def _first_failure(names, feeds, got) -> None:
    """Raise the error of the first day (in the feeds' order) that failed, its ``partial``
    the days before it and that day's tables so far (``feed``: that day's file)."""
    for i, r in enumerate(got):
        if not isinstance(r, BaseException):
            continue
        r.feed = feeds[i]
        if not isinstance(r, FeedError) and r.args:     # (a FeedError names its file)
            r.args = (f"day {names[i]} ({feed_text(feeds[i])}): {r.args[0]}", *r.args[1:])
        partial = getattr(r, "partial", None)
        if partial is not None:
            mine = ({name: partial.table(name) for name in partial.names}, partial.summary, {})
            r.partial = _joined(names[:i + 1], list(got[:i]) + [mine])
        raise r


def check_executor(executor: str | None, name: str = "executor") -> str | None:
    """``local`` (or None) or ``dask://host:port``, the words in any case; as given, the
    words lower-case. An error names it by ``name``."""
    if executor is None:
        return None
    if isinstance(executor, str) and executor.lower() == "local":
        return "local"
    if isinstance(executor, str) and executor[:7].lower() == "dask://":
        return "dask://" + executor[7:]
    raise ObookError(f"{name} {executor!r}: local or dask://host:port")


def backtest_days(feeds, strategy: str, processes: int | None = None, dates=None, executor: str | None = None,
                  option_names: dict | None = None, **kwargs):
    """``obook.backtest`` over ``feeds`` (one process per day, ``processes`` at a time; or
    ``executor="dask://host:port"``: one task per day on that Dask cluster, ``processes`` in
    flight; a day's feed is a file, or a list of the files read as one feed: one_feed_a_day);
    ``strategy``: ``FILE.py:NAME`` or ``module:NAME``; ``dates``: the days' names
    (default: each feed's session date, else its file name). Returns a BacktestResult
    whose tables have a ``date`` column first and whose ``summary`` is ``{date: summary}``.
    When a day fails no later day starts, and its error is raised (the first in the feeds' order), with ``partial``:
    the days before it and its own tables up to the failure, in the same shape.
    ``option_names``: the interval's and the timer's names in errors, as for obook.backtest.backtest_named."""
    feeds = [[str(p) for p in f] if isinstance(f, (list, tuple)) else str(f) for f in feeds]
    if not feeds:
        raise ObookError("backtest: no feed files")
    if (processes or 1) > 1 and len(feeds) > 1:
        kwargs.setdefault("pipeline", False)     # the days side by side keep the cores busy
    names = [str(d) for d in dates] if dates is not None else [day_name(f, kwargs.get("format")) for f in feeds]
    if len(names) != len(feeds):
        raise ObookError(f"backtest: {len(names)} dates for {len(feeds)} feeds")
    if len(set(names)) < len(names):
        names = [f"{n}#{i}" for i, n in enumerate(names)]
    executor = check_executor(executor)
    if executor and executor.startswith("dask://"):
        got = _on_dask(executor[len("dask://"):], feeds, (strategy, kwargs, option_names), processes or len(feeds))
    else:
        from concurrent.futures import ProcessPoolExecutor

        from ..engine.workers import mp_context

        pool = ProcessPoolExecutor(max_workers=processes or 1, mp_context=mp_context())
        try:
            got = _on_pool(pool, feeds, (strategy, kwargs, option_names), processes or 1)
        except BaseException:
            _stop(pool)
            raise
        finally:
            pool.shutdown(wait=True)
    _first_failure(names, feeds, got)
    return _joined(names, got)


def _on_pool(pool, feeds, run: tuple, at_once: int) -> list:
    """Each day in a process of ``pool`` (``_one(feed, *run)``), ``at_once`` in flight, in the
    feeds' order; once a day fails no new one starts (those running finish: one before it
    in the feeds' order may fail too). Results in the feeds' order, None for a day not run."""
    from concurrent.futures import FIRST_COMPLETED, wait

    todo, running, got = list(enumerate(feeds)), {}, [None] * len(feeds)
    while todo or running:
        while todo and len(running) < at_once:
            i, feed = todo.pop(0)
            running[pool.submit(_one, feed, *run)] = i
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for fut in done:
            i = running.pop(fut)
            got[i] = fut.result()
            if isinstance(got[i], BaseException):
                todo.clear()
    return got


def _stop(pool) -> None:
    """End the day processes of ``pool`` now (a Ctrl-C, a SIGTERM, an error in this process): no
    queued day starts, and those running stop (SIGTERM, then SIGKILL after 2 s). Left to
    themselves they would run on: a day's process answers the Ctrl-C it got too by
    taking the next queued day, and the pool's shutdown waits for every day it has."""
    import time

    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        p.terminate()
    deadline = time.monotonic() + 2
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.exitcode is None:
            p.kill()
            p.join()


def _on_dask(address: str, feeds, run: tuple, at_once: int) -> list:
    """Each day a task on the Dask cluster at ``address`` (``_one(feed, *run)``), ``at_once`` in
    flight; results in the feeds' order."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ObookError("executor dask:// needs dask[distributed]: pip install 'obook[dask]'") from None
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as e:
        raise ObookError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    try:
        todo = list(enumerate(feeds))
        index, got = {}, [None] * len(feeds)

        def submit():
            i, feed = todo.pop(0)
            fut = client.submit(_one, feed, *run, pure=False)
            index[fut.key] = i
            return fut

        pending = as_completed([submit() for _ in range(min(at_once, len(todo)))])
        for fut in pending:
            i = index.pop(fut.key)
            got[i] = fut.result()
            fut.release()
            if isinstance(got[i], BaseException):
                todo.clear()        # a day failed: the days already running finish, no new one starts
            if todo:
                pending.add(submit())
        return got
    finally:
        client.close()
