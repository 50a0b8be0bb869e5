"""obook.simulate in a venue's call auctions: own orders rest until the uncross and fill
there, at the auction price, only when the auction would have executed them; known answers
from normalized events straight into the worker side (compiled and plain Python kernels),
against the reference, and on generated Shenzhen and Shanghai days."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from obook._kernels.layout import ACT_ADD, ACT_EXEC, ASK, BID, EV_WIDTH
from reference_simulate import simulate as reference

#: continuous trading in the hand-made feed's time: a call auction before 100 and from 1000
CONTINUOUS = (100, 1000)
#: the Shanghai and Shenzhen day: continuous trading from 09:30, the opening uncross from 09:25
CONTINUOUS_NS = (34_200 * 10**9, 53_820 * 10**9)
OPENING = 33_900 * 10**9
# seq, time, kind, ref, side, shares, price (an exec's: the auction price)
FEED = [
    (1, 1, "add", 1, BID, 100, 990),
    (2, 2, "add", 2, ASK, 100, 1010),
    (3, 6, "add", 3, ASK, 40, 1000),       # rests through our bid at 1000: no match in the auction
    (4, 7, "add", 4, BID, 100, 1010),      # the feed's own book crosses
    (5, 60, "exec", 4, BID, 40, 1005),     # the uncross at 1005: 4 against 3 ...
    (5, 60, "exec", 3, ASK, 40, 1005),
    (6, 60, "exec", 4, BID, 60, 1005),     # ... and against 2
    (6, 60, "exec", 2, ASK, 60, 1005),
    (7, 200, "add", 5, ASK, 50, 995),      # continuous trading: through our bid at 1000
]
# time, order id, side, tif, price, quantity (type limit, latency 0)
ORDERS = [
    (5, 1, "buy", "GTC", 1000, 50),        # the best bid: below the auction price, not executed
    (5, 2, "buy", "GTC", 1010, 30),        # through the ask: rests; ahead of 4 at 1010
    (5, 3, "sell", "FOK", 990, 10),        # nothing fills in an auction: turned away
    (5, 4, "sell", "IOC", 990, 10),        # accepted, its rest dropped
    (8, 5, "buy", "DAY", 1020, 20),        # better than every feed bid: the auction's first
    (300, 6, "sell", "FOK", 990, 1000),    # continuous: more than the bids have
    (300, 7, "sell", "FOK", 990, 50),      # continuous: fills from the bid at 990
]


def _own(orders):
    from obook.feeds.orders import read_orders
    from obook.simulation.prepare import latencies, prepare_own

    n = len(orders)
    o = read_orders(pa.table({"time": [r[0] for r in orders], "instrument": ["AAA"] * n,
                              "order_id": [r[1] for r in orders], "action": ["new"] * n,
                              "side": [r[2] for r in orders], "tif": [r[3] for r in orders],
                              "price": [r[4] for r in orders], "quantity": [r[5] for r in orders]}))
    return prepare_own(o, 1, latencies(0, n), 100)


def _events(feed):
    ev = np.zeros((len(feed), EV_WIDTH), np.int64)
    for i, (seq, t, kind, ref, side, shares, price) in enumerate(feed):
        if kind == "add":
            ev[i, :7] = (seq, t, 7, ACT_ADD | side << 8, ref, shares, price)
        else:
            ev[i, :6] = (seq, t, 7, ACT_EXEC | side << 8, ref, shares)
            ev[i, 9] = price
    return ev


def _kernel_tables(monkeypatch, compiled, continuous, feed=FEED, orders=ORDERS):
    from obook._kernels import simulate as K
    from obook.simulation.observer import SimObserver
    from obook.simulation.tables import build_tables

    if not compiled:
        monkeypatch.setattr(K, "sim_events", K.sim_events.py_func)
        monkeypatch.setattr(K, "sim_finish", K.sim_finish.py_func)
    own = _own(orders)
    w = SimObserver(own, continuous=continuous).worker(0, 1)
    ev = _events(feed)
    w.batch(ev, len(ev), [(7, "AAA")])
    return build_tables(own, [w.finish()])


def _reference(continuous, feed=FEED, orders=ORDERS):
    records = [(seq, t, "AAA", kind, ref, side, shares, price, None) for seq, t, kind, ref, side, shares, price in feed]
    ins = [dict(row=i, arrival=t, probe=t + 100, instrument="AAA", order_id=oid, action="new",
                side=0 if side == "buy" else 1, market=False, tif=("GTC", "DAY", "IOC", "FOK").index(tif),
                price=price, quantity=qty, reason=None)
           for i, (t, oid, side, tif, price, qty) in enumerate(orders, 1)]
    return reference(records, {"AAA"}, ins, continuous=continuous)


def _rows(table, *cols):
    return [tuple(r[c] for c in cols) for r in table.to_pylist()]


@pytest.mark.parametrize("compiled", [True, False])
def test_simulate_kernel_call_auction_orders_rest_and_fill_in_the_uncross_only(monkeypatch, compiled):
    t = _kernel_tables(monkeypatch, compiled, CONTINUOUS)
    assert _rows(t["fills"], "seq", "order_id", "price", "quantity", "liquidity", "priority_differs") == [
        (5, 5, 1005, 20, "maker", True),      # better than 4 at 1010: executed first
        (5, 2, 1005, 20, "maker", True),      # ahead of 4 at 1010: the rest of its 40
        (6, 2, 1005, 10, "maker", True),
        (7, 1, 1000, 50, "maker", False),     # continuous trading: a sell through it fills it
        (None, 7, 990, 50, "taker", False)]
    events = _rows(t["events"], "order_id", "event", "reason")
    assert [e for e in events if e[0] == 3] == [(3, "rejected", "fill-or-kill order cannot fill completely")]
    assert [e[1] for e in events if e[0] == 4] == ["accepted", "cancelled"]
    assert [e[1] for e in events if e[0] == 6] == ["rejected"]
    assert [e[1] for e in events if e[0] == 7] == ["accepted", "filled"]
    assert ("rested" in [e[1] for e in events if e[0] == 2]) and (1, "rested", None) in events


# the book the opening auction left crossed by own orders: they take it when continuous trading starts
OPEN_FEED = [
    (1, 1, "add", 1, BID, 100, 990),
    (2, 2, "add", 2, ASK, 100, 1010),
    (3, 3, "add", 3, ASK, 50, 1020),
    (4, 200, "add", 4, BID, 10, 980),      # continuous trading's first record
]
OPEN_ORDERS = [
    (5, 1, "buy", "GTC", 1015, 120),       # through the ask at 1010: rests in the auction
    (6, 2, "buy", "DAY", 1012, 10),        # through it too, but behind the better bid
    (7, 3, "sell", "GTC", 985, 30),        # through the bid at 990
    (150, 4, "buy", "IOC", 1010, 5),       # continuous: 1010 is taken by then
]


@pytest.mark.parametrize("compiled", [True, False])
def test_simulate_kernel_open_resting_orders_through_the_book_take_it_at_continuous_start(monkeypatch, compiled):
    """At the start of continuous trading an own order resting through the other side
    takes it as a taker, as on arrival: best bid first; what is left rests."""
    t = _kernel_tables(monkeypatch, compiled, CONTINUOUS, OPEN_FEED, OPEN_ORDERS)
    assert _rows(t["fills"], "seq", "time", "order_id", "price", "quantity", "liquidity", "priority_differs") == [
        (4, 100, 1, 1010, 100, "taker", False),
        (4, 100, 3, 990, 30, "taker", False)]
    events = _rows(t["events"], "time", "order_id", "event", "remaining", "shares_ahead")
    assert [e for e in events if e[0] >= 100] == [
        (100, 1, "partially_filled", 20, 0), (100, 3, "filled", 0, 0),
        (150, 4, "accepted", 5, None), (150, 4, "cancelled", 0, None),
        (200, 2, "expired", 0, None)]      # the DAY bid behind it took nothing
    assert _rows(t["bbo_with_own"], "time", "bid_px", "bid_qty", "ask_px", "ask_qty")[-1] == (100, 1015, 20, 1020, 50)


# an uncross at 1005 of 40 shares (bid 4 against ask 3) that leaves the ask at 1006
NO_VOLUME_FEED = [
    (1, 1, "add", 2, ASK, 100, 1006),
    (2, 2, "add", 3, ASK, 40, 1000),
    (3, 3, "add", 4, BID, 40, 1010),
    (4, 60, "exec", 4, BID, 40, 1005),
    (4, 60, "exec", 3, ASK, 40, 1005),
    (5, 200, "add", 5, BID, 10, 990),      # continuous trading's first record
]
NO_VOLUME_ORDERS = [(5, 1, "buy", "GTC", 1008, 10)]     # above the auction price, below bid 4


@pytest.mark.parametrize("compiled", [True, False])
def test_simulate_kernel_uncross_own_bid_adds_no_volume_takes_the_ask_left_at_continuous_start(monkeypatch,
                                                                                              compiled):
    """An own bid above the auction price that no feed execution reaches is not filled in the
    uncross (own orders add no volume: the venue might have executed it against the ask at
    1006), and takes that ask when continuous trading starts."""
    t = _kernel_tables(monkeypatch, compiled, CONTINUOUS, NO_VOLUME_FEED, NO_VOLUME_ORDERS)
    assert _rows(t["fills"], "seq", "time", "price", "quantity", "liquidity") == [(5, 100, 1006, 10, "taker")]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("feed,orders", [(FEED, ORDERS), (OPEN_FEED, OPEN_ORDERS),
                                         (NO_VOLUME_FEED, NO_VOLUME_ORDERS)], ids=["uncross", "open", "no-volume"])
@pytest.mark.parametrize("continuous", [CONTINUOUS, None])
def test_simulate_kernel_call_auction_matches_reference(monkeypatch, compiled, feed, orders, continuous):
    t = _kernel_tables(monkeypatch, compiled, continuous, feed, orders)
    fills, events, bbo, _mids, _later, _depth = _reference(continuous, feed, orders)
    side = {0: "buy", 1: "sell"}
    assert [tuple(r.values()) for r in t["fills"].to_pylist()] == [r[:4] + (side[r[4]],) + r[5:] for r in fills]
    assert [tuple(r.values()) for r in t["events"].to_pylist()] == [
        r[:5] + (side.get(r[5], r[5]),) + r[6:] for r in events]
    assert [tuple(r.values()) for r in t["bbo_with_own"].to_pylist()] == bbo


def test_simulate_kernel_no_call_auctions_own_orders_cross_on_arrival(monkeypatch):
    """Without call auctions (continuous trading all day) the same orders take the book on arrival."""
    t = _kernel_tables(monkeypatch, True, None)
    assert _rows(t["fills"], "seq", "order_id", "price", "quantity", "liquidity")[:1] == [(3, 2, 1010, 30, "taker")]


def _auction_day(tmp_path, fmt, real=False):
    """A day's feed (generated; Shanghai ``real``: the real day beside the repository), a
    security of an opening uncross, its best bid and ask at the latest moment of the opening
    call auction both are there (uncrossed if ever), and its uncross's first trade."""
    import obook
    from obook.gen.sse import write_sse
    from obook.gen.szse import write_szse

    if fmt == "szse":
        feed = tmp_path / "sz.log"
        write_szse(feed, 3_000, 4, 1)
    elif not real:
        feed = tmp_path / "sh.log"
        write_sse(feed, 3_000, 4, 1)
    else:
        from conftest import SHARED_DATA

        feed = SHARED_DATA / "AX_sbe_sse_600519.zip"
        if not feed.exists():
            pytest.skip("../shared/data is not here (it is not part of the repository)")
    bbo = obook.bbo(str(feed), format=fmt).read_all().to_pylist()
    trades = obook.trades(str(feed), format=fmt).read_all().to_pylist()
    uncross = [r for r in trades if OPENING <= r["time"] < CONTINUOUS_NS[0]]
    for ticker in sorted({r["ticker"] for r in uncross}):
        quotes = [r for r in bbo if r["ticker"] == ticker and r["time"] < OPENING and r["bid_px"] is not None
                  and r["ask_px"] is not None]
        if quotes:
            best = [r for r in quotes if r["bid_px"] < r["ask_px"]] or quotes
            return str(feed), ticker, best[-1], next(r for r in uncross if r["ticker"] == ticker)
    raise AssertionError("no security with both sides in the opening call auction")


@pytest.mark.parametrize("fmt,real", [("szse", False), ("sse", False), ("sse", True)])
def test_simulate_china_day_order_in_opening_auction_fills_in_the_uncross_at_its_price(tmp_path, fmt, real):
    """A buy through the ask in the opening call auction takes nothing on arrival: it rests
    and is executed in the uncross (it bids above the auction price) at the auction price."""
    from obook.simulation import simulate

    feed, ticker, quote, trade = _auction_day(tmp_path, fmt, real)
    high = max(quote["ask_px"], trade["price"]) * 2
    orders = pa.table({"time": [quote["time"]], "instrument": [ticker], "order_id": [1], "action": ["new"],
                       "side": ["buy"], "tif": ["DAY"], "price": [high], "quantity": [1]})
    r = simulate(feed, orders, format=fmt, feed_tables=())
    assert _rows(r.events, "event")[:2] == [("accepted",), ("rested",)]
    assert _rows(r.fills, "time", "price", "quantity", "priority_differs") == [
        (trade["time"], trade["price"], 1, True)]


def test_china_level2_formats_continuous_trading_0930_to_1457():
    from obook.feeds import resolve_format

    for name in ("szse", "szse-bin", "szse-csv", "sse"):
        assert resolve_format(name, None).continuous == CONTINUOUS_NS, name
    assert resolve_format("itch", None).continuous is None



def _feed_records(monkeypatch, run):
    """The normalized events ``run()`` hands the simulation's worker as the reference's
    records (an add at its side's own best priced as the book has it then), and run()'s result."""
    from obook._kernels.layout import ACT_CANCEL, OWN_BEST
    from obook.simulation.observer import SimWorker

    batches = []
    real = SimWorker.batch

    def batch(self, events, n, names):
        batches.append((events[:n].copy(), [tuple(x[:2]) for x in names]))
        real(self, events, n, names)
    monkeypatch.setattr(SimWorker, "batch", batch)
    result = run()
    names, books, records = {}, {}, []
    for ev, batch_names in batches:
        names.update(batch_names)
        for seq, t, b, act, ref, shares, price, _new, _match, aux in ev.tolist():
            ticker, kind, side = names[b], act & 0xFF, (act >> 8) & 1
            book = books.setdefault(ticker, {})
            assert kind in (ACT_ADD, ACT_EXEC, ACT_CANCEL), kind      # what the generated days have
            if kind == ACT_ADD:
                mine = [p for s, p, _ in book.values() if s == side]
                if act & OWN_BEST and mine:
                    price = max(mine) if side == BID else min(mine)
                book[ref] = [side, price, shares]
                records.append((seq, t, ticker, "add", ref, side, shares, price, None))
            elif ref in book:
                kind = "exec" if kind == ACT_EXEC else "cancel"
                records.append((seq, t, ticker, kind, ref, side, shares, aux, None))
                book[ref][2] -= min(shares, book[ref][2])
                if book[ref][2] == 0:
                    del book[ref]
    return result, records, set(names.values())


def _auction_orders(quotes, n, seed):
    """Own limit orders at the quotes' times (each (time, ticker, bid, ask)) that cross by up
    to 3%: bids above the ask, asks below the bid."""
    rng = np.random.default_rng(seed)
    rows = []
    for oid in range(1, n + 1):
        t, ticker, bid, ask = quotes[rng.integers(len(quotes))]
        buy = rng.random() < 0.5
        far = 1 + rng.uniform(0.001, 0.03)
        price = int(ask * far) // 100 * 100 if buy else int(bid / far) // 100 * 100
        rows.append(dict(time=t, instrument=ticker, order_id=oid, action="new", side="buy" if buy else "sell",
                         type="limit", tif=["GTC", "DAY"][oid % 2], price=price, quantity=int(rng.integers(1, 2000)),
                         lat=int(rng.integers(0, 10**9))))
    return rows


@pytest.mark.parametrize("seed", [2, 3])
def test_simulate_szse_generated_day_matches_reference(tmp_path, monkeypatch, seed):
    """Own orders through the book in a generated Shenzhen day's opening call auction and
    random ones after it: the kernel's fills and events are the reference's (the uncross,
    then the orders still resting through the book taking it at 09:30)."""
    import obook
    from obook.gen.szse import write_szse
    from obook.simulation import simulate
    from test_simulate_reference import orders_table, random_orders, reference_instructions

    feed = tmp_path / "day.log"
    write_szse(feed, 4_000, 4, seed)
    bbo = obook.bbo(str(feed), format="szse").read_all().to_pylist()
    quotes = [(r["time"], r["ticker"], r["bid_px"], r["ask_px"]) for r in bbo
              if r["bid_px"] is not None and r["ask_px"] is not None]
    rows = _auction_orders([q for q in quotes if q[0] < OPENING], 100, seed)
    adds = [(0, t, ticker, "add", 0, i % 2, 0, (bid, ask)[i % 2], None) for i, (t, ticker, bid, ask) in enumerate(quotes)]
    rows += [dict(r, order_id=r["order_id"] + 10**5) for r in random_orders(adds, sorted({q[1] for q in quotes}), 200,
                                                                              seed, 100, 10**9)]

    def run():
        return simulate(str(feed), orders_table(rows), format="szse", workers=1, latency="lat", feed_tables=())
    r, records, seen = _feed_records(monkeypatch, run)
    fills, events, _bbo, _mids, _later, _depth = reference(records, seen, reference_instructions(rows, 1, 0),
                                                           continuous=CONTINUOUS_NS)
    side = {0: "buy", 1: "sell"}
    got = {t: r.table(t).drop_columns(["timestamp"]).to_pylist() for t in ("fills", "events")}     # the day's date
    assert [tuple(x.values()) for x in got["fills"]] == [f[:4] + (side[f[4]],) + f[5:] for f in fills]
    assert [tuple(x.values()) for x in got["events"]] == [e[:5] + (side.get(e[5], e[5]),) + e[6:] for e in events]
    liquidity = {(f["time"] == CONTINUOUS_NS[0], f["time"] == OPENING, f["liquidity"]) for f in got["fills"]}
    assert {(True, False, "taker"), (False, True, "maker")} <= liquidity    # the uncross, then 09:30
    assert (True, False, "maker") not in liquidity


@pytest.mark.parametrize("fmt", ["itch", "csv"])
def test_simulate_generated_day_with_call_auctions_matches_reference(tmp_path, fmt):
    """A generated ITCH or CSV day given call auctions outside its middle third: own orders
    rest in them and fill in the feed's executions at those executions' price (an E's: the
    resting feed order's, not the own order's); every table is the reference's, any workers."""
    from dataclasses import replace

    from obook.feeds import get_format
    from obook.gen.csv import write_csv
    from obook.gen.itch import write_itch
    from reference_simulate import csv_records, itch_records
    from test_simulate_reference import check, random_orders

    feed = tmp_path / f"day.{fmt}"
    (write_itch if fmt == "itch" else write_csv)(feed, 30_000, 6, 5)
    records, seen = (itch_records if fmt == "itch" else csv_records)(str(feed))
    t0, t1 = records[0][1], records[-1][1]
    window = (t0 + (t1 - t0) // 3, t0 + 2 * (t1 - t0) // 3)
    unit_ns = 1 if fmt == "itch" else 1_000_000
    rows = random_orders(records, sorted(seen)[:4], 300, 5, 100, 200_000_000)
    r = check(str(feed), replace(get_format(fmt), continuous=window), records, seen, rows, unit_ns, window)
    own = {row["order_id"]: row["price"] for row in rows if row["action"] == "new"}
    auction = [f for f in r.fills.to_pylist() if not window[0] <= f["time"] < window[1]]
    assert len(auction) > 20 and {f["liquidity"] for f in auction} == {"maker"}
    assert sum(f["price"] != own[f["order_id"]] for f in auction) > 10
