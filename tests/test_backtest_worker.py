"""The backtest worker's calls into its kernels (obook.backtest.worker): after a batch's first
call, a Python strategy's returns go through the kernel's compiled entry point, found again
after every growth; the tables are those of calls through the dispatcher every time."""

from __future__ import annotations

import re

import pytest

from obook.backtest import backtest, worker
from obook.backtest.orders import Order
from obook.gen.itch import write_itch


class Ladder:
    """Rests a bid a tick further from the best at each book event (hundreds of orders:
    the order keys, the levels and the output rows grow while the strategy is called),
    cancels every third, and reads the depth at each timer."""

    timer = 50_000_000

    def __init__(self):
        self.ref = 0

    def on_book(self, ctx):
        bid, _, _, _ = ctx.top()
        if bid is None or self.ref >= 600:
            return None
        self.ref += 1
        out = [Order("enter", ctx.instrument, "B", 100, bid - 100 * (self.ref % 97), ref=self.ref, tif="DAY")]
        if self.ref % 3 == 0:
            out.append(Order("cancel", ctx.instrument, ref=self.ref - 1))
        return out

    def on_timer(self, ctx):
        ctx.depth(5)


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("worker") / "day.itch"
    write_itch(path, 20_000, 3, seed=11)
    return str(path)


def _run(day):
    r = backtest(day, Ladder(), order_latency=30_000, response_latency=10_000, feed_latency=1_000)
    return {name: getattr(r, name).to_pylist() for name in ("fills", "orders", "events")}


def test_backtest_worker_direct_entries_tiny_buffers_same_tables_as_dispatcher(day, monkeypatch):
    monkeypatch.setattr(worker, "first_rows", lambda n: (64, 16))      # growth during the calls
    monkeypatch.setattr(worker, "HASH", 16)
    monkeypatch.setattr(worker, "LEVELS", 2)
    found = []
    entry_of = worker._entry_of

    def spy(kernel, args):
        found.append(entry_of(kernel, args))
        return found[-1]
    monkeypatch.setattr(worker, "_entry_of", spy)
    direct = _run(day)
    compiled = [e for e in found if not hasattr(e, "py_func")]         # entry points, not dispatchers
    assert {e.__name__ for e in compiled} == {"bt_events", "bt_finish"} and len(found) > 3
    monkeypatch.setattr(worker, "_entry_of", lambda kernel, args: kernel)
    through_dispatcher = _run(day)
    assert len(direct["orders"]) > 300 and direct["events"]
    assert direct == through_dispatcher


BOOM_DAY = """Time,Ticker,Order,T,Shares,Price
1,AAA,a,S,100,1000
2,AAA,x,B,100,990
6,AAA,c,S,100,1000
11,AAA,a,E,100,1000
"""


class Boom:
    """Sends one order at its first book, then raises in ``where`` (on_book at its second
    call, on_order at the first response, on_timer at the first timer)."""

    timer = 5_000_000

    def __init__(self, where):
        self.where, self.books = where, 0

    def on_book(self, ctx):
        self.books += 1
        if self.where == "on_book" and self.books == 2:
            raise ValueError("boom")
        return [Order("enter", "AAA", "B", 10, 980, ref=1)] if self.books == 1 else None

    def on_order(self, ctx, update):
        if self.where == "on_order":
            raise ValueError("boom")

    def on_timer(self, ctx):
        if self.where == "on_timer":
            raise ValueError("boom")


def boom_top(top):
    raise ValueError("boom")


@pytest.mark.parametrize("strategy, call", [
    (Boom("on_book"), "Boom.on_book"),
    (Boom("on_order"), "Boom.on_order"),
    (Boom("on_timer"), "Boom.on_timer"),
    (boom_top, "boom_top(top)"),
])
def test_call_strategy_that_raises_is_error_naming_strategy_and_method(tmp_path, strategy, call):
    from obook.backtest import StrategyError

    feed = tmp_path / "day.csv"
    feed.write_text(BOOM_DAY)
    with pytest.raises(StrategyError, match=rf"^the strategy {re.escape(call)} raised ValueError: boom \(at time ") as e:
        backtest(str(feed), strategy, format="csv")
    assert e.value.partial is not None


def test_call_strategy_returning_no_list_is_error_naming_strategy_and_method(tmp_path):
    from obook.backtest import StrategyError

    class Text:
        def on_book(self, ctx):
            return "enter"

    feed = tmp_path / "day.csv"
    feed.write_text(BOOM_DAY)
    with pytest.raises(StrategyError, match=r"^the strategy Text.on_book returned 'enter', not a list of orders"):
        backtest(str(feed), Text(), format="csv")
