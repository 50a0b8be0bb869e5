"""Reading a pipeline's dataset (``DATASET/table=<table>/date=<YYYY-MM-DD>/part-0.parquet``).

* :func:`attach` — one DuckDB view per table (``bbo``, ``symbols`` ...) over
  ``read_parquet(..., hive_partitioning = true)``: a ``WHERE date = DATE '2019-12-30'`` reads
  only that date's files (DuckDB prunes Hive partitions on the filter). A name the
  connection already uses is an error, never replaced silently.
* :func:`scan_dataset` — a polars LazyFrame over one table (``pl.scan_parquet`` with
  ``hive_partitioning``): a filter on ``date`` skips the other dates' files.

The ``date`` column comes from the directory names (type DATE); the files do not carry it.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from .errors import ObookError

__all__ = ["attach", "scan_dataset", "tables"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def tables(dataset) -> list[str]:
    """The tables present in a dataset (its ``table=<name>`` directories)."""
    if not isinstance(dataset, (str, os.PathLike)) or not os.fspath(dataset):
        raise ObookError(f"a dataset is a folder's path, not {dataset!r}")
    root = Path(dataset)
    if not root.is_dir():
        raise ObookError(f"{dataset}: no such dataset directory")
    return sorted(p.name[len("table="):] for p in root.glob("table=*")
                  if p.is_dir() and any(p.glob("date=*/*.parquet")))


def _glob(dataset, table: str) -> str:
    """The pattern of a table's files; the dataset's own path is escaped (``ds*x`` must not
    also read ``dsOLDx``): DuckDB and polars both read ``[*]`` as a literal ``*``."""
    base = glob.escape(str(Path(dataset).resolve() / f"table={table}"))
    return str(Path(base) / "*" / "*.parquet")


def attach(con, dataset, prefix: str = "", replace: bool = False) -> list[str]:
    """Create a DuckDB view ``<prefix><table>`` per table of ``dataset`` on ``con``; returns
    the view names. The views read the files at query time, so days added later show up
    without attaching again.

    A name already taken (a table or view of the current schema, or a temporary one) is an
    error naming each, and no view is created: give a ``prefix``, or ``replace=True`` to
    replace views of the current schema (a table or a temporary object is never replaced).
    The views of an earlier ``attach`` of the same dataset are replaced without asking."""
    names = tables(dataset)             # (a dataset that is not a folder: an error first)
    root = Path(dataset).resolve()
    planned = []
    for table in names:
        name = f"{prefix}{table}"
        if not _NAME.match(name):
            raise ObookError(f"{name!r} is not a usable view name")
        planned.append((name, table, f"obook dataset {root} table {table}"))
    _check_free(con, dataset, planned, replace)
    import duckdb

    for name, table, mark in planned:
        pattern = _glob(dataset, table).replace("'", "''")
        mark = mark.replace("'", "''")
        try:
            con.execute(f'CREATE OR REPLACE VIEW "{name}" AS SELECT * EXCLUDE ("table") FROM '
                        f"read_parquet('{pattern}', hive_partitioning = true, hive_types = {{'date': DATE}})")
            con.execute(f"COMMENT ON VIEW \"{name}\" IS '{mark}'")      # (what tells a later attach it is ours)
        except duckdb.Error as e:     # a read-only database ...
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ObookError(f"{dataset}: cannot create the view {name!r}: {first}") from e
    return [name for name, _, _ in planned]


def _check_free(con, dataset, planned, replace: bool) -> None:
    """Raise ObookError naming the planned views whose names ``con`` already uses for an
    object attach must not replace (see :func:`attach`)."""
    taken: dict[str, list] = {}
    for name, kind, temporary, comment in con.execute(_TAKEN).fetchall():
        taken.setdefault(name.lower(), []).append((kind, temporary, comment))     # (names ignore case)
    refused = [f"{name!r} (a {'temporary ' if temporary else ''}{kind})"
               for name, _, mark in planned for kind, temporary, comment in taken.get(name.lower(), ())
               if not (kind == "view" and not temporary and (comment == mark or replace))]
    if refused:
        raise ObookError(f"{dataset}: cannot attach, names taken on this connection: {', '.join(refused)}; "
                         "give prefix= for other view names, or replace=True to replace views "
                         "(never a table or a temporary object)")


# the tables and views a name resolves to on a connection: the current schema's, temporary ones
_TAKEN = """
    SELECT view_name, 'view', temporary, comment FROM duckdb_views()
    WHERE NOT internal AND (temporary OR (database_name = current_database() AND schema_name = current_schema()))
    UNION ALL
    SELECT table_name, 'table', temporary, comment FROM duckdb_tables()
    WHERE temporary OR (database_name = current_database() AND schema_name = current_schema())
"""


def scan_dataset(dataset, table: str = "bbo"):
    """A polars LazyFrame over one table of ``dataset``, with a ``date`` column (Date) from
    the partitions; ``.filter(pl.col("date") == date)`` reads only that date's files."""
    import polars as pl

    if table not in tables(dataset):
        raise ObookError(f"{dataset}: no table {table!r} (has: {', '.join(tables(dataset)) or 'none'})")
    # polars reads every key=value of the path, table=<name> included: typed, then dropped
    return pl.scan_parquet(_glob(dataset, table), hive_partitioning=True,
                           hive_schema={"table": pl.String, "date": pl.Date}).drop("table")
