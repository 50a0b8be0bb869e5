"""``obook sql --help``: what a query accepts, every obook function with its parameters, and
examples. The feed tables and their options come from the table registry
(``obook.tables``: a format's own tables show up with no edit here); the matching,
simulation, backtest and scalar functions are listed as ``obook.duckdb`` and ``sql/``
register them.
"""

from __future__ import annotations

import textwrap

__all__ = ["help_text"]

_WIDTH = 92

_INTRO = """Run a SQL query over market-data feeds with DuckDB; print or save the result.

QUERY is DuckDB SQL: one statement, or several separated by ';' whose last one gives the
result (a statement DuckDB gives no result for prints "ok"; DuckDB 2 gives a CREATE or an INSERT
a Count column, which prints as any result). All of DuckDB works
(read_parquet, read_csv, COPY ...) plus obook's functions below. A feed path is a file
(relative to the current folder, ~ expanded), a list of files or a glob pattern
('day*.itch'), each file replayed on its own (a Shenzhen vendor day's files: one feed), or a
tuple of files, one feed cut into pieces (('a.log', 'b.log')); options are given as name := value. A query starting with
'-' (a SQL comment) goes after '--': obook sql -- "-- note ...".

The result prints as a table of its first --max-rows rows (40) on a terminal, as CSV of every
row in a pipe or a file; --format chooses; --output writes a .parquet, .csv or .arrow file
(.pq, .feather and .ipc name the same kinds). Its units (obook.price_scale, obook.time_unit ...)
are recorded only for a result of one obook table's columns as the table gives them (see --output).
Timestamps are UTC, as in Python's obook.connect() (SET TimeZone in the query to show
another zone). Every DuckDB type prints: INTERVAL, BIT, nested values ... as DuckDB's text
(JSON for nested values with --format json); a Parquet file refuses INTERVAL and UNION
columns."""

#: (heading, [(signature, meaning)]) of the functions obook.duckdb and sql/ register besides
#: the registry's tables; "(...)": the arguments the heading gives
_OTHERS = [
    ("Matching an order-entry file (docs/matching.md), each (path, {match}); instruments: "
     "['AAA', 'BBB'] or 'AAA,BBB'", [
        ("obook_match(...)", "the fills"),
        ("obook_match_events(...)", "every event"),
        ("obook_match_bbo(...)", "the best bid and offer after each event"),
        ("obook_match_depth(..., {match_depth})", "the top levels a side after each event"),
    ]),
    ("Your own orders in a replayed feed (docs/simulation.md), each (feed, orders, {simulate}); "
     "latency: ns, a column of the orders, or 'uniform:LOW:HIGH'", [
        ("obook_simulate(...)", "your fills"),
        ("obook_simulate_events(...)", "your orders' events"),
        ("obook_simulate_summary(...)", "one row per order"),
        ("obook_simulate_bbo(...)", "the feed's BBO with your orders in the book"),
        ("obook_simulate_depth(..., {simulate_depth})", "the feed's depth with your orders"),
    ]),
    ("Backtests (docs/backtesting.md), each (feed, strategy, {backtest}); strategy: 'FILE.py:NAME' or "
     "'module:NAME'; tickers: ['AAA', 'BBB'] or 'AAA,BBB'", [
        ("obook_backtest(...)", "the fills"),
        ("obook_backtest_orders(...)", "the orders"),
        ("obook_backtest_events(...)", "every event"),
        ("obook_backtest_positions(...)", "positions"),
        ("obook_backtest_equity(...)", "the equity curve"),
    ]),
    ("Scalar functions", [
        ("obook_price(price, feed, format := NULL)", "an integer price as an exact DECIMAL(38,9) of the "
                                                     "feed's currency (feed: also Parquet files of integer "
                                                     "prices obook wrote)"),
        ("obook_ticks(price, feed, format := NULL)", "back: a DECIMAL or DOUBLE price as the feed's integer"),
        ("obook_scaled_price(price, scale)", "an integer price as a DECIMAL, the scale given (a Parquet "
                                             "file's obook.price_scale)"),
        ("obook_scaled_ticks(price, scale)", "back"),
        ("obook_time_of_day(time, feed, format := NULL)", "a TIME of day, the unit the feed's (ns for ITCH, "
                                                          "ms for CSV; feed: also Parquet or Arrow files obook wrote)"),
        ("obook_scaled_time(time, time_unit_ns)", "a TIME of day, the unit given"),
        ("obook_time_of_day_ms(ms)", "from ms since midnight (CSV's time)"),
        ("obook_unit(to_json(path), format, key)", "the feed's unit, key: 'price_scale', 'quantity_scale', "
                                                   "'time_unit_ns' or 'time_origin'"),
    ]),
]

_EXAMPLES = """Examples:
  obook sql "SELECT ticker, count(*) FROM obook_bbo('day.itch') GROUP BY ALL"
  obook sql "FROM obook_depth('day.itch', levels := 5, tickers := ['AAPL'])" -n 10
  obook sql "FROM obook_bars('day.itch', interval := '5 minutes')" --format json
  obook sql "FROM obook_bbo('2019-12-*.itch', prices := 'decimal', filename := true)" -o bbo.parquet
  obook sql "FROM obook_twas('day.itch')" --output twas.parquet
  obook sql "FROM obook_bbo_grid('day.itch', 60000000000)" -o grid.csv
  obook sql "SELECT * FROM read_parquet('twas.parquet') ORDER BY twas DESC LIMIT 5"
  obook sql "CREATE TABLE trades AS FROM obook_trades('day.itch')" --database day.duckdb"""


def _entry(signature: str, meaning: str) -> list[str]:
    """A function's lines: its signature, then what it gives, indented (on the same line
    when both fit)."""
    if len(signature) < 40 and len(meaning) < _WIDTH - 44:
        return [f"  {signature:<41}{meaning}"]
    return _wrap(signature, "  ", "      ") + _wrap(meaning, "      ", "      ")


def _wrap(text: str, first: str, rest: str) -> list[str]:
    """``text`` in lines of at most _WIDTH, never broken inside ``name := value``."""
    glued = text.replace(" := ", "\0:=\0")
    return [line.replace("\0", " ") for line in
            textwrap.wrap(glued, _WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)]


def _block(heading: str, lines: list[str]) -> str:
    """A paragraph click prints as it is (``\\b``), its heading wrapped."""
    return "\n".join(["\b"] + _wrap(heading + ":", "", "") + lines)


def _first_sentence(doc: str) -> str:
    cut = doc.find(". ")
    return doc if cut < 0 else doc[:cut + 1]


def _signature(name: str, spec) -> str:
    positional = [o for o in spec.positional if o in spec.all_options()]
    named = [o for o in spec.all_options() if o not in positional]
    return f"obook_{name}({', '.join(['path'] + positional + named)})"


def _tables() -> tuple[str, str]:
    """The blocks of the registry's tables (DuckDB table macros, and the analytics that
    DuckDB has as SQL macros of sql/) and of their options."""
    from ..tables import OPTIONS, offered, tables

    feed, analytics = [], []
    for name, spec in tables().items():
        if offered(name, "duckdb"):
            feed += _entry(_signature(name, spec), _first_sentence(spec.doc))
        elif spec.source == "analytics":
            analytics += _entry(_signature(name, spec), _first_sentence(spec.doc))
    required = {o for spec in tables().values() for o in spec.required()}
    options = []
    for o in OPTIONS.values():
        given = f"{o.name} (required, after path)" if o.name in required else f"{o.name} := {_sql(o.default)}"
        extra = " (['AAPL', 'MSFT'] or 'AAPL,MSFT')" if o.sql_type.endswith("[]") else ""
        if o.name == "interval":
            extra = " (text, or an INTERVAL 5 MINUTE)"
        options += _wrap(f"{given}: {o.doc}{extra}", "  ", "      ")
    tables_block = _block("Feed tables, FROM obook_<table>(path, option := value ...) "
                          "(their columns: docs/columns.md; options and units: docs/tables.md)", feed) + "\n\n" + \
        _block("Analytics of the BBO (SQL macros, the same rows as obook.spread, obook.twas, "
               "obook.bbo_grid)", analytics)
    return tables_block, _block("Their options, name := value (interval and every also by position after the "
                                "path; NULL: the default the text names)", options)


def _sql(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"'{value}'" if isinstance(value, str) else str(value)


def _named(options) -> str:
    """``name := default, ...`` of declared options (``obook.tables.runs``)."""
    return ", ".join(f"{o.name} := {_sql(o.default)}" for o in options)


def help_text() -> str:
    """The whole ``--help`` description of ``obook sql``."""
    from ..tables.runs import BACKTEST, MATCH, SIMULATE

    tables_block, options_block = _tables()
    given = {}
    for run, options in (("match", MATCH), ("simulate", SIMULATE), ("backtest", BACKTEST)):
        given[run] = _named(o for o in options if o.name != "levels")
        given[f"{run}_depth"] = _named(o for o in options if o.name == "levels")
    others = [_block(heading.format(**given), [line for sig, meaning in entries
                                               for line in _entry(sig.format(**given), meaning)])
              for heading, entries in _OTHERS]
    return "\n\n".join([_INTRO, tables_block, options_block, *others, "\b\n" + _EXAMPLES]) + "\n"
