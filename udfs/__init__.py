"""Scalar DuckDB functions for obook's columns, registered by ``obook.duckdb.install``.

Shipped as ``obook.udfs`` (the repo's top-level ``udfs/`` folder). Every function is an
Arrow-vectorized Python UDF (one call per DuckDB vector, no per-row Python) and exact:

=========================================  ===============  ====================================
function                                   returns          meaning
=========================================  ===============  ====================================
``obook_scaled_price(price BIGINT,         ``DECIMAL(38,9)``  a feed's integer price in its
price_scale BIGINT)``                                       currency, exactly (``price_scale``:
                                                            the schema's ``obook.price_scale``)
``obook_scaled_ticks(price DECIMAL,        ``BIGINT``       currency to the feed's integer price
price_scale BIGINT)``                                       (rounded half to even to a unit,
                                                            once: up to 18 decimals are taken)
``obook_scaled_time(time UBIGINT,          ``TIME``         a feed time since midnight of
time_unit_ns BIGINT)``                                      ``time_unit_ns`` ns a unit (the
                                                            schema's ``obook.time_unit``); TIME
                                                            has microseconds: finer is truncated
``obook_time_of_day_ms(ms UBIGINT)``       ``TIME``         CSV feed time (ms since midnight)
=========================================  ===============  ====================================

The SQL macros ``obook_price(price, feed, format := NULL)``, ``obook_ticks(price, feed,
format := NULL)`` and ``obook_time_of_day(time, feed, format := NULL)`` (``obook.sql``) take the
scale or the time unit from the feed's units, so they are right on every format; in Python,
``obook_time_of_day(table)`` reads the unit from the table's schema. NULL in, NULL out. A value
that cannot be represented raises an error (never wraps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .prices import PRICE_TYPE, obook_price, obook_ticks, scale_digits
from .times import obook_scaled_time, obook_time_of_day, obook_time_of_day_ms

__all__ = ["FUNCTIONS", "ScalarUdf", "register", "PRICE_TYPE", "scale_digits",
           "obook_price", "obook_ticks", "obook_scaled_time", "obook_time_of_day",
           "obook_time_of_day_ms"]


@dataclass(frozen=True)
class ScalarUdf:
    name: str
    func: Callable
    params: tuple[str, ...]   # DuckDB type names
    returns: str


FUNCTIONS: tuple[ScalarUdf, ...] = (
    ScalarUdf("obook_scaled_price", obook_price, ("BIGINT", "BIGINT"), "DECIMAL(38,9)"),
    # 18 decimals: a value between two of 9 decimals (a Databento mid, DECIMAL(38,10)) reaches the
    # UDF unrounded, so it is rounded once, half to even; 20 integer digits hold every BIGINT price
    ScalarUdf("obook_scaled_ticks", obook_ticks, ("DECIMAL(38,18)", "BIGINT"), "BIGINT"),
    ScalarUdf("obook_scaled_time", obook_scaled_time, ("UBIGINT", "BIGINT"), "TIME"),
    ScalarUdf("obook_time_of_day_ms", obook_time_of_day_ms, ("UBIGINT",), "TIME"),
)


def register(con) -> None:
    """Create the functions on ``con`` (a DuckDB connection); already present ones are kept.

    Python UDFs live in the database's catalog (shared by its connections and cursors),
    so a second connection to the same database finds them there already.
    """
    import duckdb

    existing = {row[0] for row in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_name LIKE 'obook\\_%' ESCAPE '\\'"
    ).fetchall()}
    for udf in FUNCTIONS:
        if udf.name in existing:
            continue
        con.create_function(udf.name, udf.func, [duckdb.sqltype(p) for p in udf.params],
                            duckdb.sqltype(udf.returns), type="arrow",
                            null_handling="special", side_effects=False)
