"""Framer and decoder of the Shanghai AX-SBE text log.

File order is not event order: the order lines (192) and the trade lines (191) are each
in BizIndex order, but interleaved as they arrived. The framer restores the event
order batch by batch: it scans ``LOOKAHEAD`` lines past the end of a batch, cuts the
batch where, in every channel, the events before the cut are exactly that channel's
lowest BizIndexes among the lines it has seen, and rewrites the batch's lines in
place in (BizIndex, channel) order, the lines that are not events (snapshots, blank
lines) after them in file order. A record number (``seq``) is therefore a line's position
in this event order, not its physical line; framer errors (malformed line, unknown message
type, a BizIndex at most one delivered or one of its channel more than the window's lines
before it, a BizIndex an earlier line has in its channel, a cut last line:
obook.feeds.axsbe_lines) name the physical line; every line before it is replayed first,
as a log ending there would be (the lines after it order none of them). The book's errors
name a record: ``SseFramer.locate`` gives them its physical line. A book error on a line
before the stopping one that the lines after it could have placed otherwise (or given the
order it lacks) may or may not come first in event order: the rows end before that record,
the error names the stopping line and, in its reason, the book error and its line.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..._kernels import l2_sse as K
from ..._kernels import l2_text
from ..._kernels.l2_text import KEYS, fields, line_ends
from ..._kernels.layout import BOOK_ERROR_NAMES, ERR_LEVEL_OVERFLOW, EV_BOOK, EV_REF
from ...errors import FeedError, TruncatedFeedError
from ..axsbe_lines import binary_reason, cut_reason, drop_bom, marker_reason, number_reason
from ..base import Decoder, DecodeResult, Framer, FrameResult

#: lines scanned past a batch's end to be sure no later line precedes it
LOOKAHEAD = 4096
#: give up (error) when no batch can be cut from this many lines
MAX_SCAN = 1 << 20
#: batches whose event order the framer keeps at least, for locate(); an engine with more
#: batches framed and not yet finished says so (SseFramer.batches_in_flight)
BATCHES_KEPT = 64

KEY_NAMES = {v: k for k, v in KEYS.items()}
TYPE_NAMES = {111: "snapshot", 191: "trade", 192: "order"}
#: the keys each message type needs (what ``l2_sse.classify`` checks): a last line without
#: a line end that lacks one is cut
NEEDED = {t: tuple(KEY_NAMES[int(k)] for k in keys)
          for t, keys in ((192, K.ORDER_KEYS), (191, K.TRADE_KEYS), (111, K.SNAP_KEYS))}


def _line_fields(text: str) -> dict[str, str]:
    return dict(t.split("=", 1) for t in text.lstrip("/").split() if "=" in t)


def bad_line_reason(kind: int, detail: int, text: str) -> str:
    """The reason text of a line the scan rejected (kind < 0)."""
    if kind == K.BAD_TOKEN:
        return "malformed line: a token without '='"
    if kind == K.BAD_MARKER:
        return marker_reason(text.encode())
    if kind == K.BAD_MERGED:
        return (f"malformed line: a second message at column {text.find('//', 2) + 1} (the line end "
                "before it lost?)")
    if kind == K.BAD_TYPE:
        return f"unknown message type {detail}"
    name = KEY_NAMES.get(detail, str(detail))
    if kind == K.BAD_MISSING:
        return f"malformed line: no {name}"
    value = _line_fields(text).get(name, "")
    if kind == K.BAD_NUMBER:
        return number_reason(name, value)
    if kind == K.BAD_SECURITY:
        return f"malformed line: SecurityID is not a 6-digit number: '{value}'"
    return f"malformed line: bad {name} {value}"


def skip_kind(kind: int) -> str:
    """The tolerant-mode count key of a rejected line."""
    return "unknown message type" if kind == K.BAD_TYPE else "malformed line"


class SseFramer(Framer):
    """Cuts batches of whole lines and puts each batch in BizIndex order (see the module)."""

    unit = "line"

    def __init__(self, path, on_error="raise", lookahead: int = LOOKAHEAD):
        super().__init__(path, on_error)
        self.lookahead = lookahead
        self.delivered: dict[int, int] = {}    # channel -> highest BizIndex delivered
        self.types: dict[int, int] = {}
        self.fields = fields()
        self._found = (0, 0)    # (base_seq, lines) found at the front of the last buffer
        self._cut = ""          # the reason of the feed's last line when it is cut
        #: (base_seq, physical line index of each record) of the latest batches, for locate()
        self._orders: deque = deque(maxlen=BATCHES_KEPT)
        #: (base_seq, lines, error) of the batch ended by a line that stops the replay: its first
        #: ``lines`` lines are placed as the lines after it would place them (see locate())
        self._stopped = None
        #: (channel, BizIndex) -> the line number of the first line that has it, for the lines
        #: seen again further in a window than its batch (a later batch finds them late)
        self._again: dict[tuple[int, int], int] = {}
        self._alloc(1 << 16)

    def _alloc(self, n: int):
        self.starts, self.ends, self.kinds, self.keys, self.chans, self.rank, self.mtypes = (
            np.zeros(n, np.int64) for _ in range(7))
        self.lines = K.Lines(self.starts, self.ends, self.kinds, self.keys, self.chans, self.mtypes)

    def message_counts(self):
        return {TYPE_NAMES.get(t, str(t)): n for t, n in sorted(self.types.items())}

    def batches_in_flight(self, n: int) -> None:
        """Up to ``n`` batches framed are not finished yet (the engine's slots, and the one
        being framed): keep the event order of that many at least, so that locate() finds
        the line of a book error in any of them."""
        if n > self._orders.maxlen:
            self._orders = deque(self._orders, maxlen=n)

    def piece_start(self, view) -> None:
        """A later file of the feed begins ``view`` (at a line's start): its byte order mark
        is passed over as the first file's."""
        drop_bom(view)

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        if byte_offset == 0:
            drop_bom(buf)
        cap = max(1, max_records // 2)           # a trade line can make two events
        want = cap + self.lookahead
        if self.starts.shape[0] < want:
            self._alloc(want)
            self._found = (0, 0)
        long = None             # the error of a line too long after the buffer's whole lines
        if not final:
            # a buffer that had too few lines comes back with more bytes after the same front
            k = self._found[1] if self._found[0] == base_seq else 0
            k = line_ends(buf, int(self.ends[k - 1]) + 1 if k else 0, len(buf), False, self.ends, k, want)
            if k < want:
                whole = int(self.ends[k - 1]) + 1 if k else 0
                if len(buf) - whole <= l2_text.MAX_LINE:
                    self._found = (base_seq, k)
                    return FrameResult(0, 0)             # read more before scanning
                # line k is too long: the lines before it are framed as the feed's last ones
                buf, final = buf[:whole], True
                long = FeedError(self.path, base_seq + k, f"line longer than {l2_text.MAX_LINE} bytes",
                                 unit=self.unit)
        self._found = (0, 0)
        res = self._frame(buf, base_seq, byte_offset, final, cap, want)
        if long is not None and res.error is None and res.n_bytes == len(buf):
            res.error = long                    # every line before it is in this batch
        return res

    def _frame(self, buf, base_seq, byte_offset, final, cap, want):
        n = K.sse_scan(buf, len(buf), bool(final), want, self.fields, self.lines)
        if n == 0:
            return FrameResult(0, 0)
        kinds = self.kinds[:n]
        if final and self.ends[n - 1] >= len(buf):        # the feed's last line has no line end
            self._cut = cut_reason(bytes(buf[self.starts[n - 1]:self.ends[n - 1]]), NEEDED)
            if self._cut is not None:
                kinds[n - 1] = K.BAD_CUT
        if self.on_error != "raise":      # a cut last line stops a tolerant replay too
            stops = kinds == K.BAD_CUT
            if byte_offset == 0 and kinds[0] == K.BAD_BINARY:
                stops[0] = True           # binary data from the first line: no text log
            skip = np.flatnonzero((kinds < 0) & ~stops)
            skipped = [skip_kind(int(k)) for k in kinds[skip]]
            kinds[skip] = K.KIND_NONE
        stop, error, out, placing = self._stop(buf, base_seq, byte_offset, n)
        full = n
        if stop is not None:
            # the lines before the line that stops the replay are replayed as a log ending there
            n, final, kinds, placing = stop, True, kinds[:stop], None
        # a feed cut by damage: the lines of the window before it may follow lost ones
        reach = n if final and (self.damage is None or error is not None) else n - self.lookahead
        limit = max(min(reach, cap), 0)
        if error is None and final and self.damage is not None and reach <= cap:
            error = self.damage(base_seq + n)
        elif limit < n:
            error = None                  # its line is in a later batch
        cut = 0 if error is not None and limit == 0 else self._placed(n, limit, placing)
        if error is None:
            if cut == 0:
                if final or n >= MAX_SCAN:
                    return FrameResult(0, 0, FeedError(
                        self.path, base_seq, f"cannot restore BizIndex order within {n} lines", unit=self.unit))
                return FrameResult(0, 0)
        elif stop is not None and cut:
            # the lines of the batch whose place the lines after the stop could not change
            self.kinds[out] = K.KIND_NONE          # (a late line, a line seen again, orders none)
            self._stopped = (base_seq, self._placed(full, cut), error)
        if self.on_error != "raise":
            for i, key in zip(skip.tolist(), skipped):
                if i < cut:       # (the lines after the batch are scanned again)
                    self.skipped[key] = self.skipped.get(key, 0) + 1
        return FrameResult(cut, self._reorder(buf, base_seq, cut) if cut else 0, error)

    def _placed(self, n: int, limit: int, placing=None) -> int:
        """The largest cut c <= limit of lines [0, n) where, in every channel, the events before
        c are the channel's lowest BizIndexes among lines [0, n) (0: none). ``placing``: (the
        events of lines [0, n), their order by channel then BizIndex) when known already."""
        kinds = self.kinds[:n]
        if placing is None:
            ev = np.flatnonzero(kinds == K.KIND_EVENT)
            by_chan = np.lexsort((self.keys[ev], self.chans[ev]))
        else:
            ev, by_chan = placing
        chans = self.chans[ev]
        slots, inv = np.unique(chans, return_inverse=True)     # (by_chan: by inv, the same order)
        first = np.searchsorted(inv[by_chan], np.arange(len(slots)))
        self.rank[ev[by_chan]] = np.arange(len(ev)) - first[inv[by_chan]]
        self.chans[ev] = inv
        cut = int(K.last_cut(kinds, self.chans, self.rank, n, limit, len(slots),
                             np.zeros(len(slots), np.int64), np.zeros(len(slots), np.int64)))
        self.chans[ev] = chans
        return cut

    def _stop(self, buf, base_seq, byte_offset, n):
        """(index, error, the event lines that order none, placing) of the first of lines [0, n)
        that stops the replay: a rejected line (strict; a cut last line, tolerant too), a late
        one (:meth:`_late`) or one whose BizIndex an earlier line has in its channel (the same
        event again); (None, None, those lines, placing) when none does. ``placing``: the other
        event lines and their order by channel then BizIndex (for :meth:`_placed`)."""
        kinds = self.kinds[:n]
        ev = np.flatnonzero(kinds == K.KIND_EVENT)
        late = self._late(ev, self.keys[ev], self.chans[ev])
        if len(late):
            ev = np.setdiff1d(ev, late, assume_unique=True)     # a late line orders no line before it
        keys, chans = self.keys[ev], self.chans[ev]
        by_chan = np.lexsort((keys, chans))     # (stable: file order within a channel's BizIndex)
        again, earlier = _repeated(ev, keys, chans, by_chan)
        for i, j in zip(again.tolist(), earlier.tolist()):
            # (the first line that has it: a later batch finds the line late once that is delivered)
            self._again.setdefault((int(self.chans[i]), int(self.keys[i])), base_seq + j)
        out = np.concatenate([late, again]) if len(again) else late
        bad = np.flatnonzero(kinds < 0)
        i = min(int(bad[0]) if len(bad) else n, int(late[0]) if len(late) else n,
                int(again[0]) if len(again) else n)
        if i == n:
            return None, None, out, (ev, by_chan)
        if kinds[i] == K.BAD_CUT:
            error = TruncatedFeedError(self.path, base_seq + i, byte_offset + int(self.starts[i]), self._cut,
                                       unit=self.unit)
        elif kinds[i] < 0:
            line = bytes(buf[self.starts[i]:self.ends[i]])
            why = (binary_reason(line, byte_offset == 0 and i == 0) if kinds[i] == K.BAD_BINARY
                   else bad_line_reason(int(kinds[i]), int(self.keys[i]), line.decode("utf-8", "replace")))
            error = FeedError(self.path, base_seq + i, why, unit=self.unit)
        elif len(again) and i == again[0]:
            error = self._again_error(base_seq + i, base_seq + int(earlier[0]), i)
        else:
            error = self._late_error(base_seq, i)
        return i, error, out, None

    def _late_error(self, base_seq: int, i: int) -> FeedError:
        """The error of line ``i`` of the window, late: a BizIndex of its channel at most one
        delivered (a line seen again: :meth:`_again_error`)."""
        first = self._again.get((int(self.chans[i]), int(self.keys[i])))
        if first is not None:
            return self._again_error(base_seq + i, first, i)
        return FeedError(self.path, base_seq + i, f"BizIndex {int(self.keys[i])} of channel {int(self.chans[i])} comes "
                         f"after a later one (more than {self.lookahead} lines out of order)", unit=self.unit)

    def _again_error(self, line: int, first: int, i: int) -> FeedError:
        """The error of line ``line`` (``i`` of the window), whose BizIndex line ``first`` of
        the feed has in the same channel: the same events twice."""
        return FeedError(self.path, line, f"BizIndex {int(self.keys[i])} of channel {int(self.chans[i])} again, "
                         f"{line - first} line{'' if line - first == 1 else 's'} after the line that has it: the same events twice (a log given "
                         "twice, or files of one feed that overlap)", unit=self.unit)

    def _late(self, ev, keys, chans):
        """The event lines (``ev``, in file order) whose BizIndex is at most one already
        delivered in its channel or one of its channel more than the window's lines before it."""
        late = np.zeros(len(ev), np.bool_)
        for c in np.unique(chans).tolist():
            mine = np.flatnonzero(chans == c)
            at, top = ev[mine], np.maximum.accumulate(keys[mine])
            before = np.searchsorted(at, at - self.lookahead) - 1     # the last line > window before
            far = np.where(before >= 0, top[np.maximum(before, 0)], -1)
            late[mine] = (keys[mine] <= far) | (keys[mine] <= self.delivered.get(c, -1))
        return ev[late]

    def _reorder(self, buf, base_seq: int, cut: int) -> int:
        """Rewrite lines [0, cut) of buf in event order; returns the batch's bytes."""
        kinds = self.kinds[:cut]
        ev = np.flatnonzero(kinds == K.KIND_EVENT)
        keys, chans = self.keys[ev], self.chans[ev]
        for c in np.unique(chans).tolist():
            top = int(keys[chans == c].max())
            self.delivered[c] = max(self.delivered.get(c, top), top)
        order = np.concatenate([ev[np.lexsort((chans, keys))], np.flatnonzero(kinds != K.KIND_EVENT)])
        self._orders.append((base_seq, order.astype(np.int32)))
        end = int(self.ends[cut - 1])
        nbytes = end + 1 if end < len(buf) else end   # the file's last line may lack a newline
        out = np.empty(end + cut, np.uint8)
        K.permute_lines(buf, self.starts, self.ends, order, cut, out)
        buf[:nbytes] = out[:nbytes]
        for t, c in zip(*np.unique(self.mtypes[:cut][kinds != K.KIND_NONE], return_counts=True)):
            self.types[int(t)] = self.types.get(int(t), 0) + int(c)
        return nbytes

    def locate(self, error: FeedError) -> FeedError:
        """A book error (naming a record: a line's position in event order) naming the line's
        physical number instead, its record number in its reason; as a record when its batch
        is no longer known."""
        for base, order in reversed(self._orders):
            if 0 <= error.record - base < len(order):
                line = base + int(order[error.record - base])
                if self._stopped is not None and self._stopped[0] == base and line - base >= self._stopped[1]:
                    # the lines after the stopping line could have placed this one later or
                    # given the event it lacks: which comes first in event order is unknown
                    return _both(self._stopped[2], error, line)
                out = FeedError(error.path, line, f"{error.reason} (record {error.record} in event order)",
                                unit="line")
                out.feed_record, out.feed_line = error.record, line
                return out
        # a batch framed more than batches_in_flight() batches before the last one
        return FeedError(error.path, error.record, f"{error.reason} (in event order; its line is not known: its "
                         f"batch is older than the {self._orders.maxlen} the framer keeps)", unit="record")


def _both(stop: FeedError, error: FeedError, line: int) -> FeedError:
    """The error of the line ``stop`` names that stopped the replay, naming too the book
    ``error`` of an earlier line (``line``) whose place in event order the lines after the
    stopping one could change: either may be the first in event order (the rows end before
    the book error's record)."""
    reason = (f"{stop.reason}; line {line} of the feed, {stop.record - line} before it: {error.reason} (record "
              f"{error.record} in event order), which may come first or be no error: the lines after this one "
              "could place it later or hold what it lacks")
    if isinstance(stop, TruncatedFeedError):
        out = TruncatedFeedError(stop.path, stop.record, stop.offset, reason, unit=stop.unit)
    else:
        out = FeedError(stop.path, stop.record, reason, unit=stop.unit)
    out.feed, out.feed_record = stop.feed, stop.feed_record
    return out


def _repeated(ev, keys, chans, order):
    """(the event lines of ``ev``, in file order, whose BizIndex ``keys`` an earlier line of
    ``ev`` has in its channel ``chans``; for each, that earlier line). ``order``: ev's order
    by channel, then BizIndex, then file order."""
    k, c, e = keys[order], chans[order], ev[order]
    same = np.flatnonzero((k[1:] == k[:-1]) & (c[1:] == c[:-1]))
    again, earlier = e[same + 1], e[same]
    first = np.argsort(again, kind="stable")
    return again[first], earlier[first]


class SseDecoder(Decoder):
    """Book events of the owned securities (see obook._kernels.l2_sse.sse_decode)."""

    max_events_per_record = 2     # an auction trade reduces both orders

    def __init__(self, path, worker, n_workers, on_error="raise", want=0):
        super().__init__(path, worker, n_workers, on_error, want)
        self.fields = fields()
        self.books = np.zeros(K.MAX_SECURITY, np.int32)
        self.n_books = 0
        self.tickers: list[str] = []
        self._names = np.zeros((1 << 16, 2), np.int64)
        self.book_mul = n_workers
        self.book_add = worker

    @classmethod
    def warm(cls):
        K.sse_decode(np.zeros(0, np.uint8), 1, 0, 1, fields(), np.zeros(1, np.int32), 0, np.zeros((1, 2), np.int64),
                     np.zeros((1, 10), np.int64))

    def decode(self, buf, base_seq, events):
        ne, self.n_books, nn = K.sse_decode(buf, base_seq, self.worker, self.n_workers, self.fields, self.books,
                                            self.n_books, self._names, events)
        names = []
        for b, sec in self._names[:nn]:
            self.tickers.append(f"{int(sec):06d}")
            names.append((int(b), self.tickers[-1]))
        return DecodeResult(int(ne), names)

    def describe(self, code, event):
        if code == ERR_LEVEL_OVERFLOW:
            return ("malformed record: the shares resting at one price would pass 2**63 - 1 "
                    f"(security {self.tickers[int(event[EV_BOOK])]})")
        return (f"{BOOK_ERROR_NAMES.get(int(code), f'book error {int(code)}')} {int(event[EV_REF])} "
                f"(security {self.tickers[int(event[EV_BOOK])]})")
