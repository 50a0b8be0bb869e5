"""zstd streams: their magic numbers."""

import struct

import pytest

from obook.feeds.zstd_frames import ZSTD_MAGIC, is_zstd


@pytest.mark.parametrize("head, want", [(ZSTD_MAGIC, True), (struct.pack("<I", 0x184D2A50), True),
                                        (struct.pack("<I", 0x184D2A5F) + b"more", True),
                                        (struct.pack("<I", 0x184D2A60), False), (struct.pack("<I", 0x184D2A4F), False),
                                        (ZSTD_MAGIC[:3], False), (b"\x1f\x8b\x08\x00", False), (b"", False)])
def test_is_zstd_frame_and_skippable_frame_magics(head, want):
    assert is_zstd(head) is want
