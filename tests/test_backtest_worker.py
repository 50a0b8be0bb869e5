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
    assert {e.__name__ for e in compiled} == {"bt_events", "bt_finish"}     # kept through the growths
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


def _arrays_of_every_kind():
    import numpy as np

    base = np.arange(24, dtype=np.int64).reshape(4, 6)
    readonly = base.copy()
    readonly.flags.writeable = False
    unaligned = np.frombuffer(bytearray(8 * 24 + 1), dtype=np.int64, offset=1).reshape(4, 6)
    return [base, base.copy(), base.T, np.asfortranarray(base), base[:, ::2], base[::2], readonly,
            unaligned, base.astype(np.int32), base.astype(np.float64), base.ravel(), base.ravel()[::3],
            np.zeros((0, 6), np.int64), np.zeros((1, 1), np.int64), np.zeros(5, np.int64)]


def test_array_kind_equal_kinds_have_one_numba_type():
    """Two arrays of one kind have the same numba type (so a compiled entry found for the one
    takes the other)."""
    arrays = _arrays_of_every_kind()
    assert len({worker.array_kind(a) for a in arrays}) >= 8
    _assert_one_kind_one_type(arrays, worker.array_kind)


def _assert_one_kind_one_type(values, kind):
    """Values of one ``kind`` have one numba type."""
    from numba import typeof

    for x in values:
        for y in values:
            if kind(x) == kind(y):
                assert typeof(x) == typeof(y), (typeof(x), typeof(y))


class Quiet:
    """Reads the top of each book at its timer, sends nothing."""

    timer = 1_000_000_000

    def on_timer(self, ctx):
        ctx.top()


@pytest.fixture(scope="module")
def long_day(tmp_path_factory):
    path = tmp_path_factory.mktemp("worker") / "long.itch"
    write_itch(path, 250_000, 3, seed=5)
    return str(path)


def _batches_and_lookups(day, monkeypatch):
    """The backtest's tables and its counts: feed batches, lookups of compiled entries, and
    the times its named state was made anew (a growth, new books: entries looked up again)."""
    counts = {"batches": 0, "lookups": 0, "state": 0}
    entry_of, batch, named = worker._entry_of, worker.BacktestWorker.batch, worker.BacktestWorker._args

    def counted_entry_of(kernel, args):
        counts["lookups"] += 1
        return entry_of(kernel, args)

    def counted_batch(self, *args):
        counts["batches"] += 1
        return batch(self, *args)

    def counted_args(self):
        counts["state"] += self._named is None
        return named(self)
    monkeypatch.setattr(worker, "_entry_of", counted_entry_of)
    monkeypatch.setattr(worker.BacktestWorker, "batch", counted_batch)
    monkeypatch.setattr(worker.BacktestWorker, "_args", counted_args)
    r = backtest(day, Quiet(), feed_latency=1_000)
    return {t: r.table(t).to_pylist() for t in ("events", "positions")}, counts


def test_backtest_worker_batches_and_growths_of_one_kind_compiled_entry_found_once(long_day, monkeypatch):
    """Batch after batch of events arrays of one kind, and growth after growth of arrays of
    the same kinds, each kernel's compiled entry is looked up once (the day's and the
    end's kernels), not again at every batch or growth."""
    _, counts = _batches_and_lookups(long_day, monkeypatch)
    assert counts["batches"] >= 5 and counts["state"] >= 10, counts
    assert counts["lookups"] == 2, counts


def test_state_kind_equal_kinds_have_one_numba_type():
    """Named tuples of arrays (and scalars) of one state_kind have one numba type."""
    from collections import namedtuple

    import numpy as np

    Pair = namedtuple("Pair", "a b")
    arrays = _arrays_of_every_kind()
    values = [Pair(a, b) for a in arrays[:6] for b in arrays[5:9]]
    values += [(a, 0, 1.5) for a in arrays[:4]] + [Pair(arrays[0], (arrays[1], 7)), Pair(arrays[0], (arrays[1], 7.0)),
                                                     np.int32(3), 3, (arrays[0], np.int32(3))]
    _assert_one_kind_one_type(values, worker.state_kind)


def test_backtest_worker_batch_of_another_kind_typed_again_same_tables(long_day, monkeypatch):
    """A batch whose arrays are of another kind than the last batch's is typed again through
    the kernel's dispatcher (more lookups); the tables are those of the plain run."""
    plain, counted = _batches_and_lookups(long_day, monkeypatch)
    plain_counts = dict(counted)        # (the counters of the plain run count on in the next)
    kind, seen = worker.array_kind, []

    def every_batch_another(a):
        seen.append(a)
        return (len(seen) // 2, kind(a))        # the events' and the book map's: one kind a batch
    monkeypatch.setattr(worker, "array_kind", every_batch_another)
    mixed, counts = _batches_and_lookups(long_day, monkeypatch)
    assert counts["lookups"] >= plain_counts["lookups"] + counts["batches"] - 2, (counts, plain_counts)
    assert mixed == plain


class HearsAsk:
    """Offers 50 at the best ask once; remembers each update's time and when it heard it."""

    def __init__(self):
        self.sent, self.heard = False, []

    def on_book(self, ctx):
        bid, _, ask, _ = ctx.top()
        if self.sent or bid is None or ask is None:
            return None
        self.sent = True
        return [Order("enter", "AAA", "S", 50, ask, ref=1, tif="GTC")]

    def on_order(self, ctx, update):
        self.heard.append((update.event, update.time, ctx.time))


def test_call_order_update_time_is_the_venues_time_of_the_event(tmp_path):
    day = tmp_path / "day.csv"      # a, then ours (at the venue at 5), then c: a trades, then c (80)
    day.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1000\n3,AAA,x,B,100,990\n"
                   "6,AAA,c,S,100,1000\n11,AAA,a,E,100,1000\n13,AAA,c,E,80,1000\n")
    s = HearsAsk()
    r = backtest(str(day), s, format="csv", order_latency=2_000_000, response_latency=1_000_000)
    # sent at 3, at the venue at 5, filled at 13: each heard a response latency (1 ms) later
    assert s.heard == [("accepted", 5, 6), ("rested", 5, 6), ("filled", 13, 14)]
    said = [e for e in r.events.to_pylist() if e["event"] != "queue"]
    assert [(e, t) for e, t, _ in s.heard] == [(e["event"], e["time"]) for e in said]
