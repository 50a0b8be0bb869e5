"""What the backtest's ``bt_send`` (the kernel a Python strategy's every order goes through)
costs by how the order's fields reach it, called from Python as the worker's ``send`` calls it:

* ``scalars``: the run's 6 arrays, then ``now`` and the order's 12 fields as scalars (its
  signature before the fields became a row; here writing them and calling ``bt_queue``);
* ``row``: ``obook._kernels.backtest.bt_send``: the fields assigned from Python as one tuple to
  a scratch row ``X`` (``SEND_FIELDS`` order), then 7 arguments;
* ``named``: the fields as a ``namedtuple`` (``Instruction``) and the latency models as
  another (``Latency``), then 6 arguments (the same, here).

All three must leave the same instruction rows and local order table (checked). Prints the
median µs an order of ``--repeats`` alternating runs of ``--orders`` orders.

    python benchmarks/ablate_send_args.py [--orders 20000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import namedtuple

import numpy as np

from obook._kernels.backtest import bt_queue, bt_send
from obook._kernels.backtest_layout import (LO_WIDTH, S_INS_TAIL, S_WIDTH, SEND_FIELDS, X_ORIG, X_POST, X_REF,
                                            X_REFUSED, X_SEND, X_WIDTH)
from obook._kernels.jit import njit
from obook._kernels.simulate_layout import I_ACT, I_KEY, I_MARKET, I_PRICE, I_QTY, I_SIDE, I_TB, I_TIF

Instruction = namedtuple("Instruction", "tb key act side qty price tif market post ref orig refused")
Latency = namedtuple("Latency", "mode at value")


@njit(cache=False, _nrt=False)
def bt_send_scalars(INS, LO, S, LM, LA, LB, now, tb, key, act, side, qty, price, tif, market, post, ref, orig,
                    refused):
    """``bt_send`` with the order's fields as scalars (its signature until they became a row)."""
    q = S[S_INS_TAIL]
    INS[q, :] = 0
    INS[q, I_TB], INS[q, I_KEY], INS[q, I_ACT], INS[q, I_SIDE] = tb, key, act, side
    INS[q, I_QTY], INS[q, I_PRICE], INS[q, I_TIF], INS[q, I_MARKET] = qty, price, tif, market
    INS[q, X_POST], INS[q, X_SEND], INS[q, X_REF], INS[q, X_ORIG], INS[q, X_REFUSED] = post, now, ref, orig, refused
    return bt_queue(INS, LO, S, LM, LA, LB)


@njit(cache=False, _nrt=False)
def bt_send_named(INS, LO, S, lat, now, x):
    """``bt_send`` with the order an ``Instruction`` and the latencies a ``Latency``."""
    q = S[S_INS_TAIL]
    INS[q, :] = 0
    INS[q, I_TB], INS[q, I_KEY], INS[q, I_ACT], INS[q, I_SIDE] = x.tb, x.key, x.act, x.side
    INS[q, I_QTY], INS[q, I_PRICE], INS[q, I_TIF], INS[q, I_MARKET] = x.qty, x.price, x.tif, x.market
    INS[q, X_POST], INS[q, X_SEND], INS[q, X_REF] = x.post, now, x.ref
    INS[q, X_ORIG], INS[q, X_REFUSED] = x.orig, x.refused
    return bt_queue(INS, LO, S, lat.mode, lat.at, lat.value)


def run(way: str, n: int):
    INS, LO = np.zeros((n + 5, X_WIDTH), np.int64), np.zeros((n + 5, LO_WIDTH), np.int64)
    S, LM = np.zeros(S_WIDTH, np.int64), np.zeros((3, 2), np.int64)
    LA, LB = np.zeros((3, 1), np.int64), np.ones((3, 1), np.int64)
    lat, X = Latency(LM, LA, LB), np.zeros(len(SEND_FIELDS), np.int64)
    t = time.perf_counter()
    if way == "scalars":
        for i in range(n):
            bt_send_scalars(INS, LO, S, LM, LA, LB, i, 0, i, 0, 0, 100, 1000 + i % 7, 0, 0, 0, i + 1, 0, 0)
    elif way == "row":
        for i in range(n):
            X[:] = (0, i, 0, 0, 100, 1000 + i % 7, 0, 0, 0, i, i + 1, 0, 0)
            bt_send(INS, LO, S, LM, LA, LB, X)
    else:
        for i in range(n):
            bt_send_named(INS, LO, S, lat, i, Instruction(0, i, 0, 0, 100, 1000 + i % 7, 0, 0, 0, i + 1, 0, 0))
    return (time.perf_counter() - t) / n * 1e6, INS, LO


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--orders", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    ways = ("scalars", "row", "named")
    first = {w: run(w, a.orders) for w in ways}           # compiled, and checked equal
    for w in ways[1:]:
        assert np.array_equal(first[w][1], first["scalars"][1]) and np.array_equal(first[w][2], first["scalars"][2]), w
    times = {w: [] for w in ways}
    for r in range(a.repeats):
        for w in (ways if r % 2 == 0 else ways[::-1]):
            times[w].append(run(w, a.orders)[0])
    base = statistics.median(times["scalars"])
    for w in ways:
        m = statistics.median(times[w])
        print(f"{w:8s} {m:.3f} µs an order ({m / base:.2f}x)")


if __name__ == "__main__":
    main()
