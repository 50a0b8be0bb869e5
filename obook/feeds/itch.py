"""Nasdaq TotalView-ITCH 5.0 (BinaryFILE framing, raw or gzipped)."""

from __future__ import annotations

import numpy as np

from .._kernels import itch as K
from .._kernels.layout import (ACT_REPLACE, BOOK_ERROR_NAMES, ERR_DUPLICATE_REF, ERR_ZERO_ADD, EV_ACTION,
                               EV_NEWREF, EV_REF, WANT_TRADES)
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

    def decode(self, buf, base_seq, events):
        ne, nn = K.itch_decode(buf, base_seq, self.worker, self.n_workers, K.SIZES,
                               events, self._names, bool(self.want & WANT_TRADES))
        names = []
        for loc, p in self._names[:nn]:
            names.append((int(loc), bytes(buf[p:p + 8]).decode("latin-1").rstrip()))
        return DecodeResult(ne, names)

    def describe(self, code, event):
        # a U's new order is the one a zero-share add or a duplicate ref is about
        new = code in (ERR_ZERO_ADD, ERR_DUPLICATE_REF) and int(event[EV_ACTION]) & 0xFF == ACT_REPLACE
        ref = int(event[EV_NEWREF if new else EV_REF]) & 0xFFFFFFFFFFFFFFFF
        return f"{BOOK_ERROR_NAMES[code]} {ref} (locate {int(event[2])})"
