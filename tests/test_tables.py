"""obook.trades / obook.orders / obook.depth against the pure-Python references
(tests/reference_tables.py), and against each other and obook.bbo."""

import pyarrow as pa
import pytest

import obook
from obook.errors import FeedError, TruncatedFeedError
from obook.gen.itch import write_itch

from itch_builder import ItchBuilder
from reference_itch import SHARES_PAST_INT64, reference_bbo
from reference_tables import reference_all, replay_orders_table

_cache = {}


def _cached(path, levels=10):
    key = (str(path), path.stat().st_mtime_ns, levels)
    if key not in _cache:
        _cache[key] = reference_all(path, levels)
    return _cache[key]


def reference_trades(path):
    t, _, _, err = _cached(path)
    return t, err


def reference_orders(path):
    _, o, _, err = _cached(path)
    return o, err


def reference_depth(path, levels=10):
    _, _, d, err = _cached(path, levels)
    return d, err

WORKERS = [1, 2, 3]

_missing = [name for name in ("trades", "orders", "depth") if not hasattr(obook, name)]
pytestmark = pytest.mark.skipif(bool(_missing), reason=f"obook.{', obook.'.join(_missing)} "
                                "not in the engine yet")


# ---------------------------------------------------------------- engine rows as tuples

def _trade_rows(batch):
    c = batch.to_pydict()
    return list(zip(c["seq"], c["time"], c["locate"], c["ticker"], c["kind"], c["price"],
                    c["shares"], c["side"], c["ref"], c["match"], c["broken"]))


def _order_rows(batch):
    c = batch.to_pydict()
    return list(zip(c["seq"], c["time"], c["locate"], c["ticker"], c["action"], c["side"],
                    c["price"], c["shares"], c["remaining"], c["ref"], c["new_ref"], c["match"]))


def _levels(c, side, levels, i):
    out = []
    for k in range(1, levels + 1):
        px = c[f"{side}_px_{k}"][i]
        out.append(None if px is None else (px, c[f"{side}_qty_{k}"][i], c[f"{side}_orders_{k}"][i]))
    return out


def _depth_rows(levels):
    def convert(batch):
        c = batch.to_pydict()
        return [(c["seq"][i], c["time"][i], c["locate"][i], c["ticker"][i],
                 _levels(c, "bid", levels, i), _levels(c, "ask", levels, i))
                for i in range(batch.num_rows)]
    return convert


def _bbo_rows(batch):
    c = batch.to_pydict()
    return [(s, t, loc, tk, bp, bq, bn or 0, ap, aq, an or 0) for s, t, loc, tk, bp, bq, bn, ap, aq, an in zip(
        c["seq"], c["time"], c["locate"], c["ticker"], c["bid_px"], c["bid_qty"], c["bid_orders"],
        c["ask_px"], c["ask_qty"], c["ask_orders"])]


def collect(make_reader, convert):
    """(rows delivered before the error, the FeedError or None)."""
    rows, error = [], None
    try:
        for batch in make_reader():
            rows.extend(convert(batch))
    except FeedError as e:
        error = e
    return rows, error


def trades(path, workers):
    return collect(lambda: obook.trades(path, workers=workers), _trade_rows)


def orders(path, workers):
    return collect(lambda: obook.orders(path, workers=workers), _order_rows)


def depth(path, workers, levels=10):
    kw = {} if levels == 10 else {"levels": levels}
    return collect(lambda: obook.depth(path, workers=workers, **kw), _depth_rows(levels))


def bbo(path, workers):
    return collect(lambda: obook.bbo(path, workers=workers), _bbo_rows)


def same_error(error, expected):
    """The engine's error is the reference's ``(seq, reason)``."""
    if expected is None:
        return error is None
    return error is not None and error.record == expected[0] and expected[1] in error.reason


def level1_changes(depth_rows):
    """The level-1 slice of depth rows, reduced to the rows where (bid_px, bid_qty, ask_px,
    ask_qty) changed for the locate: the layout of bbo rows."""
    out, last = [], {}
    for seq, time, locate, ticker, bids, asks in depth_rows:
        b = bids[0] or (None, None, 0)
        a = asks[0] or (None, None, 0)
        key = (b[0], b[1], a[0], a[1])
        if key != last.get(locate, (None, None, None, None)):
            out.append((seq, time, locate, ticker) + b + a)
        last[locate] = key
    return out


# ---------------------------------------------------------------- feeds

@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("tables") / "day.itch"
    write_itch(path, 40_000, 8, seed=11)
    return path


def edge_feed():
    """Every kind of trade and order event, by hand."""
    b = ItchBuilder()
    b.system("O")
    b.directory(1, "AAPL")
    b.directory(2, "MSFT")                               # locate 3 has no directory entry
    b.add(1, 10, "B", 100, 1_000_000)
    b.add(1, 11, "S", 100, 1_001_000)
    b.add(1, 12, "B", 50, 999_000)                       # level 2
    b.add(1, 16, "B", 30, 998_000, mpid="GSCO")          # F, level 3
    b.add(1, 17, "B", 30, 1_000_000)                     # level 1: 2 orders
    b.cancel(1, 12, 20)                                  # partial cancel at level 2
    b.add(2, 10, "B", 5, 500_000)                        # same ref, another book
    b.add(3, 90, "S", 7, 42_000)                         # no ticker
    b.replace(1, 11, 13, 80, 1_000_500)                  # replace
    b.replace(1, 13, 14, 70, 1_000_400)                  # replace of a replaced order
    b.replace(1, 17, 18, 30, 1_000_000)                  # same price and shares: the level keeps its totals
    b.execute(1, 10, 40, match=1)                        # partial execution
    b.execute(1, 10, 60, match=2)                        # execution to zero
    b.execute_price(1, 14, 20, 1_000_300, match=3)       # printable C, at its own price
    b.execute_price(1, 14, 10, 1_000_200, match=4, printable="N")   # non-printable C: book only
    b.execute_price(1, 14, 40, 1_000_400, match=5, printable="N")   # non-printable C to zero
    b.add(1, 15, "S", 10, 990_000)                       # crossed book, reported as is
    b.cancel(1, 15, 10)                                  # cancel to zero
    b.trade(1, 0, "B", 100, 1_000_000, match=6)          # hidden execution (P)
    b.trade(1, 99, "S", 25, 1_000_100, match=7)          # P with a ref
    b.cross(1, 5_000_000_000, 1_000_050, match=8)        # Q of more than 2**32 shares
    b.broken(6, locate=1)                                # B
    b.broken(3)                                          # B of locate 0
    b.execute_price(3, 90, 7, 42_100, match=9)           # C on a book with no ticker
    b.delete(2, 10)
    b.delete(1, 16)                                      # below the touch
    b.execute(1, 18, 30, match=10)
    b.trading_action(1, "H")
    return b


@pytest.fixture
def edge(tmp_path):
    return edge_feed().write(tmp_path / "edge.itch")


# ---------------------------------------------------------------- schemas

def test_trades_schema_columns_and_types(edge):
    schema = obook.trades(edge, workers=1).schema
    assert [(f.name, f.type) for f in schema] == [
        ("seq", pa.int64()), ("time", pa.uint64()), ("ticker", pa.string()), ("locate", pa.uint16()),
        ("kind", pa.string()), ("price", pa.int64()), ("shares", pa.int64()), ("side", pa.string()),
        ("ref", pa.uint64()), ("order_id", pa.string()), ("match", pa.uint64()), ("broken", pa.bool_())]


def test_orders_schema_columns_and_types(edge):
    schema = obook.orders(edge, workers=1).schema
    assert [(f.name, f.type) for f in schema] == [
        ("seq", pa.int64()), ("time", pa.uint64()), ("ticker", pa.string()), ("locate", pa.uint16()),
        ("action", pa.string()), ("side", pa.string()), ("price", pa.int64()), ("shares", pa.int64()),
        ("remaining", pa.int64()), ("ref", pa.uint64()), ("order_id", pa.string()), ("new_ref", pa.uint64()),
        ("match", pa.uint64()), ("queue_shares_ahead", pa.int64()), ("queue_orders_ahead", pa.int64())]


@pytest.mark.parametrize("levels", [1, 3, 10])
def test_depth_schema_levels_columns_per_side(edge, levels):
    schema = obook.depth(edge, workers=1, levels=levels).schema
    expected = [("seq", pa.int64()), ("time", pa.uint64()), ("ticker", pa.string()), ("locate", pa.uint16())]
    for side in ("bid", "ask"):
        for i in range(1, levels + 1):
            expected += [(f"{side}_px_{i}", pa.int64()), (f"{side}_qty_{i}", pa.int64()),
                         (f"{side}_orders_{i}", pa.int32())]
    assert [(f.name, f.type) for f in schema] == expected


# ---------------------------------------------------------------- hand-made feed

@pytest.mark.parametrize("workers", WORKERS)
def test_trades_edge_feed_matches_reference(edge, workers):
    expected, err = reference_trades(edge)
    assert err is None
    assert trades(edge, workers) == (expected, None)


@pytest.mark.parametrize("workers", WORKERS)
def test_orders_edge_feed_matches_reference(edge, workers):
    expected, err = reference_orders(edge)
    assert err is None
    assert orders(edge, workers) == (expected, None)


@pytest.mark.parametrize("levels", [1, 2, 10])
@pytest.mark.parametrize("workers", WORKERS)
def test_depth_edge_feed_matches_reference(edge, workers, levels):
    expected, err = reference_depth(edge, levels)
    assert err is None
    assert depth(edge, workers, levels) == (expected, None)


def test_trades_edge_feed_hand_checked_rows(edge):
    rows, error = trades(edge, 1)
    assert error is None
    got = [(kind, price, shares, side, ref, match, ticker, broken)
           for _, _, _, ticker, kind, price, shares, side, ref, match, broken in rows]
    assert got == [
        ("E", 1_000_000, 40, "B", 10, 1, "AAPL", False),
        ("E", 1_000_000, 60, "B", 10, 2, "AAPL", False),
        ("C", 1_000_300, 20, "S", 14, 3, "AAPL", True),   # the C's price, not the order's; B 3 below
        ("P", 1_000_000, 100, "B", 0, 6, "AAPL", True),   # B 6 below
        ("P", 1_000_100, 25, "S", 99, 7, "AAPL", False),
        ("Q", 1_000_050, 5_000_000_000, None, None, 8, "AAPL", False),
        ("B", None, None, None, None, 6, "AAPL", False),
        ("B", None, None, None, None, 3, None, False),
        ("C", 42_100, 7, "S", 90, 9, None, False),
        ("E", 1_000_000, 30, "B", 18, 10, "AAPL", False),
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_trades_break_before_or_after_trade_and_after_failure_broken_flag(tmp_path, workers):
    """Only a later B breaks a trade, also one past a failing record (the feed says so);
    B messages past a framing error are not read."""
    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.broken(2, locate=1)                                # before its trade: breaks nothing
    b.add(1, 10, "B", 100, 1_000_000)
    b.execute(1, 10, 10, match=1)
    b.execute(1, 10, 10, match=2)
    b.execute(1, 10, 10, match=3)
    b.execute(1, 10, 10, match=4)
    b.broken(1, locate=1)
    b.delete(1, 77)                                      # unknown ref: the replay stops here
    b.broken(3, locate=1)                                # later in the feed: still a break of 3
    path = b.write(tmp_path / "f.itch")
    with open(path, "ab") as f:
        f.write(b"\x00\x13B" + b"\x00" * 8 + (4).to_bytes(8, "big"))   # a truncated B: not read
    rows, error = trades(path, workers)
    assert error is not None and "unknown order ref" in error.reason
    assert [(r[4], r[9], r[10]) for r in rows] == [
        ("B", 2, False), ("E", 1, True), ("E", 2, False), ("E", 3, True), ("E", 4, False), ("B", 1, False)]
    assert (rows, error.record) == (reference_trades(path)[0], reference_trades(path)[1][0])


def test_orders_edge_feed_replace_rows_carry_both_refs(edge):
    rows, _ = orders(edge, 1)
    u = [r[4:] for r in rows if r[4] == "U"]
    assert u == [("U", "S", 1_000_500, 80, 80, 11, 13, None),
                 ("U", "S", 1_000_400, 70, 70, 13, 14, None),
                 ("U", "B", 1_000_000, 30, 30, 17, 18, None)]


def test_orders_non_printable_execution_is_order_row_not_trade(edge):
    o, _ = orders(edge, 1)
    t, _ = trades(edge, 1)
    assert [r[4:] for r in o if r[11] in (4, 5)] == [("C", "S", 1_000_400, 10, 40, 14, None, 4),
                                                     ("C", "S", 1_000_400, 40, 0, 14, None, 5)]
    assert [r for r in t if r[9] in (4, 5)] == []


def test_depth_change_below_shown_levels_gives_no_row(tmp_path):
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 1, "B", 100, 1000)
    b.add(1, 2, "B", 100, 900)
    s3 = b.add(1, 3, "B", 100, 800)                      # level 3
    b.cancel(1, 3, 50)                                   # level 3 changes
    b.add(1, 4, "S", 100, 1100)
    path = b.write(tmp_path / "f.itch")
    rows, error = depth(path, 1, levels=2)
    assert error is None
    assert [r[0] for r in rows] == [2, 3, 6]
    rows3, _ = depth(path, 1, levels=3)
    assert [r[0] for r in rows3] == [2, 3, s3, s3 + 1, 6]
    assert rows3[-2][4] == [(1000, 100, 1), (900, 100, 1), (800, 50, 1)]


# ---------------------------------------------------------------- generated feeds

@pytest.mark.parametrize("workers", WORKERS)
def test_trades_generated_day_matches_reference(day, workers):
    expected, err = reference_trades(day)
    assert err is None and {r[4] for r in expected} == {"E", "C", "P", "Q", "B"}
    assert trades(day, workers) == (expected, None)


@pytest.mark.parametrize("workers", WORKERS)
def test_orders_generated_day_matches_reference(day, workers):
    expected, err = reference_orders(day)
    assert err is None and {r[4] for r in expected} == set("AECXDU")
    assert orders(day, workers) == (expected, None)


@pytest.mark.parametrize("workers", WORKERS)
def test_depth_generated_day_matches_reference(day, workers):
    expected, err = reference_depth(day)
    assert err is None and len(expected) > 10_000
    assert depth(day, workers) == (expected, None)


@pytest.mark.parametrize("seed,stocks", [(1, 1), (2, 3), (3, 40)])
def test_tables_generated_gzip_feeds_match_reference(tmp_path, seed, stocks):
    path = tmp_path / "f.itch.gz"
    write_itch(path, 15_000, stocks, seed=seed)
    for workers in (1, 2):
        assert trades(path, workers) == (reference_trades(path)[0], None)
        assert orders(path, workers) == (reference_orders(path)[0], None)
        assert depth(path, workers, levels=5) == (reference_depth(path, 5)[0], None)


# ---------------------------------------------------------------- consistency between tables

@pytest.mark.parametrize("workers", WORKERS)
def test_depth_level1_slice_equals_bbo(day, workers):
    d, err = depth(day, workers)
    assert err is None
    expected, error = bbo(day, workers)
    assert error is None
    assert level1_changes(d) == expected


def test_depth_level1_slice_equals_bbo_edge_feed(edge):
    assert level1_changes(depth(edge, 2)[0]) == bbo(edge, 2)[0]


@pytest.mark.parametrize("workers", WORKERS)
def test_orders_table_replayed_reproduces_bbo_and_depth(day, workers):
    o, err = orders(day, workers)
    assert err is None
    rebuilt_bbo, rebuilt_depth = replay_orders_table(o, levels=10)
    assert rebuilt_bbo == bbo(day, workers)[0]
    assert rebuilt_depth == depth(day, workers)[0]


def test_orders_table_replayed_reproduces_depth_edge_feed(edge):
    o, _ = orders(edge, 3)
    rebuilt_bbo, rebuilt_depth = replay_orders_table(o, levels=2)
    assert rebuilt_bbo == bbo(edge, 3)[0]
    assert rebuilt_depth == depth(edge, 3, levels=2)[0]


def test_tables_same_rows_for_any_worker_count(day):
    assert trades(day, 1) == trades(day, 3)
    assert orders(day, 1) == orders(day, 2)
    assert depth(day, 1, levels=4) == depth(day, 3, levels=4)


# ---------------------------------------------------------------- failing records

FAILURES = {
    "unknown": lambda b: b.delete(1, 777),
    "unknown_execute": lambda b: b.execute(1, 777, 1, match=50),
    "duplicate": lambda b: b.add(1, 12, "B", 1, 990000),
    "over_execution": lambda b: b.execute(1, 12, 31, match=51),
    "over_execution_c": lambda b: b.execute_price(1, 12, 31, 999_000, match=51, printable="N"),
    "over_cancel": lambda b: b.cancel(1, 12, 31),
    "zero_add": lambda b: b.add(1, 50, "B", 0, 990000),
    "replace_unknown": lambda b: b.replace(1, 777, 778, 5, 990000),
    "replace_duplicate": lambda b: b.replace(1, 12, 12, 5, 990000),
    "malformed": lambda b: b.frame(b"E" + bytes(20)),
}


def failing_feed(path, kind):
    b = edge_feed()                  # ref 12 (locate 1) is live with 30 shares at the end
    FAILURES[kind](b)
    b.add(1, 60, "S", 5, 1_200_000)  # after the failure: never delivered
    b.trade(1, 0, "S", 5, 1_000_000, match=99)
    return b.write(path)


@pytest.mark.parametrize("kind", sorted(FAILURES))
@pytest.mark.parametrize("workers", WORKERS)
def test_tables_failing_record_stop_every_table_at_same_record(tmp_path, kind, workers):
    path = failing_feed(tmp_path / "bad.itch", kind)
    exp_t, err = reference_trades(path)
    exp_o, err_o = reference_orders(path)
    exp_d, err_d = reference_depth(path)
    exp_b, err_b, _ = reference_bbo(path)
    assert err is not None and err == err_o == err_d == err_b and err[0] == len(edge_feed()) + 1

    got = {"trades": trades(path, workers), "orders": orders(path, workers),
           "depth": depth(path, workers), "bbo": bbo(path, workers)}
    assert got["trades"][0] == exp_t
    assert got["orders"][0] == exp_o
    assert got["depth"][0] == exp_d
    assert got["bbo"][0] == exp_b
    for name, (_, error) in got.items():
        assert same_error(error, err), name
        assert str(path) in str(error)
    assert len({(e.record, e.reason) for _, e in got.values()}) == 1


@pytest.mark.parametrize("workers", [1, 2])
def test_tables_truncated_tail_same_error_every_table(tmp_path, workers):
    data = edge_feed().bytes()
    path = tmp_path / "cut.itch"
    path.write_bytes(data[:-5])
    for table, reference in ((trades, reference_trades), (orders, reference_orders), (depth, reference_depth)):
        expected, err = reference(path)
        rows, error = table(path, workers)
        assert rows == expected
        assert isinstance(error, TruncatedFeedError) and error.record == err[0]


@pytest.mark.parametrize("workers", [1, 2])
def test_tables_failure_in_later_batch_delivers_every_earlier_row(tmp_path, day, workers):
    b = ItchBuilder()
    b.delete(3, 2**40)
    path = tmp_path / "late.itch"
    path.write_bytes(day.read_bytes() + b.bytes())
    for table, reference in ((trades, reference_trades), (orders, reference_orders), (depth, reference_depth)):
        expected, err = reference(path)
        rows, error = table(path, workers)
        assert rows == expected and error.record == err[0] == 40_001


def cross_past_int64_feed(path, day, shares):
    """The generated day, a Q of 2**63 - 1 shares (shown as it is), a Q of ``shares``, then an
    add and a P that no trades replay delivers (at 17:00, after the day's: a bar of their own)."""
    b = ItchBuilder(start_ts=17 * 3600 * 10**9)
    b.cross(3, 2**63 - 1, 1_000_000, match=10**9)
    b.cross(3, shares, 1_000_100, match=10**9 + 1)
    b.add(3, 2**40, "B", 100, 990_000)
    b.trade(3, 0, "S", 7, 990_000, match=10**9 + 2)
    path.write_bytes(day.read_bytes() + b.bytes())
    return path


@pytest.mark.parametrize("shares", [2**63, 2**64 - 1])
@pytest.mark.parametrize("workers", WORKERS)
def test_trades_cross_shares_past_int64_error_names_record_after_every_earlier_row(tmp_path, day, workers, shares):
    path = cross_past_int64_feed(tmp_path / "q.itch", day, shares)
    expected, err = reference_trades(path)
    assert err == (40_002, SHARES_PAST_INT64) and expected[-1][4:7] == ("Q", 1_000_000, 2**63 - 1)
    rows, error = trades(path, workers)
    assert rows == expected and same_error(error, err)
    assert str(error) == (f"{path}: message 40002: cross trade (Q) of {shares} shares, past 2^63 - 1, the most "
                          "the trades table's shares hold")
    got, skip_error = collect(lambda: obook.trades(path, workers=workers, on_error="skip"), _trade_rows)
    assert got == expected and str(skip_error) == str(error)


def test_bars_cross_shares_past_int64_error_after_the_bars_before(tmp_path, day):
    path = cross_past_int64_feed(tmp_path / "q.itch", day, 2**63)
    bars, error = collect(lambda: obook.bars(path, "1 minute", workers=2), lambda b: b.to_pylist())
    assert error.record == 40_002 and "past 2^63 - 1" in str(error)
    assert bars and min(b["volume"] for b in bars) > 0 and max(b["volume"] for b in bars) == 2**63 - 1


@pytest.mark.parametrize("workers", [1, 2])
def test_tables_cross_shares_past_int64_no_error_without_trades_one_with_them(tmp_path, day, workers):
    """Orders, depth and the BBO never read a Q's shares; a replay that makes trades too stops
    every table at the Q."""
    from obook.engine.replay import Replay

    path = cross_past_int64_feed(tmp_path / "q.itch", day, 2**64 - 1)
    _, exp_o, exp_d, err = reference_all(path, with_trades=False)
    assert err is None
    assert orders(path, workers) == (exp_o, None)
    assert depth(path, workers) == (exp_d, None)
    assert bbo(path, workers) == (reference_bbo(path)[0], None)
    exp_t, exp_o, _, err = reference_all(path)
    got = {"trades": [], "orders": []}
    with pytest.raises(FeedError) as e:
        for table, batch in Replay(path, workers=workers, tables=("orders", "trades")).table_batches():
            got[table] += (_trade_rows if table == "trades" else _order_rows)(batch)
    assert got == {"trades": exp_t, "orders": exp_o} and same_error(e.value, err)


# ---------------------------------------------------------------- breaks bounded

def test_breaks_scan_compacts_repeats_and_spills_many_matches_same_answers(tmp_path, monkeypatch):
    """Breaks found while scanning are merged as they come (a repeated match costs nothing) and,
    past SPILL_ENTRIES distinct matches, live in a mapped temporary file: same lookups."""
    import numpy as np

    from itch_builder import ItchBuilder
    from obook import feeds
    from obook.feeds import breaks as B
    from obook.feeds.itch import ItchFramer

    b = ItchBuilder()
    for i in range(3000):
        b.broken(i % 700)              # 700 distinct matches, each broken again and again
    for i in range(500):
        b.broken(10_000 + i)
    path = b.write(tmp_path / "b.itch")
    want = feeds.itch.scan_breaks(str(path), ItchFramer(str(path)))
    monkeypatch.setattr(B, "COMPACT_EVERY", 100)
    monkeypatch.setattr(B, "SPILL_ENTRIES", 1000)
    got = feeds.itch.scan_breaks(str(path), ItchFramer(str(path)), None)
    assert len(got) == len(want) == 1200
    assert isinstance(got.matches, np.memmap) and isinstance(got.last_seq, np.memmap)
    assert (np.asarray(got.matches) == want.matches).all() and (np.asarray(got.last_seq) == want.last_seq).all()
    seq = np.arange(0, 4000, 7, dtype=np.int64)
    match = seq % 1500
    trade = np.ones(len(seq), bool)
    assert (got.broken(seq, match, trade) == want.broken(seq, match, trade)).all()


def test_breaks_no_room_in_the_temporary_folder_kept_in_memory_same_answers(tmp_path, monkeypatch, caplog):
    """A temporary folder without room for the spill keeps the breaks in memory (a write to
    a mapped file past a full disk would end the process with SIGBUS)."""
    import errno

    import numpy as np

    from itch_builder import ItchBuilder
    from obook import feeds
    from obook.feeds import breaks as B
    from obook.feeds.itch import ItchFramer

    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    b = ItchBuilder()
    for i in range(1500):
        b.broken(i)
    path = b.write(tmp_path / "b.itch")
    want = feeds.itch.scan_breaks(str(path), ItchFramer(str(path)))
    monkeypatch.setattr(B, "SPILL_ENTRIES", 1000)
    monkeypatch.setattr(B.os, "posix_fallocate", full)
    got = feeds.itch.scan_breaks(str(path), ItchFramer(str(path)), None)
    assert not isinstance(got.matches, np.memmap) and "kept in memory" in caplog.text
    assert (got.matches == want.matches).all() and (got.last_seq == want.last_seq).all()


def test_orders_feed_without_match_numbers_match_null(tmp_path):
    # Databento MBO records carry no match number: no orders row may show one (a cancel's
    # row showed match 0)
    from obook.gen.databento import mbo_flow, write_dbn

    path = tmp_path / "day.dbn"
    write_dbn(path, mbo_flow(3000, instruments=2, seed=1))
    orders = obook.orders(path).read_all()
    assert "C" in orders.column("action").to_pylist()
    assert orders.column("match").null_count == orders.num_rows


def test_open_tables_trades_and_depth_of_one_replay_equal_each_table_read_alone(small):
    from obook.tables.open import open_tables

    schemas, pairs = open_tables(("trades", "depth"), small, workers=1, levels=3)
    got = {"trades": [], "depth": []}
    for name, batch in pairs:
        got[name].append(batch)
    assert got["trades"] and got["depth"]
    for name, alone in (("trades", obook.trades(small, workers=1)), ("depth", obook.depth(small, workers=1, levels=3))):
        assert schemas[name] == alone.schema
        assert pa.Table.from_batches(got[name], schemas[name]).equals(alone.read_all())
