"""The BBO analytics of the SQL macros (``sql/``: ``obook_spread``, ``obook_twas``,
``obook_bbo_grid``) for the Python functions and polars scans: ``obook.spread``,
``obook.twas``, ``obook.bbo_grid`` and ``scan_*`` compute the same rows, of the same types,
from one feed's BBO table and its price scale (the schema's ``obook.price_scale``).

* spread: every BBO row plus ``spread_ticks`` (ask - bid in the feed's integers), ``spread``
  (DECIMAL(38,9) currency) and ``mid`` (DECIMAL(38,10): half a unit), exact; null with a side empty.
* twas: per ticker, the spread of each row holds until the ticker's next row (the last until
  ``end_time``, by default the feed's last BBO time), clipped to [start_time, end_time];
  ``quoted_time`` (the time quoted inside the window: a duration in feed time units, the
  schema's ``obook.duration_columns``, no point in time), ``updates`` (the quoted rows inside
  the window), ``twas_ticks`` (an average:
  float), ``twas`` (currency),
  ``min_spread_ticks`` / ``max_spread_ticks`` over the rows that carry weight. A window of no
  BBO row (a start_time after the last BBO time with end_time defaulted, an end_time before the
  first BBO time) is an error, as start_time after end_time is.
* bbo_grid: each ticker's last BBO (the highest seq of its last time) at or before each point
  of ``start_time, start_time + every, ... <= end_time`` (default: the first BBO time rounded up
  to a multiple of ``every``, the last BBO time), ``quote_seq`` / ``quote_time`` saying which.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .checks import is_integer, not_int
from .errors import ObookError

__all__ = ["analytic", "spread_table", "twas_table", "grid_table", "ROW_BY_ROW"]

#: the analytics whose rows are each BBO row's own (any batch of BBO rows gives its rows):
#: the others need the whole day first (a ticker's next row, the last row before a point)
ROW_BY_ROW = ("spread",)

_KEYS = ("seq", "time", "ticker", "timestamp")


def _decimal(unscaled, valid: np.ndarray, precision: int, scale: int) -> pa.Array:
    """An exact decimal array from unscaled values: int64, or Python ints (``valid`` False: null)."""
    words = np.empty((len(unscaled), 2), np.int64)
    if isinstance(unscaled, np.ndarray):
        words[:, 0] = unscaled
        words[:, 1] = unscaled >> 63
    else:           # two's complement 128-bit words of each int
        low = [v & 0xFFFF_FFFF_FFFF_FFFF for v in unscaled]
        words[:, 0] = np.array(low, np.uint64).view(np.int64)
        words[:, 1] = np.array([v >> 64 for v in unscaled], np.int64)
    mask = pa.array(~valid) if not valid.all() else None
    nulls = int((~valid).sum())
    bitmap = pc.invert(mask).buffers()[1] if mask is not None else None
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(unscaled), [bitmap, pa.py_buffer(words)], nulls)


def _ints(col) -> tuple[np.ndarray, np.ndarray]:
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return (col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False),
            np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool))


def _digits(price_scale: int) -> int:
    digits = len(str(price_scale)) - 1
    if price_scale != 10 ** digits or digits > 9:
        raise ObookError(f"a price scale must be a power of ten up to 10^9, not {price_scale}")
    return digits


def spread_table(bbo: pa.Table, price_scale: int) -> pa.Table:
    """``bbo`` plus ``spread_ticks``, ``spread`` and ``mid`` (see the module)."""
    nano = 10 ** (9 - _digits(price_scale))
    bid, bid_ok = _ints(bbo.column("bid_px"))
    ask, ask_ok = _ints(bbo.column("ask_px"))
    both = bid_ok & ask_ok
    top = max([abs(int(x)) for a in (bid, ask) if len(a) for x in (a.min(), a.max())], default=0)
    if 2 * top * nano * 5 < 1 << 63:        # numpy's int64 arithmetic wraps silently: only when it fits
        diff = (ask - bid) * nano
        mid = (ask + bid) * (nano * 5)
    else:                                    # prices near 2^63 units: Python ints, exact
        diff = [(a - b) * nano for a, b in zip(ask.tolist(), bid.tolist())]
        mid = [(a + b) * nano * 5 for a, b in zip(ask.tolist(), bid.tolist())]
    out = bbo.append_column("spread_ticks", pc.subtract(bbo.column("ask_px").cast(pa.int64()),
                                                         bbo.column("bid_px").cast(pa.int64())))
    out = out.append_column("spread", _decimal(diff, both, 38, 9))
    return out.append_column("mid", _decimal(mid, both, 38, 10))


_TWAS = pa.schema([("ticker", pa.string()), ("quoted_time", pa.uint64()), ("updates", pa.int64()),
                   ("twas_ticks", pa.float64()), ("twas", pa.float64()), ("min_spread_ticks", pa.int64()),
                   ("max_spread_ticks", pa.int64())])


def _by_ticker(bbo: pa.Table):
    """(ticker names sorted, each row's ticker code, row order by ticker then seq)."""
    ticker = np.asarray(bbo.column("ticker").fill_null("").to_pylist(), dtype=object)
    names, code = np.unique(ticker, return_inverse=True)
    seq = bbo.column("seq").to_numpy().astype(np.uint64)
    return names, code, np.lexsort((seq, code))


def _feed_times(bbo: pa.Table, table: str, source: str) -> np.ndarray:
    """The BBO's ``time`` as int64, as the analytics compute it; a time past 2^63 - 1 (a CSV
    time is any unsigned 64-bit number) is an error naming ``source``, not a wrapped time."""
    time = bbo.column("time").to_numpy()
    if len(time) and int(time.max()) >= 1 << 63:
        of = f" of {source}" if source else ""
        raise ObookError(f"{table}: BBO time {int(time.max())}{of} is past 2^63 - 1, the latest feed time "
                         "the analytics compute with")
    return time.astype(np.int64)


def twas_table(bbo: pa.Table, price_scale: int, start_time=None, end_time=None, source: str = "") -> pa.Table:
    """One row per ticker: the time-weighted average spread (see the module); a window that
    holds no quote is an error naming ``source`` (the feed)."""
    start_time, end_time = _window(start_time, end_time, "twas")
    if bbo.num_rows == 0:
        return _TWAS.empty_table()
    names, code, order = _by_ticker(bbo)
    time = _feed_times(bbo, "twas", source)[order]
    _check_quoted(start_time, end_time, int(time.min()), int(time.max()), source)
    code = code[order]
    bid, bid_ok = _ints(bbo.column("bid_px"))
    ask, ask_ok = _ints(bbo.column("ask_px"))
    quoted = (bid_ok & ask_ok)[order]
    spread = (ask - bid)[order]
    t1 = int(end_time) if end_time is not None else int(time.max())
    t0 = int(start_time) if start_time is not None else 0
    nxt = np.empty_like(time)
    nxt[:-1] = time[1:]
    last = np.ones(len(time), bool)
    last[:-1] = code[1:] != code[:-1]
    nxt[last] = t1
    dur = np.maximum(0, np.minimum(nxt, t1) - np.maximum(time, t0))
    inside = (time >= t0) & (time <= t1)        # the updates counted: the window's
    rows = []
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
    for i, a in enumerate(starts):
        b = starts[i + 1] if i + 1 < len(starts) else len(code)
        q = quoted[a:b]
        s, d = spread[a:b][q], dur[a:b][q]
        total = int(d.sum())
        weighted = sum(int(x) * int(y) for x, y in zip(s.tolist(), d.tolist()))
        twas_ticks = float(weighted) / float(total) if total else None
        carry = s[d > 0]
        rows.append((names[code[a]], total, int((q & inside[a:b]).sum()), twas_ticks,
                     None if twas_ticks is None else twas_ticks / float(price_scale),
                     int(carry.min()) if len(carry) else None, int(carry.max()) if len(carry) else None))
    return pa.Table.from_pylist([dict(zip(_TWAS.names, r)) for r in rows], schema=_TWAS)


def _check_quoted(start_time, end_time, first: int, last: int, source: str) -> None:
    """A twas window of no BBO row is an error, not rows of nothing: ``start_time`` after the
    last BBO time (the default end_time), or ``end_time`` before the first BBO time."""
    of = f" of {source}" if source else ""
    if end_time is None and start_time is not None and start_time > last:
        raise ObookError(f"twas: start_time {start_time} is after the last BBO time {last}{of} (the default "
                         "end_time): the window is empty; give an end_time, or an earlier start_time")
    if end_time is not None and end_time < first:
        raise ObookError(f"twas: end_time {end_time} is before the first BBO time {first}{of}: the window "
                         "holds no quote; give a later end_time")


def grid_schema(bbo_schema: pa.Schema) -> pa.Schema:
    fields = [pa.field("time", pa.uint64()), bbo_schema.field("ticker")]
    fields += [bbo_schema.field(n) for n in bbo_schema.names if n not in _KEYS]
    fields += [bbo_schema.field("seq").with_name("quote_seq"), bbo_schema.field("time").with_name("quote_time")]
    return pa.schema([f.with_nullable(True) if i > 1 else f for i, f in enumerate(fields)])


#: the most rows a grid is built with (a step of 1 ns over a day would ask for 10**14)
MAX_GRID_ROWS = 500_000_000


def _whole(name: str, value, table: str = "bbo_grid") -> int | None:
    """An analytic's option as an int: 1.5, 1e9, '5' or True is an error naming it, never rounded."""
    if value is None:
        return None
    if is_integer(value):
        return int(value)
    raise ObookError(f"{table}: {name} must be an integer, not {not_int(value)}")


def _time(name: str, value, table: str) -> int | None:
    """``start_time`` / ``end_time``: a feed time, an integer from 0 to 2^63 - 1 (the times are
    computed as int64; a negative one would wrap in the UBIGINT ``time`` column)."""
    value = _whole(name, value, table)
    if value is not None and not 0 <= value < 1 << 63:
        raise ObookError(f"{table}: {name} must be a feed time from 0 to 2^63 - 1, not {value}")
    return value


def _window(start_time, end_time, table: str) -> tuple[int | None, int | None]:
    """``start_time`` and ``end_time`` checked (see :func:`_time`); both given, the start after
    the end is an error (an empty window would give rows that say nothing)."""
    start_time, end_time = _time("start_time", start_time, table), _time("end_time", end_time, table)
    if start_time is not None and end_time is not None and start_time > end_time:
        raise ObookError(f"{table}: start_time {start_time} is after end_time {end_time} (feed time units)")
    return start_time, end_time


def grid_table(bbo: pa.Table, every, start_time=None, end_time=None, source: str = "") -> pa.Table:
    """Every ticker's BBO on a regular time grid (see the module); ``source`` names the feed in
    the errors."""
    every = _whole("every", every)
    if every is None or not 0 < every < 1 << 63:     # (the grid is computed in int64 feed times)
        raise ObookError(f"bbo_grid: every must be a positive integer up to 2^63 - 1, not {every}")
    start_time, end_time = _window(start_time, end_time, "bbo_grid")
    schema = grid_schema(bbo.schema)
    if bbo.num_rows == 0:
        return schema.empty_table()
    names, code, _ = _by_ticker(bbo)
    time = _feed_times(bbo, "bbo_grid", source)
    seq = bbo.column("seq").to_numpy().astype(np.uint64)
    order = np.lexsort((seq, time, code))              # by ticker, time, seq
    c, t = code[order], time[order]
    keep = np.ones(len(order), bool)                   # the last row of each (ticker, time)
    keep[:-1] = (c[1:] != c[:-1]) | (t[1:] != t[:-1])
    rows, c, t = order[keep], c[keep], t[keep]
    t0 = int(start_time) if start_time is not None else -(-int(time.min()) // every) * every
    t1 = int(end_time) if end_time is not None else int(time.max())
    points = (t1 - t0) // every + 1 if t0 <= t1 else 0
    if points * len(names) > MAX_GRID_ROWS:
        raise ObookError(f"bbo_grid: every {every} over {t1 - t0} time units gives {points:,} points for each of "
                         f"{len(names):,} tickers ({points * len(names):,} rows; at most {MAX_GRID_ROWS:,}): "
                         "a larger every (in the feed's time unit), or start_time / end_time")
    grid = np.arange(t0, t1 + 1, every, dtype=np.int64) if t0 <= t1 else np.empty(0, np.int64)
    starts = np.searchsorted(c, np.arange(len(names)))
    ends = np.searchsorted(c, np.arange(len(names)), side="right")
    picks = []
    for k in range(len(names)):
        at = np.searchsorted(t[starts[k]:ends[k]], grid, side="right") - 1
        picks.append(np.where(at >= 0, rows[starts[k]:ends[k]][np.maximum(at, 0)] if ends[k] > starts[k] else 0, -1))
    pick = np.concatenate(picks) if picks else np.empty(0, np.int64)
    quotes = bbo.take(pa.array(pick, mask=pick < 0))
    columns = [pa.array(np.tile(grid, len(names)).astype(np.uint64)),
               pa.array(np.repeat(names, len(grid)).tolist(), schema.field("ticker").type)]
    columns += [quotes.column(n) for n in bbo.schema.names if n not in _KEYS]
    columns += [quotes.column("seq"), quotes.column("time")]
    return pa.Table.from_arrays(columns, schema=schema)


def analytic(name: str, bbo: pa.Table, price_scale: int, options: dict, source: str = "") -> pa.Table:
    """Table ``name`` (spread, twas or bbo_grid) of the BBO rows of one feed (``source``: its
    name, for the errors)."""
    if name == "spread":
        return spread_table(bbo, price_scale)
    if name == "twas":
        return twas_table(bbo, price_scale, options.get("start_time"), options.get("end_time"), source)
    if name == "bbo_grid":
        return grid_table(bbo, options.get("every"), options.get("start_time"), options.get("end_time"), source)
    raise ObookError(f"no analytic table {name!r}")
