"""Packet capture files (pcap, pcapng) to UDP datagrams: times, destinations, payloads.

A capture is mapped read-only (``numpy.memmap``) and walked by the kernels of
``obook._kernels.pcap``; :class:`Capture` holds its frames' arrays. A capture that ends inside
a record, or holds a corrupt record, keeps the frames before it and notes the problem in
``problem`` (file, record number, reason): the replay raises it in strict mode after the
messages before it, and counts it in tolerant mode.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ...errors import FeedError, ObookError

PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": (False, 1000), b"\xa1\xb2\xc3\xd4": (True, 1000),
               b"\x4d\x3c\xb2\xa1": (False, 1), b"\xa1\xb2\x3c\x4d": (True, 1)}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"

_REASONS = {1: "the capture ends inside a record header (cut mid-record)",
            2: "the capture ends inside a record's frame (cut mid-record)",
            3: "corrupt record or block length",
            4: "unknown pcapng byte-order magic",
            5: "a packet names an interface no description declared",
            6: "an interface description's time unit (if_tsresol) is not one a clock has"}
KINDS = ("udp", "not_udp", "truncated_frames", "other_link", "fragments")


def capture_kind(head: bytes) -> str | None:
    """"pcap", "pcapng" or None from a file's first bytes."""
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    if head[:4] == PCAPNG_MAGIC:
        return "pcapng"
    return None


def _not_a_capture(path, head: bytes) -> str:
    """Why the file ``path``, whose first bytes are ``head``, cannot be read as a capture."""
    from ..sources import GZIP_MAGIC, read_head
    from ..zstd_frames import is_zstd

    packed = "gzip" if head[:2] == GZIP_MAGIC else "zstd" if is_zstd(head) else None
    if packed and capture_kind(read_head(path, 24)) is not None:    # mapped, so read plain only
        return f"a {packed}-compressed packet capture: decompress it first (captures are read plain)"
    return f"not a packet capture (no pcap or pcapng magic{f' in its {packed} content' if packed else ''})"


@dataclass
class Capture:
    path: str
    buf: np.ndarray                  # the file's bytes (memory-mapped)
    ts: np.ndarray                   # per UDP datagram: capture time, UTC ns
    ip: np.ndarray                   # destination IPv4 address (u32)
    port: np.ndarray                 # destination UDP port
    poff: np.ndarray                 # payload offset in buf
    plen: np.ndarray                 # payload length
    record: np.ndarray               # the capture record number (1-based) of each datagram
    counts: dict = field(default_factory=dict)   # frames by kind (KINDS)
    problem: FeedError | None = None


def _grow(arrays, n):
    return [np.concatenate([a[:n], np.empty(max(len(a), 1024), a.dtype)]) for a in arrays]


class CaptureReader:
    """A capture read a piece at a time (:meth:`read_into`: the next datagrams), for a replay
    that starts before the whole capture is read; :func:`read_capture` reads it all."""

    def __init__(self, path: str, ip: int | None = None, port: int | None = None):
        """``ip``/``port``: keep only the datagrams to that destination (None: every one)."""
        self._want = (-1, -1) if ip is None else (int(ip), int(port))
        try:
            self.buf = np.memmap(path, dtype=np.uint8, mode="r") if _size(path) else np.zeros(0, np.uint8)
        except OSError as e:
            raise ObookError(f"{path}: cannot open capture: {e.strerror or e}") from e
        self.path = path
        head = bytes(self.buf[:24])
        self.kind = capture_kind(head)
        if self.kind is None:
            raise ObookError(f"{path}: {_not_a_capture(path, head)}")
        self.kinds = np.zeros(len(KINDS), np.int64)
        self.status = None
        self.matched = 0                 # datagrams kept (to the destination asked for)
        if self.kind == "pcap":
            if len(self.buf) < 24:
                raise FeedError(path, 0, "the pcap global header is cut short", unit="record")
            self._big, self._frac_ns = PCAP_MAGICS[head[:4]]
            # the link type is the field's low 16 bits; the high ones may tell of a frame check
            # sequence ending each frame (harmless: a datagram's bytes come from its IP length)
            self._link = struct.unpack((">" if self._big else "<") + "I", head[20:24])[0] & 0xFFFF
            self._state = np.zeros(1, np.int64)
            self.pos = 24
        else:
            self._state = np.zeros(5, np.int64)
            from ..._kernels.pcap import Interfaces
            self._ifaces = Interfaces(*(np.zeros(256, np.int64) for _ in range(3)))
            self.pos = 0
        self.done = False

    def _step(self, arrays, n):
        from ..._kernels import pcap as K

        out = K.Datagrams(*(a[n:] for a in arrays))
        if self.kind == "pcap":
            return K.pcap_datagrams(self.buf, self.pos, len(self.buf), self._big, self._frac_ns, self._link,
                                    self._state, self.kinds, out, *self._want)
        return K.pcapng_datagrams(self.buf, self.pos, len(self.buf), self._state, self._ifaces, self.kinds, out,
                                  *self._want)

    def read_into(self, arrays) -> int:
        """The next datagrams (as many as fit) into the six arrays given (ts, ip, port, poff,
        plen, record); returns how many (:attr:`done` once the capture is read to its end
        or to a problem)."""
        from ..._kernels import pcap as K

        if self.done:
            return 0
        k, self.pos, status = self._step(arrays, 0)
        self.matched += k
        if status != K.NEED_ROOM:
            self.done = True
            self.status = status
            self._check_matched()
        return k

    def read_all(self):
        """Every remaining datagram (the arrays grown as needed)."""
        from ..._kernels import pcap as K

        arrays = [np.empty(max(1024, (len(self.buf) - self.pos) // 80), np.int64) for _ in range(6)]
        n = 0
        while not self.done:
            k, self.pos, status = self._step(arrays, n)
            n += k
            if status != K.NEED_ROOM:
                self.done = True
                self.status = status
                break
            arrays = _grow(arrays, n)
        self.matched += n
        self._check_matched()
        return [a[:n] for a in arrays]

    def _check_matched(self) -> None:
        """A destination asked for that no datagram of the whole capture has: an error (a line
        of no packet would replay to empty tables)."""
        from ..._kernels import pcap as K

        if self._want[0] >= 0 and self.matched == 0 and self.status == K.OK:
            raise ObookError(f"{self.path}: no UDP datagram to {ip_text(self._want[0])}:{self._want[1]} in the "
                             f"capture ({int(self.kinds[0])} UDP datagrams to other destinations)")

    @property
    def problem(self) -> FeedError | None:
        from ..._kernels import pcap as K

        if not self.done or self.status == K.OK:
            return None
        unit = "record" if self.kind == "pcap" else "block"
        number = int(self._state[0]) + 1 if self.kind == "pcap" else int(self._state[2]) + 1
        return FeedError(self.path, number, f"{_REASONS[self.status]} at byte offset {self.pos}", unit=unit)

    def capture(self, arrays) -> Capture:
        """A :class:`Capture` of the datagrams ``arrays`` (ts, ip, port, poff, plen, record)."""
        return Capture(self.path, self.buf, *arrays, dict(zip(KINDS, self.kinds.tolist())), self.problem)


#: the smallest datagram that can carry MoldUDP64 (its header)
MOLD_HEADER = 20


def read_capture(path: str) -> Capture:
    """Every frame of a capture, its UDP datagrams kept (see the module). A capture without
    a UDP/IPv4 datagram that could carry MoldUDP64 is an error (its problem, when it has one:
    a feed of no message would replay to empty tables)."""
    reader = CaptureReader(path)
    cap = reader.capture(reader.read_all())
    if not (cap.plen >= MOLD_HEADER).any():
        if cap.problem is not None:
            raise cap.problem
        frames = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in cap.counts.items() if n) or "no frame"
        raise ObookError(f"{path}: no UDP/IPv4 datagram that could carry MoldUDP64 in the capture ({frames})")
    return cap


def _size(path) -> int:
    import os
    try:
        return os.path.getsize(path)
    except OSError as e:
        raise ObookError(f"{path}: cannot open capture: {e.strerror or e}") from e


def ip_number(text: str) -> int:
    """A dotted IPv4 address as an integer."""
    parts = text.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        raise ObookError(f"not an IPv4 address: {text!r}")
    return int.from_bytes(bytes(int(p) for p in parts), "big")


def ip_text(number: int) -> str:
    return ".".join(str(b) for b in int(number).to_bytes(4, "big"))


#: datagrams looked at for a capture's first MoldUDP64 packet (its session and date)
FIRST_DATAGRAMS = 256


def dating_packet(path, ip: int | None = None, port: int | None = None) -> tuple[int | None, bytes | None]:
    """(capture time in UTC ns, session) of the packet that names and dates the session a
    capture replays, among the first ``FIRST_DATAGRAMS`` UDP datagrams (to ``ip``:``port``
    when given): the session is the one of most well-formed MoldUDP64 packets there (the
    earliest on a tie: a stray packet of another session is outvoted), the time its first
    packet of messages's, else its first packet's. Without a well-formed packet there: the
    first datagram's time, else the first record's (:func:`read_first_time`), and no session.
    A frame before them (ARP, another destination, a capture started the day before) does
    not date the session."""
    from ..._kernels import mold as M
    from .sessions import majority_session, session_bytes

    arrays = [np.empty(FIRST_DATAGRAMS, np.int64) for _ in range(6)]
    try:
        reader = CaptureReader(path, ip, port)
        n = reader.read_into(arrays)
    except ObookError:          # no capture, cut short, no datagram to ip:port: said by the replay
        n = 0
    if not n:
        return read_first_time(path), None
    ts, _ip, _port, poff, plen, _rec = (a[:n] for a in arrays)
    seq, count, hi, lo, status = (np.empty(n, np.int64) for _ in range(5))
    M.mold_headers(reader.buf, poff, plen, n, seq, count, hi, lo, status)
    good = status == M.P_OK
    if not good.any():
        return int(ts[0]), None
    s_hi, s_lo, _n = majority_session(hi[good], lo[good], np.flatnonzero(good))
    mine = good & (hi == s_hi) & (lo == s_lo)
    session = session_bytes(s_hi, s_lo)
    for pick in (mine & (count != 0) & (count != M.END_OF_SESSION), mine):
        if pick.any():
            return int(ts[np.argmax(pick)]), session
    return int(ts[0]), session      # (not reached: mine holds a packet)


def first_packet_time(path, ip: int | None = None, port: int | None = None) -> int | None:
    """The capture time (UTC ns) that dates the session a capture replays (:func:`dating_packet`)."""
    return dating_packet(path, ip, port)[0]


def new_york_date(ns: int):
    """The New York date of a UTC ns time."""
    import datetime as _dt
    from zoneinfo import ZoneInfo

    return _dt.datetime.fromtimestamp(ns / 1e9, ZoneInfo("America/New_York")).date()


def read_first_time(path) -> int | None:
    """The capture time (UTC ns) of a capture's first packet, reading its first blocks."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    kind = capture_kind(head)
    if kind == "pcap":
        if len(head) < 40:
            return None
        big, frac_ns = PCAP_MAGICS[head[:4]]
        sec, frac = struct.unpack((">" if big else "<") + "II", head[24:32])
        return sec * 1_000_000_000 + frac * frac_ns
    if kind == "pcapng":
        from ..._kernels import pcap as K
        buf = np.frombuffer(head, np.uint8)
        out = K.Datagrams(*(np.zeros(1, np.int64) for _ in range(6)))
        ifaces = K.Interfaces(*(np.zeros(256, np.int64) for _ in range(3)))
        k, _pos, _st = K.pcapng_datagrams(buf, 0, len(buf), np.zeros(5, np.int64), ifaces,
                                          np.zeros(len(KINDS), np.int64), out)
        return int(out.ts[0]) if k else None
    return None
