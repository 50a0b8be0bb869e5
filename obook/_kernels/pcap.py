"""Packet captures (pcap, pcapng) to UDP payloads: frame records, then Ethernet/VLAN/IPv4/UDP.

``pcap_datagrams`` and ``pcapng_datagrams`` walk the records of a whole capture (a numpy view
of the file), classify each frame (``_classify``: Ethernet II, 802.1Q, IPv4, UDP) and keep
the UDP datagrams in preallocated arrays (time in UTC ns, destination address and port,
payload offset and length, record number); they stop with NEED_ROOM when the arrays are
full (grow and call again from the returned position) or with a status naming what is
wrong at the returned position. Never raise. The arrays come as one ``Datagrams``; a pcapng's
interfaces as one ``Interfaces``.
"""

from collections import namedtuple

import numpy as np
from .jit import njit

from .prefetch import prefetch

OK = 0
NEED_ROOM = 100
CUT_HEADER = 1       # the capture ends inside a record header / block header
CUT_FRAME = 2        # the capture ends inside a record's frame / a block's body
BAD_LENGTH = 3       # a record or block length that cannot be (pcapng: < 12 or not a multiple of 4)
BAD_MAGIC = 4        # pcapng: a section header with an unknown byte-order magic
BAD_INTERFACE = 5    # pcapng: a packet naming an interface no description declared
BAD_TSRESOL = 6      # pcapng: an interface's time unit (if_tsresol) no clock has: 10^-N, N > 18,
                     # or 2^-N, N > 33 (its ns would not fit 64 bits)
MAX_TSRESOL_10 = 18
MAX_TSRESOL_2 = 33

# _classify kinds
K_UDP = 0
K_NOT_UDP = 1        # not IPv4, or not UDP
K_TRUNCATED = 2      # the frame is shorter than its headers / its UDP datagram
K_LINK = 3           # a link type other than Ethernet (1)
K_FRAGMENT = 4       # an IPv4 fragment

#: the datagram arrays, one row a datagram: time (UTC ns), destination address and port,
#: payload offset and length in the capture, record (or packet) number
Datagrams = namedtuple("Datagrams", ("ts", "ip", "port", "poff", "plen", "rec"))
#: a pcapng section's interfaces: link type and time unit (mul, shift; see ``_ns``) of each
Interfaces = namedtuple("Interfaces", ("link", "mul", "shift"))

MAX_FRAME = 1 << 18  # a frame longer than this is a corrupt length
AHEAD = 8192         # bytes prefetched ahead of the record read: each record's position comes
                     # from the one before, so without it every record waits for a miss (~400 ns)


@njit(cache=True, nogil=True, inline="always")
def _ahead(buf, pf, pos, end):
    """Prefetch the cache lines up to AHEAD bytes past ``pos``; returns the next line to fetch."""
    stop = min(pos + AHEAD, end)
    while pf < stop:
        prefetch(buf, pf)
        pf += 64
    return pf


@njit(cache=True, inline="always")
def _u16(buf, p, big):
    if big:
        return (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
    return (np.int64(buf[p + 1]) << 8) | np.int64(buf[p])


@njit(cache=True, inline="always")
def _u32(buf, p, big):
    if big:
        return ((np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16)
                | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3]))
    return ((np.int64(buf[p + 3]) << 24) | (np.int64(buf[p + 2]) << 16)
            | (np.int64(buf[p + 1]) << 8) | np.int64(buf[p]))


@njit(cache=True, nogil=True, inline="always")
def _put(out, n, t, a, pt, po, pl, r):
    """Row n of the Datagrams."""
    out.ts[n] = t
    out.ip[n] = a
    out.port[n] = pt
    out.poff[n] = po
    out.plen[n] = pl
    out.rec[n] = r


@njit(cache=True, nogil=True)
def _ns(t, mul, shift):
    """Interface time units to ns: mul > 0: t * mul; mul < 0: t // -mul; shift: t / 2**shift."""
    if shift > 0:
        return (t >> shift) * 1_000_000_000 + (((t & ((1 << shift) - 1)) * 1_000_000_000) >> shift)
    if mul > 0:
        return t * mul
    return t // (-mul)


@njit(cache=True, nogil=True)
def pcapng_datagrams(buf, pos, end, state, ifaces, kinds, out, want_ip=-1, want_port=-1):
    """Blocks of a pcapng from ``pos``, keeping the UDP datagrams of the packet blocks (as
    ``pcap_datagrams``; ``rec``: the packet's number). ``state``: [big-endian, interfaces of
    the section, blocks read, last time, packets read] (kept between calls); ``ifaces``: per
    interface of the current section its link type and time unit (see ``_ns``), filled from
    the interface descriptions (``if_tsresol``). Returns (datagrams, position, status)."""
    if_link, if_mul, if_shift = ifaces
    n = 0
    cap = len(out.ts)
    big = state[0] != 0
    pf = pos
    while pos < end:
        pf = _ahead(buf, pf, pos, end)
        if n == cap:
            return n, pos, NEED_ROOM
        if pos + 12 > end:
            return n, pos, CUT_HEADER
        if buf[pos] == 0x0A and buf[pos + 1] == 0x0D and buf[pos + 2] == 0x0D and buf[pos + 3] == 0x0A:
            magic = _u32(buf, pos + 8, False)
            if magic == 0x1A2B3C4D:
                big = False
            elif magic == 0x4D3C2B1A:
                big = True
            else:
                return n, pos, BAD_MAGIC
            state[0] = 1 if big else 0
            state[1] = 0
        btype = _u32(buf, pos, big)
        blen = _u32(buf, pos + 4, big)
        if blen < 12 or blen % 4 != 0 or blen > MAX_FRAME + 64:
            return n, pos, BAD_LENGTH
        if pos + blen > end:
            return n, pos, CUT_FRAME
        if btype == 1:                      # interface description
            i = state[1]
            if i < len(if_link):
                if_link[i] = _u16(buf, pos + 8, big)
                if_mul[i] = 1000            # default if_tsresol 6: microseconds
                if_shift[i] = 0
                p = pos + 16
                while p + 4 <= pos + blen - 4:
                    code = _u16(buf, p, big)
                    olen = _u16(buf, p + 2, big)
                    if code == 0:
                        break
                    if code == 9 and olen >= 1:
                        r = np.int64(buf[p + 4])
                        if (r & 0x7F) > (MAX_TSRESOL_2 if r & 0x80 else MAX_TSRESOL_10):
                            return n, pos, BAD_TSRESOL
                        if r & 0x80:
                            if_mul[i] = 1
                            if_shift[i] = r & 0x7F
                        elif r <= 9:
                            m = 1
                            for _ in range(9 - r):
                                m *= 10
                            if_mul[i] = m
                        else:
                            m = 1
                            for _ in range(r - 9):
                                m *= 10
                            if_mul[i] = -m
                    p += 4 + ((olen + 3) // 4) * 4
            state[1] = i + 1
        elif btype == 6 or btype == 3:       # enhanced / simple packet
            if btype == 6:
                iface = _u32(buf, pos + 8, big)
                t = (_u32(buf, pos + 12, big) << 32) | _u32(buf, pos + 16, big)
                incl = _u32(buf, pos + 20, big)
                data = pos + 28
            else:
                iface = 0
                t = -1
                incl = _u32(buf, pos + 8, big)
                if incl > blen - 16:
                    incl = blen - 16
                data = pos + 12
            if iface >= state[1] or iface >= len(if_link):
                return n, pos, BAD_INTERFACE
            if data + incl > pos + blen - 4:
                return n, pos, BAD_LENGTH
            if t >= 0:
                state[3] = _ns(t, if_mul[iface], if_shift[iface])
            state[4] += 1
            k, a, pt, po, pl = _classify(buf, data, data + incl, if_link[iface])
            kinds[k] += 1
            if k == K_UDP and (want_ip < 0 or (a == want_ip and pt == want_port)):
                # a simple packet has no time: the last one's
                _put(out, n, state[3], a, pt, po, pl, state[4])
                n += 1
        state[2] += 1
        pos += blen
    return n, pos, OK


@njit(cache=True, nogil=True, inline="always")
def _classify(buf, p, end, link):
    """(kind, destination address, port, payload offset, payload length) of the frame
    buf[p:end] (kind K_*; the rest 0 unless K_UDP)."""
    if link != 1:
        return K_LINK, 0, 0, 0, 0
    if p + 14 > end:
        return K_TRUNCATED, 0, 0, 0, 0
    et = _u16(buf, p + 12, True)
    q = p + 14
    while et == 0x8100 or et == 0x88A8:
        if q + 4 > end:
            return K_TRUNCATED, 0, 0, 0, 0
        et = _u16(buf, q + 2, True)
        q += 4
    if et != 0x0800:
        return K_NOT_UDP, 0, 0, 0, 0
    if q + 20 > end:
        return K_TRUNCATED, 0, 0, 0, 0
    if buf[q] >> 4 != 4 or buf[q + 9] != 17:
        return K_NOT_UDP, 0, 0, 0, 0
    ihl = np.int64(buf[q] & 15) * 4
    if _u16(buf, q + 6, True) & 0x3FFF:
        return K_FRAGMENT, 0, 0, 0, 0
    total = _u16(buf, q + 2, True)
    if ihl < 20 or total < ihl + 8 or q + total > end:
        return K_TRUNCATED, 0, 0, 0, 0
    u = q + ihl
    ulen = _u16(buf, u + 4, True)
    if ulen < 8 or u + ulen > q + total:
        return K_TRUNCATED, 0, 0, 0, 0
    return K_UDP, _u32(buf, q + 16, True), _u16(buf, u + 2, True), u + 8, ulen - 8


@njit(cache=True, nogil=True)
def pcap_datagrams(buf, pos, end, big, frac_ns, link, state, kinds, out, want_ip=-1, want_port=-1):
    """The records of a classic pcap from ``pos`` (after the 24-byte header; ``frac_ns``: ns
    per unit of the fraction, 1000: µs, 1: ns), keeping only the UDP datagrams (their time,
    destination, payload and record number, 1-based); ``kinds`` counts every frame by kind;
    ``state[0]``: the records read (kept between calls); ``want_ip``/``want_port`` (>= 0): keep
    only the datagrams to that destination. Returns (datagrams, position, status)."""
    n = 0
    cap = len(out.ts)
    pf = pos
    while pos < end:
        pf = _ahead(buf, pf, pos, end)
        if n == cap:
            return n, pos, NEED_ROOM
        if pos + 16 > end:
            return n, pos, CUT_HEADER
        incl = _u32(buf, pos + 8, big)
        if incl > MAX_FRAME:
            return n, pos, BAD_LENGTH
        if pos + 16 + incl > end:
            return n, pos, CUT_FRAME
        state[0] += 1
        k, a, pt, po, pl = _classify(buf, pos + 16, pos + 16 + incl, link)
        kinds[k] += 1
        if k == K_UDP and (want_ip < 0 or (a == want_ip and pt == want_port)):
            t = _u32(buf, pos, big) * 1_000_000_000 + _u32(buf, pos + 4, big) * frac_ns
            _put(out, n, t, a, pt, po, pl, state[0])
            n += 1
        pos += 16 + incl
    return n, pos, OK
