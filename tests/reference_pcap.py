"""An independent pure-Python reader of pcap/pcapng captures of MoldUDP64 lines (tests only)."""

from __future__ import annotations

import struct


def _records(data: bytes):
    """(ts_ns, frame bytes) of every record of a pcap or pcapng capture."""
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = "<" if magic[0] in (0xD4, 0x4D) else ">"
        scale = 1000 if magic in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4") else 1
        pos = 24
        while pos + 16 <= len(data):
            sec, frac, incl, _orig = struct.unpack_from(e + "IIII", data, pos)
            if pos + 16 + incl > len(data):
                return
            yield sec * 10**9 + frac * scale, data[pos + 16:pos + 16 + incl]
            pos += 16 + incl
        return
    pos, e, res = 0, "<", []
    while pos + 12 <= len(data):
        if data[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":
            e = "<" if data[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            res = []
        btype, blen = struct.unpack_from(e + "II", data, pos)
        if pos + blen > len(data):
            return
        body = data[pos + 8:pos + blen - 4]
        if btype == 1:
            unit = 10**3
            opts = body[8:]
            while len(opts) >= 4:
                code, olen = struct.unpack_from(e + "HH", opts, 0)
                if code == 0:
                    break
                if code == 9:
                    r = opts[4]
                    unit = 10**9 / (2 ** (r & 0x7F)) if r & 0x80 else 10 ** (9 - r)
                opts = opts[4 + (olen + 3) // 4 * 4:]
            res.append(unit)
        elif btype == 6:
            iface, hi, lo, incl, _orig = struct.unpack_from(e + "IIIII", body, 0)
            yield int(((hi << 32) | lo) * res[iface]), body[20:20 + incl]
        elif btype == 3:
            (orig,) = struct.unpack_from(e + "I", body, 0)
            yield None, body[4:4 + min(orig, len(body) - 4)]
        pos += blen


def udp_datagrams(path):
    """(ts_ns, 'a.b.c.d', port, payload) of the UDP/IPv4 frames of a capture."""
    data = open(path, "rb").read()
    last = 0
    for ts, frame in _records(data):
        ts = last if ts is None else ts
        last = ts
        et = struct.unpack_from(">H", frame, 12)[0]
        q = 14
        while et == 0x8100:
            et = struct.unpack_from(">H", frame, q + 2)[0]
            q += 4
        if et != 0x0800 or frame[q + 9] != 17:
            continue
        ihl = (frame[q] & 15) * 4
        dst = ".".join(str(b) for b in frame[q + 16:q + 20])
        u = q + ihl
        port, ulen = struct.unpack_from(">HH", frame, u + 2)
        yield ts, dst, port, frame[u + 8:u + ulen]


def mold_messages(payload):
    """(session, seq, count, [messages]) of a MoldUDP64 packet."""
    session, seq, count = struct.unpack_from(">10sQH", payload, 0)
    msgs, pos = [], 20
    if count not in (0, 0xFFFF):
        for _ in range(count):
            (ln,) = struct.unpack_from(">H", payload, pos)
            msgs.append(payload[pos + 2:pos + 2 + ln])
            pos += 2 + ln
    return session, seq, count, msgs


def arbitrate(lines):
    """``lines``: [(path, address, port)], A first. Returns {seq: (line, ts, message)} of the
    first copies, in arrival order (time; line order on ties; file order within a file)."""
    arrivals = []
    for line, (path, addr, port) in enumerate(lines):
        for k, (ts, dst, p, payload) in enumerate(udp_datagrams(path)):
            if dst == addr and p == port:
                arrivals.append((ts, line, k, payload))
    arrivals.sort(key=lambda a: (a[0], a[1], a[2]))
    first = {}
    for ts, line, _k, payload in arrivals:
        _s, seq, _c, msgs = mold_messages(payload)
        for i, m in enumerate(msgs):
            first.setdefault(seq + i, (line, ts, m))
    return first
