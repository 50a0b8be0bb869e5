"""The capture framer's marks (lost messages, capture problems) beside the ITCH framer's
refusal of a feed of mostly non-ITCH frames."""

from __future__ import annotations

import numpy as np

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
