"""MoldUDP64 packets: downstream packets and re-requests, encoded and decoded.

A downstream packet is ``Session`` (10 ASCII bytes), ``SequenceNumber`` (u64, the number of
its first message; numbers start at 1 per session), ``MessageCount`` (u16: 0 = heartbeat,
whose sequence number is the next one expected; 0xFFFF = end of session), then that many
blocks of ``MessageLength`` (u16) + one message. All big-endian. A re-request (client to the
exchange's re-request server) is ``Session``, ``SequenceNumber`` and ``RequestedMessageCount``
(u16): 20 bytes.

Pure Python: the live path (a packet at a time) uses it as is; captures are read by the numba
kernels of ``obook._kernels.mold``, which follow the same rules.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ...errors import FeedError, ObookError

#: bytes of the downstream header (and of a whole re-request)
HEADER = 20
#: MessageCount of the end-of-session packet
END_OF_SESSION = 0xFFFF
#: bytes of a session name
SESSION_LEN = 10

_HEAD = struct.Struct(">10sQH")
_LEN = struct.Struct(">H")


class MoldPacketError(FeedError):
    """A MoldUDP64 packet is truncated or malformed (``record`` is the packet's number when known)."""

    def __init__(self, reason: str, path: str = "<packet>", record: int | None = None):
        super().__init__(path, record, reason, unit="packet")


class MoldPacket(NamedTuple):
    session: bytes
    seq: int
    count: int                 # 0: heartbeat, END_OF_SESSION: end of session, else len(messages)
    messages: list[bytes]

    @property
    def heartbeat(self) -> bool:
        return self.count == 0

    @property
    def end_of_session(self) -> bool:
        return self.count == END_OF_SESSION


def session_name(session: bytes | str) -> bytes:
    """A MoldUDP64 session name as its 10 bytes (ASCII, space-padded); ObookError when it is none."""
    if isinstance(session, str):
        try:
            session = session.encode("ascii")
        except UnicodeEncodeError:
            raise ObookError(f"session {session!r}: a MoldUDP64 session is ASCII text") from None
    if len(session) > SESSION_LEN:
        raise ObookError(f"session {session.decode('ascii', 'replace')!r}: a MoldUDP64 session is at most "
                         f"{SESSION_LEN} characters, not {len(session)}")
    return bytes(session).ljust(SESSION_LEN)


def check_session(session, what: str = "--session / session=") -> str:
    """A session name given as an option (``what``): text of 1 to 10 printable ASCII
    characters, no space first or last; as given, else ``ObookError``. The field is
    left-justified and padded with spaces: a blank name, or spaces at either end, would be
    padding, not part of a name (``session_name`` encodes any, blank too)."""
    if not isinstance(session, str):
        raise ObookError(f"{what} {session!r}: a MoldUDP64 session name must be text")
    why = ("is empty" if not session else "is blank" if not session.strip() else
           "is not ASCII text" if not session.isascii() else
           f"has {len(session)} characters, more than {SESSION_LEN}" if len(session) > SESSION_LEN else
           "holds a control character" if not session.isprintable() else
           "starts or ends with a space" if session != session.strip() else None)
    if why:
        raise ObookError(f"{what} {session!r} {why}: a MoldUDP64 session is 1 to {SESSION_LEN} printable ASCII "
                         "characters, with no space first or last")
    return session


def check_session_option(session) -> str | None:
    """The ``session=`` of a live feed or loop: None (the first session heard is followed)
    or a name :func:`check_session` accepts (never cut to 10 characters)."""
    return None if session is None else check_session(session, "session=")


def encode_packet(session: bytes | str, seq: int, messages: list[bytes], *, count: int | None = None) -> bytes:
    """A downstream packet holding ``messages`` (none: a heartbeat), the first numbered ``seq``.

    ``count=END_OF_SESSION`` (with no messages) makes the end-of-session packet.
    """
    if count is None:
        count = len(messages)
    if count == END_OF_SESSION:
        if messages:
            raise ValueError("an end-of-session packet holds no messages")
    elif count != len(messages):
        raise ValueError(f"count {count} differs from the {len(messages)} messages given")
    if count >= END_OF_SESSION and count != END_OF_SESSION:
        raise ValueError("at most 65534 messages in a packet")
    parts = [_HEAD.pack(session_name(session), seq, count)]
    for m in messages:
        if len(m) > 0xFFFF:
            raise ValueError(f"a message of {len(m)} bytes does not fit a MoldUDP64 block")
        parts.append(_LEN.pack(len(m)))
        parts.append(bytes(m))
    return b"".join(parts)


def decode_packet(buf) -> MoldPacket:
    """The :class:`MoldPacket` in ``buf`` (bytes, bytearray or memoryview).

    Raises :class:`MoldPacketError` (a :class:`~obook.errors.FeedError`) on a packet shorter
    than its header, a message block running past the packet's end or of no bytes, or bytes
    left over after the counted messages.
    """
    buf = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
    n = len(buf)
    if n < HEADER:
        raise MoldPacketError(f"truncated MoldUDP64 packet: {n} bytes, the header needs {HEADER}")
    session, seq, count = _HEAD.unpack_from(buf, 0)
    if count == END_OF_SESSION or count == 0:
        if n != HEADER:
            kind = "end-of-session" if count else "heartbeat"
            raise MoldPacketError(f"{kind} packet of {n} bytes (expected {HEADER})")
        return MoldPacket(session, seq, count, [])
    messages = []
    pos = HEADER
    for i in range(count):
        if pos + 2 > n:
            raise MoldPacketError(f"truncated MoldUDP64 packet: message {i + 1} of {count} "
                                  f"(sequence {seq + i}) has no length at byte {pos} of {n}")
        (length,) = _LEN.unpack_from(buf, pos)
        if length == 0:         # no ITCH message is empty
            raise MoldPacketError(f"malformed MoldUDP64 packet: message {i + 1} of {count} "
                                  f"(sequence {seq + i}) is empty")
        if pos + 2 + length > n:
            raise MoldPacketError(f"truncated MoldUDP64 packet: message {i + 1} of {count} "
                                  f"(sequence {seq + i}) needs {length} bytes at byte {pos + 2}, "
                                  f"the packet has {n}")
        messages.append(bytes(buf[pos + 2:pos + 2 + length]))
        pos += 2 + length
    if pos != n:
        raise MoldPacketError(f"MoldUDP64 packet of {n} bytes holds {n - pos} bytes after its "
                              f"{count} messages")
    return MoldPacket(session, seq, count, messages)


def encode_request(session: bytes | str, seq: int, count: int) -> bytes:
    """A re-request for ``count`` messages from sequence number ``seq``."""
    if not 0 < count < END_OF_SESSION:
        raise ValueError(f"a re-request asks for 1 to 65534 messages, not {count}")
    return _HEAD.pack(session_name(session), seq, count)


def decode_request(buf) -> tuple[bytes, int, int]:
    """``(session, seq, count)`` of a re-request (exactly 20 bytes, else MoldPacketError)."""
    if len(buf) != HEADER:
        raise MoldPacketError(f"a MoldUDP64 re-request is {HEADER} bytes, not {len(buf)}")
    session, seq, count = _HEAD.unpack_from(buf, 0)
    return session, seq, count


__all__ = ["HEADER", "END_OF_SESSION", "SESSION_LEN", "MoldPacket", "MoldPacketError",
           "encode_packet", "decode_packet", "encode_request", "decode_request"]
