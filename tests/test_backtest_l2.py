"""Backtests on L2 (market-by-price) days with the probabilistic queue model: hand-made
days whose answers are worked out by hand (a join at the back, a cancel split by the
model, a fill after the queue ahead trades away, latency), the same tables as the
order-level backtest's."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from obook.backtest import backtest
from obook.backtest.orders import Order
from obook.errors import ObookError

# (time ns, action, side, price, size, best bid, its shares); the ask stays 1010 x 100.
# A: shares added, C: cancelled, T: a trade (side: the aggressor's, A = a sell)
QUEUE_DAY = [
    (1000, "A", "B", 1000, 300, 1000, 300),      # the strategy joins behind 300
    (2000, "C", "B", 1000, 100, 1000, 200),      # 100 cancelled, nothing behind: all ahead -> 200
    (3000, "A", "B", 1000, 100, 1000, 300),      # 100 join behind -> ahead 200, behind 100
    (4000, "C", "B", 1000, 60, 1000, 240),       # 60 cancelled: 0.2 behind (power:2) -> ahead 152
    (5000, "T", "A", 1000, 152, 1000, 240),      # a sell of 152: the queue ahead trades away
    (5000, "F", "B", 1000, 152, 1000, 88),
    (6000, "T", "A", 1000, 30, 1000, 88),        # a sell of 30: fills 30 of the 50
    (6000, "F", "B", 1000, 30, 1000, 58),
    (7000, "A", "B", 1000, 10, 1000, 68),
]


def l2_table(rows, ask=(1010, 100)):
    cols = {k: [] for k in ("ts_recv", "ts_event", "action", "side", "price", "size", "symbol",
                            "bid_px_00", "bid_sz_00", "ask_px_00", "ask_sz_00")}
    for t, action, side, price, size, bid, bid_sz in rows:
        for k, v in zip(cols, (t, t, action, side, price, size, "AAA", bid, bid_sz, ask[0], ask[1])):
            cols[k].append(v)
    return pa.table(cols)


class JoinOnce:
    """Buys 50 at the best bid at its first book, GTC; remembers what it hears."""

    def __init__(self, cancel_at=None):
        self.sent, self.heard, self.cancel_at = False, [], cancel_at

    def on_book(self, ctx):
        bid = ctx.top()[0]
        if not self.sent:
            self.sent = True
            return [Order("enter", "AAA", "B", 50, bid, ref=1, tif="GTC")]
        if self.cancel_at is not None and ctx.time >= self.cancel_at and 1 in ctx.orders:
            self.cancel_at = None
            return [Order("cancel", "AAA", "B", 0, 0, ref=1)]
        return None

    def on_order(self, ctx, update):
        self.heard.append((ctx.time, update.event, update.remaining, ctx.position()))


def test_backtest_l2_join_cancel_split_and_fill_by_hand(tmp_path):
    s = JoinOnce()
    r = backtest(l2_table(QUEUE_DAY), s, interval=1e-6)
    ev = r.events.select(["time", "event", "remaining", "shares_ahead"]).to_pylist()
    assert ev[:2] == [{"time": 1000, "event": "accepted", "remaining": 50, "shares_ahead": None},
                      {"time": 1000, "event": "rested", "remaining": 50, "shares_ahead": 300}]
    assert ev[2] == {"time": 6000, "event": "partially_filled", "remaining": 20, "shares_ahead": 0}
    assert ev[3]["event"] == "expired" and ev[3]["remaining"] == 0
    fills = r.fills.select(["time", "side", "price", "quantity", "liquidity"]).to_pylist()
    assert fills == [{"time": 6000, "side": "B", "price": 1000, "quantity": 30, "liquidity": "maker"}]
    assert s.heard[1:3] == [(1000, "rested", 50, 0), (6000, "partially_filled", 20, 30)]
    # long 30 bought at 1000, marked at the mid 1005
    assert r.positions.to_pylist()[0]["equity"] == Decimal("150.0000")
    assert r.equity.column("equity").to_pylist()[-1] == Decimal("150.0000")
    pq.write_table(l2_table(QUEUE_DAY), tmp_path / "day.parquet")         # a Parquet file: the same
    again = backtest(str(tmp_path / "day.parquet"), JoinOnce(), interval=1e-6)
    assert again.fills.to_pylist() == r.fills.to_pylist()


def test_backtest_l2_parquet_cut_short_is_an_error_saying_so(tmp_path):
    pq.write_table(l2_table(QUEUE_DAY), tmp_path / "day.parquet")
    whole = (tmp_path / "day.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ObookError, match=r"cut\.parquet: a damaged Parquet file \(cut short\?\)"):
        backtest(str(tmp_path / "cut.parquet"), JoinOnce(), interval=1e-6)


@pytest.mark.parametrize("queue, filled", [
    ("power:2", 30),           # ahead 152 at the first trade: 152 + 30 reach the order
    ("risk-averse", 0),        # every cancel behind: ahead 200 at 4000, 48 after the trade, 18 after the next
    ("log", 14),               # log(101) / (log(101) + log(201)) = 0.465 behind: ahead 167.9 -> 15.9 -> fills 14
    ("Power:2", 30), ("RISK-AVERSE", 0),      # the words in any case
])
def test_backtest_l2_queue_models_differ_as_worked_out(queue, filled):
    r = backtest(l2_table(QUEUE_DAY), JoinOnce(), queue=queue)
    assert sum(r.fills.column("quantity").to_pylist()) == filled


def test_backtest_l2_cancel_too_late_with_latency():
    # the strategy cancels when it sees the book of 5000 (after the trade of 152); with a
    # 1500 ns order latency the cancel reaches the venue at 6500, after the fill at 6000
    s = JoinOnce(cancel_at=5000)
    r = backtest(l2_table(QUEUE_DAY), s, order_latency=1500)
    assert r.orders.select(["action", "sent", "arrival"]).to_pylist() == [
        {"action": "new", "sent": 1000, "arrival": 2500}, {"action": "cancel", "sent": 5000, "arrival": 6500}]
    # it joined at 2500 behind 200 (the book of 2000): 200 -> 300 (+100 behind) -> 240:
    # 0.2 of 60 behind -> 152 ahead; then as above
    assert r.fills.column("quantity").to_pylist() == [30]
    assert r.events.column("event").to_pylist()[-1] == "cancelled"
    fast = backtest(l2_table(QUEUE_DAY), JoinOnce(cancel_at=5000))
    assert fast.fills.num_rows == 0                                       # without latency: cancelled first


class SendOnce:
    """Sends the orders ``make(ask)`` makes of the best ask at its first book."""

    def __init__(self, make):
        self.make, self.done = make, False

    def on_book(self, ctx):
        if self.done:
            return None
        self.done = True
        return self.make(ctx.top()[2])


def Take():
    return SendOnce(lambda ask: [Order("enter", "AAA", "B", 150, ask, ref=1, tif="IOC")])


def test_backtest_l2_ioc_takes_the_visible_ask_and_fifo_refused():
    r = backtest(l2_table(QUEUE_DAY), Take())
    assert r.fills.select(["price", "quantity", "liquidity"]).to_pylist() == [
        {"price": 1010, "quantity": 100, "liquidity": "taker"}]
    assert r.events.column("event").to_pylist() == ["accepted", "partially_filled", "cancelled"]
    with pytest.raises(ObookError, match="no FIFO queue") as e:
        backtest(l2_table(QUEUE_DAY), Take(), queue="fifo")
    assert str(e.value).startswith("the Table given:") and len(str(e.value)) < 200     # not the table's text
    with pytest.raises(ObookError, match="needs the columns action"):
        backtest(l2_table(QUEUE_DAY).drop_columns(["action"]), Take())
    with pytest.raises(ObookError, match="queue model 'square'"):
        backtest(l2_table(QUEUE_DAY), Take(), queue="square")


def test_backtest_l2_fok_or_post_only_turned_away_is_only_rejected_as_order_level(tmp_path):
    """A FOK the visible ask cannot fill and a post-only order that would take it are turned
    away whole: a rejected event each, none accepted first, as the order-level backtest gives."""
    def Send():
        return SendOnce(lambda ask: [Order("enter", "AAA", "B", 150, ask, ref=1, tif="FOK"),
                                     Order("enter", "AAA", "B", 10, ask, ref=2, post_only=True)])

    want = [(1, "rejected", "fill-or-kill order cannot fill completely"),
            (2, "rejected", "post-only order would take liquidity")]
    r = backtest(l2_table(QUEUE_DAY), Send())
    assert [(e["ref"], e["event"], e["reason"]) for e in r.events.to_pylist()] == want
    day = tmp_path / "day.csv"
    day.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1010\n2,AAA,b,B,100,1000\n")
    mbo = backtest(str(day), Send(), format="csv")
    assert [(e["ref"], e["event"], e["reason"]) for e in mbo.events.to_pylist()] == want



class TurnedAwayThenReused:
    """At its first book a FOK (ref 1) and a post-only order (ref 2) the ask turns away; at
    its second, passive buys of the same refs below the bid."""

    def __init__(self):
        self.books = 0

    def on_book(self, ctx):
        self.books += 1
        ask = ctx.top()[2]
        if self.books == 1:
            return [Order("enter", "AAA", "B", 150, ask, ref=1, tif="FOK"),
                    Order("enter", "AAA", "B", 10, ask, ref=2, post_only=True)]
        if self.books == 2:
            return [Order("enter", "AAA", "B", 5, ask - 20, ref=1), Order("enter", "AAA", "B", 5, ask - 20, ref=2)]
        return None


def test_backtest_l2_rejected_fok_or_post_only_id_reused_accepted_as_order_level(tmp_path):
    """A FOK or post-only order turned away whole leaves its id free (as obook.simulate and
    the matching engine do): a later order of that id is accepted, in both backtests."""
    want = [(1, "rejected", "fill-or-kill order cannot fill completely"),
            (2, "rejected", "post-only order would take liquidity"),
            (1, "accepted", None), (1, "rested", None), (2, "accepted", None), (2, "rested", None),
            (1, "expired", "end of session"), (2, "expired", "end of session")]
    r = backtest(l2_table(QUEUE_DAY), TurnedAwayThenReused())
    assert [(e["ref"], e["event"], e["reason"]) for e in r.events.to_pylist()] == want
    day = tmp_path / "day.csv"
    day.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1010\n2,AAA,b,B,100,1000\n"
                   "3,AAA,c,B,100,1000\n")
    mbo = backtest(str(day), TurnedAwayThenReused(), format="csv")
    assert [(e["ref"], e["event"], e["reason"]) for e in mbo.events.to_pylist()] == want

def test_backtest_l2_dbn_mbp1_file_same_as_its_table(tmp_path):
    import datetime as dt
    from types import SimpleNamespace as NS

    import databento_dbn as dbn
    import numpy as np

    from obook.backtest.l2_input import mbp_dtype

    table = l2_table(QUEUE_DAY)
    rec = np.zeros(table.num_rows, mbp_dtype(1))
    rec["length"], rec["rtype"], rec["instrument_id"] = rec.dtype.itemsize // 4, 1, 7
    for name in ("ts_recv", "ts_event", "price", "size", "bid_px_00", "bid_sz_00", "ask_px_00", "ask_sz_00"):
        rec[name] = table.column(name).to_numpy()
    rec["action"] = table.column("action").to_pylist()
    rec["side"] = table.column("side").to_pylist()
    meta = dbn.Metadata(dataset="XNAS.ITCH", start=0, stype_in=dbn.SType.RAW_SYMBOL,
                        stype_out=dbn.SType.INSTRUMENT_ID, schema=dbn.Schema.MBP_1, symbols=["AAA"], end=10**12,
                        version=3, mappings=[NS(raw_symbol="AAA", intervals=[
                            NS(start_date=dt.date(1970, 1, 1), end_date=dt.date(1970, 1, 2), symbol="7")])])
    path = tmp_path / "day.mbp-1.dbn"
    path.write_bytes(meta.encode() + rec.tobytes())
    dec = dbn.DBNDecoder()
    dec.write(path.read_bytes())
    got = [r for r in dec.decode() if isinstance(r, dbn.MBP1Msg)]          # databento's own reader agrees
    assert [(r.ts_recv, r.levels[0].bid_sz, r.size) for r in got] == [(t, b, s) for t, _, _, _, s, _, b in QUEUE_DAY]
    r = backtest(str(path), JoinOnce())
    assert r.fills.select(["time", "price", "quantity"]).to_pylist() == [{"time": 6000, "price": 1000, "quantity": 30}]


def test_backtest_l2_cli_queue_option_and_its_picture(tmp_path):
    import json
    import inspect

    from typer.testing import CliRunner

    from obook.cli import app

    pq.write_table(l2_table(QUEUE_DAY), tmp_path / "day.parquet")
    (tmp_path / "join.py").write_text("from obook.backtest.orders import Order\n\n\n"
                                      + inspect.getsource(JoinOnce))
    r = CliRunner().invoke(app, ["backtest", str(tmp_path / "day.parquet"), "--strategy",
                                 f"{tmp_path / 'join.py'}:JoinOnce", "--queue", "log", "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["filled_quantity"] == 14     # log, as above
    r = CliRunner().invoke(app, ["plot", "backtest", str(tmp_path / "out"), str(tmp_path / "bt.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "bt.png").read_bytes()[:4] == b"\x89PNG"


class Quote:
    """Re-quotes 100 at each best when it moves (GTC)."""

    def __init__(self):
        self.ref, self.q = 0, {}

    def on_book(self, ctx):
        bid, _, ask, _ = ctx.top()
        out = []
        for side, px in (("B", bid), ("S", ask)):
            old = self.q.get(side)
            if px is None or (old and old[1] == px):
                continue
            self.ref += 1
            out.append(Order("replace", ctx.instrument, side, 100, px, self.ref, old[0]) if old else
                       Order("enter", ctx.instrument, side, 100, px, self.ref, tif="GTC"))
            self.q[side] = (self.ref, px)
        return out


def test_backtest_l2_on_obooks_mbp10_table_fills_only_where_the_day_trades_or_crosses(tmp_path):
    import obook
    from obook.gen.databento import mbo_flow, write_dbn
    from obook.live.risk import RiskGate

    write_dbn(tmp_path / "mbo.dbn", mbo_flow(6000, instruments=1, seed=3))
    day = obook.table("mbp10", str(tmp_path / "mbo.dbn")).read_all()
    r = backtest(day, Quote(), order_latency=50_000, response_latency=50_000,
                 risk=RiskGate(max_orders_per_second=10**6, band_bps=10**6, max_notional=10**18))
    assert r.summary["orders"] > 100 and r.summary["refused"] == 0
    assert sum(f["liquidity"] == "maker" for f in r.fills.to_pylist()) > 0, r.summary
    rows = day.select(["ts_recv", "action", "side", "price", "bid_px_00", "ask_px_00"]).to_pylist()
    trades = {(x["ts_recv"], x["price"]) for x in rows if x["action"] == "T"}
    best = {}
    for x in rows:
        if x["action"] != "T":
            best[x["ts_recv"]] = (x["bid_px_00"], x["ask_px_00"])
    for f in r.fills.to_pylist():
        if f["liquidity"] == "taker":
            continue
        bid, ask = best.get(f["time"], (None, None))
        crossed = (ask is not None and ask <= f["price"]) if f["side"] == "B" else (bid is not None and bid >= f["price"])
        traded = any(t == f["time"] and (p >= f["price"] if f["side"] == "S" else p <= f["price"])
                     for t, p in trades)
        assert traded or crossed, f


class PostThrough:
    """At its first book with an ask, a post-only buy at the ask of more than the ask shows."""

    def __init__(self):
        self.done = False

    def on_book(self, ctx):
        _, _, ask, ask_qty = ctx.top()
        if self.done or ask is None:
            return None
        self.done = True
        return [Order("enter", ctx.instrument, "B", 3 * ask_qty, ask, ref=1, post_only=True)]


def test_backtest_l2_post_only_rejected_quantity_is_the_orders_as_order_level(tmp_path):
    """A post-only order that would take liquidity is rejected whole: its event's quantity is
    the order's (not the shares it would have taken), remaining 0, in both backtests."""
    import obook
    from obook.gen.databento import mbo_flow, write_dbn
    from obook.live.risk import RiskGate

    write_dbn(tmp_path / "mbo.dbn", mbo_flow(3000, instruments=1, seed=3))
    day = obook.table("mbp10", str(tmp_path / "mbo.dbn")).read_all()
    cols = ["ref", "event", "quantity", "remaining", "reason"]
    risk = RiskGate(max_notional=10**18)
    l2 = backtest(day, PostThrough(), risk=risk).events.select(cols).to_pylist()
    mbo = backtest(str(tmp_path / "mbo.dbn"), PostThrough(), risk=risk).events.select(cols).to_pylist()
    assert l2 == mbo and len(l2) == 1
    assert l2[0]["event"] == "rejected" and l2[0]["remaining"] == 0 and l2[0]["quantity"] % 3 == 0


def _with_row(row, **change):
    """QUEUE_DAY's table with row ``row``'s columns changed (None: null)."""
    t = l2_table(QUEUE_DAY)
    for name, value in change.items():
        col = t.column(name).to_pylist()
        col[row] = value
        t = t.set_column(t.column_names.index(name), name, pa.array(col, t.column(name).type))
    return t


@pytest.mark.parametrize("row, change, says", [
    (3, {"ts_recv": None}, "row 3: ts_recv is null"),
    (2, {"ts_recv": -5}, "row 2: ts_recv -5 is below 0"),
    (0, {"ts_recv": 10**18}, "row 0: ts_recv 1000000000000000000 is"),
    (1, {"action": "Z"}, "row 1: action 'Z' is none of A, C, M, R, T, F, N"),
    (4, {"side": "Q"}, "row 4: side 'Q' is none of A, B, N"),
    (2, {"side": None}, "row 2: side None is none of A, B, N"),
    (4, {"price": None}, "row 4: a trade (action T) without a price"),
    (6, {"size": 0}, "row 6: a trade (action T) of size 0"),
    (2, {"size": -100}, "row 2: size -100 is below 0"),
    (5, {"bid_sz_00": -1}, "row 5: bid_sz_00 -1 is below 0"),
    (7, {"symbol": None}, "row 7: symbol is null"),
])
def test_backtest_l2_bad_row_is_an_error_naming_it(row, change, says):
    with pytest.raises(ObookError, match="the L2 input: ") as e:
        backtest(_with_row(row, **change), JoinOnce())
    assert says in str(e.value)


def _as_type(column, typ):
    """QUEUE_DAY's table with ``column`` cast to ``typ``."""
    t = l2_table(QUEUE_DAY)
    return t.set_column(t.column_names.index(column), column, t.column(column).cast(typ))


def _float_row(row, column, value):
    """QUEUE_DAY's table with ``column`` as floats, ``value`` in row ``row``."""
    t = _as_type(column, pa.float64())
    col = t.column(column).to_pylist()
    col[row] = value
    return t.set_column(t.column_names.index(column), column, pa.array(col, pa.float64()))


@pytest.mark.parametrize("table, says", [
    (_float_row(4, "price", 1000.5), "row 4: price 1000.5 is no whole number"),
    (_float_row(2, "bid_sz_00", float("nan")), "row 2: bid_sz_00 nan is no whole number"),
    (_float_row(1, "ask_px_00", 1e19), "row 1: ask_px_00 1e+19 is no whole number"),
    (_as_type("price", pa.string()), "price is string, not numbers"),
])
def test_backtest_l2_price_or_size_no_whole_number_is_an_error_naming_it(table, says):
    with pytest.raises(ObookError, match="the L2 input: ") as e:
        backtest(table, JoinOnce())
    assert says in str(e.value)


def test_backtest_l2_whole_float_prices_and_sizes_are_those_integers():
    floats = l2_table(QUEUE_DAY)
    for name in ("price", "size", "bid_px_00", "bid_sz_00", "ask_px_00", "ask_sz_00"):
        floats = floats.set_column(floats.column_names.index(name), name, floats.column(name).cast(pa.float64()))
    got = backtest(floats, JoinOnce(), queue="power:2")
    want = backtest(l2_table(QUEUE_DAY), JoinOnce(), queue="power:2")
    assert got.fills.equals(want.fills) and got.fills.num_rows == 1


def test_backtest_l2_stretch_without_rows_gets_one_equity_sample():
    far = [(t + (10 * 86_400 * 10**9 if i >= 5 else 0), *rest) for i, (t, *rest) in enumerate(QUEUE_DAY)]
    r = backtest(l2_table(far), JoinOnce(), interval=1.0)
    assert r.summary["fills"] == 1 and r.equity.num_rows < 10


@pytest.mark.parametrize("queue, says", [
    ("power:", "the exponent N of power:N is a finite number > 0"),
    ("power:1e400", "the exponent N of power:N is a finite number > 0"),
    ("nonsense", "queue model 'nonsense': one of power"),
])
def test_backtest_queue_unknown_or_without_exponent_is_an_error(tmp_path, queue, says):
    with pytest.raises(ObookError, match=says):
        backtest(l2_table(QUEUE_DAY), JoinOnce(), queue=queue)
    feed = tmp_path / "day.csv"
    feed.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,o1,B,100,990\n")
    with pytest.raises(ObookError, match=says):
        backtest(str(feed), JoinOnce(), format="csv", queue=queue)


def test_backtest_l2_timer_start_without_a_timer_is_an_error():
    with pytest.raises(ObookError, match="^timer_start 2000: the strategy has no timer to start"):
        backtest(l2_table(QUEUE_DAY), JoinOnce(), timer_start=2000)


def test_backtest_l2_timer_for_a_strategy_without_on_timer_is_an_error():
    with pytest.raises(ObookError, match="timer 1000: the strategy has no on_timer"):
        backtest(l2_table(QUEUE_DAY), JoinOnce(), timer=1000)


@pytest.mark.parametrize("change, says", [({"market": "no"}, "market 'no': give True or False"),
                                          ({"post_only": "yes"}, "post_only 'yes': give True or False"),
                                          ({"tif": 3}, "time in force 3"),
                                          ({"symbol": "ZZZ"}, r"instrument 'ZZZ': not one the strategy sees \(AAA\) "
                                                              r"\(at time 1000\)$")])
def test_backtest_l2_order_flag_tif_or_instrument_it_cannot_send_is_a_strategy_error(change, says):
    from obook.backtest import StrategyError

    class Sends:
        def on_book(self, ctx):
            order = {"symbol": "AAA", **change}
            return [Order("enter", side="B", qty=50, price=ctx.top()[0], ref=1, **order)] if ctx.time == 1000 else None

    with pytest.raises(StrategyError, match=says):
        backtest(l2_table(QUEUE_DAY), Sends())


class CountCalls:
    """Counts its on_book calls; ``on``: what they are called on."""

    def __init__(self, on):
        self.on, self.n = on, 0

    def on_book(self, ctx):
        self.n += 1


def test_backtest_l2_strategy_on_in_any_case_is_that_word():
    rows = QUEUE_DAY + [(8000, "A", "B", 990, 10, 1000, 68)]      # below the top: a book event only
    want, got = CountCalls("book"), CountCalls("BOOK")
    backtest(l2_table(rows), want)
    backtest(l2_table(rows), got)
    assert got.n == want.n == backtest(l2_table(rows), CountCalls("bbo")).summary["calls"] + 1
    with pytest.raises(ObookError, match="the strategy's on must be one of bbo, book, not 'trades'"):
        backtest(l2_table(rows), CountCalls("trades"))


class RaisesOnOrder(JoinOnce):
    def on_order(self, ctx, update):
        raise ValueError("boom")


def test_backtest_l2_strategy_that_raises_is_error_naming_strategy_and_method():
    from obook.backtest import StrategyError

    with pytest.raises(StrategyError, match=r"^the strategy RaisesOnOrder.on_order raised ValueError: boom") as e:
        backtest(l2_table(QUEUE_DAY), RaisesOnOrder(), queue="power:2")
    assert e.value.partial is not None


class YieldsThenRaises(JoinOnce):
    def on_book(self, ctx):
        def orders():
            yield Order("enter", "AAA", "B", 50, 1000, ref=ctx.time)
            raise ValueError("late boom")
        return orders()


def test_backtest_l2_strategy_generator_raising_is_error_naming_strategy_and_method():
    from obook.backtest import StrategyError

    says = r"^the strategy YieldsThenRaises.on_book raised ValueError: late boom"
    with pytest.raises(StrategyError, match=says) as e:
        backtest(l2_table(QUEUE_DAY), YieldsThenRaises(), queue="power:2")
    assert "late boom" in e.value.traceback and e.value.partial is not None


class ReplacesTop(JoinOnce):
    def on_book(self, ctx):
        orders = super().on_book(ctx)
        ctx.top = lambda *a: (1, 1, 2, 1)
        return orders


def test_backtest_l2_context_top_replaced_by_strategy_gate_reads_the_book():
    r = backtest(l2_table(QUEUE_DAY), ReplacesTop(), queue="power:2")
    assert r.orders.column("refused").to_pylist() == [None]
    assert r.fills.column("quantity").to_pylist() == [30]


@pytest.mark.parametrize("option, says", [(["--interval", "1e-10"], "--interval 1e-10 s: give 1e-09 s"),
                                          (["--timer", "5"], "--timer 5: the strategy has no on_timer to call")])
def test_backtest_l2_cli_interval_or_timer_error_names_the_option(tmp_path, capsys, option, says):
    import inspect

    from cli_support import cli_error

    pq.write_table(l2_table(QUEUE_DAY), tmp_path / "day.parquet")
    (tmp_path / "join.py").write_text("from obook.backtest.orders import Order\n\n\n"
                                      + inspect.getsource(JoinOnce))
    err = cli_error(capsys, "backtest", tmp_path / "day.parquet", "--strategy", f"{tmp_path / 'join.py'}:JoinOnce",
                    *option)
    assert err.startswith(f"error: {says}"), err


class Ticks:
    """Remembers the times of its timer calls."""

    def __init__(self):
        self.calls = []

    def on_timer(self, ctx):
        self.calls.append(ctx.time)


@pytest.mark.parametrize("timer_start, calls", [(None, [2000, 3000, 4000, 5000, 6000, 7000]),
                                                (2500, [2500, 3500, 4500, 5500, 6500]),
                                                (0, [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000]),
                                                (10 ** 9, [])])
def test_backtest_l2_timer_start_is_the_first_timer_call_as_order_level(timer_start, calls):
    t = Ticks()
    backtest(l2_table(QUEUE_DAY), t, timer=1000, timer_start=timer_start)
    assert t.calls == calls


@pytest.mark.parametrize("option, says", [({"date": "garbage"}, "date= 'garbage': not a day YYYY-MM-DD"),
                                          ({"on_error": "ignore"}, "on_error must be one of raise, skip"),
                                          ({"format": "nosuch"}, "nosuch")])
def test_backtest_l2_option_out_of_range_is_an_error_as_order_level(option, says):
    with pytest.raises(ObookError, match=says):
        backtest(l2_table(QUEUE_DAY), JoinOnce(), **option)
