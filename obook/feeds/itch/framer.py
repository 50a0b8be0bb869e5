"""The ITCH framer (parent process): cuts whole BinaryFILE frames, counts them by type.

A frame whose type byte is no ITCH 5.0 message type is framed by its length and skipped
(a type added later is no error), but not silently: the framer counts them by type and
keeps the first one's record number (:meth:`ItchFramer.notes`, one warning of the replay).
A feed where most frames are of such types is no ITCH feed (another format, random bytes
that frame by chance): at the first record where more than half of the records so far are
of such types, once ``JUDGED_AFTER`` records are framed (or at a shorter feed's last), the
framer refuses it with a FeedError; the rows of the records before it are delivered.
"""

from __future__ import annotations

import numpy as np

from ..._kernels import itch as K
from ...errors import TRUNCATED_AT, FeedError, TruncatedFeedError
from ..base import Framer, FrameResult, counts_by_type

#: the message types of ITCH 5.0 (those obook checks and the others it skips)
ITCH50_TYPES = "SRHYLVWKJhAFECXDUPQBINO"
#: records framed before a feed of mostly unknown types is refused (a shorter feed: at its end)
JUDGED_AFTER = 64
NOT_ITCH = "not ITCH 5.0"


def type_name(t: int) -> str:
    """A type byte as its letter when printable, with its hex value."""
    return f"{chr(t)!r} (0x{t:02x})" if 0x20 < t < 0x7f else f"0x{t:02x}"


def _past_the_end(buf, p: int, byte_offset: int) -> str | None:
    """The reason of the frame at ``buf[p]`` that the end of ``buf`` (the feed's) cuts, when its
    2-byte length is whole: that length runs past the end (a cut file, or a wrong length);
    None (the plain truncated record) when the end cuts the length itself."""
    if len(buf) - p < 2:
        return None
    ln = (int(buf[p]) << 8) | int(buf[p + 1])
    return (f"{TRUNCATED_AT}{byte_offset + p}: its length, {ln} bytes, runs past the end of the file "
            f"({len(buf) - p - 2} of them are there)")


class ItchFramer(Framer):
    unit = "message"
    #: the type bytes that are messages of the feed (a subclass adds its own marks)
    known_types = ITCH50_TYPES.encode()

    def __init__(self, path, on_error="raise"):
        super().__init__(path, on_error)
        self.types = np.zeros(256, np.int64)   # framed messages by type byte
        self._unknown_mask = np.ones(256, np.int64)
        self._unknown_mask[np.frombuffer(self.known_types, np.uint8)] = 0
        self.unknown = 0                       # frames of unknown types so far
        self.first_unknown = None              # (record, type byte) of the first of them

    def message_counts(self):
        return counts_by_type(self.types)

    def unknown_types(self) -> dict[int, int]:
        """The frames of types that are no message of the feed, by type byte."""
        return {t: int(n) for t, n in enumerate(self.types * self._unknown_mask) if n}

    def notes(self) -> list[str]:
        if not self.unknown:
            return []
        record, _t = self.first_unknown
        types = ", ".join(f"{type_name(t)}: {n:,}" for t, n in sorted(self.unknown_types().items()))
        return [f"{self.path}: skipped {self.unknown:,} {self.unit}s of types that are {NOT_ITCH} ({types}); "
                f"the first is {self.unit} {record}"]

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        strict = self.on_error == "raise"
        k, nbytes, status, bad = K.itch_frame(buf, len(buf), max_records, strict, K.SIZES, self.types)
        unknown = int(self.types @ self._unknown_mask)
        if unknown > self.unknown:
            refused = self._judge(buf, k, base_seq, unknown, final and nbytes == len(buf)
                                  and status == K.FRAME_OK)
            if refused is not None:
                return refused
        if bad:
            self.skipped["malformed frame"] = self.skipped.get("malformed frame", 0) + bad
        error = None
        if status == K.FRAME_MALFORMED:
            p = nbytes
            ln = (int(buf[p]) << 8) | int(buf[p + 1])
            if ln == 0:
                why = "malformed frame: length 0"
            else:
                t = chr(buf[p + 2])
                why = f"malformed frame: type {t!r} needs {K.SIZES[buf[p + 2]]} bytes, frame has {ln}"
            error = FeedError(self.path, base_seq + k, why, unit=self.unit)
        elif final and k < max_records and nbytes < len(buf):
            error = TruncatedFeedError(self.path, base_seq + k, byte_offset + nbytes,
                                       _past_the_end(buf, nbytes, byte_offset), unit=self.unit)
        return FrameResult(k, nbytes, error)

    def _judge(self, buf, n, base_seq, unknown, ends_feed):
        """The batch's n frames hold frames of unknown types (``unknown`` of them so far): the
        first one's record, and the refusal of a feed whose records are mostly of such types
        (walked frame by frame only when the first is to be found or most could be unknown)."""
        before = self.unknown
        self.unknown = unknown
        if self.first_unknown is not None and 2 * unknown <= base_seq:
            return None          # no record of this batch can have most of the records before it unknown
        mask, sizes = self._unknown_mask, K.SIZES
        pos = 0
        seen = before
        for k in range(n):
            ln = (int(buf[pos]) << 8) | int(buf[pos + 1])
            if ln and ln >= sizes[buf[pos + 2]] and mask[buf[pos + 2]]:
                seen += 1
                if self.first_unknown is None:
                    self.first_unknown = (base_seq + k, int(buf[pos + 2]))
            record = base_seq + k
            if 2 * seen > record and (record >= JUDGED_AFTER or (ends_feed and k == n - 1)):
                return FrameResult(k, pos, self._refusal(record, seen))
            if self.first_unknown is not None and 2 * unknown <= record:
                break            # (the same for the records after it)
            pos += 2 + ln
        return None

    def _refusal(self, record, seen) -> FeedError:
        first, t = self.first_unknown
        return FeedError(self.path, record, f"{seen:,} of its first {record:,} {self.unit}s are of types that are "
                         f"{NOT_ITCH} (the first: {self.unit} {first}, type {type_name(t)}): is it an ITCH feed?",
                         unit=self.unit)
