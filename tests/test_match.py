"""obook.match against the pure-Python reference, and the order types one by one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv  # noqa: F401 - pa.csv.write_csv
import pyarrow.ipc  # noqa: F401
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import obook.matching as matching
from obook.errors import FeedError, ObookError
from obook.matching import books as books_mod
from match_flows import random_flow, to_table, tuples, whole_instructions
from reference_match import Reference

KNOWN = ["AAA", "BBB", "CCC"]
TABLES = ("fills", "events", "bbo", "depth")


def run(rows, **kw):
    return matching.match(to_table(rows), **kw)


def new(oid, side, price, qty, tif="GTC", inst="AAA", type="limit", owner=None, t=None):
    return {"time": t or 0, "instrument": inst, "order_id": oid, "action": "new", "side": side, "type": type,
            "tif": tif, "price": price, "quantity": qty, "owner": owner}


def modify(oid, price=None, qty=None, inst="AAA"):
    return {"time": 0, "instrument": inst, "order_id": oid, "action": "modify", "price": price, "quantity": qty}


def cancel(oid, inst="AAA"):
    return {"time": 0, "instrument": inst, "order_id": oid, "action": "cancel"}


def events(r, oid=None):
    return [(e["seq"], e["event"], e["quantity"], e["remaining"], e["reason"])
            for e in r.events.to_pylist() if oid is None or e["order_id"] == oid]


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("seed,tick,stp", [(1, 1, None), (2, 5, "cancel_resting"), (3, 1, "cancel_incoming"),
                                           (4, 100, None)])
def test_match_random_flows_equal_reference(seed, tick, stp, workers):
    rows = random_flow(seed, 1500, tick=tick)
    ref = Reference(tick=tick, stp=stp, instruments=KNOWN, levels=4).run([dict(r) for r in rows])
    r = run(rows, tick=tick, stp=stp, instruments=KNOWN, levels=4, workers=workers)
    for name in TABLES:
        assert tuples(r.table(name)) == getattr(ref, name), name
    assert len(ref.fills) > 100 and len(ref.depth) > 100


@pytest.mark.parametrize("stp", [None, "cancel_resting"])
def test_match_quantities_beyond_int32_use_wide_order_records_and_equal_reference(stp):
    rows = random_flow(6, 1500, tick=1)
    for r in rows:                      # every positive quantity times 2**31 (bad ones stay bad)
        if r["quantity"] is not None and r["quantity"] > 0:
            r["quantity"] *= 1 << 31
    from obook.feeds.orders import read_orders
    from obook.matching.prepare import plan

    assert plan(read_orders(to_table(rows)), 1, KNOWN).wide
    assert not plan(read_orders(to_table(random_flow(6, 1500, tick=1))), 1, KNOWN).wide
    ref = Reference(tick=1, stp=stp, instruments=KNOWN, levels=4).run([dict(r) for r in rows])
    r = run(rows, stp=stp, instruments=KNOWN, levels=4, workers=2)
    for name in TABLES:
        assert tuples(r.table(name)) == getattr(ref, name), name
    assert max(f["quantity"] for f in r.fills.to_pylist()) >= 1 << 31


@pytest.mark.parametrize("tick", [1, 5])
def test_match_prices_at_and_below_zero_equal_reference(tick):
    rows = random_flow(7, 1500, tick=tick)
    for r in rows:                      # every price moved below zero, around 0 (a spread's book)
        if isinstance(r.get("price"), int):
            r["price"] -= 1000 * tick
    assert min(r["price"] for r in rows if isinstance(r.get("price"), int)) < 0
    ref = Reference(tick=tick, instruments=KNOWN, levels=4).run([dict(r) for r in rows])
    r = run(rows, tick=tick, instruments=KNOWN, levels=4, workers=2)
    for name in TABLES:
        assert tuples(r.table(name)) == getattr(ref, name), name
    assert len(ref.fills) > 100 and min(f["price"] for f in r.fills.to_pylist()) < 0


def test_match_tiny_buffers_same_output(monkeypatch):
    rows = random_flow(9, 800, tick=1)
    whole = run(rows, stp="cancel_resting")
    monkeypatch.setattr(books_mod, "CHUNK", 1)
    small = run(rows, stp="cancel_resting")
    for name in TABLES:
        assert small.table(name).equals(whole.table(name)), name


def test_match_python_kernel_loop_equals_compiled(monkeypatch):
    from obook._kernels import match as kernels

    rows = random_flow(5, 300, tick=1)
    compiled = run(rows, stp="cancel_incoming")
    monkeypatch.setattr(kernels, "match_rows", kernels.match_rows.py_func)
    monkeypatch.setattr(kernels, "expire_day", kernels.expire_day.py_func)
    interpreted = run(rows, stp="cancel_incoming")
    for name in TABLES:
        assert interpreted.table(name).equals(compiled.table(name)), name


def test_match_random_flow_book_never_crossed():
    r = run(random_flow(11, 3000, tick=1, bad=False))
    for q in r.bbo.to_pylist():
        if q["bid_px"] is not None and q["ask_px"] is not None:
            assert q["bid_px"] < q["ask_px"]


# ------------------------------------------------------------------ the four modify cases


def test_match_crossing_modify_trades_and_rests_at_back():
    r = run([new(1, "buy", 100, 10), new(2, "sell", 102, 5), new(3, "buy", 102, 1, tif="DAY"),
             new(4, "buy", 101, 2), modify(1, price=102)])
    # order 3 took 1 of the ask; the modify takes the other 4 and rests 6 behind nobody at 102
    assert [(f["seq"], f["quantity"], f["taker_order_id"], f["maker_order_id"]) for f in r.fills.to_pylist()] == \
        [(3, 1, 3, 2), (5, 4, 1, 2)]
    assert events(r, 1)[-2:] == [(5, "partially_filled", 4, 6, None), (5, "rested", 6, 6, None)]
    assert r.bbo.to_pylist()[-1]["bid_px"] == 102 and r.bbo.to_pylist()[-1]["bid_qty"] == 6


def test_match_modify_that_fills_completely_removes_the_order():
    r = run([new(1, "buy", 100, 10), new(2, "sell", 102, 5), modify(1, price=102, qty=5), cancel(1)])
    assert [f["quantity"] for f in r.fills.to_pylist()] == [5]
    assert events(r, 1)[-2:] == [(3, "filled", 5, 0, None),
                                 (4, "rejected", 0, 0, "order is not live (filled, cancelled or expired)")]
    last = r.bbo.to_pylist()[-1]
    assert last["bid_px"] is None and last["ask_px"] is None


def test_match_modify_keeps_time_in_force():
    r = run([new(1, "buy", 100, 10, tif="DAY"), new(2, "buy", 99, 10), modify(1, price=98, qty=20),
             modify(2, price=97)])
    assert events(r, 1)[-1] == (5, "expired", 20, 0, "end of session")
    assert all(e[1] != "expired" for e in events(r, 2))


def test_match_modify_trades_when_the_order_pool_is_full():
    rows = [new(1, "buy", 100, 10), new(2, "sell", 102, 5), modify(1, price=102)]
    from obook.feeds.orders import read_orders

    prep, msg = whole_instructions(read_orders(to_table(rows)))
    mb = books_mod.MatchBooks(len(prep.lv_price), prep.lo, prep.hi, len(prep.key_ids),
                              want=books_mod.want_bits(TABLES))
    mb.run(msg)
    assert mb.od.shape[0] == 2                        # one row per order, never grown
    fills = mb.result()["fills"]
    assert len(fills) == 1 and fills[0, 4] == 5


def test_match_reduce_at_same_price_keeps_priority():
    r = run([new(1, "buy", 100, 10), new(2, "buy", 100, 10), modify(1, qty=4), new(3, "sell", 100, 5)])
    assert [(f["maker_order_id"], f["quantity"]) for f in r.fills.to_pylist()] == [(1, 4), (2, 1)]
    assert (3, "modified", 4, 4, None) in events(r, 1)


def test_match_increase_at_same_price_goes_to_the_back():
    r = run([new(1, "buy", 100, 10), new(2, "buy", 100, 10), modify(1, qty=12), new(3, "sell", 100, 5)])
    assert [(f["maker_order_id"], f["quantity"]) for f in r.fills.to_pylist()] == [(2, 5)]
    rested = [e for e in r.events.to_pylist() if e["order_id"] == 1 and e["event"] == "rested"]
    assert rested[-1]["queue_position"] == 2


# ------------------------------------------------------------------ order types


def test_match_fok_fills_exactly_the_available_quantity():
    book = [new(1, "sell", 101, 5), new(2, "sell", 102, 3), new(3, "sell", 103, 100)]
    r = run(book + [new(4, "buy", 102, 8, tif="FOK")])
    assert [f["quantity"] for f in r.fills.to_pylist()] == [5, 3]
    r = run(book + [new(4, "buy", 102, 9, tif="FOK")])
    assert r.fills.num_rows == 0
    assert events(r, 4) == [(4, "rejected", 9, 0, "fill-or-kill order cannot fill completely")]


def test_match_market_order_on_empty_side_is_cancelled():
    r = run([new(1, "buy", 100, 10), new(2, "buy", None, 7, type="market")])
    assert r.fills.num_rows == 0
    assert events(r, 2) == [(2, "accepted", 7, 7, None),
                            (2, "cancelled", 7, 0, "unfilled rest of an IOC, FOK or market order")]


def test_match_market_order_sweeps_and_never_rests():
    r = run([new(1, "sell", 101, 5), new(2, "sell", 150, 5), new(3, "buy", None, 12, type="market")])
    assert [(f["price"], f["quantity"]) for f in r.fills.to_pylist()] == [(101, 5), (150, 5)]
    assert events(r, 3)[-1] == (3, "cancelled", 2, 0, "unfilled rest of an IOC, FOK or market order")


def test_match_ioc_leaves_nothing_behind():
    r = run([new(1, "sell", 101, 5), new(2, "buy", 102, 8, tif="IOC"), cancel(2)])
    assert events(r, 2)[-2:] == [(2, "cancelled", 3, 0, "unfilled rest of an IOC, FOK or market order"),
                                 (3, "rejected", 0, 0, "order is not live (filled, cancelled or expired)")]
    last = r.bbo.to_pylist()[-1]
    assert last["bid_px"] is None and last["ask_px"] is None


def test_match_day_orders_expire_at_session_end():
    r = run([new(1, "buy", 100, 10, tif="DAY", t=5), new(2, "buy", 99, 10, t=6), new(3, "sell", 105, 1, tif="DAY", t=9)])
    expired = [e for e in r.events.to_pylist() if e["event"] == "expired"]
    assert [(e["seq"], e["time"], e["order_id"]) for e in expired] == [(4, 9, 1), (4, 9, 3)]
    assert r.bbo.to_pylist()[-1] == {"seq": 4, "time": 9, "instrument": "AAA", "bid_px": 99, "bid_qty": 10,
                                     "bid_orders": 1, "ask_px": None, "ask_qty": None, "ask_orders": None}
    assert not [e for e in run([new(1, "buy", 100, 1, tif="DAY")], day_end=False).events.to_pylist()
                if e["event"] == "expired"]


@pytest.mark.parametrize("stp,expect", [
    ("cancel_resting", [(1, "cancelled", "self-trade prevention"), (3, "rested", None)]),
    ("cancel_incoming", [(3, "cancelled", "self-trade prevention")]),
])
def test_match_self_trade_prevention(stp, expect):
    rows = [new(1, "sell", 101, 5, owner=7), new(2, "sell", 101, 5, owner=8), new(3, "buy", 101, 8, owner=7)]
    r = run(rows, stp=stp)
    got = [(e["order_id"], e["event"], e["reason"]) for e in r.events.to_pylist()
           if e["seq"] == 3 and e["event"] in ("cancelled", "rested")]
    assert got == [(o, k, why) for o, k, why in expect]
    assert [(f["maker_order_id"], f["quantity"]) for f in r.fills.to_pylist()] == \
        ([(2, 5)] if stp == "cancel_resting" else [])
    assert run(rows).fills.num_rows == 2          # off by default


def test_match_book_assigns_missing_ids():
    r = run([new(None, "buy", 100, 1), new(5, "buy", 100, 1), new(None, "buy", 100, 1, inst="BBB"),
             new(None, "buy", 100, 1)])
    assert [(e["instrument"], e["order_id"]) for e in r.events.to_pylist() if e["event"] == "accepted"] == \
        [("AAA", 6), ("AAA", 5), ("BBB", 1), ("AAA", 7)]


def test_match_assigned_ids_named_by_later_modify_and_cancel():
    """Ids follow the new orders' own ids only: a modify or cancel naming 1 and 2 reaches the
    first two orders when no new order gives an id."""
    r = run([new(None, "sell", 101, 10), new(None, "sell", 102, 10), modify(1, qty=4), cancel(2),
             new(None, "buy", 100, 1)])
    assert [(e["order_id"], e["event"]) for e in r.events.to_pylist() if e["seq"] in (3, 4, 5)] == \
        [(1, "accepted"), (1, "modified"), (2, "cancelled"), (3, "accepted"), (3, "rested")]


def test_match_no_id_left_to_assign_is_an_error():
    with pytest.raises(ObookError, match="row 2: no order id left to assign"):
        run([new(2**63 - 1, "sell", 101, 10), new(None, "sell", 101, 10)])


def test_match_quantities_up_to_2_62_fill_or_kill_exact_beyond_is_an_error():
    half = 2**61 - 5                    # with the fill-or-kill's 10: 2**62 in all
    r = run([new(1, "sell", 101, half), new(2, "sell", 101, half), new(3, "buy", 101, 10, tif="FOK")])
    assert [e["event"] for e in r.events.to_pylist() if e["order_id"] == 3] == ["accepted", "filled"]
    assert r.bbo.to_pylist()[-1]["ask_qty"] == 2**62 - 20
    with pytest.raises(ObookError, match="quantities of instrument 'AAA' sum to"):
        run([new(1, "sell", 101, 2**62), new(2, "sell", 101, 2**62), new(3, "buy", 101, 10, tif="FOK")])


@pytest.mark.parametrize("quantities", [[2**62 + 1], [2**61, 2**61, 1], [5, 2**62 - 4]])
def test_match_quantities_one_past_2_62_error_names_the_row(quantities):
    """The limit is exact: one share past 2**62 is an error naming the row that passes it."""
    rows = [new(i + 1, "sell", 101, q) for i, q in enumerate(quantities)]
    with pytest.raises(ObookError, match=f"row {len(quantities)}: the quantities of instrument 'AAA' sum to "
                                         "more than 2\\*\\*62"):
        run(rows)
    ok = run(rows[:-1] + [new(len(rows), "sell", 101, quantities[-1] - 1)])
    assert ok.bbo.to_pylist()[-1]["ask_qty"] == 2**62


# ------------------------------------------------------------------ bad instructions and rows


def test_match_bad_instructions_are_rejected_with_reasons():
    rows = [new(1, "buy", 100, 10), cancel(9), new(2, "sell", 100, 10), modify(2, qty=3),
            new(3, "buy", 100, 0), new(4, "buy", 100, -2), new(5, "buy", 103, 1), new(6, "buy", 100, 1, inst="QQQ"),
            new(1, "buy", 100, 1), new(7, "buy", None, 1)]
    r = run(rows, tick=5, instruments=["AAA"])
    rejected = [(e["seq"], e["reason"]) for e in r.events.to_pylist() if e["event"] == "rejected"]
    assert rejected == [(2, "unknown order id"), (4, "order is not live (filled, cancelled or expired)"),
                        (5, "quantity must be positive"), (6, "quantity must be positive"),
                        (7, "price is not a multiple of the tick"), (8, "unknown instrument"),
                        (9, "duplicate order id"), (10, "limit order without a price")]


def _rejected_prices(r):
    return [(e["seq"], e["side"], e["price"], e["reason"]) for e in r.events.to_pylist() if e["event"] == "rejected"]


@pytest.mark.parametrize("workers", [1, 2])
def test_match_rejected_new_off_tick_or_unknown_instrument_shows_price_sent(tmp_path, workers):
    rows = [new(1, "buy", 100, 10), new(2, "buy", 103, 10), new(3, "sell", 205, 10, inst="QQQ"),
            new(4, "sell", None, 10, type="market", tif="IOC", inst="QQQ"), new(5, "sell", 110, 0),
            new(6, "sell", 120, 5, inst="BBB"), modify(1, price=101)]
    r = run(rows, tick=5, instruments=["AAA", "BBB"], workers=workers)
    assert _rejected_prices(r) == [(2, "buy", 103, "price is not a multiple of the tick"),
                                   (3, "sell", 205, "unknown instrument"),
                                   (4, "sell", None, "unknown instrument"),      # a market order: no price
                                   (5, "sell", 110, "quantity must be positive"),
                                   (7, None, None, "price is not a multiple of the tick")]   # a modify
    accepted = [(e["seq"], e["event"], e["price"]) for e in r.events.to_pylist() if e["seq"] in (1, 6)]
    assert accepted == [(1, "accepted", 100), (1, "rested", 100), (6, "accepted", 120), (6, "rested", 120)]


def test_match_reader_rejected_off_tick_shows_price_sent():
    rows = [new(1, "buy", 100, 10), new(2, "buy", 103, 10), new(3, "sell", None, 0, type="market")]
    t = matching.match_reader(to_table(rows), "events", tick=5).read_all()
    assert [(e["seq"], e["price"]) for e in t.to_pylist() if e["event"] == "rejected"] == [(2, 103), (3, None)]


def _csv(tmp_path, body: str):
    p = tmp_path / "orders.csv"
    p.write_text("time,instrument,order_id,action,side,price,quantity\n" + body)
    return p


@pytest.mark.parametrize("bad,why", [("3,AAA,3,new,buy,abc,5", "price is not an integer"),
                                     ("3,AAA,3,replace,buy,100,5", "unknown action"),
                                     ("3,AAA,3,new,,100,5", "needs a side"),
                                     ("3,AAA,3,new,buy,100,", "needs a quantity")])
def test_match_malformed_row_is_an_error_naming_the_row(tmp_path, bad, why):
    p = _csv(tmp_path, f"1,AAA,1,new,buy,100,5\n2,AAA,2,new,sell,101,5\n{bad}\n")
    with pytest.raises(FeedError) as e:
        matching.match(p)
    assert e.value.record == 3 and e.value.unit == "row" and why in e.value.reason
    assert str(p) in str(e.value)


def test_match_reads_csv_parquet_arrow_polars_duckdb_alike(tmp_path):
    import duckdb
    import polars as pl
    import pyarrow.parquet as pq

    rows = random_flow(21, 300, tick=1, bad=False)
    t = to_table(rows)
    base = matching.match(t)
    pq.write_table(t, tmp_path / "o.parquet")
    pa.csv.write_csv(t, tmp_path / "o.csv")
    with pa.ipc.new_file(tmp_path / "o.arrow", t.schema) as w:
        w.write_table(t)
    con = duckdb.connect()
    con.register("t", t)
    for src in (tmp_path / "o.parquet", str(tmp_path / "o.csv"), tmp_path / "o.arrow", pl.from_arrow(t),
                pl.from_arrow(t).lazy(), con.sql("SELECT * FROM t")):
        got = matching.match(src)
        assert got.fills.equals(base.fills) and got.events.equals(base.events), type(src)


@pytest.mark.parametrize("compiled", [True, False])
def test_match_book_only_loop_leaves_the_same_book_as_the_output_loop(monkeypatch, compiled):
    from obook._kernels import match as kernels
    from obook.feeds.orders import read_orders

    if not compiled:
        monkeypatch.setattr(kernels, "match_rows", kernels.match_rows.py_func)
    prep, msg = whole_instructions(read_orders(to_table(random_flow(12, 2000, tick=1, bad=True))))
    books = []
    for want in (0, books_mod.want_bits(TABLES)):          # want = 0, stp = 0: match_rows's book-only loop
        mb = books_mod.MatchBooks(len(prep.lv_price), prep.lo, prep.hi, len(prep.key_ids), want=want)
        mb.run(msg)
        books.append(mb)
    a, b = books
    assert a.lv.tobytes() == b.lv.tobytes() and a.od.tobytes() == b.od.tobytes()
    assert (a.bk[:, :6] == b.bk[:, :6]).all() and a.st[6] == b.st[6] > 0     # BK_LAST: bbo rows only


def test_match_kernel_allocates_nothing_after_warm_up():
    from numba.core.runtime import _nrt_python, rtsys

    from obook.feeds.orders import read_orders

    prep, msg = whole_instructions(read_orders(to_table(random_flow(8, 3000, tick=1, bad=False))))
    mb = books_mod.MatchBooks(len(prep.lv_price), prep.lo, prep.hi, len(prep.key_ids),
                              want=books_mod.want_bits(TABLES), stp=1)
    _nrt_python.memsys_enable_stats()
    mb.run(msg[:100])                                   # warm-up (compiles / loads)
    before = rtsys.get_allocation_stats()
    mb.run(msg[100:])
    after = rtsys.get_allocation_stats()
    assert (after.alloc, after.free, after.mi_alloc, after.mi_free) == \
        (before.alloc, before.free, before.mi_alloc, before.mi_free)
    assert np.count_nonzero(mb.st) > 0


_VALUES = {"instrument": ["AAA", "BBB", "", " AAA "], "order_id": ["1", "2", "3", "", "x", "-1", "99999999999"],
           "action": ["new", "N", "modify", "cancel", "C", "", "replace"], "side": ["buy", "S", "", "up"],
           "type": ["limit", "market", "", "stop"], "tif": ["GTC", "day", "IOC", "fok", "", "GTD"],
           "price": ["100", "101", "99", "", "1e3", "-5", "9223372036854775807"],
           "quantity": ["1", "5", "0", "-3", "", "2.5"], "owner": ["", "1", "2"]}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.fixed_dictionaries({k: st.sampled_from(v) for k, v in _VALUES.items()}), min_size=1, max_size=25))
def test_match_arbitrary_text_rows_give_tables_or_a_row_error(rows):
    t = pa.table({k: pa.array([r[k] for r in rows], pa.string()) for k in _VALUES})
    try:
        r = matching.match(t, stp="cancel_resting", levels=2)
    except FeedError as e:
        assert 1 <= e.record <= len(rows) and e.unit == "row"
        return
    except ObookError as e:        # e.g. one instrument's prices span too many ticks
        assert "ticks" in str(e)
        return
    accepted = sum(1 for e in r.events.to_pylist() if e["event"] in ("accepted", "rejected", "cancelled"))
    assert accepted >= 1
    for q in r.bbo.to_pylist():
        assert q["bid_px"] is None or q["ask_px"] is None or q["bid_px"] < q["ask_px"]


def test_match_extreme_ids_and_prices_do_not_overflow():
    big = 2**63 - 1
    r = run([new(big, "buy", 100, 1), new(-big, "sell", 100, 1)])
    assert [(f["taker_order_id"], f["maker_order_id"]) for f in r.fills.to_pylist()] == [(-big, big)]
    with pytest.raises(ObookError, match="span"):
        run([new(1, "buy", -big, 1), new(2, "buy", big, 1)])


def test_match_prices_spanning_too_many_ticks_error_names_the_file(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("instrument,action,side,price,quantity\nX,new,sell,10,5\nX,new,buy,100000000,5\n")
    with pytest.raises(ObookError, match=r"^.*wide\.csv: prices of instrument 'X' span 99,999,991 ticks"):
        matching.match(str(path))


@pytest.mark.parametrize("tick", [1.5, True, "5"])
def test_match_tick_that_is_no_integer_is_an_error(tick):
    with pytest.raises(ObookError, match="tick must be a positive integer"):
        run([new(1, "buy", 100, 10)], tick=tick)
    with pytest.raises(ObookError, match="tick must be a positive integer"):
        matching.match_reader(to_table([new(1, "buy", 100, 10)]), tick=tick)


@pytest.mark.parametrize("option, value, message", [
    ("workers", "2", "workers must be an integer"), ("workers", True, "workers must be an integer"),
    ("levels", True, "levels must be an integer"), ("tables", 5, "tables must be a name"),
    ("tick", 5.0, "tick must be a positive integer, not 5.0"),
    ("instruments", 5, "instruments must be a name"), ("instruments", [5], "instruments must be names"),
    ("day_end", "no", "day_end must be True or False")])
def test_match_argument_of_wrong_type_raises_obook_error_naming_it(option, value, message):
    rows = to_table(random_flow(1, 50, tick=1))
    with pytest.raises(ObookError, match=message):
        matching.match(rows, **{option: value})


def test_match_tables_one_name_is_that_table():
    rows = to_table(random_flow(1, 200, tick=1))
    assert matching.match(rows, tables="fills").fills.equals(matching.match(rows, tables=("fills",)).fills)


def test_match_instruments_text_with_spaces_names_each_instrument():
    rows = to_table(random_flow(1, 200, tick=1))
    names = sorted(set(rows.column("instrument").to_pylist()))
    assert len(names) >= 2
    spaced = matching.match(rows, instruments=" , ".join(names)).events
    assert spaced.equals(matching.match(rows, instruments=names).events)
    assert "unknown instrument" not in set(spaced.column("reason").drop_null().to_pylist())


@pytest.mark.parametrize("call", [lambda p: matching.match(p), lambda p: matching.match_reader(p)])
def test_match_empty_order_path_raises_saying_it_is_empty(call):
    with pytest.raises(ObookError, match="^the order file's path is empty$"):
        call("")
