"""The backtest's kernels with a Python strategy take no function object, so their cached
machine code serves every later process (numba keys a function argument's cache entry by
the function object: such kernels compiled again in each run, and their cache grew)."""

from __future__ import annotations

import pytest

from obook._kernels import backtest as K
from obook._kernels.jit import INTERPRETED
from obook.backtest import backtest

DAY = "Time,Ticker,Order,T,Shares,Price\n" + "".join(
    f"{t},AAA,o{t},{'B' if t % 2 else 'S'},100,{990 - t % 7 if t % 2 else 1000 + t % 5}\n" for t in range(1, 60))


def _dispatcher_args(signatures) -> list:
    from numba.core import types

    return [t for sig in signatures for t in sig if isinstance(t, types.Dispatcher)]


def test_backtest_python_strategy_kernels_typed_without_function_objects(tmp_path):
    if INTERPRETED:
        pytest.skip("OBOOK_KERNELS=python: the kernels are not compiled, nothing is cached")
    day = tmp_path / "day.csv"
    day.write_text(DAY)
    seen = []
    # a compiled strategy (earlier tests in this process) adds signatures that take its function
    before = {kernel: set(kernel.signatures) for kernel in (K.bt_events, K.bt_finish)}
    r = backtest(str(day), lambda top: seen.append(top.bid_px), format="csv", order_latency=1000)
    assert seen and r.summary["orders"] == 0
    for kernel in (K.bt_events, K.bt_finish):          # what the worker calls (the others inline)
        added = [sig for sig in kernel.signatures if sig not in before[kernel]]
        assert not _dispatcher_args(added), (kernel, _dispatcher_args(added))
        assert any(not _dispatcher_args([sig]) for sig in kernel.signatures), kernel   # the one this run used
