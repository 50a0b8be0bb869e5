"""Time priority: the orders table's queue_shares_ahead / queue_orders_ahead against a
pure-Python FIFO book (tests/reference_fifo.py), ITCH and CSV, 1/2/3 workers."""

import pytest

import obook
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch

from itch_builder import ItchBuilder
from reference_csv_tables import reference_csv_tables
from reference_fifo import csv_queue, itch_queue
from reference_tables import reference_orders

WORKERS = [1, 2, 3]


def engine_queue(path, workers):
    t = obook.orders(path, workers=workers).read_all()
    return list(zip(t.column("queue_shares_ahead").to_pylist(), t.column("queue_orders_ahead").to_pylist()))


def priority_feed(path):
    """Several orders a level, then every way a queue changes, by hand."""
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.directory(2, "BBB")
    for ref, shares in ((1, 100), (2, 200), (3, 300), (4, 400), (5, 500)):
        b.add(1, ref, "B", shares, 10_000)           # five at one price: 0, 100, 300, 600, 1000 ahead
    b.add(1, 6, "B", 50, 9_900)
    b.add(2, 1, "S", 70, 20_000)                     # the same ref in another book
    b.add(2, 2, "S", 30, 20_000)
    b.cancel(1, 3, 100)                              # partial cancel in the middle keeps its place
    b.execute(1, 1, 40, match=1)                     # partial execution at the front
    b.delete(1, 2)                                   # cancel from the middle: 3, 4, 5 move up
    b.execute_price(1, 4, 10, 10_000, match=2)       # partial C in the middle
    b.replace(1, 3, 7, 200, 10_000)                  # same price: loses priority, to the back
    b.replace(1, 4, 8, 390, 9_900)                   # another price: back of that level
    b.cancel(1, 5, 500)                              # cancel to zero: no place
    b.execute(1, 1, 60, match=3)                     # the front leaves
    b.add(1, 9, "B", 5, 10_000)
    b.delete(2, 1)
    b.cancel(2, 2, 1)
    b.execute(1, 7, 50, match=4)                     # now at the front
    return b.write(path)


@pytest.mark.parametrize("workers", WORKERS)
def test_queue_hand_feed_matches_fifo_reference(tmp_path, workers):
    path = priority_feed(tmp_path / "q.itch")
    rows, err = reference_orders(path)
    assert err is None
    expected = itch_queue(rows)
    assert expected[:5] == [(0, 0), (100, 1), (300, 2), (600, 3), (1000, 4)]
    assert engine_queue(path, workers) == expected


def test_queue_hand_feed_hand_checked_rows(tmp_path):
    path = priority_feed(tmp_path / "q.itch")
    t = obook.orders(path, workers=1).read_all().to_pylist()
    got = [(r["action"], r["ref"], r["new_ref"], r["queue_shares_ahead"], r["queue_orders_ahead"])
           for r in t if r["locate"] == 1][6:]
    assert got == [
        ("X", 3, None, 300, 2),          # 100 + 200 ahead, 200 left
        ("E", 1, None, 0, 0),            # still first, 60 left
        ("D", 2, None, None, None),
        ("C", 4, None, 260, 2),          # behind 1 (60) and 3 (200)
        ("U", 3, 7, 950, 3),             # behind 1 (60), 4 (390), 5 (500)
        ("U", 4, 8, 50, 1),              # behind 6 at 9_900
        ("X", 5, None, None, None),
        ("E", 1, None, None, None),
        ("A", 9, None, 200, 1),          # behind 7
        ("E", 7, None, 0, 0),
    ]


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("seed,stocks", [(1, 1), (4, 5), (11, 8)])
def test_queue_generated_itch_matches_fifo_reference(tmp_path, workers, seed, stocks):
    path = tmp_path / "day.itch"
    write_itch(path, 20_000, stocks, seed=seed)
    rows, err = reference_orders(path)
    assert err is None
    expected = itch_queue(rows)
    assert sum(1 for q in expected if q[1] not in (None, 0)) > 1000   # deep queues were exercised
    assert engine_queue(path, workers) == expected


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("seed,tickers", [(2, 1), (5, 12)])
def test_queue_generated_csv_matches_fifo_reference(tmp_path, workers, seed, tickers):
    path = tmp_path / "gen.csv"
    write_csv(path, 20_000, tickers, seed=seed, depth=40)
    _, rows, _, err = reference_csv_tables(path, 1)
    assert err is None
    expected = csv_queue(rows)
    assert sum(1 for q in expected if q[1] not in (None, 0)) > 1000
    assert engine_queue(path, workers) == expected


def test_queue_csv_reduce_to_keeps_place(tmp_path):
    path = tmp_path / "q.csv"
    path.write_bytes(b"Time,Ticker,Order,T,Shares,Price\n"
                     b"1,AAA,a,B,100,1000\n2,AAA,b,B,50,1000\n3,AAA,c,B,0,1000\n"
                     b"4,AAA,b,C,20,0\n5,AAA,a,C,0,0\n6,AAA,c,E,0,0\n7,AAA,b,E,5,0\n")
    assert engine_queue(path, 2) == [(0, 0), (100, 1), (150, 2), (100, 1), (None, None),
                                     (None, None), (0, 0)]


def _without_queue_columns(t):
    assert t["queue_shares_ahead"].null_count == t.num_rows == t["queue_orders_ahead"].null_count
    return t.drop_columns(["queue_shares_ahead", "queue_orders_ahead"])


@pytest.mark.parametrize("workers", [1, 2])
def test_orders_without_queue_positions_itch_csv_same_rows_null_places(tmp_path, workers):
    itch, csv = tmp_path / "day.itch", tmp_path / "day.csv"
    write_itch(itch, 30_000, 12, seed=4)
    write_csv(csv, 20_000, 8, seed=4)
    for path in (itch, csv):
        full = obook.orders(path, workers=1).read_all()
        bare = obook.orders(path, workers=workers, queue_positions=False).read_all()
        assert full["queue_shares_ahead"].null_count < full.num_rows     # the default has places
        assert _without_queue_columns(bare).equals(full.drop_columns(["queue_shares_ahead", "queue_orders_ahead"]))


@pytest.mark.parametrize("workers", [1, 2])
def test_orders_without_queue_positions_databento_clears_same_rows_in_id_order(tmp_path, workers):
    # a clear (R) removes a book's orders: without queues its rows come in order-id order
    from obook.gen.databento import mbo_flow, write_dbn

    path = tmp_path / "mbo.dbn"
    write_dbn(path, mbo_flow(4000, 3, 7), version=3)
    full = obook.orders(path, workers=1).read_all()
    bare = _without_queue_columns(obook.orders(path, workers=workers, queue_positions=False).read_all())
    assert "R" in set(full["action"].to_pylist())
    key = ["seq", "ref"]
    full = full.drop_columns(["queue_shares_ahead", "queue_orders_ahead"])
    assert bare.sort_by([(k, "ascending") for k in key]).equals(full.sort_by([(k, "ascending") for k in key]))
