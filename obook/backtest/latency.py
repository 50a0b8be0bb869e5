"""Latencies of a backtest: the feed's (venue -> strategy), the orders' (strategy -> venue)
and the responses' (venue -> strategy), in nanoseconds.

Each is one of:

* an integer: a constant;
* a distribution ``("uniform", lo, hi)``, ``("exponential", mean)``, ``("normal", mean, sd)``,
  ``("lognormal", mu, sigma)``: values drawn with the backtest's ``seed`` (negative draws
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

import numpy as np

from .._kernels.backtest_layout import LM_CONST, LM_DRAWS, LM_TABLE
from ..errors import ObookError

DRAWS = 1 << 16
DISTRIBUTIONS = {"uniform": 2, "exponential": 1, "normal": 2, "lognormal": 2}


def _table(spec):
    import pyarrow as pa

    if isinstance(spec, tuple) and len(spec) == 2 and not isinstance(spec[0], str):
        return np.asarray(spec[0], np.int64), np.asarray(spec[1], np.int64)
    if isinstance(spec, str):
        import os

        if not os.path.isfile(spec):
            raise ObookError(f"latency {spec!r}: give an integer of ns (0 or more), a distribution "
                             "(uniform:LO:HI, exponential:MEAN, normal:MEAN:SD, lognormal:MU:SIGMA) or a "
                             "CSV / Parquet table file (time, latency)")
        if spec.endswith(".parquet"):
            import pyarrow.parquet as pq
            spec = pq.read_table(spec)
        else:
            import pyarrow.csv as pcsv
            spec = pcsv.read_csv(spec)
    if hasattr(spec, "to_arrow"):
        spec = spec.to_arrow()
    if not isinstance(spec, pa.Table) or not {"time", "latency"} <= set(spec.column_names):
        raise ObookError("a latency table needs columns time and latency")
    return (spec.column("time").to_numpy().astype(np.int64),
            spec.column("latency").to_numpy().astype(np.int64))


def resolve(spec, unit_ns: int, seed: int, kind: int):
    """(mode, times, values) in the feed's time units for one latency ``spec`` (ns)."""
    if spec is None:
        spec = 0
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec < 0:
            raise ObookError(f"latency must be >= 0 ns, not {spec}")
        return LM_CONST, np.zeros(1, np.int64), np.array([int(spec) // unit_ns], np.int64)
    if isinstance(spec, tuple) and spec and isinstance(spec[0], str):
        name, args = spec[0].lower(), spec[1:]
        if DISTRIBUTIONS.get(name) != len(args):
            raise ObookError(f"latency distribution {spec!r}: use ('uniform', lo, hi), ('exponential', mean), "
                             "('normal', mean, sd) or ('lognormal', mu, sigma)")
        rng = np.random.default_rng([seed, kind])
        v = np.maximum(np.rint(getattr(rng, name)(*args, size=DRAWS)), 0).astype(np.int64)
        return LM_DRAWS, np.zeros(DRAWS, np.int64), v // unit_ns
    times, values = _table(spec)
    if len(times) == 0 or len(times) != len(values):
        raise ObookError("a latency table needs as many times as latencies, at least one")
    if (values < 0).any():
        raise ObookError("a latency table has a negative latency")
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


def pack(specs, unit_ns: int, seed: int):
    """The kernel's latency arrays (LM, LA, LB) for (feed, order, response) specs."""
    got = [resolve(s, unit_ns, seed, k) for k, s in enumerate(specs)]
    m = max(len(v) for _, _, v in got)
    LM = np.zeros((3, 2), np.int64)
    LA = np.zeros((3, m), np.int64)
    LB = np.zeros((3, m), np.int64)
    for k, (mode, t, v) in enumerate(got):
        LM[k] = mode, len(v)
        LA[k, :len(t)] = t
        LB[k, :len(v)] = v
    return LM, LA, LB
