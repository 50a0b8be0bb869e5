"""The arbitrated live feed: lines A and B (and re-request answers) in, an ITCH byte stream
(2-byte length + message, as in a BinaryFILE) out, read by obook's streaming replay.

:class:`LiveFeed` is a stream source with ``partial_reads``: each ``readinto`` runs the
network until messages are deliverable and hands over whole messages (0 bytes at the end of
the session). Gaps on both lines are re-requested (after ``gap_wait``, every
``request_timeout``, ``retries`` times); a gap still open after that is given up: an
ObookError naming the range (``on_gap="raise"``) or a row of ``gaps`` (``"skip"``).

Stamps: per packet, the kernel's receive stamp, the user-space receive and decode +
arbitration done (histograms ``recv`` and ``decode``); per message, in rings indexed by the
replay's record number, the kernel stamp of its first copy, its delivery by the arbiter and
its hand-over to the replay (``handover``: delivery to hand-over).
"""

from __future__ import annotations

import logging
import select
import socket
import time

import numpy as np

from ..checks import check_choice
from ..errors import FeedError, ObookError
from ..feeds.mold.arbiter import Arbiter
from ..feeds.mold.packets import check_session_option, encode_request
from .latency import Clock, Histogram, now
from .net import ipv4_only, line_socket, recv_stamped

log = logging.getLogger("obook")

RING = 1 << 16
_RINGS = ("mold_seq", "line", "t_kernel", "t_decode", "t_handover")
LINES = ("A", "B", "request")
#: the ``line`` column's names: A, B, and R for a message that came back by re-request
LINE_LETTERS = ("A", "B", "R")
#: what a live feed's errors count messages by (their ``unit``)
SEQ_UNIT = "sequence number"


def lost_on_both_lines(first: int, count: int, retries: int | None) -> ObookError:
    """The error of a gap given up (``retries``: the re-requests after the first; None: no
    re-request server to ask)."""
    why = "no re-request server to ask" if retries is None else f"re-requests unanswered after {retries} retries"
    return ObookError(f"live feed: sequence numbers {first}..{first + count - 1} lost on both lines ({why})")


def lines_name(addresses) -> str:
    """How warnings name a live feed: its lines (``live lines A host:port and B host:port``)."""
    a, b = (f"{host}:{port}" for host, port in addresses[:2])
    return f"live lines A {a} and B {b}"


def message_error(reason: str, seq: int, line: int | None, addresses, session: str | None) -> FeedError:
    """The error of a bad message on a live line: a FeedError naming the line whose copy came
    first (``line``: 0 A, 1 B, 2 the re-request server, with its address from ``addresses``;
    None: not known), the MoldUDP64 session and the message's sequence number (its ``record``)."""
    if line is None:
        where = "live feed"
    else:
        where = f"line {LINES[line]}" if line < 2 else "the re-request server"
    addr = addresses[line] if line is not None and 0 <= line < len(addresses) else None
    if addr:
        where += f" {addr[0]}:{addr[1]}"
    if session is not None:
        where += f", MoldUDP64 session {session!r}"
    return FeedError(where, seq, reason, unit=SEQ_UNIT)


def live_error(e: FeedError, message, addresses, session: str | None) -> FeedError:
    """A replay's FeedError on a live stream (``record``: the replay's record number) as
    :func:`message_error`; ``message(record)``: the record's (sequence number, line), or None
    for one no longer held (``e`` is then returned, as is one that names its message already)."""
    found = message(e.record) if e.record is not None and e.unit != SEQ_UNIT else None
    if found is None:
        return e
    return message_error(e.reason, found[0], found[1], addresses, session)


def idle_error(seconds: float, next_seq: int, session: str | None, wrong: int) -> ObookError:
    """The error of a listener that heard nothing of its session for ``seconds`` (``wrong``:
    the packets of other sessions it dropped meanwhile)."""
    if wrong:
        return ObookError(f"live feed: nothing of MoldUDP64 session {session!r} received for {seconds:g} s "
                          f"({wrong} packets of other sessions; --session chooses the one followed)")
    return ObookError(f"live feed: nothing received for {seconds:g} s (next sequence number {next_seq})")


class LiveFeed:
    partial_reads = True
    name = "<live>"     # (an instance's: its lines, see lines_name)
    empty_reason = "nothing received"       # what the replay's warning of no records says

    def __init__(self, line_a, line_b, request=None, session: str | None = None,
                 interface: str = "127.0.0.1", gap_wait: float = 0.05, request_timeout: float = 0.2,
                 retries: int = 3, on_gap: str = "raise", idle_timeout: float | None = None,
                 max_request: int = 1000):
        on_gap = check_choice("on_gap", on_gap, ("raise", "skip"))
        check_session_option(session)
        ipv4_only(request, "request=")
        self.clock = Clock()
        self.socks = []
        self.kernel_stamps = True
        try:
            for name, (host, port) in zip(("line A", "line B"), (line_a, line_b)):
                s, stamped = line_socket(host, port, interface, name)
                self.socks.append(s)
                self.kernel_stamps &= stamped
        except BaseException:
            self.close()
            raise
        self.request = request
        self.addresses = [tuple(line_a), tuple(line_b), tuple(request) if request else None]   # by LINES
        self.name = lines_name(self.addresses)
        self.req = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.req.bind(("127.0.0.1" if request is None or request[0].startswith("127.") else "0.0.0.0", 0))
        self.req.setblocking(False)
        self.socks.append(self.req)
        self.arbiter = Arbiter(None if session is None else session.encode(), lines=3)
        self.gap_wait, self.request_timeout, self.retries = gap_wait, request_timeout, retries
        self.on_gap = on_gap
        self.idle_timeout = idle_timeout
        self.max_request = max_request
        self.out = bytearray()
        self.out_count = 0
        self.next_record = 1                      # the replay's number of the next message
        # per record, in rings indexed by record number & mask (grown to hold every record
        # delivered and not yet turned into rows): its MoldUDP64 number, the line that
        # delivered it first, and its stamps
        self.mask = RING - 1
        for name in _RINGS:
            setattr(self, name, np.zeros(RING, np.int64))
        self.hists = {k: Histogram(k) for k in ("recv", "decode", "handover")}
        self._open: dict[int, list] = {}          # gap first seq -> [count, seen, requests, last]
        self.requests = 0
        self.lost: list[tuple] = []               # given up: (first, count, ts before, ts given up), UTC
        self.done = False
        self._last_packet = time.monotonic()
        self._heard = 0             # packets of the session followed (or, before one is, any)
        self.tick = None                          # called every 0.1 s or so (the gateway's poll)
        self._ticked = 0.0

    # -- the stream --------------------------------------------------------------------------

    def readinto(self, view) -> int:
        while not self.out:
            if self.done:
                return 0
            self.step(0.05)
        n, handed = len(self.out), self.out_count
        if n > len(view):    # whole messages only
            n, handed = self._whole(len(view))
        view[:n] = self.out[:n]
        del self.out[:n]
        t = now()
        first = self.next_record - self.out_count
        idx = np.arange(first, first + handed) & self.mask
        self.t_handover[idx] = t
        self.hists["handover"].record(t - self.t_decode[idx])
        self.out_count -= handed
        return n

    def _whole(self, limit: int) -> tuple[int, int]:
        pos = k = 0
        while pos + 2 <= len(self.out):
            size = 2 + ((self.out[pos] << 8) | self.out[pos + 1])
            if pos + size > limit:
                break
            pos += size
            k += 1
        return pos, k

    # -- the network ---------------------------------------------------------------------------

    def step(self, wait: float) -> None:
        """Receive what arrives within ``wait`` seconds, deliver, re-request, give up."""
        ready, _, _ = select.select(self.socks, [], [], max(0.0, min(wait, self._next_deadline())))
        arb = self.arbiter
        recv, dec = [], []
        for s in ready:
            line = self.socks.index(s)
            while True:
                try:
                    data, kernel, _addr = recv_stamped(s)
                except BlockingIOError:
                    break
                t_user = now()
                k = self.clock.from_realtime(kernel) if kernel is not None else t_user
                arb.packet(line, data, k, requested=line == 2)
                t = now()
                recv.append(t_user - k)
                dec.append(t - t_user)
        if recv:
            self.hists["recv"].record(recv)
            self.hists["decode"].record(dec)
            heard = sum(st["packets"] - st["wrong_session"] - st["bad_packets"] for st in arb.stats)
            if heard != self._heard:        # packets of other sessions keep no session alive
                self._heard, self._last_packet = heard, time.monotonic()
        msgs = arb.pop()
        if msgs:
            self._deliver(msgs)
        self._gaps()
        if self.tick is not None and time.monotonic() - self._ticked >= 0.1:
            self._ticked = time.monotonic()
            self.tick()
        if arb.ended and not arb.missing():
            self.done = True
        elif self.idle_timeout is not None and time.monotonic() - self._last_packet > self.idle_timeout:
            raise idle_error(self.idle_timeout, arb.next_seq, self.session(),
                             sum(st["wrong_session"] for st in arb.stats))

    def _deliver(self, msgs) -> None:
        t = now()
        r = self.next_record
        if 2 * (self.out_count + len(msgs)) > self.mask + 1:
            self._grow(2 * (self.out_count + len(msgs)))
        idx = np.arange(r, r + len(msgs)) & self.mask
        self.mold_seq[idx] = np.fromiter((m[0] for m in msgs), np.int64, len(msgs))
        self.t_kernel[idx] = np.fromiter((m[2] for m in msgs), np.int64, len(msgs))
        self.line[idx] = np.fromiter((m[1] for m in msgs), np.int64, len(msgs))
        self.t_decode[idx] = t
        out = self.out
        for _seq, _line, _ts, msg in msgs:
            out += len(msg).to_bytes(2, "big")
            out += msg
        self.next_record += len(msgs)
        self.out_count += len(msgs)

    def _grow(self, need: int) -> None:
        """Rings of at least ``need`` records, keeping the last ones' entries."""
        size = self.mask + 1
        new = size
        while new < need:
            new *= 2
        recs = np.arange(max(1, self.next_record - size), self.next_record)
        for name in _RINGS:
            old = getattr(self, name)
            ring = np.zeros(new, np.int64)
            ring[recs & (new - 1)] = old[recs & self.mask]
            setattr(self, name, ring)
        self.mask = new - 1

    # -- gaps ----------------------------------------------------------------------------------

    def _next_deadline(self) -> float:
        return self.gap_wait if self._open else 1.0

    def _gaps(self) -> None:
        missing = self.arbiter.missing()
        if not missing and not self._open:
            return
        t = time.monotonic()
        still = {}
        for first, count in missing:
            g = self._open.get(first)
            if g is None or g[0] != count:
                g = [count, t if g is None else g[1], 0 if g is None else g[2], 0.0 if g is None else g[3]]
            still[first] = g
            if t - g[1] < self.gap_wait or (g[2] and t - g[3] < self.request_timeout):
                continue
            if g[2] > self.retries or self.request is None:
                self._give_up(first, count)
                del still[first]
                continue
            self._ask(first, count)
            g[2] += 1
            g[3] = t
        self._open = still

    def _ask(self, first: int, count: int) -> None:
        session = self.arbiter.session or b"".ljust(10)
        count = min(count, 64 * self.max_request)       # a huge gap: its start first, the rest later
        while count > 0:
            n = min(count, self.max_request)
            try:
                self.req.sendto(encode_request(session, first, n), self.request)
                self.requests += 1
            except OSError as e:
                log.warning("live feed: re-request %d..%d not sent: %s", first, first + n - 1, e)
            first += n
            count -= n

    def _give_up(self, first: int, count: int) -> None:
        last = first + count - 1
        if self.on_gap == "raise":
            raise lost_on_both_lines(first, count, self.retries if self.request else None)
        log.warning("live feed: sequence numbers %d..%d lost on both lines", first, last)
        before = int(self.t_kernel[(self.next_record - 1) & self.mask]) if self.next_record > 1 else None
        self.lost.append((first, count, None if before is None else before + self.clock.offset,
                          now() + self.clock.offset))
        self.arbiter.skip(first, count, now())
        msgs = self.arbiter.pop()
        if msgs:
            self._deliver(msgs)

    def message_of(self, record: int) -> tuple[int, int] | None:
        """The MoldUDP64 sequence number and line (index of LINES) of the replay's record
        ``record``; None for one not delivered or no longer in the rings."""
        if not (1 <= record < self.next_record and self.next_record - record <= self.mask + 1):
            return None
        i = record & self.mask
        return int(self.mold_seq[i]), int(self.line[i])

    def session(self) -> str | None:
        """The MoldUDP64 session followed (given or chosen), None before one is."""
        s = self.arbiter.session
        return None if s is None else s.decode("ascii", "replace").rstrip()

    def record_columns(self, seq: np.ndarray) -> list:
        """``mold_seq``, ``line`` and ``ts_recv`` (the kernel's receive stamp, UTC) of the
        replay's records ``seq`` (recent ones: the stamps are kept in rings)."""
        import pyarrow as pa

        from ..feeds.mold.side import RECORD_FIELDS

        idx = np.asarray(seq, np.int64) & self.mask
        letters = pa.array(LINE_LETTERS, RECORD_FIELDS[1].type)
        return [pa.array(self.mold_seq[idx].astype(np.uint64)), letters.take(pa.array(self.line[idx])),
                pa.array(self.t_kernel[idx] + self.clock.offset, RECORD_FIELDS[2].type)]

    # -- results -------------------------------------------------------------------------------

    def stats(self) -> dict:
        a = self.arbiter
        return {"lines": {LINES[i]: dict(st) for i, st in enumerate(a.stats)},
                "gaps": [{"first_seq": f, "count": c, "ts": ts} for f, c, ts in a.gaps],
                "requests": self.requests, "next_seq": a.next_seq, "ended": a.ended,
                "kernel_stamps": self.kernel_stamps}

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self.socks = []
