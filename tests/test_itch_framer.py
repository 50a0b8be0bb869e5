"""The ITCH framer's frames of types that are no ITCH 5.0 message: skipped, counted and
named in one warning of the replay; a feed of mostly such frames refused."""

from __future__ import annotations

import logging

import pytest

from obook.engine.replay import Replay
from obook.errors import FeedError
JUDGED_AFTER = 64     # obook.feeds.itch.framer.JUDGED_AFTER

from itch_builder import ItchBuilder


def rows_and_error(path, workers=1, on_error="raise"):
    rows, error = [], None
    try:
        for batch in Replay(path, workers=workers, on_error=on_error).batches():
            rows.extend(batch.column("seq").to_pylist())
    except FeedError as e:
        error = e
    return rows, error


def day(unknown_every=0, n=40, unknown=b"z"):
    """A directory then ``n`` adds, a frame of type ``unknown`` after every ``unknown_every``."""
    b = ItchBuilder()
    b.system("O")
    b.directory(1, "AAPL")
    for i in range(n):
        b.add(1, i + 1, "B", 100, 1_000_000 + i)
        if unknown_every and i % unknown_every == 0:
            b.raw(unknown, 20, locate=1)
    return b


@pytest.mark.parametrize("workers", [1, 2])
def test_itch_framer_unknown_types_skipped_logs_one_warning_with_count_types_first(tmp_path, caplog, workers):
    b = day(unknown_every=10)
    b.raw(1, 11)
    path = tmp_path / "d.itch"
    path.write_bytes(b.bytes())
    with caplog.at_level(logging.WARNING, logger="obook"):
        rows, error = rows_and_error(path, workers)
    assert error is None and len(rows) == 40
    notes = [r.getMessage() for r in caplog.records if "not ITCH 5.0" in r.getMessage()]
    assert len(notes) == 1, caplog.text
    assert str(path) in notes[0] and "skipped 5 messages" in notes[0]
    assert "'z' (0x7a): 4" in notes[0] and "0x01: 1" in notes[0]
    assert notes[0].endswith("the first is message 4")


def test_itch_framer_itch50_types_obook_does_not_check_no_warning(tmp_path, caplog):
    b = day()
    for t in "YLVWKJhINO":
        b.raw(t, 40, locate=1)
    path = tmp_path / "d.itch"
    path.write_bytes(b.bytes())
    with caplog.at_level(logging.WARNING, logger="obook"):
        rows, error = rows_and_error(path)
    assert error is None and len(rows) == 40
    assert "not ITCH 5.0" not in caplog.text


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_itch_framer_mostly_unknown_types_raises_feed_error_naming_file_and_record(tmp_path, on_error):
    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.add(1, 1, "B", 100, 1_000_000)
    for _ in range(200):
        b.raw("z", 30)
    path = tmp_path / "n.itch"
    path.write_bytes(b.bytes())
    rows, error = rows_and_error(path, on_error=on_error)
    assert rows == [2]           # the rows of the records before the refusal
    assert error is not None and error.path == str(path) and error.record == JUDGED_AFTER
    assert "not ITCH 5.0" in error.reason and "the first: message 3, type 'z' (0x7a)" in error.reason


def test_itch_framer_short_feed_mostly_unknown_refused_at_its_last_record(tmp_path):
    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.add(1, 1, "B", 100, 1_000_000)
    for _ in range(3):
        b.raw(0xEE, 12)
    path = tmp_path / "s.itch"
    path.write_bytes(b.bytes())
    rows, error = rows_and_error(path)
    assert rows == [2]
    assert error is not None and error.record == 5 and "3 of its first 5 messages" in error.reason


def test_itch_framer_unknown_minority_in_later_batch_not_refused(tmp_path):
    b = day(n=JUDGED_AFTER)
    for _ in range(JUDGED_AFTER // 2):
        b.raw("z", 12)
    path = tmp_path / "m.itch"
    path.write_bytes(b.bytes())
    rows, error = rows_and_error(path)
    assert error is None and len(rows) == JUDGED_AFTER


@pytest.mark.parametrize("length", [65535, 37])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("workers", [1, 2])
def test_itch_framer_length_past_the_end_error_names_its_record_and_says_so(tmp_path, length, on_error, workers):
    """A frame whose 2-byte length runs past the end of the file (a wrong length, or the file
    cut): the error names that frame's message and says its length runs past the end, after
    the rows of every message before it."""
    import struct

    b = day(n=40)
    bad = len(b) + 1
    data = b.bytes() + struct.pack(">H", length) + b.bytes()[-36:]      # an add's 36 bytes follow it
    path = tmp_path / "long.itch"
    path.write_bytes(data)
    rows, error = rows_and_error(path, workers, on_error)
    assert rows == list(range(3, bad)) and error.record == bad and error.offset == len(b.bytes())
    assert str(error) == (f"{path}: message {bad}: truncated record at byte offset {len(b.bytes())}: its length, "
                          f"{length} bytes, runs past the end of the file (36 of them are there)")
