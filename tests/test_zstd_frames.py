"""zstd streams: their magic numbers, and their compressed bytes handed out one unit at a
time (a frame's header, a block, a checksum, a skippable frame)."""

import io
import struct

import numpy as np
import pytest
import zstandard

from obook.feeds.zstd_frames import ZSTD_MAGIC, Unzstd, ZstdUnits, is_zstd

from hostile_support import damage_zstd_block, zstd_block_starts


def _skippable(payload: bytes, low: int = 0) -> bytes:
    return struct.pack("<II", 0x184D2A50 | low, len(payload)) + payload


def _data(n: int) -> bytes:
    """Bytes that compress into blocks of several sizes: runs, random bytes, text."""
    rng = np.random.default_rng(3)
    return b"".join((bytes(n // 4), rng.integers(0, 256, n // 4, dtype=np.uint8).tobytes(),
                     b"%d," * (n // 8) % tuple(range(n // 8))))


@pytest.mark.parametrize("head, want", [(ZSTD_MAGIC, True), (struct.pack("<I", 0x184D2A50), True),
                                        (struct.pack("<I", 0x184D2A5F) + b"more", True),
                                        (struct.pack("<I", 0x184D2A60), False), (struct.pack("<I", 0x184D2A4F), False),
                                        (ZSTD_MAGIC[:3], False), (b"\x1f\x8b\x08\x00", False), (b"", False)])
def test_is_zstd_frame_and_skippable_frame_magics(head, want):
    assert is_zstd(head) is want


def _pieces(blob: bytes, n: int = 1 << 17) -> list[bytes]:
    units, out = ZstdUnits(io.BytesIO(blob)), []
    while piece := units.read(n):
        out.append(piece)
    return out


@pytest.mark.parametrize("checksum", [False, True])
def test_zstd_units_reads_end_at_units_same_bytes(checksum):
    """Every read ends at or before a unit's end: the frame's header, each block (whole,
    or cut only by the size asked for), the checksum; a skippable frame is one unit."""
    data = _data(1 << 20)
    frame = zstandard.ZstdCompressor(write_checksum=checksum).compress(data)
    skip = _skippable(b"x" * 1000, 0xA)
    blob = skip + frame + _skippable(b"", 3)
    pieces = _pieces(blob)
    assert b"".join(pieces) == blob
    starts = zstd_block_starts(frame)
    ends = [len(skip) + p for p in starts] + [len(skip) + len(frame) - 4 * checksum, len(skip) + len(frame)]
    assert len(starts) > 8
    at, bounds = 0, {len(skip), *ends, len(blob)}
    for piece in pieces:
        within = [b for b in bounds if at < b < at + len(piece)]
        assert not within, (at, len(piece), within)      # no unit ends inside a read
        at += len(piece)
    assert {len(skip), *ends} <= set(np.cumsum([len(p) for p in pieces]).tolist())


def test_zstd_units_small_reads_and_a_stream_cut_in_a_header_same_bytes():
    frame = zstandard.ZstdCompressor().compress(_data(400_000))
    assert b"".join(_pieces(frame, 7)) == frame
    for cut in (2, 6, zstd_block_starts(frame)[1] + 2):          # in the magic, the frame header, a block header
        assert b"".join(_pieces(frame[:cut])) == frame[:cut]


def test_unzstd_damaged_block_oserror_in_zstds_words():
    blob, _ = damage_zstd_block(zstandard.ZstdCompressor().compress(_data(400_000)), 1)
    d = Unzstd()
    with pytest.raises(OSError, match=r"^damaged zstd stream: (?!Unable)\w"):
        d.decompress(blob, 1 << 30)
