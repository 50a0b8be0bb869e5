"""obook.simulate: hand-made feeds with known answers, against the reference."""

from __future__ import annotations

import pyarrow as pa
import pytest

from obook.errors import ObookError
from obook.simulation import simulate

HEAD = "Time,Ticker,Order,T,Shares,Price\n"


def _files(tmp_path, feed_lines: str, orders_lines: str, header="time,instrument,order_id,action,side,type,tif,price,quantity"):
    feed = tmp_path / "feed.csv"
    feed.write_text(HEAD + feed_lines)
    orders = tmp_path / "orders.csv"
    orders.write_text(header + "\n" + orders_lines)
    return str(feed), str(orders)


def _rows(table: pa.Table, *cols):
    return [tuple(r[c] for c in cols) for r in table.to_pylist()]


def test_simulate_join_behind_two_fills_after_them(tmp_path):
    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
2,AAA,b,S,200,1000
10,AAA,a,E,100,1000
11,AAA,b,E,200,1000
12,AAA,c,S,300,1000
13,AAA,c,E,150,1000
""", "5,AAA,1,new,sell,limit,GTC,1000,120\n")
    r = simulate(feed, orders, format="csv", workers=1)
    got = _rows(r.events, "seq", "event", "shares_ahead", "remaining")
    # CSV records are numbered by physical line (the header is line 1)
    assert got[:4] == [(4, "accepted", None, 120), (4, "rested", 300, 120), (4, "queue", 200, 120),
                       (5, "queue", 0, 120)]
    # c (behind us) trades 150 while nothing is ahead: ours fills 120 first, flagged
    assert _rows(r.fills, "seq", "time", "price", "quantity", "liquidity", "priority_differs") == [
        (7, 13, 1000, 120, "maker", True)]
    assert got[4] == (7, "filled", 0, 0)
    s = r.summary.to_pylist()[0]
    assert (s["status"], s["filled"], s["fill_ratio"], s["time_to_fill"]) == ("filled", 120, 1.0, 8)


def test_simulate_csv_fill_ahead_then_fill_behind_fills_ours(tmp_path):
    """A CSV F (the order filled and left) is an execution: it consumes the shares ahead,
    and an F of an order behind ours while nothing is ahead fills ours first."""
    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
6,AAA,b,S,100,1000
10,AAA,a,F,100,1000
11,AAA,b,F,100,1000
""", "5,AAA,1,new,sell,limit,GTC,1000,50\n")
    r = simulate(feed, orders, format="csv", workers=1)
    assert _rows(r.events, "seq", "event", "shares_ahead", "remaining") == [
        (3, "accepted", None, 50), (3, "rested", 100, 50), (4, "queue", 0, 50), (5, "filled", 0, 0)]
    assert _rows(r.fills, "seq", "time", "price", "quantity", "liquidity", "priority_differs") == [
        (5, 11, 1000, 50, "maker", True)]
    # a D (a plain delete) of the order behind fills nothing
    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
6,AAA,b,S,100,1000
10,AAA,a,F,100,1000
11,AAA,b,D,0,0
""", "5,AAA,1,new,sell,limit,GTC,1000,50\n")
    assert simulate(feed, orders, format="csv", workers=1).fills.num_rows == 0


def test_simulate_cancel_ahead_moves_up_behind_does_not(tmp_path):
    feed, orders = _files(tmp_path, """1,AAA,a,B,100,990
2,AAA,b,B,50,990
10,AAA,c,B,70,990
11,AAA,c,D,0,0
12,AAA,a,C,40,0
13,AAA,b,D,0,0
""", "5,AAA,7,new,buy,limit,GTC,990,10\n")
    r = simulate(feed, orders, format="csv", workers=1)
    assert _rows(r.events, "seq", "event", "shares_ahead") == [
        (4, "accepted", None), (4, "rested", 150), (6, "queue", 90), (7, "queue", 40)]
    assert r.fills.num_rows == 0
    assert _rows(r.summary, "status") == [("open",)]      # GTC stays open at the end


def test_simulate_replace_ahead_loses_priority(tmp_path):
    # ITCH-like replace through the CSV feed is a delete + add; use a DAY order to see expiry too
    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
2,AAA,b,S,100,1000
10,AAA,a,D,0,0
10,AAA,a2,S,100,1000
20,AAA,b,E,100,1000
21,AAA,a2,E,30,1000
""", "5,AAA,1,new,sell,limit,DAY,1000,50\n")
    r = simulate(feed, orders, format="csv", workers=1)
    ev = _rows(r.events, "event", "shares_ahead", "remaining")
    assert ev[:4] == [("accepted", None, 50), ("rested", 200, 50), ("queue", 100, 50), ("queue", 0, 50)]
    # a2 (the replaced a, now behind us) trades: ours first
    assert _rows(r.fills, "quantity", "priority_differs") == [(30, True)]
    assert ev[4:] == [("partially_filled", 0, 20), ("expired", None, 0)]
    assert _rows(r.events, "reason")[-1] == ("end of session",)


def test_simulate_cross_takes_book_later_order_finds_it_thinner(tmp_path):
    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
2,AAA,b,S,100,1010
3,AAA,c,B,100,990
30,AAA,d,S,40,1000
""", """5,AAA,1,new,buy,limit,IOC,1010,150
6,AAA,2,new,buy,limit,IOC,1010,100
7,AAA,3,new,buy,limit,FOK,1010,60
31,AAA,4,new,buy,market,IOC,,100
""")
    r = simulate(feed, orders, format="csv", workers=1)
    assert _rows(r.fills, "order_id", "price", "quantity", "liquidity") == [
        (1, 1000, 100, "taker"), (1, 1010, 50, "taker"),       # walks two levels
        (2, 1010, 50, "taker"),                                # only what 1 left
        (4, 1000, 40, "taker")]                                # the feed replenished 1000
    ev = _rows(r.events, "order_id", "event", "reason")
    assert (2, "cancelled", "unfilled rest of an IOC, FOK or market order") in ev
    assert (3, "rejected", "fill-or-kill order cannot fill completely") in ev
    # the feed's own bbo is as recorded; the with-own view shows the taken liquidity gone
    assert _rows(r.bbo, "seq", "ask_px", "ask_qty")[-1] == (5, 1000, 140)
    own = _rows(r.bbo_with_own, "time", "ask_px", "ask_qty")
    assert (5, 1010, 50) in own and (6, None, None) in own


def test_simulate_priority_differs_only_when_nothing_ahead(tmp_path):
    feed, orders = _files(tmp_path, """1,AAA,a,B,100,990
10,AAA,b,B,100,990
11,AAA,b,E,60,990
12,AAA,a,E,100,990
13,AAA,b,E,40,990
""", "5,AAA,1,new,buy,limit,GTC,990,30\n")
    r = simulate(feed, orders, format="csv", workers=1)
    # b (behind us) trades 60 while a (100) is still ahead: no fill; then a trades, then b
    assert _rows(r.fills, "seq", "quantity", "priority_differs") == [(6, 30, True)]


def test_simulate_feed_add_crossing_own_resting_order_fills_it(tmp_path):
    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
20,AAA,b,S,50,995
""", "5,AAA,1,new,buy,limit,GTC,998,80\n")
    r = simulate(feed, orders, format="csv", workers=1)
    assert _rows(r.fills, "seq", "price", "quantity", "liquidity", "priority_differs") == [
        (3, 998, 50, "maker", False)]
    assert _rows(r.bbo_with_own, "seq", "bid_px", "bid_qty", "ask_px", "ask_qty")[-1] == (3, 998, 30, 1000, 100)


def test_simulate_fok_that_cannot_fill_is_only_rejected_as_match_gives_it(tmp_path):
    """A fill-or-kill order the book cannot fill is turned away whole: one ``rejected``
    event, no ``accepted`` (the matching engine's events for it on the same book); one that
    can fill is accepted and filled."""
    from obook.matching import match

    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n",
                          "5,AAA,1,new,buy,limit,FOK,1000,150\n6,AAA,2,new,buy,market,FOK,,150\n"
                          "7,AAA,3,new,buy,limit,FOK,1000,60\n")
    r = simulate(feed, orders, format="csv", workers=1)
    got = _rows(r.events, "order_id", "event", "price", "quantity", "remaining", "reason")
    book = tmp_path / "book.csv"
    book.write_text("time,instrument,order_id,action,side,type,tif,price,quantity\n"
                    "1,AAA,9,new,sell,limit,GTC,1000,100\n" + open(orders).read().split("\n", 1)[1])
    m = match(str(book))
    want = _rows(m.events.filter(pa.compute.not_equal(m.events["order_id"], 9)), "order_id", "event", "price",
                 "quantity", "remaining", "reason")
    fok = "fill-or-kill order cannot fill completely"
    assert got[:2] == want[:2] == [(1, "rejected", 1000, 150, 0, fok), (2, "rejected", None, 150, 0, fok)]
    assert [e[:2] for e in got[2:]] == [(3, "accepted"), (3, "filled")]


def test_simulate_fok_rejected_id_sent_again_is_a_new_order_as_match_gives_it(tmp_path):
    """A fill-or-kill order turned away whole leaves its id free, as in the matching engine:
    a later order of that id is accepted (not a duplicate) and the summary describes it."""
    from obook.matching import match

    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n",
                          "5,AAA,1,new,buy,limit,FOK,1000,150\n6,AAA,1,new,buy,limit,GTC,1000,60\n"
                          "7,AAA,2,new,buy,limit,FOK,1000,150\n8,AAA,2,cancel,,,,,\n")
    r = simulate(feed, orders, format="csv", workers=1)
    got = _rows(r.events, "order_id", "event", "quantity", "remaining", "reason")
    book = tmp_path / "book.csv"
    book.write_text("time,instrument,order_id,action,side,type,tif,price,quantity\n"
                    "1,AAA,9,new,sell,limit,GTC,1000,100\n" + open(orders).read().split("\n", 1)[1])
    m = match(str(book))
    want = _rows(m.events.filter(pa.compute.not_equal(m.events["order_id"], 9)), "order_id", "event", "quantity",
                 "remaining", "reason")
    fok = "fill-or-kill order cannot fill completely"
    assert got == want == [(1, "rejected", 150, 0, fok), (1, "accepted", 60, 60, None), (1, "filled", 60, 0, None),
                           (2, "rejected", 150, 0, fok), (2, "rejected", 0, 0, "unknown order id")]
    assert _rows(r.summary, "order_id", "quantity", "status", "filled") == [(1, 60, "filled", 60),
                                                                           (2, 150, "rejected", 0)]


def test_simulate_latency_modify_cancel_and_rejections(tmp_path):
    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
2,AAA,b,B,100,990
5,AAA,c,B,10,991
9,AAA,d,B,10,992
""", """1,AAA,1,new,buy,limit,GTC,990,10
2,AAA,1,modify,,,,,5
3,AAA,1,modify,,,,989,5
4,AAA,1,cancel,,,,,
4,AAA,1,cancel,,,,,
4,AAA,9,cancel,,,,,
4,ZZZ,1,new,buy,limit,GTC,990,10
4,AAA,2,new,buy,limit,GTC,990,0
""")
    # 3 ms of latency on a millisecond feed: instruction at 1 acts after the record at time 4
    r = simulate(feed, orders, format="csv", workers=1, latency=3_000_000)
    ev = _rows(r.events, "seq", "time", "order_id", "event", "shares_ahead", "reason")
    assert ev[:2] == [(4, 4, 1, "accepted", None, None), (4, 4, 1, "rested", 100, None)]
    assert ev[2:] == [
        (5, 5, 1, "modified", 100, None),                   # smaller: keeps its place
        (5, 6, 1, "modified", None, None),                  # new price: cancel and replace ...
        (5, 6, 1, "rested", 0, None),                       # ... at the back of 989 (empty)
        (5, 7, 1, "cancelled", None, "cancel request"),
        (5, 7, 1, "rejected", None, "order is not live (filled, cancelled or expired)"),
        (5, 7, 9, "rejected", None, "unknown order id"),
        (5, 7, 2, "rejected", None, "quantity must be positive"),
        (None, 7, 1, "rejected", None, "unknown instrument")]     # ZZZ: never in the feed


def test_simulate_zero_own_orders_feed_tables_unchanged(tmp_path):
    import obook
    from obook.engine.replay import Replay

    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
2,BBB,b,B,100,990
3,AAA,a,E,50,1000
""", "")
    r = simulate(feed, orders, format="csv", workers=1, feed_tables=("bbo", "trades"))
    rep = Replay(feed, workers=1, format="csv", tables=("bbo", "trades"))
    want = {"bbo": [], "trades": []}
    for t, b in rep.table_batches():
        want[t].append(b)
    for t in want:
        assert r.table(t).equals(pa.Table.from_batches(want[t], schema=rep.schema(t)))
    assert r.fills.num_rows == r.events.num_rows == r.summary.num_rows == r.bbo_with_own.num_rows == 0
    assert obook.simulate is simulate


@pytest.mark.parametrize("workers", [2, 3])
def test_simulate_hand_made_workers_identical(tmp_path, workers):
    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
2,BBB,b,S,200,1000
3,CCC,c,B,50,990
10,AAA,a,E,100,1000
11,BBB,b,E,150,1000
12,CCC,c,E,50,990
""", """5,AAA,1,new,buy,limit,GTC,1000,30
5,BBB,1,new,sell,limit,GTC,1000,30
5,CCC,1,new,buy,limit,DAY,990,30
""")
    one = simulate(feed, orders, format="csv", workers=1)
    many = simulate(feed, orders, format="csv", workers=workers)
    for t in ("fills", "events", "summary", "bbo_with_own", "bbo"):
        assert one.table(t).equals(many.table(t)), t


def test_simulate_latency_forms_seeded_and_checked():
    import numpy as np

    from obook.errors import ObookError
    from obook.simulation.prepare import latencies, parse_latency

    a = latencies(("exponential", 1000.0), 50, seed=3)
    assert (a == latencies(("exponential", 1000.0), 50, seed=3)).all() and a.min() >= 0
    assert not (a == latencies(("exponential", 1000.0), 50, seed=4)).all()
    assert (latencies(("uniform", 10, 20), 100, seed=1) <= 20).all()
    assert (latencies(7, 3) == 7).all() and (latencies([1, 2, 3], 3) == np.array([1, 2, 3])).all()
    assert parse_latency("250000") == 250000 and parse_latency("normal:5:1") == ("normal", 5.0, 1.0)
    assert parse_latency("lat") == "lat" and parse_latency(None) == 0
    for bad in (-1, ("gamma", 1.0), [1, 2], ("uniform", 1)):
        with pytest.raises(ObookError):
            latencies(bad, 3)
    with pytest.raises(ObookError):
        latencies("nope", 3, pa.table({"x": [1, 2, 3]}))


def test_simulate_kernel_replace_modify_clear_events_known_answers():
    """Normalized events a CSV feed cannot express (replace, modify, clear) straight into the
    worker side: a replace or a priority-losing modify ahead moves that order behind you."""
    import numpy as np

    from obook._kernels.layout import (ACT_ADD, ACT_CLEAR, ACT_EXEC, ACT_MODIFY, ACT_REPLACE, ASK,
                                       EV_WIDTH)
    from obook.feeds.orders import read_orders
    from obook.simulation.observer import SimObserver
    from obook.simulation.prepare import latencies, prepare_own
    from obook.simulation.tables import build_tables

    o = read_orders(pa.table({"time": [5], "instrument": ["AAA"], "order_id": [1], "action": ["new"],
                              "side": ["sell"], "price": [1000], "quantity": [50]}))
    own = prepare_own(o, 1, latencies(0, 1), 100)
    rows = [  # seq, time, action, ref, shares, price, new ref
        (1, 1, ACT_ADD | ASK << 8, 1, 100, 1000, 0),
        (2, 2, ACT_ADD | ASK << 8, 2, 100, 1000, 0),
        (3, 10, ACT_REPLACE, 1, 100, 1000, 3),          # 1 -> 3 at the back: behind us
        (4, 11, ACT_MODIFY, 2, 60, 1000, 0),            # smaller, same price: keeps its place
        (5, 12, ACT_MODIFY, 2, 80, 1000, 0),            # larger: to the back
        (6, 13, ACT_EXEC, 3, 30, 0, 0),                 # 3 (behind) trades, nothing ahead: ours
        (7, 14, ACT_CLEAR, 0, 0, 0, 0),
    ]
    ev = np.zeros((len(rows), EV_WIDTH), np.int64)
    for i, (seq, t, act, ref, shares, price, new) in enumerate(rows):
        ev[i, :8] = (seq, t, 7, act, ref, shares, price, new)
    w = SimObserver(own).worker(0, 1)
    w.batch(ev, len(ev), [(7, "AAA")])
    t = build_tables(own, [w.finish()])
    assert _rows(t["events"], "seq", "event", "shares_ahead", "remaining") == [
        (3, "accepted", None, 50), (3, "rested", 200, 50), (3, "queue", 100, 50), (4, "queue", 60, 50),
        (5, "queue", 0, 50), (6, "partially_filled", 0, 20)]
    assert _rows(t["fills"], "seq", "quantity", "liquidity", "priority_differs") == [(6, 30, "maker", True)]
    # after the clear only our 20 shares are offered
    assert _rows(t["bbo_with_own"], "seq", "ask_px", "ask_qty")[-1] == (7, 1000, 20)


@pytest.mark.parametrize("workers", [1, 2])
def test_simulate_bad_feed_record_raises_feed_error(tmp_path, workers):
    from obook.errors import FeedError

    feed, orders = _files(tmp_path, """1,AAA,a,S,100,1000
2,AAA,zz,D,0,0
""", "1,AAA,1,new,buy,limit,GTC,990,10\n")
    with pytest.raises(FeedError, match="unknown order"):
        simulate(feed, orders, format="csv", workers=workers)
    r = simulate(feed, orders, format="csv", workers=workers, on_error="skip")
    assert r.stats["skipped"] and _rows(r.events, "event") == [("accepted",), ("rested",)]


@pytest.mark.parametrize("price", [-1, -7])
def test_simulate_negative_limit_price_raises_naming_the_row(tmp_path, price):
    from obook.errors import ObookError

    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n",
                          f"1,AAA,1,new,buy,limit,GTC,990,10\n2,AAA,2,new,sell,limit,GTC,{price},10\n")
    with pytest.raises(ObookError, match=f"orders.csv: row 2: price {price} is negative"):
        simulate(feed, orders, format="csv", workers=1)


def test_simulate_cancel_or_market_order_with_a_negative_price_is_read_as_match_reads_it(tmp_path):
    """A cancel's and a market order's price is not read (no limit price): a negative one
    there is no error; a modify's is its new limit, and is."""
    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n",
                          "2,AAA,1,new,buy,limit,GTC,990,10\n3,AAA,1,cancel,,,,-5,\n4,AAA,2,new,buy,market,IOC,-5,10\n")
    r = simulate(feed, orders, format="csv", workers=1)
    assert _rows(r.events, "order_id", "event", "price", "reason")[2:4] == [(1, "cancelled", 990, "cancel request"),
                                                                           (2, "accepted", None, None)]
    with open(orders, "a") as f:
        f.write("5,AAA,2,modify,,,,-5,\n")
    with pytest.raises(ObookError, match="orders.csv: row 4: price -5 is negative"):
        simulate(feed, orders, format="csv", workers=1)


def test_simulate_orders_as_a_path_object_errors_name_the_file(tmp_path):
    from pathlib import Path

    from obook.errors import FeedError

    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n",
                          "1,AAA,1,new,buy,limit,GTC,990,10\nx,AAA,2,new,buy,limit,GTC,990,10\n")
    with pytest.raises(FeedError, match="orders.csv: row 2: time is not an integer"):
        simulate(feed, Path(orders), format="csv", workers=1)


@pytest.mark.parametrize("price", [2**62 + 3, 2**49 + 1, 990])
def test_simulate_summary_notional_and_average_exact_for_any_price(tmp_path, price):
    """A buy far above the feed's ask takes it (at the ask), the rest rests at its own price
    and fills there when a sell arrives: notional and average are exact in any case."""
    from decimal import ROUND_HALF_EVEN, Decimal

    feed, orders = _files(tmp_path, "1,AAA,a,S,30,1000\n3,AAA,b,S,100,980\n",
                          f"2,AAA,1,new,buy,limit,GTC,{price},70\n")
    r = simulate(feed, orders, format="csv", workers=1)
    fills = [(f["price"], f["quantity"]) for f in r.fills.to_pylist()]
    assert fills == ([(1000, 30), (price, 40)] if price > 1000 else [(990, 70)])
    s = r.summary.to_pylist()[0]
    notional = sum(p * q for p, q in fills)
    assert s["notional"] == notional and s["filled"] == 70
    assert s["avg_price"] == (Decimal(notional) / 70).quantize(Decimal("0.0001"), ROUND_HALF_EVEN)


def test_simulate_summary_fill_ratio_counts_shares_modifies_added(tmp_path):
    """700 offered, 600 taken; cut to 50 open; repriced to 500 open (450 more offered), 200
    taken: 800 filled of 1,150 offered."""
    feed, orders = _files(tmp_path, "1,AAA,a,S,600,1000\n4,AAA,b,S,200,1010\n",
                          "2,AAA,1,new,buy,limit,GTC,1000,700\n3,AAA,1,modify,,,,,50\n"
                          "5,AAA,1,modify,,,,1010,500\n")
    r = simulate(feed, orders, format="csv", workers=1)
    assert _rows(r.events, "event", "quantity", "remaining")[3:] == [
        ("modified", 50, 50), ("modified", 500, 500), ("partially_filled", 200, 300), ("rested", 300, 300)]
    s = r.summary.to_pylist()[0]
    assert (s["quantity"], s["filled"]) == (700, 800)
    assert s["fill_ratio"] == pytest.approx(800 / 1150)


def test_simulate_kernel_fill_print_then_cancel_is_an_execution():
    """Databento reports a trade as prints naming the filled orders (F) and then cancels of
    their shares (C): those cancels are executions; a cancel no print announced is not."""
    import numpy as np

    from obook._kernels.layout import ACT_ADD, ACT_CANCEL, ACT_PRINT, ASK, EV_WIDTH
    from obook.feeds.orders import read_orders
    from obook.simulation.observer import SimObserver
    from obook.simulation.prepare import latencies, prepare_own
    from obook.simulation.tables import build_tables

    o = read_orders(pa.table({"time": [5], "instrument": ["AAA"], "order_id": [1], "action": ["new"],
                              "side": ["sell"], "price": [1000], "quantity": [50]}))
    own = prepare_own(o, 1, latencies(0, 1), 100)
    rows = [  # seq, time, action, ref, shares, price
        (1, 1, ACT_ADD | ASK << 8, 1, 100, 1000),
        (2, 2, ACT_ADD | ASK << 8, 2, 100, 1000),
        (3, 10, ACT_PRINT | ASK << 8, 1, 100, 1000),       # F: 1 filled ...
        (4, 10, ACT_CANCEL, 1, 100, 0),                     # ... C: ahead 200 -> 100
        (5, 11, ACT_ADD | ASK << 8, 3, 100, 1000),          # behind us
        (6, 12, ACT_CANCEL, 3, 10, 0),                      # a plain cancel behind: nothing
        (7, 13, ACT_PRINT | ASK << 8, 2, 100, 1000),
        (8, 13, ACT_CANCEL, 2, 100, 0),                     # ahead 0
        (9, 14, ACT_PRINT | ASK << 8, 3, 30, 1000),
        (10, 14, ACT_CANCEL, 3, 30, 0),                     # 3 (behind) filled: ours first
    ]
    ev = np.zeros((len(rows), EV_WIDTH), np.int64)
    for i, (seq, t, act, ref, shares, price) in enumerate(rows):
        ev[i, :7] = (seq, t, 7, act, ref, shares, price)
    w = SimObserver(own).worker(0, 1)
    w.batch(ev, len(ev), [(7, "AAA")])
    t = build_tables(own, [w.finish()])
    assert _rows(t["events"], "seq", "event", "shares_ahead", "remaining") == [
        (4, "accepted", None, 50), (4, "rested", 200, 50), (4, "queue", 100, 50), (8, "queue", 0, 50),
        (10, "partially_filled", 0, 20)]
    assert _rows(t["fills"], "seq", "quantity", "priority_differs") == [(10, 30, True)]


@pytest.mark.parametrize("option, value, message", [
    ("feed", 5, "the feed path must be text"), ("feed", None, "the feed path must be text"),
    ("feed", b"feed.csv", "the feed path must be text"), ("format", 5, "format must be a feed format's name"),
    ("horizon", "x", "horizon must be between"), ("workers", "2", "workers must be an integer"),
    ("workers", True, "workers must be an integer"), ("feed_tables", 5, "feed_tables must be a name"),
    ("own_tables", 5, "own_tables must be a name"), ("day_end", "no", "day_end must be True or False"),
    ("progress", 5, "progress must be a function"),
    ("seed", 7.0, r"^seed must be an integer from 0 to \d+, not 7.0 \(a float\)$")])
def test_simulate_argument_of_wrong_type_raises_obook_error_naming_it(tmp_path, option, value, message):
    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n", "5,AAA,1,new,buy,limit,DAY,1000,10\n")
    args = {"feed": feed, "format": "csv", "workers": 1, option: value}
    with pytest.raises(ObookError, match=message):
        simulate(args.pop("feed"), orders, **args)


def test_simulate_feed_tables_one_name_is_that_table(tmp_path):
    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n", "5,AAA,1,new,buy,limit,DAY,1000,10\n")
    one = simulate(feed, orders, format="csv", workers=1, feed_tables="bbo")
    assert one.table("bbo").equals(simulate(feed, orders, format="csv", workers=1, feed_tables=("bbo",)).table("bbo"))


@pytest.mark.parametrize("quantities", [[2**63 - 1], [2**62, 2**62], [2**61, 10, 2**62], [2**62 + 1],
                                        [2**61, 2**61, 1]])
def test_simulate_own_quantities_beyond_64_bit_level_totals_raise_naming_the_row(tmp_path, quantities):
    """Own shares beside the feed's at a level must fit 64 bits (bbo_with_own's bid_qty
    would wrap to a negative number): an instrument's quantities sum to at most 2**62."""
    rows = "".join(f"{i + 2},AAA,{i + 1},new,buy,limit,GTC,990,{q}\n" for i, q in enumerate(quantities))
    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n5,AAA,b,B,100,990\n", rows)
    with pytest.raises(ObookError, match=f"orders.csv: row {len(quantities)}: the quantities of instrument "
                                         "'AAA' sum to more than 2\\*\\*62"):
        simulate(feed, orders, format="csv", workers=1)


def test_simulate_own_quantities_up_to_2_62_rest_with_exact_level_totals(tmp_path):
    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n5,AAA,b,B,100,990\n",
                          f"2,AAA,1,new,buy,limit,GTC,990,{2**62 - 200}\n3,AAA,2,new,buy,limit,GTC,990,100\n")
    r = simulate(feed, orders, format="csv", workers=1)
    assert max(r.table("bbo_with_own").column("bid_qty").to_pylist(), key=lambda q: q or 0) == 2**62


def test_simulate_rejected_cancel_or_modify_price_is_null_as_match_gives_it(tmp_path):
    """A rejected modify or cancel has no side and no price, whatever price its row carries,
    and a cancel no quantity, for an unknown id or an instrument the feed never names (the
    matching engine's events for the same rows); a rejected new order keeps the price it
    was sent with."""
    from obook.matching import match

    rows = ("5,AAA,7,cancel,,,,990,5\n6,AAA,8,modify,,,,990,5\n7,AAA,1,new,buy,limit,GTC,990,10\n"
            "8,AAA,1,cancel,,,,,\n9,AAA,1,cancel,,,,985,\n10,AAA,1,modify,,,,985,3\n11,AAA,1,new,buy,limit,GTC,990,10\n"
            "12,ZZZ,3,cancel,,,,990,5\n13,ZZZ,3,modify,,,,990,5\n")
    feed, orders = _files(tmp_path, "1,AAA,a,S,100,1000\n", rows)
    r = simulate(feed, orders, format="csv", workers=1)
    got = _rows(r.events, "order_id", "event", "side", "price", "quantity", "reason")
    book = tmp_path / "book.csv"
    book.write_text("time,instrument,order_id,action,side,type,tif,price,quantity\n"
                    "1,AAA,9,new,sell,limit,GTC,1000,100\n" + rows)
    m = match(str(book), instruments=["AAA"])
    want = _rows(m.events.filter(pa.compute.not_equal(m.events["order_id"], 9)), "order_id", "event", "side",
                 "price", "quantity", "reason")
    rejected = [e for e in got if e[1] == "rejected"]
    assert rejected == [e for e in want if e[1] == "rejected"]
    assert rejected == [(7, "rejected", None, None, 0, "unknown order id"),
                        (8, "rejected", None, None, 5, "unknown order id"),
                        (1, "rejected", None, None, 0, "order is not live (filled, cancelled or expired)"),
                        (1, "rejected", None, None, 3, "order is not live (filled, cancelled or expired)"),
                        (1, "rejected", "buy", 990, 10, "duplicate order id"),
                        (3, "rejected", None, None, 0, "unknown instrument"),
                        (3, "rejected", None, None, 5, "unknown instrument")]


def test_simulate_every_instruction_after_the_feeds_last_record_warns_of_the_time_unit(tmp_path, caplog):
    """Orders stamped in ns against a millisecond feed all arrive after its last record: a
    warning says so, naming the feed's unit; one instruction within the day says nothing."""
    feed_lines = "1,AAA,a,S,100,1000\n2,AAA,b,B,100,990\n50,AAA,c,S,100,1001\n"
    feed, orders = _files(tmp_path, feed_lines, "5000000,AAA,1,new,buy,limit,GTC,990,10\n"
                                                "9000000,AAA,2,new,buy,limit,GTC,989,10\n")
    with caplog.at_level("WARNING", logger="obook"):
        simulate(feed, orders, format="csv", workers=1)
    said = [r.getMessage() for r in caplog.records if "every instruction" in r.getMessage()]
    assert said == [f"{orders}: every instruction arrives after the last record of its instrument (the feed's last "
                    "time is 50): they rest until the day ends; the orders' times are in the feed's time unit (ms "
                    "since midnight)"]
    caplog.clear()
    feed, orders = _files(tmp_path, feed_lines, "5,AAA,1,new,buy,limit,GTC,990,10\n"
                                                "9000000,AAA,2,new,buy,limit,GTC,989,10\n")
    with caplog.at_level("WARNING", logger="obook"):
        simulate(feed, orders, format="csv", workers=1)
    assert not [r for r in caplog.records if "every instruction" in r.getMessage()]
