"""SoupBinTCP 4.0 framing: packets of a big-endian u16 length (of type + payload)
and a type byte. Client → server: 'L' login request, 'U' unsequenced data, 'R' client
heartbeat, 'O' logout request. Server → client: 'A' login accepted, 'J' login rejected,
'S' sequenced data, 'H' server heartbeat, 'Z' end of session."""

from __future__ import annotations

import struct

from ..errors import ObookError

LOGIN, ACCEPTED, REJECTED = b"L", b"A", b"J"
UNSEQUENCED, SEQUENCED = b"U", b"S"
CLIENT_HEARTBEAT, SERVER_HEARTBEAT = b"R", b"H"
LOGOUT, END_OF_SESSION = b"O", b"Z"

_LEN = struct.Struct(">H")


def packet(kind: bytes, payload: bytes = b"") -> bytes:
    return _LEN.pack(len(payload) + 1) + kind + payload


def _field(text: str, width: int, right: bool = False) -> bytes:
    raw = text.encode("ascii")
    if len(raw) > width:
        raise ObookError(f"SoupBinTCP field {text!r} is longer than {width} characters")
    return raw.rjust(width) if right else raw.ljust(width)


def login(username: str, password: str, session: str = "", sequence: int = 1) -> bytes:
    """'L': username (6), password (10), requested session (10, blank: the current one),
    requested sequence number (20, ASCII, right-justified)."""
    return packet(LOGIN, _field(username, 6) + _field(password, 10) + _field(session, 10, True)
                  + _field(str(sequence), 20, True))


def parse_login(payload: bytes) -> tuple[str, str, str, int]:
    if len(payload) != 46:
        raise ObookError(f"SoupBinTCP login request of {len(payload)} bytes (46 expected)")
    text = payload.decode("ascii", "replace")
    seq = text[26:46].strip()
    return text[:6].strip(), text[6:16].strip(), text[16:26].strip(), int(seq) if seq.isdigit() else 0


def accepted(session: str, sequence: int) -> bytes:
    """'A': session (10), sequence number of the next sequenced message (20)."""
    return packet(ACCEPTED, _field(session, 10, True) + _field(str(sequence), 20, True))


#: a Login Rejected's reason codes
REJECT_REASONS = {b"A": "not authorized", b"S": "session not available"}


def rejected(reason: bytes = b"A") -> bytes:
    """'J': 'A' not authorized, 'S' session not available."""
    return packet(REJECTED, reason)


def reject_reason(payload: bytes) -> str:
    """A Login Rejected's reason in words, its code after it."""
    code = payload.decode("ascii", "replace")
    return f"{REJECT_REASONS[payload]} ({code})" if payload in REJECT_REASONS else f"reason {code!r}"


#: the longest packet a client sends (a login: 47 bytes; OUCH order messages are shorter)
CLIENT_MAX_PACKET = 256


class Framer:
    """Cuts a TCP byte stream into (type, payload) packets as they complete; a packet whose
    length field is 0 or above ``max_packet`` raises ``ObookError`` (the stream cannot be
    framed any further) once the packets before it were returned."""

    def __init__(self, max_packet: int = 0xFFFF):
        self.buf = bytearray()
        self.max_packet = max_packet

    def feed(self, data: bytes) -> list[tuple[bytes, bytes]]:
        self.buf += data
        out = []
        pos = 0
        buf = self.buf
        while len(buf) - pos >= 2:
            (n,) = _LEN.unpack_from(buf, pos)
            if n == 0 or n > self.max_packet:
                if out:         # the packets before it first; the next call raises
                    break
                raise ObookError(f"SoupBinTCP packet of length {n} " + (
                    "(no type byte)" if n == 0 else f"(at most {self.max_packet} expected)"))
            if len(buf) - pos - 2 < n:
                break
            out.append((bytes(buf[pos + 2:pos + 3]), bytes(buf[pos + 3:pos + 2 + n])))
            pos += 2 + n
        del buf[:pos]
        return out

    @property
    def pending(self) -> int:
        return len(self.buf)

    def wanted(self) -> int:
        """Bytes that complete the next packet (its length field first): a reader that takes
        no more than this gets each packet from the read that completed it."""
        have = len(self.buf)
        if have < 2:
            return 2 - have
        (n,) = _LEN.unpack_from(self.buf, 0)
        return max(1, 2 + n - have)
