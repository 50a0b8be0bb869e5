"""polars front end: ``scan_bbo`` / ``scan_messages`` as true LazyFrames.

Both go through ``polars.io.plugins.register_io_source``: nothing runs until the
LazyFrame is collected, every collect starts a fresh replay (``obook.bbo`` /
``obook.read_itch``), and the replay is stopped (its reader closed, its worker
processes ended) as soon as polars stops pulling, e.g. after ``head(10)``.

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

from .errors import ObookError
from .schema import itch_message_schema

__all__ = ["scan_match", "scan_simulate", "scan_backtest", "scan_bbo", "scan_trades", "scan_orders", "scan_depth", "scan_messages", "scan_symbols",
           "scan_system_events", "scan_trading_actions", "polars_schema"]


def polars_schema(schema: pa.Schema) -> pl.Schema:
    """The polars schema of an Arrow schema (via an empty table: one conversion rule)."""
    return pl.from_arrow(schema.empty_table()).schema


def _check_path(path) -> str:
    path = os.fspath(path)
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(full):
        raise ObookError(f"{path}: no such feed file" if not os.path.exists(full)
                         else f"{path}: not a file")
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
            close = getattr(reader, "close", None)
            if close is not None:
                close()

    return register_io_source(source, schema=schema, validate_schema=False,
                              is_pure=True, explain_name=name, explain_detail=detail)


def scan_bbo(path, *, workers: int | None = None, format: str | None = None,
             on_error: str = "raise", date=None) -> pl.LazyFrame:
    """A LazyFrame of the feed's BBO rows (``obook.schema.bbo_schema``, plus ``timestamp``
    when the session date is known).

    The options are ``obook.bbo``'s. The path is checked now (a missing file raises
    ``ObookError`` here); the replay itself runs at collect time, once per collect.
    Feed errors (``FeedError`` ...) are raised by ``collect``.
    """
    return _scan_table("bbo", path, workers, format, on_error, date=date)


def _scan_table(table: str, path, workers, format, on_error, levels: int = 10, date=None) -> pl.LazyFrame:
    from .engine.replay import Replay

    full = _check_path(path)
    if workers is not None and workers < 1:
        raise ObookError(f"workers must be at least 1, got {workers}")

    def replay(tickers=None):
        # tickers: from the predicate (ticker pushdown); a ticker not in the feed is no error here
        return Replay(full, workers=workers, format=format, on_error=on_error, tables=(table,),
                      levels=levels, date=date, tickers=tickers or None, unknown_tickers="ignore")
    return _scan(lambda tickers=None: replay(tickers).reader(table), replay().schema(table), f"obook_{table}",
                 os.fspath(path), pushdown=True)


def scan_trades(path, *, workers: int | None = None, format: str | None = None,
                on_error: str = "raise", date=None) -> pl.LazyFrame:
    """A LazyFrame of ``obook.trades`` (``obook.schema.trades_schema``)."""
    return _scan_table("trades", path, workers, format, on_error, date=date)


def scan_orders(path, *, workers: int | None = None, format: str | None = None,
                on_error: str = "raise", date=None) -> pl.LazyFrame:
    """A LazyFrame of ``obook.orders`` (``obook.schema.orders_schema``)."""
    return _scan_table("orders", path, workers, format, on_error, date=date)


def scan_depth(path, *, workers: int | None = None, format: str | None = None,
               on_error: str = "raise", levels: int = 10, date=None) -> pl.LazyFrame:
    """A LazyFrame of ``obook.depth`` (``obook.schema.depth_schema(levels)``)."""
    return _scan_table("depth", path, workers, format, on_error, levels, date)


def scan_symbols(path) -> pl.LazyFrame:
    """A LazyFrame of ``obook.symbols`` (the ITCH stock directory)."""
    return _scan_side("symbols", path)


def scan_system_events(path) -> pl.LazyFrame:
    """A LazyFrame of ``obook.system_events``."""
    return _scan_side("system_events", path)


def scan_trading_actions(path) -> pl.LazyFrame:
    """A LazyFrame of ``obook.trading_actions``."""
    return _scan_side("trading_actions", path)


def _scan_side(table: str, path) -> pl.LazyFrame:
    from .feeds import side_schema, side_table_reader
    full = _check_path(path)
    return _scan(lambda: side_table_reader(full, table), side_schema(table), f"obook_{table}",
                 os.fspath(path))


def scan_audit(path, *, workers: int | None = None) -> pl.LazyFrame:
    """A LazyFrame of ``obook.audit`` (Level-2 snapshots against the rebuilt book)."""
    from .feeds.sse.schema import audit_schema
    full = _check_path(path)

    def open_reader():
        from . import audit

        return audit(full, workers=workers)
    return _scan(open_reader, audit_schema, "obook_audit", os.fspath(path))


def scan_messages(path) -> pl.LazyFrame:
    """A LazyFrame of the decoded ITCH messages (``obook.schema.itch_message_schema``)."""
    full = _check_path(path)

    def open_reader():
        from .feeds import resolve_format

        return resolve_format(None, full).messages_reader()(full)

    return _scan(open_reader, itch_message_schema, "obook_messages", os.fspath(path))


def scan_match(path, *, table: str = "fills", workers: int | None = 1, tick: int = 1, stp: str | None = None,
               levels: int = 10) -> pl.LazyFrame:
    """A LazyFrame of one table of ``obook.match(path, ...)`` (fills, events, bbo or depth);
    the engine runs at collect time, once per collect."""
    from .matching import match
    from .matching.books import want_bits
    from .matching.tables import schema_of

    full = _check_path(path)
    want_bits((table,))
    return _scan(lambda: match(full, workers=workers, tick=tick, stp=stp, tables=(table,), levels=levels).reader(table),
                 schema_of(table, levels), f"obook_match_{table}", os.fspath(path))


def scan_simulate(feed, orders, *, table: str = "fills", latency=0, seed: int = 0, horizon: float = 1.0,
                  workers: int | None = None, format: str | None = None, levels: int = 10) -> pl.LazyFrame:
    """A LazyFrame of one table of ``obook.simulate(feed, orders, ...)`` (fills, events,
    summary, bbo_with_own or depth_with_own with ``levels`` a side); the simulation runs at
    collect time, once per collect."""
    from .engine.tables import check_tables
    from .simulation import OWN_TABLES, simulate
    from .simulation.tables import SCHEMAS, schema_of

    if table not in SCHEMAS:
        raise ObookError(f"unknown table {table!r}; choose from {', '.join(SCHEMAS)}")
    check_tables(("depth",), levels)
    full = _check_path(feed)
    own = (table,) if table in OWN_TABLES else ()
    return _scan(lambda: simulate(full, orders, latency=latency, seed=seed, horizon=horizon, workers=workers,
                                  format=format, feed_tables=(), own_tables=own, levels=levels).reader(table),
                 schema_of(table, levels), f"obook_simulate_{table}", os.fspath(feed))


def scan_backtest(feed, strategy, *, table: str = "fills", **kwargs) -> pl.LazyFrame:
    """A LazyFrame of one table of ``obook.backtest(feed, strategy, **kwargs)`` (orders,
    events, fills, positions, equity); the backtest runs at collect time, once per collect.
    ``strategy``: a strategy object, or FILE.py:NAME / module:NAME (a fresh one each run)."""
    from .backtest import backtest
    from .backtest.tables import schemas

    shapes = schemas()
    if table not in shapes:
        raise ObookError(f"unknown table {table!r}; choose from {', '.join(shapes)}")
    full = _check_path(feed)

    def run():
        s = strategy
        if isinstance(s, str):
            from .live.cli_run import load_strategy
            s = load_strategy(s)
        return backtest(full, s, **kwargs).reader(table)
    return _scan(run, shapes[table], f"obook_backtest_{table}", os.fspath(feed))
