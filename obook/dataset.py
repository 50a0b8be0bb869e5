"""Reading a pipeline's dataset (``DATASET/table=<table>/date=<YYYY-MM-DD>/part-0.parquet``).

* :func:`attach` — one DuckDB view per table (``bbo``, ``symbols`` ...) over
  ``read_parquet(..., hive_partitioning = true)``: a ``WHERE date = DATE '2019-12-30'`` reads
  only that date's files (DuckDB prunes Hive partitions on the filter). A name the
  connection already uses is an error, never replaced silently.
* :func:`scan_dataset` — a polars LazyFrame over one table (``pl.scan_parquet`` with
  ``hive_partitioning``): a filter on ``date`` skips the other dates' files.

The ``date`` column comes from the directory names (type DATE); the files do not carry it.

A table whose partitions have other columns (a pipeline's depth ``levels`` changed while an
earlier day's file is gone, so its partition stays) is read as the union of their columns,
NULL where a partition lacks one (:func:`layouts`); a column of two types in two partitions
is an error naming them. Which partitions have which columns comes from the pipeline's
manifest (recorded as each day is converted: no file is opened to know it), else from each
file's footer; only when they differ is the footer of one file of each set read.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from pathlib import Path
from typing import NamedTuple

from .errors import ObookError

__all__ = ["attach", "scan_dataset", "tables", "layouts", "differences", "describe", "file_layout", "Layout",
           "MANIFEST"]

#: a pipeline's record of its dataset's days (see obook.pipelines.manifest)
MANIFEST = "_manifest.json"

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
    The views of an earlier ``attach`` of the same dataset are replaced without asking.

    A table whose partitions have other columns gets a view of their union (DuckDB's
    ``union_by_name``: each query reads every file's footer). A view keeps its way of
    reading and its columns: a day converted later with more columns is read without them,
    one with fewer fails the query (DuckDB's schema mismatch); attach again after a run that
    changed a table's columns."""
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

    columns = {table: _union_columns(dataset, table) for _, table, _ in planned}   # (before any view)
    for name, table, mark in planned:
        pattern = _glob(dataset, table).replace("'", "''")
        mark = mark.replace("'", "''")
        if columns[table] is None:
            select, union = '* EXCLUDE ("table")', ""
        else:       # every file's footer is read by each query; the data of the matching partitions only
            select = ", ".join('"' + n.replace('"', '""') + '"' for n in [*columns[table].names, "date"])
            union = ", union_by_name = true"
        try:
            con.execute(f'CREATE OR REPLACE VIEW "{name}" AS SELECT {select} FROM '
                        f"read_parquet('{pattern}', hive_partitioning = true, hive_types = {{'date': DATE}}{union})")
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
    union = _union_columns(dataset, table)
    given = {} if union is None else {"schema": pl.from_arrow(union.empty_table()).schema,
                                      "missing_columns": "insert"}
    # polars reads every key=value of the path, table=<name> included: typed, then dropped
    return pl.scan_parquet(_glob(dataset, table), hive_partitioning=True,
                           hive_schema={"table": pl.String, "date": pl.Date}, **given).drop("table")


# --------------------------------------------------------------------------- column layouts


class Layout(NamedTuple):
    """One set of columns of a table's partitions: its ``schema`` (a pyarrow Schema, the
    footer's of one of its files) and its ``partitions`` (``date=YYYY-MM-DD`` folders)."""
    schema: object
    partitions: list


def file_layout(path) -> dict:
    """What a pipeline's manifest records of a partition's file: its ``size`` and a digest of
    its columns (names and types, in order: ``columns``). Reads the file's footer."""
    return {"size": os.stat(path).st_size, "columns": _digest(_footer(path))}


def layouts(dataset, table: str) -> list[Layout]:
    """The column layouts of a table's partitions, one per set of columns (names and types, in
    order), the one of the most partitions first; a partition whose file's footer cannot be
    read is left out (a query reading it says why)."""
    return _resolved(_groups(dataset, table))


def _footer(path):
    import pyarrow.parquet as pq

    return pq.read_schema(path).remove_metadata()


def _digest(schema) -> str:
    text = "\n".join(f"{f.name}\t{f.type}" for f in schema)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _recorded(root: Path) -> dict:
    """{(table, date): what the manifest records of its file}, from a pipeline's manifest
    (none, or one that cannot be read: {})."""
    try:
        days = json.loads((root / MANIFEST).read_text()).get("days")
    except (OSError, ValueError, AttributeError):
        return {}
    out = {}
    for date, rec in (days.items() if isinstance(days, dict) else ()):
        recorded = rec.get("layouts") if isinstance(rec, dict) else None
        for table, layout in (recorded.items() if isinstance(recorded, dict) else ()):
            if isinstance(layout, dict):
                out[(table, date)] = layout
    return out


def _groups(dataset, table: str) -> dict:
    """{columns digest: [schema or None (not read yet), [(partition folder, file) ...]]} of a
    table's files: the manifest's digest of a file that has the size it recorded, else its
    footer's."""
    import pyarrow as pa

    root = Path(dataset)
    recorded = _recorded(root)
    groups: dict = {}
    for f in sorted((root / f"table={table}").glob("date=*/*.parquet")):
        rec = recorded.get((table, f.parent.name[len("date="):])) if f.name == "part-0.parquet" else None
        schema = None
        try:
            if rec is None or rec.get("size") != f.stat().st_size or not isinstance(rec.get("columns"), str):
                schema = _footer(f)
        except (OSError, pa.ArrowException):
            continue
        group = groups.setdefault(rec["columns"] if schema is None else _digest(schema), [None, []])
        group[0] = group[0] or schema
        group[1].append((f.parent.name, f))
    return groups


def _resolved(groups: dict) -> list[Layout]:
    import pyarrow as pa

    out = []
    for schema, files in groups.values():
        for _, f in ([] if schema is not None else files):
            try:
                schema = _footer(f)
                break
            except (OSError, pa.ArrowException):
                continue
        if schema is not None:
            out.append(Layout(schema, sorted({folder for folder, _ in files})))
    return sorted(out, key=lambda lay: -len(lay.partitions))


def _union_columns(dataset, table: str):
    """None when a table's partitions have one set of columns, else the pyarrow Schema of the
    union of theirs (a column after the one it follows in its partitions); a column of two
    types: an ObookError naming the partitions of each."""
    import pyarrow as pa

    groups = _groups(dataset, table)
    found = _resolved(groups) if len(groups) > 1 else []
    if len(found) < 2:
        return None
    order, entries = differences(found)
    if any("types" in e for e in entries):
        raise ObookError(f"{dataset}: table {table!r}: its partitions cannot be read as one table, a column has "
                         f"two types: {_types_text(entries)}; convert those days again with one set of options, "
                         "or remove the odd partitions")
    fields = {}
    for lay in found:
        for field in lay.schema:
            fields.setdefault(field.name, field)
    return pa.schema([fields[n] for n in order])


def differences(found: list[Layout]) -> tuple[list[str], list[dict]]:
    """How the ``found`` layouts of a table differ: the names of the union of their columns
    (in order: a column after the one it follows in its partitions), and an entry for each
    layout that lacks some of them or has a column in a type another one's differs from
    (``partitions``, ``lacks``: names, and ``types``: {name: type} when it has such)."""
    order: list[str] = []
    types: dict[str, set] = {}
    for lay in found:
        prev = -1
        for field in lay.schema:
            if field.name not in types:
                order.insert(prev + 1, field.name)
            prev = order.index(field.name)
            types.setdefault(field.name, set()).add(str(field.type))
    entries = []
    for lay in found:
        lacks = [n for n in order if n not in lay.schema.names]
        other = {f.name: str(f.type) for f in lay.schema if len(types[f.name]) > 1}
        if lacks or other:
            entries.append({"partitions": list(lay.partitions), "lacks": lacks, **({"types": other} if other else {})})
    return order, entries


def _few(items: list, shown: int = 10) -> str:
    more = f", and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def _types_text(entries: list[dict]) -> str:
    by_name: dict[str, dict[str, list]] = {}
    for e in entries:
        for name, t in e.get("types", {}).items():
            by_name.setdefault(name, {}).setdefault(t, []).extend(e["partitions"])
    return "; ".join(f"{name} is " + ", ".join(f"{t} in {_few(sorted(parts))}" for t, parts in by.items())
                     for name, by in by_name.items())


def describe(dataset, table: str, entries: list[dict]) -> str:
    """One line on how a table's partitions differ in columns (:func:`differences`' entries)."""
    lacking = [f"{_few(e['partitions'])} {'lacks' if len(e['partitions']) == 1 else 'lack'} "
               f"{_few(e['lacks'], 12)}" for e in entries if e["lacks"]]
    text = f"{Path(dataset) / f'table={table}'}: its partitions have other columns"
    if lacking:
        text += f": {'; '.join(lacking)} (queries read them as NULL there)"
    if any("types" in e for e in entries):
        text += (f"; a column has two types, {_types_text(entries)}: queries of the table fail; convert those "
                 "days again with one set of options, or remove the odd partitions")
    return text
