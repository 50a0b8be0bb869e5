"""The order a compiled strategy's cancel ends is its Q_REF's, as a Python strategy's cancel
ends its ``ref``'s: Q_ORIG names the old ref of a replace only, whatever a cancel row holds
there (the ``out`` rows keep what earlier calls wrote)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from obook.backtest import backtest, compiled
from obook.backtest.orders import Order

# an ask of 1010 and bids at 1000 (a call at each of the first four rows); at 8 a sell of 50
# at 1004 crosses the own bids at 1004 and above
DAY = "Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1010\n2,AAA,b,B,100,1000\n3,AAA,c,B,100,1000\n" \
      "6,AAA,e,S,50,1010\n8,AAA,f,S,50,1004\n"
TABLES = ("orders", "events", "fills")


def _run(tmp_path, strategy):
    day = tmp_path / "day.csv"
    day.write_text(DAY)
    return backtest(str(day), strategy, format="csv")


def _same_tables(fast, slow):
    for name in TABLES:
        assert fast.table(name).to_pylist() == slow.table(name).to_pylist(), name


def _compiled(cancel_orig: int, replace_first: bool):
    """A compiled strategy: at its first call buys of 10 at 1005 (ref 1, row 0) and 5 at 1004
    (ref 2, row 1). ``replace_first``: at its second call ref 1 replaced by ref 3 (row 0),
    at its third a cancel of ref 2 written over row 0 with Q_ORIG left as the replace wrote
    it; else at its second a cancel of ref 1 with Q_ORIG ``cancel_orig``. At each call n it
    records refs 1 to 3 as its order table shows them (remaining shares; -1: none, done or
    renamed) in state[10 n + ref]."""
    from numba import njit

    from obook._kernels.backtest_layout import (LO_DONE, LO_REF, LO_REM, LO_STATE, Q_ACT, Q_MARKET, Q_ORIG, Q_POST,
                                                Q_PRICE, Q_QTY, Q_REF, Q_SIDE, Q_TB, Q_TIF)
    from obook._kernels.simulate_layout import OP_CANCEL, OP_MODIFY, OP_NEW, TIF_DAY

    @njit
    def strategy(c, lo, refkey, state, out):
        state[0] += 1
        n = state[0]
        for r in range(1, 4):
            k = refkey[r]
            gone = k < 0 or lo[k, LO_STATE] == LO_DONE or lo[k, LO_REF] != r
            state[10 * n + r] = -1 if gone else lo[k, LO_REM]
        if n == 1:
            for i in range(2):
                out[i, Q_ACT], out[i, Q_SIDE], out[i, Q_QTY], out[i, Q_PRICE] = OP_NEW, 0, 10 - 5 * i, 1005 - i
                out[i, Q_TIF], out[i, Q_MARKET], out[i, Q_POST] = TIF_DAY, 0, 0
                out[i, Q_REF], out[i, Q_ORIG], out[i, Q_TB] = i + 1, 0, -1
            return 2
        if n == 2 and replace_first:
            out[0, Q_ACT], out[0, Q_REF], out[0, Q_ORIG] = OP_MODIFY, 3, 1
            return 1
        if n == (3 if replace_first else 2):
            out[0, Q_ACT], out[0, Q_QTY], out[0, Q_PRICE] = OP_CANCEL, 0, 0
            out[0, Q_REF] = 2 if replace_first else 1
            if not replace_first:
                out[0, Q_ORIG] = cancel_orig
            return 1
        return 0

    return strategy


class Python:
    """The compiled strategy's orders as a Python strategy's (``cancel``: the cancel's ref and
    orig, at call ``at``); ``seen``: ``ctx.orders`` (ref: remaining) at each call."""

    def __init__(self, cancel, replace_first):
        self.calls, self.cancel, self.replace_first, self.seen = 0, cancel, replace_first, []

    def on_book(self, ctx):
        self.calls += 1
        self.seen.append({ref: o.remaining for ref, o in ctx.orders.items()})
        if self.calls == 1:
            return [Order("enter", "AAA", "B", 10, 1005, ref=1, tif="DAY"),
                    Order("enter", "AAA", "B", 5, 1004, ref=2, tif="DAY")]
        if self.calls == 2 and self.replace_first:
            return [Order("replace", "AAA", "B", 10, 1005, ref=3, orig=1, tif="DAY")]
        if self.calls == (3 if self.replace_first else 2):
            ref, orig = self.cancel
            return [Order("cancel", "AAA", "B", 0, 0, ref=ref, orig=orig)]
        return None


def _seen(state, calls):
    """The compiled strategy's record of its orders at each call, as Python.seen."""
    return [{r: int(state[10 * n + r]) for r in range(1, 4) if state[10 * n + r] >= 0} for n in range(1, calls + 1)]


def test_run_compiled_cancel_with_q_orig_of_another_live_order_cancels_q_ref_as_python(tmp_path):
    state = np.zeros(128, np.int64)
    fast = _run(tmp_path, compiled(_compiled(cancel_orig=2, replace_first=False), state))
    python = Python(cancel=(1, 2), replace_first=False)
    slow = _run(tmp_path, python)
    _same_tables(fast, slow)
    assert [(e["ref"], e["event"]) for e in fast.events.to_pylist()[4:]] == [(1, "cancelled"), (2, "filled")]
    assert _seen(state, len(python.seen)) == python.seen
    assert python.seen[2:] == [{2: 5}, {2: 5}, {}]


def test_run_compiled_cancel_written_over_a_replace_row_cancels_q_ref_as_python(tmp_path):
    """``out`` is not cleared between calls: a cancel of ref 2 written over the row of the
    replace of ref 1 by ref 3 keeps its Q_ORIG 1, and still ends the order of ref 2."""
    state = np.zeros(128, np.int64)
    fast = _run(tmp_path, compiled(_compiled(cancel_orig=0, replace_first=True), state))
    python = Python(cancel=(2, 1), replace_first=True)
    slow = _run(tmp_path, python)
    _same_tables(fast, slow)
    assert fast.orders.column("orig").to_pylist() == [None, None, 1, 1]
    assert [(e["ref"], e["event"]) for e in fast.events.to_pylist()[4:]] == [       # (by their first refs)
        (1, "modified"), (2, "cancelled"), (1, "filled")]
    assert _seen(state, len(python.seen)) == python.seen
    assert python.seen[3:] == [{3: 10}, {}]


def _live_cancel_with_orig():
    """A live numba strategy: a buy of 10 at 1005 (ref 1), then of 5 at 1004 (ref 2), then
    a cancel of ref 1 with orig 2."""
    from numba import njit

    from obook.live.strategy import numba_strategy

    @njit
    def fn(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):
        state[0] += 1
        if state[0] == 1:
            return 1, 0, 10, 1005, 1, 0
        if state[0] == 2:
            return 1, 0, 5, 1004, 2, 0
        if state[0] == 3:
            return 3, 0, 0, 0, 1, 2
        return 0, 0, 0, 0, 0, 0

    return numba_strategy(fn, state=np.zeros(1, np.int64))


def test_backtest_live_numba_strategy_cancel_with_orig_cancels_its_ref_as_python_calls(tmp_path):
    s = _live_cancel_with_orig()
    fast = _run(tmp_path, s)
    slow = _run(tmp_path, lambda top: s(top))
    _same_tables(fast, slow)
    assert [(e["ref"], e["event"]) for e in fast.events.to_pylist()[4:]] == [(1, "cancelled"), (2, "filled")]


def _live_returning(kind: int, side: int):
    from numba import njit

    from obook.live.strategy import numba_strategy

    @njit
    def no_order(locate, time, bid_px, bid_qty, ask_px, ask_qty):
        return kind, side, 10, 1000, 1, 0

    return numba_strategy(no_order)


@pytest.mark.parametrize("kind, side, says", [
    (9, 0, "returned kind 9, not 0 (nothing), 1 (enter), 2 (replace) or 3 (cancel)"),
    (-1, 0, "returned kind -1, not 0 (nothing)"),
    (1, 5, "returned side 5, not 0 (buy) or 1 (sell)"),
])
def test_backtest_live_numba_strategy_result_that_is_no_order_stops_naming_it_nothing_sent(tmp_path, kind, side,
                                                                                           says):
    from obook.errors import StrategyError

    with pytest.raises(StrategyError, match=f"the numba strategy no_order {re.escape(says)}") as e:
        _run(tmp_path, _live_returning(kind, side))
    assert e.value.partial.orders.num_rows == 0 and e.value.partial.events.num_rows == 0


@pytest.mark.parametrize("qty, price, says", [(10, 1000.5, "price as float64"), (True, 1000, "qty as bool")])
def test_backtest_live_numba_strategy_result_not_integers_strategy_error_before_the_day(tmp_path, qty, price, says):
    from numba import njit

    from obook.errors import StrategyError
    from obook.live.strategy import numba_strategy

    @njit
    def not_integers(locate, time, bid_px, bid_qty, ask_px, ask_qty):
        return 1, 0, qty, price, 1, 0

    with pytest.raises(StrategyError, match=f"numba strategy not_integers: .*: it returns {says}, not an integer"):
        _run(tmp_path, numba_strategy(not_integers))
