"""Own orders (obook.feeds.orders columns) -> the simulation kernel's instruction rows.

Latency: ``latency`` is nanoseconds, one of: an integer (every instruction), the name of
a column of the order input (per instruction), a sequence or array (per row), or a
distribution ``("uniform", lo, hi)``, ``("exponential", mean)``, ``("normal", mean, sd)``,
``("lognormal", mu, sigma)`` (or its text, as DuckDB and the command line take it:
``"uniform:LO:HI"`` ...; a column of that name comes first) drawn with ``seed`` in input
row order (negative draws are 0). An instruction decided at ``time`` (in the feed's time unit) takes effect after every
feed record of its book whose time is at or before ``time * unit + latency`` ns and before
the next one: in feed units, arrival = ``time + latency // unit`` and a record at time t
comes first when ``t <= arrival``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels.simulate_layout import (END_SEQ, I_ACT, I_ARR, I_HAS_PRICE, I_KEY, I_MARKET, I_PRICE,
                                        I_PROBE, I_QTY, I_REASON, I_ROW, I_SIDE, I_TB, I_TIF,
                                        I_WIDTH, OP_CANCEL, OP_MODIFY)
from ..checks import is_whole
from ..errors import ObookError

DISTRIBUTIONS = {"uniform": 2, "exponential": 1, "normal": 2, "lognormal": 2}
#: the longest latency taken (a week): arrival times stay far from 64-bit overflow
MAX_LATENCY_NS = 7 * 86_400 * 10**9


def check_distribution(name: str, args: tuple, option: str = "latency") -> None:
    """Parameters numpy would reject, or whose draws are not latencies: a clear error naming
    the latency by ``option``."""
    spec = f"{option} {name}:{':'.join(f'{a:g}' for a in args)}"
    if not all(np.isfinite(args)):
        raise ObookError(f"{spec}: the parameters must be finite numbers")
    if name == "uniform" and not 0 <= args[0] <= args[1]:
        raise ObookError(f"{spec}: give uniform:LO:HI with 0 <= LO <= HI")
    if name == "exponential" and args[0] < 0:
        raise ObookError(f"{spec}: the mean must be >= 0")
    if name in ("normal", "lognormal") and args[1] < 0:
        raise ObookError(f"{spec}: the {'sd' if name == 'normal' else 'sigma'} must be >= 0")


@dataclass
class Own:
    """The prepared own orders: instruction rows sorted by (book, arrival, row)."""
    ins: np.ndarray            # (m, I_WIDTH)
    instruments: list          # tb -> instrument name
    key_ids: np.ndarray        # key -> order id
    bounds: np.ndarray         # (T, 2): first and end instruction row of each tb
    latency_ns: np.ndarray     # per input row
    n_rows: int


def _is_number(value) -> bool:
    """``value`` converts to a float (a number, or text such as '250000')."""
    try:
        float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


WHAT = (f"a whole number of ns, 0 to {MAX_LATENCY_NS} (a week), a distribution or a column of the "
        "orders")


def _whole_ns(values: np.ndarray, what: str) -> np.ndarray:
    """Per-row latencies given as numbers (a column's or a sequence's) -> int64 ns, or a
    clear error: true/false, empty, fractional or out-of-range values are no latencies."""
    if values.dtype.kind == "b":
        raise ObookError(f"{what}: true/false values, not {WHAT}")
    if values.dtype.kind not in "iuf":
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError, OverflowError) as e:
            row = next((i for i, v in enumerate(values) if not _is_number(v)), None)
            if row is None:
                raise ObookError(f"{what} is not numbers") from e
            if values[row] is None:
                raise ObookError(f"{what} has empty values (row {row + 1})") from e
            shown = values[row].tolist() if isinstance(values[row], np.ndarray) else values[row]
            raise ObookError(f"{what}: row {row + 1}: {shown!r} is no number") from e
    if values.dtype.kind == "f":
        nan = np.isnan(values)
        if nan.any():
            raise ObookError(f"{what} has empty values (row {int(np.flatnonzero(nan)[0]) + 1})")
        with np.errstate(invalid="ignore"):
            frac = values != np.floor(values)
        if frac.any():
            row = int(np.flatnonzero(frac)[0])
            raise ObookError(f"{what}: row {row + 1}: {values[row]:g} is not a whole number of ns")
    bad = ~((values >= 0) & (values <= MAX_LATENCY_NS))
    if bad.any():
        raise ObookError(f"{what}: row {int(np.flatnonzero(bad)[0]) + 1} is not between 0 and {MAX_LATENCY_NS} ns "
                         "(a week)")
    return values.astype(np.int64)


def _duration_ns(col) -> np.ndarray:
    """An Arrow duration column in any unit -> ns as floats (exact up to a week; NaN: empty),
    a value beyond a week (which ns might not hold) -1, out of range as a latency."""
    import pyarrow as pa

    per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[col.type.unit]
    raw = np.asarray(col.cast(pa.int64()).to_numpy(zero_copy_only=False), np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(raw) > MAX_LATENCY_NS // per, -1.0, raw * per)


def distribution_parameters(latency: tuple) -> tuple:
    """A distribution's parameters as floats, or a clear error naming the distribution:
    true/false and text are no numbers."""
    args = latency[1:]
    if not all(isinstance(a, (int, float, np.integer, np.floating)) and not isinstance(a, (bool, np.bool_))
               for a in args):
        raise ObookError(f"latency distribution {latency!r}: its parameters must be numbers")
    return tuple(float(a) for a in args)


def latencies(latency, n: int, table=None, seed: int = 0, name: str | None = None,
              option: str = "latency") -> np.ndarray:
    """Per-row latency in ns (int64, >= 0); ``name``: the orders' file, which the errors
    about a latency column name; ``option``: the latency as the other errors name it (the
    command line's ``--latency``)."""
    if latency is None:
        return np.zeros(n, np.int64)
    if isinstance(latency, (bool, np.bool_)):
        raise ObookError(f"{option} {latency!r}: {WHAT}")
    if isinstance(latency, (float, np.floating)) and is_whole(latency) and abs(latency) < 2**63:
        latency = int(latency)          # 2e6: whole ns, as per-row values and obook.backtest's are
    if isinstance(latency, (int, np.integer)):
        if not 0 <= latency <= MAX_LATENCY_NS:
            raise ObookError(f"{option} must be between 0 and {MAX_LATENCY_NS} ns (a week), not {latency}")
        return np.full(n, int(latency), np.int64)
    if isinstance(latency, float) or (isinstance(latency, str) and _numeric(latency)):
        raise ObookError(f"{option} {latency!r}: {WHAT}")
    if isinstance(latency, str) and (table is None or latency not in table.column_names):
        if latency.strip()[:1].isdigit():       # '250us', '2ms': a number with a unit, no column's name
            raise ObookError(f"{option} {latency!r}: {WHAT} (a number of ns, without a unit)")
        if not is_distribution_text(latency):
            raise ObookError(f"{name + ': ' if name else ''}latency column {latency!r} is not in the orders")
        latency = parse_latency(latency, option)
    if isinstance(latency, str):
        import pyarrow as pa

        col = table.column(latency)
        what = f"{name + ': ' if name else ''}latency column {latency!r}"
        if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type) or pa.types.is_time(col.type):
            raise ObookError(f"{what} holds instants ({col.type}), not {WHAT}")
        if pa.types.is_duration(col.type):          # a duration in any unit: its ns
            lat = _whole_ns(_duration_ns(col), what)
        else:
            lat = _whole_ns(np.asarray(col.to_numpy(zero_copy_only=False)), what)
    elif isinstance(latency, tuple) and latency and isinstance(latency[0], str):
        name, args = latency[0].lower(), distribution_parameters(latency)
        if DISTRIBUTIONS.get(name) != len(args):
            raise ObookError(f"{option} distribution {latency!r}: use ('uniform', lo, hi), ('exponential', mean), "
                             "('normal', mean, sd) or ('lognormal', mu, sigma)")
        check_distribution(name, args, option)
        draw = getattr(np.random.default_rng(seed), name)
        with np.errstate(over="ignore", invalid="ignore"):
            f = np.maximum(np.rint(draw(*args, size=n)), 0)
        if not (f <= MAX_LATENCY_NS).all():         # (a NaN fails too)
            raise ObookError(f"{option} {name}:{':'.join(f'{float(a):g}' for a in args)}: draws beyond "
                             f"{MAX_LATENCY_NS} ns (a week)")
        lat = f.astype(np.int64)
    else:
        try:
            values = np.asarray(latency)
        except (OverflowError, TypeError, ValueError) as e:
            raise ObookError(f"{option}: not numbers ({e})") from e
        if values.ndim == 0:
            raise ObookError(f"{option} {latency!r}: {WHAT}")
        if values.ndim != 1 or values.shape[0] != n:
            got = f"{values.shape[0]} values" if values.ndim == 1 else f"a table of shape {values.shape}"
            raise ObookError(f"{option}: {got} for {n} orders (give one value an order)")
        if values.dtype.kind not in "iufb":
            try:
                values = np.asarray(latency, dtype=np.int64)
            except (OverflowError, TypeError, ValueError) as e:
                raise ObookError(f"{option}: not 64-bit integers ({e})") from e
        lat = _whole_ns(values, option)
    return lat


def is_distribution_text(text: str) -> bool:
    """``text`` names a latency distribution, as ``uniform:LO:HI`` (in any case) does."""
    name, colon, _ = text.partition(":")
    return bool(colon) and name.strip().lower() in DISTRIBUTIONS


def parse_latency(text: str | None, option: str = "latency"):
    """A latency given as text (CLI, SQL): "250000" or "2.5e5" (ns, a whole number), "uniform:LO:HI" (a distribution),
    or a column name; an error names it by ``option``."""
    if text is None:
        return 0
    text = str(text).strip()
    if text.lstrip("+").isdigit():
        return int(text)
    if _numeric(text) and is_whole(float(text)) and 0 <= float(text) < 2**63:
        return int(float(text))         # a whole number written as a float: 2e6, SQL's DOUBLE 2000000.0
    name, colon, rest = text.partition(":")
    if rest or (colon and name.strip().lower() in DISTRIBUTIONS):     # ('uniform:': no parameters)
        try:
            args = tuple(float(x) for x in rest.split(":")) if rest.strip() else ()
        except ValueError:
            raise ObookError(f"{option} {text!r}: distribution parameters must be numbers") from None
        if DISTRIBUTIONS.get(name.strip().lower()) != len(args):
            if name.strip().lower() not in DISTRIBUTIONS:       # ('00:00:01': an SQL INTERVAL as text)
                raise ObookError(f"{option} {text!r}: give ns as a whole number (1000000000 for a second), a "
                                 "column's name, or uniform:LO:HI, exponential:MEAN, normal:MEAN:SD or "
                                 "lognormal:MU:SIGMA")
            raise ObookError(f"{option} {text!r}: give uniform:LO:HI, exponential:MEAN, normal:MEAN:SD or "
                             "lognormal:MU:SIGMA")
        return (name.strip(),) + args
    return text


def prepare_own(o, unit_ns: int, lat: np.ndarray, horizon_ns: int) -> Own:
    """``o``: obook.feeds.orders.reader.Orders; ``unit_ns``: ns per unit of the feed's time."""
    from ..matching.prepare import _assign_ids, _keys, _reasons, check_totals

    n = o.n
    reason = _reasons(o, 1, np.ones(len(o.instruments), bool))
    ids = _assign_ids(o)
    keys, key_ids = _keys(o.book, ids)
    reach = (MAX_LATENCY_NS + horizon_ns) // unit_ns
    top, low = END_SEQ - 1 - reach, reach - np.iinfo(np.int64).max     # arrivals stay below the end-of-feed key
    if n and (int(o.time.max()) > top or int(o.time.min()) < low):
        row = int(np.flatnonzero((o.time > top) | (o.time < low))[0])
        raise ObookError(f"{o.name}: row {row + 1}: time {int(o.time[row])} is out of range: times from {low} "
                         f"to {top} are taken (up to 2**62 - 1 less a week's latency and the horizon)")
    negative = o.has_price & ~o.market & (o.action != OP_CANCEL) & (o.price < 0)      # (a cancel's is not read)
    if negative.any():       # the simulation's rows keep -1 for "no price"; feeds' prices are >= 0
        row = int(np.flatnonzero(negative)[0])
        raise ObookError(f"{o.name}: row {row + 1}: price {int(o.price[row])} is negative (the simulation "
                         "takes prices of 0 and up)")
    check_totals(o, reason, "a level's shares must fit 64 bits")
    arr = o.time + lat // unit_ns
    ins = np.zeros((n, I_WIDTH), np.int64)
    ins[:, I_ROW] = np.arange(1, n + 1)
    ins[:, I_ARR] = arr
    ins[:, I_TB] = o.book
    ins[:, I_KEY] = keys
    ins[:, I_ACT] = o.action
    ins[:, I_SIDE] = o.side
    ins[:, I_MARKET] = o.market
    ins[:, I_TIF] = o.tif
    ins[:, I_PRICE] = np.where(o.has_price & ~o.market, o.price, -1)
    ins[:, I_HAS_PRICE] = o.has_price
    ins[:, I_QTY] = np.where((o.action == OP_MODIFY) & ~o.has_quantity, -1, o.quantity)
    ins[:, I_REASON] = reason
    ins[:, I_PROBE] = o.time + (lat + horizon_ns) // unit_ns
    ins = ins[np.lexsort((ins[:, I_ROW], ins[:, I_ARR], ins[:, I_TB]))]
    nb = len(o.instruments)
    starts = np.searchsorted(ins[:, I_TB], np.arange(nb), "left")
    ends = np.searchsorted(ins[:, I_TB], np.arange(nb), "right")
    return Own(ins, list(o.instruments), key_ids, np.stack([starts, ends], 1).astype(np.int64), lat, n)
