"""Cboe PITCH messages and sequenced units written by hand with ``struct`` (little-endian,
no padding), and an ITCH day written as PITCH: independent of obook's PITCH layout and
generator, so the tests compare two writings of the spec."""

from __future__ import annotations

import random
import struct

UNIT = struct.Struct("<HBBI")                     # length, count, unit, sequence
TIME = struct.Struct("<BBI")                      # seconds
TIME_REF = struct.Struct("<BBIIII")               # midnight, seconds, offset, trade date
ADD_SHORT = struct.Struct("<BBIQcH6sHB")          # offset, id, side, qty, symbol, price/100, flags
ADD_LONG = struct.Struct("<BBIQcI6sQB")
ADD_EXPANDED = struct.Struct("<BBIQcI8sQB4sc")    # ... flags, participant, customer
EXECUTED = struct.Struct("<BBIQIQ")               # offset, id, qty, execution id
EXECUTED_AT_PRICE = struct.Struct("<BBIQIIQQ")    # offset, id, qty, remaining, execution id, price
REDUCE_SHORT = struct.Struct("<BBIQH")
REDUCE_LONG = struct.Struct("<BBIQI")
MODIFY_SHORT = struct.Struct("<BBIQHHB")          # offset, id, qty, price/100, flags
MODIFY_LONG = struct.Struct("<BBIQIQB")
DELETE = struct.Struct("<BBIQ")
TRADE_SHORT = struct.Struct("<BBIQcH6sHQ")        # offset, id, side, qty, symbol, price/100, execution id
TRADE_LONG = struct.Struct("<BBIQcI6sQQ")
TRADE_EXPANDED = struct.Struct("<BBIQcI8sQQ")
BREAK = struct.Struct("<BBIQ")
STATUS = struct.Struct("<BBI8sccH")               # offset, symbol, status, Reg SHO action, reserved

TYPES = {TIME: 0x20, ADD_LONG: 0x21, ADD_SHORT: 0x22, EXECUTED: 0x23, EXECUTED_AT_PRICE: 0x24,
         REDUCE_LONG: 0x25, REDUCE_SHORT: 0x26, MODIFY_LONG: 0x27, MODIFY_SHORT: 0x28, DELETE: 0x29,
         TRADE_LONG: 0x2A, TRADE_SHORT: 0x2B, BREAK: 0x2C, ADD_EXPANDED: 0x2F, TRADE_EXPANDED: 0x30,
         STATUS: 0x31, TIME_REF: 0xB1}


def msg(layout: struct.Struct, *fields) -> bytes:
    return layout.pack(layout.size, TYPES[layout], *fields)


def units(messages: list[bytes], sizes, unit: int = 1, first_seq: int = 1) -> bytes:
    """The messages in sequenced units of ``next(sizes)`` messages each."""
    out, k, seq = [], 0, first_seq
    while k < len(messages):
        part = messages[k:k + max(1, min(255, next(sizes)))]
        body = b"".join(part)
        out.append(UNIT.pack(UNIT.size + len(body), len(part), unit, seq) + body)
        seq += len(part)
        k += len(part)
    return b"".join(out)


def _short_price(price: int) -> bool:
    return price % 100 == 0 and price // 100 < 65536


def itch_as_pitch(itch: bytes, seed: int = 0):
    """An ITCH day's book messages as a PITCH day.

    Returns (pitch bytes, {ITCH message number: PITCH message number}, {ITCH ref: PITCH
    order id}, match numbers of executions ITCH does not print). Adds, executions,
    cancels, deletes and non-displayed trades become their PITCH messages (short, long
    or expanded at random where the values fit); a replace becomes a Modify Order of the
    same id without Maintain Priority; crosses (Q) and breaks (B, which name any earlier
    match) are left out. A Time message starts every second that has messages."""
    rnd = random.Random(seed)
    out: list[bytes] = [msg(TIME_REF, 1_796_014_800, 0, 0, 20261130)]
    seq_map, ids, left, hidden = {}, {}, {}, set()
    second, pos, k = -1, 0, 0
    while pos < len(itch):
        n = int.from_bytes(itch[pos:pos + 2], "big")
        m = itch[pos + 2:pos + 2 + n]
        pos += 2 + n
        k += 1
        t = chr(m[0])
        if t not in "AFECXDUP":
            continue
        ts = int.from_bytes(m[5:11], "big")
        if ts // 10**9 != second:
            second = ts // 10**9
            out.append(msg(TIME, second))
        ofs = ts % 10**9
        u32 = lambda a: int.from_bytes(m[a:a + 4], "big")  # noqa: E731
        u64 = lambda a: int.from_bytes(m[a:a + 8], "big")  # noqa: E731
        if t in "AFP":
            ref, side, shares, stock, price = u64(11), m[19:20], u32(20), m[24:32].rstrip(), u32(32)
            forms = ["expanded"] + (["long"] if len(stock) <= 6 else []) + (
                ["short"] if len(stock) <= 6 and shares < 65536 and _short_price(price) else [])
            form = rnd.choice(forms)
            if t == "P":
                match = u64(36)
                if form == "short":
                    b = msg(TRADE_SHORT, ofs, ref, side, shares, stock.ljust(6), price // 100, match)
                elif form == "long":
                    b = msg(TRADE_LONG, ofs, ref, side, shares, stock.ljust(6), price, match)
                else:
                    b = msg(TRADE_EXPANDED, ofs, ref, side, shares, stock.ljust(8), price, match)
            else:
                ids[ref] = ref
                left[ref] = shares
                if form == "short":
                    b = msg(ADD_SHORT, ofs, ref, side, shares, stock.ljust(6), price // 100, 1)
                elif form == "long":
                    b = msg(ADD_LONG, ofs, ref, side, shares, stock.ljust(6), price, 1)
                else:
                    b = msg(ADD_EXPANDED, ofs, ref, side, shares, stock.ljust(8), price, 1,
                            m[36:40] if t == "F" else b"    ", b"N")
        elif t in "EC":
            oid, shares, match = ids[u64(11)], u32(19), u64(23)
            left[oid] -= shares
            if t == "E":
                b = msg(EXECUTED, ofs, oid, shares, match)
            else:
                if m[31:32] != b"Y":
                    hidden.add(match)
                b = msg(EXECUTED_AT_PRICE, ofs, oid, shares, left[oid], match, u32(32))
        elif t == "X":
            oid, shares = ids[u64(11)], u32(19)
            left[oid] -= shares
            b = msg(REDUCE_SHORT, ofs, oid, shares) if shares < 65536 and rnd.random() < 0.5 else \
                msg(REDUCE_LONG, ofs, oid, shares)
        elif t == "D":
            b = msg(DELETE, ofs, ids.pop(u64(11)))
        else:                                             # U
            oid = ids.pop(u64(11))
            ids[u64(19)] = oid
            shares, price = u32(27), u32(31)
            left[oid] = shares
            if shares < 65536 and _short_price(price) and rnd.random() < 0.5:
                b = msg(MODIFY_SHORT, ofs, oid, shares, price // 100, 1)
            else:
                b = msg(MODIFY_LONG, ofs, oid, shares, price, 1)
        out.append(b)
        seq_map[k] = len(out)
    sizes = iter(lambda: rnd.randint(1, 40), None)
    return units(out, sizes), seq_map, _roots(itch), hidden


def _roots(itch: bytes) -> dict[int, int]:
    """ITCH ref -> the ref of the add its replaces go back to."""
    root, pos = {}, 0
    while pos < len(itch):
        n = int.from_bytes(itch[pos:pos + 2], "big")
        m = itch[pos + 2:pos + 2 + n]
        pos += 2 + n
        if m[:1] in (b"A", b"F"):
            ref = int.from_bytes(m[11:19], "big")
            root[ref] = ref
        elif m[:1] == b"U":
            old, new = int.from_bytes(m[11:19], "big"), int.from_bytes(m[19:27], "big")
            root[new] = root[old]
    return root
