"""Claims of docs/formats/*.md that no docs example runs: the tolerant rules of ITCH and
PITCH, and the ITCH frame-length rule, on small hand-made feeds."""

from __future__ import annotations

import itertools
import struct

import pytest

import obook
from obook._kernels.itch_layout import pack
from pitch_builder import ADD_LONG, REDUCE_LONG, TIME, msg, units


def _itch(tmp_path, *extra, name="day.itch"):
    msgs = [pack("R", locate=1, timestamp=1, stock="AAA", round_lot_size=100),
            pack("A", locate=1, timestamp=2, ref=1, side="B", shares=100, stock="AAA", price=1000000),
            pack("A", locate=1, timestamp=3, ref=2, side="S", shares=100, stock="AAA", price=1010000),
            *extra]
    path = tmp_path / name
    path.write_bytes(b"".join(struct.pack(">H", len(m)) + m for m in msgs))
    return path


def _last_bbo(path, **kw):
    return obook.bbo(path, format="itch", **kw).read_all().to_pylist()[-1]


def test_itch_over_cancel_tolerant_removes_order(tmp_path):
    path = _itch(tmp_path, pack("X", locate=1, timestamp=4, ref=1, shares=200))
    with pytest.raises(obook.FeedError, match="over-cancel"):
        obook.bbo(path).read_all()
    stats: dict = {}
    last = _last_bbo(path, on_error="skip", stats=stats)
    assert last["seq"] == 4 and last["bid_px"] is None and stats["skipped"] == {"over-cancel": 1}


def test_itch_duplicate_add_tolerant_replaces_live_order(tmp_path):
    path = _itch(tmp_path, pack("A", locate=1, timestamp=4, ref=1, side="B", shares=7, stock="AAA",
                                price=990000))
    stats: dict = {}
    last = _last_bbo(path, on_error="skip", stats=stats)
    assert (last["bid_px"], last["bid_qty"], last["bid_orders"]) == (990000, 7, 1)
    assert stats["skipped"] == {"duplicate order ref": 1}


def test_itch_zero_share_replace_tolerant_removes_original(tmp_path):
    path = _itch(tmp_path, pack("U", locate=1, timestamp=4, ref=1, new_ref=5, shares=0, price=1000000))
    stats: dict = {}
    last = _last_bbo(path, on_error="skip", stats=stats)
    assert last["seq"] == 4 and last["bid_px"] is None and stats["skipped"] == {"zero-share add": 1}


def test_itch_short_frame_strict_error_tolerant_skipped(tmp_path):
    path = _itch(tmp_path, pack("D", locate=1, timestamp=4, ref=1)[:-1])
    with pytest.raises(obook.FeedError, match="malformed frame"):
        obook.bbo(path).read_all()
    stats: dict = {}
    assert _last_bbo(path, on_error="skip", stats=stats)["bid_px"] == 1000000
    assert stats["skipped"] == {"malformed frame": 1}


def test_itch_long_frame_any_mode_read_and_applied(tmp_path):
    path = _itch(tmp_path, pack("D", locate=1, timestamp=4, ref=1) + b"\0\0")
    last = _last_bbo(path)
    assert last["seq"] == 4 and last["bid_px"] is None


def test_pitch_over_cancel_tolerant_removes_order(tmp_path):
    msgs = [msg(TIME, 34200), msg(ADD_LONG, 1, 1, b"B", 100, b"AAA   ", 1000000, 0),
            msg(ADD_LONG, 2, 2, b"S", 100, b"AAA   ", 1010000, 0), msg(REDUCE_LONG, 3, 1, 500)]
    path = tmp_path / "day.pitch"
    path.write_bytes(units(msgs, itertools.repeat(50)))
    with pytest.raises(obook.FeedError, match="over-cancel"):
        obook.bbo(path).read_all()
    stats: dict = {}
    last = obook.bbo(path, on_error="skip", stats=stats).read_all().to_pylist()[-1]
    assert last["bid_px"] is None and last["ask_px"] == 1010000 and stats["skipped"] == {"over-cancel": 1}


@pytest.mark.parametrize("extra, want", [
    (pack("X", locate=1, timestamp=4, ref=1, shares=200), ("X", 200, 0)),         # over-cancel: gone
    (pack("E", locate=1, timestamp=4, ref=1, shares=200, match=9), ("E", 200, 0)),  # over-execution: gone
    (pack("A", locate=1, timestamp=4, ref=1, side="B", shares=7, stock="AAA", price=990000), ("A", 7, 7)),
    (pack("U", locate=1, timestamp=4, ref=1, new_ref=5, shares=0, price=1000000), ("U", 0, 0))])
def test_itch_tolerant_record_that_changes_the_book_has_its_orders_row(tmp_path, extra, want):
    """The bbo and depth tables had a row for such a record and the orders table none."""
    path = _itch(tmp_path, extra)
    orders = obook.orders(path, format="itch", on_error="skip").read_all().to_pylist()
    bbo = obook.bbo(path, format="itch", on_error="skip").read_all().to_pylist()
    assert [o["seq"] for o in orders] == [r["seq"] for r in bbo] == [2, 3, 4]
    assert (orders[-1]["action"], orders[-1]["shares"], orders[-1]["remaining"]) == want


def test_itch_tolerant_unknown_ref_has_no_row_in_any_table(tmp_path):
    path = _itch(tmp_path, pack("D", locate=1, timestamp=4, ref=77))
    for table in (obook.orders, obook.bbo):
        assert [r["seq"] for r in table(path, format="itch", on_error="skip").read_all().to_pylist()] == [2, 3]


def test_pitch_tolerant_over_cancel_has_its_orders_row(tmp_path):
    msgs = [msg(TIME, 34200), msg(ADD_LONG, 1, 1, b"B", 100, b"AAA   ", 1000000, 0),
            msg(ADD_LONG, 2, 2, b"S", 100, b"AAA   ", 1010000, 0), msg(REDUCE_LONG, 3, 1, 500)]
    path = tmp_path / "day.pitch"
    path.write_bytes(units(msgs, itertools.repeat(50)))
    orders = obook.orders(path, on_error="skip").read_all().to_pylist()
    bbo = obook.bbo(path, on_error="skip").read_all().to_pylist()
    assert [o["seq"] for o in orders] == [r["seq"] for r in bbo] and orders[-1]["remaining"] == 0
