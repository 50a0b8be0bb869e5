"""The capture framer's marks (lost messages, capture problems) beside the ITCH framer's
refusal of a feed of mostly non-ITCH frames."""

from __future__ import annotations

import numpy as np
import pytest

from obook.errors import FeedError
from obook.feeds.mold.framer import LOST, MoldFramer


def test_mold_framer_lost_mark_after_a_refusal_refusal_named(tmp_path):
    frames = b"".join(b"\x00\x0c" + b"z" + bytes(11) for _ in range(70)) + b"\x00\x01" + bytes([LOST])
    r = MoldFramer(str(tmp_path / "c.pcap")).frame(np.frombuffer(frames, np.uint8).copy(), 1, 0, True, 1 << 16)
    assert isinstance(r.error, FeedError) and r.error.record == 64 and "not ITCH 5.0" in r.error.reason
    assert r.n_records == 63


def test_mold_framer_lost_mark_before_most_frames_are_unknown_names_the_loss(tmp_path):
    frames = b"\x00\x01" + bytes([LOST]) + b"".join(b"\x00\x0c" + b"z" + bytes(11) for _ in range(70))
    r = MoldFramer(str(tmp_path / "c.pcap")).frame(np.frombuffer(frames, np.uint8).copy(), 1, 0, True, 1 << 16)
    assert isinstance(r.error, FeedError) and r.error.record == 1 and "lost on every line" in r.error.reason


def _capture_with(tmp_path, odd: bytes):
    """A capture of an ITCH day on line A whose sixth message is ``odd``, and the plain ITCH
    file of the same messages."""
    import struct

    from obook.gen.pcap import LINE_A, SESSION, _frame, _Writer

    from itch_builder import ItchBuilder

    b = ItchBuilder()
    b.directory(1, "AAA")
    for i in range(8):
        b.add(1, 10 + i, "B" if i % 2 else "S", 100, 1_000_000 + (1 if i % 2 else 3) * 1000 + i)
    data, msgs, pos = b.bytes(), [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 2], "big")
        msgs.append(data[pos + 2:pos + 2 + n])
        pos += 2 + n
    msgs[5] = odd
    w = _Writer(tmp_path / "odd.pcap", "pcap", False)
    for i in range(0, len(msgs), 3):
        part = msgs[i:i + 3]
        payload = struct.pack(">10sQH", SESSION, i + 1, len(part)) + b"".join(struct.pack(">H", len(m)) + m for m in part)
        w.write(1_796_029_200_000_000_000 + 50_400_000_000_000 + i * 1000, _frame(payload, LINE_A, False))
    w.close()
    plain = tmp_path / "odd.itch"
    plain.write_bytes(b"".join(struct.pack(">H", len(m)) + m for m in msgs))
    return tmp_path / "odd.pcap", plain


@pytest.mark.parametrize("odd", [b"\x02hello world", b"\x02a\0b\0c\0d", b"\x02"])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_mold_framer_message_of_the_problem_mark_type_replays_as_plain_itch(tmp_path, odd, on_error):
    """A message whose type byte is the stream's capture-problem mark (0x02, no ITCH type)
    is skipped as the plain ITCH replay skips it: same rows, no forged problem, no crash."""
    import obook

    cap, plain = _capture_with(tmp_path, odd)
    want = obook.orders(str(plain), workers=1, on_error=on_error).read_all()
    got = obook.orders(str(cap), workers=1, on_error=on_error).read_all()
    assert got.num_rows == want.num_rows > 0
    assert got.select(want.schema.names).equals(want)


def test_mold_framer_lost_run_past_the_records_framed_named_whole(tmp_path):
    """Three messages, then ten lost: framed five at a time, the error names the whole run
    (4 to 13), not the part framed."""
    frames = b"".join(b"\x00\x0c" + b"S" + bytes(11) for _ in range(3)) + b"\x00\x01\x00" * 10
    r = MoldFramer(str(tmp_path / "c.pcap")).frame(np.frombuffer(frames, np.uint8).copy(), 1, 0, True, 5)
    assert r.n_records == 3 and "messages 4 to 13 lost on every line" in r.error.reason


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_mold_framer_lost_run_longer_than_a_read_named_whole(tmp_path, on_error):
    """Messages 6 to 99999 lost on every line (a heartbeat numbered 100000 after five
    messages): a strict replay names the whole range as the gaps table does; a tolerant
    replay counts every lost message."""
    import struct

    import obook
    from obook.engine.replay import Replay
    from obook.gen.pcap import LINE_A, SESSION, _frame, _Writer

    msgs = [b"S" + bytes(11)] * 5
    w = _Writer(tmp_path / "gap.pcap", "pcap", False)
    t = 1_796_029_200_000_000_000 + 50_400_000_000_000
    w.write(t, _frame(struct.pack(">10sQH", SESSION, 1, 5) + b"".join(b"\x00\x0c" + m for m in msgs), LINE_A, False))
    w.write(t + 1000, _frame(struct.pack(">10sQH", SESSION, 100_000, 0), LINE_A, False))
    w.close()
    path = str(tmp_path / "gap.pcap")
    assert [(g["first_seq"], g["last_seq"]) for g in obook.gaps(path).read_all().to_pylist()] == [(6, 99_999)]
    if on_error == "raise":
        with pytest.raises(obook.FeedError, match=r"message 6: messages 6 to 99999 lost on every line "
                                                  r"\(MoldUDP64 sequence numbers 6\.\.99999\)$"):
            obook.orders(path, workers=1).read_all()
    else:
        r = Replay(path, workers=1, on_error="skip")
        r.reader().read_all()
        assert r.stats["skipped"]["lost on every line"] == 99_994


@pytest.mark.parametrize("odd", [b"\x00", b"\x00\x00", b"\x00\x01\x00"])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_mold_framer_message_of_the_lost_mark_byte_replays_as_plain_itch(tmp_path, odd, on_error, caplog):
    """A message of the lines whose type byte is 0x00 (the lost-message mark's), the one byte
    0x00 too, is skipped and told of as the plain ITCH replay does: same rows and messages,
    no message reported lost, no gap."""
    import obook
    from obook.engine.replay import Replay

    cap, plain = _capture_with(tmp_path, odd)
    want = obook.orders(str(plain), workers=1, on_error=on_error).read_all()
    got = obook.orders(str(cap), workers=1, on_error=on_error).read_all()
    assert got.num_rows == want.num_rows > 0
    assert got.select(want.schema.names).equals(want)
    assert obook.gaps(str(cap)).read_all().num_rows == 0
    if on_error == "raise":
        types = [obook.messages(str(p)).read_all().column("type").to_pylist() for p in (plain, cap)]
        assert types[0] == types[1] and types[1][5] == "\x00"
    stats = {}
    for path in (plain, cap):
        r = Replay(str(path), workers=1, on_error=on_error)
        with caplog.at_level("WARNING", logger="obook"):
            r.reader().read_all()
        stats[path] = r.stats
    assert "lost on every line" not in stats[cap]["skipped"]
    assert stats[cap]["messages_by_type"]["\x00"] == stats[plain]["messages_by_type"]["\x00"] == 1
    assert f"{cap}: skipped 1 messages of types that are not ITCH 5.0 (0x00: 1); the first is message 6" \
        in caplog.messages
