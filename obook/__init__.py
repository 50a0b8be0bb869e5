"""obook: replay exchange market-data feeds through limit order books into Arrow,
DuckDB, polars and Parquet.

    >>> import obook
    >>> reader = obook.bbo("12302019.NASDAQ_ITCH50.gz", workers=2)   # pyarrow.RecordBatchReader
"""

from __future__ import annotations

import importlib
import logging
import sys
import types

from ._version import __version__
from .errors import FeedError, ObookError, OutputError, TruncatedFeedError, WorkerError

logging.getLogger("obook").addHandler(logging.NullHandler())

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
               "simulation", "live")


class _ConvertModule(types.ModuleType):
    """``obook.convert`` as a module name (``from obook.convert import TABLES``) whose names
    are those of ``obook.to_parquet``, loaded on first use. It sits in ``sys.modules``, so
    ``import obook.convert`` never rebinds the attribute ``obook.convert``: that stays the
    function :func:`obook.to_parquet.convert`."""

    def __getattr__(self, name):
        return getattr(importlib.import_module("obook.to_parquet"), name)

    def __setattr__(self, name, value):   # monkeypatching obook.convert.X patches the module
        if name.startswith("__"):
            super().__setattr__(name, value)
        else:
            setattr(importlib.import_module("obook.to_parquet"), name, value)

    def __delattr__(self, name):
        delattr(importlib.import_module("obook.to_parquet"), name)

    def __dir__(self):
        return dir(importlib.import_module("obook.to_parquet"))


sys.modules.setdefault(__name__ + ".convert", _ConvertModule(__name__ + ".convert"))


def bbo(path, workers: int | None = None, format: str | None = None, on_error: str = "raise",
        stats: dict | None = None, date=None, tickers=None):
    """Replay a feed and stream its BBO rows (``bbo_schema``) as a ``pyarrow.RecordBatchReader``.

    ``path``: a feed file (plain, gzip or zstd), a list of files that form one feed (read in
    order, or merged by the format's own sequence numbers), or a binary stream (a file-like
    object or a socket; give ``format``).
    ``workers``: processes that apply the books (default: one per core, at most 8;
    1 runs in this process). ``format``: a registered format name ("itch", "csv" ...;
    default: detected from the file).
    ``on_error``: "raise" stops at the first failing record after delivering every
    earlier row; "skip" applies the tolerant rules and counts what it skipped.
    ``stats``: a dict filled in when the reader is exhausted (records, rows, skipped ...).
    ``date``: the session date (``YYYY-MM-DD``; default from a Nasdaq file name
    ``MMDDYYYY.NASDAQ_ITCH50[.gz]``). When it is known, every table has a ``timestamp``
    column after ``time`` (``timestamp[ns, America/New_York]``: session midnight + time).
    ``tickers``: replay only these tickers' books (a list or a comma-separated string; the
    other books' records are skipped after framing); a ticker the feed does not name raises
    ``ObookError`` at the end of the replay.
    """
    from .engine.replay import Replay

    replay = Replay(path, workers=workers, format=format, on_error=on_error, date=date, tickers=tickers)
    if stats is None:
        return replay.reader()

    def batches():
        yield from replay.batches()
        stats.update(replay.stats)

    import pyarrow as pa
    return pa.RecordBatchReader.from_batches(replay.schema("bbo"), batches())


def mbp1(path, workers: int | None = None, format: str | None = None, on_error: str = "raise"):
    """A Databento MBO feed as Databento's ``mbp-1`` schema (its columns and meaning): one row
    per event that changes a side's best level and one per trade, with the book's top level
    after it. Options as :func:`bbo`."""
    return _format_table("mbp1", path, workers, format, on_error)


def mbp10(path, workers: int | None = None, format: str | None = None, on_error: str = "raise"):
    """As :func:`mbp1` with the top 10 levels (Databento's ``mbp-10``)."""
    return _format_table("mbp10", path, workers, format, on_error)


def _format_table(name, path, workers, format, on_error):
    """A table a format offers besides the replay's (``FeedFormat.tables``), built by the
    ``reader`` its package names in ``TABLES`` over one replay."""
    from .engine.replay import Replay
    from .feeds import format_package, load, resolve_format

    fmt = resolve_format(format, path)
    if name not in fmt.tables:
        raise ObookError(f"a {fmt.name} feed has no table {name!r}")
    return load(format_package(fmt).TABLES)(name, path, workers, on_error, Replay)


def _table(table, path, workers, format, on_error, levels=10, date=None, tickers=None, **options):
    from .engine.replay import Replay

    return Replay(path, workers=workers, format=format, on_error=on_error, tables=(table,),
                  levels=levels, date=date, tickers=tickers, **options).reader(table)


def trades(path, workers: int | None = None, format: str | None = None, on_error: str = "raise",
           date=None, tickers=None):
    """Every execution and trade print in feed order (``trades_schema``): E at the resting
    order's price (from the book), printable C at its own price, P and Q as given, and B
    rows naming the match number a break cancels; ``broken``: a later B names the trade's
    match (an ITCH feed is read once more first, for its B messages). CSV feeds: E and the
    prints T and X, with the order id as text (``order_id``). Options as :func:`bbo`."""
    return _table("trades", path, workers, format, on_error, date=date, tickers=tickers)


def orders(path, workers: int | None = None, format: str | None = None, on_error: str = "raise",
           date=None, tickers=None, queue_positions: bool = True):
    """Order-level rows (``orders_schema``): one per book-changing record, with the resting
    order's side, price and remaining shares after it, so each row stands alone, and its
    place in its level's queue (``queue_shares_ahead``, ``queue_orders_ahead``).
    ``queue_positions=False``: those two columns null, and the replay keeps no queues (about
    1.7x faster: benchmarks/bench_replay_cpu.py --no-queue). Options as :func:`bbo`."""
    return _table("orders", path, workers, format, on_error, date=date, tickers=tickers,
                  queue_positions=queue_positions)


def depth(path, workers: int | None = None, format: str | None = None, on_error: str = "raise",
          levels: int = 10, date=None, tickers=None):
    """The top ``levels`` price levels a side (``depth_schema(levels)``), one row per record
    that changes any of them (price, shares or order count). Options as :func:`bbo`."""
    return _table("depth", path, workers, format, on_error, levels, date, tickers)


def audit(path, workers: int | None = None, on_error: str = "raise", format: str | None = None):
    """Level-2 logs with exchange snapshots (Shanghai AX-SBE): one row per snapshot comparing
    its 10 levels and day tallies with the book rebuilt from the ticks
    (``obook.feeds.sse.schema.audit_schema``), as a ``pyarrow.RecordBatchReader``."""
    return _format_table("audit", path, workers, format, on_error)


def bars(path, interval="1 minute", workers: int | None = None, format: str | None = None,
         on_error: str = "raise", date=None):
    """OHLCV bars (K-lines) of every security's printed trades per ``interval`` ('1 minute',
    '1s', a timedelta, or ns), any format (``obook.klines.bars_schema``), as a
    ``pyarrow.RecordBatchReader``. Options as :func:`bbo`."""
    from .klines import bars as _bars
    import pyarrow as pa

    t = _bars(path, interval, workers, format, on_error, date)
    return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())


def _side(table, path):
    from .feeds import side_table_reader

    return side_table_reader(path, table)    # streamed: millions of R cost one batch


def symbols(path):
    """The ITCH stock directory (``R``): locate, stock and the directory fields."""
    return _side("symbols", path)


def system_events(path):
    """The ITCH system events (``S``): seq, time, event code."""
    return _side("system_events", path)


def trading_actions(path):
    """The ITCH trading actions (``H``): seq, time, locate, stock, state, reason."""
    return _side("trading_actions", path)


def gaps(path):
    """A capture feed's messages lost on every line (``obook.lines`` or a capture path):
    first_seq, last_seq, count and the capture times around the gap."""
    return _side("gaps", path)


def line_stats(path):
    """A capture feed's statistics per line: packets, messages, duplicates, gaps, recovered
    from the other line, heartbeats, bad packets, wrong session, backwards, implausible
    sequence numbers."""
    return _side("line_stats", path)


def lines(a=None, b=None, *more):
    """A feed of MoldUDP64 lines in packet captures, each ``CAPTURE[:ADDRESS:PORT]``:
    ``obook.bbo(obook.lines(a="A.pcap:233.54.12.111:26477", b="B.pcap:233.54.12.112:26477"))``.
    Every table of it gets ``mold_seq``, ``line`` and ``ts_recv``."""
    from .feeds.mold.lines import lines as _lines

    return _lines(a, b, *more)


def read_itch(path):
    """Decoded ITCH messages (``itch_message_schema``) as a ``pyarrow.RecordBatchReader``."""
    from .feeds.itch.messages import read_itch as _read

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
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'obook' has no attribute {name!r}")


__all__ = [
    "bbo", "match", "simulate", "listen", "trades", "orders", "depth", "audit", "bars", "mbp1", "mbp10", "symbols", "system_events", "trading_actions", "gaps", "line_stats", "lines", "read_itch", "trades_schema", "orders_schema", "depth_schema", "connect", "scan_bbo", "scan_trades", "scan_orders", "scan_depth", "scan_messages", "convert", "scan_dataset", "bbo_schema", "itch_message_schema", "ObookError", "FeedError",
    "TruncatedFeedError", "WorkerError", "OutputError", "__version__",
]
