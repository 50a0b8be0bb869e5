"""The lines' kernel socket filter: it keeps every datagram the live loop's header check
takes (a pure-Python reference of MoldUDP64's header) and drops garbage before it is queued,
counting it."""

from __future__ import annotations

import random
import socket
import struct
import sys

import pytest

from obook.feeds.mold.packets import END_OF_SESSION, encode_packet
from obook.live.net import kernel_drops, mold_filter

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="socket filters are Linux's")


def _well_formed(d: bytes) -> bool:
    """The live loop's header check, in plain Python: 20 header bytes, a sequence number
    from 1 below 2**63, an empty packet of exactly 20 bytes, else the blocks ending the datagram."""
    if len(d) < 20:
        return False
    seq, count = struct.unpack_from(">QH", d, 10)
    if seq < 1 or seq >= 1 << 63:
        return False
    if count in (0, END_OF_SESSION):
        return len(d) == 20
    q = 20
    for _ in range(count):
        if q + 2 > len(d):
            return False
        q += 2 + struct.unpack_from(">H", d, q)[0]
        if q > len(d):
            return False
    return q == len(d)


def _datagrams() -> list[bytes]:
    rng = random.Random(3)
    msgs = [bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 11, 36, 50)))) for _ in range(40)]
    out = [encode_packet("OBOOK", 1 + i, msgs[i:i + k]) for i in range(10) for k in (1, 2, 3, 5)]
    out += [encode_packet("OBOOK", 7, []), encode_packet("OBOOK", 9, [], count=END_OF_SESSION),
            encode_packet("OBOOK", 0, msgs[:2]), encode_packet("OBOOK", 1 << 63, msgs[:1]),
            encode_packet("OBOOK", 5, []) + b"x", encode_packet("OBOOK", 5, msgs[:3]) + b"xy",
            encode_packet("OBOOK", 5, msgs[:3])[:-1], bytes(20), b"", b"x" * 19]
    for p in list(out[:40]):
        for _ in range(3):                     # one byte changed in the header or the blocks
            q = bytearray(p)
            q[rng.randrange(len(q))] ^= 1 << rng.randrange(8)
            out.append(bytes(q))
    out += [bytes([i % 251]) * (20 + i % 200) for i in range(64)]          # the benchmark's flood
    out += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(200)]
    return out


def _through(filtered: bool, datagrams: list[bytes]) -> tuple[list[bytes], int | None]:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind(("127.0.0.1", 0))
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        if filtered:
            assert mold_filter(rx)
        for d in datagrams:
            tx.sendto(d, rx.getsockname())
        tx.sendto(encode_packet("END", 1, []), rx.getsockname())          # the last one: kept
        rx.settimeout(5)
        got = []
        while True:
            d = rx.recv(4096)
            if d == encode_packet("END", 1, []):
                break
            got.append(d)
        return got, kernel_drops(rx)
    finally:
        rx.close()
        tx.close()


def test_mold_filter_keeps_every_well_formed_datagram_drops_garbage_counted():
    datagrams = _datagrams()
    good = [d for d in datagrams if _well_formed(d)]
    assert len(good) >= 40 and len(datagrams) - len(good) >= 250
    got, drops = _through(True, datagrams)
    assert [d for d in got if _well_formed(d)] == good            # all of them, in order
    assert drops == len(datagrams) - len(got)
    flood = [bytes([i % 251]) * (20 + i % 200) for i in range(64)]
    assert sum(d in got for d in flood) <= 1                     # (a zero heartbeat of 20 bytes passes)
    assert len(got) - len(good) <= 0.2 * (len(datagrams) - len(good))   # the loop screens the few left


def test_mold_filter_unfiltered_socket_gets_all_drops_none():
    datagrams = _datagrams()
    got, drops = _through(False, datagrams)
    assert got == datagrams and drops == 0
