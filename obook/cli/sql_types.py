"""``obook sql``'s result in a form each of its outputs holds, whatever the DuckDB types.

DuckDB hands the rows over as Arrow, and some of its types have no Arrow form that a
printer or a file takes as it is: INTERVAL (Arrow's month-day-nano has no text and no
Parquet form), LIST, ARRAY, STRUCT, MAP and UNION (no CSV form; UNION no Parquet form),
BIT and BIGNUM (their Arrow form is DuckDB's own bytes), TIME WITH TIME ZONE (its Arrow
form drops the offset) and UHUGEINT (DuckDB's Arrow export wraps the values past 2**127).
:func:`for_output` converts those columns in DuckDB, before the export: to DuckDB's text of
the value (what DuckDB's own CLI shows), a nested value to its JSON for ``--format json``.
A column Parquet cannot hold even so (an INTERVAL, a UNION) is an error naming it.

:func:`printable` and :func:`csv_ready` then make each Arrow batch text where the printers
need it: a DATE or TIMESTAMP ``infinity`` (Arrow has no infinity: DuckDB exports the
largest or smallest integer) prints as ``infinity`` / ``-infinity``, and a TIME of
24:00:00 (DuckDB's largest, past the day Arrow's text knows) as ``24:00:00.000000``.
"""

from __future__ import annotations

from ..errors import OutputError

__all__ = ["for_output", "printable", "csv_ready", "unique_names", "STYLES"]

#: what for_output prepares a result for: stdout's three formats and the files' kinds
STYLES = ("table", "csv", "json", "parquet", "arrow")

_NESTED = {"list", "array", "struct", "map", "union"}
#: Arrow forms that are DuckDB's internals (bytes, an offset dropped): text in every output
_AS_TEXT = {"bit", "bignum", "varint", "time with time zone"}
_FILES = {"parquet": "a Parquet", "arrow": "an Arrow"}
#: no Parquet form in pyarrow's writer
_NOT_PARQUET = {"interval", "union"}


def for_output(rel, style: str, target: str = ""):
    """``rel`` (a DuckDB relation) with its columns converted for ``style`` (one of
    :data:`STYLES`), and the positions of the columns that now hold JSON text (``json``:
    the nested ones). ``rel`` itself when nothing needs converting. ``target``: the file a
    Parquet error names."""
    exprs, json_columns, changed = [], set(), False
    for i, (name, t) in enumerate(zip(rel.columns, rel.types)):
        column = f"#{i + 1}"
        expr = _converted(column, t, style, name)
        if style == "parquet" and _holds(t, _NOT_PARQUET):
            raise OutputError(f"{target}: column {name!r} is {t}, which a Parquet file cannot hold here; "
                              f"write .arrow, or CAST it in the query (e.g. CAST({_quoted(name)} AS VARCHAR))")
        if expr.startswith("to_json("):
            json_columns.add(i)
        changed = changed or expr != column
        exprs.append(f"{expr} AS {_quoted(name)}")
    return (rel.project(", ".join(exprs)) if changed else rel), json_columns


def _converted(column: str, t, style: str, name: str) -> str:
    """The SQL that gives ``column`` (``name``, of DuckDB type ``t``) a form ``style`` holds."""
    kind = t.id
    if kind in _AS_TEXT or (kind == "uhugeint" and style not in ("parquet", "arrow")):
        return f"CAST({column} AS VARCHAR)"
    if kind == "uhugeint":      # in a file: HUGEINT (Arrow's decimal128), exact up to 2**127 - 1
        said = f"column {name!r}: a UHUGEINT past 2**127 - 1 has no exact form in {_FILES[style]} file; " \
               "CAST it in the query (to VARCHAR or DOUBLE); the value is "
        return (f"CASE WHEN {column} > {2 ** 127 - 1} THEN error(concat({_literal(said)}, {column})) "
                f"ELSE CAST({column} AS HUGEINT) END")
    if style in ("parquet", "arrow"):
        return column
    if kind in _NESTED:
        return f"to_json({column})" if style == "json" else f"CAST({column} AS VARCHAR)"
    if kind == "interval":
        return f"CAST({column} AS VARCHAR)"
    return column


def _holds(t, kinds: set) -> bool:
    """Whether DuckDB type ``t`` is, or nests, one of ``kinds``."""
    if t.id in kinds:
        return True
    if t.id not in _NESTED:
        return False
    return any(_holds(child, kinds) for _, child in t.children if hasattr(child, "id"))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def unique_names(names: list[str]) -> list[str]:
    """``names`` with a repeated one numbered as DuckDB numbers a subquery's (``a``, ``a_1``):
    the keys of a JSON object must differ."""
    out, used = [], set()
    for name in names:
        unique, n = name, 0
        while unique in used:
            n += 1
            unique = f"{name}_{n}"
        used.add(unique)
        out.append(unique)
    return out


def printable(batch):
    """``batch`` for the table and JSON printers: temporal columns as text (a ns timestamp
    does not fit Python's datetime), DATE and TIMESTAMP infinities as ``infinity``, a TIME of
    24:00:00 as such, BLOB columns as hex (obook.output.text_safe)."""
    import pyarrow as pa

    from ..output import text_safe

    batch = text_safe(batch)
    columns = [_temporal_text(c) if pa.types.is_temporal(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def csv_ready(batch):
    """``batch`` for the CSV writer: a DATE or TIMESTAMP column holding an infinity, a TIME
    column holding 24:00:00, as text (the others stay as they are: the writer prints them
    unquoted)."""
    import pyarrow as pa

    columns, changed = [], False
    for c in batch.columns:
        if _infinities(c) is not None or _whole_days(c) is not None:
            c, changed = _temporal_text(c), True
        columns.append(c)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names) if changed else batch


def _temporal_text(column):
    """A temporal column as Arrow's text of it, an infinity as DuckDB writes it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = column.cast(pa.string())
    days = _whole_days(column)
    if days is not None:       # Arrow's text of 24:00:00 is "<value out of range: N>"
        at_midnight = pc.if_else(days, pa.scalar(0, column.type), column).cast(pa.string())
        return pc.if_else(days, pc.binary_replace_slice(at_midnight, 0, 2, "24"), text)
    found = _infinities(column)
    if found is None:
        return text
    plus, minus = found
    return pc.if_else(plus, "infinity", pc.if_else(minus, "-infinity", text))


def _whole_days(column):
    """The mask of a TIME column's values of 24:00:00 (DuckDB's TIME reaches it, Arrow's
    text of a time stops before it); None if it holds none, or is no TIME column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_time(column.type):
        return None
    per_second = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}[column.type.unit]
    raw = column.cast(pa.int32() if pa.types.is_time32(column.type) else pa.int64())
    days = pc.equal(raw, 86_400 * per_second)
    return days if pc.any(days).as_py() else None


def _infinities(column):
    """(is +infinity, is -infinity) masks of a DATE or TIMESTAMP column holding one; None if
    it holds none. DuckDB exports them as the largest integer and its negative."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_date32(column.type):
        raw, top = column.cast(pa.int32()), 2 ** 31 - 1
    elif pa.types.is_timestamp(column.type):
        raw, top = column.cast(pa.int64()), 2 ** 63 - 1
    else:
        return None
    plus, minus = pc.equal(raw, top), pc.equal(raw, -top)
    if not pc.any(pc.or_(plus, minus)).as_py():
        return None
    return plus, minus
