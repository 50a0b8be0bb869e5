"""The worker side of a DBN replay: MBO records of the owned instruments -> book events.

Each worker owns the instruments that ``owner_of`` hashes to it and numbers them 0, 1 ...
in order of first sight (its local books; global book = local * workers + worker). A
worker sees every batch, the header too: the symbol mappings name the books.
"""

from __future__ import annotations

import numpy as np

from ..._kernels import dbn as K
from ..._kernels.hashtab import ht_move, table
from ..._kernels.layout import BOOK_ERROR_NAMES, EV_BOOK, EV_REF, EV_WIDTH, MAX_BATCH_RECORDS, NEED_ROOM
from ..base import Decoder, DecodeResult
from .metadata import MAGIC, header_length, parse

REASONS = {
    K.DEC_BAD_SIDE: "add or modify without side B or A",
    K.DEC_BAD_ACTION: "unknown MBO action",
    K.DEC_TOB: "top-of-book (F_TOB) record: not supported",
}


def symbol_of_mapping(buf, p: int) -> str:
    """The stype_in symbol (the raw symbol) of the symbol mapping record at buf[p]."""
    if int(buf[p]) * 4 == K.SYMBOL_MAPPING_V1_SIZE:
        raw = bytes(buf[p + 16:p + 38])
    else:
        raw = bytes(buf[p + 17:p + 88])
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


class DbnDecoder(Decoder):
    def __init__(self, path, worker, n_workers, on_error="raise", want=0):
        super().__init__(path, worker, n_workers, on_error, want)
        self.book_mul = n_workers
        self.book_add = worker
        self.strict = on_error == "raise"
        self.tickers: dict[int, str] = {}
        self.instrument_ids: list[int] = []      # local book -> instrument_id
        self._ins = table(1024)                  # instrument id -> local book
        self._open = np.zeros(512, np.int64)
        self._new = np.zeros(MAX_BATCH_RECORDS, np.int64)
        self._st = np.zeros(K.ST_WIDTH, np.int64)
        self._skips = np.zeros(4, np.int64)
        self._maps = np.zeros((MAX_BATCH_RECORDS, 2), np.int64)

    def _grow(self):
        ins = table(2 * len(self._ins.keys))
        ht_move(self._ins, ins)
        self._ins = ins
        grown = np.zeros(len(ins.keys) // 2, np.int64)
        grown[:len(self._open)] = self._open
        self._open = grown

    def decode(self, buf, base_seq, events):
        st = self._st
        st[:] = 0
        if bytes(buf[:3]) == MAGIC:                 # a file's header: a batch of its own
            n = header_length(bytes(buf[:8]))
            self.tickers.update(parse(bytes(buf[:n])).tickers())
            st[K.ST_POS] = n
        st[K.ST_BOOKS] = st[K.ST_KEYS_LIVE] = st[K.ST_KEYS_FILL] = len(self.instrument_ids)
        while True:
            status = K.dbn_decode(buf, base_seq, self.worker, self.n_workers, events, self._ins, self._open,
                                  self._new, st, self.strict, self._skips, self._maps)
            if status != NEED_ROOM:
                break
            self._grow()
        names = []
        for iid in self._new[:int(st[K.ST_NEW])].tolist():
            names.append((len(self.instrument_ids), self.tickers.get(iid, str(iid)), iid))
            self.instrument_ids.append(iid)
        for book, p in self._maps[:int(st[K.ST_MAPS])].tolist():
            iid = self.instrument_ids[book]
            self.tickers[iid] = symbol_of_mapping(buf, p)
            names.append((book, self.tickers[iid], iid))
        error = None
        if status != K.DEC_OK:
            error = (base_seq + int(st[K.ST_BAD]), REASONS[status])
        if not self.strict:
            self.skipped = {REASONS[s]: int(c) for s, c in enumerate(self._skips) if c}
        return DecodeResult(int(st[K.ST_NE]), names, error)

    @classmethod
    def warm(cls):
        K.dbn_decode(np.zeros(0, np.uint8), 1, 0, 1, np.zeros((1, EV_WIDTH), np.int64),
                     table(4), np.zeros(2, np.int64),
                     np.zeros(1, np.int64), np.zeros(K.ST_WIDTH, np.int64), True, np.zeros(4, np.int64),
                     np.zeros((1, 2), np.int64))

    def instrument_of(self, book: int) -> int:
        return self.instrument_ids[int(book)]

    def describe(self, code, event):
        ref = int(event[EV_REF]) & 0xFFFFFFFFFFFFFFFF
        what = BOOK_ERROR_NAMES.get(int(code), f"book error {int(code)}").replace("order ref", "order_id")
        return f"{what} {ref} (instrument_id {self.instrument_of(event[EV_BOOK])})"
