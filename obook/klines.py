"""Bars (K-lines): OHLCV, VWAP, trade count and turnover per security per time interval,
from any format's trades table (its printed trades: rows with a price, not broken).

A bar covers [start, start + interval) of the feed's own ``time`` (its unit is the
format's: ITCH, Shanghai and Shenzhen ns since midnight, CSV ms). Prices stay exact
integers in the feed's price unit (the schema's ``obook.price_scale``); ``volume`` is the
executed quantity in the feed's unit; ``turnover`` is sum(price * shares) in price unit times
quantity unit, exact at any size (DECIMAL(38,0): it cannot wrap); ``vwap`` is turnover /
volume (a float: an average) in the price unit. The tables' ``prices="decimal"`` /
``"float"`` turn both into the currency with the prices (obook.tables.units.Shape).
"""

from __future__ import annotations

import datetime as _dt
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import FeedError, ObookError

bars_schema = pa.schema(
    [
        pa.field("ticker", pa.string()),
        pa.field("start", pa.uint64(), nullable=False),     # bar start, feed time units
        pa.field("open", pa.int64(), nullable=False),
        pa.field("high", pa.int64(), nullable=False),
        pa.field("low", pa.int64(), nullable=False),
        pa.field("close", pa.int64(), nullable=False),
        pa.field("volume", pa.int64(), nullable=False),
        pa.field("turnover", pa.decimal128(38, 0), nullable=False),
        pa.field("vwap", pa.float64(), nullable=False),
        pa.field("trades", pa.int64(), nullable=False),
    ],
    metadata={b"obook.table": b"bars"},
)

_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "sec": 10**9, "second": 10**9,
          "m": 60 * 10**9, "min": 60 * 10**9, "minute": 60 * 10**9, "h": 3600 * 10**9,
          "hour": 3600 * 10**9}

#: ns in a unit of ``numpy.timedelta64``
_NUMPY_UNITS = {"W": 7 * 86400 * 10**9, "D": 86400 * 10**9, "h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9,
                "ms": 10**6, "us": 10**3, "ns": 1}


#: DuckDB's text of an INTERVAL (``obook_bars(..., interval := INTERVAL 5 MINUTE)`` hands it over as
#: text): '00:05:00', '1 day 02:00:00.5', '2 days'
_CLOCK = re.compile(r"\s*(?:(\d+)\s*days?)?\s*(?:(\d+):(\d\d):(\d\d)(?:\.(\d{1,9}))?)?\s*")


def interval_ns(interval) -> int:
    """An interval as ns: an int (ns), a ``timedelta`` (numpy's too), or text such as '1 minute', '5s', '100 ms'
    (or a DuckDB INTERVAL's: '00:05:00', '1 day 02:00:00')."""
    if isinstance(interval, np.timedelta64):      # (a numpy integer too: its unit decides, not its count)
        unit, step = np.datetime_data(interval.dtype)
        if np.isnat(interval) or unit not in _NUMPY_UNITS:     # a month or year has no fixed length
            raise ObookError(f"interval must be like '1 minute', '5s' or '100 ms', not {interval!r}")
        ns = int(interval.astype(np.int64)) * step * _NUMPY_UNITS[unit]
    elif isinstance(interval, _dt.timedelta):      # exact: total_seconds() is a float
        ns = ((interval.days * 86400 + interval.seconds) * 10**6 + interval.microseconds) * 1000
    elif isinstance(interval, bool):              # True is not 1 ns
        raise ObookError(f"interval must be like '1 minute', '5s' or '100 ms', not {interval!r}")
    elif isinstance(interval, (int, np.integer)):
        ns = int(interval)
    else:
        m = re.fullmatch(r"\s*(\d+)\s*([a-z]+)\s*", str(interval).lower())
        unit = m and (m.group(2) if m.group(2) in _UNITS else m.group(2)[:-1] if m.group(2).endswith("s") else None)
        clock = _CLOCK.fullmatch(str(interval).lower())
        if clock and (clock.group(1) or clock.group(2)):
            days, h, mi, sec, frac = clock.groups()
            ns = ((int(days or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60 * 10**9 + int(sec or 0) * 10**9 \
                + int((frac or "").ljust(9, "0"))
        elif unit not in _UNITS:     # 'ms' is milliseconds, 'mins' minutes: a plural's s only after the unit
            n = str(interval).strip()
            bare = f" (a number needs its unit: '{n} ns', '{n} s' ...)" if n.isdigit() else ""
            raise ObookError(f"interval must be like '1 minute', '5s' or '100 ms', not {interval!r}{bare}")
        else:
            ns = int(m.group(1)) * _UNITS[unit]
    if ns <= 0:
        raise ObookError(f"interval must be positive, not {interval!r}")
    if ns >= 1 << 63:       # past what a time column holds: one bar would be the whole feed anyway
        raise ObookError(f"interval {interval!r} is too long; at most about 106,751 days")
    return ns


def bars_table(trades: pa.Table, step: int) -> pa.Table:
    """The bars of a trades table with bars ``step`` feed time units long."""
    keep = np.asarray(trades.column("price").is_valid()) & ~np.asarray(trades.column("broken"))
    t = trades.filter(pa.array(keep))
    if not len(t):
        return bars_schema.empty_table()
    ticker = np.asarray(t.column("ticker").fill_null("").to_pylist(), dtype=object)
    codes, inv = np.unique(ticker, return_inverse=True)
    start = t.column("time").to_numpy().astype(np.uint64) // np.uint64(step) * np.uint64(step)
    px = t.column("price").to_numpy()
    qty = t.column("shares").to_numpy()
    order = np.lexsort((np.arange(len(t)), start, inv))         # by ticker, bar, feed order
    inv, start, px, qty = inv[order], start[order], px[order], qty[order]
    new = np.ones(len(t), bool)
    new[1:] = (inv[1:] != inv[:-1]) | (start[1:] != start[:-1])
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(t)) - 1
    sums = _sums_of_products(np.ones_like(qty), qty, first)     # (exact: no int64 sum wraps)
    past = [i for i, v in enumerate(sums) if v > (1 << 63) - 1]
    if past:      # (ITCH cross shares are 8 bytes: a few big crosses sum past an int64)
        k = first[past[0]]
        raise ObookError(f"bars: the volume of {codes[inv[k]] or '(no ticker)'}'s bar at {int(start[k])} is "
                         f"{sums[past[0]]} shares, past 2^63 - 1, the most a bar's volume holds")
    volume = np.array(sums, np.int64)
    turnover = _sums_of_products(px, qty, first)
    arrays = [pa.array(codes[inv[first]].tolist(), pa.string()), pa.array(start[first]),
              pa.array(px[first]), pa.array(np.maximum.reduceat(px, first)),
              pa.array(np.minimum.reduceat(px, first)), pa.array(px[last]), pa.array(volume),
              pa.array(turnover, pa.decimal128(38, 0)),
              pa.array([t / max(v, 1) for t, v in zip(turnover, volume.tolist())], pa.float64()),
              pa.array(last - first + 1)]
    return pa.Table.from_arrays(arrays, schema=bars_schema)


def _sums_of_products(px: np.ndarray, qty: np.ndarray, first: np.ndarray) -> list[int]:
    """sum(px * qty) per group starting at ``first``, exact (Python ints): the products'
    high and low 32 bits are summed apart, so no int64 sum wraps."""
    big = len(px) and int(np.abs(px).max()) * int(np.abs(qty).max()) >= 1 << 63
    if big:    # a product itself does not fit int64
        prod = px.astype(object) * qty.astype(object)
        return [int(s) for s in np.add.reduceat(prod, first)]
    prod = px * qty
    lo = np.add.reduceat(prod & 0xFFFFFFFF, first)
    hi = np.add.reduceat(prod >> 32, first)
    return [(int(h) << 32) + int(lw) for h, lw in zip(hi, lo)]


def bars(path, interval="1 minute", workers=None, format=None, on_error="raise", date=None,
         tickers=None, unknown_tickers="raise", progress=None, before=None):
    """Replay the feed's trades and cut them into bars of ``interval`` (``unknown_tickers``
    and ``progress`` as for :class:`obook.engine.replay.Replay`): the bars' batches. ``before``:
    the bars of the trades of the records before this one only. A bad record (``FeedError``)
    ends them: the bars of the trades before it come first. Either way a trade is broken by
    a break before that record only."""
    from .engine.replay import Replay
    from .feeds.breaks import delivered, rebroken

    interval_ns(interval)
    replay = Replay(path, workers=workers, format=format, on_error=on_error, tables=("trades",), date=date,
                    tickers=tickers, unknown_tickers=unknown_tickers, progress=progress)
    step = bar_step(interval, replay.format.time_unit_ns)
    trades, failed = [], None
    batches = replay.table_batches()
    try:
        for _, batch in batches:
            if before is not None and batch.num_rows and batch.column("seq")[-1].as_py() >= before:
                trades.append(batch.filter(pc.less(batch.column("seq"), before)))
                break
            trades.append(batch)
    except FeedError as e:
        failed = e
    finally:
        batches.close()
    trades = pa.Table.from_batches(trades, replay.schema("trades"))
    stop = before if before is not None else failed.feed_record if failed is not None else None
    if stop is not None:    # a break of a record from there on was never delivered
        breaks = delivered(trades.to_batches(), stop)
        trades = rebroken(trades, breaks) if breaks is not None else trades
    yield from bars_table(trades, step).to_batches()
    if failed is not None:
        raise failed


def bar_step(interval, time_unit_ns: int) -> int:
    """The length of a bar of ``interval`` in feed time units (``time_unit_ns`` ns each): an
    interval that is not a whole number of them is an error."""
    step, rest = divmod(interval_ns(interval), time_unit_ns)
    if step == 0 or rest:       # a bar of 100 us on a feed of ms times would be a bar of 1 ms
        raise ObookError(f"interval {interval!r} is not a whole number of the feed's time unit "
                         f"({_unit_text(time_unit_ns)})")
    return step


def _unit_text(ns: int) -> str:
    for name, size in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns % size == 0:
            return f"{ns // size} {name}"
    return f"{ns} ns"
