"""The worker side of a PITCH replay: the messages of the owned symbols -> book events.

Each worker owns the symbols ``owner_of`` hashes to it and numbers them 0, 1 ... in order
of first sight (global book = local * workers + worker). Messages after an add name only
the order, so every worker follows every live order (which worker's book it rests in, its
remaining shares) in its order table.
"""

from __future__ import annotations

import numpy as np

from ..._kernels import pitch as K
from ..._kernels.hashtab import ht_grown_rows, ht_move, table
from ..._kernels.layout import BOOK_ERROR_NAMES, EV_BOOK, EV_REF, EV_WIDTH, MAX_BATCH_RECORDS, NEED_ROOM, WANT_TRADES
from ..base import Decoder, DecodeResult

REASONS = {K.DEC_UNKNOWN: "unknown order id", K.DEC_DUPLICATE: "duplicate order id",
           K.DEC_PRICE: "price of 2**63 or more (prices are unsigned 64-bit) for order id",
           K.DEC_SIDE: "side not B or S"}


def symbol_text(symbol: int) -> str:
    """The symbol's 8 bytes (the kernel's int64 key, big-endian) as text."""
    return (int(symbol) & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "big").decode("latin-1").rstrip()


class PitchDecoder(Decoder):
    max_events_per_record = 2     # an Order Executed at Price that also sets the order's size
    def __init__(self, path, worker, n_workers, on_error="raise", want=0):
        super().__init__(path, worker, n_workers, on_error, want)
        self.book_mul = n_workers
        self.book_add = worker
        self.strict = on_error == "raise"
        self.prints = bool(want & WANT_TRADES)
        self.tickers: list[str] = []             # local book -> symbol
        # symbol -> (book, 0), order id -> (book * 2 + side, shares, price), execution id -> (book, 0)
        self._tables = [table(64, 2), table(1024, 3), table(64 if self.prints else 2, 2)]
        self._secs = np.zeros(256, np.int64)
        self._next_seq = np.zeros(256, np.int64)     # each unit's next sequence number
        self._new = np.zeros(MAX_BATCH_RECORDS + 1, np.int64)
        self._st = np.zeros(K.ST_WIDTH, np.int64)
        self._skips = np.zeros(len(REASONS) + 1, np.int64)

    def _grow(self, kind: int) -> None:
        """Rehash table ``kind`` into one twice as large (the same size when deleted rows
        are most of it)."""
        old = self._tables[kind]
        new = table(ht_grown_rows(len(old.keys), int(self._st[K.ST_USED + kind])), old.vals.shape[1])
        n = ht_move(old, new)
        self._st[K.ST_USED + kind] = self._st[K.ST_FILL + kind] = n
        self._tables[kind] = new

    def decode(self, buf, base_seq, events):
        st = self._st
        for c in (K.ST_POS, K.ST_K, K.ST_UK, K.ST_NE, K.ST_NEW, K.ST_BAD):
            st[c] = 0
        st[K.ST_BOOKS] = len(self.tickers)
        while True:
            syms, orders, execs = self._tables      # growing replaces one
            dec = K.Decoding(st, self._secs, syms, orders, execs, self._new, self._skips, self._next_seq)
            status = K.pitch_decode(buf, base_seq, self.worker, self.n_workers, events, dec, self.strict,
                                    self.prints)
            if status != NEED_ROOM:
                break
            self._grow(int(st[K.ST_ROOM]))
        names = []
        for symbol in self._new[:int(st[K.ST_NEW])].tolist():
            names.append((len(self.tickers), symbol_text(symbol)))
            self.tickers.append(names[-1][1])
        error = None
        if status != K.DEC_OK:
            error = (base_seq + int(st[K.ST_BAD]), self._reason(status, buf, int(st[K.ST_POS]),
                                                                int(st[K.ST_BAD]) - int(st[K.ST_UK])))
        if not self.strict:
            self.skipped = {REASONS[s]: int(c) for s, c in enumerate(self._skips) if c}
        return DecodeResult(int(st[K.ST_NE]), names, error)

    @staticmethod
    def _reason(status, buf, pos, j) -> str:
        p = pos + K.HEADER
        for _ in range(j):
            p += int(buf[p])
        oid = int.from_bytes(bytes(buf[p + 6:p + 14]), "little")
        if status == K.DEC_SIDE:
            return f"side {bytes(buf[p + K.O_SIDE:p + K.O_SIDE + 1])!r} not B or S, order id {oid}"
        return f"{REASONS[status]} {oid}"

    @classmethod
    def warm(cls):
        cls(None, 0, 1).decode(np.zeros(0, np.uint8), 1, np.zeros((1, EV_WIDTH), np.int64))

    def describe(self, code, event):
        ref = int(event[EV_REF]) & 0xFFFFFFFFFFFFFFFF
        what = BOOK_ERROR_NAMES.get(int(code), f"book error {int(code)}").replace("order ref", "order id")
        return f"{what} {ref} (symbol {self.tickers[int(event[EV_BOOK])]})"
