"""zstd streams as :mod:`obook.feeds.sources` reads them: told by their first bytes, and
handed to the decompressor one unit of the format at a time.

* A zstd stream starts with a zstd frame (magic ``28 B5 2F FD``) or a skippable frame
  (magic ``0x184D2A50`` to ``0x184D2A5F``, little-endian, then a u32 length and that many
  bytes), as ``pzstd`` writes before each of its frames.
* The decompressor decodes a block in the call that gives it the block's last byte, and
  a call that fails returns none of its output: given the ends of two blocks at once, it
  decodes and outputs the first, then fails on the second (damaged) and the first block's
  bytes are lost with it. :class:`ZstdUnits` gives each read at most one unit (a frame's
  header, one block, a frame's checksum, a skippable frame), and a new unit is read only
  once the decompressor asks for input (all it decoded was given out): a damaged block
  costs no byte decoded before it.
"""

from __future__ import annotations

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SKIPPABLE_MAGIC = 0x184D2A50        # the low 4 bits are free: 0x184D2A50 ... 0x184D2A5F
#: the length of "the rest of the stream": bytes that are no unit (junk, a header cut
#: short, a reserved block type) go to the decompressor as they are; it says what is wrong
REST = 1 << 62
_PREFIX = "Unable to decompress Zstandard data: "


def is_skippable(head: bytes) -> bool:
    """Whether ``head`` starts with a skippable frame's magic."""
    return len(head) >= 4 and int.from_bytes(head[:4], "little") & ~0xF == SKIPPABLE_MAGIC


def is_zstd(head: bytes) -> bool:
    """Whether ``head`` starts a zstd stream: a zstd frame's magic or a skippable frame's."""
    return head[:4] == ZSTD_MAGIC or is_skippable(head)


def frame_header_size(descriptor: int) -> int:
    """Bytes of a zstd frame's header (from its magic) of frame header descriptor ``descriptor``:
    magic, descriptor, window descriptor (absent in a single segment), dictionary id and
    content size (by their flags)."""
    single = descriptor >> 5 & 1
    return (4 + 1 + (1 - single) + (0, 1, 2, 4)[descriptor & 3]
            + (single, 2, 4, 8)[descriptor >> 6])


class ZstdUnits:
    """The compressed bytes of a zstd stream (``raw.read``), each read giving at most the
    rest of one unit: a frame's header, a block (its 3-byte header and its content), a
    frame's checksum, a skippable frame."""

    CHUNK = 1 << 17      # bytes read from raw at a time

    def __init__(self, raw):
        self.raw = raw
        self.ahead = b""           # read from raw, not given out yet
        self.left = 0              # bytes of the current unit not given out yet
        self.measure = self._frame  # the length of the unit that starts at ahead[0]
        self.checksum = False      # the current frame ends with a 4-byte checksum

    def read(self, n: int = -1) -> bytes:
        if not self.left:
            self.left = self.measure()
        if not self.ahead:
            self.ahead = self.raw.read(self.CHUNK)
        k = min(len(self.ahead), self.left, n if n >= 0 else REST)
        out, self.ahead = self.ahead[:k], self.ahead[k:]
        self.left -= k
        return out

    def _peek(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer only at the end of raw), not given out."""
        while len(self.ahead) < n:
            more = self.raw.read(self.CHUNK)
            if not more:
                break
            self.ahead += more
        return self.ahead[:n]

    def _frame(self) -> int:
        head = self._peek(8)
        if head[:4] == ZSTD_MAGIC and len(head) > 4:
            self.checksum = bool(head[4] & 4)
            self.measure = self._block
            return frame_header_size(head[4])
        if is_skippable(head) and len(head) == 8:
            return 8 + int.from_bytes(head[4:8], "little")
        return REST

    def _block(self) -> int:
        head = self._peek(3)
        if len(head) < 3:
            return REST
        header = int.from_bytes(head, "little")
        last, kind, size = header & 1, header >> 1 & 3, header >> 3
        if kind == 3:                   # reserved: a damaged block header
            return REST
        if last:
            self.measure = self._checksum if self.checksum else self._frame
        return 3 + (1 if kind == 1 else size)     # an RLE block holds its one byte

    def _checksum(self) -> int:
        self.measure = self._frame
        return 4


def _zstd():
    """The standard library's ``compression.zstd`` (its backport before Python 3.14)."""
    try:
        from compression import zstd
    except ImportError:
        from backports import zstd
    return zstd


class Unzstd:
    """The standard library's zstd decompressor (``decompress(data, max_length)`` bounds
    each output), its errors as OSError naming the stream damaged, in zstd's words."""

    def __init__(self):
        self._d = _zstd().ZstdDecompressor()

    def decompress(self, data: bytes, max_length: int) -> bytes:
        try:
            return self._d.decompress(data, max_length)
        except _zstd().ZstdError as e:
            raise OSError(f"damaged zstd stream: {str(e).removeprefix(_PREFIX)}") from e

    eof = property(lambda self: self._d.eof)
    needs_input = property(lambda self: self._d.needs_input)
    unused_data = property(lambda self: self._d.unused_data)
