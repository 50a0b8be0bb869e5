"""The ITCH decoder (workers): the owned stocks' messages as normalized book events."""

from __future__ import annotations

import numpy as np

from ..._kernels import itch as K
from ..._kernels.layout import (ACT_REPLACE, BOOK_ERROR_NAMES, ERR_DUPLICATE_REF, ERR_ZERO_ADD, EV_ACTION,
                                EV_NEWREF, EV_REF, EV_WIDTH, WANT_TRADES)
from ..base import Decoder, DecodeResult


class ItchDecoder(Decoder):
    def __init__(self, path, worker, n_workers, on_error="raise", want=0):
        super().__init__(path, worker, n_workers, on_error, want)
        self._names = np.zeros((1 << 16, 2), dtype=np.int64)
        self._keep = np.ones(1 << 16, dtype=np.uint8)       # locates decoded (all, until select)
        self._wanted = np.zeros(0, dtype=np.int64)          # selected stocks as 8 big-endian bytes
        self._owner = K.owners(n_workers)                   # the worker of each locate

    def select(self, tickers):
        """Decode only the locates whose directory message (R) names one of ``tickers``."""
        stocks = [t.encode("latin-1").ljust(8) for t in tickers if len(t.encode("latin-1")) <= 8]
        self._wanted = np.array([int.from_bytes(s, "big") for s in stocks if s[0] < 0x80] or [-1],
                                dtype=np.int64)
        self._keep[:] = 0
        return True

    def decode(self, buf, base_seq, events):
        ne, nn, status = K.itch_decode(buf, base_seq, self.worker, self._owner, K.SIZES, events, self._names,
                                       bool(self.want & WANT_TRADES), self._keep, self._wanted)
        names = []
        for loc, p in self._names[:nn]:
            names.append((int(loc), bytes(buf[p:p + 8]).decode("latin-1").rstrip()))
        error = None
        if status == K.DECODE_SHARES_PAST_INT64:   # in either mode: no row can show the cross
            shares = int(events[ne, 5]) & 0xFFFFFFFFFFFFFFFF
            error = (int(events[ne, 0]), f"cross trade (Q) of {shares} shares, past 2^63 - 1, the most the "
                                         "trades table's shares hold")
        return DecodeResult(ne, names, error)

    @classmethod
    def warm(cls):
        K.itch_decode(np.zeros(0, np.uint8), 1, 0, K.owners(1), K.SIZES, np.zeros((1, EV_WIDTH), np.int64),
                      np.zeros((1, 2), np.int64), False, np.ones(1 << 16, np.uint8), np.zeros(0, np.int64))

    def describe(self, code, event):
        return describe_error(code, event)


def describe_error(code: int, event) -> str:
    """The reason the books refused an ITCH ``event`` (``code``: ERR_*): the error, the order
    ref and the locate."""
    # a U's new order is the one a zero-share add or a duplicate ref is about
    new = code in (ERR_ZERO_ADD, ERR_DUPLICATE_REF) and int(event[EV_ACTION]) & 0xFF == ACT_REPLACE
    ref = int(event[EV_NEWREF if new else EV_REF]) & 0xFFFFFFFFFFFFFFFF
    return f"{BOOK_ERROR_NAMES[code]} {ref} (locate {int(event[2])})"
