"""Reading a pipeline's dataset (``DATASET/table=<table>/date=<YYYY-MM-DD>/part-0.parquet``).

* :func:`attach` — one DuckDB view per table (``bbo``, ``symbols`` ...) over
  ``read_parquet(..., hive_partitioning = true)``: a ``WHERE date = DATE '2019-12-30'`` reads
  only that date's files (DuckDB prunes Hive partitions on the filter).
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


def attach(con, dataset, prefix: str = "") -> list[str]:
    """Create (or replace) a DuckDB view ``<prefix><table>`` per table of ``dataset`` on
    ``con``; returns the view names. The views read the files at query time, so days
    added later show up without attaching again."""
    names = []
    for table in tables(dataset):
        name = f"{prefix}{table}"
        if not _NAME.match(name):
            raise ObookError(f"{name!r} is not a usable view name")
        pattern = _glob(dataset, table).replace("'", "''")
        con.execute(f'CREATE OR REPLACE VIEW "{name}" AS SELECT * EXCLUDE ("table") FROM '
                    f"read_parquet('{pattern}', hive_partitioning = true, hive_types = {{'date': DATE}})")
        names.append(name)
    return names


def scan_dataset(dataset, table: str = "bbo"):
    """A polars LazyFrame over one table of ``dataset``, with a ``date`` column (Date) from
    the partitions; ``.filter(pl.col("date") == date)`` reads only that date's files."""
    import polars as pl

    if table not in tables(dataset):
        raise ObookError(f"{dataset}: no table {table!r} (has: {', '.join(tables(dataset)) or 'none'})")
    # polars reads every key=value of the path, table=<name> included: typed, then dropped
    return pl.scan_parquet(_glob(dataset, table), hive_partitioning=True,
                           hive_schema={"table": pl.String, "date": pl.Date}).drop("table")
