"""The trading session of a feed: its date (a ``date`` option, or a Nasdaq file name
``MMDDYYYY.NASDAQ_ITCH50[.gz]``) and, when it is known, the tables' ``timestamp`` column:
session midnight in New York plus the feed time, as ``timestamp[ns, America/New_York]``.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from .errors import ObookError

__all__ = ["TIMEZONE", "TIME_NS", "session_date", "midnight_ns", "timestamp_schema", "with_timestamp"]

TIMEZONE = "America/New_York"
TIME_NS = {"itch": 1, "csv": 1_000_000}   # feed time unit → ns
TIMESTAMP = pa.timestamp("ns", tz=TIMEZONE)

_NASDAQ_NAME = re.compile(r"^(\d{2})(\d{2})(\d{4})\.NASDAQ_ITCH50(?:\.gz)?\Z", re.IGNORECASE)   # \Z: no "\n"


def session_date(path, date=None) -> _dt.date | None:
    """The trading day of a feed: ``date`` (``YYYY-MM-DD`` or a ``datetime.date``) when given,
    else from a Nasdaq file name ``MMDDYYYY.NASDAQ_ITCH50[.gz]``, else None."""
    if date is not None:
        if isinstance(date, _dt.datetime):
            return date.date()
        if isinstance(date, _dt.date):
            return date
        try:
            return _dt.date.fromisoformat(str(date))
        except ValueError:
            raise ObookError(f"date must be YYYY-MM-DD, not {date!r}") from None
    m = _NASDAQ_NAME.match(Path(path).name)
    if not m:
        return None
    month, day, year = (int(g) for g in m.groups())
    try:
        return _dt.date(year, month, day)
    except ValueError:
        return None


def midnight_ns(day: _dt.date) -> int:
    """Midnight of ``day`` in New York, in ns since the epoch."""
    from zoneinfo import ZoneInfo

    midnight = _dt.datetime.combine(day, _dt.time(0), tzinfo=ZoneInfo(TIMEZONE))
    return int(midnight.timestamp()) * 1_000_000_000


def timestamp_schema(schema: pa.Schema, day: _dt.date | None) -> pa.Schema:
    """``schema`` with ``timestamp`` after ``time`` when the session date is known."""
    if day is None:
        return schema
    fields = list(schema)
    fields.insert(schema.get_field_index("time") + 1, pa.field("timestamp", TIMESTAMP, nullable=False))
    return pa.schema(fields, metadata=schema.metadata)


def with_timestamp(batch: pa.RecordBatch, base_ns: int | None, scale: int) -> pa.RecordBatch:
    """Insert ``timestamp`` (session midnight ``base_ns`` + time × ``scale``) after ``time``."""
    if base_ns is None:
        return batch
    ns = pc.add(pc.multiply(batch.column("time").cast(pa.int64()), scale), base_ns)
    arrays = list(batch.columns)
    arrays.insert(batch.schema.get_field_index("time") + 1, ns.cast(TIMESTAMP))
    return pa.RecordBatch.from_arrays(arrays, schema=timestamp_schema(batch.schema, True))
