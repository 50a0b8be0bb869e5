"""The units a result of ``obook sql`` carries into its ``--output`` file, when they are known.

DuckDB hands a result over without the Arrow schema metadata obook's tables carry (their
units: ``obook.tables.units``). A result's units are known when its columns are a table's
columns as the table gives them: the query (its last statement) selects only column names,
unrenamed, and ``*`` (``EXCLUDE`` allowed), from one ``obook_<table>(path, ...)`` whose path,
``format`` and ``prices`` are written in the query; ``WHERE``, ``QUALIFY``, ``ORDER BY``,
``LIMIT`` and ``DISTINCT`` keep them. Anything else (an expression, an alias, a join, a
``GROUP BY``, a subquery or CTE, a parameter, an earlier ``CREATE``, which may redefine a
macro) gives no units: the file records none, and obook's analytics refuse it rather than
assume a format's units.
"""

from __future__ import annotations

import json
from typing import Callable

__all__ = ["result_units", "with_units"]

_PREFIX = "obook_"


def result_units(con, query: str) -> Callable[[list], dict] | None:
    """The units metadata of ``query``'s result (see the module) as a function of its column
    names, or None when they are not known. Asked before the query runs (``con`` then has no
    open result)."""
    import duckdb

    try:
        statements = con.extract_statements(query)
        if not statements or any(s.type == duckdb.StatementType.CREATE for s in statements[:-1]):
            return None
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [statements[-1].query]).fetchall()[0][0])
    except duckdb.Error:
        return None
    if tree.get("error") or len(tree.get("statements", [])) != 1:
        return None
    call = _table_call(tree["statements"][0]["node"])
    return None if call is None else _metadata(*call)


def _table_call(node: dict):
    """``(table name, path, format, prices)`` of a SELECT of plain columns from one obook table
    function whose arguments that give the units are constants; None otherwise."""
    if node.get("type") != "SELECT_NODE" or node.get("group_expressions") or node.get("group_sets") \
            or node.get("having") is not None or node.get("aggregate_handling") != "STANDARD_HANDLING":
        return None
    if not all(_plain(item) for item in node.get("select_list", [])):
        return None
    source = node.get("from_table") or {}
    if source.get("type") != "TABLE_FUNCTION" or source.get("column_name_alias"):
        return None
    function = source.get("function") or {}
    name = function.get("function_name", "")
    if function.get("schema") or function.get("catalog") or not name.startswith(_PREFIX):
        return None
    args = function.get("arguments", [])
    if not args or args[0].get("name"):
        return None
    given = {a["name"]: a["expression"] for a in args[1:] if a.get("name")}
    try:
        path = _constant(args[0]["expression"], list_ok=True)
        fmt = _constant(given["format"]) if "format" in given else None
        prices = _constant(given["prices"]) if "prices" in given else None
    except ValueError:
        return None
    return name[len(_PREFIX):], path, fmt, prices


def _plain(item: dict) -> bool:
    """A select item that gives a column of the table as it is: its name (unrenamed) or a star."""
    if item.get("class") == "COLUMN_REF":
        return item.get("alias") in ("", None, item["column_names"][-1])
    return (item.get("class") == "STAR" and not item.get("replace_list") and not item.get("rename_list")
            and not item.get("columns") and item.get("expr") is None)


def _constant(expr: dict, list_ok: bool = False):
    """A constant text (or NULL; with ``list_ok`` a list of texts) argument; ValueError otherwise."""
    if expr.get("class") == "CONSTANT":
        literal = expr.get("literal") or {}
        if literal.get("kind") == "STRING":
            return literal["text"]
        if literal.get("kind") == "NULL_LITERAL":
            return None
    if list_ok and expr.get("class") == "FUNCTION" and expr.get("function_name") == "list_value":
        return [_constant(a["expression"]) for a in expr.get("arguments", [])]
    raise ValueError("not a constant")


def _metadata(name: str, path, fmt, prices) -> Callable[[list], dict] | None:
    """The units metadata of table ``name`` of ``path`` (its format ``fmt``) as a function of
    the result's columns; None when the table or the feed is not one obook knows (the query
    says why)."""
    from ..errors import ObookError
    from ..feeds import resolve_format
    from ..tables import tables
    from ..tables.open import check_one_units, feeds
    from ..tables.units import check_prices, metadata

    if name not in tables() or path is None or (isinstance(path, list) and None in path):
        return None
    try:
        every = feeds(path, fmt or None)
        parts = [(feed, resolve_format(fmt or None, feed), None) for feed in every]
        check_one_units(parts)
        prices = check_prices(prices)
    except (ObookError, OSError):
        return None
    return lambda names: metadata(tables()[name], parts[0][1], names, prices)


def with_units(reader, units: dict):
    """``reader`` whose schema (and batches) carry the metadata ``units``."""
    import pyarrow as pa

    schema = reader.schema.with_metadata({**(reader.schema.metadata or {}), **units})
    return pa.RecordBatchReader.from_batches(schema, (b.replace_schema_metadata(schema.metadata) for b in reader))
