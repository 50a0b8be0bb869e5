"""Opening a table of a source: one feed, a list of feed files or a glob pattern.

A **list** of paths, or a path with a glob pattern (``days/*.itch``), is a set of feeds, each
replayed on its own (books start empty in each), their rows one file after the other, like
``read_parquet``; ``filename=True`` adds the file of each row. A **tuple** of paths is one
feed cut into pieces (read in order, or merged by a format's own sequence numbers), and so
is a list for a format whose feed is several files by nature (Shenzhen vendor CSV:
``FeedFormat.merge``). A path, a stream or a capture's lines is one feed.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa

from ..checks import (check_choice, check_date, check_feed_path, check_flag, check_format_name, check_levels,
                      check_progress, check_tickers, check_whole_at_least_1)
from ..errors import ObookError
from . import OPTIONS, check_produces, table
from .units import Shape, check_prices

_GLOB = set("*?[")


def is_pattern(path) -> bool:
    return isinstance(path, (str, os.PathLike)) and bool(_GLOB & set(os.fspath(path))) and not os.path.exists(path)


def expand(path) -> list[str]:
    """The files of a glob pattern, sorted (``**``: any depth of folders, as in DuckDB and a
    pipeline's glob; a folder it matches is none); none is an error."""
    found = sorted(f for f in glob.glob(os.path.expanduser(os.fspath(path)), recursive=True)
                   if not os.path.isdir(f))
    if not found:
        raise ObookError(f"{os.fspath(path)}: no feed file matches")
    return found


def names_given(items) -> dict:
    """The files of ``items`` (paths and glob patterns, as the user gave them) by their
    absolute paths: what an error of a reader handed the absolute paths puts back
    (:func:`obook.errors.name_as_given`)."""
    out = {}
    for item in items:
        for p in expand(item) if is_pattern(item) else [os.fspath(item)]:
            out[os.path.abspath(os.path.expanduser(p))] = p
    return out


def feeds(source, format=None) -> list:
    """The feeds of a source: each one a path, a tuple of pieces, a stream or a lines object."""
    from ..feeds import resolve_format
    from ..feeds.sources import headed, is_stream

    if is_stream(source):
        return [headed(source)]       # decompressed, its first bytes kept to tell its format
    if isinstance(source, tuple):
        return [source]
    if is_pattern(source):
        source = [source]
    if isinstance(source, list):
        paths = [p for item in source for p in (expand(item) if is_pattern(item) else [os.fspath(item)])]
        if not paths:
            raise ObookError("no feed files given")
        if resolve_format(format, paths[0]).merge is not None:
            return [tuple(paths)]      # the pieces of one feed
        return paths
    return [source]


def _name(feed) -> str:
    from ..feeds.sources import source_name

    return source_name(feed)


def _shown(feed, names: dict) -> str:
    """The ``filename`` of a feed: its files as ``names`` gives them, those of one feed in
    pieces joined by ``+``."""
    if isinstance(feed, str):
        return names.get(feed, feed)
    if isinstance(feed, tuple) and all(isinstance(p, str) for p in feed):
        return "+".join(names.get(p, p) for p in feed)
    return _name(feed)


def _replay(spec, feed, fmt, o, tables=None):
    """The Replay of table ``spec`` (``tables``: of these replay tables at once) of one feed."""
    from ..engine.replay import Replay

    return Replay(feed, workers=o.get("workers"), format=fmt, on_error=o.get("on_error") or "raise",
                  tables=tuple(tables or (spec.name,)), levels=o.get("levels", 10), date=o.get("date"), tickers=o.get("tickers"),
                  queue_positions=o.get("queue_positions", True) is not False,
                  unknown_tickers=o.get("unknown_tickers", "raise"), progress=o.get("progress"))


def _stamp(fmt, feed, o):
    from ..session import session_date, stamp_of

    return stamp_of(fmt, session_date(feed, o.get("date"), fmt))


#: the time column a table's ``timestamp`` follows: ``time``, a bar's ``start``
_STAMPED = ("time", "start")


def _stamped(stamp, t: pa.Table) -> pa.Table:
    """A table made from the replay's rows (bars, a BBO grid) with ``timestamp`` after its time
    column when the session date is known, as every replay table has (one that has it already,
    a spread's, or has no time column, a twas', is left as it is)."""
    names = t.schema.names
    column = next((c for c in _STAMPED if c in names), None)
    if stamp.base_ns is None or column is None or "timestamp" in names:
        return t
    as_time = t.rename_columns(["time" if n == column else n for n in names])     # the Stamp's column
    out = pa.Table.from_batches([stamp.batch(b) for b in as_time.to_batches()], stamp.schema(as_time.schema))
    return out.rename_columns([column if n == "time" else n for n in out.schema.names])


def raw_schema(spec, feed, fmt, o) -> pa.Schema:
    """The schema of the format's rows before shaping (no replay is started)."""
    from ..feeds import load

    if spec.source == "replay":
        return _replay(spec, feed, fmt, o).schema(spec.name)
    if spec.source == "bars":      # the interval checked now, in the feed's time unit
        from ..klines import bar_step, bars_schema

        bar_step(o["interval"] if o.get("interval") is not None else "1 minute", fmt.time_unit_ns)
        return _stamped(_stamp(fmt, feed, o), bars_schema.empty_table()).schema
    if spec.source == "analytics":
        from ..analytics import analytic

        empty = _replay(table("bbo"), feed, fmt, o).schema("bbo").empty_table()
        return _stamped(_stamp(fmt, feed, o), analytic(spec.name, empty, 10 ** fmt.price_scale, o)).schema
    if spec.source == "side":
        schema = fmt.side_table(spec.name).schema
        return _stamp(fmt, feed, o).schema(schema) if "time" in schema.names else schema
    if spec.source == "format" and fmt.table_schema:
        return load(fmt.table_schema)(spec.name)
    reader = _raw_reader(spec, feed, fmt, o)
    try:
        return reader.schema
    finally:
        getattr(reader, "close", lambda: None)()


def _raw_reader(spec, feed, fmt, o) -> pa.RecordBatchReader:
    if spec.source == "replay":
        return _replay(spec, feed, fmt, o).reader(spec.name)
    if spec.source == "bars":
        from ..klines import bars

        interval = o["interval"] if o.get("interval") is not None else "1 minute"
        made = bars(feed, interval, o.get("workers"), fmt, o.get("on_error") or "raise", o.get("date"),
                    o.get("tickers"), o.get("unknown_tickers", "raise"), o.get("progress"), o.get("before"))
        stamp = _stamp(fmt, feed, o)    # batch by batch: the bars before a bad record come first
        return pa.RecordBatchReader.from_batches(raw_schema(spec, feed, fmt, o), (
            out for batch in made for out in _stamped(stamp, pa.Table.from_batches([batch])).to_batches()))
    if spec.source == "analytics":
        from ..analytics import ROW_BY_ROW, analytic

        bbo = _replay(table("bbo"), feed, fmt, o).reader("bbo")
        stamp, scale = _stamp(fmt, feed, o), 10 ** fmt.price_scale
        if spec.name in ROW_BY_ROW:     # batch by batch: the rows before a bad record come first
            return pa.RecordBatchReader.from_batches(raw_schema(spec, feed, fmt, o), (
                out for batch in bbo
                for out in _stamped(stamp, analytic(spec.name, pa.Table.from_batches([batch]), scale, o)).to_batches()))
        t = _stamped(stamp, analytic(spec.name, bbo.read_all(), scale, o, _name(feed)))
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
    if spec.source == "messages":
        return fmt.messages_reader()(feed)
    if spec.source == "side":
        from ..feeds import side_table_reader

        reader = side_table_reader(feed, spec.name, o.get("on_error") or "raise", fmt)
        if "time" not in reader.schema.names:
            return reader
        stamp = _stamp(fmt, feed, o)
        return pa.RecordBatchReader.from_batches(stamp.schema(reader.schema), (stamp.batch(b) for b in reader))
    from ..engine.replay import Replay
    from ..feeds import format_table_reader

    return format_table_reader(fmt, spec.name)(spec.name, feed, o.get("workers"), o.get("on_error") or "raise",
                                              Replay)


def check_options(spec, options: dict) -> dict:
    allowed = set(spec.all_options()) | {"unknown_tickers", "progress"}   # (the front ends' own)
    if spec.source == "bars":
        allowed.add("before")       # convert's, stopped by a bad record: the bars of the records before it
    bad = [k for k in options if k not in allowed]
    if bad:
        raise ObookError(f"table {spec.name!r} takes no option {', '.join(map(repr, bad))}; it takes "
                         f"{', '.join(spec.all_options())}")
    out = {k: v for k, v in options.items() if v is not None}
    missing = [o for o in spec.required() if o not in out]
    if missing:
        raise ObookError(f"table {spec.name!r} needs {', '.join(missing)}: {'; '.join(OPTIONS[o].doc for o in missing)}")
    if "workers" in out:
        check_whole_at_least_1("workers", out["workers"])
    check_format_name(out.get("format"))
    for o in out:       # a choice (on_error, prices) in any case; '' is no way to say raise
        if o in OPTIONS and OPTIONS[o].choices:
            out[o] = check_choice(o, out[o], OPTIONS[o].choices)
    if "tickers" in out:
        out["tickers"] = check_tickers(out["tickers"])
    if "levels" in out:
        out["levels"] = check_levels(out["levels"])
    check_date(out.get("date"))
    check_progress(out.get("progress"))
    for flag in ("queue_positions", "filename"):
        if flag in out:
            out[flag] = check_flag(flag, out[flag])
    if isinstance(out.get("interval"), (bool, np.bool_)):
        raise ObookError(f"interval must be like '1 minute', '5s' or '100 ms', not {out['interval']!r}")
    out["prices"] = check_prices(out.get("prices"))
    return out


class Opened:
    """A table of a source, ready to stream: its schema is known, nothing is read yet."""

    def __init__(self, name: str, source, options: dict, names: dict | None = None):
        """``names``: the ``filename`` of a feed file, by its path in ``source``, when that is
        not how it was given (a front end that made the paths absolute)."""
        from ..feeds import resolve_format
        from ..feeds.sources import check_source, is_stream

        self.spec = table(name)
        self.options = o = check_options(self.spec, options)
        check_feed_path(source)
        self.feeds = feeds(source, o.get("format"))
        self.parts = []
        for feed in self.feeds:
            if not is_stream(feed) and isinstance(feed, (str, os.PathLike, tuple)):
                try:
                    check_source(feed)
                except OSError as e:        # a name too long for the file system ...
                    raise ObookError(f"{e.filename or _name(feed)}: {e.strerror or e}") from None
            fmt = resolve_format(o.get("format"), feed)
            check_produces(fmt, self.spec.name)
            shown = _shown(feed, names or {})
            self.parts.append((feed, fmt, Shape(self.spec, fmt, o["prices"], shown if o.get("filename") else None)))
        check_one_units(self.parts)
        feed, fmt, shape = self.parts[0]
        self.schema = shape.schema(raw_schema(self.spec, feed, fmt, o))

    def batches(self):
        for feed, fmt, shape in self.parts:
            reader = _raw_reader(self.spec, feed, fmt, self.options)
            try:
                same = None
                for batch in reader:
                    out = shape.batch(batch)
                    if same is None:
                        same = out.schema.equals(self.schema, check_metadata=False)
                        if not same and out.schema.names != self.schema.names:
                            raise ObookError(f"{_name(feed)}: its {self.spec.name} columns differ from "
                                             f"{_name(self.feeds[0])}'s: {_differ(self.schema.names, out.schema.names)}")
                    yield out if same else out.cast(self.schema)
            finally:
                getattr(reader, "close", lambda: None)()

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self.batches())


def _differ(first: list, other: list) -> str:
    """What the columns ``other`` of a later file lack or add to ``first``, the first file's."""
    lacks, adds = [c for c in first if c not in other], [c for c in other if c not in first]
    said = "; ".join(part for part in (f"it lacks {', '.join(lacks)}" if lacks else "",
                                       f"it has {', '.join(adds)} too" if adds else "") if part)
    if "timestamp" in lacks + adds:
        said += (" (timestamp comes with a known session date, from a file's name or date=: name every file "
                 "with its date, or read the files apart)")
    return said or f"their order is {', '.join(other)}"


def _units(fmt) -> tuple:
    return (fmt.price_scale, fmt.quantity_scale, fmt.time_unit_ns, fmt.epoch, fmt.tz)


def check_one_units(parts: list) -> None:
    """The feeds of one table share their units (price and quantity scales, time unit, origin
    and zone): one table, one reading of its numbers. Formats that differ in them are an error."""
    from ..checks import a_feed

    first, first_fmt, _ = parts[0]
    for feed, fmt, _ in parts[1:]:
        if _units(fmt) != _units(first_fmt):
            raise ObookError(f"{_name(feed)}: {a_feed(fmt.name)}, whose units (prices, quantities, times) are not "
                             f"those of {_name(first)}, {a_feed(first_fmt.name)}: one table holds one set of "
                             "units; read them apart")


def open_table(name: str, source, **options) -> pa.RecordBatchReader:
    """Table ``name`` of ``source`` (a feed path, a list of feed files or a glob pattern: see
    the module) as a ``pyarrow.RecordBatchReader``. ``options``: the table's (see
    ``obook.tables.OPTIONS``); an option the table does not take, or a table the feed's
    format does not produce, raises ``ObookError`` here."""
    return Opened(name, source, options).reader()


def open_tables(names, source, **options) -> tuple[dict, object]:
    """Replay tables ``names`` (``trades``, ``depth`` ...) of ``source`` from one replay of each
    feed: (their schemas by name, an iterator of (name, batch) in feed order). ``options``: the
    union of the tables' (each table is given those it takes, checked as ``open_table`` checks
    them)."""
    opened = {}
    for name in names:
        spec = table(name)
        if spec.source != "replay":
            raise ObookError(f"table {name!r} is not a replay's: open it alone")
        takes = set(spec.all_options()) | {"unknown_tickers", "progress"}
        opened[name] = Opened(name, source, {k: v for k, v in options.items() if k in takes})
    unknown = [k for k in options if not any(k in o.options or options[k] is None for o in opened.values())]
    if unknown:
        raise ObookError(f"tables {', '.join(names)} take no option {', '.join(map(repr, unknown))}")
    o = {k: v for part in opened.values() for k, v in part.options.items()}

    def pairs():
        first = opened[names[0]]
        for i, (feed, fmt, _) in enumerate(first.parts):
            replay = _replay(first.spec, feed, fmt, o, tables=names)
            for name, batch in replay.table_batches():
                part = opened[name]
                out = part.parts[i][2].batch(batch)
                yield name, out if out.schema.equals(part.schema, check_metadata=False) else out.cast(part.schema)

    return {name: part.schema for name, part in opened.items()}, pairs()


def defaults(name: str) -> dict:
    """The table's options with their defaults."""
    return {o: OPTIONS[o].default for o in table(name).all_options()}
