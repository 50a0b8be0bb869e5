"""Latencies of a backtest: the feed's (venue -> strategy), the orders' (strategy -> venue)
and the responses' (venue -> strategy), in nanoseconds.

Each is one of:

* an integer: a constant;
* a distribution ``("uniform", lo, hi)``, ``("exponential", mean)``, ``("normal", mean, sd)``,
  ``("lognormal", mu, sigma)``, or its text ``"uniform:LO:HI"`` ...: values drawn with the backtest's ``seed`` (negative draws
  are 0), one per message in turn (a cycle of ``DRAWS`` draws);
* a table of recorded latencies: ``(times, values)`` arrays, or an Arrow / polars table or a
  CSV / Parquet path with columns ``time`` and ``latency``; times in the feed's time unit,
  the latency of a message sent at t interpolated linearly between the two recorded rows
  around t (the first / last value outside them).

``order_table(t)``: hftbacktest's recorded order latencies (columns ``req_ts``, ``exch_ts``,
``resp_ts``) give both the order latency (exch_ts - req_ts) and the response latency
(resp_ts - exch_ts) at req_ts.

Messages of one kind never overtake each other (one session, in order): a message's
arrival is the later of its send time plus its latency and the previous one's arrival.
"""

from __future__ import annotations

import numbers
from contextlib import contextmanager

import numpy as np

from .._kernels.backtest_layout import LM_CONST, LM_DRAWS, LM_TABLE
from ..checks import is_whole, whole_int64
from ..errors import ObookError
from ..simulation.prepare import (MAX_LATENCY_NS, check_distribution, distribution_parameters,
                                  is_distribution_text, parse_latency)

DRAWS = 1 << 16
DISTRIBUTIONS = {"uniform": 2, "exponential": 1, "normal": 2, "lognormal": 2}
NAMES = ("feed_latency", "order_latency", "response_latency")


def _table(spec):
    import pyarrow as pa

    if isinstance(spec, tuple) and len(spec) == 2 and not isinstance(spec[0], str):
        path = "a latency table (times, values)"
        try:
            times, values = np.asarray(spec[0]), np.asarray(spec[1])
            np.asarray(spec[0], np.int64), np.asarray(spec[1], np.int64)
        except (OverflowError, TypeError, ValueError) as e:
            raise ObookError(f"{path}: not 64-bit integers ({e})") from None
        return _whole(times, "time", path), _whole(values, "latency", path)
    if isinstance(spec, str):
        import os

        if not os.path.isfile(spec):
            raise ObookError(f"latency {spec!r}: give an integer of ns (0 or more), a distribution "
                             "(uniform:LO:HI, exponential:MEAN, normal:MEAN:SD, lognormal:MU:SIGMA) or a "
                             f"CSV / Parquet table file (time, latency){_no_file(spec)}")
        path = spec
        try:
            if spec.endswith(".parquet"):
                import pyarrow.parquet as pq
                spec = pq.read_table(spec)
            else:
                import pyarrow.csv as pcsv
                spec = pcsv.read_csv(spec)
        except (pa.ArrowException, OSError) as e:
            raise ObookError(f"latency table {path}: cannot read it: {str(e).splitlines()[0]}") from None
    else:
        path = "a latency table"
    if hasattr(spec, "to_arrow"):
        spec = spec.to_arrow()
    if not isinstance(spec, pa.Table):
        raise ObookError(f"latency {str(spec)[:100]!s}: give an integer of ns (0 or more), a distribution "
                         "(('uniform', lo, hi), ...), a (times, values) tuple of recorded latencies, or a table or "
                         "CSV / Parquet file with time and latency columns")
    if not {"time", "latency"} <= set(spec.column_names):
        raise ObookError(f"{path}: a latency table needs columns time and latency (it has "
                         f"{', '.join(spec.column_names) or 'none'})")
    return _ints(spec, "time", path), _ints(spec, "latency", path)


def _no_file(text: str) -> str:
    """What a latency given as text that names a file which is not there lacks."""
    import os

    if os.path.isdir(text):
        return f"; {text} is a folder"
    if text.lower().endswith((".csv", ".parquet")) or os.sep in text:
        return f"; there is no file {text}"
    return ""


def _ints(table, column: str, path: str) -> np.ndarray:
    """A latency table's column as int64: whole numbers, no empty value."""
    col = table.column(column)
    if col.null_count:
        raise ObookError(f"{path}: row {col.is_null().to_numpy(zero_copy_only=False).argmax() + 1}: "
                         f"{column} is empty or no number (a blank, NaN, NA or null cell)")
    return _whole(np.asarray(col.to_numpy(zero_copy_only=False)), column, path)


def _whole(values: np.ndarray, column: str, path: str) -> np.ndarray:
    """A latency table's column as int64 when its values are whole numbers of 64 bits, else
    an error naming it (1.5 or '2' is no time or latency: never truncated or parsed)."""
    as_int = whole_int64(values)
    if as_int is None:
        raise ObookError(f"{path}: {column} must be whole numbers of 64 bits (ns for latency, the feed's "
                         "time unit for time)")
    return as_int


def _bounded(values: np.ndarray, what: str) -> None:
    """Latencies of 0 to MAX_LATENCY_NS (a week): arrival times stay far from 64-bit overflow."""
    bad = (values < 0) | (values > MAX_LATENCY_NS)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ObookError(f"{what}: row {row + 1}: latency {int(values[row])} ns is not between 0 and "
                         f"{MAX_LATENCY_NS} ns (a week)")


def resolve(spec, unit_ns: int, seed: int, kind: int):
    """(mode, times, values) in the feed's time units for one latency ``spec`` (ns)."""
    if spec is None:
        spec = 0
    if isinstance(spec, str) and is_distribution_text(spec):
        spec = parse_latency(spec)
    if isinstance(spec, (bool, np.bool_)) or (isinstance(spec, numbers.Number) and not is_whole(spec)):
        raise ObookError(f"latency {spec!r}: give a whole number of ns (0 to {MAX_LATENCY_NS}, a week)")
    if isinstance(spec, numbers.Number):
        if not 0 <= spec <= MAX_LATENCY_NS:
            raise ObookError(f"latency must be between 0 and {MAX_LATENCY_NS} ns (a week), not {spec}")
        return LM_CONST, np.zeros(1, np.int64), np.array([int(spec) // unit_ns], np.int64)
    if isinstance(spec, tuple) and spec and isinstance(spec[0], str):
        name, args = spec[0].lower(), distribution_parameters(spec)
        if DISTRIBUTIONS.get(name) != len(args):
            raise ObookError(f"latency distribution {spec!r}: use ('uniform', lo, hi), ('exponential', mean), "
                             "('normal', mean, sd) or ('lognormal', mu, sigma)")
        check_distribution(name, args)
        rng = np.random.default_rng([seed, kind])
        with np.errstate(over="ignore", invalid="ignore"):
            f = np.maximum(np.rint(getattr(rng, name)(*args, size=DRAWS)), 0)
        if not (f <= MAX_LATENCY_NS).all():         # (a NaN fails too)
            raise ObookError(f"latency {name}:{':'.join(f'{float(a):g}' for a in args)}: draws beyond "
                             f"{MAX_LATENCY_NS} ns (a week)")
        return LM_DRAWS, np.zeros(DRAWS, np.int64), f.astype(np.int64) // unit_ns
    times, values = _table(spec)
    if len(times) == 0 or len(times) != len(values):
        raise ObookError("a latency table needs as many times as latencies, at least one")
    _bounded(values, spec if isinstance(spec, str) else "a latency table")
    order = np.argsort(times, kind="stable")
    return LM_TABLE, times[order], values[order] // unit_ns


def order_table(table):
    """hftbacktest's order latency rows (req_ts, exch_ts, resp_ts) -> (order, response)
    latency tables keyed by req_ts."""
    if hasattr(table, "dtype") and table.dtype.names:
        get = table.__getitem__
    else:
        if hasattr(table, "to_arrow"):
            table = table.to_arrow()
        def get(c):
            return table.column(c).to_numpy()
    req, exch, resp = (np.asarray(get(c), np.int64) for c in ("req_ts", "exch_ts", "resp_ts"))
    return (req, exch - req), (req, resp - exch)


def parse_texts(feed, order, response, names=NAMES) -> dict:
    """The three latencies given as text (the command line's, SQL's; None: 0), as
    ``obook.backtest``'s keyword arguments; one that cannot be read is an error naming which
    (by ``names``: the command line's are ``--feed-latency`` ...)."""
    got = {}
    for key, name, text in zip(NAMES, names, (feed, order, response)):
        with _named(name):
            got[key] = parse_latency(text)
    return got


@contextmanager
def _named(name: str):
    """An ObookError inside names the latency (``name``) it is about: in place of the word
    "latency" that begins it, else before it."""
    try:
        yield
    except ObookError as e:
        text = str(e)
        raise ObookError(f"{name} {text[len('latency '):]}" if text.startswith("latency ") else f"{name}: {text}") \
            from None


def pack(specs, unit_ns: int, seed: int, names=NAMES):
    """The kernel's latency arrays (LM, LA, LB) for (feed, order, response) specs; an error
    names the latency by ``names``."""
    got = []
    for k, (s, name) in enumerate(zip(specs, names)):
        with _named(name):
            got.append(resolve(s, unit_ns, seed, k))
    m = max(len(v) for _, _, v in got)
    LM = np.zeros((3, 2), np.int64)
    LA = np.zeros((3, m), np.int64)
    LB = np.zeros((3, m), np.int64)
    for k, (mode, t, v) in enumerate(got):
        LM[k] = mode, len(v)
        LA[k, :len(t)] = t
        LB[k, :len(v)] = v
    return LM, LA, LB
