"""The table and units reference, rendered from the registry (``docs/tables.md``)."""

from __future__ import annotations

from . import FRONT_ENDS, OPTIONS, formats_of, tables

_FRONT = {"python": "`obook.{t}(path, ...)`", "duckdb": "`obook_{t}(path, ...)`",
          "polars": "`obook.scan_{t}(path, ...)`", "convert": "`obook convert --tables {t}`"}
_UNIT = {1: "ns", 1_000: "us", 1_000_000: "ms", 1_000_000_000: "s"}


def _formats_table() -> list[str]:
    from ..feeds import formats

    out = ["## Units by format", "",
           "| format | price_scale | quantity_scale | time unit | time origin | time zone |",
           "|---|---|---|---|---|---|"]
    for f in formats().values():
        origin = "UTC epoch" if f.epoch else "local midnight"
        out.append(f"| `{f.name}` | {10 ** f.price_scale} | {f.quantity_scale} | "
                   f"{_UNIT.get(f.time_unit_ns, f'{f.time_unit_ns} ns')} | {origin} | {f.tz} |")
    return out


def _sql_macro(t) -> list[str]:
    """An analytics table's DuckDB front end: the SQL macro of ``sql/`` (the same options)."""
    if t.source != "analytics" or "duckdb" in t.front_ends:
        return []
    return [f"`obook_{t.name}(path, ...)` (a SQL macro of `sql/`, the same options)"]


def _command(t) -> list[str]:
    """The command line's: ``obook table`` takes every table a Python reader gives (its
    options as ``--option``)."""
    return [f"`obook table {t.name} FEED`"] if "python" in t.front_ends else []


def _default(option: str) -> str:
    """An option's default in the options table: "required (by TABLE ...)" for an option some
    table cannot go without."""
    needing = [name for name, t in tables().items() if option in t.required()]
    if needing:
        return f"required (by {', '.join(f'`{n}`' for n in needing)})"
    return f"`{OPTIONS[option].default}`"


def reference_markdown() -> str:
    """Markdown: every table (what it holds, its options, its formats and front ends, its price,
    quantity and time columns), the units of each format and the schema metadata keys."""
    from .units import __doc__ as units_doc

    out = ["# Tables and units", "",
           "Generated from the table registry (`obook.tables`) by `obook.tables.reference_markdown()`.", "",
           "Every table is offered by every front end listed with it; a table a feed's format does not "
           "produce is an error naming the tables it has. A path may be a list of feed files or a glob "
           "pattern (each file replayed on its own; `filename` adds the file of each row; their formats "
           "must share their units: prices, quantities, times); a tuple of paths (in SQL, a tuple: "
           "`('a.log', 'b.log')`) is one feed cut into pieces.", "",
           "`obook convert` (and `obook.convert`) writes several tables of one feed in one pass and takes "
           "fewer options: `workers`, `format`, `on_error`, `tickers`, `date`, `levels` and `interval` "
           "(`--workers` ...). Its files hold the feed's integer prices (read them as the currency with "
           "`obook_price(price, 'out/bbo.parquet')`), the queue positions and no `filename` column; "
           "`obook table NAME FEED -o FILE` writes one table with any of its options.", "",
           "## Tables", ""]
    for name, t in tables().items():
        out += [f"### `{name}`", "", t.doc, "",
                f"- formats: {', '.join(f'`{f}`' for f in formats_of(name))}",
                "- front ends: " + ", ".join([_FRONT[f].format(t=name) for f in FRONT_ENDS if f in t.front_ends]
                                             + _sql_macro(t) + _command(t)),
                "- options: " + ", ".join(f"`{o}` (required)" if o in t.required() else
                                          f"`{o}` (default `{OPTIONS[o].default}`)" for o in t.all_options())]
        for label, cols in (("price columns", t.prices), ("quantity columns", t.quantities),
                            ("time columns", t.times), ("duration columns (feed time units)", t.durations)):
            if cols:
                out.append(f"- {label}: {', '.join(f'`{c}`' for c in cols)}")
        out.append("")
    out += ["## Options", "", "A word an option chooses (`on_error`, `prices`, `format`) is read in any case: "
            "`'Skip'`, `'DECIMAL'`, `'ITCH'`; another is an error listing the words it takes.", "",
            "| option | default | meaning |", "|---|---|---|"]
    out += [f"| `{o.name}` | {_default(o.name)} | {o.doc} |" for o in OPTIONS.values()]
    out.append("")
    out += _formats_table()
    out += ["", "## Schema metadata", "",
            "Every table's Arrow schema carries its units under these keys (Parquet files written by "
            "`convert` keep them):", ""]
    doc = units_doc.split("Metadata keys (values are text):", 1)[1].strip().split("\n")
    out += ["| key | meaning |", "|---|---|"]
    key, text = None, []
    for ln in doc:
        if ln.startswith("``"):
            if key:
                out.append(f"| `{key}` | {' '.join(text)} |")
            key, _, rest = ln[2:].partition("``")
            text = [rest.strip()]
        elif key and ln.strip() and not ln.startswith("="):
            text.append(ln.strip())
    if key:
        out.append(f"| `{key}` | {' '.join(text)} |")
    return "\n".join(out).replace("``", "`") + "\n"
