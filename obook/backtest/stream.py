"""A backtest's tables as Arrow batches made while it runs: what the front ends (DuckDB's
``obook_backtest`` macros, polars' ``scan_backtest``) read, so that a ``LIMIT`` or a
``head()`` stops the backtest once it has its rows.

The orders, events and fills are written as the day goes and never changed once written:
after each batch of the feed the rows made since the last hand-over are converted and
handed over. Positions and equity need the whole day (a position is the day's last; the
equity's cash and fees add up every fill before its row), so their reader runs the
backtest to its end first.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._kernels.backtest_layout import X_REF
from .._kernels.simulate_layout import I_ACT, I_KEY
from ..errors import FeedError, ObookError, StrategyError

#: the tables handed over while the backtest runs
STREAMED = ("orders", "events", "fills")
#: rows of a hand-over: the first as soon as there is a row, then eight times as many each
#: time up to ``MOST_ROWS`` (a LIMIT is answered early, a whole table in few batches)
MOST_ROWS = 1 << 16


def backtest_reader(feed, strategy, table: str = "fills", **options) -> pa.RecordBatchReader:
    """One table of ``obook.backtest(feed, strategy, **options)`` as a reader: the rows and
    schema (its units metadata too) of that table. Orders, events and fills come in batches
    made while the backtest runs, so a reader left unread stops it there (its replay and
    worker process, if any, end when the reader is closed); positions and equity are made at
    the end of the day, and an L2 input's tables are made whole. A strategy's error or a
    bad feed record raises once the rows made before it are read. The options are checked
    here, as ``obook.backtest`` checks them; nothing runs until the first batch is read."""
    from . import TABLES, bound_arguments, prepared
    from .columns import schema

    if not isinstance(table, str) or table not in TABLES:
        raise ObookError(f"table must be one of {', '.join(TABLES)}, not {table!r}")
    try:
        given = bound_arguments(feed, strategy, options)
    except TypeError as e:
        raise TypeError(f"backtest_reader: {e}") from None
    run = prepared(given)
    made = _whole(run, table) if run.done is not None or table not in STREAMED else _batches(run, table)
    return pa.RecordBatchReader.from_batches(schema(table, run.fmt), made)


def _whole(run, table: str):
    """The batches of ``table`` of ``run`` made whole, at the first read."""
    yield from run.finished().table(table).to_batches()


def _batches(run, table: str):
    """The batches of ``table`` as ``run`` (obook.backtest.Run) goes."""
    cut, most = 0, 1
    steps = run.steps()
    try:
        try:
            for worker in steps:
                rows = worker.rows() if worker is not None else None
                if rows is not None and len(rows[table]) - cut >= most:
                    yield from _converted(run, table, rows, cut)
                    cut, most = len(rows[table]), min(8 * most, MOST_ROWS)
        except (StrategyError, FeedError):
            if run.obs.last is not None:        # the rows made before the failure, then the error
                yield from _converted(run, table, run.obs.last.rows(), cut)
            raise
    finally:
        steps.close()           # a reader closed early: the replay (and its worker process) ends here
    yield from _converted(run, table, run.rows, cut)


def _converted(run, table: str, rows: dict, cut: int):
    """The batches of ``table``'s rows from row ``cut`` on of a worker's ``rows``."""
    from .columns import Rows, table as make, with_units
    from .tables import fee_of, key_refs

    fees, *_, fmt = run.build_args
    names, ins = rows["names"], rows["orders"]
    part = rows[table][cut:]
    if not len(part):
        return
    if table == "orders":
        r = Rows(names, ins=part)
    else:
        refs = key_refs(*np.take(ins, [I_ACT, I_KEY, X_REF], axis=1).T)
        r = Rows(names, ins=ins, ev=part, refs=refs) if table == "events" else \
            Rows(names, fl=part, refs=refs, fee=fee_of(fees, part))
    yield from with_units(make(table, r), table, fmt).to_batches()
