"""obook.trades / obook.orders / obook.depth of CSV order feeds against the plain reference
(tests/reference_csv_tables.py): executions, the T / X prints, order ids as text."""

import pyarrow as pa
import pytest

import obook
from obook.errors import FeedError
from obook.gen.csv import write_csv

from reference_csv_tables import reference_csv_tables

WORKERS = [1, 2, 3]
HEADER = b"Time,Ticker,Order,T,Shares,Price\n"


def _rows(reader, columns):
    rows, error = [], None
    try:
        for batch in reader:
            c = batch.to_pydict()
            rows.extend(zip(*(c[k] for k in columns)))
    except FeedError as e:
        error = e
    return rows, error


def trades(path, workers):
    return _rows(obook.trades(path, workers=workers),
                 ("seq", "time", "ticker", "kind", "price", "shares", "side", "order_id"))


def orders(path, workers):
    return _rows(obook.orders(path, workers=workers),
                 ("seq", "time", "ticker", "action", "side", "price", "shares", "remaining", "order_id"))


def depth(path, workers, levels):
    rows, error = [], None
    try:
        for batch in obook.depth(path, workers=workers, levels=levels):
            c = batch.to_pydict()
            for i in range(batch.num_rows):
                sides = []
                for side in ("bid", "ask"):
                    sides.append([None if c[f"{side}_px_{k}"][i] is None else
                                  (c[f"{side}_px_{k}"][i], c[f"{side}_qty_{k}"][i], c[f"{side}_orders_{k}"][i])
                                  for k in range(1, levels + 1)])
                rows.append((c["seq"][i], c["time"][i], c["ticker"][i], sides[0], sides[1]))
    except FeedError as e:
        error = e
    return rows, error


def same_error(error, expected):
    if expected is None:
        return error is None
    return error is not None and error.record == expected[0] and expected[1] in error.reason


def check_all(path, workers, levels=3):
    rt, ro, rd, err = reference_csv_tables(path, levels)
    for got, want in ((trades(path, workers), rt), (orders(path, workers), ro),
                      (depth(path, workers, levels), rd)):
        rows, error = got
        assert rows == want
        assert same_error(error, err), (error, err)
    return rt, ro, rd, err


def edge_feed(tmp_path, tail=b""):
    lines = [
        b"1,AAA,17,B,100,1000",
        b"2,AAA,x9,S,50,1100",
        b"3,AAA,17,E,30,0",           # partial execution at the resting price
        b"4,AAA,q,T,10,1050",         # print: the id is not looked up
        b"5,AAA,x9,C,20,0",           # reduce to 20: cancels 30
        b"6,AAA,x9,C,25,0",           # reduce to more than remains: changes nothing
        b"7,BBB,17,S,5,2000",         # the same id live under another ticker
        b"8,BBB,17,F,0,0",            # fill removes
        b"9,AAA,z,B,0,990",           # a 0-share order makes a level of 0 shares
        b"10,AAA,z,E,5,0",            # executed by anything: removed, no trade printed
        b"11,AAA,17,E,500,0",         # clamped to the 70 remaining
        b"",                          # blank lines count in line numbers
        b"12,CCC,,T,7,3000,MPID,extra",   # an empty id; a ticker first seen on a print
        b"13,AAA,\xff\xfe,B,3,1000",  # not UTF-8
        b"14,AAA,\xff\xfe,X,3,1000",
        b"15,AAA,\xff\xfe,D,0,0",
        b"16,AAA,x9,C,0,0",           # reduce to 0 removes
    ]
    path = tmp_path / "edge.csv"
    header = HEADER.rstrip(b"\n") + b",MPID,Note\n"     # line 12's columns after Price
    path.write_bytes(header + b"\r\n".join(lines) + b"\r\n" + tail)
    return path


@pytest.mark.parametrize("workers", WORKERS)
def test_csv_tables_edge_feed_match_reference(tmp_path, workers):
    rt, ro, rd, err = check_all(edge_feed(tmp_path), workers)
    assert err is None
    assert [r[3] for r in rt] == ["E", "T", "E", "T", "X"]
    assert [r[6] for r in ro] == [100, 50, 30, 30, 0, 5, 5, 0, 0, 70, 3, 3, 20]


def test_csv_trades_edge_feed_hand_checked_rows(tmp_path):
    rows, error = trades(edge_feed(tmp_path), 2)
    assert error is None
    assert rows == [
        (4, 3, "AAA", "E", 1000, 30, "B", "17"),
        (5, 4, "AAA", "T", 1050, 10, None, "q"),
        (12, 11, "AAA", "E", 1000, 70, "B", "17"),
        (14, 12, "CCC", "T", 3000, 7, None, ""),
        (16, 14, "AAA", "X", 1000, 3, None, "\ufffd\ufffd"),
    ]


def test_csv_trades_itch_columns_are_null(tmp_path):
    t = obook.trades(edge_feed(tmp_path), workers=1).read_all()
    assert t.column("ref").null_count == t.num_rows
    assert t.column("match").null_count == t.num_rows
    assert t.column("locate").null_count == t.num_rows
    o = obook.orders(edge_feed(tmp_path), workers=1).read_all()
    for name in ("ref", "new_ref", "match"):
        assert o.column(name).null_count == o.num_rows
    assert o.column("order_id").null_count == 0


@pytest.mark.parametrize("workers", WORKERS)
def test_csv_tables_failing_line_stop_at_same_line(tmp_path, workers):
    path = edge_feed(tmp_path, tail=b"17,AAA,nope,E,1,0\r\n18,AAA,w,B,1,1000\r\n")
    rt, ro, rd, err = check_all(path, workers)
    assert err == (19, "unknown order 'nope'")
    assert rt and ro and rd


@pytest.mark.parametrize("workers", WORKERS)
def test_csv_tables_last_line_cut_short_of_a_wide_header_error_like_reference(tmp_path, workers):
    path = tmp_path / "cut.csv"
    path.write_bytes(b"Time,Ticker,Order,T,Shares,Price,Venue\n1,AAA,a,B,5,1000,Q\n2,AAA,b,S,7,1100")
    rt, ro, rd, err = check_all(path, workers)
    assert err == (3, "the last line is cut: it has 6 of its header's 7 fields and no line end")
    assert [r[0] for r in ro] == [2]


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("seed,tickers", [(1, 3), (5, 40)])
def test_csv_tables_generated_feed_match_reference(tmp_path, workers, seed, tickers):
    path = tmp_path / "gen.csv"
    write_csv(path, 30_000, tickers, seed=seed, depth=30)
    rt, ro, rd, err = check_all(path, workers, levels=4)
    assert err is None
    kinds = {r[3] for r in rt}
    assert kinds == {"E", "T", "X"}
    assert {r[3] for r in ro} == {"A", "C", "E", "D"}


def test_csv_tables_small_blocks_order_ids_across_batches(tmp_path):
    """Batches cut every few lines: each batch's order ids come from its own bytes."""
    from obook.engine.replay import Replay

    path = tmp_path / "gen.csv"
    write_csv(path, 3_000, 5, seed=2, depth=10)
    rt, ro, _, _ = reference_csv_tables(path, 1)
    for workers in (1, 2):
        r = Replay(path, workers=workers, tables=("trades", "orders"), block_size=4096)
        got = {"trades": [], "orders": []}
        for table, batch in r.table_batches():
            got[table].extend(batch.column("order_id").to_pylist())
        assert got["trades"] == [row[7] for row in rt]
        assert got["orders"] == [row[8] for row in ro]


def test_csv_bbo_unchanged_by_prints(tmp_path):
    """The prints reach only the trades table: the BBO of a replay of every table is the BBO."""
    from obook.engine.replay import Replay

    path = tmp_path / "gen.csv"
    write_csv(path, 5_000, 4, seed=9)
    alone = obook.bbo(path, workers=2).read_all()
    r = Replay(path, workers=2, tables=("bbo", "trades", "orders", "depth"))
    together = pa.Table.from_batches([b for t, b in r.table_batches() if t == "bbo"])
    assert together.equals(alone)


@pytest.mark.parametrize("workers", [1, 2])
def test_csv_orders_table_replayed_reproduces_bbo_and_depth(tmp_path, workers):
    """The orders rows alone (book per ticker, orders keyed by their text id) rebuild the
    BBO and depth tables (the documented rules of tests/reference_tables.replay_orders_table)."""
    from reference_tables import replay_orders_table

    for path in (edge_feed(tmp_path), tmp_path / "gen.csv"):
        if not path.exists():
            write_csv(path, 20_000, 6, seed=4, depth=25)
        o = [(r["seq"], r["time"], r["ticker"], r["ticker"], r["action"], r["side"], r["price"], r["shares"],
              r["remaining"], r["order_id"], None, None)
             for r in obook.orders(path, workers=workers).read_all().to_pylist()]
        rebuilt_bbo, rebuilt_depth = replay_orders_table(o, levels=3)
        b = obook.bbo(path, workers=workers).read_all().to_pylist()
        assert rebuilt_bbo == [(r["seq"], r["time"], r["ticker"], r["ticker"], r["bid_px"], r["bid_qty"],
                                r["bid_orders"] or 0, r["ask_px"], r["ask_qty"], r["ask_orders"] or 0) for r in b]
        d, _ = depth(path, workers, 3)
        assert rebuilt_depth == [(s, t, tk, tk, bids, asks) for s, t, tk, bids, asks in d]


@pytest.mark.parametrize("workers", WORKERS)
def test_csv_execute_of_no_share_prints_no_trade_and_leaves_bars_low(tmp_path, workers):
    """An E on a 0-share order (or of 0 shares) executes nothing: no 0-share trade, so no
    bar's low moves to the order's price; the orders table still shows the E."""
    import obook

    path = tmp_path / "zero.csv"
    path.write_bytes(HEADER + b"1,AAA,a,B,100,1000\n2,AAA,b,S,100,1100\n3,AAA,a,E,10,0\n"
                     b"4,AAA,z,B,0,5\n5,AAA,z,E,7,0\n6,AAA,a,E,0,0\n")
    rt, ro, _rd, err = check_all(path, workers)
    assert err is None and [(r[0], r[5]) for r in rt] == [(4, 10)]
    assert [(r[0], r[3], r[6], r[7]) for r in ro[-2:]] == [(6, "E", 0, 0), (7, "E", 0, 90)]
    bars = obook.bars(path, "1 minute", workers=workers).read_all().to_pylist()
    assert [(b["low"], b["high"], b["volume"]) for b in bars] == [(1000, 1000, 10)]
