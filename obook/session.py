"""The trading session of a feed and the tables' ``timestamp`` column.

A format whose ``time`` counts from local midnight (ITCH, CSV) gets ``timestamp`` when the
session date is known (a ``date`` option, or the format's own ``session_date(path)``, e.g.
a Nasdaq file name ``MMDDYYYY.NASDAQ_ITCH50[.gz]``): session midnight in the feed's time
zone plus the feed time. A format whose ``time`` is UTC epoch (``FORMAT.epoch``) always
gets it. The column is ``timestamp[ns, UTC]`` on every format: the same instants and the
same type in every front end (the feed's own zone, which places its midnight, is the
schema's ``obook.time_zone``).
"""

from __future__ import annotations

import datetime as _dt

import pyarrow as pa

from .errors import ObookError

__all__ = ["TIMEZONE", "session_date", "partition_date", "check_day", "midnight_ns", "timestamp_schema",
           "with_timestamp", "Stamp", "stamp_of"]

TIMEZONE = "America/New_York"      # the zone of a session date when no format names one
TIMESTAMP = pa.timestamp("ns", tz="UTC")


def session_date(path, date=None, fmt=None) -> _dt.date | None:
    """The trading day of a feed: ``date`` (``YYYY-MM-DD`` or a ``datetime.date``) when given,
    else the format's ``session_date(path)`` (``fmt``: a FeedFormat or its name; None: the
    format told from the feed's name and first bytes, or when none can be told, any registered
    format's that knows the path), else None. A day ns timestamps cannot hold (before 1678,
    after 2261) is an ObookError naming where it came from, and so are the files of one feed
    (a tuple) whose own dates differ."""
    if isinstance(path, tuple) and len(path) > 1:
        _check_one_day(path, fmt)
    day = _session_date(path, date, fmt)
    if day is not None:
        check_day(day, f"--date / date= {date}" if date is not None else f"{path}: its session date")
    return day


def partition_date(path, fmt=None) -> _dt.date | None:
    """The day a feed file's tables belong to in a dataset partitioned by date: its
    :func:`session_date`, or for a format with no rule for one (Databento, whose timestamps
    are instants already) the date in its name (``YYYYMMDD`` or ``YYYY-MM-DD``, as Databento
    names a day's file); None when there is none. ``fmt``: as for :func:`session_date`."""
    day = session_date(path, None, fmt)
    if day is not None:
        return day
    from .feeds import named_date, resolve_format

    try:
        feed = resolve_format(fmt, path)
    except ObookError:                  # no format knows it: no day (its conversion says why)
        return None
    day = named_date(path) if feed.session_date is None else None
    if day is not None:
        check_day(day, f"{path}: the date in its name")
    return day


def check_day(day: _dt.date, where: str) -> None:
    """An ObookError naming ``where`` the day came from when ns timestamps cannot hold it."""
    if not _FIRST_DAY <= day <= _LAST_DAY:
        raise ObookError(f"{where}: {day} is outside the days ns timestamps hold "
                         f"({_FIRST_DAY} to {_LAST_DAY})")


#: the days whose instants int64 ns since the epoch hold (with a day to spare at each end)
_FIRST_DAY, _LAST_DAY = _dt.date(1678, 1, 1), _dt.date(2261, 12, 31)


def _session_date(path, date, fmt) -> _dt.date | None:
    if date is None:
        return _feed_date(path, fmt)
    from .checks import check_date

    day = check_date(date)
    check_day(day, f"--date / date= {date}")    # before a warning that it is used
    from .feeds import date_given

    try:
        with date_given():
            own = _feed_date(path, fmt)
    except (OSError, ObookError, ValueError, TypeError):     # (the replay says what is wrong with the file)
        own = None
    if own is not None and own != day:
        _contradicted(path, day, own)
    return day


#: (feed, date given, the feed's own date) already warned about in this process
_warned: set = set()


def _contradicted(path, day: _dt.date, own: _dt.date) -> None:
    """A warning (once per feed and dates in a process: a command asks for the date more than
    once) that ``date`` is not the feed's own session date; the given one is used."""
    import logging

    from .feeds.sources import source_name

    name = source_name(path)
    if (name, day, own) in _warned:
        return
    _warned.add((name, day, own))
    logging.getLogger("obook").warning(
        "%s: --date / date= %s is not the feed's own session date %s (from its file name or first "
        "records); %s is used", name, day, own, day)


def _check_one_day(paths: tuple, fmt) -> None:
    """An ObookError when two files of one feed give different session dates (their names,
    their first records): the second day's records would replay as the first day's."""
    first = None
    for p in paths:
        try:
            day = _feed_date(p, fmt)
        except (OSError, ObookError, ValueError, TypeError):    # (the replay says what is wrong with the file)
            day = None
        if day is None:
            continue
        if first is None:
            first = (p, day)
        elif day != first[1]:
            raise ObookError(f"{p}: session date {day}, not {first[1]} as {first[0]}: the files of one feed are "
                             "one day's (replay each day on its own)")


def _feed_date(path, fmt) -> _dt.date | None:
    """The session date the feed itself gives (its format's ``session_date``), or None; of
    files read as one feed, its first file's that gives one (an empty file gives none)."""
    if isinstance(path, (list, tuple)):
        for p in path:
            day = _feed_date(p, fmt)
            if day is not None:
                return day
        return None
    from .feeds.sources import HeadedStream

    if isinstance(path, HeadedStream):     # a stream: a day its first bytes tell (not a file name)
        try:
            return fmt.session_date(path) if fmt is not None and fmt.session_date else None
        except TypeError:      # a format that tells the day from a file name
            return None
    if path is None or hasattr(path, "read") or hasattr(path, "readinto") or hasattr(path, "recv_into"):
        return None
    from .feeds import formats, resolve_format

    try:
        fmt = resolve_format(fmt, path)     # the feed's own format: its naming rule, not another's
    except ObookError:
        fmt = None
    if fmt is not None:
        return fmt.session_date(path) if fmt.session_date else None
    for f in formats().values():    # no file (yet), or none a format knows: any format's rule
        try:
            day = f.session_date(path) if f.session_date else None
        except (OSError, ObookError):   # a format that reads the content: no such file (yet)
            day = None
        if day is not None:
            return day
    return None


def midnight_ns(day: _dt.date, tz: str = TIMEZONE) -> int:
    """Midnight of ``day`` in ``tz``, in ns since the epoch."""
    from zoneinfo import ZoneInfo

    midnight = _dt.datetime.combine(day, _dt.time(0), tzinfo=ZoneInfo(tz))
    return int(midnight.timestamp()) * 1_000_000_000


def timestamp_schema(schema: pa.Schema, day, tz: str = TIMEZONE) -> pa.Schema:
    """``schema`` with ``timestamp`` (UTC) after ``time`` when ``day`` is truthy (the
    session date is known, or the time is epoch); ``tz`` places the session's midnight,
    not the column. A table without ``time`` (a capture's gaps) is left as it is."""
    if not day or schema.get_field_index("time") < 0:
        return schema
    fields = list(schema)
    fields.insert(schema.get_field_index("time") + 1,
                  pa.field("timestamp", TIMESTAMP, nullable=False))
    return pa.schema(fields, metadata=schema.metadata)


_stamped_schemas: dict = {}     # (schema, tz) -> the schema with ``timestamp``


def with_timestamp(batch: pa.RecordBatch, base_ns: int | None, scale: int,
                   tz: str = TIMEZONE, checked: bool = False) -> pa.RecordBatch:
    """Insert ``timestamp`` (``base_ns`` + time × ``scale``) after ``time`` (if any); a time
    it cannot hold raises ObookError (``checked``: the caller made sure none is)."""
    if base_ns is None or batch.schema.get_field_index("time") < 0:
        return batch
    import numpy as np

    key = (batch.schema, tz)
    schema = _stamped_schemas.get(key)
    if schema is None:
        schema = _stamped_schemas[key] = timestamp_schema(batch.schema, True, tz)
    time = batch.column("time")
    bad = -1 if checked else first_out_of_range(time, base_ns, scale)
    if bad >= 0:
        raise ObookError(out_of_range_reason(time[bad].as_py()))
    if time.null_count:
        import pyarrow.compute as pc

        stamps = pc.add(pc.multiply(time.cast(pa.int64()), scale), base_ns)
    else:   # one numpy pass over the zero-copy view (times fit int64: the feed's ns in a day)
        ns = _view(time).astype(np.int64, copy=False)
        ns = ns * np.int64(scale) + np.int64(base_ns) if scale != 1 else ns + np.int64(base_ns)
        stamps = pa.Array.from_buffers(pa.int64(), len(ns), [None, pa.py_buffer(ns)])
    arrays = list(batch.columns)
    arrays.insert(batch.schema.get_field_index("time") + 1, stamps.view(schema.field("timestamp").type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def out_of_range_reason(time) -> str:
    """The reason of a row whose time gives an instant no int64 ns timestamp holds."""
    return f"time {time} gives an instant beyond 1677-2262, what ns timestamps hold"


def _view(time: pa.Array):
    """The numpy view of a column without nulls, read from its Arrow buffer (pyarrow's
    to_numpy imports pandas on its first call)."""
    import numpy as np

    dtype = np.dtype(time.type.to_pandas_dtype())
    return np.frombuffer(time.buffers()[1], dtype, len(time), time.offset * dtype.itemsize)


def first_out_of_range(time: pa.Array, base_ns: int, scale: int) -> int:
    """The first row whose ``base_ns + time x scale`` an int64 cannot hold, or -1 (a min /
    max over the column's buffer; the rows are looked at only when one is out)."""
    if len(time) == 0:
        return -1
    hi = ((1 << 63) - 1 - base_ns) // scale              # the largest time that fits
    lo = -((base_ns + (1 << 63)) // scale)               # the smallest
    if time.null_count == 0:
        t = _view(time)
        if int(t.max()) <= hi and int(t.min()) >= lo:
            return -1
    return next((i for i, v in enumerate(time.to_pylist()) if v is not None and not lo <= v <= hi), -1)


class Stamp:
    """How a format's tables get ``timestamp``: ``base_ns`` (ns since the epoch of the
    session's midnight in ``tz``) + time × ``scale``, a UTC instant (``base_ns`` None: no
    timestamp column)."""

    def __init__(self, base_ns: int | None, scale: int, tz: str):
        self.base_ns, self.scale, self.tz = base_ns, scale, tz

    def schema(self, schema: pa.Schema) -> pa.Schema:
        return timestamp_schema(schema, self.base_ns is not None, self.tz)

    def batch(self, batch: pa.RecordBatch, checked: bool = False) -> pa.RecordBatch:
        return with_timestamp(batch, self.base_ns, self.scale, self.tz, checked)


def stamp_of(fmt, day: _dt.date | None) -> Stamp:
    """The :class:`Stamp` of a format (a FeedFormat) and session date."""
    if fmt.epoch:
        return Stamp(0, fmt.time_unit_ns, fmt.tz)
    return Stamp(midnight_ns(day, fmt.tz) if day else None, fmt.time_unit_ns, fmt.tz)
