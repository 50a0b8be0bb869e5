"""Bad strategies are contained: one that raises stops the backtest with its traceback and
the tables so far; one that floods orders meets the live risk gate."""

from __future__ import annotations

import pytest

from obook.backtest import StrategyError, backtest
from obook.backtest.orders import Order
from obook.live.risk import RiskGate

DAY = "Time,Ticker,Order,T,Shares,Price\n" + "".join(
    f"{t},AAA,o{t},{'B' if t % 2 else 'S'},100,{990 - t % 7 if t % 2 else 1000 + t % 5}\n" for t in range(1, 200))


class Boom:
    def __init__(self):
        self.calls = 0

    def on_book(self, ctx):
        self.calls += 1
        bid, _, ask, _ = ctx.top()
        if self.calls == 25:
            raise ValueError("the strategy broke")
        if bid is not None and self.calls % 10 == 0:
            return [Order("enter", "AAA", "B", 10, bid, ref=self.calls, tif="GTC")]
        return None


def test_backtest_strategy_raises_keeps_tables_so_far(tmp_path):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError) as e:
        backtest(str(feed), Boom(), format="csv")
    err = e.value
    assert "ValueError: the strategy broke" in str(err) and "raise ValueError" in err.traceback
    assert err.partial is not None
    # the two orders sent before the failure, and their events so far
    assert err.partial.orders.column("ref").to_pylist() == [10, 20]
    assert err.partial.events.num_rows >= 4


class Flood:
    def __init__(self):
        self.ref = 0

    def __call__(self, top):                   # a live strategy: 20 orders on every book change
        if top.bid_px is None:
            return None
        out = []
        for _ in range(20):
            self.ref += 1
            out.append(Order("enter", "AAA", "B", 1, top.bid_px, ref=self.ref))
        return out


def test_backtest_flooding_strategy_meets_the_risk_gate(tmp_path):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    gate = RiskGate(max_orders_per_second=50)
    r = backtest(str(feed), Flood(), format="csv", risk=gate)
    refused = r.orders.column("refused").to_pylist()
    # 36 book changes x 20 orders in 0.2 s (ms times): 50 pass the one-second window, the rest are refused
    assert refused.count(None) == 50 and refused.count("rate") == len(refused) - 50 == 36 * 20 - 50
    assert gate.refused == {"rate": len(refused) - 50}
    assert r.summary["refused"] == len(refused) - 50
    # refused orders never reach the venue
    assert sorted(set(r.events.column("row").to_pylist()) - {None}) == list(range(1, 51))


class Taker:
    """Crosses the spread once on each side, with the sides spelt ``buy`` / ``sell`` (or B / S)."""

    def __init__(self, buy="B", sell="S"):
        self.buy, self.sell, self.sent = buy, sell, 0

    def on_book(self, ctx):
        bid, _, ask, _ = ctx.top()
        if bid is None or ask is None or self.sent >= 2:
            return None
        self.sent += 1
        side, price = (self.buy, ask) if self.sent == 1 else (self.sell, bid)
        return [Order("enter", "AAA", side, 10, price, ref=self.sent, tif="IOC")]


@pytest.mark.parametrize("words", [("buy", "sell"), ("Buy", "SELL"), ("b", "s"), ("B", "T"), ("B", "E")])
def test_backtest_order_sides_as_words_equal_letters(tmp_path, words):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    want = backtest(str(feed), Taker(), format="csv")
    got = backtest(str(feed), Taker(*words), format="csv")
    assert want.fills.column("side").to_pylist() == ["B", "S"]
    assert got.fills.equals(want.fills) and got.orders.equals(want.orders)


class Returns:
    def __init__(self, value):
        self.value = value

    def on_book(self, ctx):
        bid, _, _, _ = ctx.top()
        return self.value(bid) if bid is not None else None


@pytest.mark.parametrize("value, says", [
    (lambda bid: 42, "returned 42, not a list of orders"),
    (lambda bid: Order("enter", "AAA", "B", 10, bid, ref=1), "not a list of orders"),
    (lambda bid: ["x"], "cannot send: 'x'"),
    (lambda bid: [Order("enter", "AAA", "X", 10, bid, ref=1)], "order side 'X'"),
    (lambda bid: [Order("enter", "AAA", "B", 10, float("nan"), ref=1)], "NaN"),
    (lambda bid: [Order("enter", "ZZZ", "B", 10, bid, ref=1)],
     r"instrument 'ZZZ': not one the strategy sees \(AAA\) \(at time \d+\)$"),
])
def test_backtest_strategy_returning_no_orders_raises_strategy_error_with_tables_so_far(tmp_path, value, says):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError, match=says) as e:
        backtest(str(feed), Returns(value), format="csv")
    assert e.value.partial is not None


@pytest.mark.parametrize("source, name, says", [
    ("X = None\n", "X", "is no strategy"),
    ("class C:\n    pass\n", "C", "is no strategy"),
    ("class C:\n    def __init__(self, a):\n        pass\n", "C", "made without arguments"),
    ("raise RuntimeError('broken module')\n", "X", "failed to load: RuntimeError: broken module"),
])
def test_load_strategy_what_is_no_strategy_raises_obook_error(tmp_path, source, name, says):
    from obook.errors import ObookError
    from obook.live.cli_run import load_strategy

    path = tmp_path / "s.py"
    path.write_text(source)
    with pytest.raises(ObookError, match=says):
        load_strategy(f"{path}:{name}")
    with pytest.raises(ObookError, match="failed to load: ModuleNotFoundError"):
        load_strategy("no_such_module_here:X")



@pytest.mark.parametrize("where, says", [
    ("day.csv", r"^--strategy: {p}day\.csv is a file, not a Python file \(give FILE\.py:NAME or module:NAME\)$"),
    ("", r"^--strategy: {p} is a folder, not a Python file \(give FILE\.py:NAME or module:NAME\)$"),
])
def test_load_strategy_path_of_no_python_file_says_so(tmp_path, where, says):
    """FILE:NAME whose FILE is there but no .py file (a feed, a folder) is named as such, not
    as a module Python cannot find."""
    import re

    from obook.errors import ObookError
    from obook.live.cli_run import load_strategy

    (tmp_path / "day.csv").write_text("Time,Ticker\n")
    with pytest.raises(ObookError, match=says.format(p=re.escape(f"{tmp_path}/"))):
        load_strategy(f"{tmp_path}/{where}:X")


class Unknown:
    """Replaces and cancels orders it never sent."""

    def __init__(self):
        self.sent, self.heard = False, []

    def on_book(self, ctx):
        bid, _, _, _ = ctx.top()
        if bid is None or self.sent:
            return None
        self.sent = True
        return [Order("replace", "AAA", "S", 10, bid, 5, 77), Order("cancel", "AAA", "S", 0, 0, 99)]

    def on_order(self, ctx, update):
        self.heard.append((update.ref, update.event))


def test_backtest_rejected_instructions_naming_no_order_keep_their_ref_and_side(tmp_path):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    s = Unknown()
    r = backtest(str(feed), s, format="csv")
    assert r.events.select(["ref", "side", "event", "reason"]).to_pylist() == [
        {"ref": 5, "side": "S", "event": "rejected", "reason": "unknown order id"},
        {"ref": 99, "side": "S", "event": "rejected", "reason": "unknown order id"}]
    assert s.heard == [(5, "rejected"), (99, "rejected")]


def test_backtest_ticker_not_in_the_feed_warns(tmp_path, caplog):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with caplog.at_level("WARNING", logger="obook"):
        r = backtest(str(feed), Taker(), format="csv", tickers="AAA,NOPE")
    assert "not in the feed: NOPE" in caplog.text
    assert r.fills.num_rows == 2


@pytest.mark.parametrize("order, says", [
    (lambda bid: Order("enter", "AAA", "B", 10.5, bid, ref=1), "quantity 10.5 is no whole number"),
    (lambda bid: Order("enter", "AAA", "B", 10, bid + 0.25, ref=1), "is no whole number"),
    (lambda bid: Order("enter", "AAA", "B", 10, bid, ref=1, tif="FOREVER"), "time in force 'FOREVER'"),
    (lambda bid: Order("enter", "AAA", "B", 10, bid, ref=1, tif=3), "time in force 3"),
    (lambda bid: Order("enter", "AAA", "B", 10, bid, ref=1, tif=None), "time in force None"),
    (lambda bid: Order("enter", "AAA", "B", 10, bid, ref=1, market="no"), "market 'no': give True or False"),
    (lambda bid: Order("enter", "AAA", "B", 10, bid, ref=1, post_only=None), "post_only None: give True or False"),
])
def test_backtest_order_fraction_bad_tif_or_flag_is_a_strategy_error(tmp_path, order, says):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError, match=says):
        backtest(str(feed), Returns(lambda bid: [order(bid)]), format="csv")


def test_backtest_whole_floats_are_whole_numbers(tmp_path):
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    r = backtest(str(feed), Returns(lambda bid: [Order("enter", "AAA", "B", 10.0, float(bid), ref=1, tif="gtc")]),
                 format="csv")
    assert r.orders.column("quantity").to_pylist()[:1] == [10] and r.orders.column("tif").to_pylist()[:1] == ["GTC"]


def _compiled_sending(column=None, value=0, count=1, raise_at=-1):
    """A compiled strategy that sends, at each call with a bid, one buy of 10 at the bid
    (a new ref each call) with ``column`` set to ``value``, returning ``count``; or that
    raises ValueError at call ``raise_at``."""
    from numba import njit

    from obook._kernels.backtest_layout import (C_BID, Q_ACT, Q_MARKET, Q_ORIG, Q_POST, Q_PRICE, Q_QTY, Q_REF,
                                                Q_SIDE, Q_TB, Q_TIF)
    from obook._kernels.simulate_layout import NONE, OP_NEW, TIF_GTC

    col = -1 if column is None else column

    @njit
    def strategy(c, lo, refkey, state, out):
        state[0] += 1
        if state[0] == raise_at:
            raise ValueError("compiled boom")
        if c[C_BID] == NONE:
            return 0
        out[0, Q_ACT], out[0, Q_SIDE], out[0, Q_QTY], out[0, Q_PRICE] = OP_NEW, 0, 10, c[C_BID]
        out[0, Q_TIF], out[0, Q_MARKET], out[0, Q_POST] = TIF_GTC, 0, 0
        out[0, Q_REF], out[0, Q_ORIG], out[0, Q_TB] = state[0], 0, -1
        if col >= 0:
            out[0, col] = value
        return count

    return strategy


def _q(name):
    from obook._kernels import backtest_layout

    return getattr(backtest_layout, name)


@pytest.mark.parametrize("column, value, says", [
    ("Q_TB", 1, "order row 0 with Q_TB 1: the books it trades are 0 to 0"),
    ("Q_TB", 100_000_000, "Q_TB 100000000"),
    ("Q_TB", -2, "Q_TB -2"),
    ("Q_ACT", 7, "Q_ACT 7: OP_NEW 0, OP_MODIFY 1 or OP_CANCEL 2"),
    ("Q_SIDE", 2, "Q_SIDE 2: 0 buy or 1 sell"),
    ("Q_TIF", 9, "Q_TIF 9"),
    ("Q_MARKET", 2, "Q_MARKET 2: 0 or 1"),
    ("Q_POST", -1, "Q_POST -1: 0 or 1"),
    ("Q_PRICE", -5, "Q_PRICE -5: a limit price is 0 to"),
    ("Q_PRICE", 1 << 62, f"Q_PRICE {1 << 62}"),
])
def test_backtest_compiled_order_row_out_of_range_is_a_strategy_error(tmp_path, column, value, says):
    from obook.backtest import compiled

    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError, match="the compiled strategy strategy returned ") as e:
        backtest(str(feed), compiled(_compiled_sending(_q(column), value)), format="csv")
    assert says in str(e.value)
    assert e.value.partial is not None and e.value.partial.orders.num_rows == 0


@pytest.mark.parametrize("count", [17, 100, -1])
def test_backtest_compiled_count_beyond_its_rows_is_a_strategy_error(tmp_path, count):
    from obook.backtest import compiled

    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError, match=f"returned {count}: the number of order rows it wrote is 0 to 16"):
        backtest(str(feed), compiled(_compiled_sending(count=count)), format="csv")


def test_backtest_compiled_strategy_raising_stops_at_that_call(tmp_path, capfd):
    from obook.backtest import compiled

    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError) as e:
        backtest(str(feed), compiled(_compiled_sending(raise_at=12)), format="csv")
    assert "the compiled strategy strategy raised ValueError: compiled boom (at time " in str(e.value)
    assert e.value.partial.summary["calls"] == 12
    assert "Exception ignored" not in capfd.readouterr().err


def test_backtest_compiled_strategy_with_boundscheck_writing_past_state_is_a_strategy_error(tmp_path):
    from numba import njit

    from obook.backtest import compiled

    @njit(boundscheck=True)
    def past_state(c, lo, refkey, state, out):
        state[0] += 1
        if state[0] == 3:
            state[state.shape[0]] = 1
        return 0

    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError, match="the compiled strategy past_state raised IndexError") as e:
        backtest(str(feed), compiled(past_state), format="csv")
    assert e.value.partial.summary["calls"] == 3


def test_backtest_compiled_strategy_that_only_raises_is_a_strategy_error_before_the_day(tmp_path):
    from numba import njit

    from obook.backtest import compiled

    @njit
    def raises_only(c, lo, refkey, state, out):
        raise ValueError("never returns")

    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError, match="the compiled strategy raises_only does not compile as fn"):
        backtest(str(feed), compiled(raises_only), format="csv")


def test_load_strategy_module_calling_sys_exit_raises_obook_error(tmp_path):
    from obook.errors import ObookError
    from obook.live.cli_run import load_strategy

    path = tmp_path / "s.py"
    path.write_text("import sys\nsys.exit(4)\n")
    with pytest.raises(ObookError, match=r"failed to load: it called sys.exit\(4\)"):
        load_strategy(f"{path}:X")



def test_backtest_on_error_skip_skips_the_unreadable_record_and_counts_it(tmp_path):
    from obook.errors import FeedError

    clean, bad = tmp_path / "clean.csv", tmp_path / "bad.csv"
    clean.write_text(DAY)
    lines = DAY.splitlines(keepends=True)
    bad.write_text("".join(lines[:30] + ["30,AAA,zz,Q,1,1\n"] + lines[30:]))
    with pytest.raises(FeedError, match="line 31"):
        backtest(str(bad), Returns(lambda bid: None), format="csv")
    want = backtest(str(clean), Returns(lambda bid: None), format="csv")
    got = backtest(str(bad), Returns(lambda bid: None), format="csv", on_error="skip")
    assert sum(got.stats["skipped"].values()) == 1 and got.stats["calls"] == want.stats["calls"] > 0


def test_strategy_text_error_names_the_argument_of_each_front_end(tmp_path):
    import duckdb

    import obook
    import obook.polars
    from obook.errors import ObookError
    from obook.gen.csv import write_csv

    feed = tmp_path / "day.csv"
    write_csv(feed, 200, 2, seed=1)
    with pytest.raises(ObookError, match=r"^strategy: no such file nofile\.py$"):
        backtest(str(feed), "nofile.py:X")
    with pytest.raises(ObookError, match=r"^strategy: no such file nofile\.py$"):
        obook.polars.scan_backtest(str(feed), "nofile.py:X").collect()
    with pytest.raises(duckdb.Error, match=r"obook_backtest: strategy: no such file nofile\.py"):
        obook.connect().sql(f"SELECT * FROM obook_backtest('{feed}', 'nofile.py:X')").fetchall()


@pytest.mark.parametrize("value", [1.5, True])
def test_backtest_compiled_strategy_returning_no_integer_is_a_strategy_error_before_the_day(tmp_path, value):
    from numba import njit

    from obook.backtest import compiled

    @njit
    def returns(c, lo, refkey, state, out):
        return value

    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with pytest.raises(StrategyError, match=r"the compiled strategy returns does not compile as fn.*-> int.*"
                                            r"returns (float64|bool), not an integer"):
        backtest(str(feed), compiled(returns), format="csv")
