"""The backtest worker's calls into its kernels (obook.backtest.worker): after a batch's first
call, a Python strategy's returns go through the kernel's compiled entry point, found again
after every growth; the tables are those of calls through the dispatcher every time."""

from __future__ import annotations

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
