"""The PITCH framer (parent process): cuts whole sequenced units, checks them and their
units' sequence numbers, counts their messages by type."""

from __future__ import annotations

import numpy as np

from ..._kernels import pitch as K
from ...errors import FeedError, TruncatedFeedError
from ..base import Framer, FrameResult

#: tolerant-mode counts (the kernel's counts[]) by what was passed over
SKIPPED = ("malformed unit", "short message", "sequence gap")


def type_name(t: int) -> str:
    return f"0x{t:02X}"


class PitchFramer(Framer):
    unit = "message"

    def __init__(self, path, on_error="raise"):
        super().__init__(path, on_error)
        self.types = np.zeros(256, np.int64)
        self.next_seq = np.zeros(256, np.int64)
        self.counts = np.zeros(3, np.int64)

    def message_counts(self):
        return {type_name(t): int(n) for t, n in enumerate(self.types) if n}

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        strict = self.on_error == "raise"
        k, nbytes, status, j = (int(v) for v in K.pitch_frame(buf, len(buf), max_records, strict, final, K.SIZES,
                                                              self.types, self.next_seq, self.counts))
        for name, n in zip(SKIPPED, self.counts):
            if n:
                self.skipped[name] = int(n)
        error = None
        if status != K.FRAME_OK:
            # a unit is whole or nothing: the error names its first message
            error = FeedError(self.path, base_seq + k, self._reason(buf, nbytes, status, j), unit=self.unit)
        elif final and nbytes < len(buf):
            error = TruncatedFeedError(self.path, base_seq + k, byte_offset + nbytes, unit=self.unit)
        return FrameResult(k, nbytes, error)

    def _reason(self, buf, pos, status, j) -> str:
        length = int(buf[pos]) | int(buf[pos + 1]) << 8
        unit = int(buf[pos + 3]) if len(buf) > pos + 3 else 0
        if status == K.FRAME_GAP:
            got = int.from_bytes(bytes(buf[pos + 4:pos + 8]), "little")
            expected = int(self.next_seq[unit])
            reason = f"sequence gap on unit {unit}: expected {expected}, got {got}"
            if got < expected:
                last = min(got + int(buf[pos + 2]), expected) - 1
                which = f"message {got}" if last == got else f"messages {got} to {last}"
                reason += f" (going back: {which} of the unit again: a unit sent twice, or the feed read again?)"
            return reason
        if length < K.HEADER:
            return f"malformed unit: length {length} (a unit header is {K.HEADER} bytes)"
        p = pos + K.HEADER
        for _ in range(j):
            p += int(buf[p])
        if status == K.FRAME_SHORT:
            t = int(buf[p + 1])
            return (f"malformed message: type {type_name(t)} needs {int(K.SIZES[t])} bytes, has {int(buf[p])} "
                    f"(message {j + 1} of its unit)")
        count = int(buf[pos + 2])
        reason = f"malformed unit: {count} messages do not fill its {length} bytes"
        if status == K.FRAME_LOST:
            reason += ", and no unit follows it: the units after it cannot be found"
        return reason
