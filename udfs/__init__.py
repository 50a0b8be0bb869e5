"""Scalar DuckDB functions for obook's columns, registered by ``obook.duckdb.install``.

Shipped as ``obook.udfs`` (the repo's top-level ``udfs/`` folder). Every function is an
Arrow-vectorized Python UDF (one call per DuckDB vector, no per-row Python) and exact:

=================================  ==========================  =================================
function                           returns                     meaning
=================================  ==========================  =================================
``obook_price(ticks BIGINT)``      ``DECIMAL(18,4)``           1/10000 $ ticks to dollars
``obook_ticks(price DECIMAL)``     ``BIGINT``                  dollars to ticks (DuckDB first
                                                               casts the argument to
                                                               DECIMAL(18,4), i.e. rounds to a
                                                               tick)
``obook_time_of_day(ns UBIGINT)``  ``TIME``                    ITCH ns since midnight; TIME has
                                                               microseconds, so the ns are
                                                               truncated
``obook_time_of_day_ms(ms UBIGINT)`` ``TIME``                  CSV feed time (ms since midnight)
=================================  ==========================  =================================

NULL in, NULL out. A value that cannot be represented raises an error (never wraps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .prices import obook_price, obook_ticks
from .times import obook_time_of_day, obook_time_of_day_ms

__all__ = ["FUNCTIONS", "ScalarUdf", "register",
           "obook_price", "obook_ticks", "obook_time_of_day", "obook_time_of_day_ms"]


@dataclass(frozen=True)
class ScalarUdf:
    name: str
    func: Callable
    params: tuple[str, ...]   # DuckDB type names
    returns: str


FUNCTIONS: tuple[ScalarUdf, ...] = (
    ScalarUdf("obook_price", obook_price, ("BIGINT",), "DECIMAL(18,4)"),
    ScalarUdf("obook_ticks", obook_ticks, ("DECIMAL(18,4)",), "BIGINT"),
    ScalarUdf("obook_time_of_day", obook_time_of_day, ("UBIGINT",), "TIME"),
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
