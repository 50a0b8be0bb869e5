"""SQL table macros shipped with obook (package ``obook.sql``, the repo's ``sql/`` folder).

Each ``.sql`` file holds ``CREATE OR REPLACE TEMP MACRO`` statements; ``obook.duckdb.install``
runs them all, in file-name order, after ``obook_bbo`` and the scalar UDFs exist.

=========================================================  =====================================
macro                                                      rows
=========================================================  =====================================
``obook_price(price, feed, format := NULL)``               (scalar) a feed's integer price as
                                                           DECIMAL(38,9) of its currency, exact
``obook_ticks(price, feed, format := NULL)``               (scalar) currency to the feed's
                                                           integer price
``obook_time_of_day(time, feed, format := NULL)``          (scalar) a feed time as TIME of day,
                                                           the unit the feed's
``obook_spread(path, ...)``                                every BBO row plus ``spread_ticks``
                                                           (BIGINT), ``spread`` (DECIMAL(38,9)
                                                           in the feed's currency) and ``mid``
                                                           (DECIMAL(38,10): half a tick), exact
``obook_twas(path, start_time := NULL, end_time := NULL,   one row per ticker: time-weighted
...)``                                                     average spread (DOUBLE: an average)
``obook_bbo_grid(path, every, start_time := NULL,          the BBO of every ticker at every
end_time := NULL, ...)``                                   point of a regular time grid (ASOF
                                                           join); prices as obook_bbo gives them
=========================================================  =====================================

``...`` are ``obook_bbo``'s options: ``workers := NULL, format := NULL, on_error := 'raise',
date := NULL, tickers := NULL, prices := 'int', filename := false`` (``prices``: the BBO's
price columns as integers, exact decimals or floats; ``filename``: a last column naming the
feed file of each row, and several files are analysed each on its own), as the Python
functions and polars scans of the same tables take them. The macros read the feed's units (``obook_unit(to_json(path),
format, 'price_scale')``: the price scale of the schema metadata), so they are right on every
format. Times are the feed's (``obook_unit(..., 'time_unit_ns')`` ns each). Bars are the
table ``obook_bars`` of the registry (obook.tables).
"""

from __future__ import annotations

from importlib import resources

__all__ = ["macro_files", "read_sql", "macro_texts"]


def _root():
    return resources.files(__name__)


def macro_files() -> list[str]:
    """Names of the shipped ``.sql`` files, in the order they are installed."""
    return sorted(p.name for p in _root().iterdir() if p.name.endswith(".sql"))


def read_sql(name: str) -> str:
    """The text of one shipped ``.sql`` file (``name`` with or without ``.sql``)."""
    if not name.endswith(".sql"):
        name += ".sql"
    return _root().joinpath(name).read_text(encoding="utf-8")


def macro_texts() -> list[tuple[str, str]]:
    """``(file name, SQL text)`` of every shipped file, in install order."""
    return [(name, read_sql(name)) for name in macro_files()]
