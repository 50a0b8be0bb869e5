"""polars front end: ``scan_<table>``, ``scan_match``, ... as true LazyFrames.

Each goes through ``polars.io.plugins.register_io_source``: nothing runs until the
LazyFrame is collected, every collect starts a fresh replay (a scan of a stream reads it
once: reading it again is an error), and the replay is stopped (its reader closed, its
worker processes ended) when polars stops pulling: at once when the row limit is reached
(``head(n)``), within ``obook.polars_release.PERIOD`` when polars lets go of the source
without one (a filter, then ``head(n)``).

polars hands the source the projection, the predicate and the row limit and does not
re-apply them, so the source applies all three itself: filter first (a predicate may use
columns that are not projected), then project, then cut at ``n_rows``.

The polars schema is derived from the Arrow schemas in ``obook.schema``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import polars as pl
import pyarrow as pa
from polars.io.plugins import register_io_source

from .checks import no_file, not_a_file, not_int
from .errors import ObookError, name_as_given, open_as_given
from .polars_release import replay_closed, replay_opened
from .tables.runs import MATCH, SIMULATE

__all__ = ["scan", "scan_match", "scan_simulate", "scan_backtest", "polars_schema", "time_of_day"]   # + scan_<table>

_DAY_NS = 86_400_000_000_000


def polars_schema(schema: pa.Schema) -> pl.Schema:
    """The polars schema of an Arrow schema (via an empty table: one conversion rule)."""
    return pl.from_arrow(schema.empty_table()).schema


def _check_path(path, what: str = "feed", one: bool = False, stream: bool | None = None) -> str:
    """The full path of a file (a feed, or an order file as ``what`` says); ``one``: the
    scan takes that one file (no list, no glob pattern), and its errors say so; ``stream``:
    whether the scan takes a stream in its place (default: a feed's scan does)."""
    if not isinstance(path, (str, os.PathLike)):
        takes = "text or a path (one file)" if one else \
            "text (a file, a glob pattern), a path or a list or tuple of them"
        raise ObookError(f"the {what} path must be {takes}, not {path!r}")
    path = os.fspath(path)
    if not path:
        raise ObookError(f"the {what} path is empty")
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(full):
        raise ObookError(no_file(path, what) if not os.path.exists(full) else not_a_file(path, what, stream))
    return full


def _node(expr: pl.Expr) -> tuple[str, Any]:
    """The top node of an expression: (kind, detail), from polars' JSON form."""
    import json
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = json.loads(expr.meta.serialize(format="json"))
    kind = next(iter(tree))
    return kind, tree[kind]


def _is_ticker(expr: pl.Expr) -> bool:
    return expr.meta.is_column() and expr.meta.output_name() == "ticker"


def _literal_strings(expr: pl.Expr) -> set[str] | None:
    if _node(expr)[0] != "Literal":
        return None
    values = pl.select(expr).to_series()
    if values.dtype == pl.List(pl.String) or isinstance(values.dtype, pl.List):
        values = values.explode()
    if values.dtype != pl.String:
        return None
    return {v for v in values.to_list() if v is not None}


def predicate_tickers(predicate: pl.Expr | None) -> set[str] | None:
    """The tickers a predicate can be true for — ``ticker == x``, ``ticker.is_in([...])``,
    and those under ``&`` and ``|`` — or None when it does not restrict the ticker. The
    replay then runs only those books; the predicate is still applied to every row."""
    if predicate is None:
        return None
    try:
        kind, detail = _node(predicate)
        if kind == "BinaryExpr" and detail["op"] in ("And", "LogicalAnd", "Or", "LogicalOr"):
            sides = [predicate_tickers(e) for e in predicate.meta.pop()]
            if "And" in detail["op"]:
                known = [s for s in sides if s is not None]
                return set.intersection(*known) if known else None
            return None if None in sides else set.union(*sides)
        if kind == "BinaryExpr" and detail["op"] == "Eq" or (
                kind == "Function" and "IsIn" in str(detail.get("function"))):
            inputs = predicate.meta.pop()
            if len(inputs) == 2 and any(_is_ticker(e) for e in inputs):
                other = next(e for e in inputs if not _is_ticker(e))
                return _literal_strings(other)
    except Exception:  # noqa: BLE001 - an expression this does not understand: no pushdown
        return None
    return None


def _scan(open_reader: Callable[..., Any], arrow_schema: pa.Schema, name: str,
          detail: str, pushdown: bool = False) -> pl.LazyFrame:
    """A LazyFrame whose batches come from ``open_reader()``; with ``pushdown``,
    ``open_reader(tickers)`` replays only the tickers a predicate can be true for."""
    schema = polars_schema(arrow_schema)

    def source(with_columns: list[str] | None, predicate: pl.Expr | None,
               n_rows: int | None, batch_size: int | None) -> Iterator[pl.DataFrame]:
        if n_rows is not None and n_rows <= 0:
            return
        remaining = n_rows
        tickers = predicate_tickers(predicate) if pushdown else None
        if tickers is not None and not tickers:
            return
        reader = open_reader(sorted(tickers) if tickers else None) if pushdown else open_reader()
        replay_opened()
        try:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                df = pl.from_arrow(batch)
                if not isinstance(df, pl.DataFrame):   # a single-column batch may come back as a Series
                    df = df.to_frame()
                if predicate is not None:
                    df = df.filter(predicate)
                if with_columns is not None:
                    df = df.select(with_columns)
                if remaining is not None:
                    if df.height >= remaining:
                        yield df.head(remaining)
                        return
                    remaining -= df.height
                if df.height:
                    yield df
        finally:
            try:
                getattr(reader, "close", lambda: None)()
            finally:    # a close cut short (a Ctrl-C raised in it) still ends the watch
                reader = None     # and the replay's generator with it: its worker processes stop now
                replay_closed()

    return register_io_source(source, schema=schema, validate_schema=False,
                              is_pure=True, explain_name=name, explain_detail=detail)


def scan(name: str, path, **options) -> pl.LazyFrame:
    """A LazyFrame of table ``name`` (any of ``obook.tables.tables()``) of a feed, a list of
    feed files or a glob pattern; ``options`` are the table's (``obook.tables.OPTIONS``).

    The arguments are checked now (a missing file, an unknown option or a table the feed's
    format does not produce raise ``ObookError`` here); the replay runs at collect time,
    once per collect. A predicate on ``ticker`` replays only those tickers' books (a ticker
    of it the feed never names gives no rows), unless ``tickers=`` chose the books: then
    the replay is of those, as in ``obook.<name>`` (one the feed never names is an
    error, whatever the filter), and the predicate only filters their rows."""
    from .feeds.sources import source_name
    from .tables import check_offered
    from .tables.open import Opened

    spec = check_offered(name, "polars")
    for p in ([path] if not isinstance(path, list) else path):
        if not isinstance(p, (tuple, list)) and not _is_pattern(p) and not hasattr(p, "read"):
            _check_path(p)
    opened = Opened(name, path, options)
    once = None
    if hasattr(path, "read") or hasattr(path, "readinto"):
        path = opened.feeds[0]      # a stream: its first bytes are read (to tell its format) and kept there
        once = _read_once(path)
    pushdown = "tickers" in spec.options and spec.per_ticker and opened.options.get("tickers") is None

    def open_reader(tickers=None):
        if once is not None:
            once()
        if tickers:   # a ticker of the filter that the feed never names: no rows, no error
            return Opened(name, path, {**options, "tickers": tickers, "unknown_tickers": "ignore"}).reader()
        return Opened(name, path, options).reader() if pushdown else opened.reader()
    detail = str(path) if once is None else source_name(path)     # a stream: its name, as in its errors
    return _scan(open_reader, opened.schema, f"obook_{name}", detail, pushdown=pushdown)


def time_of_day(time: pl.Expr | str = "time", feed=None, *, format: str | None = None,
                time_unit_ns: int | None = None) -> pl.Expr:
    """A feed time (an integer since the session's midnight, in the feed's unit) as a polars
    ``Time`` of day: DuckDB's ``obook_time_of_day(time, feed)``. A LazyFrame drops the Arrow
    schema's units, so the unit is given: ``feed`` (the path given to ``scan_*``, a list or a
    glob pattern, or Parquet or Arrow files obook wrote; its format detected, or ``format``) reads it
    from the feed's units, ns for ITCH, PITCH, Shanghai and Shenzhen, ms for CSV;
    ``time_unit_ns`` gives it (the schema's ``obook.time_unit``). ``time``: a column name or
    an expression. polars' ``Time`` holds ns: exact (DuckDB's TIME truncates to microseconds).
    A feed whose time counts from the epoch (Databento: use its ``timestamp``) is an error
    now, and so is a duration column given as ``time`` (twas' ``quoted_time``: a length of time);
    a time at or past 24:00:00, or a column of no integer type, is one when the frame is
    collected."""
    if (feed is None) == (time_unit_ns is None):
        raise ObookError("time_of_day: give the feed of the time (its unit is the feed's: ns for ITCH, ms for "
                         "CSV) or its time_unit_ns, one of them")
    if not isinstance(time, (str, pl.Expr)):
        raise ObookError(f"time_of_day: time must be a column's name or a polars expression, not {time!r}")
    from .tables import tables

    # a table's duration column (twas' quoted_time), by name or pl.col: a length of time, never a time of day
    column = time if isinstance(time, str) else time.meta.output_name() if time.meta.is_column() else None
    if column is not None and any(column in spec.durations for spec in tables().values()):
        raise ObookError(f"time_of_day: {column!r} is a length of time in the feed's time unit (a duration: "
                         "obook.duration_columns), not a time since midnight: no time of day")
    if feed is not None:
        from .tables.feed_units import feed_unit
        from .tables.open import names_given

        items = feed if isinstance(feed, (list, tuple)) else [feed]
        for p in items:
            if not _is_pattern(p):      # (a pattern's files: when they are read)
                _check_path(p)
        given = [os.fspath(p) for p in items]
        items = [os.path.abspath(p) for p in given]
        source = items if isinstance(feed, (list, tuple)) else items[0]
        try:
            origin = feed_unit(source, format, "time_origin")
            time_unit_ns = int(feed_unit(source, format, "time_unit_ns"))
        except ObookError as e:
            bare = getattr(e, "units_missing_in", None)
            if bare is not None:
                kind = "a Parquet" if getattr(e, "units_file_kind", "Parquet") == "Parquet" else "an Arrow"
                raise ObookError(f"{names_given(given).get(bare, bare)}: {kind} file without obook's units "
                                 "(obook.time_unit in its schema): give time_of_day the feed it came from, its "
                                 "format= or time_unit_ns=") from None
            name_as_given(e, names_given(given))
            raise
        if origin == "epoch":
            raise ObookError(f"time_of_day: the time of {feed} counts from the epoch, not midnight: use its "
                             "timestamp column")
    elif isinstance(time_unit_ns, bool) or not isinstance(time_unit_ns, int) or time_unit_ns < 1:
        raise ObookError(f"time_of_day: time_unit_ns must be an integer of ns of at least 1 (the schema's "
                         f"obook.time_unit), not {not_int(time_unit_ns)}")
    from functools import partial

    expr = pl.col(time) if isinstance(time, str) else time
    within = partial(_within_day, units=-(-_DAY_NS // time_unit_ns))
    return (expr.map_batches(within, return_dtype=pl.Int64) * time_unit_ns).cast(pl.Time)


def _within_day(times: pl.Series, units: int) -> pl.Series:
    """``times`` as Int64 when each is an integer under ``units`` (a day of the feed's unit): one at
    or past 24:00:00 (or negative) is an error, checked before any product (none wraps); so is a
    column of no integer type (1.5 is no feed time: never truncated to one)."""
    if not (times.dtype.is_integer() or times.dtype == pl.Null):
        raise ObookError(f"time_of_day: the time must be integers from 0 in the feed's time unit, not "
                         f"{times.dtype} (column {times.name})")
    top, low = times.max(), times.min()
    if top is not None and (top >= units or low < 0):
        raise ObookError("time_of_day: a time at or past 24:00:00 (or before midnight) is not a time of day")
    return times.cast(pl.Int64)


def _read_once(stream) -> Callable[[], None]:
    """A check to call before each replay of ``stream``: the second one raises ObookError
    (the first read its bytes; a second would give no rows, silently)."""
    import threading

    from .feeds.sources import source_name

    lock = threading.Lock()
    read = []

    def once() -> None:
        with lock:
            if read:
                raise ObookError(f"{source_name(stream)}: a stream is read once, and this scan of it was read "
                                 "already (an earlier collect, or a query that reads the scan twice); "
                                 "scan the stream anew, or give a file")
            read.append(True)
    return once


def _is_pattern(path) -> bool:
    from .tables.open import is_pattern

    return is_pattern(path)


def _scan_function(name: str):
    """``scan_<name>(path, **options)``, derived from the table's declaration."""
    from functools import partial

    from .tables import front_function, options_doc, table

    scan_table = front_function(name, f"scan_{name}", partial(scan, name))
    scan_table.__module__ = __name__
    scan_table.__doc__ = f"A LazyFrame of ``obook.{name}``: {table(name).doc}\n\n{options_doc(name)}"
    return scan_table


def _table_scans() -> list[str]:
    from .tables import tables

    return [f"scan_{t}" for t in tables()]


__all__ += _table_scans()


def __dir__():
    # the scans of the tables appear on first use: a notebook's completion offers them before
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str):
    if name.startswith("scan_"):
        from .tables import tables

        if name[5:] in tables():
            value = globals()[name] = _scan_function(name[5:])
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def scan_match(path, *, table: str = "fills", **options) -> pl.LazyFrame:
    """A LazyFrame of one table of ``obook.match(path, ...)`` (fills, events, bbo or depth);
    the engine runs at collect time, once per collect, as polars reads the rows (``head(n)``
    stops it and its workers). ``options``: ``obook.match``'s (its keywords but ``tables``),
    checked now."""
    from .matching import checked_options, schema_of, table_reader

    full = _check_path(path, "order", one=True)
    options = _keywords("scan_match", MATCH, options)
    checked_options(tables=(table,), **options)
    names = {full: os.fspath(path)}         # the errors name the file as given
    return _scan(lambda: open_as_given(lambda: table_reader(full, table, **options), names),
                 schema_of(table, options["levels"], options["date"]), f"obook_match_{table}", os.fspath(path))


def _keywords(name: str, declared: tuple, given: dict) -> dict:
    """A scan's keyword options, each declared option given or its default; another is a
    TypeError naming the scan, as Python's for an unknown keyword."""
    names = {o.name for o in declared}
    unknown = [k for k in given if k not in names]
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    return {o.name: given.get(o.name, o.default) for o in declared}


def _declared_signature(function, declared: tuple, *leading: str) -> None:
    """``function``'s signature: ``leading`` positional, ``table``, then the declared options."""
    import inspect

    keyword = inspect.Parameter.KEYWORD_ONLY
    function.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in leading] +
        [inspect.Parameter("table", keyword, default="fills")] +
        [inspect.Parameter(o.name, keyword, default=o.default) for o in declared])


_declared_signature(scan_match, MATCH, "path")


def _feed_files(feed) -> tuple:
    """(the full path of a feed's file, or of each file of one feed in several: a list, a
    tuple or a glob pattern; what the scan's plan names)."""
    from .simulation.source import feed_source

    files = feed_source(feed)
    if isinstance(files, tuple):
        full = tuple(_check_path(f, stream=False) for f in files)
        return full, ", ".join(full)
    return _check_path(files, stream=False), os.fspath(feed)


def scan_simulate(feed, orders, *, table: str = "fills", **options) -> pl.LazyFrame:
    """A LazyFrame of one table of ``obook.simulate(feed, orders, ...)`` (fills, events,
    summary, bbo_with_own or depth_with_own with ``levels`` a side); the simulation runs at
    collect time, once per collect. ``feed``: a file, or one feed in several files as
    ``obook.simulate`` takes it (a glob pattern, a list or tuple of paths and patterns).
    ``options``: ``obook.simulate``'s (``obook.tables.runs.SIMULATE``), checked now."""
    from .engine.tables import TABLES as FEED_TABLES, check_tables
    from .simulation import OWN_TABLES, checked_options, simulate
    from .simulation.source import feed_stamp
    from .simulation.tables import SCHEMAS, schema_of

    if table not in SCHEMAS:
        own = f"table {table!r} is the feed's own: obook.scan_{table}(feed) reads it; " if table in FEED_TABLES else \
            f"unknown table {table!r}; "
        raise ObookError(f"{own}choose from {', '.join(SCHEMAS)}")
    options = _keywords("scan_simulate", SIMULATE, options)
    checked_options(**{k: v for k, v in options.items() if k not in ("latency", "levels")})
    check_tables(("depth",), options["levels"])
    full, detail = _feed_files(feed)
    own = (table,) if table in OWN_TABLES else ()
    return _scan(lambda: simulate(full, orders, feed_tables=(), own_tables=own, **options).reader(table),
                 schema_of(table, options["levels"], feed_stamp(full, options["format"], options["date"])),
                 f"obook_simulate_{table}", detail)


_declared_signature(scan_simulate, SIMULATE, "feed", "orders")


def scan_backtest(feed, strategy, *, table: str = "fills", **kwargs) -> pl.LazyFrame:
    """A LazyFrame of one table of ``obook.backtest(feed, strategy, **kwargs)`` (orders,
    events, fills, positions, equity); the backtest runs at collect time, once per collect,
    its orders, events and fills read as it makes them (a ``head()`` stops it early; see
    :func:`obook.backtest.stream.backtest_reader`).
    ``feed``: a file, or one feed in several files (a glob pattern, a list or tuple of paths).
    ``strategy``: a strategy object, or FILE.py:NAME / module:NAME (a fresh one each run).
    A keyword ``obook.backtest`` does not take or a value it refuses (as far as it can be
    told without the feed), or what is no strategy, is an error here, not at collect time."""
    import inspect

    from .backtest import backtest
    from .backtest.arguments import check_keywords, strategy_object
    from .backtest.columns import schemas
    from .backtest.stream import backtest_reader
    from .checks import check_tickers

    shapes = schemas()
    if table not in shapes:
        raise ObookError(f"unknown table {table!r}; choose from {', '.join(shapes)}")
    full, detail = _feed_files(feed)
    if "tickers" in kwargs:         # (an iterator read once: here, not again at collect time)
        kwargs["tickers"] = check_tickers(kwargs["tickers"])
    try:
        bound = inspect.signature(backtest).bind(full, strategy, **kwargs)
    except TypeError as e:
        raise TypeError(f"scan_backtest: {e}") from None
    bound.apply_defaults()
    check_keywords(bound.arguments)
    if isinstance(strategy, str):
        from .live.cli_run import check_strategy_text

        check_strategy_text(strategy, "strategy")
    else:
        strategy_object(strategy)

    def run():
        s = strategy
        if isinstance(s, str):
            from .backtest.arguments import load_backtest_strategy
            s = load_backtest_strategy(s, "strategy")
        return backtest_reader(full, s, table, **kwargs)
    return _scan(run, shapes[table], f"obook_backtest_{table}", detail)
