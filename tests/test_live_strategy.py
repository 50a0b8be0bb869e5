"""Tick to trade: the same strategy, risk gate and gateway send the same orders offline
(file replay) and live (send + listen with drops), and the venue receives them all."""

from __future__ import annotations

import importlib.util
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from live_support import addresses, sending, warm_loop
from obook.gen.itch import write_itch
from obook.live.gateway import Gateway
from obook.live.listener import Listener
from obook.live.ouch import Order
from obook.live.risk import RiskGate
from obook.live.strategy import TickToTrade, numba_strategy, replay_orders
from obook.live.venue import Venue, read_log

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "strategy_quote.py"
TICKERS = ["AAA", "AAB", "AAC"]


def _join_bid():
    spec = importlib.util.spec_from_file_location("strategy_quote", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.JoinBid()


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    warm_loop()
    path = tmp_path_factory.mktemp("t2t") / "day.itch"
    write_itch(str(path), 20_000, 10, 11)
    return path


class _VenueThread:
    def __init__(self, log_path=None, **options):
        self.venue = Venue(log_path=log_path, sessions=1, **options)
        self.thread = threading.Thread(target=self.venue.serve, kwargs={"timeout": 60}, daemon=True)
        self.thread.start()

    def __enter__(self):
        return self.venue

    def __exit__(self, *exc):
        self.venue.stop()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()


def _risk():
    return RiskGate(max_qty=1000, max_orders_per_second=50, band_bps=200)


def test_strategy_live_and_offline_send_same_orders_venue_gets_all(day, tmp_path):
    with _VenueThread(tmp_path / "offline.log") as venue:
        gw = Gateway(*venue.address)
        offline = replay_orders(day, _join_bid(), TICKERS, _risk(), gw)
        gw.close()
    assert len(offline.orders) > 20
    a, b, r = addresses()
    with _VenueThread(tmp_path / "live.log") as live_venue:
        ttt = TickToTrade(_join_bid(), TICKERS, _risk(), Gateway(*live_venue.address))
        lst = Listener(a, b, r, tick_to_trade=ttt, idle_timeout=10, retries=20)
        with sending(day, a, b, r, rate=20_000, delay_b=0.001, drop_a=0.05, drop_b=0.05, seed=4):
            for _ in lst.table_batches():
                pass
    assert ttt.digest() == offline.digest()
    assert live_venue.digest() == venue.digest() == ttt.gateway.digest()
    assert len(read_log(tmp_path / "live.log")) == len(ttt.orders)
    # every order answered: the venue stage has one sample per order
    venue_hist = ttt.venue_hists()[0]
    assert venue_hist.total == len({o.ref for o in ttt.orders})


def test_strategy_python_loop_venue_rejecting_orders_counted_as_the_venue_counts(day):
    """A venue that takes one live order at a time rejects most of JoinBid's orders: the
    Python listener's gateway counts every rejection the venue counted."""
    a, b, r = addresses()
    with _VenueThread(max_live_orders=1) as venue:
        ttt = TickToTrade(_join_bid(), TICKERS, _risk(), Gateway(*venue.address))
        lst = Listener(a, b, r, tick_to_trade=ttt, idle_timeout=10, retries=20)
        with sending(day, a, b, r, rate=20_000, seed=4):
            for _ in lst.table_batches():
                pass
    gw, rejected = ttt.gateway, sum(venue.rejected.values())
    assert rejected > 5 and gw.rejected == rejected
    assert gw.first_rejected[0] in {o.ref for o in ttt.orders}
    assert gw.rejections().startswith(f"venue {gw.where}: rejected {rejected} order message(s); the first")


def test_risk_gate_refuses_size_notional_band_rate_and_counts():
    gate = RiskGate(max_qty=100, max_notional=100 * 20_000, max_orders_per_second=2, band_bps=100)
    ok = Order("enter", "AAA", "B", 100, 10_000, 1)
    assert gate.check(Order("enter", "AAA", "B", 101, 10_000, 1), 10_000, 10_100, 0) == "size"
    assert gate.check(Order("enter", "AAA", "S", 100, 20_001, 1), 20_000, 20_001, 0) == "notional"
    assert gate.check(Order("enter", "AAA", "B", 100, 10_200, 1), 10_000, 10_300, 0) == "band"
    assert gate.check(Order("enter", "AAA", "B", 10, 10_100, 1), None, None, 0) == "no price"
    assert gate.check(ok, 10_000, None, 0) is None
    assert gate.check(ok, 10_000, None, 500_000_000) is None
    assert gate.check(ok, 10_000, None, 999_999_999) == "rate"
    assert gate.check(ok, 10_000, None, 1_000_000_000) is None   # the first left the window
    assert gate.refused == {"size": 1, "notional": 1, "band": 1, "no price": 1, "rate": 1}


def test_numba_strategy_orders_equal_python_strategy(day):
    @njit
    def cross_spread(locate, time, bid_px, bid_qty, ask_px, ask_qty):
        if bid_px > 0 and ask_px > 0 and ask_px - bid_px <= 100 and bid_qty > 500:
            return 1, 0, 100, bid_px, np.int64(time % 1_000_000_007), 0
        return 0, 0, 0, 0, 0, 0

    def python(top):
        if top.bid_px and top.ask_px and top.ask_px - top.bid_px <= 100 and top.bid_qty > 500:
            return [Order("enter", top.ticker, "B", 100, top.bid_px, top.time % 1_000_000_007)]
        return None

    a = replay_orders(day, numba_strategy(cross_spread), TICKERS, RiskGate())
    b = replay_orders(day, python, TICKERS, RiskGate())
    assert len(a.orders) > 0 and a.digest() == b.digest()


def test_example_strategy_script_offline_run_venue_gets_all(tmp_path, day):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, str(EXAMPLE), str(day)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    offline = replay_orders(day, _join_bid(), ["AAA", "AAB"], RiskGate())
    assert f"orders sha256: {offline.digest()}" in run.stdout
    assert f"venue received: {len(offline.orders)}" in run.stdout


def _example():
    spec = importlib.util.spec_from_file_location("strategy_quote", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_join_bid_fast_orders_equal_python_join_bid_fresh_each_run(day):
    mod = _example()
    fast = replay_orders(day, mod.JoinBidFast, TICKERS, _risk())
    again = replay_orders(day, mod.JoinBidFast, TICKERS, _risk())     # a run starts fresh
    slow = replay_orders(day, mod.JoinBid(), TICKERS, _risk())
    assert len(slow.orders) > 20
    assert fast.digest() == again.digest() == slow.digest()
    assert mod.JoinBidFast.state[0] == 1          # the module's object is never run itself


def test_numba_strategy_c_entry_writes_the_order_and_keeps_state():
    import ctypes

    from obook.live.fast_strategy import OUT_SLOTS

    mod = _example()
    s = mod.JoinBidFast.fresh()
    p64 = ctypes.POINTER(ctypes.c_int64)
    entry = ctypes.CFUNCTYPE(ctypes.c_int64, p64, ctypes.c_int64, *[ctypes.c_int64] * 6, p64)(s.address)
    out = np.zeros(OUT_SLOTS, np.int64)
    args = (s.state.ctypes.data_as(p64), len(s.state))
    assert entry(*args, 7, 1, 100_000, 300, -1, -1, out.ctypes.data_as(p64)) == 1
    assert list(out[:5]) == [0, 100, 100_000, 1, 0]
    assert entry(*args, 7, 2, 100_000, 200, -1, -1, out.ctypes.data_as(p64)) == 0
    assert entry(*args, 7, 3, 100_100, 200, -1, -1, out.ctypes.data_as(p64)) == 2
    assert list(out[:5]) == [0, 100, 100_100, 2, 1]
    assert entry(*args, 7, 4, -1, -1, -1, -1, out.ctypes.data_as(p64)) == 3
    assert list(out[3:5]) == [2, 0]
    assert s.step(8, 5, 50_000, 1, -1, -1) == (1, 0, 100, 50_000, 3, 0)


def test_numba_strategy_rejects_a_plain_function():
    with pytest.raises(TypeError, match="numba function"):
        numba_strategy(lambda *a: (0, 0, 0, 0, 0, 0))


def _quits(top):
    raise SystemExit(3)


def test_call_strategy_sys_exit_strategy_error_naming_message():
    from obook.errors import StrategyError
    from obook.live.strategy import Top, call_strategy

    with pytest.raises(StrategyError, match=r"strategy on message 7 \(AAA\): it called sys.exit\(3\)"):
        call_strategy(_quits, Top(7, 0, "AAA", 1, 100, 1, 200, 1))


def test_call_strategy_sys_exit_of_a_signal_raised_as_it_is(monkeypatch):
    from obook import interrupts
    from obook.live.strategy import Top, call_strategy

    monkeypatch.setattr(interrupts, "raised", 15)
    with pytest.raises(SystemExit) as e:
        call_strategy(_quits, Top(7, 0, "AAA", 1, 100, 1, 200, 1))
    assert e.value.code == 3


def test_replay_orders_feed_of_another_format_raises_obook_error_naming_both(tmp_path):
    from obook.errors import ObookError
    from obook.gen.csv import write_csv

    feed = tmp_path / "day.csv"
    write_csv(feed, 500, 2)
    calls = []
    with pytest.raises(ObookError, match=r"day\.csv: a csv feed; replay_orders reads it as itch"):
        replay_orders(feed, lambda top: calls.append(top))
    assert calls == []          # the strategy never saw a book of misread bytes


def test_replay_orders_itch_feed_read_as_pitch_error_says_an_itch_feed(tmp_path):
    from obook.errors import ObookError
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(feed, 500, 2)
    with pytest.raises(ObookError, match=r"day\.itch: an itch feed; replay_orders reads it as pitch"):
        replay_orders(feed, lambda top: None, format="pitch")


def test_replay_orders_table_file_raises_obook_error_a_table_not_a_feed(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from obook.errors import ObookError

    table = tmp_path / "bbo.parquet"
    pq.write_table(pa.table({"seq": [1, 2], "time": [3, 4]}), table)
    calls = []
    with pytest.raises(ObookError, match=r"bbo\.parquet: a Parquet file \(a table, not a feed\)"):
        replay_orders(table, lambda top: calls.append(top))
    assert calls == []


@pytest.mark.parametrize("qty, says", [("100", r"qty '100' is not an integer from 1 to 4294967295"),
                                       (None, r"qty None is not an integer from 1 to 4294967295")])
def test_replay_orders_quantity_not_a_number_strategy_error_naming_the_field(day, qty, says):
    from obook.live.strategy import StrategyError

    def strategy(top):
        return [Order("enter", top.ticker, "B", qty, top.bid_px or top.ask_px or 10_000, 1)]

    with pytest.raises(StrategyError, match=r"cannot send Order\(.*\): " + says):
        replay_orders(day, strategy)


@njit
def _two_arguments(state, locate):
    return 0, 0, 0, 0, 0, 0


@njit
def _returns_a_float(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):
    return 1.5


@pytest.mark.parametrize("fn, says", [(_two_arguments, r"too many positional arguments"),
                                      (_returns_a_float, r"failed to unpack float64")])
def test_numba_strategy_address_wrong_signature_strategy_error_one_line(fn, says):
    from obook.live.strategy import StrategyError

    with pytest.raises(StrategyError) as e:
        numba_strategy(fn, state=np.zeros(2, np.int64)).address
    text = str(e.value)
    assert text.startswith(f"numba strategy {fn.__name__}: cannot be compiled into the live loop as fn(state, locate, "
                           "time, bid_px, bid_qty, ask_px, ask_qty) returning (kind, side, qty, price, ref, orig): ")
    assert re.search(says, text) and "\n" not in text and "\x1b" not in text


@njit
def _float_price(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):
    if bid_px < 0:
        return 0, 0, 0, 0.0, 0, 0
    return 1, 0, 100, bid_px + 0.5, 1, 0


@njit
def _bool_kind(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):
    return bid_px > 0, 0, 100, bid_px, 1, 0


_NOT_INTEGERS = [(_float_price, "price as float64"), (_bool_kind, "kind as bool")]


@pytest.mark.parametrize("fn, says", _NOT_INTEGERS)
def test_numba_strategy_address_result_not_integers_strategy_error_before_any_call(fn, says):
    from obook.live.strategy import StrategyError

    with pytest.raises(StrategyError) as e:
        numba_strategy(fn, state=np.zeros(2, np.int64)).address
    assert str(e.value) == (f"numba strategy {fn.__name__}: cannot be compiled into the live loop as fn(state, locate, "
                            "time, bid_px, bid_qty, ask_px, ask_qty) returning (kind, side, qty, price, ref, orig): "
                            f"it returns {says}, not an integer")


@pytest.mark.parametrize("fn, says", _NOT_INTEGERS)
def test_replay_orders_numba_strategy_result_not_integers_strategy_error_nothing_sent(day, fn, says):
    from obook.live.strategy import StrategyError

    s = numba_strategy(fn, state=np.zeros(2, np.int64))
    with pytest.raises(StrategyError, match=f"it returns {says}, not an integer"):
        replay_orders(day, s)


@pytest.mark.parametrize("state, says", [(np.full(3, 0.5), "whole numbers of 64 bits"),
                                         (np.zeros((2, 3), np.int64), r"one row of int64 \(np.zeros\(n, np.int64\)\), "
                                                                      r"not an array of shape \(2, 3\)")])
def test_numba_strategy_state_not_a_row_of_whole_numbers_obook_error(state, says):
    from obook.errors import ObookError

    with pytest.raises(ObookError, match=f"a compiled strategy's state must be {says}"):
        numba_strategy(_float_price, state=state)


def test_numba_strategy_state_of_whole_floats_or_a_strided_view_taken_as_int64_copy():
    assert list(numba_strategy(_float_price, state=np.full(3, 2.0)).state) == [2, 2, 2]
    given = np.arange(6, dtype=np.int64)
    s = numba_strategy(_float_price, state=given[::2])
    assert s.state.dtype == np.int64 and list(s.state) == [0, 2, 4] and s.state.flags.c_contiguous
    assert not np.shares_memory(s.state, given)


@njit
def _stateless(locate, time, bid_px, bid_qty, ask_px, ask_qty):
    return 0, 0, 0, 0, 0, 0


@pytest.mark.parametrize("fn, state, says", [
    (_float_price, None, "numba strategy _float_price: takes state first (7 arguments): give its state, "
                         "numba_strategy(fn, state=np.zeros(n, np.int64))"),
    (_stateless, np.zeros(2, np.int64), "numba strategy _stateless: takes no state (6 arguments): leave out state="),
])
def test_numba_strategy_state_given_or_not_as_the_function_takes_it_obook_error_saying_which(fn, state, says):
    from obook.errors import ObookError

    with pytest.raises(ObookError) as e:
        numba_strategy(fn, state=state)
    assert str(e.value) == says


@njit
def _kind_nine(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):
    if bid_px < 0:
        return 0, 0, 0, 0, 0, 0
    return 9, 0, 100, bid_px, 1, 0


@njit
def _side_five(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):
    if bid_px < 0:
        return 0, 0, 0, 0, 0, 0
    return 1, 5, 100, bid_px, 1, 0


_NOT_SENT = [(_kind_nine, r"returned kind 9, not 0 \(nothing\), 1 \(enter\), 2 \(replace\) or 3 \(cancel\)"),
             (_side_five, r"returned side 5, not 0 \(buy\) or 1 \(sell\)")]


@pytest.mark.parametrize("fn, says", _NOT_SENT)
def test_replay_orders_numba_strategy_result_no_order_strategy_error(day, fn, says):
    from obook.live.strategy import StrategyError

    with pytest.raises(StrategyError, match=r"strategy on message \d+ \(\w+\): " + says):
        replay_orders(day, numba_strategy(fn, state=np.zeros(1, np.int64)))


@pytest.mark.parametrize("fn, says", _NOT_SENT)
def test_hot_listener_numba_strategy_result_no_order_strategy_error_nothing_sent(day, fn, says):
    from obook.live.hot_listener import HotListener
    from obook.live.strategy import StrategyError

    a, b, _ = addresses()
    lst = HotListener(a, b, None, tables=(), strategy=numba_strategy(fn, state=np.zeros(1, np.int64)), idle_timeout=10)
    with sending(day, a, b, None, rate=20_000, linger=0), pytest.raises(StrategyError, match=r"strategy on \w+: " + says):
        lst.run()
    try:
        assert lst.stats()["orders"] == 0
    finally:
        lst.close()
