"""The CSV decoder (workers): lines ``Time,Ticker,Order,T,Shares,Price[,...]`` as events.

The framer cuts whole physical lines (a record is a line, header = line 1);
the decoder parses the lines of the tickers its worker owns (FNV-1a 64 of the
ticker bytes modulo the number of workers) with the numba kernels of
obook._kernels.csv_decode and emits layout event rows. Text (tickers, order
ids, field text in reasons) is decoded as UTF-8 with invalid bytes replaced.
"""

from __future__ import annotations

import numpy as np

from ..._kernels import csv_decode as K
from ..._kernels.layout import BOOK_ERROR_NAMES, ERR_DUPLICATE_REF, ERR_UNKNOWN_REF, EV_REF, EV_WIDTH, WANT_TRADES
from ..base import Decoder, DecodeResult, counts_by_type
from .framer import FIELDS, header_commas

#: tolerant-mode count keys of the field errors, by decode status
SKIP_KINDS = {
    K.ST_FIELDS: "expected at least 6 fields",
    K.ST_TIME_NAN: "time is not an unsigned integer",
    K.ST_TIME_RANGE: "time out of range",
    K.ST_TYPE: "unknown message type",
    K.ST_SHARES_NAN: "shares is not an unsigned integer",
    K.ST_SHARES_RANGE: "shares out of range",
    K.ST_PRICE_NAN: "price is not an unsigned integer",
    K.ST_PRICE_RANGE: "price out of range",
    K.ST_MANY: "more fields than the header",
}

def _text(b) -> str:
    return bytes(b).decode("utf-8", "replace")


#: a field longer than this is shown in an error's reason by its start and its size
SHOWN_BYTES = 64


def shown(b) -> str:
    """A field's text for an error message: whole when short, else its start and size."""
    if len(b) <= SHOWN_BYTES:
        return _text(b)
    return f"{_text(b[:SHOWN_BYTES])}... ({len(b)} bytes)"


def field_reason(status: int, text: str = "", n_fields: int = 0) -> str:
    """The reason text of a field error (ST_MANY: ``text`` is the header's fields)."""
    if status == K.ST_FIELDS:
        return f"expected at least 6 fields, got {n_fields}"
    if status == K.ST_MANY:
        return (f"expected at most {text} fields (as many as the header), got {n_fields}: "
                "two lines joined by a lost line end?")
    if status == K.ST_TYPE:
        return f"unknown message type '{text}'"
    field = {K.ST_TIME_NAN: "time", K.ST_TIME_RANGE: "time", K.ST_SHARES_NAN: "shares",
             K.ST_SHARES_RANGE: "shares", K.ST_PRICE_NAN: "price", K.ST_PRICE_RANGE: "price"}[status]
    if status == K.ST_TIME_NAN and text.strip().lower() == "time":
        return (f"time is not an unsigned integer: '{text}' (a header line not at the feed's start: of the "
                "files read as one feed, only the first has one)")
    if status in (K.ST_TIME_NAN, K.ST_SHARES_NAN, K.ST_PRICE_NAN):
        return f"{field} is not an unsigned integer: '{text}'"
    return f"{field} out of range: '{text}'"


def _aligned_table(rows: int) -> np.ndarray:
    """An empty (rows, T_WIDTH) int64 table whose rows start on 64-byte lines."""
    raw = np.empty(rows * K.T_WIDTH + 8, np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    tab = raw[skip:skip + rows * K.T_WIDTH].reshape(rows, K.T_WIDTH)
    tab[:, K.T_KEY] = -1
    return tab


class _Table:
    """One hash table: rows, key -> text rows, and the byte arena of the text."""

    def __init__(self, rows: int = 1 << 10):
        self.tab = _aligned_table(rows)
        self.keys = np.zeros((rows // 2, K.K_WIDTH), np.int64)
        self.arena = np.zeros(rows * 8, np.uint8)

    def grow(self, n_keys: int, n_high: int, used: int, live: int, n_text: int) -> int:
        """Room for one more key of n_text bytes; returns the arena bytes used."""
        if 2 * (n_keys + 1) > self.tab.shape[0]:
            tab = _aligned_table(2 * self.tab.shape[0])
            K.table_rehash(self.tab, tab)
            self.tab = tab
        if n_high >= self.keys.shape[0]:
            keys = np.zeros((2 * self.keys.shape[0], K.K_WIDTH), np.int64)
            keys[:n_high] = self.keys[:n_high]
            self.keys = keys
        if used + n_text > self.arena.shape[0]:
            cap = self.arena.shape[0]
            if live + n_text > cap // 4:    # then each compaction frees >= 3/4 of it
                cap = max(2 * cap, 4 * (live + n_text))
            arena = np.empty(cap, np.uint8)
            used = int(K.arena_compact(self.keys, n_high, self.arena, arena))
            self.arena = arena
        return used

    def kernel(self) -> K.TextTable:
        """The arrays as the kernels take them."""
        return K.TextTable(self.tab, self.keys, self.arena)

    def text(self, k: int, show=_text) -> str:
        off, n = int(self.keys[k, K.K_OFF]), int(self.keys[k, K.K_LEN])
        return show(self.arena[off:off + n])


class CsvDecoder(Decoder):
    """Parses the lines of the owned tickers; interns tickers and (ticker, order id)."""

    def __init__(self, path, worker, n_workers, on_error="raise", want=0):
        super().__init__(path, worker, n_workers, on_error, want)
        self.book_mul = n_workers
        self.book_add = worker
        self.tolerant = on_error != "raise"
        self.prints = bool(want & WANT_TRADES)   # T / X lines only feed the trades table
        self.tk = _Table()
        self.ids = _Table()
        self.free = np.zeros(self.ids.keys.shape[0], np.int64)   # free order keys (a stack)
        self.pend = np.zeros(self.ids.keys.shape[0], np.int64)   # keys that died this batch
        self.st = np.zeros(K.S_WIDTH, np.int64)
        self.counts = np.zeros(K.N_ST, np.int64)
        self.types = np.zeros(256, np.int64)   # well-formed lines by type
        self.out = np.zeros(K.O_WIDTH, np.int64)
        self._scratch = np.zeros((K.SC_ROWS, K.SC_WIDTH), np.int64)
        self.max_commas = FIELDS - 1    # a line's commas at most: the header's, once decoded

    def _grow(self, n_text: int):
        st = self.st
        ntk = int(st[K.S_NTK])
        st[K.S_TK_ARENA] = self.tk.grow(ntk, ntk, int(st[K.S_TK_ARENA]), int(st[K.S_TK_ARENA]), n_text)
        st[K.S_ARENA] = self.ids.grow(int(st[K.S_IN_TABLE]), int(st[K.S_KEYS_HIGH]), int(st[K.S_ARENA]),
                                      int(st[K.S_ARENA_LIVE]), n_text)
        n = self.ids.keys.shape[0]
        if self.free.shape[0] < n:
            for name in ("free", "pend"):
                a = np.zeros(n, np.int64)
                old = getattr(self, name)
                a[:old.shape[0]] = old
                setattr(self, name, a)

    def decoding(self) -> K.Decoding:
        """The state decode_lines takes (made at each call: growing replaces free and pend)."""
        return K.Decoding(self.st, self.out, self.counts, self.types, self._scratch, self.free, self.pend)

    def decode(self, buf, base_seq, events):
        st, out = self.st, self.out
        K.release_pending(self.ids.tab, self.ids.keys, self.free, self.pend, st)
        ntk0 = int(st[K.S_NTK])
        out[K.O_POS] = 0
        out[K.O_NEXT] = base_seq
        out[K.O_EVENTS] = 0
        if base_seq == 1:
            self.max_commas = max(FIELDS - 1, header_commas(buf))
        while True:
            status = K.decode_lines(buf, self.worker, self.n_workers, self.max_commas, self.tolerant,
                                    self.prints, events, self.tk.kernel(), self.ids.kernel(), self.decoding())
            if status != K.NEED_ROOM:
                break
            self._grow(int(out[K.O_ROOM]))
        names = [(b, self.tk.text(b)) for b in range(ntk0, int(st[K.S_NTK]))]
        error = None
        if status != K.ST_OK:
            a, b = int(out[K.O_A]), int(out[K.O_B])
            if status == K.ST_FIELDS:
                reason = field_reason(status, n_fields=a)
            elif status == K.ST_MANY:
                reason = field_reason(status, str(self.max_commas + 1), n_fields=a)
            else:
                reason = field_reason(status, shown(buf[a:b]))
            error = (int(out[K.O_SEQ]), reason)
        if self.tolerant:
            self.skipped = {SKIP_KINDS[s]: int(c) for s, c in enumerate(self.counts) if c}
        return DecodeResult(int(out[K.O_EVENTS]), names, error)

    @classmethod
    def warm(cls):
        """Load the kernels every worker runs (the line decoder, the release of dead order
        keys) before workers are forked from this process; the text tables' growth loads
        where a table grows."""
        cls("", 0, 1).decode(np.zeros(0, np.uint8), 2, np.zeros((1, EV_WIDTH), np.int64))

    def message_counts(self):
        return counts_by_type(self.types)

    def order_id(self, ref: int) -> str:
        """The text of an order key of the last batch (or of any live order)."""
        return self.ids.text(int(ref))

    def describe(self, code, event):
        if code == ERR_DUPLICATE_REF:
            return f"duplicate order '{self.ids.text(int(event[EV_REF]), shown)}'"
        if code == ERR_UNKNOWN_REF:
            return f"unknown order '{self.ids.text(int(event[EV_REF]), shown)}'"
        return BOOK_ERROR_NAMES.get(int(code), f"book error {int(code)}")
