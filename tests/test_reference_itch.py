"""The reference ITCH book itself, on hand-made feeds (it is the oracle, so it is tested too)."""

from __future__ import annotations

import pytest

from itch_builder import ItchBuilder
from reference_itch import reference_bbo, reference_messages

PX = 1_000_000   # $100.00


def book_with_touch():
    """AAPL (locate 1) with a bid of 100 @ PX and an ask of 100 @ PX + 100."""
    b = ItchBuilder()
    b.system("O")
    b.directory(1, "AAPL")
    b.directory(2, "MSFT")
    b.add(1, 10, "B", 100, PX)
    b.add(1, 11, "S", 100, PX + 100)
    return b


def bbo(row):
    """(bid_px, bid_qty, bid_orders, ask_px, ask_qty, ask_orders) of a row."""
    return row[4:]


def run(b, tmp_path, on_error="raise", gz=False):
    path = b.write(tmp_path / ("f.itch.gz" if gz else "f.itch"), gz=gz)
    return reference_bbo(path, on_error=on_error)


def test_reference_adds_emit_rows_with_ticker_and_time(tmp_path):
    b = book_with_touch()
    rows, error, skipped = run(b, tmp_path)
    assert error is None and skipped == {}
    assert rows == [
        (4, b.ts - 1000, 1, "AAPL", PX, 100, 1, None, None, 0),
        (5, b.ts, 1, "AAPL", PX, 100, 1, PX + 100, 100, 1),
    ]


def test_reference_gz_feed_same_rows_as_raw(tmp_path):
    b = book_with_touch()
    b.execute(1, 10, 30)
    assert run(b, tmp_path, gz=True) == run(b, tmp_path)


def test_reference_change_below_touch_emits_no_row(tmp_path):
    b = book_with_touch()
    b.add(1, 12, "B", 50, PX - 100)
    b.cancel(1, 12, 20)
    b.replace(1, 12, 13, 70, PX - 200)
    b.delete(1, 13)
    rows, error, _ = run(b, tmp_path)
    assert error is None and [r[0] for r in rows] == [4, 5]


def test_reference_join_touch_counts_orders_and_qty(tmp_path):
    b = book_with_touch()
    b.add(1, 12, "B", 50, PX, mpid="GSCO")
    rows, _, _ = run(b, tmp_path)
    assert bbo(rows[-1]) == (PX, 150, 2, PX + 100, 100, 1)


def test_reference_replace_of_replaced_order_follows_new_refs(tmp_path):
    b = book_with_touch()
    b.replace(1, 11, 13, 80, PX + 50)
    b.replace(1, 13, 14, 70, PX + 40)
    b.cancel(1, 14, 20)
    rows, error, _ = run(b, tmp_path)
    assert error is None
    assert [bbo(r)[3:] for r in rows[-3:]] == [(PX + 50, 80, 1), (PX + 40, 70, 1), (PX + 40, 50, 1)]
    b.delete(1, 13)                            # the replaced ref is gone
    assert run(b, tmp_path)[1] == (len(b), "unknown order ref")


def test_reference_execution_to_zero_removes_order(tmp_path):
    b = book_with_touch()
    b.execute(1, 10, 60, match=1)
    b.execute_price(1, 10, 40, PX - 1, match=2)
    rows, error, _ = run(b, tmp_path)
    assert error is None
    assert bbo(rows[-2])[:3] == (PX, 40, 1)
    assert bbo(rows[-1]) == (None, None, 0, PX + 100, 100, 1)
    b.execute(1, 10, 1)
    assert run(b, tmp_path)[1] == (len(b), "unknown order ref")


def test_reference_cancel_to_zero_removes_order(tmp_path):
    b = book_with_touch()
    b.cancel(1, 11, 100)
    rows, error, _ = run(b, tmp_path)
    assert error is None and bbo(rows[-1]) == (PX, 100, 1, None, None, 0)


def test_reference_trades_and_other_types_change_nothing(tmp_path):
    b = book_with_touch()
    b.trade(1, 0, "B", 100, PX + 50, match=3)
    b.cross(1, 1000, PX, match=4)
    b.broken(3)
    b.trading_action(1)
    b.raw("I", 50, locate=1)
    b.raw("z", 17, locate=1)
    b.raw("Y", 5)                              # short, but not a type obook sizes: skipped
    rows, error, skipped = run(b, tmp_path)
    assert error is None and skipped == {} and len(rows) == 2


def test_reference_crossed_book_reported_as_is(tmp_path):
    b = book_with_touch()
    b.add(1, 12, "S", 10, PX - 500)
    rows, error, _ = run(b, tmp_path)
    assert error is None and bbo(rows[-1]) == (PX, 100, 1, PX - 500, 10, 1)


def test_reference_same_ref_in_two_locates_separate_books(tmp_path):
    b = book_with_touch()
    b.add(2, 10, "S", 7, 500_000)
    b.delete(2, 10)
    b.execute(1, 10, 1)
    rows, error, _ = run(b, tmp_path)
    assert error is None
    assert [(r[2], r[3], bbo(r)) for r in rows[-3:]] == [
        (2, "MSFT", (None, None, 0, 500_000, 7, 1)),
        (2, "MSFT", (None, None, 0, None, None, 0)),
        (1, "AAPL", (PX, 99, 1, PX + 100, 100, 1)),
    ]


def test_reference_locate_without_directory_ticker_none(tmp_path):
    b = ItchBuilder()
    b.add(9, 1, "B", 5, PX)
    rows, _, _ = run(b, tmp_path)
    assert rows[0][2:4] == (9, None)


@pytest.mark.parametrize("bad,reason", [
    (lambda b: b.delete(1, 99), "unknown order ref"),
    (lambda b: b.replace(1, 99, 100, 5, PX), "unknown order ref"),
    (lambda b: b.delete(2, 10), "unknown order ref"),
    (lambda b: b.add(1, 10, "S", 5, PX + 200), "duplicate order ref"),
    (lambda b: b.replace(1, 10, 11, 5, PX), "duplicate order ref"),
    (lambda b: b.execute(1, 10, 101), "over-execution"),
    (lambda b: b.execute_price(1, 10, 101, PX), "over-execution"),
    (lambda b: b.cancel(1, 10, 101), "over-cancel"),
    (lambda b: b.add(1, 12, "B", 0, PX), "zero-share add"),
    (lambda b: b.frame(b"A" + bytes(20)), "malformed frame"),
    (lambda b: b.frame(b""), "malformed frame"),
    (lambda b: b.raw("D", 18, locate=1), "malformed frame"),
])
def test_reference_failing_record_strict_stops_with_reason(tmp_path, bad, reason):
    b = book_with_touch()
    bad(b)
    seq = len(b)
    b.add(1, 50, "B", 100, PX + 10)            # after the failure: never applied
    rows, error, skipped = run(b, tmp_path)
    assert error == (seq, reason)
    assert [r[0] for r in rows] == [4, 5] and skipped == {}


def test_reference_truncated_last_message_error_with_its_seq(tmp_path):
    b = book_with_touch()
    cut = ItchBuilder()
    cut.add(1, 12, "B", 100, PX + 10)
    for tail in (cut.bytes()[:-5], cut.bytes()[:1], cut.bytes()[:2]):
        path = b.write(tmp_path / "cut.itch", tail=tail)
        for mode in ("raise", "skip"):
            rows, error, _ = reference_bbo(path, on_error=mode)
            assert error == (6, "truncated") and len(rows) == 2


def test_reference_tolerant_mode_applies_rules_and_counts(tmp_path):
    b = book_with_touch()
    b.delete(1, 99)                            # unknown: nothing
    b.add(1, 10, "B", 30, PX - 100)            # duplicate: replaces the live order
    b.add(1, 12, "B", 0, PX)                   # zero-share: dropped
    b.cancel(1, 11, 500)                       # over-cancel: order removed
    b.add(1, 13, "S", 20, PX + 100)
    b.execute(1, 13, 21)                       # over-execution: order removed
    b.add(1, 14, "S", 5, PX + 300)
    b.replace(1, 14, 10, 9, PX + 200)          # new ref live: original gone, 10 replaced
    b.frame(b"X" + bytes(3))                   # malformed: skipped
    rows, error, skipped = run(b, tmp_path, on_error="skip")
    assert error is None
    assert skipped == {"unknown order ref": 1, "duplicate order ref": 2, "zero-share add": 1,
                       "over-cancel": 1, "over-execution": 1, "malformed frame": 1}
    assert bbo(rows[-1]) == (None, None, 0, PX + 200, 9, 1)
    assert [r[0] for r in rows] == [4, 5, 7, 9, 10, 11, 12, 13]


def test_reference_messages_decodes_fields(tmp_path):
    b = book_with_touch()
    b.replace(1, 11, 12, 80, PX + 50)
    b.execute_price(1, 10, 5, PX - 3, match=77)
    b.raw("z", 13, locate=4)
    msgs = reference_messages(b.write(tmp_path / "m.itch"))
    assert [m["type"] for m in msgs] == list("SRRAAUCz")
    assert [m["offset"] for m in msgs[:3]] == [0, 14, 55]
    add, rep, exe, unk = msgs[3], msgs[5], msgs[6], msgs[7]
    assert (add["seq"], add["locate"], add["ref"], add["side"], add["shares"], add["price"],
            add["stock"]) == (4, 1, 10, "B", 100, PX, "AAPL")
    assert (rep["ref"], rep["new_ref"], rep["shares"], rep["price"]) == (11, 12, 80, PX + 50)
    assert (exe["ref"], exe["shares"], exe["match"], exe["price"]) == (10, 5, 77, PX - 3)
    assert (unk["locate"], unk["length"], unk["time"]) == (4, 13, b.ts)
