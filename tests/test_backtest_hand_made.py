"""obook.backtest on hand-made days whose answers are worked out by hand (CSV feeds: time in
ms, so 1 ms of latency = 1_000_000 ns)."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from obook.backtest import Fees, backtest
from obook.backtest.orders import Order
from obook.errors import ObookError

HEAD = "Time,Ticker,Order,T,Shares,Price\n"
MS = 1_000_000


def _feed(tmp_path, lines: str) -> str:
    p = tmp_path / "day.csv"
    p.write_text(HEAD + lines)
    return str(p)


def _rows(table: pa.Table, *cols):
    return [tuple(r[c] for c in cols) for r in table.to_pylist()]


class Script:
    """Sends ``plan[i]`` at its i-th book call once both sides exist; records what it saw."""

    def __init__(self, plan, cancel_at=None):
        self.plan = list(plan)
        self.cancel_at = cancel_at
        self.seen, self.updates = [], []
        self.sent = []

    def on_book(self, ctx):
        top = ctx.top()
        self.seen.append((ctx.time, top))
        if top[0] is None or top[2] is None:
            return None
        if self.cancel_at is not None and ctx.time >= self.cancel_at and self.sent and ctx.orders:
            self.cancel_at = None
            return [Order("cancel", "AAA", ref=self.sent[0])]
        if self.plan:
            o = self.plan.pop(0)
            self.sent.append(o.ref)
            return [o]
        return None

    def on_order(self, ctx, update):
        self.updates.append((ctx.time, update.event, update.qty, update.fill_price, ctx.position()))


def test_backtest_quote_joins_is_overtaken_then_filled_after_queue_ahead_trades(tmp_path):
    feed = _feed(tmp_path, """1,AAA,a,S,100,1000
2,AAA,b,S,200,1000
3,AAA,x,B,100,990
6,AAA,c,S,100,1000
7,AAA,d,S,100,999
10,AAA,d,E,100,999
11,AAA,a,E,100,1000
12,AAA,b,E,200,1000
13,AAA,c,E,80,1000
""")
    s = Script([Order("enter", "AAA", "S", 50, 1000, ref=7, tif="GTC")])
    r = backtest(feed, s, format="csv", order_latency=2 * MS, response_latency=1 * MS,
                 fees=Fees(maker="-0.2", taker="0.3"))
    # sent at 3 (the first book with both sides), at the venue at 5 behind a and b (300 ahead);
    # d overtakes at 999 and trades away; a and b trade (ahead 200, 0); c (behind us) trades 80:
    # we fill 50 first
    assert _rows(r.orders, "ref", "action", "side", "price", "quantity", "sent", "arrival") == [
        (7, "new", "S", 1000, 50, 3, 5)]
    assert _rows(r.events, "time", "event", "shares_ahead", "remaining") == [
        (5, "accepted", None, 50), (5, "rested", 300, 50), (11, "queue", 200, 50), (12, "queue", 0, 50),
        (13, "filled", 0, 0)]
    assert _rows(r.fills, "time", "ref", "side", "price", "quantity", "liquidity", "priority_differs", "fee") == [
        (13, 7, "S", 1000, 50, "maker", True, Decimal("-10.0000"))]
    # the strategy hears of it 1 ms later: accepted and rested at 6, filled at 14, short 50
    assert s.updates == [(6, "accepted", 50, None, 0), (6, "rested", 50, None, 0), (14, "filled", 50, 1000, -50)]
    # cash +50,000, rebate 10, mark at 13: bid 990, ask 1000 (c's 20 left) -> mid 995:
    # equity = 50,000 + 10 - 50 x 995 = 260
    # (the fill's mark, and the day's last at the same time)
    eq = r.equity.filter(pa.compute.equal(r.equity.column("time"), 13)).to_pylist()
    assert {(e["position"], e["cash"], e["fees"], e["mark"], e["equity"]) for e in eq} == {
        (-50, Decimal(50000), Decimal(-10), Decimal(995), Decimal(260))}
    assert r.summary["pnl"] == Decimal(260) and r.summary["fills"] == 1 and r.summary["fill_ratio"] == 1.0
    assert _rows(r.positions, "instrument", "position", "sold", "equity") == [("AAA", -50, 50, Decimal(260))]


CANCEL_DAY = """1,AAA,a,B,100,990
2,AAA,s,S,100,1000
7,AAA,b,B,100,990
8,AAA,t,S,100,995
9,AAA,b,E,100,990
"""


def test_backtest_cancel_arrives_too_late_because_of_latency(tmp_path):
    feed = _feed(tmp_path, CANCEL_DAY.replace("7,AAA,b", "6,AAA,a,E,100,990\n7,AAA,b"))
    s = Script([Order("enter", "AAA", "B", 100, 990, ref=1, tif="GTC")], cancel_at=8)
    r = backtest(feed, s, format="csv", order_latency=3 * MS, response_latency=1 * MS)
    # the buy reaches the venue at 5 behind a (100 ahead); a trades at 6 (0 ahead); the
    # strategy sees the new ask at 8 and cancels; b (behind us) trades at 9, before the
    # cancel arrives at 11: we fill 100 at 990, the cancel finds nothing live
    assert _rows(r.orders, "action", "sent", "arrival") == [("new", 2, 5), ("cancel", 8, 11)]
    assert _rows(r.events, "time", "event", "shares_ahead", "reason") == [
        (5, "accepted", None, None), (5, "rested", 100, None), (6, "queue", 0, None), (9, "filled", 0, None),
        (11, "rejected", None, "order is not live (filled, cancelled or expired)")]
    assert _rows(r.fills, "time", "price", "quantity", "liquidity") == [(9, 990, 100, "maker")]
    # bought 100 at 990; after 9 the bids are gone: the mark is the ask alone, 995
    last = r.positions.to_pylist()[0]
    assert (last["position"], last["cash"], last["mark"], last["equity"]) == (
        100, Decimal(-99000), Decimal(995), Decimal(500))
    assert [u[1] for u in s.updates] == ["accepted", "rested", "filled", "rejected"]
    # with no order latency the same cancel is in time
    s = Script([Order("enter", "AAA", "B", 100, 990, ref=1, tif="GTC")], cancel_at=8)
    r = backtest(feed, s, format="csv")
    assert r.fills.num_rows == 0
    assert _rows(r.events, "time", "event")[-1] == (8, "cancelled")


def test_backtest_ioc_sees_a_stale_book(tmp_path):
    feed = _feed(tmp_path, """1,AAA,a,S,100,1000
2,AAA,x,B,100,990
4,AAA,a,D,0,1000
5,AAA,c,S,100,1005
""")
    s = Script([Order("enter", "AAA", "B", 100, 1000, ref=1, tif="IOC")])
    r = backtest(feed, s, format="csv", feed_latency=5 * MS, order_latency=1 * MS, response_latency=1 * MS)
    # the strategy sees the book 5 ms late: at 7 it sees x's bid and a's ask at 1000 (gone at
    # the venue since 4) and sends the IOC; it arrives at 8 to an ask of 1005: nothing fills
    assert s.seen[:2] == [(6, (None, None, 1000, 100)), (7, (990, 100, 1000, 100))]
    assert _rows(r.orders, "tif", "sent", "arrival") == [("IOC", 7, 8)]
    assert _rows(r.events, "time", "event", "remaining", "reason") == [
        (8, "accepted", 100, None), (8, "cancelled", 0, "unfilled rest of an IOC, FOK or market order")]
    assert r.fills.num_rows == 0 and r.summary["pnl"] == 0
    assert s.updates == [(9, "accepted", 100, None, 0), (9, "cancelled", 100, None, 0)]
    # without the feed latency the strategy sees the ask go (at 4) and the IOC at 2 fills at 1000
    s = Script([Order("enter", "AAA", "B", 100, 1000, ref=1, tif="IOC")])
    r = backtest(feed, s, format="csv", order_latency=1 * MS)
    assert _rows(r.fills, "time", "price", "quantity", "liquidity") == [(3, 1000, 100, "taker")]


def test_backtest_called_as_obook_backtest_equals_the_function(tmp_path):
    import obook

    feed = _feed(tmp_path, "1,AAA,a,S,100,1000\n3,AAA,x,B,100,990\n6,AAA,a,E,60,1000\n")

    def tables(run):
        r = run(feed, Script([Order("enter", "AAA", "B", 50, 1000, ref=1)]), format="csv", order_latency=MS)
        return {name: getattr(r, name).to_pylist() for name in ("orders", "fills", "equity")}, r.summary

    assert callable(obook.backtest)
    via_module, summary = tables(obook.backtest)
    assert (via_module, summary) == tables(backtest)
    assert summary["orders"] == 1


class Refill:
    """Sells 50 at 1000 once; after its first partial fill, replaces the rest with 50 again."""

    def __init__(self):
        self.sent = self.replaced = False

    def on_book(self, ctx):
        bid, _, ask, _ = ctx.top()
        if self.sent or bid is None or ask is None:
            return None
        self.sent = True
        return [Order("enter", "AAA", "S", 50, 1000, ref=7, tif="GTC")]

    def on_order(self, ctx, update):
        if update.event == "partially_filled" and not self.replaced:
            self.replaced = True
            return [Order("replace", "AAA", "S", 50, 1000, ref=8, orig=7)]
        return None


def test_backtest_fill_ratio_counts_replacement_shares_stays_at_most_one(tmp_path):
    feed = _feed(tmp_path, """1,AAA,a,S,100,1000
2,AAA,x,B,100,990
5,AAA,c,S,100,1000
6,AAA,a,E,100,1000
7,AAA,c,E,30,1000
11,AAA,c,E,70,1000
12,AAA,d,S,100,1000
13,AAA,d,E,50,1000
""")
    r = backtest(feed, Refill(), format="csv", order_latency=2 * MS, response_latency=1 * MS)
    # at the venue at 4 behind a; c (behind) trades 30 once a is gone: 30 of 50 filled; heard
    # at 8, the replacement (50 > the 20 left: to the back, behind c's 70) arrives at 10; c
    # trades away, d (behind) trades 50: 50 more. 80 filled of 100 offered (50 + 50)
    assert _rows(r.orders, "ref", "action", "quantity", "sent", "arrival") == [(7, "new", 50, 2, 4),
                                                                               (8, "modify", 50, 8, 10)]
    assert _rows(r.fills, "time", "quantity") == [(7, 30), (13, 50)]
    assert r.summary["filled_quantity"] == 80 and r.summary["fill_ratio"] == 0.8


class Ticking:
    """Counts its timer calls; stops a run that would call it without end at one time."""

    def __init__(self):
        self.calls = 0

    def on_timer(self, ctx):
        self.calls += 1
        if self.calls > 1000:
            raise RuntimeError("called again and again")
        return None


@pytest.mark.parametrize("timer, says", [(1_000, "timer 1000 ns: give 1000000 ns (the feed's time unit)"),
                                         (0.5, "timer 0.5 (a float): give an integer of ns"),
                                         (0, "timer 0 ns: give 1000000 ns (the feed's time unit)"),
                                         (-5 * MS, "timer -5000000 ns: give 1000000 ns"),
                                         (2**70, "to 604800000000000 ns (a week)"),
                                         (MS + MS // 2, "not a whole number of the feed's time unit")])
def test_backtest_timer_below_the_feed_unit_or_out_of_range_is_an_error(tmp_path, timer, says):
    feed = _feed(tmp_path, "1,AAA,a,S,100,1000\n3,AAA,x,B,100,990\n")
    with pytest.raises(ObookError) as e:
        backtest(feed, Ticking(), format="csv", timer=timer)
    assert says in str(e.value)


def test_backtest_timer_of_one_feed_unit_calls_every_unit(tmp_path):
    feed = _feed(tmp_path, "1,AAA,a,S,100,1000\n3,AAA,x,B,100,990\n")
    s = Ticking()
    backtest(feed, s, format="csv", timer=MS)
    assert 1 <= s.calls <= 4


def test_backtest_timer_start_without_a_timer_is_an_error(tmp_path):
    from obook.backtest import compiled

    feed = _feed(tmp_path, "1,AAA,a,S,100,1000\n3,AAA,x,B,100,990\n")
    with pytest.raises(ObookError, match="^timer_start 2: the strategy has no timer to start"):
        backtest(feed, lambda top: None, format="csv", timer_start=2)
    with pytest.raises(ObookError, match="^timer_start 2: the strategy has no timer to start"):
        backtest(feed, compiled(lambda *a: 0, timer_start=2), format="csv")


def test_backtest_timer_for_a_strategy_without_on_timer_is_an_error(tmp_path):
    feed = _feed(tmp_path, "1,AAA,a,S,100,1000\n3,AAA,x,B,100,990\n")
    with pytest.raises(ObookError, match="the strategy has no on_timer"):
        backtest(feed, lambda top: None, format="csv", timer=MS)
