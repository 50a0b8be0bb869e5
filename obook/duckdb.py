"""DuckDB front end: ``obook_bbo(...)`` and ``obook_messages(...)`` as table macros.

DuckDB 2.0's Python API has no table functions, so this module uses the pattern
measured in the project notes:

* per connection, a small pool of *sources* is made views in a hidden in-memory catalog
  (``obook_internal``, attached by :func:`install`), so ``SHOW TABLES`` and the default
  schema's ``information_schema.tables`` list only the user's objects; a source is an
  object implementing ``__arrow_c_schema__`` / ``__arrow_c_stream__``, and every
  stream call starts a fresh, lazy replay (``obook.bbo`` / ``obook.read_itch``) of the
  arguments assigned to it;
* a scalar UDF (``__obook_bbo_slot_<token>``) is evaluated by DuckDB at bind time; it
  validates the arguments (the path must be a readable file), assigns them to a pool
  entry and returns the entry's qualified view name;
* ``CREATE TEMP MACRO obook_bbo(path, ...) AS TABLE FROM query_table(<slot>(path, ...))``.

DuckDB reads a view's schema from its source each time a query binds it, so an entry's
schema may follow the arguments assigned to it: ``obook_depth(path, levels := N)`` has one
pool whose entries take ``depth_schema(N)`` with the arguments (no view per depth), and
an entry whose session date is known (``date :=`` or a Nasdaq file name) gets the
``timestamp`` column.

The same arguments always map to the same pool entry, so a self-join or a UNION ALL of
one feed scans one view twice (two independent replays), and different arguments get
different entries. The slot UDF also gets ``current_query_id()``: an entry bound by the
query being bound and not scanned yet is never handed to other arguments (a query with
more distinct argument sets than the pool has entries fails with a clear error instead
of reading another feed's rows); entries bound by earlier queries, or by a relation made
and not run (``con.sql(...)``: it binds with no query id, and again when it runs), are
reused, least recently used first. A ``LIMIT`` stops pulling; DuckDB then releases the stream, which
closes the engine's reader and so stops its worker processes.

Limits (DuckDB's, not obook's): arguments must be constants or prepared parameters (no
lateral ``FROM t, obook_bbo(t.path)``); the install is per connection (a ``cursor()``
needs its own :func:`install`); one open result a connection (another query fails with
DuckDB's "Resource In Use" error until it is read to its end or closed); no projection or
filter pushdown into the replay (the replay computes every column anyway).
"""

from __future__ import annotations

import ctypes
import importlib
import itertools
import os
import threading
import weakref
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable

import duckdb
import pyarrow as pa

from .errors import AsGiven, FormatError, ObookError, name_as_given, open_as_given, printable
from .dataset import attach  # noqa: F401 - obook.duckdb.attach(con, DATASET)

__all__ = ["connect", "install", "attach", "POOL_SIZE"]

#: Distinct argument tuples a connection can keep bound at once: the registry's table macros
#: share a pool of ``2 * POOL_SIZE``, the matching, simulation and backtest macros another of
#: ``2 * POOL_SIZE``. A list of files or a glob pattern is one argument tuple, however many
#: files it names.
POOL_SIZE = 32

#: the in-memory catalog holding the pools' views (helpers, not the user's tables)
HIDDEN = "obook_internal"

#: current_query_id() while DuckDB binds with no query running: a relation made and not run
#: (``con.sql(...)``), which binds again when it runs
_NO_QUERY = 2 ** 64 - 1

_tokens = itertools.count(1)
_token_lock = threading.Lock()


# --------------------------------------------------------------------------- sources


class _ScanError(pa.ArrowInvalid):
    """An obook error (``"<Kind>: <message>"``) ending a DuckDB scan of an obook source."""


def _stream_batches(open_reader: Callable[[], Any], schema: pa.Schema):
    """Yield the batches of a replay opened on first pull; always close the reader.

    Obook errors are re-raised as :class:`_ScanError` carrying ``"<Kind>: <message>"``,
    which DuckDB's error text shows alone (see :func:`_short_errors`).
    """
    reader = None
    try:
        reader = open_reader()
        same = reader.schema.equals(schema, check_metadata=False)
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            yield batch if same else batch.cast(schema)
    except ObookError as e:
        text = f"{type(e).__name__}: {e}"
        safe = printable(text)
        # chained only when pyarrow can format the cause: it fails on a surrogate, a NUL
        # byte ends the C text
        raise _ScanError(safe) from (e if safe == text else None)
    finally:
        if reader is not None:
            close = getattr(reader, "close", None)
            if close is not None:
                close()


class _Batches:
    """A stream's batch iterator; pyarrow's exported stream holds it until the stream is
    released, so it also holds the stream's short error text (:func:`_hook`)."""

    __slots__ = ("batches", "error", "__weakref__")

    def __init__(self, batches):
        self.batches = batches
        self.error = None

    def __iter__(self):
        return self

    def __next__(self):
        return next(self.batches)


# pyarrow's exported stream reports an error raised in Python as "Invalid: <message>.
# Detail: Python exception: <the formatted exception>", a traceback of 30 lines that DuckDB
# puts into its error text. Streams of obook's sources get a get_last_error of their own
# (a ctypes callback around pyarrow's) that gives a _ScanError's message alone; any other
# error keeps its detail (a bug's traceback; obook sql reads a KeyboardInterrupt from it).
_DETAIL = b". Detail: Python exception: "
_SCAN_ERROR = f"{_ScanError.__module__}.{_ScanError.__qualname__}: ".encode()
_LAST_ERROR = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_hooks: dict[int, Any] = {}                  # pyarrow's get_last_error -> obook's around it
# a live stream's private_data -> its _Batches (gone when pyarrow releases the stream)
_owners: weakref.WeakValueDictionary[int, _Batches] = weakref.WeakValueDictionary()
_hooks_lock = threading.Lock()
_RELEASED = ctypes.create_string_buffer(b"get_last_error called on a released Arrow stream")
# a prototype of our own: ctypes.pythonapi's functions are shared with every other library
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


class _CStream(ctypes.Structure):
    """The Arrow C stream interface's ArrowArrayStream."""
    _fields_ = [("get_schema", ctypes.c_void_p), ("get_next", ctypes.c_void_p),
                ("get_last_error", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


def _short_error(text: bytes) -> bytes | None:
    """A _ScanError's message out of pyarrow's error text (None: not a _ScanError's).

    The text is ``Invalid: <message>. Detail: Python exception: <traceback>`` whose last
    line is ``obook.duckdb._ScanError: <message>``; the message may hold newlines or the
    detail marker itself (a file name), so every marker is tried against that last line.
    """
    head = b"Invalid: "
    if not text.startswith(head):
        return None
    cut = text.find(_DETAIL)
    while cut >= 0:
        message = text[len(head):cut]
        if text[cut + len(_DETAIL):].rstrip().endswith(_SCAN_ERROR + message.rstrip()):
            return message
        cut = text.find(_DETAIL, cut + 1)
    return None


def _hook(original: int):
    """A get_last_error calling pyarrow's ``original`` and shortening a _ScanError's text.

    The short text is kept by the stream's :class:`_Batches`, so it stays valid until the
    stream's next error or its release, as the C stream interface requires."""
    call = _LAST_ERROR(original)

    def last_error(stream):
        try:
            c_stream = _CStream.from_address(stream)
            if not c_stream.release:        # pyarrow's own would read freed memory
                return ctypes.addressof(_RELEASED)
            owner = _owners.get(c_stream.private_data)
        except Exception:  # noqa: BLE001 - a callback from C: pyarrow's text, unchanged
            owner = None
        text = call(stream)
        try:
            short = _short_error(ctypes.string_at(text)) if text and owner is not None else None
            if short is None:
                return text
            owner.error = ctypes.create_string_buffer(short)
            return ctypes.addressof(owner.error)
        except Exception:  # noqa: BLE001 - a callback from C: pyarrow's text, unchanged
            return text

    return _LAST_ERROR(last_error)


def _short_errors(capsule, owner: _Batches):
    """``capsule`` (pyarrow's ``arrow_array_stream`` of ``owner``'s batches) with obook's
    get_last_error."""
    stream = _CStream.from_address(_capsule_pointer(capsule, b"arrow_array_stream"))
    original = stream.get_last_error
    if original:
        with _hooks_lock:
            _owners[stream.private_data] = owner
            hook = _hooks.get(original)
            if hook is None:
                hook = _hooks[original] = _hook(original)      # kept for good: DuckDB may call it late
        stream.get_last_error = ctypes.cast(hook, ctypes.c_void_p).value
    return capsule


class _Source:
    """One pool entry: an Arrow stream producer for the arguments last assigned to it,
    with the schema the pool set for them."""

    __slots__ = ("name", "schema", "opener", "args", "pending", "query", "streams")

    def __init__(self, name: str, schema: pa.Schema, opener: Callable[..., Any]):
        self.name = name
        self.schema = schema
        self.opener = opener       # opener(*args) -> RecordBatchReader
        self.args: tuple | None = None
        self.pending = False       # assigned at bind, no stream opened since
        self.query = None          # current_query_id() of the query that bound it
        self.streams = 0           # streams opened (diagnostics)

    def __arrow_c_schema__(self):
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema=None):
        args, schema = self.args, self.schema
        if args is None:
            # DuckDB only scans a view after the slot UDF assigned it; an empty stream
            # keeps a direct ``FROM <view>`` harmless.
            batches = _Batches(iter(()))
        else:
            opener = self.opener
            batches = _Batches(_stream_batches(lambda: opener(*args), schema))
        reader = pa.RecordBatchReader.from_batches(schema, batches)
        self.pending = False
        self.streams += 1
        return _short_errors(reader.__arrow_c_stream__(requested_schema), batches)


class _Pool:
    """Pool entries of one kind (bbo, depth, messages ...) for one connection.

    Every entry has ``schema``; with ``schema_of`` (depth: of its levels), :meth:`assign`
    gives an entry ``schema_of(args)`` with its arguments instead.
    """

    def __init__(self, prefix: str, schema: pa.Schema, opener: Callable[..., Any], size: int,
                 schema_of: Callable[[tuple], pa.Schema] | None = None):
        self.entries = [_Source(f"{prefix}_{i}", schema, opener) for i in range(size)]
        self.schema_of = schema_of or (lambda args: schema)
        self.by_args: dict[tuple, _Source] = {}
        self.lru: OrderedDict[str, _Source] = OrderedDict((e.name, e) for e in self.entries)
        self.lock = threading.Lock()

    def assign(self, args: tuple, query: int | None = None) -> str:
        with self.lock:
            entry = self.by_args.get(args)
            if entry is None:
                entry = self._victim(query)
                if entry.args is not None:
                    self.by_args.pop(entry.args, None)
                entry.schema = self.schema_of(args)
                entry.args = args
                self.by_args[args] = entry
            entry.pending = True
            entry.query = query
            self.lru.move_to_end(entry.name)
            return f"{HIDDEN}.main.{entry.name}"

    def register(self, con) -> None:
        """Make every entry a view of the hidden catalog (the connection's :func:`_hidden`
        is in use)."""
        for entry in self.entries:
            con.from_arrow(entry).create_view(entry.name)

    def _victim(self, query: int | None) -> _Source:
        # Least recently used entry that is not waiting for its scan; failing that, the
        # least recently used one bound by an earlier query (never scanned: that query
        # failed or was only described). An entry the current query is waiting for is
        # never taken: its scan would read the new arguments' rows.
        for entry in self.lru.values():
            if not entry.pending:
                return entry
        # A relation only bound (con.sql(...) not run yet: no query id) takes any entry: it
        # binds again when it runs.
        for entry in self.lru.values():
            if query in (None, _NO_QUERY) or entry.query != query:
                return entry
        raise ObookError(f"one query can use at most {len(self.entries)} different argument sets "
                         "of obook table macros (a list of files or a glob pattern is one; "
                         "install(con, pool_size=N) for more)")


class _Shared:
    """One pool shared by several macros, each a *kind* with its own opener and schema; a
    kind's arguments are tagged with its name (one view per entry, not per macro)."""

    def __init__(self, prefix: str, size: int):
        self.kinds: dict[str, tuple] = {}
        self.pool = _Pool(prefix, pa.schema([pa.field("none", pa.int8())]), self._open, size, self._schema)

    def _open(self, kind, *args):
        *args, names = args
        return open_as_given(lambda: self.kinds[kind][0](*args), dict(names))      # (a simulation runs here)

    def _schema(self, args):
        return self.kinds[args[0]][1](args[1:-1])

    def kind(self, name: str, opener, schema_of) -> "_Kind":
        self.kinds[name] = (opener, schema_of)
        return _Kind(self.pool, name)


class _Kind:
    """A macro's share of a :class:`_Shared` pool (``assign`` as a pool's)."""

    def __init__(self, pool: _Pool, name: str):
        self.pool, self.name = pool, name

    def assign(self, args: tuple, query: int | None = None, names: dict | None = None) -> str:
        """``names``: the files as the query gave them, by the absolute paths in ``args``
        (what the run's errors name)."""
        return self.pool.assign((self.name,) + tuple(args) + (tuple(sorted((names or {}).items())),), query)


# --------------------------------------------------------------------------- argument checks


def _check_path(path: str | None, what: str = "feed") -> str:
    if path is None:
        raise ObookError(f"the {what} path is NULL")
    if not path:
        raise ObookError(f"the {what} path is empty")
    full = os.path.abspath(os.path.expanduser(path))
    from .checks import no_file, not_a_file

    if not os.path.exists(full):
        raise ObookError(no_file(path, what))
    if not os.path.isfile(full):
        raise ObookError(not_a_file(path, what))
    if not os.access(full, os.R_OK):
        raise ObookError(f"{path}: {what} file is not readable")
    return full


def _check_workers(workers: int | None) -> int | None:
    if workers is not None and workers < 1:
        raise ObookError(f"workers must be at least 1, got {workers}")
    return workers


def _check_format(fmt: str | None) -> str | None:
    """A run macro's ``format``: a format's name in any case; NULL or '' is detected."""
    if not fmt:
        return None
    from .feeds import get_format   # raises ObookError for an unknown format

    return get_format(fmt).name


def _check_levels(levels: int | None) -> int:
    """``obook_depth``'s levels a side; NULL is the default (10), like the other NULLs."""
    from .engine.tables import check_tables   # the engine's range and message

    levels = 10 if levels is None else levels
    check_tables(("depth",), levels)
    return levels


def _check_tickers(tickers) -> tuple[str, ...] | None:
    """``tickers := ['AAPL', ...]`` (or ``'AAPL,MSFT'``): replay only those books (NULL: every book;
    a NULL in the list is an error, as None in Python's)."""
    from .engine.replay import ticker_tuple

    if tickers is None:
        return None
    if isinstance(tickers, str):
        return ticker_tuple(tickers)
    if not isinstance(tickers, list) or not all(t is None or isinstance(t, str) for t in tickers):
        raise ObookError(f"tickers must be a list of tickers (['AAPL', 'MSFT']) or text, not {tickers!r}")
    if None in tickers:         # a NULL is no ticker, as None is none in Python
        raise ObookError(f"tickers must be text, not NULL (item {tickers.index(None) + 1} of {len(tickers)})")
    return ticker_tuple(tickers)


def _match_macros(con, token: str, shared: _Shared) -> None:
    """``obook_match(path, option := default ...)`` (fills), ``obook_match_events``,
    ``obook_match_bbo`` and ``obook_match_depth`` (with ``levels``): ``obook.match``'s tables,
    its options as ``obook.tables.runs.MATCH`` declares them."""
    from .tables.runs import MATCH

    for macro, table in (("obook_match", "fills"), ("obook_match_events", "events"),
                         ("obook_match_bbo", "bbo"), ("obook_match_depth", "depth")):
        options = tuple(o for o in MATCH if o.name != "levels" or table == "depth")
        pool = shared.kind(macro, _match_opener(table), lambda args, t=table: _match_schema(t, args))
        _table_macro(con, macro, token, _match_slot(pool, table, options), options,
                     heads=(("path", "to_json(path)"),))


def _match_schema(table: str, args: tuple) -> pa.Schema:
    from .matching import schema_of

    given = dict(args[1])
    return schema_of(table, given.get("levels", 10), given["date"])


def _match_slot(pool: _Kind, table: str, options: tuple):
    """The bind-time UDF of a matching table macro: check the arguments as ``obook.match``
    does, pick a pool entry."""
    def slot(path, values, query):
        from .matching import checked_options

        given = _given(options, values)
        checked_options(tables=(table,), **given)
        orders = _order_path(path)
        full = _check_path(orders, "order")
        return pool.assign((full, tuple(sorted(given.items()))), query, {full: orders})
    return _fixed_arity(slot, len(options))


def _match_opener(table: str):
    """The reader of a matching table macro, made as the book runs (a ``LIMIT`` stops the
    run and its workers)."""
    def open_match(path, given):
        from .matching import table_reader

        return table_reader(path, table, **dict(given))
    return open_match


def _given(options: tuple, values: list) -> dict:
    """A macro's option values by name as its Python function takes them: NULL is the
    option's default; a list option (given as ``to_json``) a list or a text."""
    import json

    given = {}
    for o, value in zip(options, values):
        if value is not None and o.sql_type.endswith("[]"):
            value = _frozen(json.loads(value))
            if isinstance(value, dict):     # a STRUCT: no list of names
                raise ObookError(f"{o.name} must be a list of names (['AAA', 'BBB']) or text, not {value!r}")
        given[o.name] = o.default if value is None else value
    return given


def _fixed_arity(slot, n: int, heads: int = 1):
    """``slot(heads, values, query)`` (one head: ``slot(path, values, query)``) as a UDF of
    ``heads + n + 1`` arguments: ``(<each head>, <one per option>, query)``, its signature
    saying so (DuckDB checks a UDF's arity against its parameter types)."""
    import inspect

    def udf(*args):
        given = args[0] if heads == 1 else tuple(args[:heads])
        return slot(given, list(args[heads:heads + n]), args[-1])

    udf.__signature__ = inspect.Signature([inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY)
                                           for i in range(heads + n + 1)])
    return udf


def _simulate_macros(con, token: str, shared: _Shared) -> None:
    """``obook_simulate(feed, orders, option := default ...)`` (fills; ``feed``: a file, or one
    feed in several files as a glob pattern or a list), ``obook_simulate_events``,
    ``obook_simulate_summary``, ``obook_simulate_bbo`` (bbo_with_own) and
    ``obook_simulate_depth`` (depth_with_own, with ``levels`` too): ``obook.simulate``'s
    tables, its options as ``obook.tables.runs.SIMULATE`` declares them."""
    from .tables.runs import SIMULATE

    for macro, table in (("obook_simulate", "fills"), ("obook_simulate_events", "events"),
                         ("obook_simulate_summary", "summary"), ("obook_simulate_bbo", "bbo_with_own"),
                         ("obook_simulate_depth", "depth_with_own")):
        options = tuple(o for o in SIMULATE if o.name != "levels" or table == "depth_with_own")
        pool = shared.kind(macro, _simulate_opener(table), lambda args, t=table: _simulate_schema(t, args))
        _table_macro(con, macro, token, _simulate_slot(pool, options), options,
                     heads=(("feed", "to_json(feed)"), ("orders", "to_json(orders)")))


def _simulate_schema(table: str, args: tuple) -> pa.Schema:
    from .simulation.source import feed_stamp
    from .simulation.tables import schema_of

    given = dict(args[2])
    return schema_of(table, given.get("levels", 10), feed_stamp(args[0], given["format"], given["date"]))


def _simulate_opener(table: str):
    def open_sim(feed, orders, given):
        from .simulation import OWN_TABLES, simulate

        return simulate(feed, orders, feed_tables=(), own_tables=(table,) if table in OWN_TABLES else (),
                        **dict(given)).reader(table)
    return open_sim


def _simulate_slot(pool: _Kind, options: tuple):
    """The bind-time UDF of a simulation table macro: check the arguments as
    ``obook.simulate`` does, pick a pool entry."""
    def slot(heads, values, query):
        from .simulation import checked_options
        from .simulation.prepare import parse_latency
        from .simulation.source import feed_source

        feed_json, orders = heads
        orders = _order_path(orders)
        if orders is None:
            raise ObookError("obook_simulate: orders is NULL")
        if not orders:
            raise ObookError("obook_simulate: orders is empty (give the order file's path)")
        feed = feed_source(_frozen(_source(feed_json)))     # one feed: a file, a glob pattern or a list
        given = _given(options, values)
        given["latency"] = parse_latency(given["latency"])
        checked_options(**{k: v for k, v in given.items() if k not in ("latency", "levels")})
        given["format"] = _check_format(given["format"])
        if "levels" in given:
            _check_levels(given["levels"])
        full = os.path.abspath(os.path.expanduser(orders))
        return pool.assign((feed, full, tuple(sorted(given.items()))), query,
                           {**_given_names(feed_json), full: orders})
    return _fixed_arity(slot, len(options), 2)


def _backtest_macros(con, token: str, shared: _Shared) -> None:
    """``obook_backtest(feed, strategy, option := default ...)`` (fills; ``tickers := ['AAA',
    'BBB']`` or ``'AAA,BBB'``) and ``obook_backtest_orders``, ``_events``, ``_positions``,
    ``_equity``: ``obook.backtest``'s tables (``strategy``: FILE.py:NAME or module:NAME), its
    options as ``obook.tables.runs.BACKTEST`` declares them; orders, events and fills are
    read as the backtest makes them (obook.backtest.stream: a LIMIT stops it early)."""
    from .backtest.columns import schemas
    from .tables.runs import BACKTEST

    shapes = schemas()
    for macro, table in (("obook_backtest", "fills"), ("obook_backtest_orders", "orders"),
                         ("obook_backtest_events", "events"), ("obook_backtest_positions", "positions"),
                         ("obook_backtest_equity", "equity")):
        pool = shared.kind(macro, _backtest_opener(table), lambda args, t=table: shapes[t])
        _table_macro(con, macro, token, _backtest_slot(pool), BACKTEST,
                     heads=(("feed", "to_json(feed)"), ("strategy", "CAST(strategy AS VARCHAR)")))


def _backtest_slot(pool: _Kind):
    """The bind-time UDF of a backtest table macro: check the arguments (those that need no
    feed: the interval and the queue model are checked with it), pick a pool entry."""
    from .tables.runs import BACKTEST, BACKTEST_FEES

    def slot(heads, values, query):
        from .backtest import Fees
        from .backtest.arguments import check_keywords
        from .backtest.latency import parse_texts
        from .live.cli_run import check_strategy_text
        from .simulation.source import feed_source

        feed_json, strategy = heads
        if strategy is None:
            raise ObookError("obook_backtest: strategy is NULL")
        feed = feed_source(_frozen(_source(feed_json)))     # one feed: a file, a glob pattern or a list
        check_strategy_text(strategy, "obook_backtest: strategy")
        given = _given(BACKTEST, values)
        tickers = given["tickers"]
        given["tickers"] = _check_tickers(list(tickers) if isinstance(tickers, tuple) else tickers)
        given["format"] = _check_format(given["format"])
        kw = {**{k: v for k, v in given.items() if k not in BACKTEST_FEES},
              **parse_texts(given["feed_latency"], given["order_latency"], given["response_latency"])}
        check_keywords({**kw, "fees": Fees(*(given[k] for k in BACKTEST_FEES)), "risk": None, "on": None,
                        "pipeline": None, "progress": None})
        return pool.assign((feed, strategy, tuple(sorted(given.items()))), query, _given_names(feed_json))

    return _fixed_arity(slot, len(BACKTEST), 2)


def _backtest_opener(table: str):
    def open_backtest(feed, strategy, given):
        from .backtest import Fees
        from .backtest.latency import parse_texts
        from .backtest.stream import backtest_reader
        from .backtest.arguments import load_backtest_strategy
        from .tables.runs import BACKTEST_FEES

        given = dict(given)
        latencies = parse_texts(*(given.pop(k) for k in ("feed_latency", "order_latency", "response_latency")))
        fees = Fees(*(given.pop(k) for k in BACKTEST_FEES))
        return backtest_reader(feed, load_backtest_strategy(strategy, "obook_backtest: strategy"), table, **latencies,
                               fees=fees, **given)
    return open_backtest


# --------------------------------------------------------------------------- install


def shipped_package(name: str):
    """``obook.udfs`` / ``obook.sql``: the repo's top-level ``udfs/`` and ``sql/`` folders,
    which the install maps into the ``obook`` namespace (pyproject ``package-dir``)."""
    try:
        return importlib.import_module(f"obook.{name}")
    except ModuleNotFoundError as e:
        raise ObookError(f"cannot import obook.{name}: is obook installed (pip install -e .)?") from e


def _duck_type(t: str):
    return duckdb.sqltype(t)


def _table_macro(con, macro: str, token: str, slot, options: tuple, heads=(("path", "path"),)) -> None:
    """Register a macro's bind-time UDF, and ``macro(<heads>, name := default ...)`` as a table
    macro over its pool (``options``: ``obook.tables.Option``s; a list option is handed over
    as ``to_json``, text or a list alike; ``heads``: the positional arguments, each (name, the
    VARCHAR SQL the UDF gets))."""
    fn = f"__{macro}_slot_{token}"
    types = [_duck_type("VARCHAR" if o.sql_type.endswith("[]") else o.sql_type) for o in options]
    # the UDF also gets current_query_id(): see _Pool._victim
    con.create_function(fn, slot, [_duck_type("VARCHAR")] * len(heads) + types + [_duck_type("UBIGINT")],
                        _duck_type("VARCHAR"), null_handling="special", side_effects=True)
    # an argument given by position after the heads lands in __by_position: an error naming
    # the options (as in Python, where they are keywords), not a value of the first option
    params = ", ".join([name for name, _ in heads] + [f"{_BY_POSITION} := NULL"]
                       + [f"{o.name} := {_sql_default(o.default)}" for o in options])
    values = ", ".join([sql for _, sql in heads] + [_run_value(o) for o in options])
    refused = _by_position_error(macro, [name for name, _ in heads], [o.name for o in options])
    con.execute(f"CREATE OR REPLACE TEMP MACRO {macro}({params}) AS TABLE "
                f"SELECT * FROM query_table(CASE WHEN {_BY_POSITION} IS NULL "
                f"THEN {fn}({values}, current_query_id()) ELSE {refused} END)")


def _run_value(o) -> str:
    """The SQL handing a run macro's option ``o`` to its UDF (see :func:`_whole`; a list option
    as ``to_json``)."""
    if o.sql_type in ("BIGINT", "UBIGINT", "DOUBLE", "BOOLEAN"):
        return _whole(o.name, o.sql_type)
    return f"to_json({o.name})" if o.sql_type.endswith("[]") else _whole(o.name, o.sql_type)


def _path_json(name: str) -> str:
    """The SQL handing a registry macro's ``path`` to its UDF: ``to_json``, a tuple of files
    (``('a.log', 'b.log')``, one feed in pieces, as a tuple in Python) as ``{"pieces": [...]}``."""
    return (f"CASE WHEN starts_with(typeof({name}), 'TUPLE(') THEN '{{\"pieces\": ' || to_json({name}) || '}}' "
            f"ELSE to_json({name}) END")


def _load_path(path_json: str):
    """A macro's ``path`` from its JSON: DuckDB before 2.0 types a tuple as a struct of unnamed
    fields (``to_json`` gives ``{"": "a.log", "": "b.log"}``), taken as the tuple it is."""
    import json

    def pairs(items):
        if items and all(k == "" for k, _ in items):
            return {"pieces": [v for _, v in items]}
        return dict(items)

    return json.loads(path_json, object_pairs_hook=pairs)


def _pieces(value):
    """``(the paths, True)`` of a tuple of files passed by :func:`_path_json`, else ``(value, False)``."""
    if isinstance(value, dict) and set(value) == {"pieces"}:
        return value["pieces"], True
    return value, False


def _source(path_json: str | None):
    """The source a macro's ``path`` names (passed as ``to_json(path)``, or by :func:`_path_json`):
    a path, a list of paths (a glob pattern is expanded by the reader) or a tuple of them (one
    feed in pieces); relative paths are made absolute."""
    import json

    if path_json is None or path_json == "null":
        raise ObookError("the feed path is NULL")
    value, pieces = _pieces(_load_path(path_json))
    if pieces:
        from .tables.open import is_pattern

        patterns = [p for p in value if is_pattern(p)]
        if patterns:
            raise ObookError("a tuple of feed files is one feed in pieces, each a file, not a glob pattern: "
                             f"{patterns[0]!r}")
        return tuple(_source(json.dumps(value)))
    items = value if isinstance(value, list) else [value]
    bad = [p for p in items if p is not None and not isinstance(p, str)]
    if bad:
        raise ObookError(f"the feed path must be text (a file, a glob pattern) or a list of them, not {bad[0]!r}")
    if isinstance(value, list):
        if None in value:       # a file that is not there is not one to skip
            raise ObookError(f"the feed path list has a NULL (item {value.index(None) + 1} of {len(value)})")
        return [_absolute(p) for p in value]
    return _absolute(value)


def _given_names(path_json: str) -> dict:
    """The files of a macro's ``path`` as it names them (its relative paths, a glob pattern's
    matches), by the absolute paths :func:`_source` gives: the ``filename`` column says what
    the query said, as obook.bbo and the polars scans do."""
    from .tables.open import names_given

    value = _pieces(_load_path(path_json))[0]
    return names_given(value if isinstance(value, list) else [value])


def _order_path(path_json: str | None) -> str | None:
    """The order file a macro names (passed as ``to_json``, so that a number or a list reaches
    this check, not DuckDB's binder error naming the UDF): text, one file; NULL is None."""
    import json

    value = None if path_json is None else json.loads(path_json)
    if value is not None and not isinstance(value, str):
        raise ObookError(f"the order path must be text (one file), not {value!r}")
    return value


def _absolute(path: str):
    from .tables.open import is_pattern

    full = os.path.abspath(os.path.expanduser(path))
    return full if is_pattern(path) else _check_path(path)


def _frozen(value):
    return tuple(value) if isinstance(value, list) else value


class _Opened:
    """The tables opened by the registry macros' slots: argument tuple -> ``Opened``."""

    def __init__(self):
        self.by_args: dict = {}

    def schema_of(self, args):
        return self.by_args[args].schema

    def open(self, *args):
        return AsGiven(self.by_args[args].reader(), dict(args[3]))


def _registry_slot(pool: _Pool, opened: _Opened, name: str, options: tuple[str, ...]):
    """The bind-time UDF of a registry table macro: check the arguments (open the table:
    its schema), pick a pool entry."""
    def assign(path_json, values, compared, query):
        try:
            return checked(path_json, values, query)
        except FormatError as e:
            raise e.hinted("pass format := 'NAME'") from None
        except ObookError as e:
            if compared and options[0] in str(e):     # (an error about that option)
                raise ObookError(f"{e}{_equals_hint(options[0])}") from e
            raise

    def checked(path_json, values, query):
        import json

        from .tables.open import Opened

        source = _source(path_json)
        given = {k: (list(v) if isinstance(v, list) else v) for k, v in zip(options, values) if v is not None}
        if "tickers" in given:      # passed as to_json(tickers): a list or a text
            given["tickers"] = _check_tickers(json.loads(given["tickers"]))
            if given["tickers"] is None:
                del given["tickers"]
        if "levels" in given:
            _check_levels(given["levels"])
        if "interval" in given:     # checked now: an error of the query's binding, not of its scan
            from .klines import interval_ns

            interval_ns(given["interval"])
        names = _given_names(path_json)     # (the filename column; the files an error names)
        args = (name, _frozen(source), tuple(sorted((k, _frozen(v)) for k, v in given.items())),
                tuple(sorted(names.items())))
        if args not in opened.by_args:
            try:
                opened.by_args[args] = Opened(name, source, given, names)
            except ObookError as e:     # (files of two formats, the same file twice ...)
                name_as_given(e, names)
                raise
        return pool.assign(args, query)

    # DuckDB wants the UDF's own arity: slot(path_json, <one per option>, compared, query)
    names = [f"v{i}" for i in range(len(options))]
    scope = {"assign": assign}
    exec(f"def slot(path_json, {', '.join(names + ['compared', 'query'])}):\n"
         f"    return assign(path_json, [{', '.join(names)}], compared, query)\n", scope)
    return scope["slot"]


def _equals_hint(first: str) -> str:
    """What an error about a macro's first option adds when it was given a BOOLEAN: most likely
    a ``name = value`` comparison, which DuckDB passes by position."""
    return (" (an option is given as name := value: name = value is a comparison, whose true or false was "
            f"taken for {first})")


def _compared(first: str, sql_type: str) -> str:
    """SQL of whether a macro's first option holds a ``name = value`` argument: DuckDB passes it
    by position, a comparison's BOOLEAN (an option of another type given a BOOLEAN)."""
    return "false" if sql_type == "BOOLEAN" else f"typeof({first}) = 'BOOLEAN'"


def _registry_macros(con, token: str, pool_size: int) -> None:
    """``obook_<table>(path, option := default ...)`` for every table of the registry
    (``obook.tables``), over one pool of stream sources shared by them."""
    from .tables import OPTIONS, offered, tables

    opened = _Opened()
    pool = _Pool(f"__obook_{token}", pa.schema([pa.field("none", pa.int8())]), opened.open, pool_size,
                 opened.schema_of)
    pool.register(con)
    for name, spec in tables().items():
        if not offered(name, "duckdb"):
            continue
        options = spec.all_options()
        # a list option comes as to_json(...): text or a list alike, checked by the slot
        named = {o: (_sql_default(OPTIONS[o].default), _duck_type("VARCHAR" if OPTIONS[o].sql_type.endswith("[]")
                                                                  else OPTIONS[o].sql_type)) for o in options}
        lists = {o for o in options if OPTIONS[o].sql_type.endswith("[]")}
        fn = f"__obook_{name}_slot_{token}"
        con.create_function(fn, _registry_slot(pool, opened, name, options),
                            [_duck_type("VARCHAR")] + [t for _, t in named.values()]
                            + [_duck_type("BOOLEAN"), _duck_type("UBIGINT")],
                            _duck_type("VARCHAR"), null_handling="special", side_effects=True)
        # DuckDB hands an argument given by position to the next parameter, default or not: a
        # parameter of no option after the positional ones takes it, an error naming it
        # (obook_depth('day.itch', 5) is not 5 workers, as depth(path, 5) is no call in Python)
        ahead = [o for o in spec.positional if o in named]
        params = ", ".join([f"{o} := {named[o][0]}" for o in ahead] + [f"{_BY_POSITION} := NULL"]
                           + [f"{o} := {default}" for o, (default, _) in named.items() if o not in ahead])
        # a name = value comparison lands, by position, in the first option only when that option
        # comes by position (obook_bars' interval); else in __by_position, whose error says so: a
        # true given by name (workers := true) is then no comparison, and its error says nothing of one
        hinted = options[0] if options[0] in ahead else None
        values = ", ".join(f"to_json({o})" if o in lists else _whole(o, t, _equals_hint(o) if o == hinted else "")
                           for o, (_, t) in named.items())
        compared = _compared(options[0], OPTIONS[options[0]].sql_type) if hinted else "false"
        call = f"{fn}({_path_json('path')}, {values}, {compared}, current_query_id())"
        con.execute(f"CREATE OR REPLACE TEMP MACRO obook_{name}(path, {params}) AS TABLE "
                    f"SELECT * FROM query_table(CASE WHEN {_BY_POSITION} IS NULL THEN {call} "
                    f"ELSE {_by_position_error(f'obook_{name}', ['path'] + ahead, [o for o in named if o not in ahead])} END)")


#: the parameter of a table macro that an argument given by position past its positional
#: options lands in
_BY_POSITION = "__by_position"


def _by_position_error(macro: str, heads: list[str], named: list[str]) -> str:
    """SQL raising the error of an argument given by position to ``macro`` past ``heads``
    (``__obook_by_position`` of ``obook.sql``)."""
    return f"__obook_by_position({_BY_POSITION}, '{macro}', '{', '.join(heads)}', '{', '.join(named)}')"


def _whole(name: str, sql_type, boolean_hint: str = "") -> str:
    """Option ``name`` as a macro hands it to its UDF: an integer option given as 5.5, 2.0, '5',
    'x', (unsigned) -3 or beyond 64 bits is an error naming the option, not DuckDB's binder error naming the UDF, and
    so is a true/false option given as 5 or 'x' (``__obook_flag`` of ``obook.sql``), a
    number given as text ('x', '5') and a number given true or false (never read as 1 or 0, as in Python);
    a text option given as a number or an INTERVAL is its text (the UDF's check names the option);
    ``date`` given a TIMESTAMP at midnight (no zone) is its day, as a datetime at midnight is in Python.
    ``boolean_hint``: what the error of a number given true or false adds."""
    sql_type = str(sql_type).upper()
    if sql_type == "VARCHAR" and name == "date":
        instant = f"TRY_CAST({name} AS TIMESTAMP)"
        return (f"CASE WHEN typeof({name}) IN ('TIMESTAMP', 'TIMESTAMP_NS', 'TIMESTAMP_MS', 'TIMESTAMP_S') "
                f"AND {instant} = date_trunc('day', {instant}) THEN CAST(TRY_CAST({name} AS DATE) AS VARCHAR) "
                f"ELSE CAST({name} AS VARCHAR) END")
    if sql_type == "VARCHAR":
        return f"CAST({name} AS VARCHAR)"
    if sql_type == "BOOLEAN":
        return f"CASE WHEN __obook_flag({name}, '{name}') THEN TRY_CAST(CAST({name} AS VARCHAR) AS BOOLEAN) END"
    if sql_type == "DOUBLE":
        what, value = "a number", f"TRY_CAST({name} AS DOUBLE)"
        given, beyond, shown = f"__obook_number({name})", "", "__obook_shown"
    elif sql_type in ("BIGINT", "UBIGINT"):
        what = "an integer" if sql_type == "BIGINT" else "an integer, at least 0"
        value = f"TRY_CAST({name} AS {sql_type})"
        given, shown = f"__obook_integer({name}) AND {value} IS NOT NULL", "__obook_not_int"
        low, high = (-(1 << 63), (1 << 63) - 1) if sql_type == "BIGINT" else (0, (1 << 64) - 1)
        beyond = (f"WHEN __obook_integer({name}) AND TRY_CAST({name} AS DOUBLE) {'<> 0' if low else '> 0'} "
                  f"THEN error(concat('{name} ', CAST({name} AS VARCHAR), ' is beyond 64 bits (an integer from {low} "
                  f"to {high})')) ")
    else:
        return name
    hint = _sql_default(boolean_hint)
    return (f"CASE WHEN {name} IS NULL THEN NULL "
            f"WHEN typeof({name}) = 'BOOLEAN' THEN error(concat('{name} must be {what}, not ', CAST({name} AS VARCHAR), {hint})) "
            f"WHEN {given} THEN {value} {beyond}"
            f"ELSE error(concat('{name} must be {what}, not ', {shown}({name}))) END")


def _sql_default(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def _unit(path_json, fmt, key):
    """A unit of the feed's tables (``obook.tables.units``): ``price_scale`` (a factor),
    ``quantity_scale``, ``time_unit_ns`` (ns per unit of ``time``), ``time_origin``
    (``midnight`` or ``epoch``)."""
    import json

    from .tables.feed_units import feed_unit

    if path_json is None or path_json == "null":
        raise ObookError("obook_unit: the feed is NULL; give the path of the feed the values came from, "
                         "as in obook_price(price, 'day.itch')")
    try:
        json.loads(path_json)
    except ValueError:
        raise ObookError(f"obook_unit: give the feed as to_json(path) (JSON text), not {path_json!r}") from None
    source = _source(path_json)     # (a number, true: an error naming it, before any file is named)
    try:
        return feed_unit(source, fmt, key)
    except ObookError as e:
        name_as_given(e, _given_names(path_json))
        raise


def install(con: duckdb.DuckDBPyConnection, *, pool_size: int = POOL_SIZE) -> duckdb.DuckDBPyConnection:
    """Register obook's table macros, SQL macros and scalar UDFs on ``con``.

    Adds ``obook_bbo(path, workers := NULL, format := NULL, on_error := 'raise',
    tickers := NULL, date := NULL)`` (``tickers := ['AAPL', 'MSFT']``: replay only those
    books; a ticker the feed does not name is an error) and ``obook_trades``, ``obook_orders`` with the same arguments,
    ``obook_depth`` with them and ``levels := 10`` (1 to 50 a side, the columns of
    ``depth_schema(levels)``); with a session date (``date := 'YYYY-MM-DD'`` or from a
    Nasdaq file name) their rows have ``timestamp``,
    ``obook_messages(path)``, the matching engine's ``obook_match(path, workers := 1,
    tick := 1, stp := NULL, instruments := NULL, day_end := true, date := NULL)`` (fills),
    ``obook_match_events``, ``obook_match_bbo`` and ``obook_match_depth`` (with ``levels := 10``)
    over an order-entry file (``obook.match``; its options as ``obook.tables.runs`` declares them), ``obook_simulate(feed, orders, latency := 0, seed := 0,
    horizon := 1.0, workers := NULL, format := NULL, on_error := 'raise', day_end := true,
    date := NULL)`` (your fills inside a replayed feed; with a session date, ``timestamp``) with
    ``obook_simulate_events``, ``obook_simulate_summary``, ``obook_simulate_bbo``, ``obook_simulate_depth``, the backtest's ``obook_backtest(feed, strategy, ...)`` with ``obook_backtest_orders``, ``_events``, ``_positions``, ``_equity`` (their options: ``obook.tables.runs``), the macros of ``obook.sql`` (``obook_spread``,
    ``obook_twas``, ``obook_bbo_grid`` ...) and the scalar functions of ``obook.udfs``
    (``obook_scaled_price``, ``obook_time_of_day`` ...; ``obook_price(price, feed)`` is a
    macro of ``obook.sql``). Returns ``con``.

    Everything is per connection; calling it again on the same connection replaces the
    macros. It also sets ``asof_loop_join_threshold = 0`` on ``con`` (see below). Python UDFs live in the database's catalog, so their names carry a token
    unique to this install (connections and cursors of one database don't collide).
    """
    with _token_lock:
        token = f"{os.getpid()}_{next(_tokens)}"

    with _hidden(con):
        _install(con, token, pool_size)
    return con


@contextmanager
def _hidden(con):
    """Attach the hidden in-memory catalog and make it the default while the pools' views
    are created (a view is created in the default catalog); then restore the user's."""
    db, schema = con.execute("SELECT current_database(), current_schema()").fetchone()
    con.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {HIDDEN} (READ_WRITE)")   # a read-only database too
    con.execute(f"USE {HIDDEN}")
    try:
        yield
    finally:
        con.execute(f"USE {_quoted(db)}.{_quoted(schema)}")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _install(con, token: str, pool_size: int) -> None:
    varchar = _duck_type("VARCHAR")
    _registry_macros(con, token, 2 * pool_size)

    shared = _Shared(f"__obook_runs_{token}", 2 * pool_size)
    _match_macros(con, token, shared)      # the matching engine's tables (order entry in)
    # own orders inside a replayed feed (obook.simulate)
    _simulate_macros(con, token, shared)
    _backtest_macros(con, token, shared)
    shared.pool.register(con)

    # obook_bbo_grid's ASOF join has a generated grid on its left, which DuckDB estimates
    # at a handful of rows; below this threshold it plans a nested loop join plus arg_max,
    # quadratic in rows per ticker (minutes on a real day). The setting is per connection.
    try:
        con.execute("SET asof_loop_join_threshold = 0")
    except duckdb.Error:   # a DuckDB without the setting has no loop-join ASOF path either
        pass

    # the units of a feed's tables (the SQL macros read them): obook_unit(to_json(path), format, key)
    if not con.execute("SELECT count(*) FROM duckdb_functions() "
                       "WHERE function_name = 'obook_unit'").fetchall()[0][0]:
        con.create_function("obook_unit", _unit, [varchar, varchar, varchar], varchar,
                            null_handling="special", side_effects=False)

    udfs = shipped_package("udfs")
    sql_macros = shipped_package("sql")
    udfs.register(con)
    for _name, text in sql_macros.macro_texts():
        con.execute(text)


def connect(database: str = ":memory:", *, read_only: bool = False,
            config: dict | None = None) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect(...)`` with :func:`install` already applied, its ``TimeZone`` UTC
    (``timestamp`` columns are UTC; ``obook sql`` runs on this connection, so both show the
    same instants the same way) unless ``config`` names one. A database that cannot be
    opened raises ObookError naming it, and so does an argument of the wrong kind."""
    from .checks import check_flag, check_path

    database = check_path("database", database)
    read_only = check_flag("read_only", read_only)
    if config is not None and not isinstance(config, dict):
        raise ObookError(f"config must be a dict of DuckDB settings, not {config!r}")
    try:
        con = duckdb.connect(database, read_only=read_only, config=config or {})
    except duckdb.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ObookError(f"{database}: cannot open the DuckDB database: {first}") from e
    try:
        if "TimeZone" not in (config or {}):
            try:
                con.execute("SET TimeZone = 'UTC'")
            except duckdb.Error:   # a DuckDB without ICU shows every TIMESTAMPTZ in UTC already
                pass
        return install(con)
    except BaseException:
        con.close()
        raise
