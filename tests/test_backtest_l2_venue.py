"""The L2 venue's answers to own instructions are the order-level venue's: the same
instructions through both backtests give the same event rows."""

from __future__ import annotations

import pytest

from obook.backtest import backtest
from obook.backtest.orders import EVENT_NAMES, Order
from test_backtest_l2 import QUEUE_DAY, l2_table

# the order-level day of QUEUE_DAY's first rows: an ask of 1010 x 100 and bids at 1000
MBO_DAY = "Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1010\n2,AAA,b,B,100,1000\n3,AAA,c,B,100,1000\n" \
          "4,AAA,d,B,100,990\n"
SAME = ["ref", "event", "side", "price", "quantity", "remaining", "shares_ahead", "reason", "row"]


def both(tmp_path, l2_strategy, mbo_strategy, l2_run=None, mbo_run=None):
    """The event rows (SAME columns) of an L2 backtest of QUEUE_DAY with ``l2_strategy`` and of
    an order-level one of MBO_DAY with ``mbo_strategy`` (each with its own keyword arguments)."""
    day = tmp_path / "day.csv"
    day.write_text(MBO_DAY)
    l2 = backtest(l2_table(QUEUE_DAY), l2_strategy, **(l2_run or {})).events.select(SAME).to_pylist()
    mbo = backtest(str(day), mbo_strategy, format="csv", **(mbo_run or {})).events.select(SAME).to_pylist()
    return l2, mbo


class Reuse:
    """A passive buy of 10 (ref 1) at its first book; at its second, ``qty`` more with ref 1
    again (on the other side when ``side`` is "S"); what ``ctx.orders`` holds at each."""

    def __init__(self, side="B", qty=5):
        self.books, self.side, self.qty, self.seen, self.heard = 0, side, qty, [], []

    def on_book(self, ctx):
        self.books += 1
        self.seen.append({ref: (o.side, o.remaining) for ref, o in ctx.orders.items()})
        ask = ctx.top()[2]
        if self.books == 1:
            return [Order("enter", "AAA", "B", 10, ask - 20, ref=1)]
        if self.books == 2:
            return [Order("enter", "AAA", self.side, self.qty, ask - 20 if self.side == "B" else ask + 20, ref=1)]
        return None

    def on_order(self, ctx, update):
        self.heard.append((update.ref, update.event, update.qty))


def test_l2_venue_new_order_of_live_id_rejected_duplicate_as_order_level(tmp_path):
    for side in ("B", "S"):
        l2_strategy, mbo_strategy = Reuse(side), Reuse(side)
        l2, mbo = both(tmp_path, l2_strategy, mbo_strategy)
        assert l2 == mbo
        assert [(e["ref"], e["event"], e["quantity"], e["reason"]) for e in l2] == [
            (1, "accepted", 10, None), (1, "rested", 10, None), (1, "rejected", 5, "duplicate order id"),
            (1, "expired", 10, "end of session")]
        assert l2[2]["side"] == side
        # the strategy still holds the live order of 10 after the duplicate's rejection
        assert l2_strategy.seen[-1] == mbo_strategy.seen[-1] == {1: ("B", 10)}
        assert l2_strategy.heard[2] == (1, "rejected", 5)


class ReuseDone:
    """A buy of 10 at the ask (filled at once) with ref 1, then a passive buy of 5 with ref 1."""

    def __init__(self):
        self.books, self.seen = 0, []

    def on_book(self, ctx):
        self.books += 1
        self.seen.append({ref: o.remaining for ref, o in ctx.orders.items()})
        ask = ctx.top()[2]
        if self.books == 1:
            return [Order("enter", "AAA", "B", 10, ask, ref=1, tif="IOC")]
        if self.books == 2:
            return [Order("enter", "AAA", "B", 5, ask - 20, ref=1)]
        return None


def test_l2_venue_new_order_of_done_id_rejected_duplicate_as_order_level(tmp_path):
    l2_strategy = ReuseDone()
    l2, mbo = both(tmp_path, l2_strategy, ReuseDone())
    assert l2 == mbo
    assert [(e["event"], e["quantity"], e["reason"]) for e in l2] == [
        ("accepted", 10, None), ("filled", 10, None), ("rejected", 5, "duplicate order id")]
    assert l2_strategy.seen[-1] == {}


def test_l2_venue_refused_order_of_live_id_keeps_live_order_as_order_level(tmp_path):
    """A new order of a live ref that the risk gate refuses is not sent: the strategy still
    holds the live order, in both backtests."""
    from obook.live.risk import RiskGate

    day = tmp_path / "day.csv"
    day.write_text(MBO_DAY)
    l2_strategy, mbo_strategy = Reuse(qty=50), Reuse(qty=50)
    l2 = backtest(l2_table(QUEUE_DAY), l2_strategy, risk=RiskGate(max_qty=10))
    mbo = backtest(str(day), mbo_strategy, format="csv", risk=RiskGate(max_qty=10))
    assert l2.events.select(SAME).to_pylist() == mbo.events.select(SAME).to_pylist()
    assert l2.orders.column("refused").to_pylist() == [None, "size"]
    assert l2_strategy.seen[-1] == mbo_strategy.seen[-1] == {1: ("B", 10)}


class CancelGone:
    """An IOC buy below the ask (cancelled unfilled) with ref 1 and a cancel of ref 7, never
    sent; then a cancel and a replace of ref 1."""

    def __init__(self):
        self.books, self.heard = 0, []

    def on_book(self, ctx):
        self.books += 1
        ask = ctx.top()[2]
        if self.books == 1:
            return [Order("enter", "AAA", "B", 10, ask - 20, ref=1, tif="IOC"),
                    Order("cancel", "AAA", "B", 0, 0, ref=7)]
        if self.books == 2:
            return [Order("cancel", "AAA", "B", 0, 0, ref=1), Order("replace", "AAA", "B", 3, ask - 30, ref=2, orig=1)]
        return None

    def on_order(self, ctx, update):
        self.heard.append((update.ref, update.event, update.reason))


def test_l2_venue_cancel_or_replace_of_unknown_or_done_ref_rejected_as_order_level(tmp_path):
    l2_strategy, mbo_strategy = CancelGone(), CancelGone()
    l2, mbo = both(tmp_path, l2_strategy, mbo_strategy)
    assert l2 == mbo and l2_strategy.heard == mbo_strategy.heard
    assert [(e["ref"], e["event"], e["reason"]) for e in l2[2:]] == [
        (7, "rejected", "unknown order id"), (1, "rejected", "order is not live (filled, cancelled or expired)"),
        (1, "rejected", "order is not live (filled, cancelled or expired)")]
    assert [h[1] for h in l2_strategy.heard[2:]] == ["rejected"] * 3


def _orders(ctx):
    return {ref: (o.side, o.remaining, bool(o.pending)) for ref, o in ctx.orders.items()}


class TurnedAwayThenReuse:
    """At its first book, a buy of 200 at the ask (FOK, or post-only) with ref 1 and, behind
    it in the same call, a sell of 10 above the ask with ref 1 again; what ``ctx.orders``
    holds at each call."""

    def __init__(self, first):
        self.books, self.first, self.seen, self.heard = 0, first, [], []

    def on_book(self, ctx):
        self.books += 1
        self.seen.append(_orders(ctx))
        ask = ctx.top()[2]
        if self.books == 1:
            flags = dict(tif="FOK") if self.first == "FOK" else dict(post_only=True)
            return [Order("enter", "AAA", "B", 200, ask, ref=1, **flags), Order("enter", "AAA", "S", 10, ask + 20, ref=1)]
        return None

    def on_order(self, ctx, update):
        self.heard.append((update.ref, update.event, _orders(ctx)))


@pytest.mark.parametrize("first, reason", [("FOK", "fill-or-kill order cannot fill completely"),
                                           ("post-only", "post-only order would take liquidity")])
def test_l2_venue_turned_away_order_frees_its_ref_for_the_order_sent_behind_it_as_order_level(tmp_path, first,
                                                                                              reason):
    l2_strategy, mbo_strategy = TurnedAwayThenReuse(first), TurnedAwayThenReuse(first)
    l2, mbo = both(tmp_path, l2_strategy, mbo_strategy)
    assert l2 == mbo
    assert [(e["ref"], e["event"], e["side"], e["quantity"], e["reason"]) for e in l2] == [
        (1, "rejected", "B", 200, reason), (1, "accepted", "S", 10, None), (1, "rested", "S", 10, None),
        (1, "expired", "S", 10, "end of session")]
    for s in (l2_strategy, mbo_strategy):
        # the turned-away buy's rejection leaves the sell of ref 1 in flight, then live
        assert s.heard[:3] == [(1, "rejected", {1: ("S", 10, True)}), (1, "accepted", {1: ("S", 10, False)}),
                               (1, "rested", {1: ("S", 10, False)})]
        assert s.seen[-1] == {1: ("S", 10, False)}


class CancelAndReplace:
    """A passive buy of 10 with ref 1 at its first book; at its second, a cancel of ref 1 and
    a replace of ref 1 by ref 2 (in ``order``: "cancel first", "replace first"; or the replace,
    then "cancel 2" or "replace 1 by 3": a cancel of ref 2, a replace of ref 1 by ref 3 of 4
    shares); what ``ctx.orders`` holds at each call and the refs it hears."""

    def __init__(self, order):
        self.books, self.order, self.seen, self.heard = 0, order, [], []

    def on_book(self, ctx):
        self.books += 1
        self.seen.append(_orders(ctx))
        ask = ctx.top()[2]
        if self.books == 1:
            return [Order("enter", "AAA", "B", 10, ask - 20, ref=1)]
        if self.books == 2:
            cancel = Order("cancel", "AAA", "B", 0, 0, ref=2 if self.order == "cancel 2" else 1)
            if self.order == "replace 1 by 3":
                cancel = Order("replace", "AAA", "B", 4, ask - 40, ref=3, orig=1)
            replace = Order("replace", "AAA", "B", 3, ask - 30, ref=2, orig=1)
            return [cancel, replace] if self.order == "cancel first" else [replace, cancel]
        return None

    def on_order(self, ctx, update):
        self.heard.append((update.ref, update.event, _orders(ctx)))


def _cancel_and_replace(tmp_path, order):
    """CancelAndReplace(order) through both backtests: (the L2 one's strategy, the
    order-level one's, the event rows, the same in both)."""
    l2_strategy, mbo_strategy = CancelAndReplace(order), CancelAndReplace(order)
    # responses reach the strategy two books after the venue (the L2 day's rows are 1,000 ns apart)
    l2, mbo = both(tmp_path, l2_strategy, mbo_strategy, dict(response_latency=2_000),
                   dict(response_latency=2 * 1_000_000))
    assert l2 == mbo
    return l2_strategy, mbo_strategy, l2


@pytest.mark.parametrize("order, heard", [
    ("cancel first", [(1, "accepted"), (1, "rested"), (1, "cancelled"), (1, "rejected")]),
    ("replace first", [(1, "accepted"), (1, "rested"), (2, "modified"), (2, "rested"), (1, "rejected")]),
    ("cancel 2", [(1, "accepted"), (1, "rested"), (2, "modified"), (2, "rested"), (2, "cancelled")])])
def test_l2_venue_replace_renames_the_order_when_accepted_as_order_level(tmp_path, order, heard):
    l2_strategy, mbo_strategy, l2 = _cancel_and_replace(tmp_path, order)
    for s in (l2_strategy, mbo_strategy):
        assert [h[:2] for h in s.heard] == heard
        # the cancel and the replace sent, neither answered: the order keeps ref 1
        assert list(s.seen[2]) == [1]
    if order == "cancel first":         # the replace is rejected: every response names ref 1, as the events do
        assert [h[0] for h in l2_strategy.heard] == [e["ref"] for e in l2]
    else:                               # accepted: the order is ref 2 from its modified response on
        assert mbo_strategy.heard[2][2] == l2_strategy.heard[2][2] == {2: ("B", 3, False)}


@pytest.mark.parametrize("order, qty", [("replace first", 0), ("replace 1 by 3", 4)])
def test_l2_venue_cancel_or_replace_of_the_old_ref_after_an_accepted_replace_rejected_not_live_as_order_level(
        tmp_path, order, qty):
    """Once the venue applied the replace of ref 1 by ref 2, ref 1 names no live order: a
    cancel or a replace of ref 1 sent after the replace is rejected in both backtests, heard
    under ref 1, and the order goes on as ref 2 (the events name it by ref 1, its first new
    order's)."""
    l2_strategy, mbo_strategy, l2 = _cancel_and_replace(tmp_path, order)
    assert [(e["ref"], e["event"], e["side"], e["quantity"], e["remaining"], e["reason"]) for e in l2[2:]] == [
        (1, "modified", "B", 3, 3, None), (1, "rested", "B", 3, 3, None),
        (1, "rejected", "B", qty, 0, "order is not live (filled, cancelled or expired)"),
        (1, "expired", "B", 3, 0, "end of session")]
    for s in (l2_strategy, mbo_strategy):     # the last response: the order is live as ref 2 still
        assert s.heard[4:] == [(1, "rejected", {2: ("B", 3, False)})]


class Types:
    """A passive buy of 10 at its first book; the types of each ``ctx.orders`` entry's
    fields at every update of it."""

    def __init__(self):
        self.books, self.types = 0, set()

    def on_book(self, ctx):
        self.books += 1
        if self.books == 1:
            return [Order("enter", "AAA", "B", 10, ctx.top()[2] - 20, ref=1)]

    def on_order(self, ctx, update):
        for o in ctx.orders.values():
            self.types.add(tuple(type(getattr(o, f)) for f in
                                 ("ref", "symbol", "side", "price", "remaining", "filled", "pending")))


def test_context_orders_fields_plain_python_types_in_both_backtests(tmp_path):
    l2_strategy, mbo_strategy = Types(), Types()
    both(tmp_path, l2_strategy, mbo_strategy)
    assert l2_strategy.types == mbo_strategy.types == {(int, str, str, int, int, int, bool)}


def _replace_then_cancel_old():
    from numba import njit

    from obook._kernels.backtest_layout import (C_ASK, C_EVENT, C_KIND, C_REF, CALL_ORDER, Q_ACT, Q_MARKET, Q_ORIG,
                                                Q_POST, Q_PRICE, Q_QTY, Q_REF, Q_SIDE, Q_TB, Q_TIF)
    from obook._kernels.simulate_layout import OP_CANCEL, OP_MODIFY, OP_NEW, TIF_DAY

    @njit
    def strategy(c, lo, refkey, state, out):
        # CancelAndReplace("replace first"): state[0] its book calls, state[1] the responses
        # it heard, each (ref, event) from state[2] on
        if c[C_KIND] == CALL_ORDER:
            n = state[1]
            state[2 + 2 * n], state[3 + 2 * n], state[1] = c[C_REF], c[C_EVENT], n + 1
            return 0
        state[0] += 1
        if state[0] > 2:
            return 0
        out[0, Q_SIDE], out[0, Q_TIF], out[0, Q_MARKET], out[0, Q_POST], out[0, Q_TB] = 0, TIF_DAY, 0, 0, -1
        if state[0] == 1:
            out[0, Q_ACT], out[0, Q_QTY], out[0, Q_PRICE], out[0, Q_REF] = OP_NEW, 10, c[C_ASK] - 20, 1
            out[0, Q_ORIG] = 0
            return 1
        out[0, Q_ACT], out[0, Q_QTY], out[0, Q_PRICE], out[0, Q_REF] = OP_MODIFY, 3, c[C_ASK] - 30, 2
        out[0, Q_ORIG] = 1
        out[1, Q_ACT], out[1, Q_REF], out[1, Q_ORIG], out[1, Q_TB] = OP_CANCEL, 1, 0, -1
        return 2

    return strategy


def test_compiled_strategy_cancel_of_the_old_ref_after_an_accepted_replace_rejected_as_python(tmp_path):
    """A compiled strategy's cancel of ref 1 sent after its replace by ref 2 is rejected as a
    Python strategy's is, and the strategy hears it under ref 1 (C_REF)."""
    import numpy as np

    from obook.backtest import compiled

    day = tmp_path / "day.csv"
    day.write_text(MBO_DAY)
    state = np.zeros(64, np.int64)
    fn = compiled(_replace_then_cancel_old(), state, on=("bbo", "orders"))
    got = backtest(str(day), fn, format="csv", response_latency=2 * 1_000_000).events.select(SAME).to_pylist()
    python = backtest(str(day), CancelAndReplace("replace first"), format="csv",
                      response_latency=2 * 1_000_000).events.select(SAME).to_pylist()
    assert got == python
    heard = [(int(state[2 + 2 * i]), EVENT_NAMES[state[3 + 2 * i]]) for i in range(state[1])]
    assert heard == [(1, "accepted"), (1, "rested"), (2, "modified"), (2, "rested"), (1, "rejected")]


def _refused_replace_then_cancel_new():
    from numba import njit

    from obook._kernels.backtest_layout import (C_ASK, C_KIND, CALL_ORDER, Q_ACT, Q_MARKET, Q_ORIG, Q_POST, Q_PRICE,
                                                Q_QTY, Q_REF, Q_SIDE, Q_TB, Q_TIF)
    from obook._kernels.simulate_layout import OP_CANCEL, OP_MODIFY, OP_NEW, TIF_DAY

    @njit
    def strategy(c, lo, refkey, state, out):
        # RefusedReplace: a buy of 10 (ref 1); then its replace by ref 2 for 50 shares, which
        # the risk gate refuses, and a cancel of ref 2
        if c[C_KIND] == CALL_ORDER:
            return 0
        state[0] += 1
        if state[0] > 2:
            return 0
        out[0, Q_SIDE], out[0, Q_TIF], out[0, Q_MARKET], out[0, Q_POST], out[0, Q_TB] = 0, TIF_DAY, 0, 0, -1
        if state[0] == 1:
            out[0, Q_ACT], out[0, Q_QTY], out[0, Q_PRICE], out[0, Q_REF], out[0, Q_ORIG] = OP_NEW, 10, c[C_ASK] - 20, 1, 0
            return 1
        out[0, Q_ACT], out[0, Q_QTY], out[0, Q_PRICE], out[0, Q_REF], out[0, Q_ORIG] = OP_MODIFY, 50, c[C_ASK] - 30, 2, 1
        out[1, Q_ACT], out[1, Q_REF], out[1, Q_ORIG], out[1, Q_TB] = OP_CANCEL, 2, 0, -1
        return 2

    return strategy


class RefusedReplace:
    """A buy of 10 (ref 1) at its first book; at its second, its replace by ref 2 for 50
    shares (refused by a risk gate of 20 shares at most) and a cancel of ref 2."""

    def __init__(self):
        self.books = 0

    def on_book(self, ctx):
        self.books += 1
        ask = ctx.top()[2]
        if self.books == 1:
            return [Order("enter", "AAA", "B", 10, ask - 20, ref=1)]
        if self.books == 2:
            return [Order("replace", "AAA", "B", 50, ask - 30, ref=2, orig=1), Order("cancel", "AAA", "B", 0, 0, ref=2)]
        return None


def test_compiled_strategy_replace_refused_by_risk_leaves_its_new_ref_unknown_as_python(tmp_path):
    """A replace the risk gate refused never reaches the venue, so its new ref names no
    order: a compiled strategy's cancel of it is not sent (``unknown_refs``), a Python
    strategy's is rejected as an unknown id; in both the order of ref 1 lives on."""
    import numpy as np

    from obook.backtest import compiled
    from obook.live.risk import RiskGate

    day = tmp_path / "day.csv"
    day.write_text(MBO_DAY)
    run = dict(format="csv", risk=RiskGate(max_qty=20, band_bps=10**6, max_notional=10**18))
    fast = backtest(str(day), compiled(_refused_replace_then_cancel_new(), np.zeros(64, np.int64), on=("bbo",)), **run)
    slow = backtest(str(day), RefusedReplace(), **run)
    rows = lambda r: [(e["ref"], e["event"], e["reason"]) for e in r.events.to_pylist()]     # noqa: E731
    assert rows(fast) == [(1, "accepted", None), (1, "rested", None), (1, "expired", "end of session")]
    assert rows(slow) == [(1, "accepted", None), (1, "rested", None), (2, "rejected", "unknown order id"),
                          (1, "expired", "end of session")]
    assert fast.summary["unknown_refs"] == 1 and fast.summary["refused"] == slow.summary["refused"] == 1
