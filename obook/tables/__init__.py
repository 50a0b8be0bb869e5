"""The tables, declared once: what each holds, its options, the units of its columns, which
formats produce it and which front ends offer it.

Every front end derives from this registry: the Python functions (``obook.bbo``,
``obook.mbp10`` ...), the DuckDB table macros (``obook_<table>``), the polars scans
(``scan_<table>``), ``convert``'s ``tables`` and the CLI's choices, and the docs' table
reference (:func:`reference_markdown`). A format plug-in adds tables of its own by naming
them in its ``FORMAT`` (``tables`` with ``table_reader`` / ``table_schema``, or
``side_tables``) and describing them in ``FORMAT.table_info``: they then appear in every
front end with no other edit.

Cheap to import (no pyarrow): readers are opened by :mod:`obook.tables.open`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ObookError

#: the front ends every table is offered in
FRONT_ENDS = ("python", "duckdb", "polars", "convert")


@dataclass(frozen=True)
class Option:
    """One option of a table: its name, default, DuckDB type and meaning; ``choices``: the
    words it takes (in any case), none for a free value."""

    name: str
    default: Any
    sql_type: str
    doc: str
    choices: tuple[str, ...] = ()


OPTIONS = {o.name: o for o in (
    Option("workers", None, "BIGINT", "worker processes applying the books (default: one per core, at most 8; one for a feed under 1 MiB)"),
    Option("format", None, "VARCHAR", "the feed format, a name in any case (default, or '': detected from the "
                                      "file); a table file (Parquet, Arrow) is no feed: refused, format given "
                                      "or not"),
    Option("on_error", "raise", "VARCHAR", "raise: stop at the first bad record (after every earlier row); "
                                           "skip: apply the tolerant rules (a feed cut short is still an error)",
           ("raise", "skip")),
    Option("tickers", None, "VARCHAR[]", "replay only these tickers' books (one the feed never names: an error "
                                         "after the rows; on the command line a warning)"),
    Option("date", None, "VARCHAR", "the session date YYYY-MM-DD (default: the format's, e.g. a Nasdaq file "
                                    "name; a date that differs from it is used, with a warning); when known the rows get a `timestamp` (UTC)"),
    Option("levels", 10, "BIGINT", "price levels a side (1 to 50)"),
    Option("queue_positions", True, "BOOLEAN", "false: the queue columns null and no queues kept (faster)"),
    Option("interval", "1 minute", "VARCHAR",
           "the bar length ('1 minute', '5s', '100 ms'; in Python a timedelta or an integer of ns too)"),
    Option("prices", "int", "VARCHAR", "int: the feed's integers; decimal: exact decimals of the currency; "
                                       "float: float64 of the currency", ("int", "decimal", "float")),
    Option("filename", False, "BOOLEAN", "add a `filename` column (the feed file of each row)"),
    Option("every", None, "UBIGINT", "the grid step in feed time units (a positive integer)"),
    Option("start_time", None, "UBIGINT", "the window's (grid's) first time, feed time units (default: the "
                                          "feed's first; a grid's: its first BBO time rounded up to a "
                                          "multiple of `every`)"),
    Option("end_time", None, "UBIGINT", "the window's (grid's) last time, feed time units (default: the "
                                        "feed's last BBO time, of the tickers replayed when `tickers` is "
                                        "given); before start_time is an error"),
)}

#: options every table takes
COMMON = ("prices", "filename")
REPLAY_OPTIONS = ("workers", "format", "on_error", "tickers", "date")


@dataclass(frozen=True)
class Table:
    """A table: ``source`` says how its rows are made: ``replay`` (the engine's books),
    ``bars`` (from the trades), ``analytics`` (from the BBO: obook.analytics; DuckDB has
    them as the SQL macros of ``sql/``), ``messages`` (the format's decoded records),
    ``side`` (a format's side table) or ``format`` (a format's own table). ``per_ticker``:
    a ticker's rows do not depend on the other tickers' (a polars filter on ``ticker`` may
    replay only those books)."""

    name: str
    doc: str
    source: str
    options: tuple[str, ...] = ()
    prices: tuple[str, ...] = ()          # price columns (fnmatch patterns)
    quantities: tuple[str, ...] = ()      # quantity columns (fnmatch patterns)
    times: tuple[str, ...] = ("time",)    # feed time columns (points in time)
    durations: tuple[str, ...] = ()       # lengths of time in the feed time unit (no point in time)
    front_ends: tuple[str, ...] = FRONT_ENDS
    positional: tuple[str, ...] = ()      # options also taken by position after the path
    per_ticker: bool = True

    def all_options(self) -> tuple[str, ...]:
        return self.options + COMMON

    def required(self) -> tuple[str, ...]:
        """The options a reader of this table must be given (positional, no default)."""
        return tuple(o for o in self.positional if OPTIONS[o].default is None)


_DEPTH = ("bid_px_*", "ask_px_*")
_CORE = (
    Table("bbo", "The best bid and offer after every record that changes it: price, shares and orders a side "
                 "(null when the side is empty).", "replay", REPLAY_OPTIONS,
          ("bid_px", "ask_px"), ("bid_qty", "ask_qty")),
    Table("trades", "One row per execution or trade print, in feed order: kind, price, shares, the resting "
                    "side (null for a print without one), order reference and match number; `broken` when a "
                    "later break names it. No sentinel prices: an absent price is null.", "replay",
          REPLAY_OPTIONS, ("price",), ("shares",)),
    Table("orders", "One row per book-changing record with the resting order's state after it and its place in "
                    "its level's queue.", "replay", REPLAY_OPTIONS + ("queue_positions",),
          ("price",), ("shares", "remaining", "queue_shares_ahead")),
    Table("depth", "The top `levels` price levels a side, one row per record that changes any of them.",
          "replay", REPLAY_OPTIONS + ("levels",), _DEPTH, ("bid_qty_*", "ask_qty_*")),
    Table("bars", "OHLCV bars (K-lines) per ticker and interval of the printed, unbroken trades: open, high, "
                  "low, close, volume (the executed quantity), turnover (sum of price x quantity, exact), vwap, "
                  "trades (volume and turnover count the feed's quantity unit: divide by the schema's "
                  "`obook.quantity_scale` for shares, 1000 on Shanghai, 100 on Shenzhen); with a session date, `timestamp` (the bar start's instant) after `start`.", "bars", ("interval",) + REPLAY_OPTIONS,
          ("open", "high", "low", "close"), ("volume",), ("start",), positional=("interval",)),
    Table("messages", "The feed's decoded records, one row each.", "messages", (), ("price",), ("shares",)),
    Table("spread", "Every BBO row plus `spread_ticks` (ask - bid in the feed's integers), `spread` "
                    "(DECIMAL(38,9) currency) and `mid` (DECIMAL(38,10) currency), exact; null with a side empty. "
                    "In DuckDB: the SQL macro `obook_spread`.", "analytics", REPLAY_OPTIONS,
          ("bid_px", "ask_px"), ("bid_qty", "ask_qty"), front_ends=("python", "polars")),
    Table("twas", "One row per ticker: the time-weighted average spread (`twas_ticks`, and `twas` in the "
                  "currency), `quoted_time` with both sides quoted, `updates` (quoted BBO rows inside the "
                  "window), min and max spread. Each row's spread holds until the ticker's next row, the last until `end_time` (default: the feed's "
                  "last BBO time). A crossed book (a call auction's) counts as it is, a negative spread, and a "
                  "break as the spread it leaves, its length in `quoted_time` (Shanghai's and Shenzhen's lunch, "
                  "11:30 to 13:00, too): `start_time` / `end_time` keep to continuous trading, a window each side "
                  "of a lunch (their `twas_ticks` weighted by `quoted_time`). A window "
                  "of no BBO row (`start_time` after the last BBO time with `end_time` defaulted, `end_time` "
                  "before the first) is an error. In DuckDB: the SQL macro `obook_twas`.", "analytics",
          ("start_time", "end_time") + REPLAY_OPTIONS, (), (), (), durations=("quoted_time",),
          front_ends=("python", "polars"), per_ticker=False),
    Table("bbo_grid", "Every ticker's last BBO at or before each point of a regular grid of `every` feed time "
                      "units (`quote_seq`, `quote_time`: the row picked); with a session date, `timestamp` (the grid "
                      "point's instant) after `time`. In DuckDB: the SQL macro `obook_bbo_grid`.", "analytics", ("every", "start_time", "end_time") + REPLAY_OPTIONS,
          ("bid_px", "ask_px"), ("bid_qty", "ask_qty"), ("time", "quote_time"), front_ends=("python", "polars"),
          positional=("every",), per_ticker=False),
)


def _format_tables(formats) -> list[Table]:
    """The side tables and own tables the formats declare (first declaration wins)."""
    out: dict[str, Table] = {}
    for fmt in formats.values():
        for name, source in [(n, "side") for n in fmt.side_tables] + [(n, "format") for n in fmt.tables]:
            if name in out:
                continue
            info = dict(fmt.table_info.get(name, {}))
            times = tuple(info.get("times", ("time",)))
            # a side table of feed times takes date for its timestamp, as convert's does
            options = ("workers", "format", "on_error") if source == "format" else ("format", "date") if times \
                else ("format",)
            out[name] = Table(name, info.pop("doc", f"A table of {fmt.name} feeds."), source,
                              tuple(info.pop("options", options)), tuple(info.pop("prices", ())),
                              tuple(info.pop("quantities", ())), tuple(info.pop("times", ("time",))))
    return list(out.values())


_tables: dict[str, Table] | None = None


def tables() -> dict[str, Table]:
    """Every table by name: obook's own, then those the formats declare."""
    global _tables
    if _tables is None:
        from ..feeds import formats

        _tables = {t.name: t for t in _CORE + tuple(_format_tables(formats()))}
    return _tables


def table(name: str) -> Table:
    """One table's declaration; an unknown name raises ``ObookError``."""
    try:
        return tables()[name]
    except KeyError:
        raise ObookError(f"unknown table {name!r}; choose from {', '.join(tables())}") from None


def produces(fmt, name: str) -> bool:
    """Whether a format (a FeedFormat) produces the table ``name``."""
    t = table(name)
    if t.source in ("replay", "bars", "analytics"):
        return True
    if t.source == "messages":
        return fmt.messages is not None
    if t.source == "side":
        return name in fmt.side_tables
    return name in fmt.tables


def formats_of(name: str) -> list[str]:
    """The names of the formats that produce the table ``name``."""
    from ..feeds import formats

    return [f.name for f in formats().values() if produces(f, name)]


def tables_of(fmt) -> list[str]:
    """The tables a format produces."""
    return [t for t in tables() if produces(fmt, t)]


def offered(name: str, front_end: str) -> bool:
    """Whether a front end offers the table ``name``."""
    return front_end in table(name).front_ends


def makers(name: str) -> list[str]:
    """Every front end that makes the table ``name``: those it is declared in, DuckDB's SQL
    macro of ``sql/`` for an analytics table the DuckDB readers do not give, and ``obook
    table`` for a table a Python reader gives."""
    t = table(name)
    out = list(t.front_ends)
    if t.source == "analytics" and "duckdb" not in t.front_ends:
        out.append(f"the SQL macro obook_{name}")
    if "python" in t.front_ends:
        out.append(f"obook table {name}")
    return out


def check_offered(name: str, front_end: str) -> Table:
    """The table's declaration when ``front_end`` offers it, else a clear ``ObookError``."""
    t = table(name)
    if front_end not in t.front_ends:
        raise ObookError(f"table {name!r} is not offered by {front_end}; it is by: {', '.join(makers(name))}")
    return t


def check_produces(fmt, name: str, front_end: str | None = None) -> None:
    """Raise ``ObookError`` naming the format's tables (those ``front_end`` offers, when
    given) when it does not produce ``name``."""
    if not produces(fmt, name):
        from ..feeds import formats

        owners = ", ".join(f"{f} ({formats()[f].title or f})" for f in formats_of(name))
        have = [t for t in tables_of(fmt) if front_end is None or offered(t, front_end)]
        raise ObookError(f"{fmt.name} feeds have no table {name!r} (formats that have it: {owners}); "
                         f"{fmt.name} feeds have: {', '.join(have)}")


def open_table(name: str, source, **options):
    """The rows of table ``name`` of ``source`` as a ``pyarrow.RecordBatchReader`` (see
    :func:`obook.tables.open.open_table`)."""
    from .open import open_table as _open

    return _open(name, source, **options)


def front_function(name: str, fname: str, call):
    """A front end's function of table ``name`` named ``fname``: ``(path, *positional,
    **options)`` with the table's positional options bound by name, and a signature derived
    from the declaration; ``call(path, **options)`` does the work."""
    import inspect

    spec = table(name)

    def front(path, *args, **options):
        if len(args) > len(spec.positional):
            n = len(spec.positional) + 1      # Python's own words for a function's positional arguments
            raise TypeError(f"{fname}() takes {n} positional argument{'s' if n > 1 else ''} but "
                            f"{len(args) + 1} were given")
        return call(path, **dict(zip(spec.positional, args)), **options)

    front.__signature__ = inspect.Signature(
        [inspect.Parameter("path", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
        [inspect.Parameter(o, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=OPTIONS[o].default)
         for o in spec.positional] +
        [inspect.Parameter(o, inspect.Parameter.KEYWORD_ONLY, default=OPTIONS[o].default)
         for o in spec.all_options() if o not in spec.positional])
    front.__name__ = front.__qualname__ = fname
    return front


#: what a front end's ``path`` takes (the readers' and the scans' docstrings)
PATH_DOC = ("``path``: a feed file (plain, gzip or zstd); a list of feed files or a glob pattern "
            "(``\"days/*.itch\"``), each file replayed on its own; a tuple of the files of one feed; "
            "or a binary stream (its format told from its first bytes; a packet capture: its file)")


def options_doc(name: str) -> str:
    """The path and options of table ``name``, as its front ends' docstrings give them."""
    return PATH_DOC + ".\n\nOptions: " + "; ".join(
        f"``{o}``: {OPTIONS[o].doc}" for o in table(name).all_options()) + "."


def reference_markdown() -> str:
    """The table and units reference as markdown (``docs/tables.md``)."""
    from .reference import reference_markdown as _ref

    return _ref()


__all__ = ["front_function", "FRONT_ENDS", "OPTIONS", "COMMON", "Option", "Table", "tables", "table", "produces", "formats_of",
           "tables_of", "offered", "check_offered", "check_produces", "open_table", "reference_markdown"]
