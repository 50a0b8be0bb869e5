"""The backtest's kernels take no function object (a compiled strategy is the address of its
C entry, obook.backtest.entry), so their cached machine code serves every strategy and every
later process. numba keys a function argument's cache entry by the function object: kernels
that took one compiled again (about ten seconds) in each process, and their cache grew."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from obook._kernels import backtest as K
from obook._kernels.jit import INTERPRETED
from obook.backtest import backtest, compiled

TESTS = Path(__file__).resolve().parent
DAY = "Time,Ticker,Order,T,Shares,Price\n" + "".join(
    f"{t},AAA,o{t},{'B' if t % 2 else 'S'},100,{990 - t % 7 if t % 2 else 1000 + t % 5}\n" for t in range(1, 60))
PERIOD = 3_000_000

RUN = """
import logging, sys
sys.path.insert(0, {tests!r})
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
from hftbacktest_support import obook_market_maker
from obook.backtest import backtest, compiled
r = backtest({day!r}, compiled(obook_market_maker(), on=("timer",), timer={period}), format="csv",
             order_latency=1_000_000)
print(r.summary["orders"], r.summary["fills"], r.summary["pnl"])
"""


def _dispatcher_args(signatures) -> list:
    from numba.core import types

    return [t for sig in signatures for t in sig if isinstance(t, types.Dispatcher)]


@pytest.fixture
def day(tmp_path):
    path = tmp_path / "day.csv"
    path.write_text(DAY)
    return str(path)


def test_backtest_python_strategy_kernels_typed_without_function_objects(day):
    if INTERPRETED:
        pytest.skip("OBOOK_KERNELS=python: the kernels are not compiled, nothing is cached")
    seen = []
    r = backtest(day, lambda top: seen.append(top.bid_px), format="csv", order_latency=1000)
    assert seen and r.summary["orders"] == 0
    for kernel in (K.bt_events, K.bt_finish):          # what the worker calls (the others inline)
        assert kernel.signatures and not _dispatcher_args(kernel.signatures), kernel


def test_backtest_compiled_strategy_kernels_typed_without_function_objects(day):
    from hftbacktest_support import obook_market_maker

    if INTERPRETED:
        pytest.skip("OBOOK_KERNELS=python: the kernels are not compiled, nothing is cached")
    r = backtest(day, compiled(obook_market_maker(), on=("timer",), timer=PERIOD), format="csv",
                 order_latency=1_000_000)
    assert r.summary["orders"] > 0 and r.summary["calls"] > 0
    for kernel in (K.bt_events, K.bt_finish):
        assert kernel.signatures and not _dispatcher_args(kernel.signatures), kernel


def test_backtest_compiled_strategy_fresh_process_loads_kernels_from_cache(day):
    if INTERPRETED:
        pytest.skip("OBOOK_KERNELS=python: the kernels are not compiled, nothing is cached")
    script = RUN.format(tests=str(TESTS), day=day, period=PERIOD)
    env = {k: v for k, v in os.environ.items() if k != "OBOOK_KERNELS"}
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    orders, fills, _pnl = runs[1].stdout.split()
    assert runs[0].stdout == runs[1].stdout and int(orders) > 0
    # the first run may compile (a cache emptied by an edit); the second loads everything
    assert "compiling the kernels of the backtest" not in runs[1].stderr, runs[1].stderr
