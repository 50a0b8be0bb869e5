"""Line arbitration of a MoldUDP64 feed sent on several lines (A and B): first copy wins.

Feed every downstream packet with :meth:`Arbiter.packet` (the line it came on, its bytes and
its receive time, UTC ns); take the messages now deliverable with :meth:`Arbiter.pop`. Every
message is delivered exactly once, in sequence order, with the line that delivered it first
and that copy's receive time. A message held back because an earlier one is missing is
delivered as soon as the gap is filled (from any line, or by a re-request answer), or after
:meth:`Arbiter.skip` gives the gap up (it is then recorded in :attr:`Arbiter.gaps`).

Definitions (per line, :attr:`Arbiter.stats`):

* ``packets`` / ``messages``: downstream packets and the messages in them received on the
  line (duplicates included; heartbeats and end of session count as packets).
* ``duplicates``: messages received on the line that had already been received (on any line,
  or earlier on this one).
* ``gaps``: how many times the line's own sequence jumped forward: a packet (or heartbeat)
  whose sequence number is above the number the line should send next (the session's first
  number before its first packet). ``gap_messages``: the messages those jumps skipped. A
  skipped message that arrives later on the same line (reordering) is taken off the line's
  gaps again.
* ``recovered_other_line``: the numbers in this line's gaps that it never received and
  another line did (counted when another line's copy comes first, or at the jump for those
  that came before it; a late copy on this line takes them back off). Reordering within a
  line shows as a gap plus a late packet that fills it, whichever line delivered first.
* ``recovered_request``: messages this line delivered first that came in a re-request
  answer: the live side passes ``requested=True`` for packets answering its re-requests.
  Those packets do not move the line's own sequence (they are not its regular stream).
* ``heartbeats``: heartbeat packets (count 0) and end-of-session packets.
* ``bad_packets``: truncated or malformed packets (ignored in tolerant mode).
* ``wrong_session``: packets of another session than the arbiter's (ignored). The session is
  the one given, else the first whose packets chain ``sessions.CONFIRM`` long (each starts
  where the one before ends); until then packets are held per session
  (``sessions.SessionChoice``, bounded) and nothing is delivered.
* ``implausible``: packets whose first number lies more than ``sessions.WINDOW`` past every
  number seen, held aside (``sessions.Quarantine``, bounded) until ``sessions.JUMP_CONFIRM``
  of them chain; the count is of those never taken in. They move neither the highest number
  seen nor the line's own sequence.
* ``backwards``: packets whose sequence number is below the number the line should send next
  and that fill none of its own gaps (a sequence number going backwards: a repeat, a stale
  heartbeat); their messages are still delivered if new, else counted as duplicates.

These counts do not hang on when numbers are delivered or given up: fed the same packets in
the same order, a capture replay (``obook.feeds.mold.stream``) and the live loop count the
same. A line's gaps more than ``sessions.WINDOW`` numbers below the next number to deliver
are forgotten (a copy that late goes backwards).

A gap of the arbiter (:meth:`Arbiter.missing`) is a sequence number not received on any line
but below the highest one seen (a data packet's last message, a heartbeat's or an end of
session's next expected number). Giving it up is the caller's decision (captures: at the end
of the capture; live: after the re-requests time out) via :meth:`Arbiter.skip`.

Nothing here raises on bad input except a malformed packet with ``strict=True``
(:class:`~obook.feeds.mold.packets.MoldPacketError`, a FeedError); with ``strict=False`` (the
default) it is counted in ``bad_packets`` and ignored.
"""

from __future__ import annotations

import bisect

from .packets import END_OF_SESSION, MoldPacketError, decode_packet, session_name
from .sessions import WINDOW, Quarantine, SessionChoice

STAT_KEYS = ("packets", "messages", "duplicates", "gaps", "gap_messages", "recovered_other_line",
             "recovered_request", "heartbeats", "bad_packets", "wrong_session", "backwards", "implausible")


class _Ranges:
    """A sorted set of disjoint half-open integer ranges [a, b)."""

    __slots__ = ("starts", "ends")

    def __init__(self):
        self.starts: list[int] = []
        self.ends: list[int] = []

    def __bool__(self):
        return bool(self.starts)

    def add(self, a: int, b: int) -> None:
        if a >= b:
            return
        i = bisect.bisect_left(self.ends, a)           # first range ending at/after a
        j = bisect.bisect_right(self.starts, b)        # ranges starting at/before b
        if i < j:
            a = min(a, self.starts[i])
            b = max(b, self.ends[j - 1])
        self.starts[i:j] = [a]
        self.ends[i:j] = [b]

    def remove(self, a: int, b: int) -> int:
        """Take [a, b) out; returns how many numbers were in the set."""
        if a >= b or not self.starts:
            return 0
        i = bisect.bisect_right(self.ends, a)          # first range ending after a
        j = bisect.bisect_left(self.starts, b)         # ranges starting before b
        if i >= j:
            return 0
        removed = 0
        keep_s, keep_e = [], []
        for s, e in zip(self.starts[i:j], self.ends[i:j]):
            removed += min(e, b) - max(s, a)
            if s < a:
                keep_s.append(s)
                keep_e.append(a)
            if e > b:
                keep_s.append(b)
                keep_e.append(e)
        self.starts[i:j] = keep_s
        self.ends[i:j] = keep_e
        return removed

    def uncovered(self, a: int, b: int) -> list[tuple[int, int]]:
        """The parts of [a, b) not in the set."""
        out = []
        i = bisect.bisect_right(self.ends, a)
        while a < b:
            if i < len(self.starts) and self.starts[i] < b:
                if self.starts[i] > a:
                    out.append((a, self.starts[i]))
                a = max(a, self.ends[i])
                i += 1
            else:
                out.append((a, b))
                break
        return out

    def cut(self, a: int, b: int) -> list[tuple[int, int]]:
        """Take [a, b) out; returns the parts of it that were in the set."""
        i = bisect.bisect_right(self.ends, a)
        j = bisect.bisect_left(self.starts, b)
        parts = [(max(s, a), min(e, b)) for s, e in zip(self.starts[i:j], self.ends[i:j]) if max(s, a) < min(e, b)]
        self.remove(a, b)
        return parts

    def overlap(self, a: int, b: int) -> int:
        i = bisect.bisect_right(self.ends, a)
        j = bisect.bisect_left(self.starts, b)
        return sum(min(e, b) - max(s, a) for s, e in zip(self.starts[i:j], self.ends[i:j]))


class Arbiter:
    """Arbitrates the lines of one MoldUDP64 session (see the module's docstring)."""

    def __init__(self, session: bytes | None = None, first_seq: int = 1, lines: int = 2, *,
                 strict: bool = False):
        self.session = None if session is None else session_name(session)     # (never cut to 10)
        self.next_seq = first_seq        # the next sequence number to deliver
        self.first_seq = first_seq
        self.lines = lines
        self.strict = strict
        self.high = first_seq            # every number below it exists (seen or implied)
        self.end_seq: int | None = None  # the end of session's number (one past the last)
        self.gaps: list[tuple[int, int, int]] = []
        self.stats = [dict.fromkeys(STAT_KEYS, 0) for _ in range(lines)]
        self._pending: dict[int, tuple[int, int, bytes, bool]] = {}   # seq -> (line, ts, msg, requested)
        self._ready: list[tuple[int, int, int, bytes]] = []
        self._line_next = [None] * lines  # per line: the number it should send next
        self._line_gaps = [_Ranges() for _ in range(lines)]
        self._by_line = _Ranges()        # numbers whose first copy came on a line (not a re-request)
        self._skipped = _Ranges()
        self._choice = SessionChoice() if self.session is None else None
        self._quarantine = Quarantine()

    # -- input -------------------------------------------------------------------------------

    def packet(self, line: int, buf, ts_recv: int, requested: bool = False) -> None:
        """One downstream packet received on ``line`` (0 = A, 1 = B) at ``ts_recv`` (UTC ns).

        ``requested``: the packet answers a re-request (see ``recovered_request``)."""
        st = self.stats[line]
        st["packets"] += 1
        try:
            pkt = decode_packet(buf)
        except MoldPacketError:
            st["bad_packets"] += 1
            if self.strict:
                raise
            return
        if self.session is None:
            chosen = self._choice.offer(line, pkt, ts_recv, requested)
            if chosen is None:
                return
            self.session = chosen
            mine, others = self._choice.take(chosen)
            for other in others:
                self.stats[other]["wrong_session"] += 1
            for held in mine:
                self._believe(*held)
        elif pkt.session != self.session:
            st["wrong_session"] += 1
            return
        else:
            self._believe(line, pkt, ts_recv, requested)
        self._drain()

    def _believe(self, line: int, pkt, ts_recv: int, requested: bool) -> None:
        """Take the packet in, unless its number is implausible (then it is held aside)."""
        q = self._quarantine
        if q.implausible(pkt.seq, max(self.high, self.next_seq)):
            self.stats[line]["implausible"] += 1
            agreed = q.hold(pkt.seq, pkt.count, line, pkt, ts_recv, requested)
            for _seq, _count, l, p, t, r in agreed or ():
                self.stats[l]["implausible"] -= 1
                self._take(l, p, t, r)
        else:
            self._take(line, pkt, ts_recv, requested)
        while q.held:
            back = q.plausible_now(max(self.high, self.next_seq))
            if not back:
                break
            for _seq, _count, l, p, t, r in back:
                self.stats[l]["implausible"] -= 1
                self._take(l, p, t, r)

    def _take(self, line: int, pkt, ts_recv: int, requested: bool) -> None:
        st = self.stats[line]
        seq, count = pkt.seq, pkt.count
        if count == 0 or count == END_OF_SESSION:
            st["heartbeats"] += 1
            n = 0
            if count == END_OF_SESSION:
                self.end_seq = seq if self.end_seq is None else min(self.end_seq, seq)
        else:
            n = count
            st["messages"] += n
        end = seq + n
        if not requested:
            self._follow_line(line, seq, end, st)
        if end > self.high or (n == 0 and seq > self.high):
            self.high = max(end, seq)
        for i, msg in enumerate(pkt.messages):
            s = seq + i
            if s < self.next_seq or s in self._pending or self._skipped.overlap(s, s + 1):
                st["duplicates"] += 1
            else:
                self._pending[s] = (line, ts_recv, msg, requested)
                if not requested:
                    self._by_line.add(s, s + 1)
                    for other, gaps in enumerate(self._line_gaps):
                        if other != line and gaps.overlap(s, s + 1):
                            self.stats[other]["recovered_other_line"] += 1

    def _follow_line(self, line: int, seq: int, end: int, st: dict) -> None:
        """Track the line's own sequence: jumps forward are its gaps, late packets fill them."""
        expect = self._line_next[line]
        if expect is None:
            expect = self.first_seq
        gaps = self._line_gaps[line]
        if seq > expect:
            st["gaps"] += 1
            st["gap_messages"] += seq - expect
            # the numbers another line brought already are recovered; the rest as they come
            st["recovered_other_line"] += self._by_line.overlap(expect, seq)
            gaps.add(expect, seq)
            if gaps.starts[0] < self.next_seq - WINDOW:
                gaps.remove(gaps.starts[0], self.next_seq - WINDOW)
        elif seq < expect:
            filled = gaps.cut(seq, min(end, expect))
            if not filled:
                st["backwards"] += 1
            st["recovered_other_line"] -= sum(self._by_line.overlap(a, b) for a, b in filled)
        self._line_next[line] = max(expect, end)

    def _drain(self) -> None:
        pending, start = self._pending, self.next_seq
        nxt = start
        while True:
            item = pending.pop(nxt, None)
            if item is not None:
                line, ts, msg, requested = item
                self._ready.append((nxt, line, ts, msg))
                if requested:
                    self.stats[line]["recovered_request"] += 1
                nxt += 1
                continue
            if self._skipped and self._skipped.starts[0] <= nxt:
                end = self._skipped.ends[0]
                self._skipped.remove(self._skipped.starts[0], end)
                nxt = max(nxt, end)
                continue
            break
        self.next_seq = nxt

    def skip(self, first_seq: int, count: int, ts: int) -> None:
        """Give up the sequence numbers ``first_seq .. first_seq+count-1`` not received yet:
        they are recorded as lost (:attr:`gaps`, the missing sub-ranges only) and delivery
        continues after them. Numbers already received are still delivered."""
        lo = max(first_seq, self.next_seq)
        hi = first_seq + count
        a = lo
        for s in sorted(k for k in self._pending if lo <= k < hi) + [hi]:
            if s > a:
                for i, j in self._skipped.uncovered(a, s):
                    self._skipped.add(i, j)
                    self.gaps.append((i, j - i, ts))
                    self.high = max(self.high, j)
            a = s + 1
        self._drain()

    # -- output ------------------------------------------------------------------------------

    def pop(self) -> list[tuple[int, int, int, bytes]]:
        """The messages deliverable now, in sequence order, each once:
        ``(seq, line that delivered it first, its ts_recv, message bytes)``."""
        out, self._ready = self._ready, []
        return out

    def missing(self) -> list[tuple[int, int]]:
        """Open gaps as ``(first_seq, count)``: numbers below the highest seen that no line
        delivered (and not given up)."""
        out = []
        a = self.next_seq
        for s in sorted(self._pending) + [self.high]:
            if s > a:
                out.extend((i, j - i) for i, j in self._skipped.uncovered(a, s))
            a = max(a, s + 1)
        return out

    @property
    def ended(self) -> bool:
        """The end of session was seen and everything before it delivered (the last messages
        may still wait in :meth:`pop`)."""
        return self.end_seq is not None and self.next_seq >= self.end_seq


__all__ = ["Arbiter", "STAT_KEYS"]
