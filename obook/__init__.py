"""obook: replay exchange market-data feeds through limit order books into Arrow,
DuckDB, polars and Parquet.

    >>> import obook
    >>> reader = obook.bbo("12302019.NASDAQ_ITCH50.gz", workers=2)   # pyarrow.RecordBatchReader
"""

from __future__ import annotations

import importlib

from . import _compile_notes
from ._version import __version__
from .errors import FeedError, FormatError, ObookError, OutputError, TruncatedFeedError, WorkerError

_compile_notes.install()    # a first compile is said on stderr; other warnings stay on the logger

# Everything else loads on first use (``import obook`` loads no DuckDB, polars, numba or
# kernels): the schemas, ``convert`` and the adapter modules ``obook.duckdb``,
# ``obook.polars`` ... are found by the module ``__getattr__`` at the end of this file.
_LAZY = {
    "bbo_schema": "obook.schema", "trades_schema": "obook.schema", "orders_schema": "obook.schema",
    "depth_schema": "obook.schema", "itch_message_schema": "obook.schema",
    "convert": "obook.to_parquet", "connect": "obook.duckdb", "scan_dataset": "obook.dataset",
    "match": "obook.matching", "simulate": "obook.simulation", "listen": "obook.live",
}
_SUBMODULES = ("duckdb", "polars", "lobster", "dataset", "schema", "session", "feeds", "engine",
               "output", "to_parquet", "pipelines", "udfs", "sql", "cli", "gen", "matching",
               "simulation", "live", "tables", "klines", "backtest")


def bbo(path, *, workers: int | None = None, format: str | None = None, on_error: str = "raise",
        stats: dict | None = None, date=None, tickers=None, prices: str = "int", filename: bool = False, **options):
    """Replay a feed and stream its BBO rows as a ``pyarrow.RecordBatchReader``.

    ``path``: a feed file (plain, gzip or zstd); a list of feed files or a glob pattern
    (``"days/*.itch"``): each file replayed on its own, their rows one file after the other
    (``filename=True`` adds the file of each row); a tuple of files that form one feed
    (read in order, or merged by the format's own sequence numbers); or a binary stream (a
    file-like object, its format and compression told from its first bytes; a socket: give
    ``format``).
    ``workers``: processes that apply the books (default: one per core, at most 8, and one
    for a feed under 1 MiB; 1 runs in this process). ``format``: a registered format name ("itch", "csv" ..., any
    case; default, None or "": detected from the file).
    ``on_error``: "raise" stops at the first failing record after delivering every
    earlier row; "skip" applies the tolerant rules and counts what it skipped (any case).
    ``stats``: a dict filled in when the reader is exhausted (records, rows, skipped ...;
    with the feed's integer prices, without ``filename``).
    ``date``: the session date (``YYYY-MM-DD``; default: the feed's own, from a Nasdaq file
    name ``MMDDYYYY.NASDAQ_ITCH50[.gz]``, a ``YYYY-MM-DD`` or ``YYYYMMDD`` in a CSV or Shanghai
    log's name, a Shenzhen feed's first TransactTime; a date that differs from the feed's is
    used, with a warning on the ``obook`` logger). When it is known, every table has a ``timestamp``
    column after ``time`` (``timestamp[ns, UTC]``: the session's midnight in the feed's zone + time).
    ``tickers``: replay only these tickers' books (a list or a comma-separated string; the
    other books' records are skipped after framing); a ticker the feed does not name raises
    ``ObookError`` at the end of the replay.
    ``prices``: "int" (the feed's integers; the schema's ``obook.price_scale`` says how
    many make a currency unit), "decimal" (exact) or "float".
    ``filename``: True adds a ``filename`` column (the feed file of each row).
    The units of every column are in the schema metadata (``obook.tables.units``).
    An option the table does not take is an ``ObookError`` naming the ones it does.
    """
    if stats is None:
        return table("bbo", path, workers=workers, format=format, on_error=on_error, date=date, tickers=tickers,
                     prices=prices, filename=filename, **options)
    from .checks import check_feed_path
    from .engine.replay import Replay
    from .tables import table as spec
    from .tables.open import check_options

    if not isinstance(stats, dict):
        raise ObookError(f"stats must be a dict (filled in when the reader is exhausted), not {stats!r}")
    o = check_options(spec("bbo"), dict(options, workers=workers, format=format, on_error=on_error, date=date,
                                         tickers=tickers, prices=prices, filename=filename))
    if o["prices"] != "int" or o.get("filename"):
        raise ObookError("stats= reads the feed's integer prices of one feed: prices='int', no filename")
    check_feed_path(path)
    replay = Replay(path, workers=o.get("workers"), format=o.get("format"), on_error=o.get("on_error", "raise"),
                    date=o.get("date"), tickers=o.get("tickers"), **options)

    def batches():
        yield from replay.batches()
        stats.update(replay.stats)

    import pyarrow as pa
    return pa.RecordBatchReader.from_batches(replay.schema("bbo"), batches())


def table(name: str, path, **options):
    """Table ``name`` (any of ``obook.tables.tables()``) of a feed as a
    ``pyarrow.RecordBatchReader``; ``options`` are the table's (``obook.tables.OPTIONS``)."""
    from .tables import open_table

    return open_table(name, path, **options)


def _reader_function(name: str):
    """``obook.<name>(path, **options)``, derived from the table's declaration."""
    from functools import partial

    from .tables import front_function, options_doc, table as spec_of

    read = front_function(name, name, partial(table, name))
    read.__module__ = __name__
    read.__doc__ = f"{spec_of(name).doc}\n\n{options_doc(name)} Returns a ``pyarrow.RecordBatchReader``."
    return read


def lines(a=None, b=None, *more):
    """A feed of MoldUDP64 lines in packet captures, each ``CAPTURE[:ADDRESS:PORT]``:
    ``obook.bbo(obook.lines(a="A.pcap:233.54.12.111:26477", b="B.pcap:233.54.12.112:26477"))``.
    Every table of it gets ``mold_seq``, ``line`` and ``ts_recv``."""
    from .checks import check_path
    from .feeds.mold.lines import lines as _lines

    for spec in (a, b, *more):
        if spec is not None:
            check_path("a line (CAPTURE[:ADDRESS:PORT])", spec)

    return _lines(a, b, *more)


def read_itch(path):
    """Decoded ITCH messages (``itch_message_schema``) of one feed (a file, a stream, or a
    tuple of the files of one feed) as a ``pyarrow.RecordBatchReader``; a glob pattern is an
    ``ObookError`` (``obook.messages`` reads the files of a pattern, each on its own)."""
    import os

    from .checks import check_feed_path
    from .feeds.itch.messages import read_itch as _read
    from .tables.open import is_pattern

    check_feed_path(path)
    if is_pattern(path):
        raise ObookError(f"{os.fspath(path)}: read_itch reads one feed, not a glob pattern; "
                         "obook.messages(pattern) reads each file")
    return _read(path)


def __getattr__(name):
    # the adapters, schemas and convert load on first use: importing polars costs ~0.5 s,
    # DuckDB and the kernels too
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name.startswith("scan_"):
        return getattr(importlib.import_module("obook.polars"), name)
    if not name.startswith("_"):
        from .tables import tables

        if name in tables():
            value = globals()[name] = _reader_function(name)
            return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'obook' has no attribute {name!r}")


#: every table's reader is ``obook.<table>``, and its polars scan ``obook.scan_<table>``
#: (``obook.tables.tables()``; tests/test_front.py holds this list to it)
_TABLES = ("bbo", "trades", "orders", "depth", "bars", "messages", "spread", "twas", "bbo_grid", "symbols",
           "system_events", "trading_actions", "cross_trades", "mbp1", "mbp10", "audit", "gaps", "line_stats")

__all__ = [
    *_TABLES, *(f"scan_{t}" for t in _TABLES), "table", "match", "simulate", "backtest", "listen", "lines",
    "read_itch", "bbo_schema", "trades_schema", "orders_schema", "depth_schema", "itch_message_schema", "connect",
    "convert", "scan_dataset", "ObookError", "FeedError", "TruncatedFeedError", "FormatError", "WorkerError",
    "OutputError", "__version__",
]


def __dir__():
    # the readers, scans and adapters appear on first use: a notebook's completion offers them before
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
