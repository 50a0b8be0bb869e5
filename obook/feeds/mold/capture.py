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
            5: "a packet names an interface no description declared"}
KINDS = ("udp", "not_udp", "truncated_frames", "other_link", "fragments")


def capture_kind(head: bytes) -> str | None:
    """"pcap", "pcapng" or None from a file's first bytes."""
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    if head[:4] == PCAPNG_MAGIC:
        return "pcapng"
    return None


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


def read_capture(path: str) -> Capture:
    """Every frame of a capture, its UDP datagrams kept (see the module)."""
    from ..._kernels import pcap as K

    try:
        buf = np.memmap(path, dtype=np.uint8, mode="r") if _size(path) else np.zeros(0, np.uint8)
    except OSError as e:
        raise ObookError(f"{path}: cannot open capture: {e.strerror or e}") from e
    head = bytes(buf[:24])
    kind = capture_kind(head)
    if kind is None:
        raise ObookError(f"{path}: not a packet capture (no pcap or pcapng magic)")
    guess = max(1024, len(buf) // 80)
    arrays = [np.empty(guess, np.int64) for _ in range(6)]     # ts, ip, port, poff, plen, rec
    kinds = np.zeros(len(KINDS), np.int64)
    n = 0
    if kind == "pcap":
        if len(buf) < 24:
            raise FeedError(path, 0, "the pcap global header is cut short", unit="record")
        big, frac_ns = PCAP_MAGICS[head[:4]]
        link = struct.unpack((">" if big else "<") + "I", head[20:24])[0]
        state = np.zeros(1, np.int64)
        pos = 24

        def step(pos, n):
            return K.pcap_datagrams(buf, pos, len(buf), big, frac_ns, link, state, kinds, *(a[n:] for a in arrays))
    else:
        state = np.zeros(5, np.int64)
        ifaces = [np.zeros(256, np.int64) for _ in range(3)]
        pos = 0

        def step(pos, n):
            return K.pcapng_datagrams(buf, pos, len(buf), state, *ifaces, kinds, *(a[n:] for a in arrays))
    while True:
        k, pos, status = step(pos, n)
        n += k
        if status != K.NEED_ROOM:
            break
        arrays = _grow(arrays, n)
    problem = None
    if status != K.OK:
        unit = "record" if kind == "pcap" else "block"
        number = int(state[0]) + 1 if kind == "pcap" else int(state[2]) + 1
        problem = FeedError(path, number, f"{_REASONS[status]} at byte offset {pos}", unit=unit)
    counts = dict(zip(KINDS, kinds.tolist()))
    ts, ip, port, poff, plen, rec = (a[:n] for a in arrays)
    return Capture(path, buf, ts, ip, port, poff, plen, rec, counts, problem)


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
        arrays = [np.zeros(1, np.int64) for _ in range(6)]
        z = [np.zeros(256, np.int64) for _ in range(3)]
        k, _pos, _st = K.pcapng_datagrams(buf, 0, len(buf), np.zeros(5, np.int64), *z,
                                          np.zeros(len(KINDS), np.int64), *arrays)
        return int(arrays[0][0]) if k else None
    return None
