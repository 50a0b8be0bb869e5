"""``obook gen pcap``: an ITCH day as MoldUDP64 on lines A and B in packet captures.

The day's messages are cut into packets (seeded sizes, at most ~1400 bytes); each line sends
every packet, then seeded faults are applied per line: drops (B never drops what A dropped),
duplicates, a packet swapped with the next (reordering), and ``both_gaps`` packets dropped
on both lines (lost). Line B
lags ``delay_ns``. A heartbeat and the end of session close each line. The capture time of a
packet is the session midnight (New York) plus its first message's ITCH time (+ the lag).
Written as pcap (µs or ns), pcapng (ns ``if_tsresol``, either byte order) and optionally
with an 802.1Q tag; both lines to one capture, or one capture per line.
"""

from __future__ import annotations

import datetime as _dt
import os
import random
import struct

import numpy as np

from ..feeds.sources import open_source

SESSION = b"OBOOK00001"
LINE_A = ("233.54.12.111", 26477)
LINE_B = ("233.54.12.112", 26477)
MAX_PAYLOAD = 1400


def _read_frames(itch) -> tuple[bytes, np.ndarray]:
    from .._kernels.mold import frame_offsets

    with open_source(itch) as f:
        chunks = []
        buf = bytearray(1 << 22)
        while True:
            n = f.readinto(memoryview(buf))
            if not n:
                break
            chunks.append(bytes(buf[:n]))
    data = b"".join(chunks)
    arr = np.frombuffer(data, np.uint8)
    off = np.empty(len(data) // 3 + 2, np.int64)
    k = frame_offsets(arr, len(arr), off)
    return data, off[:k + 1]


def _packets(off: np.ndarray, rnd: random.Random, max_messages: int):
    """(first message index, end index) of each packet."""
    out = []
    i, n = 0, len(off) - 1
    while i < n:
        want = rnd.randint(1, max_messages)
        j = i + 1
        while j < n and j - i < want and off[j + 1] - off[i] <= MAX_PAYLOAD:
            j += 1
        out.append((i, j))
        i = j
    return out


def _ip(text):
    return bytes(int(p) for p in text.split("."))


def _frame(payload: bytes, dst, vlan: bool) -> bytes:
    ip_dst, port = dst
    mac = b"\x01\x00\x5e" + _ip(ip_dst)[1:]
    eth = mac + b"\x02\x00\x00\x00\x00\x01" + (b"\x81\x00\x00\x64" if vlan else b"") + b"\x08\x00"
    udp = struct.pack(">HHHH", 40000, port, 8 + len(payload), 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(payload), 0, 0x4000, 16, 17, 0,
                     _ip("10.0.0.1"), _ip(ip_dst))
    return eth + ip + udp + payload


class _Writer:
    def __init__(self, path, kind: str, big: bool):
        self.f = open(path, "wb")
        self.kind = kind
        self.e = ">" if big else "<"
        if kind in ("pcap", "pcap-ns"):
            magic = 0xA1B2C3D4 if kind == "pcap" else 0xA1B23C4D
            self.f.write(struct.pack(self.e + "IHHiIII", magic, 2, 4, 0, 0, 262144, 1))
        else:
            shb_body = struct.pack(self.e + "IHHq", 0x1A2B3C4D, 1, 0, -1)
            self.f.write(struct.pack(self.e + "II", 0x0A0D0D0A, 12 + len(shb_body)) + shb_body
                         + struct.pack(self.e + "I", 12 + len(shb_body)))
            opts = struct.pack(self.e + "HH", 9, 1) + b"\x09\x00\x00\x00" + struct.pack(self.e + "HH", 0, 0)
            body = struct.pack(self.e + "HHI", 1, 0, 262144) + opts
            self.f.write(struct.pack(self.e + "II", 1, 12 + len(body)) + body + struct.pack(self.e + "I", 12 + len(body)))

    def write(self, ts_ns: int, frame: bytes):
        e = self.e
        if self.kind == "pcap":
            self.f.write(struct.pack(e + "IIII", ts_ns // 10**9, ts_ns % 10**9 // 1000, len(frame), len(frame)) + frame)
        elif self.kind == "pcap-ns":
            self.f.write(struct.pack(e + "IIII", ts_ns // 10**9, ts_ns % 10**9, len(frame), len(frame)) + frame)
        else:
            pad = (-len(frame)) % 4
            total = 32 + len(frame) + pad
            self.f.write(struct.pack(e + "IIIIIII", 6, total, 0, ts_ns >> 32, ts_ns & 0xFFFFFFFF, len(frame), len(frame))
                         + frame + b"\0" * pad + struct.pack(e + "I", total))

    def close(self):
        self.f.close()


def check_captures(itch, out_a, out_b=None) -> None:
    """ObookError when a capture to write is the ITCH day read (the same file, a link to it)
    or both lines name one file."""
    from ..errors import ObookError

    outs = [os.fspath(o) for o in (out_a, out_b) if o is not None]
    for o in outs:
        if os.path.exists(o) and os.path.exists(itch) and os.path.samefile(o, itch):
            raise ObookError(f"{o}: is the ITCH day being read; write the capture elsewhere")
    if len(outs) == 2 and os.path.abspath(outs[0]) == os.path.abspath(outs[1]):
        raise ObookError(f"{outs[0]}: given for both lines; give one file (both lines) or two files")


def write_pcap(itch, out_a, out_b=None, *, seed: int = 0, drop: float = 0.01, dup: float = 0.005,
               reorder: float = 0.005, both_gaps: int = 0, kind: str = "pcap", big: bool = False,
               vlan: bool = False, date: str = "2026-11-30", delay_ns: int = 20_000,
               max_messages: int = 12, session: bytes = SESSION, line_a=LINE_A, line_b=LINE_B) -> dict:
    """Write the captures; returns ``{"messages", "packets", "lost": [(first_seq, count)]}``
    (the sequence numbers no line carries, merged into ranges)."""
    from zoneinfo import ZoneInfo

    from ..checks import check_choice, check_date, check_seed, is_integer, not_int
    from ..errors import ObookError

    kind = check_choice("kind", kind, ("pcap", "pcap-ns", "pcapng"))
    seed = check_seed(seed)
    if not is_integer(both_gaps) or both_gaps < 0:
        raise ObookError(f"--both-gaps / both_gaps must be an integer of packets >= 0, not {not_int(both_gaps)}")
    both_gaps = int(both_gaps)
    if not is_integer(max_messages) or max_messages < 1:
        raise ObookError(f"max_messages must be an integer of messages a packet >= 1, not {not_int(max_messages)}")
    if not is_integer(delay_ns) or delay_ns < 0:
        raise ObookError(f"delay_ns must be an integer of ns >= 0, not {not_int(delay_ns)}")

    from ..checks import a_feed
    from ..feeds import detect_format
    from ..feeds.itch import FORMAT as ITCH

    day = check_date(date)
    if day is None or not _dt.date(1970, 1, 2) <= day <= _dt.date(2105, 12, 31):
        raise ObookError(f"--date {date}: a capture's clock holds 1970-01-02 to 2105-12-31")
    check_captures(itch, out_a, out_b)
    fmt = detect_format(itch)
    if fmt != ITCH.name:
        raise ObookError(f"{itch}: {a_feed(fmt)}, not an ITCH day")
    midnight = int(_dt.datetime.combine(day, _dt.time(0), ZoneInfo("America/New_York")).timestamp()) * 10**9
    rnd = random.Random(seed)
    data, off = _read_frames(itch)
    if not len(data):           # (a capture of no packet would read as a day that had none)
        raise ObookError(f"{itch}: empty file: no ITCH message to send")
    if int(off[-1]) < len(data):
        raise ObookError(f"{itch}: message {len(off)} cut short at byte offset {int(off[-1])}: not a whole ITCH day")
    packets = _packets(off, rnd, max_messages)
    n_msgs = len(off) - 1
    if both_gaps > len(packets):        # (known once the day is cut into packets, before any is written)
        raise ObookError(f"--both-gaps {both_gaps}: more than the {len(packets)} packets the day makes "
                         f"({n_msgs} messages, at most {max_messages} a packet): at most {len(packets)}")
    lost_packets = set(rnd.sample(range(len(packets)), both_gaps))
    sends = []                       # (ts, line, order, payload)
    dropped_a = set()
    for line, delay in ((0, 0), (1, delay_ns)):
        order = []
        for p in range(len(packets)):
            # a random drop on B spares what A lost: only ``both_gaps`` are lost on both
            if p in lost_packets or (rnd.random() < drop and p not in dropped_a):
                if line == 0:
                    dropped_a.add(p)
                continue
            order.append(p)
            if rnd.random() < dup:
                order.append(p)
        for i in range(len(order) - 1):
            if rnd.random() < reorder:
                order[i], order[i + 1] = order[i + 1], order[i]
        last_ts = midnight
        for k, p in enumerate(order):
            i, j = packets[p]
            ts = max(last_ts, midnight + int.from_bytes(data[off[i] + 7:off[i] + 13], "big") + delay)
            last_ts = ts                # the capture's times never go back
            head = struct.pack(">10sQH", session, i + 1, j - i)
            sends.append((ts, line, k, head + data[off[i]:off[j]]))
        for k, count in ((len(order), 0), (len(order) + 1, 0xFFFF)):
            sends.append((last_ts + 1000, line, k, struct.pack(">10sQH", session, n_msgs + 1, count)))
    delivered = np.zeros(n_msgs + 2, bool)
    for _ts, _line, _k, payload in sends:
        seq, count = struct.unpack(">QH", payload[10:20])
        if count and count != 0xFFFF:
            delivered[seq:seq + count] = True
    lost = []
    miss = np.flatnonzero(~delivered[1:n_msgs + 1]) + 1
    for m in miss.tolist():
        if lost and lost[-1][0] + lost[-1][1] == m:
            lost[-1] = (lost[-1][0], lost[-1][1] + 1)
        else:
            lost.append((m, 1))
    dst = (line_a, line_b)
    writers = [_Writer(out_a, kind, big)]
    if out_b is not None:
        writers.append(_Writer(out_b, kind, big))
        sends.sort(key=lambda x: (x[1], x[2]))          # each file in its line's send order
    else:
        sends.sort(key=lambda x: (x[0], x[1], x[2]))    # one capture: by time, A first
    try:
        for ts, line, _k, payload in sends:
            writers[line if out_b is not None else 0].write(ts, _frame(payload, dst[line], vlan))
    finally:
        for w in writers:
            w.close()
    return {"messages": n_msgs, "packets": len(packets), "lost": lost}
