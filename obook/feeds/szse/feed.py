"""Framers and decoders of the Shenzhen text log and binary records.

Both forms become rows of one record table (obook._kernels.l2_szse) that one kernel
turns into book events (their orders named by per-worker keys: K.ref_key). The binary
framer reads of each record only what the checks below and the routing need (its length,
type, SecurityID, ExecType, channel, sequence, an execution's order numbers): the workers
get the records' bytes and each record's security, and each reads its own securities'
records whole. The text framer reads only each line's head (type, security, channel,
sequence, an execution's order numbers: what routing and the checks below need) and hands
the workers the head rows and the batch's text, of which each parses the rest of its own
lines (a line whose other fields are bad is the worker's error, or count, naming the
line). The framer checks that each channel's ApplSeqNum follows the last one (a gap is an
error naming the record, or counted as "sequence gap" in tolerant mode) and never ends a
batch between an incoming order and its fills (it looks ``LOOKAHEAD`` records ahead; a
channel silent that long is taken as done). The text framer reads the feed's last line whole
when it has no line end: a cut one (obook.feeds.axsbe_lines) is an error in either mode.
"""

from __future__ import annotations

import numpy as np

from ..._kernels import l2_szse as K
from ..._kernels import l2_text
from ..._kernels.l2_text import KEYS, fields
from ..._kernels.layout import (BOOK_ERROR_NAMES, ERR_LEVEL_OVERFLOW, EV_BOOK, EV_REF, MAX_BATCH_RECORDS,
                                OR_NEW_REF, OR_REF, OR_WIDTH, TR_REF)
from ...errors import FeedError, TruncatedFeedError
from ..axsbe_lines import binary_reason, cut_reason, drop_bom, marker_reason, number_reason
from ..base import Decoder, DecodeResult, Framer, FrameResult

LOOKAHEAD = 4096
KEY_NAMES = {v: k for k, v in KEYS.items()}
TYPE_NAMES = {111: "snapshot", 191: "execution", 192: "order"}
CHANNELS = K.CHANNELS
#: the keys of an order and an execution line (what ``l2_szse.text_check`` needs) and the
#: fixed-width one: a last line without a line end that lacks one, or whose TransactTime
#: is short, is cut
NEEDED = {t: tuple(KEY_NAMES[int(k)] for k in keys) for t, keys in ((192, K.ORDER_KEYS), (191, K.TRADE_KEYS))}
WIDTHS = {"TransactTime": 17}


def reason(code: int, detail: int, text: str = "") -> str:
    """The reason text of a rejected record."""
    if code == K.BAD_TOKEN:
        return "malformed line: a token without '='"
    if code == K.BAD_MARKER:
        return marker_reason(text.encode())
    if code == K.BAD_TYPE:
        return f"unknown message type {detail}"
    if code == K.BAD_LENGTH:
        return f"malformed record: length {detail}"
    name = KEY_NAMES.get(detail, str(detail))
    if code == K.BAD_MISSING:
        return f"malformed line: no {name}"
    value = dict(t.split("=", 1) for t in text.lstrip("/").split() if "=" in t).get(name, "")
    if code == K.BAD_NUMBER:
        return number_reason(name, value)
    return f"malformed record: bad {name} {value}".rstrip()


class _SzseFramer(Framer):
    width = K.R_WIDTH          # columns of the framer's head rows (R_SEQ .. R_OFFER at least)
    #: the head rows' R_SEQ: the record number (True) or the record's index in the buffer
    numbered = True

    def __init__(self, path, on_error="raise", lookahead: int = LOOKAHEAD):
        super().__init__(path, on_error)
        self.lookahead = lookahead
        self.last_appl = np.full(CHANNELS, -1, np.int64)
        self.cont = np.zeros(1, np.int64)
        self.nxt = np.zeros(CHANNELS, np.int64)
        #: tolerant mode: the rejected records before the cut so far, and per channel how many
        #: of them came before its last record (a gap they could hold is no gap: _skipped_gaps)
        self.n_rejected = 0
        self.rejected_at = np.zeros(CHANNELS, np.int64)
        self._alloc(1 << 16)

    def _alloc(self, n):
        self.ends, self.codes, self.details = (np.zeros(n, np.int64) for _ in range(3))
        self.rec = np.zeros((n, self.width), np.int64)
        self.cont = np.zeros(n, np.int64)

    def _lost_framing(self, bad: np.ndarray, n: int) -> np.ndarray:
        """Of the bad records ``bad``, those after which the next records cannot be found
        (a tolerant replay cannot pass over them): none in a text log, whose lines end."""
        return np.zeros(len(bad), bool)

    def _finish(self, buf, base_seq, n, r, final, max_records, byte_of):
        """Pick the cut of ``n`` scanned records (``r`` rows, R_SEQ = record number, or index
        without ``numbered``); returns a FrameResult (without data) and the rows before the
        cut. ``byte_of(i)``: the bytes of records [0, i)."""
        codes = self.codes[:n]
        # a feed cut by damage: the records of the window before it may miss lost fills
        reach = n if final and self.damage is None else n - self.lookahead
        limit = min(reach, max_records)
        lost = self.damage(base_seq + n) if final and self.damage is not None and reach <= max_records else None
        if limit <= 0:
            return FrameResult(0, 0, lost), 0
        error = None
        bad = np.flatnonzero(codes < 0)
        if len(bad):
            # a cut last line stops a tolerant replay too
            stop = bad if self.on_error == "raise" else bad[(codes[bad] == K.BAD_CUT) | self._lost_framing(bad, n)]
            if len(stop) and stop[0] < limit:
                i = int(stop[0])
                error = self._error(buf, base_seq, i)
                limit = i
        if error is None:
            error = lost
        rec = self.rec
        first = base_seq if self.numbered else 0    # R_SEQ of the buffer's first record
        if first:
            rec[:r, K.R_SEQ] -= first             # line indices for frame_check
        # a strict error ends the feed at its record: what follows it cannot continue a chain
        checked = r if error is None else int(np.searchsorted(rec[:r, K.R_SEQ], limit))
        tolerant = self.on_error != "raise"
        # tolerant: the rejected records (the next call frames those at and after the cut again)
        rejected = bad[bad < limit] if tolerant else bad[:0]
        before = self.last_appl[rec[:checked, K.R_CHAN]] if tolerant and (self.n_rejected or len(rejected)) else None
        cut, gap, n_gaps = K.frame_check(rec, checked, n, limit, self.last_appl, tolerant, self.cont, self.nxt)
        if before is not None:
            rejected = rejected[rejected < cut]
            n_gaps -= self._skipped_gaps(rec, checked, cut, rejected, before)
        if first:
            rec[:r, K.R_SEQ] += first
        for i in rejected:
            key = "unknown message type" if codes[i] == K.BAD_TYPE else "malformed record"
            self.skipped[key] = self.skipped.get(key, 0) + 1
        if n_gaps:
            self.skipped["sequence gap"] = self.skipped.get("sequence gap", 0) + int(n_gaps)
        if gap >= 0:
            j = int(np.searchsorted(rec[:r, K.R_SEQ], first + gap))
            appl, last = int(rec[j, K.R_APPL]), int(self.last_appl[rec[j, K.R_CHAN]])
            why = ("going back: a record repeated, or the channel's records read again (the same day twice?)"
                   if appl <= last else "records lost, or securities of the channel missing: replay them "
                   "together, or skip gaps with on_error skip")
            error = FeedError(self.path, base_seq + gap, f"sequence gap in channel {int(rec[j, K.R_CHAN])}: "
                              f"ApplSeqNum {appl} after {last} ({why})", unit=self.unit)
        if cut == 0 and error is None:
            return FrameResult(0, 0), 0
        self._count(cut)
        rows = int(np.searchsorted(rec[:r, K.R_SEQ], first + cut))   # the rows of lines before the cut
        return FrameResult(int(cut), int(byte_of(cut)), error), rows

    def _skipped_gaps(self, rec, checked, cut, rejected, before) -> int:
        """Of the sequence gaps frame_check counted (tolerant mode) in the rows rec[:checked]
        before line ``cut`` (R_SEQ: line indices), those the rejected records (line indices
        ``rejected``, sorted) could hold: a rejected record's channel and ApplSeqNum are not
        known, so a gap of k numbers in a channel after at least k rejected records since its
        last record is their skip, counted once as theirs. ``before``: each row's channel's
        last ApplSeqNum before this call. Updates n_rejected and rejected_at."""
        rows = int(np.searchsorted(rec[:checked, K.R_SEQ], cut))
        chan, appl = rec[:rows, K.R_CHAN], rec[:rows, K.R_APPL]
        seen = self.n_rejected + np.searchsorted(rejected, rec[:rows, K.R_SEQ])  # rejected before each row
        order = np.argsort(chan, kind="stable")
        chan, appl, seen, before = chan[order], appl[order], seen[order], before[order]
        head = np.ones(rows, bool)      # a channel's first row here: its last record came before
        head[1:] = chan[1:] != chan[:-1]
        prev_appl = np.where(head, before, np.roll(appl, 1))
        prev_seen = np.where(head, self.rejected_at[chan], np.roll(seen, 1))
        held = (prev_appl >= 0) & (appl > prev_appl + 1) & (appl - prev_appl - 1 <= seen - prev_seen)
        tail = np.ones(rows, bool)
        tail[:-1] = head[1:]
        self.rejected_at[chan[tail]] = seen[tail]
        self.n_rejected += len(rejected)
        return int(held.sum())

    def _error(self, buf, base_seq, i):
        """The error of rejected record i."""
        return FeedError(self.path, base_seq + i, self._reason(buf, i), unit=self.unit)


class SzseTextFramer(_SzseFramer):
    unit = "line"
    #: a batch (FrameResult.data): 2 words (head rows, text bytes), the head rows, the text
    #: (a batch holds fewer lines when their text would not fit)
    batch_bytes = MAX_BATCH_RECORDS * (K.H_WIDTH * 8 + 240)
    width = K.H_WIDTH

    def __init__(self, path, on_error="raise", lookahead: int = LOOKAHEAD):
        super().__init__(path, on_error, lookahead)
        self.fields = fields()
        self._found = (0, 0, 0)    # (base_seq, lines, head rows) found at the front of the last buffer
        self.hdr = np.zeros(2, np.int64)
        self._cut = None           # (reason, byte offset) of the feed's last line when it is cut
        self._at_start = True      # the buffer framed starts the feed

    def _alloc(self, n):
        super()._alloc(n)
        self.heads = K.Heads(self.ends, self.codes, self.details, self.rec)

    def piece_start(self, view) -> None:
        """A later file of the feed begins ``view`` (at a line's start): its byte order mark
        is passed over as the first file's."""
        drop_bom(view)

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        if byte_offset == 0:
            drop_bom(buf)
        self._at_start = byte_offset == 0
        want = max_records + self.lookahead
        if self.ends.shape[0] < want:
            self._alloc(want)
            self._found = (0, 0, 0)
        # a buffer that had too few lines comes back with more bytes after the same front
        k, r = self._found[1:] if self._found[0] == base_seq else (0, 0)
        start = int(self.ends[k - 1]) + 1 if k else 0
        n, r = K.text_heads(buf, start, len(buf), bool(final), k, want, base_seq, self.fields, self.heads, r)
        long = None             # the error of a line too long after the buffer's whole lines
        if not final and n < want:
            whole = int(self.ends[n - 1]) + 1 if n else 0
            if len(buf) - whole <= l2_text.MAX_LINE:
                self._found = (base_seq, n, r)
                return FrameResult(0, 0)
            # line n is too long: the lines before it are framed as the feed's last ones
            buf, final = buf[:whole], True
            long = FeedError(self.path, base_seq + n, f"line longer than {l2_text.MAX_LINE} bytes",
                             unit=self.unit)
        self._found = (0, 0, 0)
        ends = self.ends
        if final and n and ends[n - 1] >= len(buf):        # the feed's last line has no line end
            a = int(ends[n - 2]) + 1 if n > 1 else 0
            why = cut_reason(bytes(buf[a:len(buf)]), NEEDED, WIDTHS)
            if why is not None:
                self.codes[n - 1] = K.BAD_CUT
                self._cut = (why, byte_offset + a)
        # the lines whose head rows and text fit a batch (one line at least)
        fits = int(np.searchsorted(ends[:n] + 1 + (K.H_WIDTH * 8) * np.arange(1, n + 1),
                                   self.batch_bytes - 16, "right"))
        res, rows = self._finish(buf, base_seq, n, r, final, min(max_records, max(fits, 1)),
                                 lambda i: 0 if i == 0 else min(int(ends[i - 1]) + 1, len(buf)))
        if long is not None and res.error is None and res.n_records == n:
            res.error = long                    # every line before it is in this batch
        if res.n_records or res.error is not None:
            res.data = self._batch(buf[:res.n_bytes], self.rec[:rows])
        return res

    def _batch(self, text, heads):
        """The workers' batch, in parts (the engine copies each once): (head rows, text bytes)
        as two words, the head rows, the text."""
        self.hdr[:] = (len(heads), len(text))
        return self.hdr.view(np.uint8), heads.reshape(-1).view(np.uint8), text

    def _reason(self, buf, i):
        return reason(int(self.codes[i]), int(self.details[i]), _line(buf, self.ends, i))

    def _error(self, buf, base_seq, i):
        if self.codes[i] == K.BAD_CUT:
            return TruncatedFeedError(self.path, base_seq + i, self._cut[1], self._cut[0], unit=self.unit)
        if self.codes[i] == K.BAD_BINARY:
            a = 0 if i == 0 else int(self.ends[i - 1]) + 1
            return FeedError(self.path, base_seq + i, binary_reason(bytes(buf[a:int(self.ends[i])]),
                                                                    self._at_start and i == 0), unit=self.unit)
        return super()._error(buf, base_seq, i)

    def _lost_framing(self, bad: np.ndarray, n: int) -> np.ndarray:
        """Binary data on the feed's first line: the file is no text log, a tolerant replay
        stops there too."""
        return (bad == 0) & (self.codes[bad] == K.BAD_BINARY) & self._at_start

    def _count(self, cut):
        pass

    def message_counts(self):
        return None      # the decoders count the orders and executions they parse


def _line(buf, ends, i) -> str:
    a = 0 if i == 0 else int(ends[i - 1]) + 1
    return bytes(buf[a:int(ends[i])]).decode("utf-8", "replace")


class SzseBinFramer(_SzseFramer):
    """Reads of each record what routing, the checks and the counts need (bin_heads: its
    length, type, SecurityID, ExecType, channel, sequence, an execution's order numbers);
    the workers get the records' bytes and each reads its own (SzseBinDecoder)."""

    unit = "record"
    #: a batch (FrameResult.data): 2 words (records, bytes), each record's security (int32,
    #: -1: not to replay), the records' bytes; at most MAX_BATCH_RECORDS executions' worth
    #: (fewer records when longer ones would not fit)
    batch_bytes = 16 + MAX_BATCH_RECORDS * (4 + K.TRADE_LEN)
    width = K.B_WIDTH
    numbered = False

    def __init__(self, path, on_error="raise", lookahead: int = LOOKAHEAD):
        super().__init__(path, on_error, lookahead)
        self.offs = np.zeros(self.ends.shape[0], np.int64)
        self.secs = np.zeros(self.ends.shape[0], np.int32)
        self.hdr = np.zeros(2, np.int64)
        self._counted = (0, 0, 0)     # (base_seq, records, bytes) bin_count found in the last buffer
        self.type_counts = np.zeros(256, np.int64)

    def _lost_framing(self, bad: np.ndarray, n: int) -> np.ndarray:
        """A record's length is the framing: one below the header, or one after which no
        record of a known type and length follows, leaves the rest unfound."""
        codes, details = self.codes, self.details
        nbytes, size, final = self._scanned
        return np.array([codes[i] == K.BAD_LENGTH and (details[i] < K.HEADER or (
            codes[i + 1] in (K.BAD_LENGTH, K.BAD_TYPE) if i + 1 < n else final and nbytes < size))
            for i in bad], bool)

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        want = max_records + self.lookahead
        if self.ends.shape[0] < want:
            self._alloc(want)
            self.offs = np.zeros(want, np.int64)
            self.secs = np.zeros(want, np.int32)
        if not final:
            # a buffer with too few records comes back with more bytes after the same front
            k, p = self._counted[1:] if self._counted[0] == base_seq else (0, 0)
            k, p = K.bin_count(buf, p, k, len(buf), want)
            if k < want:
                self._counted = (base_seq, k, p)
                return FrameResult(0, 0)      # read more before scanning (a bad length: scan it)
        self._counted = (0, 0, 0)
        n, nbytes, r, fits = K.bin_heads(buf, len(buf), want, MAX_BATCH_RECORDS * K.TRADE_LEN, self.codes,
                                         self.details, self.offs, self.secs, self.rec)
        if not final and n < want and not (n and self.codes[n - 1] == K.BAD_LENGTH):
            return FrameResult(0, 0)
        self._buf = buf
        self._scanned = (int(nbytes), len(buf), final)     # (what _lost_framing reads)
        offs = self.offs
        res, rows = self._finish(buf, base_seq, n, r, final, min(max_records, max(fits, 1)),
                                 lambda i: int(offs[i]) if i < n else int(nbytes))
        if res.n_records or res.error is not None:
            self.hdr[:] = (res.n_records, res.n_bytes)
            res.data = (self.hdr.view(np.uint8), self.secs[:res.n_records].view(np.uint8), buf[:res.n_bytes])
        if final and res.error is None and res.n_records == n and nbytes < len(buf):
            res.error = TruncatedFeedError(self.path, base_seq + n, byte_offset + nbytes, unit=self.unit)
        return res

    def records_in(self, tail):
        """The records that start in ``tail`` (the records held back to look ahead at a
        file's end, a last one its end cuts), by their lengths; the rest from a length below
        the header as one."""
        data, k, p = tail.tobytes(), 0, 0
        while p + 4 <= len(data):
            ln = int.from_bytes(data[p + 2:p + 4], "little")
            if ln < K.HEADER:
                return k + 1
            p, k = p + ln, k + 1
        return k + (p < len(data))

    def _reason(self, buf, i):
        return reason(int(self.codes[i]), int(self.details[i]))

    def _count(self, cut):
        K.bin_types(self._buf, self.offs, self.codes, cut, self.type_counts)

    def message_counts(self):
        return {TYPE_NAMES.get(int(t), str(t)): int(self.type_counts[t]) for t in np.flatnonzero(self.type_counts)}


class SzseDecoder(Decoder):
    """Record rows (text or binary records alike) to book events: the decoders of the two
    forms make their owned records' rows (SzseTextDecoder, SzseBinDecoder)."""

    max_events_per_record = 2
    counts_types = True      # the orders and executions replayed (a framer that cannot count them)

    def __init__(self, path, worker, n_workers, on_error="raise", want=0):
        super().__init__(path, worker, n_workers, on_error, want)
        self.books = np.zeros(K.MAX_SECURITY, np.int32)
        self.n_books = 0
        self.tickers: list[str] = []
        self._names = np.zeros((1 << 16, 2), np.int64)
        self.rec = np.zeros((1 << 16, K.R_WIDTH), np.int64)
        self.aux = np.zeros((1 << 16, K.A_WIDTH), np.int64)
        self.chan_next = np.zeros(CHANNELS, np.int64)
        self.book_mul = n_workers
        self.book_add = worker
        self.types = np.zeros(256, np.int64)
        self.rk = np.zeros(K.RK_WIDTH, np.int64)    # the order keys' state (K.ref_key)

    @classmethod
    def warm(cls):
        rec = np.zeros((1, K.R_WIDTH), np.int64)
        K.szse_events(rec, 0, np.zeros((1, K.A_WIDTH), np.int64), np.zeros(1, np.int64),
                      np.zeros(1, np.int32), 0,
                      np.zeros((1, 2), np.int64), np.zeros((1, 10), np.int64), np.zeros(K.RK_WIDTH, np.int64))
        K.feed_refs(np.zeros((1, OR_WIDTH), np.int64), 0, OR_REF, OR_NEW_REF, np.zeros(K.RK_WIDTH, np.int64))

    def _events(self, rec, r, events):
        ne, self.n_books, nn = K.szse_events(rec, r, self.aux, self.chan_next, self.books, self.n_books,
                                             self._names, events, self.rk)
        if self.counts_types:
            self.types += np.bincount(rec[:r, K.R_TYPE], minlength=256)[:256]   # rows: orders, trades
        names = []
        for b, sec in self._names[:nn]:
            self.tickers.append(f"{int(sec):06d}")
            names.append((int(b), self.tickers[-1]))
        return DecodeResult(int(ne), names)

    def message_counts(self):
        if not self.counts_types:
            return None
        return {TYPE_NAMES[t]: int(self.types[t]) for t in (191, 192) if self.types[t]}

    def feed_refs(self, table, rows):
        """The events name orders by book keys (K.ref_key): the rows get the ApplSeqNums."""
        if table == "trades":
            K.feed_refs(rows, rows.shape[0], TR_REF, TR_REF, self.rk)
        elif table == "orders":
            K.feed_refs(rows, rows.shape[0], OR_REF, OR_NEW_REF, self.rk)

    def describe(self, code, event):
        if code == ERR_LEVEL_OVERFLOW:
            return ("malformed record: the shares resting at one price would pass 2**63 - 1 "
                    f"(security {self.tickers[int(event[EV_BOOK])]})")
        ref = int(K.feed_ref(self.rk, int(event[EV_REF])))
        return (f"{BOOK_ERROR_NAMES.get(int(code), f'book error {int(code)}')} {ref} "
                f"(security {self.tickers[int(event[EV_BOOK])]})")


class SzseTextDecoder(SzseDecoder):
    """The text framer's batches: each worker parses the rest of its own lines, then
    replays their record rows as SzseDecoder does."""

    def __init__(self, path, worker, n_workers, on_error="raise", want=0):
        super().__init__(path, worker, n_workers, on_error, want)
        self.fields = fields()
        self.bad = np.zeros((1 << 16, 3), np.int64)

    @classmethod
    def warm(cls):
        super().warm()
        heads = np.zeros((1, K.H_WIDTH), np.int64)
        K.text_rows(np.zeros(1, np.uint8), heads, 0, 0, 1, fields(), np.zeros((1, K.R_WIDTH), np.int64),
                    np.zeros((1, 3), np.int64))

    def decode(self, buf, base_seq, events):
        if len(buf) < 16:           # the engine's batch of no record (an error after the feed's end)
            return DecodeResult(0, [])
        n, size = (int(x) for x in buf[:16].view(np.int64))
        h = 16 + n * K.H_WIDTH * 8
        heads = buf[16:h].view(np.int64).reshape(n, K.H_WIDTH)
        text = buf[h:h + size]
        if self.rec.shape[0] < n:
            self.rec = np.zeros((n, K.R_WIDTH), np.int64)
            self.bad = np.zeros((n, 3), np.int64)
        r, nb = K.text_rows(text, heads, n, self.worker, self.n_workers, self.fields, self.rec, self.bad)
        error = None
        if nb and self.on_error == "raise":
            i, code, detail = (int(x) for x in self.bad[0])
            a, e = int(heads[i, K.H_START]), int(heads[i, K.H_END])
            error = (int(heads[i, K.R_SEQ]),
                     reason(code, detail, bytes(text[a:e]).decode("utf-8", "replace")))
        elif nb:
            self.skipped["malformed record"] = self.skipped.get("malformed record", 0) + int(nb)
        res = self._events(self.rec, r, events)
        res.error = error
        return res


class SzseBinDecoder(SzseDecoder):
    """The binary framer's batches (each record's security, the records' bytes): each
    worker reads its own records (bin_rows), then replays their rows as SzseDecoder does."""

    counts_types = False     # the framer counts every record by type

    @classmethod
    def warm(cls):
        super().warm()
        K.bin_rows(np.zeros(K.TRADE_LEN, np.uint8), 0, np.zeros(1, np.int32), 1, 0, 1,
                   np.zeros((1, K.R_WIDTH), np.int64))

    def decode(self, buf, base_seq, events):
        if len(buf) < 16:           # the engine's batch of no record (an error after the feed's end)
            return DecodeResult(0, [])
        n, size = (int(x) for x in buf[:16].view(np.int64))
        secs = buf[16:16 + 4 * n].view(np.int32)
        raw = buf[16 + 4 * n:16 + 4 * n + size]
        r = K.bin_rows(raw, size, secs, base_seq, self.worker, self.n_workers, self.rec)
        return self._events(self.rec, r, events)
