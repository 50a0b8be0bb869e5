"""Order entry: the instructions a matching engine takes (not a market-data feed).

Cheap to import: the reader (pyarrow) loads on first use. One row per instruction:

========== ======================================================================
column     values
========== ======================================================================
time       integer (any unit; default: the row number)
instrument text or integer (one book each)
order_id   integer; empty on a ``new`` row: the book assigns one
action     ``new``, ``modify``, ``cancel`` (or ``N``, ``M``, ``C``)
side       ``buy``, ``sell`` (or ``B``, ``S``); needed by ``new``
type       ``limit`` (default), ``market``
tif        ``GTC`` (default), ``DAY``, ``IOC``, ``FOK``
price      integer (scaled; a multiple of the tick); empty for market orders and
           for a modify that keeps the price
quantity   integer; a modify's new open quantity (empty: unchanged)
owner      optional integer (0 / empty: none), for self-trade prevention
========== ======================================================================

A modify may carry its new values in ``new_price`` / ``new_quantity`` instead.
The words of action, side, type and tif are case-insensitive (instruments are names: XYZ
and xyz are two books); column names are matched without case or surrounding
spaces. Integers may carry a sign, not a decimal point, an exponent or separators. CSV:
UTF-8, comma-separated (a header with no comma but semicolons or tabs gives the
separator); blank and whitespace-only lines are skipped and not counted as rows. A row that cannot be read (a text where an integer
belongs, an unknown action) is a :class:`obook.errors.FeedError` naming the row; an
instruction that is readable but wrong (zero quantity, price off the tick, unknown
order) is the engine's business: a ``rejected`` event.
"""

from __future__ import annotations

NAME = "orders"
UNIT = "row"                      # what a record number counts: data rows, 1-based
COLUMNS = ("time", "instrument", "order_id", "action", "side", "type", "tif", "price",
           "quantity", "owner", "new_price", "new_quantity")
READER = "obook.feeds.orders.reader:read_orders"


def read_orders(source, *, name: str | None = None):
    """The instructions of ``source`` (a CSV / Parquet / Arrow IPC path, or an Arrow,
    polars or DuckDB table) as :class:`obook.feeds.orders.reader.Orders`."""
    from .reader import read_orders as _read

    return _read(source, name=name)
