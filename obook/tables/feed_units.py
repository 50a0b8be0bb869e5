"""The units of a feed's tables (``obook.tables.units``) as the scalar functions read them:
the DuckDB ``obook_unit`` (``obook_price``, ``obook_time_of_day`` ...) and the polars
``obook.polars.time_of_day``, from the feed's format or from the schema of Parquet or Arrow
files obook wrote."""

from __future__ import annotations

import os

import pyarrow as pa

from ..errors import ObookError


def feed_unit(source, fmt, key) -> str:
    """A unit of the tables of ``source`` (a path or a list of paths, absolute; a glob pattern;
    Parquet or Arrow files obook wrote: the units their schema records) of format ``fmt`` (None:
    detected), as text: ``price_scale`` (a factor), ``quantity_scale``, ``time_unit_ns`` (ns
    per unit of ``time``), ``time_origin`` (``midnight`` or ``epoch``)."""
    from ..feeds import resolve_format
    from .open import check_one_units, feeds

    recorded = _parquet_units(source, fmt, key)
    if recorded is not None:        # Parquet or Arrow files obook wrote: the units their schema records
        if key == "price_scale" and recorded["price_scale"] is None:
            raise ObookError(f"{recorded['path']}: its prices are {recorded['prices']} (obook.prices), "
                             "the currency already, not the feed's integers that obook_price and "
                             "obook_ticks convert: give the feed it came from, or a file of integer prices")
        return _unit_value({k: v for k, v in recorded.items() if k not in ("path", "prices")}, key,
                           recorded.get("path") or source)
    every = feeds(source, fmt)
    feed = every[0]
    # called once per vector of a query (obook_price ...): the format of a file is detected
    # once per (path, format, modification time)
    known = (tuple(source) if isinstance(source, list) else source, fmt,
             os.stat(feed).st_mtime_ns if isinstance(feed, str) else None)
    values = _units_seen.get(known)
    if values is None:
        f = resolve_format(fmt, feed)
        if fmt:
            _check_given(f, feed)
        _check_header(f, feed)
        # the files' units are one set, as a table's (a price of the second read at the first's scale
        # would be off by their ratio)
        check_one_units([(feed, f, None)] + [(other, resolve_format(fmt, other), None) for other in every[1:]])
        values = _format_units(f)
        if len(_units_seen) > 256:
            _units_seen.clear()
        _units_seen[known] = values
    return _unit_value(values, key)


def _check_given(f, feed) -> None:
    """A format given for a feed that looks like another one (recognised from its first bytes)
    whose units differ is an error: the units would be the wrong format's (an ITCH file's prices
    read at Shanghai's 1/1000, a CSV file's ms read as ns), where a table of the feed fails."""
    from ..feeds import get_format, other_format

    found = other_format(feed, f)
    if found is not None and _format_units(get_format(found)) != _format_units(f):
        raise ObookError(f"{feed}: format {f.name!r} was given, and the file looks like {found!r}, whose units "
                         "(prices, quantities, times) differ: leave format out or give that")


def _check_header(f, feed) -> None:
    """The error the replay would give on the first line of a feed whose format starts with a
    header line (CSV: a file of other text is no feed of it, though its name and commas
    suggest one): its units are not the units of anything."""
    framer = f.framer_class()
    if not getattr(framer, "headed", False) or not isinstance(feed, str):
        return
    import numpy as np

    from ..feeds.sources import read_head

    head = read_head(feed, 1 << 12)
    got = framer(feed).frame(np.frombuffer(head, np.uint8), 1, 0, len(head) < 1 << 12, 1)
    if got.error is not None and got.n_records == 0:
        raise got.error


def _format_units(f) -> dict:
    """The units of the tables of feed format ``f``, as ``obook_unit`` gives them."""
    return {"price_scale": 10 ** f.price_scale, "quantity_scale": f.quantity_scale,
            "time_unit_ns": f.time_unit_ns, "time_origin": "epoch" if f.epoch else "midnight"}


def _unit_value(values: dict, key, source=None) -> str:
    if key not in values:
        raise ObookError(f"obook_unit: no unit {'NULL' if key is None else repr(key)}; "
                         f"choose from {', '.join(values)}")
    if values[key] is None:         # (a Parquet file of an earlier obook that did not record it)
        raise ObookError(f"{source}: its schema records no obook.{key}: give the feed it came from")
    return str(values[key])


_units_seen: dict = {}

#: the file names of tables obook writes whose schema records the units: Parquet, Arrow IPC
_PARQUET = (".parquet", ".pq")
_TABLE_FILES = _PARQUET + (".arrow", ".feather", ".ipc")


def _arrow_schema(path: str) -> pa.Schema:
    """The schema of an Arrow IPC file (obook writes the file format; a stream is read too)."""
    import pyarrow.ipc as ipc

    try:
        with ipc.open_file(path) as reader:
            return reader.schema
    except pa.ArrowInvalid:
        with ipc.open_stream(path) as reader:
            return reader.schema


#: what an error about a file without units offers for each unit: the function taking it as given
_GIVEN_UNIT = {"price_scale": "the scale to obook_scaled_price(price, price_scale)",
               "time_unit_ns": "the unit to obook_scaled_time(time, time_unit_ns)",
               "time_origin": "the unit to obook_scaled_time(time, time_unit_ns)"}


def _parquet_units(source, fmt=None, key="price_scale") -> dict | None:
    """The units (price_scale, quantity_scale, time_unit_ns, time_origin) that Parquet or Arrow IPC
    files obook wrote record in their schema (``obook.tables.units``), when ``source`` names such
    files (.parquet, .pq; .arrow, .feather, .ipc) alone; None otherwise. Files whose units differ
    are an error. A file that records none (``obook sql --output``'s) takes those of format ``fmt`` when it is given (the
    format of the feed it came from), else is an error; one that records them takes ``fmt`` only
    when it is the format the file records. Files of decimal or float prices (``obook.prices``)
    have no price_scale of integers: None, with ``path`` and ``prices`` saying which. ``key``: the
    unit asked for, whose function with the unit given the error of a file without units names."""
    import pyarrow.parquet as pq

    from ..feeds import get_format
    from .open import expand, is_pattern
    from .units import time_unit_ns, units as meta_units

    items = source if isinstance(source, list) else [source]
    if not items or not all(isinstance(p, str) and p.lower().endswith(_TABLE_FILES) for p in items):
        return None
    given = get_format(fmt) if fmt else None
    paths = [p for item in items for p in (expand(item) if is_pattern(item) else [item])]
    found, not_int = None, {}
    for path in paths:
        kind = "Parquet" if path.lower().endswith(_PARQUET) else "Arrow"
        try:
            meta = meta_units(pq.read_schema(path) if kind == "Parquet" else _arrow_schema(path))
        except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
            raise ObookError(f"{path}: cannot read its {kind} schema: {e}") from e
        if "time_unit" not in meta and given is not None:     # no units recorded: the format given
            units, prices = _format_units(given), "int"
        else:
            try:
                prices = meta.get("prices", "int")
                units = {"price_scale": int(meta["price_scale"]) if prices == "int" else None,
                         "quantity_scale": int(meta["quantity_scale"]), "time_unit_ns": time_unit_ns(meta["time_unit"]),
                         "time_origin": meta.get("time_origin")}
            except (KeyError, ValueError):
                missing = ObookError(f"{path}: {'a Parquet' if kind == 'Parquet' else 'an Arrow'} file without "
                                     "obook's units (obook.price_scale, "
                                     "obook.quantity_scale, obook.time_unit in its schema; "
                                     "obook sql --output records none): give the feed it came from, its format "
                                     f"(format := 'csv' ...), or {_GIVEN_UNIT.get(key, _GIVEN_UNIT['price_scale'])}")
                missing.units_missing_in = path     # (SQL's words: a front end with other ways out has its own)
                missing.units_file_kind = kind
                raise missing from None
            if given is not None and meta.get("format") != given.name:
                raise ObookError(f"{path}: format := {fmt!r} was given, but the file records the units of "
                                 f"format {meta.get('format')!r} (obook.format): leave format out (its units "
                                 "are read from the file), or give the format it records")
        if found is not None and units != found[1]:
            raise ObookError(f"{path}: its units ({units}) are not those of {found[0]} ({found[1]}): "
                             "read them apart")
        found = found or (path, units)
        if units["price_scale"] is None:
            not_int = {"path": path, "prices": prices}
    return {**found[1], **not_int}
