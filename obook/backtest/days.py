"""Many days: one backtest per feed file, each in its own process (the strategy loaded
there from ``FILE.py:NAME``, so every day starts from a fresh strategy), the tables
concatenated with a ``date`` column (the feed's session date, else its file name)."""

from __future__ import annotations

import pyarrow as pa

from ..errors import ObookError


def _day_name(path: str) -> str:
    from pathlib import Path

    from ..session import session_date

    try:
        d = session_date(path)
    except ObookError:
        d = None
    return d.isoformat() if d is not None else Path(path).name.split(".")[0]


def _one(path: str, strategy: str, kwargs: dict):
    from ..live.cli_run import load_strategy
    from . import backtest

    r = backtest(path, load_strategy(strategy), **kwargs)
    return r._tables, r.summary, r.stats


def backtest_days(feeds, strategy: str, processes: int | None = None, **kwargs):
    """``obook.backtest`` over ``feeds`` (one process per day, ``processes`` at a time);
    ``strategy``: ``FILE.py:NAME`` or ``module:NAME``. Returns a BacktestResult whose tables
    have a ``date`` column first and whose ``summary`` is ``{date: summary}``."""
    from concurrent.futures import ProcessPoolExecutor

    from ..engine.workers import mp_context
    from . import BacktestResult

    feeds = [str(f) for f in feeds]
    if not feeds:
        raise ObookError("backtest: no feed files")
    names = [_day_name(f) for f in feeds]
    if len(set(names)) < len(names):
        names = [f"{n}#{i}" for i, n in enumerate(names)]
    with ProcessPoolExecutor(max_workers=processes or 1, mp_context=mp_context()) as pool:
        got = list(pool.map(_one, feeds, [strategy] * len(feeds), [kwargs] * len(feeds)))
    tables = {}
    for name in got[0][0]:
        parts = []
        for day, (t, _, _) in zip(names, got):
            t = t[name]
            parts.append(t.add_column(0, "date", pa.array([day] * t.num_rows, pa.string())))
        tables[name] = pa.concat_tables(parts)
    return BacktestResult(tables, {d: s for d, (_, s, _) in zip(names, got)},
                          {d: st for d, (_, _, st) in zip(names, got)})
