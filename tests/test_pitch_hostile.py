"""Cboe PITCH against hostile input: sequenced unit lengths that lose the framing, units a
tolerant replay may pass over, and side bytes other than B and S. Each hostile file is a
generated day with one thing changed; the rows before the error are the clean day's."""

from __future__ import annotations

import re

import pytest

import obook
from obook.errors import FeedError, TruncatedFeedError
from obook.gen.pitch import write_pitch

from hostile_support import batches_until_error, cli_error
from pitch_builder import ADD_LONG, TIME, TRADE_EXPANDED, UNIT, msg, units

#: the unit the length tests change (its index in the file)
TARGET = 100


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("pitch_hostile") / "day.pitch"
    write_pitch(path, 3000, 5, seed=11)
    data = path.read_bytes()
    return path, data, obook.bbo(path, workers=1).read_all().to_pylist()


def _units(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, length, first message number) of each unit, read with struct."""
    out, pos, first = [], 0, 1
    while pos < len(data):
        length, count, _unit, _seq = UNIT.unpack_from(data, pos)
        out.append((pos, length, first))
        pos += length
        first += count
    return out


def _messages(data: bytes):
    """(offset, type, message number) of each message."""
    number = 0
    for pos, length, _first in _units(data):
        p = pos + UNIT.size
        while p < pos + length:
            number += 1
            yield p, data[p + 1], number
            p += data[p]


def _with_length(data: bytes, index: int, length: int) -> bytes:
    out = bytearray(data)
    UNIT.pack_into(out, _units(data)[index][0], length, *UNIT.unpack_from(data, _units(data)[index][0])[1:])
    return bytes(out)


def _replay(path, on_error, workers=1, table="bbo"):
    """(rows, the error that ended the replay or None, stats)."""
    stats: dict = {}
    options = {"stats": stats} if table == "bbo" else {}
    batches, error = batches_until_error(getattr(obook, table)(path, workers=workers, on_error=on_error,
                                                               **options))
    return [r for b in batches for r in b.to_pylist()], error, stats


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("change", ["zero", "seven", "one more", "one less", "into the next unit",
                                    "into a later unit"])
def test_pitch_unit_length_that_loses_the_framing_error_in_both_modes_rows_before_delivered(
        day, tmp_path, change, on_error, workers):
    path, data, clean = day
    _pos, length, first = _units(data)[TARGET]
    next_length = _units(data)[TARGET + 1][1]
    new = {"zero": 0, "seven": 7, "one more": length + 1, "one less": length - 1,
           "into the next unit": length + next_length // 2, "into a later unit": length + 5000}[change]
    bad = tmp_path / "bad.pitch"
    bad.write_bytes(_with_length(data, TARGET, new))
    rows, error, stats = _replay(bad, on_error, workers)
    assert isinstance(error, FeedError) and error.path.endswith("bad.pitch")
    assert error.record == first and "malformed unit" in error.reason
    if on_error == "skip" and new >= UNIT.size:
        assert "the units after it cannot be found" in error.reason
    assert rows == [r for r in clean if r["seq"] < first] and len(rows) > 50
    assert not stats.get("complete")


def test_pitch_unit_length_zero_tolerant_cli_one_line_error_exit_1(day, tmp_path):
    path, data, _clean = day
    first = _units(data)[TARGET][2]
    bad = tmp_path / "u0.pitch"
    bad.write_bytes(_with_length(data, TARGET, 0))
    line = cli_error("bbo", bad, "--on-error", "skip", "--output", tmp_path / "out.parquet")
    assert f"u0.pitch: message {first}: malformed unit: length 0" in line


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_pitch_unit_length_past_the_end_of_the_file_truncated_error_both_modes(day, tmp_path, on_error):
    path, data, clean = day
    index = len(_units(data)) - 3
    pos, length, first = _units(data)[index]
    bad = tmp_path / "past.pitch"
    bad.write_bytes(_with_length(data, index, length + len(data) - pos))
    rows, error, _stats = _replay(bad, on_error)
    assert isinstance(error, TruncatedFeedError) and error.record == first
    assert rows == [r for r in clean if r["seq"] < first]


def _bad_units():
    """Units whose length holds but whose contents do not: a count one too many, a message
    length of 8 that leaves 8 bytes no message fills, a Time message cut to 3 bytes."""
    time = msg(TIME, 99_999)
    return {"count": UNIT.pack(UNIT.size + len(time), 2, 1, 0) + time,
            "message length": UNIT.pack(UNIT.size + 16, 2, 1, 0) + b"\x08\x20" + bytes(14),
            "short message": UNIT.pack(UNIT.size + 3, 1, 1, 0) + b"\x03" + time[1:3]}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("where", ["middle", "end"])
@pytest.mark.parametrize("kind", ["count", "message length", "short message"])
def test_pitch_unit_whose_length_holds_tolerant_skipped_counted_strict_error(day, tmp_path, kind, where, workers):
    path, data, clean = day
    pos, _length, first = _units(data)[TARGET] if where == "middle" else (len(data), 0, len(list(_messages(data))) + 1)
    bad = tmp_path / "skip.pitch"
    bad.write_bytes(data[:pos] + _bad_units()[kind] + data[pos:])
    rows, error, stats = _replay(bad, "skip", workers)
    assert error is None and rows == clean
    key = "short message" if kind == "short message" else "malformed unit"
    assert stats["skipped"] == {key: 1} and stats["complete"] is True
    rows, error, _stats = _replay(bad, "raise", workers)
    assert isinstance(error, FeedError) and error.record == first
    assert "malformed" in error.reason and rows == [r for r in clean if r["seq"] < first]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("where", ["middle", "end"])
@pytest.mark.parametrize("run", [["count", "count"], ["message length", "count", "message length"],
                                 ["count", "short message", "message length", "count"], ["count"] * 40],
                         ids=["two", "three", "four kinds", "forty"])
def test_pitch_units_whose_length_holds_in_a_row_tolerant_all_skipped_counted(day, tmp_path, run, where, workers):
    path, data, clean = day
    pos = _units(data)[TARGET][0] if where == "middle" else len(data)
    bad = tmp_path / "run.pitch"
    bad.write_bytes(data[:pos] + b"".join(_bad_units()[kind] for kind in run) + data[pos:])
    rows, error, stats = _replay(bad, "skip", workers)
    assert error is None and rows == clean
    short = run.count("short message")
    assert stats["skipped"] == {"malformed unit": len(run) - short, **({"short message": short} if short else {})}
    assert stats["complete"] is True


@pytest.mark.parametrize("header", [{"unit": 7}, {"sequence": 1 << 20}])
def test_pitch_bad_unit_after_a_bad_unit_naming_no_unit_of_the_feed_tolerant_error(day, tmp_path, header):
    path, data, clean = day
    pos, _length, first = _units(data)[TARGET]
    time = msg(TIME, 99_999)
    odd = UNIT.pack(UNIT.size + len(time), 2, header.get("unit", 1), header.get("sequence", 0)) + time
    bad = tmp_path / "odd.pitch"
    bad.write_bytes(data[:pos] + _bad_units()["count"] + odd + data[pos:])
    rows, error, _stats = _replay(bad, "skip")
    assert isinstance(error, FeedError) and error.record == first
    assert "the units after it cannot be found" in error.reason
    assert rows == [r for r in clean if r["seq"] < first]


def _sequenced_bad(unit: int, sequence: int) -> bytes:
    """A sequenced unit whose length holds but whose count is one too many."""
    time = msg(TIME, 99_999)
    return UNIT.pack(UNIT.size + len(time), 2, unit, sequence) + time


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("where", ["start of the file", "a new unit number"])
def test_pitch_two_bad_units_before_the_first_whole_unit_of_their_number_tolerant_skipped_counted(
        day, tmp_path, where, workers):
    """Bad units of a unit number no whole unit had yet (the file's first units, or the
    first of a unit number joining the feed) are passed over when a whole unit of their
    number follows them: the damage did not lose the framing."""
    path, data, clean = day
    if where == "start of the file":
        pos, first, extra = 0, 1, b""
    else:
        pos, _length, first = _units(data)[TARGET]
        extra = UNIT.pack(UNIT.size + TIME.size, 1, 9, 1) + msg(TIME, 99_999)    # unit 9's first whole unit
    bad = tmp_path / "first.pitch"
    bad.write_bytes(data[:pos] + _sequenced_bad(9 if extra else 1, 1) * 2 + extra + data[pos:])
    rows, error, stats = _replay(bad, "skip", workers)
    shift = 1 if extra else 0           # unit 9's Time message is numbered
    assert error is None and rows == [{**r, "seq": r["seq"] + shift * (r["seq"] >= first)} for r in clean]
    assert stats["skipped"] == {"malformed unit": 2} and stats["complete"] is True
    rows, error, _stats = _replay(bad, "raise", workers)
    assert isinstance(error, FeedError) and error.record == first and "malformed unit" in error.reason
    assert rows == [r for r in clean if r["seq"] < first]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("type_", [0x22, 0x2F, 0x2A, 0x2B])      # add short, expanded; trade long, short
def test_pitch_side_not_b_or_s_in_a_day_strict_error_tolerant_skip(day, tmp_path, type_, workers):
    path, data, _clean = day
    table = "bbo" if type_ in (0x22, 0x2F) else "trades"
    clean = getattr(obook, table)(path, workers=1).read_all().to_pylist()
    at, _t, number = [m for m in _messages(data) if m[1] == type_][3]
    out = bytearray(data)
    out[at + 14] = ord("X")
    bad = tmp_path / "side.pitch"
    bad.write_bytes(bytes(out))
    rows, error, _stats = _replay(bad, "raise", workers, table)
    assert isinstance(error, FeedError) and error.record == number and error.path.endswith("side.pitch")
    assert "side b'X' not B or S, order id" in error.reason
    assert rows == [r for r in clean if r["seq"] < number]
    rows, error, stats = _replay(bad, "skip", workers, table)
    assert error is None and not any(r["seq"] == number for r in rows)
    assert [r for r in rows if r["seq"] < number] == [r for r in clean if r["seq"] < number]
    if table == "bbo":
        assert stats["skipped"]["side not B or S"] == 1
    else:                               # a trade changes no book: the rest is the clean day's
        assert rows == [r for r in clean if r["seq"] != number]


@pytest.mark.parametrize("side", [b"X", b"b", b"\0", b" "])
@pytest.mark.parametrize("form", ["add_order_long", "trade_expanded"])
def test_pitch_side_not_b_or_s_hand_made_strict_names_message_tolerant_counted(tmp_path, form, side):
    good = msg(ADD_LONG, 5, 11, b"B", 300, b"ZVZZT ", 1_000_000, 1)
    odd = msg(ADD_LONG, 6, 12, side, 100, b"ZVZZT ", 1_000_100, 1) if form == "add_order_long" else \
        msg(TRADE_EXPANDED, 6, 0, side, 10, b"ZVZZT   ", 1_000_000, 7)
    last = msg(ADD_LONG, 7, 13, b"S", 200, b"ZVZZT ", 1_000_200, 1)
    path = tmp_path / "side.pitch"
    path.write_bytes(units([msg(TIME, 34_200), good, odd, last], iter([2, 2])))
    oid = 12 if form == "add_order_long" else 0
    with pytest.raises(FeedError, match=r"message 3\b.*" + re.escape(f"side {side!r} not B or S, order id {oid}")):
        for table in ("bbo", "trades"):
            getattr(obook, table)(path, workers=1).read_all()
    stats: dict = {}
    bbo = obook.bbo(path, workers=1, on_error="skip", stats=stats).read_all().to_pylist()
    assert [(r["seq"], r["bid_qty"], r["ask_px"]) for r in bbo] == [(2, 300, None), (4, 300, 1_000_200)]
    assert stats["skipped"] == {"side not B or S": 1}
    assert obook.trades(path, workers=1, on_error="skip").read_all().num_rows == 0
