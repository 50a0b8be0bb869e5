"""Which MoldUDP64 session a receiver follows, and which sequence numbers it believes.

A line may carry packets of another session than the day's (a stale sender, a test feed, a
forgery) and packets whose sequence number jumps implausibly far (a corrupt or forged
header). Neither may decide what is replayed on the strength of one packet:

* :class:`SessionChoice` (live): until a session is given or chosen, packets are held per
  session (a bounded number of sessions and packets); the first session whose packets
  chain ``confirm`` long (each starting where the one before ends, a data packet first:
  a stream, not a stray or repeated header) is chosen, its held packets are replayed in
  arrival order, every other session's are counted as wrong.
* :class:`Quarantine` (live): a packet whose first number lies more than ``window`` past
  everything seen is held aside (a bounded number of packets); it is taken in only when
  ``confirm`` held packets chain (each starting where the one before ends: the jump is a
  stream, not a stray header), and counted as ``implausible`` otherwise.
* :func:`majority_session` (captures): the session of most well-formed packets, the earliest
  on a tie, among the first line's first datagrams (``capture.dating_packet``: the session
  that dates the replay), else among all.
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("obook")

#: packets in a chain that choose a session, and that confirm a jump
CONFIRM, JUMP_CONFIRM = 2, 3
#: sessions held at once before one is chosen, and packets held per session
MAX_SESSIONS, MAX_HELD = 8, 16
#: messages past everything seen beyond which a sequence number is implausible
WINDOW = 1 << 18
#: packets held in quarantine (the oldest go first)
MAX_QUARANTINE = 64


class SessionChoice:
    """Packets held until a session is chosen (see the module)."""

    def __init__(self, confirm: int = CONFIRM):
        self.confirm = confirm
        self.held: dict[bytes, list] = {}          # session -> [(line, pkt, ts, requested)]
        self.headers: dict[bytes, set] = {}
        self.dropped: list[int] = []               # lines of packets not held (bounds)

    def offer(self, line: int, pkt, ts: int, requested: bool):
        """Hold the packet; the session once chosen (its packets via :meth:`take`), else None."""
        s = pkt.session
        if s not in self.held:
            if len(self.held) >= MAX_SESSIONS:
                self.dropped.append(line)
                return None
            self.held[s], self.headers[s] = [], set()
        if len(self.held[s]) < MAX_HELD:
            self.held[s].append((line, pkt, ts, requested))
        else:
            self.dropped.append(line)
        self.headers[s].add((pkt.seq, pkt.count))
        return s if _longest_chain(self.headers[s]) >= self.confirm else None

    def take(self, session: bytes) -> tuple[list, list[int]]:
        """The chosen session's held packets, and the lines of every other packet held."""
        mine = self.held.pop(session, [])
        others = [p[0] for packets in self.held.values() for p in packets] + self.dropped
        if self.held:
            log.warning("MoldUDP64: following session %r; %d packets of other sessions (%s) ignored",
                        session.decode("ascii", "replace").strip(), len(others),
                        ", ".join(repr(s.decode("ascii", "replace").strip()) for s in self.held))
        self.held, self.headers, self.dropped = {}, {}, []
        return mine, others


class Quarantine:
    """Packets of implausible sequence numbers, held aside (see the module)."""

    def __init__(self, window: int = WINDOW, confirm: int = JUMP_CONFIRM, limit: int = MAX_QUARANTINE):
        self.window, self.confirm, self.limit = window, confirm, limit
        self.held: list = []          # (seq, count, line, buf, ts, requested)

    def implausible(self, seq: int, high: int) -> bool:
        return seq > high + self.window

    def hold(self, seq: int, count: int, line: int, packet, ts: int, requested: bool) -> list | None:
        """Hold a packet; when ``confirm`` held packets chain (each starts where the one
        before ends, a data packet first), those within ``window`` of it leave the quarantine
        (returned in arrival order, to be taken in); else None."""
        self.held.append((seq, count, line, packet, ts, requested))
        if len(self.held) > self.limit:
            del self.held[0]
        near = [p for p in self.held if abs(p[0] - seq) <= self.window]
        if _longest_chain({(p[0], p[1]) for p in near}) < self.confirm:
            return None
        self.held = [p for p in self.held if abs(p[0] - seq) > self.window]
        log.warning("MoldUDP64: sequence numbers jump to %d (%d packets agree)", min(p[0] for p in near), len(near))
        return near

    def plausible_now(self, high: int) -> list:
        """Held packets that the numbers seen since have reached (to be taken in)."""
        back = [p for p in self.held if not self.implausible(p[0], high)]
        if back:
            self.held = [p for p in self.held if self.implausible(p[0], high)]
        return back


def _longest_chain(headers: set) -> int:
    """The most (seq, count) headers in a row where each starts where the one before ends
    (a heartbeat or end of session, count 0 or 0xFFFF, ends a row)."""
    by_start: dict[int, list] = {}
    for seq, count in headers:
        by_start.setdefault(seq, []).append(count)
    best = 0
    for seq, count in headers:
        n, s, c = 1, seq, count
        while 0 < c < 0xFFFF and s + c in by_start:
            s += c
            c = max(by_start[s], key=lambda k: 0 < k < 0xFFFF)
            n += 1
        best = max(best, n)
    return best


def session_bytes(hi: int, lo: int) -> bytes:
    """A session's 10 bytes from its halves as the kernels keep them: the first 8 as an int64,
    the last 2 as a number."""
    return int(hi).to_bytes(8, "big", signed=True) + int(lo).to_bytes(2, "big")


def session_halves(session: bytes) -> tuple[int, int]:
    """:func:`session_bytes` undone: (the first 8 bytes as an int64, the last 2 as a number)."""
    return int.from_bytes(session[:8], "big", signed=True), int.from_bytes(session[8:10], "big")


def majority_session(s_hi: np.ndarray, s_lo: np.ndarray, first_index: np.ndarray):
    """(session's high u64, low u16) of most packets among ``s_hi``/``s_lo`` (well-formed
    packets' session halves), the earliest (smallest ``first_index``) on a tie; and the
    number of sessions seen."""
    pairs = np.stack([s_hi, s_lo], axis=1)
    keys, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    first = np.full(len(keys), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, inverse.reshape(-1), first_index)
    best = max(range(len(keys)), key=lambda k: (counts[k], -first[k]))
    return int(keys[best, 0]), int(keys[best, 1]), len(keys)
