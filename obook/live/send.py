"""``obook send``: a simulated exchange. It replays an ITCH day (BinaryFILE framing) as
MoldUDP64 packets on two lines, A and B, and answers re-requests.

* Packets hold consecutive messages, up to ``max_payload`` bytes, and (sending as
  recorded or sped up) only messages within ``burst_us`` of the packet's first.
* Timing: ``speed`` 1 sends as recorded (by the messages' timestamps), N times faster with
  N, and 0 as fast as possible (``rate``: at most that many packets a second).
* Line B sends the same packets ``delay_b`` seconds later. Each line drops a packet with
  its own probability (``drop_a``, ``drop_b``), and holds one back behind the next with
  probability ``reorder``: all from one seeded generator per line, so a seed is one run.
* Heartbeats (count 0, the next sequence number) on a line idle for ``heartbeat`` seconds;
  at the end, end-of-session packets on both lines, repeated each ``heartbeat``, while the
  re-request server keeps answering until it has been asked nothing for ``linger`` seconds.
* The re-request server (UDP, ``request``) answers a request (session, first, count) with
  downstream packets of those messages, sent to the asker.
"""

from __future__ import annotations

import heapq
import logging
import random
import select
import socket
import struct
import time
from dataclasses import dataclass

from ..errors import ObookError
from ..feeds.mold.packets import END_OF_SESSION, HEADER, MoldPacketError, decode_request, encode_packet
from ..feeds.sources import open_source
from .net import is_multicast, sender_socket

log = logging.getLogger("obook")

_TS = struct.Struct(">HI")
_SEQ_COUNT = struct.Struct(">QH")


def read_messages(path) -> list[bytes]:
    """The messages of an ITCH BinaryFILE (plain, gzip or zstd)."""
    with open_source(path) as r:
        chunks = []
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while True:
            n = r.readinto(view)
            if not n:
                break
            chunks.append(bytes(view[:n]))
    data = b"".join(chunks)
    out = []
    pos, n = 0, len(data)
    while pos + 2 <= n:
        size = (data[pos] << 8) | data[pos + 1]
        if pos + 2 + size > n:
            raise ObookError(f"{path}: message {len(out) + 1} cut short at byte {pos}")
        out.append(data[pos + 2:pos + 2 + size])
        pos += 2 + size
    if pos != n:
        raise ObookError(f"{path}: {n - pos} bytes after the last whole message")
    return out


def timestamp(msg: bytes) -> int:
    """An ITCH message's timestamp (ns since midnight; 0 for a message too short)."""
    if len(msg) < 11:
        return 0
    hi, lo = _TS.unpack_from(msg, 5)
    return (hi << 32) | lo


def make_packets(messages: list[bytes], max_payload: int = 1400, burst_ns: int | None = None) -> list[tuple[int, int]]:
    """(first index, count) of each packet: consecutive messages, at most ``max_payload``
    bytes of blocks, within ``burst_ns`` of the packet's first message when given."""
    out = []
    i, n = 0, len(messages)
    while i < n:
        size = 2 + len(messages[i])
        t0 = timestamp(messages[i]) if burst_ns is not None else 0
        j = i + 1
        while j < n and size + 2 + len(messages[j]) <= max_payload and j - i < 0xFFFE:
            if burst_ns is not None and timestamp(messages[j]) - t0 > burst_ns:
                break
            size += 2 + len(messages[j])
            j += 1
        out.append((i, j - i))
        i = j
    return out


@dataclass
class SendOptions:
    line_a: tuple[str, int]
    line_b: tuple[str, int]
    request: tuple[str, int] | None = None
    session: str = "OBOOK"
    speed: float = 0.0
    rate: float = 0.0
    delay_b: float = 0.0
    drop_a: float = 0.0
    drop_b: float = 0.0
    reorder: float = 0.0
    seed: int = 0
    heartbeat: float = 0.5
    linger: float = 2.0
    max_payload: int = 1400
    burst_us: float = 50.0
    interface: str = "127.0.0.1"


class Sender:
    """Sends ``messages`` per ``opts``; ``run()`` returns the counts when done (or stopped)."""

    def __init__(self, messages: list[bytes], opts: SendOptions):
        self.messages = messages
        self.o = opts
        burst = None if opts.speed <= 0 else int(opts.burst_us * 1000)
        self.packets = make_packets(messages, opts.max_payload, burst)
        self.out = sender_socket(opts.interface)
        self.req = None
        if opts.request is not None:
            self.req = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                self.req.bind(opts.request)
            except OSError as e:
                self.close()
                raise ObookError(f"re-request server {opts.request[0]}:{opts.request[1]}: {e}") from e
            self.req.setblocking(False)
        self.lines = (opts.line_a, opts.line_b)
        for host, _ in self.lines:
            if not is_multicast(host) and not host.startswith("127.") and host != "localhost":
                log.info("send: line %s is not on loopback", host)
        self.rngs = (random.Random(f"{opts.seed}:A"), random.Random(f"{opts.seed}:B"))
        self.stats = {"packets_a": 0, "packets_b": 0, "dropped_a": 0, "dropped_b": 0, "reordered": 0,
                      "heartbeats": 0, "requests": 0, "resent_messages": 0, "bad_requests": 0}
        self._stopped = False

    def stop(self) -> None:
        self._stopped = True

    def _due(self, k: int, t0: float) -> float:
        if self.o.speed > 0:
            first = timestamp(self.messages[self.packets[0][0]])
            return t0 + (timestamp(self.messages[self.packets[k][0]]) - first) / 1e9 / self.o.speed
        if self.o.rate > 0:
            return t0 + k / self.o.rate
        return t0

    def run(self) -> dict:
        o = self.o
        t0 = time.monotonic()
        self._heap: list = []              # (due, order, line, packet bytes | next seq of a drop)
        self._order = 0
        self._held = [None, None]          # a packet held back per line (reordering)
        self._last_sent = [t0, t0]
        self._next_seq = [1, 1]            # per line: after its last packet (what a heartbeat says)
        k, n_packets = 0, len(self.packets)
        fastest = o.speed <= 0 and o.rate <= 0
        try:
            while not self._stopped:
                now = time.monotonic()
                while k < n_packets and (self._due(k, t0) <= now or fastest and not self._heap):
                    self._queue(k, self._due(k, t0))
                    k += 1
                    if fastest and len(self._heap) > 64:
                        break
                if k == n_packets:
                    self._release_held(now)
                self._send_due(now)
                if k == n_packets and not self._heap:
                    break
                self._heartbeats(now)
                nxt = min(self._heap[0][0] if self._heap else now + o.heartbeat,
                          self._due(k, t0) if k < n_packets else now + o.heartbeat)
                self._serve(max(0.0, nxt - time.monotonic()))
            self._end(len(self.messages) + 1)
        finally:
            self.close()
        return self.stats

    def _push(self, due: float, line: int, item) -> None:
        heapq.heappush(self._heap, (due + line * self.o.delay_b, self._order, line, item))
        self._order += 1

    def _queue(self, k: int, due: float) -> None:
        """Packet k on both lines: dropped, held back behind the next, or sent at ``due``."""
        o = self.o
        first, count = self.packets[k]
        pkt = encode_packet(o.session, first + 1, self.messages[first:first + count])
        for line in (0, 1):
            if self.rngs[line].random() < (o.drop_a, o.drop_b)[line]:
                self.stats[f"dropped_{'ab'[line]}"] += 1
                self._push(due, line, first + count + 1)     # lost on the way: the line moves on
            elif self._held[line] is not None:               # the held packet goes after this one
                self._push(due, line, pkt)
                self._push(due, line, self._held[line])
                self._held[line] = None
            elif o.reorder and self.rngs[line].random() < o.reorder:
                self._held[line] = pkt
                self.stats["reordered"] += 1
            else:
                self._push(due, line, pkt)

    def _release_held(self, now: float) -> None:
        for line in (0, 1):
            if self._held[line] is not None:
                self._push(now, line, self._held[line])
                self._held[line] = None

    def _send_due(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, line, pkt = heapq.heappop(heap)
            if isinstance(pkt, int):      # a dropped packet: the line's sequence moves on
                self._next_seq[line] = max(self._next_seq[line], pkt)
                continue
            self.out.sendto(pkt, self.lines[line])
            self.stats[f"packets_{'ab'[line]}"] += 1
            self._last_sent[line] = now
            seq, count = _SEQ_COUNT.unpack_from(pkt, 10)
            self._next_seq[line] = max(self._next_seq[line], seq + count)

    def _heartbeats(self, now: float) -> None:
        for line in (0, 1):
            if now - self._last_sent[line] >= self.o.heartbeat:
                self.out.sendto(encode_packet(self.o.session, self._next_seq[line], []), self.lines[line])
                self.stats["heartbeats"] += 1
                self._last_sent[line] = now

    def _end(self, seq: int) -> None:
        """End of session on both lines, repeated, while re-requests keep coming."""
        eos = encode_packet(self.o.session, seq, [], count=END_OF_SESSION)
        quiet_since = time.monotonic()
        while not self._stopped:
            for line in (0, 1):
                self.out.sendto(eos, self.lines[line])
            until = time.monotonic() + self.o.heartbeat
            while time.monotonic() < until:
                if self._serve(until - time.monotonic()):
                    quiet_since = time.monotonic()
            if time.monotonic() - quiet_since >= self.o.linger:
                break

    def _serve(self, wait: float) -> int:
        """Answer the re-requests that arrive within ``wait`` seconds; returns how many."""
        if self.req is None:
            if wait > 0:
                time.sleep(wait)
            return 0
        ready, _, _ = select.select([self.req], [], [], wait)
        if not ready:
            return 0
        served = 0
        while True:
            try:
                data, addr = self.req.recvfrom(2048)
            except BlockingIOError:
                return served
            served += 1
            self._answer(data, addr)

    def _answer(self, data: bytes, addr) -> None:
        try:
            session, first, count = decode_request(data)
        except MoldPacketError:
            self.stats["bad_requests"] += 1
            return
        if session.rstrip() != self.o.session.encode() or first < 1:
            self.stats["bad_requests"] += 1
            return
        self.stats["requests"] += 1
        last = min(first + count, len(self.messages) + 1)
        seq = first
        while seq < last:
            size, j = HEADER, seq
            while j < last and size + 2 + len(self.messages[j - 1]) <= self.o.max_payload:
                size += 2 + len(self.messages[j - 1])
                j += 1
            j = max(j, seq + 1)
            self.req.sendto(encode_packet(self.o.session, seq, self.messages[seq - 1:j - 1]), addr)
            self.stats["resent_messages"] += j - seq
            seq = j

    def close(self) -> None:
        self.out.close()
        if self.req is not None:
            self.req.close()
