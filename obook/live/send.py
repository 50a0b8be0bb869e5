"""``obook send``: a simulated exchange. It replays an ITCH day (BinaryFILE framing) as
MoldUDP64 packets on two lines, A and B, and answers re-requests.

* Packets hold consecutive messages, up to ``max_payload`` bytes, and (sending as
  recorded or sped up) only messages within ``burst_us`` of the packet's first.
* Timing: ``speed`` 1 sends as recorded (by the messages' timestamps), N times faster with
  N, and 0 as fast as possible (``rate``: at most that many packets a second, each filled
  to ``max_payload``). ``message_rate`` (with speed 0) paces messages instead, as a feed
  sends them: message k falls due at k / rate, and a packet holds the messages due within
  ``burst_us`` of its first and goes out when its last one falls due (no message goes out
  before its time or waits longer than ``burst_us``; 0: one message a packet at an even pace).
  The packets go out from a compiled loop (``obook._kernels.live_send``: ``sendmmsg``
  batches, a busy wait of ``spin_us`` before each packet's time); ``lateness`` counts how
  late each went. With ``spare_cpu`` a second thread runs the same loop on that core and a
  packet goes out from whichever thread reaches its time first (late only when both cores
  are away), in the schedule's order.
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

import ctypes
import logging
import math
import os
import random
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..checks import MAX_SECONDS, MAX_SPIN_US, check_number
from ..errors import ObookError
from ..feeds.mold.packets import (END_OF_SESSION, HEADER, MoldPacketError, check_session, decode_request,
                                  encode_packet)
from ..feeds.sources import Cut, open_source, read_block
from .latency import Histogram
from .net import ipv4_only, is_multicast, sender_socket

log = logging.getLogger("obook")

_TS = struct.Struct(">HI")
_SEQ_COUNT = struct.Struct(">QH")


def read_messages(path) -> list[bytes]:
    """The messages of an ITCH BinaryFILE (plain, gzip or zstd); a file of another feed
    format, or of no message, is an ObookError naming it."""
    from ..feeds import require_format
    from ..feeds.itch import FORMAT

    require_format(path, FORMAT.name, "obook send sends Nasdaq ITCH 5.0 days (BinaryFILE)")
    with open_source(path) as r:
        chunks = []
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while True:
            try:
                n = read_block(r, view)
            except Cut as e:     # a compressed day cut short or damaged
                raise ObookError(f"{path}: read failed at byte {sum(map(len, chunks)) + e.got} of the "
                                 f"decompressed feed: {e.cause}") from e
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
    if not out:     # an end of session alone names no session: a listener would wait for one
        raise ObookError(f"{path}: the day holds no message; nothing to send")
    return out


def timestamp(msg: bytes) -> int:
    """An ITCH message's timestamp (ns since midnight; 0 for a message too short)."""
    if len(msg) < 11:
        return 0
    hi, lo = _TS.unpack_from(msg, 5)
    return (hi << 32) | lo


def make_packets(messages: list[bytes], max_payload: int = 1400, burst_ns: int | None = None,
                 times=None) -> list[tuple[int, int]]:
    """(first index, count) of each packet: consecutive messages, at most ``max_payload``
    bytes of blocks, within ``burst_ns`` of the packet's first message when given (by the
    messages' timestamps, or by ``times``: each message's due time in ns)."""
    out = []
    i, n = 0, len(messages)
    at = (lambda k: times[k]) if times is not None else (lambda k: timestamp(messages[k]))
    while i < n:
        size = 2 + len(messages[i])
        t0 = at(i) if burst_ns is not None else 0
        j = i + 1
        while j < n and size + 2 + len(messages[j]) <= max_payload and j - i < 0xFFFE:
            if burst_ns is not None and at(j) - t0 > burst_ns:
                break
            size += 2 + len(messages[j])
            j += 1
        out.append((i, j - i))
        i = j
    return out


def message_times(n: int, message_rate: float) -> list[int]:
    """Due times (ns after the start) of ``n`` messages sent evenly at ``message_rate`` a second."""
    step = 1e9 / message_rate
    return [int(k * step) if k else 0 for k in range(n)]


#: the latest a packet may fall due (ns after the start): due times are int64 nanoseconds
MAX_DUE_NS = 1 << 62


def _check_span(ns: float, what: str) -> None:
    """ObookError naming ``what`` when the last packet would fall due past ``MAX_DUE_NS``."""
    if not ns <= MAX_DUE_NS:
        raise ObookError(f"{what}: too slow, sending the day would take over "
                         f"{MAX_DUE_NS / 1e9 / 86400 / 365.25:.0f} years")


#: the sender's numeric options (lowest, highest); ``delay_b`` is checked against the day
_NUMBERS = {"speed": (0, math.inf), "rate": (0, math.inf), "message_rate": (0, math.inf), "drop_a": (0, 1), "drop_b": (0, 1),
            "reorder": (0, 1), "heartbeat": (0.01, MAX_SECONDS), "linger": (0, MAX_SECONDS),
            "burst_us": (0, MAX_SPIN_US), "spin_us": (0, MAX_SPIN_US)}


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
    cpu: int | None = None        # pin the sending thread to this core
    spin_us: float = 1000.0       # busy-wait on the clock this long before a packet's time
    message_rate: float = 0.0     # with speed 0: messages due evenly at this rate (packets as they fall due)
    sleep: bool = True            # sleep (clock_nanosleep) until spin_us before a packet's time, not in Python
    spare_cpu: int | None = None  # a second sending thread on this core: a packet goes from the first at its time

    def __post_init__(self):
        check_session(self.session, "session=")     # 1 to 10 printable ASCII characters, never cut
        for what in ("line_a", "line_b", "request"):
            ipv4_only(getattr(self, what), f"{what}=")
        for name, (lo, hi) in _NUMBERS.items():      # in range of the loop's 64-bit nanoseconds
            check_number(name, getattr(self, name), lo, hi)
        if self.spare_cpu is not None and self.spare_cpu == self.cpu:
            raise ObookError(f"--spare-cpu {self.spare_cpu}: the spare sending thread needs a core other than --cpu's")


def _check_reachable(option: str, line: tuple[str, int]) -> None:
    """ObookError naming ``option`` when the kernel refuses to send to ``line`` (a broadcast
    address, a network without a route): asked by connecting a UDP socket, which sends nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(line)
        except OSError as e:
            raise ObookError(f"{option} {line[0]}:{line[1]}: cannot send there ({e.strerror or e})") from e


def _timer_slack(ns: int) -> None:
    """Ask the kernel to wake this thread within ``ns`` of a timer (Linux; the default 50 µs
    would make every slept wait before a packet that much longer)."""
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(29, ctypes.c_ulong(ns), 0, 0, 0)       # PR_SET_TIMERSLACK
        except (AttributeError, OSError):
            pass


def sockaddr_in(host: str, port: int) -> np.ndarray:
    """A ``struct sockaddr_in`` for (host, port) as two int64 words, for ``sendmmsg``."""
    raw = struct.pack("<H", socket.AF_INET) + struct.pack(">H", port) + socket.inet_aton(
        socket.gethostbyname(host)) + bytes(8)
    return np.frombuffer(raw, np.int64).copy()


def _libc_address(name: str) -> int:
    return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value


class Sender:
    """Sends ``messages`` per ``opts``; ``run()`` returns the counts when done (or stopped)."""

    def __init__(self, messages: list[bytes], opts: SendOptions):
        self.messages = messages
        self.o = opts
        if opts.rate > 0 and opts.message_rate > 0:
            raise ObookError("send: give a packet rate or a message rate, not both")
        burst = None if opts.speed <= 0 and opts.message_rate <= 0 else int(opts.burst_us * 1000)
        if opts.speed <= 0 < opts.message_rate:
            _check_span(max(len(messages) - 1, 0) * 1e9 / opts.message_rate, f"--message-rate {opts.message_rate:g}")
        self.times = message_times(len(messages), opts.message_rate) if opts.speed <= 0 < opts.message_rate else None
        self.packets = make_packets(messages, opts.max_payload, burst, self.times)
        if opts.speed > 0 and self.packets:
            first = timestamp(messages[self.packets[0][0]])
            _check_span((timestamp(messages[self.packets[-1][0]]) - first) / opts.speed,      # a day runs forward
                        f"--speed {opts.speed:g}")
        elif opts.rate > 0:
            _check_span(max(len(self.packets) - 1, 0) * 1e9 / opts.rate, f"--rate {opts.rate:g}")
        if not 0 <= opts.delay_b * 1e9 <= MAX_DUE_NS / 2:     # (a NaN fails too) the last due time plus it fits
            raise ObookError(f"--delay-b {opts.delay_b:g}: give a delay of 0 to "
                             f"{MAX_DUE_NS / 2e9 / 86400 / 365.25:.0f} years, in seconds")
        for option, line in (("--line-a", opts.line_a), ("--line-b", opts.line_b)):
            if not is_multicast(line[0]):      # (a group goes out on --interface, not by the routes)
                _check_reachable(option, line)
        self.out = sender_socket(opts.interface)
        self.req = None
        if opts.request is not None:
            self.req = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                self.req.bind(opts.request)
            except OSError as e:
                self.close()
                raise ObookError(f"--request {opts.request[0]}:{opts.request[1]}: cannot serve re-requests there: "
                                 f"{e.strerror or e}") from e
            self.req.setblocking(False)
        self.lines = (opts.line_a, opts.line_b)
        for host, _ in self.lines:
            if not is_multicast(host) and not host.startswith("127.") and host != "localhost":
                log.info("send: line %s is not on loopback", host)
        self.rngs = (random.Random(f"{opts.seed}:A"), random.Random(f"{opts.seed}:B"))
        self.stats = {"packets_a": 0, "packets_b": 0, "dropped_a": 0, "dropped_b": 0, "reordered": 0,
                      "heartbeats": 0, "requests": 0, "resent_messages": 0, "bad_requests": 0}
        self.lateness = Histogram("send-lateness")     # packet handed to the kernel - its scheduled time
        self._stopped = False
        self._spare_error = None
        self.Qs: list = []
        self._go = threading.Event()      # the spare thread's start: the schedule is in _sched
        self._sched = None

    def stop(self) -> None:
        self._stopped = True

    def _due(self, k: int) -> int:
        """Packet k's time (ns after the start)."""
        if self.o.speed > 0:
            first = timestamp(self.messages[self.packets[0][0]])
            return int((timestamp(self.messages[self.packets[k][0]]) - first) / self.o.speed)
        if self.times is not None:          # when its last message falls due
            first, count = self.packets[k]
            return self.times[first + count - 1]
        if self.o.rate > 0:
            return int(k * 1e9 / self.o.rate)
        return 0

    def schedule(self):
        """The packets (``Packets``: their bytes, offsets, lengths, first numbers, message
        counts) and the schedule of both lines (``Schedule``, due times in ns after the start;
        see obook._kernels.live_send): each line drops a packet with its probability, holds one back behind the next with
        the reorder probability (one seeded generator per line), B runs ``delay_b`` late."""
        o = self.o
        n = len(self.packets)
        parts, p_off, p_len = [], np.zeros(n, np.int64), np.zeros(n, np.int64)
        p_seq, p_count = np.zeros(n, np.int64), np.zeros(n, np.int64)
        at = 0
        for k, (first, count) in enumerate(self.packets):
            pkt = encode_packet(o.session, first + 1, self.messages[first:first + count])
            parts.append(pkt)
            p_off[k], p_len[k], p_seq[k], p_count[k] = at, len(pkt), first + 1, count
            at += len(pkt)
        entries = []                  # (due, order, line, packet | -1 - next number of a drop)
        held = [None, None]
        delay = int(o.delay_b * 1e9)

        def push(due, line, item):
            entries.append((due + line * delay, len(entries), line, item))

        due = 0
        for k, (first, count) in enumerate(self.packets):
            due = self._due(k)
            for line in (0, 1):
                if self.rngs[line].random() < (o.drop_a, o.drop_b)[line]:
                    self.stats[f"dropped_{'ab'[line]}"] += 1
                    push(due, line, -1 - (first + count + 1))     # lost on the way: the line moves on
                elif held[line] is not None:                      # the held packet goes after this one
                    push(due, line, k)
                    push(due, line, held[line])
                    held[line] = None
                elif o.reorder and self.rngs[line].random() < o.reorder:
                    held[line] = k
                    self.stats["reordered"] += 1
                else:
                    push(due, line, k)
        for line in (0, 1):
            if held[line] is not None:
                push(due, line, held[line])
        entries.sort()
        sched = np.array([(e[0], e[2], e[3]) for e in entries], np.int64).reshape(-1, 3)
        from .._kernels.live_send import Packets, Schedule

        return (Packets(np.frombuffer(b"".join(parts), np.uint8), p_off, p_len, p_seq, p_count),
                Schedule(sched[:, 2].copy(), sched[:, 1].copy(), sched[:, 0].copy()))

    def run(self) -> dict:
        """Send the day (compiled: ``obook._kernels.live_send``; with ``spare_cpu``, from two
        threads), answering re-requests and sending heartbeats between its slices; then the
        end of session."""
        from .._kernels import live_send as K
        from .hotpath import check_cpu, pin

        o = self.o
        check_cpu(o.spare_cpu, "--spare-cpu")
        cores = os.sched_getaffinity(0) if o.cpu is not None else None     # given back at the end
        pin(o.cpu)
        packets, sched = self.schedule()
        self.T = np.zeros(K.T_WIDTH, np.int64)
        self.Qs = [self._loop_state(K, self.lateness)]
        spare = None
        if o.spare_cpu is not None:
            self.Qs.append(self._loop_state(K, Histogram("send-lateness")))
            spare = threading.Thread(target=self._spare, args=(packets,), name="obook-send-spare", daemon=True)
        start = time.monotonic_ns()
        try:
            if spare is not None:       # before the clock starts: a thread's start() waits until it runs,
                spare.start()           # which can take milliseconds on a core that was idle
            none = np.zeros(0, np.int64)        # load the loop (numba's cache: ms) before the clock starts, or
            K.send_due(self.Qs[0][0], np.zeros(K.T_WIDTH, np.int64), np.zeros(K.Q_WIDTH, np.int64), packets,
                       K.Schedule(none, none, none), self.lateness.counts, 0, 0)   # every packet would go that late
            t0 = time.monotonic_ns() + 1_000_000
            sched = self._sched = sched._replace(due=sched.due + t0)
            for out, Q, late in self.Qs:
                Q[K.Q_NEXT_A] = Q[K.Q_NEXT_B] = 1
                Q[K.Q_LAST_A] = Q[K.Q_LAST_B] = t0
            out, Q, late = self.Qs[0]
            self._go.set()
            start = time.monotonic_ns()
            while not self._stopped:
                status = K.send_due(out, self.T, Q, packets, sched, late.counts, int(o.spin_us * 1000), 20_000_000)
                if status == K.SEND_DONE:
                    break
                self._heartbeats(time.monotonic_ns())
                wait = 0.0
                if status == K.SEND_WAIT:
                    wait = (Q[K.Q_NEXT_DUE] - time.monotonic_ns()) / 1e9 - 0.75 * o.spin_us / 1e6
                self._serve(max(0.0, min(wait, o.heartbeat)))
            self._join(spare)
            self._count(start)          # the day's packets
            self._end(len(self.messages) + 1)
        except BaseException:           # stopped (Ctrl-C): ``stats`` counts what went out
            self._stopped = True
            self._go.set()
            self._join(spare)
            self._count(start)
            raise
        finally:
            self.close()
            if cores is not None:
                os.sched_setaffinity(0, cores)
        return self.stats

    def _loop_state(self, K, late: Histogram) -> tuple:
        """One sending thread's socket side (``Out``: the libc functions, its batch slots),
        counters, and ``late``, its lateness histogram."""
        o = self.o
        fns = np.array([_libc_address("sendmmsg"), _libc_address("clock_gettime"),
                        _libc_address("clock_nanosleep") if o.sleep else 0], np.int64)
        out = K.Out(fns, self.out.fileno(), np.stack([sockaddr_in(host, port) for host, port in self.lines]),
                    np.zeros((K.BATCH, 8), np.int64), np.zeros((K.BATCH, 2), np.int64), np.zeros(K.BATCH, np.int64),
                    np.zeros(2, np.int64))
        return out, np.zeros(K.Q_WIDTH, np.int64), late

    def _spare(self, packets) -> None:
        """The spare thread: once ``_go`` is set, the same loop on ``spare_cpu`` over ``_sched``
        until the schedule is sent or the sender stops (it sleeps in Python only up to 20 ms at
        a time, to see a stop)."""
        from .._kernels import live_send as K
        from .hotpath import pin

        out, Q, late = self.Qs[1]
        spin_ns = int(self.o.spin_us * 1000)
        try:
            pin(self.o.spare_cpu, "--spare-cpu", checked=True)      # run() checked it
            _timer_slack(1_000)
            self._go.wait()
            sched = self._sched
            while not self._stopped:
                status = K.send_due(out, self.T, Q, packets, sched, late.counts, spin_ns, 20_000_000)
                if status == K.SEND_DONE:
                    return
                if status == K.SEND_WAIT:
                    time.sleep(max(0.0, min((Q[K.Q_NEXT_DUE] - time.monotonic_ns()) / 1e9 - 0.75 * spin_ns / 1e9,
                                            0.02)))
        except BaseException as e:      # handed to the first thread, which raises it
            self._spare_error = e
            self._stopped = True

    def _join(self, spare) -> None:
        """Wait for the spare thread; its lateness joins ``lateness``; its error is raised."""
        if spare is None:
            return
        if spare.is_alive() or spare.ident is not None:
            spare.join()
        self.lateness.add(self.Qs[1][2])
        error, self._spare_error = self._spare_error, None
        if error is not None:
            raise error

    def _count(self, start: int) -> None:
        from .._kernels import live_send as K

        for what, col in (("packets_a", K.Q_SENT_A), ("packets_b", K.Q_SENT_B), ("send_errors", K.Q_ERRORS)):
            self.stats[what] = sum(int(Q[col]) for _, Q, _ in self.Qs)
        self.stats["seconds"] = round((time.monotonic_ns() - start) / 1e9, 6)

    def _heartbeats(self, now: int) -> None:
        from .._kernels import live_send as K

        Q = self.Qs[0][1]
        for line in (0, 1):
            last = max(int(q[K.Q_LAST_A + line]) for _, q, _ in self.Qs)     # either thread's packet
            if now - last >= self.o.heartbeat * 1e9:
                nxt = max(int(q[K.Q_NEXT_A + line]) for _, q, _ in self.Qs)
                self.out.sendto(encode_packet(self.o.session, nxt, []), self.lines[line])
                self.stats["heartbeats"] += 1
                Q[K.Q_LAST_A + line] = now

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
