"""The matching engine: order entry in, fills / events / bbo / depth out.

    >>> r = obook.match("orders.csv", workers=2)
    >>> r.fills            # pyarrow.Table
    >>> r.reader("events") # pyarrow.RecordBatchReader
    >>> obook.matching.match_reader("orders.csv", "fills")   # batches while it runs

Price-time priority, one book per instrument. New orders: limit or market; GTC and DAY
rest what is left (DAY expires at the end of the input, the session's end), IOC drops
it, FOK is turned away whole unless the book can fill it; a market order never rests.
A modify that only lowers the quantity at the same price keeps its place; any other
modify is a cancel and replace under the same id, which may trade and rests at the back,
keeping its time in force. ``stp``: self-trade prevention between orders of the same
``owner`` ("cancel_resting" or "cancel_incoming").
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..checks import check_date, check_flag, check_levels, check_names, check_orders_path, check_workers, is_integer
from ..errors import ObookError
from .books import TABLES, stp_code, want_bits

__all__ = ["match", "match_reader", "table_reader", "MatchResult"]


class MatchResult:
    """The tables of one run: ``fills``, ``events``, ``bbo``, ``depth`` (those asked for)."""

    def __init__(self, tables: dict, levels: int, stats: dict):
        self._tables = tables
        self.levels = levels
        self.stats = stats

    def __getattr__(self, name):
        if name in TABLES:
            try:
                return self._tables[name]
            except KeyError:
                raise ObookError(f"table {name!r} was not asked of this match") from None
        raise AttributeError(name)

    def table(self, name: str) -> pa.Table:
        if name not in TABLES:
            raise ObookError(f"unknown table {name!r}; choose from {', '.join(TABLES)}")
        return getattr(self, name)

    def reader(self, name: str = "fills") -> pa.RecordBatchReader:
        t = self.table(name)
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())


def _tick(tick) -> int:
    """The tick as an integer: a fraction (or what is no number) is an error, never truncated."""
    if not is_integer(tick) or int(tick) < 1:
        raise ObookError(f"tick must be a positive integer, not {tick!r}")
    if int(tick) > np.iinfo(np.int64).max:      # prices are 64-bit integers
        raise ObookError(f"tick must be at most 2**63 - 1 (prices are 64-bit integers), not {tick!r}")
    return int(tick)


def _checked(tables, levels: int) -> int:
    check_levels(levels)
    return want_bits(tables)


def _instruments(instruments):
    """The known instruments: None (all), a comma-separated text or a collection of texts."""
    if instruments is None:
        return None
    given = instruments
    if isinstance(instruments, str):
        instruments = [i.strip() for i in instruments.split(",") if i.strip()]
    names = check_names("instruments", instruments)
    if not any(n.strip() for n in names):       # every row would be rejected: a mistake, not a choice
        # (a blank name is none: a row without an instrument cannot be read)
        shown = list(given) if isinstance(given, tuple) else given      # (SQL's [] comes as ())
        raise ObookError(f"instruments {shown!r} names no instrument; give at least one, or None for all")
    return names


#: the zone whose midnight ``date`` places an order entry's ns times in
TIMEZONE = "America/New_York"


def match(orders, *, workers: int | None = 1, tick: int = 1, stp: str | None = None, instruments=None,
          tables=TABLES, levels: int = 10, day_end: bool = True, date=None) -> MatchResult:
    """Match order-entry instructions (see :mod:`obook.feeds.orders` for the columns).

    ``orders``: a CSV / Parquet / Arrow IPC path, or an Arrow, polars or DuckDB table.
    ``workers``: processes the instruments are sharded over (same output for any number;
    None: one per core, at most 8). ``tick``: prices must be multiples of it.
    ``instruments``: the known instruments (others are rejected); default all in the input.
    ``tables``: which of fills, events, bbo, depth to make; ``levels``: depth levels a side.
    ``day_end``: DAY orders expire after the last instruction (``seq`` = rows + 1).
    ``date``: the session date (YYYY-MM-DD): ``time`` is then ns since midnight New York and
    every table gets ``timestamp`` (UTC) after it.

    A row that cannot be read is a FeedError naming it, whose ``partial`` (a MatchResult)
    holds the tables of the rows before it, without the end of the day (no expiry).
    """
    from ..errors import FeedError
    from ..feeds.orders import read_orders

    run = checked_options(workers=workers, tick=tick, stp=stp, instruments=instruments, tables=tables,
                          levels=levels, day_end=day_end, date=date)
    day_end = run.pop("day_end")
    check_orders_path(orders)
    try:
        o = read_orders(orders)
    except FeedError as e:      # the tables of the rows before the one that cannot be read
        if getattr(e, "orders_before", None) is not None:
            e.partial = _run(e.orders_before, day_end=False, **run)
        raise
    return _run(o, day_end=day_end, **run)


def checked_options(*, workers: int | None = 1, tick: int = 1, stp: str | None = None, instruments=None,
                    tables=TABLES, levels: int = 10, day_end: bool = True, date=None) -> dict:
    """:func:`match`'s options checked (an ``ObookError`` naming the first wrong one), as its
    run takes them; the front ends check theirs with it before the run."""
    tables = check_names("tables", tables)
    want = _checked(tables, levels)
    workers = check_workers(workers)
    if workers is None:
        from ..engine.cores import default_workers
        workers = default_workers()
    day_end = check_flag("day_end", day_end)
    check_date(date)
    return dict(tick=_tick(tick), instruments=_instruments(instruments), workers=int(workers), want=want,
                stp=stp_code(stp), levels=levels, tables=tables, date=date, day_end=day_end)


def schema_of(table: str, levels: int = 10, date=None) -> pa.Schema:
    """The schema of one of :func:`match`'s tables (with ``timestamp`` when ``date`` is given)."""
    from .tables import schema_of as plain

    schema = plain(table, levels)
    return schema if date is None else _stamp(date).schema(schema)


def _run(o, *, tick: int, instruments, workers: int, want: int, stp: int, levels: int, tables: tuple, date,
         day_end: bool) -> MatchResult:
    """The tables of the instructions ``o`` (read and checked)."""
    from .prepare import plan
    from .shards import run_shards

    _check_times(o, date)
    prep = plan(o, tick, instruments)       # each book's rows made a chunk at a time as it gets to them
    parts = run_shards(prep, workers, want=want, stp=stp, levels=levels, day_end=day_end)
    out = _tables(prep, parts, tables, levels)
    if date is not None:
        out = {t: _stamped(table, date) for t, table in out.items()}
    stats = {"instructions": prep.n_rows, "instruments": len(prep.instruments),
             **{f"{t}_rows": out[t].num_rows for t in tables}}
    return MatchResult(out, levels, stats)


def _tables(prep, parts: list, tables: tuple, levels: int) -> dict:
    """The Arrow tables of the workers' rows: each merged and converted on its own thread
    (numpy and Arrow work without the GIL), the largest first."""
    from .shards import merge_table
    from .tables import Converter

    conv = Converter(prep, levels)

    def make(t):
        blocks = [conv.table(t, rows) for rows in merge_table(parts, t)]
        return blocks[0] if len(blocks) == 1 else pa.concat_tables(blocks)

    size = {t: sum(c.size for p in parts for c in p[t]) for t in tables}
    if len(tables) == 1 or sum(size.values()) < 1 << 20:
        return {t: make(t) for t in tables}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(len(tables), 2), thread_name_prefix="obook-match") as pool:
        futures = {t: pool.submit(make, t) for t in sorted(tables, key=size.get, reverse=True)}
        return {t: futures[t].result() for t in tables}


def _stamped(table: pa.Table, date) -> pa.Table:
    """``table`` with ``timestamp`` (session midnight in New York + ``time`` ns, UTC)."""
    stamp = _stamp(date)
    return pa.Table.from_batches([stamp.batch(b) for b in table.to_batches()], stamp.schema(table.schema))


def _check_times(o, date) -> None:
    """An ObookError naming the first row whose time no ns ``timestamp`` holds with the
    session ``date``, before the book runs (every table's times are the rows')."""
    if date is None:
        return
    from ..session import first_out_of_range

    bad = first_out_of_range(pa.array(o.time), _stamp(date).base_ns, 1)
    if bad >= 0:
        raise ObookError(f"{o.name}: row {bad + 1}: time {int(o.time[bad])} gives an instant beyond 1677-2262 "
                         f"with the session date {date}, what ns timestamps hold")


def _stamp(date):
    """The :class:`obook.session.Stamp` of a session ``date`` (ns since midnight New York)."""
    from ..session import Stamp, midnight_ns, session_date

    return Stamp(midnight_ns(session_date(None, date), TIMEZONE), 1, TIMEZONE)


def match_reader(orders, table: str = "fills", *, tick: int = 1, stp: str | None = None, instruments=None,
                 levels: int = 10, day_end: bool = True, date=None) -> pa.RecordBatchReader:
    """One table of :func:`match` as Arrow batches made while the book runs: each batch is
    converted and handed over as soon as the kernels flush their buffers (about 65,536 rows),
    so the output is never held whole, and a reader left unread stops the run there. One
    process (the rows and schema of ``match(workers=1)``, in the same order); the input is
    read whole and passed over once first (each book's price band and order keys), then
    its instructions are made a chunk at a time as the book gets to them, so a reader let
    go early makes no more of them. The options are :func:`match`'s (but ``workers``
    and ``tables``), checked as it checks them. A row that cannot be read: the batches of
    the rows before it (those of ``match``'s ``partial``), then its FeedError.
    """
    return table_reader(orders, table, workers=1, tick=tick, stp=stp, instruments=instruments, levels=levels,
                        day_end=day_end, date=date)


def table_reader(orders, table: str = "fills", **options) -> pa.RecordBatchReader:
    """One table of ``match(orders, **options)`` (its keywords but ``tables``) as a reader
    whose batches are made as the book runs: with one worker :func:`match_reader`'s, with
    more each worker's rows merged in input order as soon as they are final (a reader left
    unread stops the workers). A row that cannot be read: the batches of the rows before
    it (``match``'s ``partial``), then its FeedError. The front ends open their tables
    with it."""
    if not isinstance(table, str):
        raise ObookError(f"table must be the name of one table ({', '.join(TABLES)}), not {table!r}")
    run = checked_options(tables=(table,), **options)
    check_orders_path(orders)
    from ..errors import FeedError
    from ..feeds.orders import read_orders

    try:
        o, then = read_orders(orders), None
    except FeedError as e:      # the tables of the rows before the one that cannot be read, as match's partial
        if getattr(e, "orders_before", None) is None:
            raise
        o, then, run = e.orders_before, e, dict(run, day_end=False)
    return _streamed(o, table, run, then)


def _streamed(o, table: str, run: dict, then: Exception | None = None) -> pa.RecordBatchReader:
    """The reader of ``table`` over the instructions ``o``, the book run as it is read
    (``then``: raised after the last batch)."""
    from contextlib import closing

    from .prepare import plan
    from .tables import Converter

    _check_times(o, run["date"])
    workers = max(1, min(run["workers"], len(o.instruments)))
    # the rows are made a chunk at a time as the book (each worker its books') gets to them,
    # so a reader let go early makes no more of them
    prep = plan(o, run["tick"], run["instruments"])
    levels, date = run["levels"], run["date"]
    conv = Converter(prep, levels)
    stamp = None if date is None else _stamp(date)
    shape = dict(want=run["want"], stp=run["stp"], levels=levels, day_end=run["day_end"])

    def blocks():
        if workers > 1:
            from .stream import stream_shards

            yield from stream_shards(prep, workers, table, **shape)
            return
        from .books import stream_books

        books = np.arange(len(prep.instruments), dtype=np.int64)
        for _, chunk in stream_books(prep, books, prep.chunks(), **shape):
            yield from chunk[table]

    def batches():
        with closing(blocks()) as rows_blocks:      # closed at once when the reader is let go
            for rows in rows_blocks:
                for batch in conv.table(table, rows).to_batches():
                    yield batch if stamp is None else stamp.batch(batch)
        if then is not None:
            raise then

    return pa.RecordBatchReader.from_batches(schema_of(table, levels, date), batches())
