"""The ITCH framer (parent process): cuts whole BinaryFILE frames, counts them by type."""

from __future__ import annotations

import numpy as np

from ..._kernels import itch as K
from ...errors import FeedError, TruncatedFeedError
from ..base import Framer, FrameResult, counts_by_type


class ItchFramer(Framer):
    unit = "message"

    def __init__(self, path, on_error="raise"):
        super().__init__(path, on_error)
        self.types = np.zeros(256, np.int64)   # framed messages by type byte

    def message_counts(self):
        return counts_by_type(self.types)

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        strict = self.on_error == "raise"
        k, nbytes, status, bad = K.itch_frame(buf, len(buf), max_records, strict, K.SIZES, self.types)
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
            error = TruncatedFeedError(self.path, base_seq + k, byte_offset + nbytes, unit=self.unit)
        return FrameResult(k, nbytes, error)
