"""Nasdaq TotalView-ITCH 5.0 (BinaryFILE framing, raw or gzipped)."""

from __future__ import annotations

import numpy as np

from .._kernels import itch as K
from .._kernels.layout import BOOK_ERROR_NAMES, EV_REF, WANT_TRADES
from ..errors import FeedError, TruncatedFeedError
from .base import Decoder, DecodeResult, Framer, FrameResult, counts_by_type


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


class ItchDecoder(Decoder):
    def __init__(self, path, worker, n_workers, on_error="raise", want=0):
        super().__init__(path, worker, n_workers, on_error, want)
        self._names = np.zeros((1 << 16, 2), dtype=np.int64)
        self._keep = np.ones(1 << 16, dtype=np.uint8)       # locates decoded (all, until select)
        self._wanted = np.zeros(0, dtype=np.int64)          # selected stocks as 8 big-endian bytes

    def select(self, tickers):
        """Decode only the locates whose directory message (R) names one of ``tickers``."""
        stocks = [t.encode("latin-1").ljust(8) for t in tickers if len(t.encode("latin-1")) <= 8]
        self._wanted = np.array([int.from_bytes(s, "big") for s in stocks if s[0] < 0x80] or [-1],
                                dtype=np.int64)
        self._keep[:] = 0
        return True

    def decode(self, buf, base_seq, events):
        ne, nn = K.itch_decode(buf, base_seq, self.worker, self.n_workers, K.SIZES,
                               events, self._names, bool(self.want & WANT_TRADES), self._keep, self._wanted)
        names = []
        for loc, p in self._names[:nn]:
            names.append((int(loc), bytes(buf[p:p + 8]).decode("latin-1").rstrip()))
        return DecodeResult(ne, names)

    def describe(self, code, event):
        return f"{BOOK_ERROR_NAMES[code]} {int(event[EV_REF]) & 0xFFFFFFFFFFFFFFFF} (locate {int(event[2])})"
