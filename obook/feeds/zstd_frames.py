"""zstd streams as :mod:`obook.feeds.sources` reads them: told by their first bytes. A zstd
stream starts with a zstd frame (magic ``28 B5 2F FD``) or a skippable frame (magic
``0x184D2A50`` to ``0x184D2A5F``, little-endian, then a u32 length and that many bytes),
as ``pzstd`` writes before each of its frames.
"""

from __future__ import annotations

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SKIPPABLE_MAGIC = 0x184D2A50        # the low 4 bits are free: 0x184D2A50 ... 0x184D2A5F


def is_skippable(head: bytes) -> bool:
    """Whether ``head`` starts with a skippable frame's magic."""
    return len(head) >= 4 and int.from_bytes(head[:4], "little") & ~0xF == SKIPPABLE_MAGIC


def is_zstd(head: bytes) -> bool:
    """Whether ``head`` starts a zstd stream: a zstd frame's magic or a skippable frame's."""
    return head[:4] == ZSTD_MAGIC or is_skippable(head)
