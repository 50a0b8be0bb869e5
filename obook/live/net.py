"""UDP sockets of the live path: lines (unicast or multicast, by the address) and receive
stamps from the kernel (``SO_TIMESTAMPNS``, where the platform has it)."""

from __future__ import annotations

import ipaddress
import socket
import struct

from ..errors import ObookError

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35 if hasattr(socket, "SO_REUSEPORT") else None)
_TIMESPEC = struct.Struct("@qq")
RCVBUF = 8 << 20


def parse_address(text: str, what: str = "address") -> tuple[str, int]:
    """``host:port`` (a port alone: 127.0.0.1)."""
    host, _, port = str(text).rpartition(":")
    try:
        return host or "127.0.0.1", int(port)
    except ValueError as e:
        raise ObookError(f"{what} {text!r}: give host:port") from e


def is_multicast(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False


def sender_socket(interface: str = "127.0.0.1") -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(interface))
    return s


def line_socket(host: str, port: int, interface: str = "127.0.0.1") -> tuple[socket.socket, bool]:
    """A non-blocking socket receiving a line; (socket, kernel stamps on)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        except OSError:
            pass
        if is_multicast(host):
            s.bind((host, port))
            mreq = socket.inet_aton(host) + socket.inet_aton(interface)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
        else:
            s.bind((host, port))
        stamps = False
        if SO_TIMESTAMPNS is not None:
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                stamps = True
            except OSError:
                pass
        s.setblocking(False)
        return s, stamps
    except OSError as e:
        s.close()
        raise ObookError(f"line {host}:{port}: cannot listen: {e}") from e


def recv_stamped(s: socket.socket, size: int = 65536) -> tuple[bytes, int | None, tuple]:
    """(packet, kernel receive stamp in CLOCK_REALTIME ns or None, sender address)."""
    data, anc, _flags, addr = s.recvmsg(size, 64)
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(raw)
            return data, sec * 1_000_000_000 + nsec, addr
    return data, None, addr


def stamp_on(s: socket.socket) -> bool:
    """Ask the kernel for receive stamps on a socket (UDP, or TCP: the last segment's)."""
    if SO_TIMESTAMPNS is None:
        return False
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        return True
    except OSError:
        return False


def recv_stamped_tcp(s: socket.socket, clock, size: int = 1 << 16) -> tuple[bytes, int]:
    """(bytes, monotonic receive stamp): the kernel's stamp of the data when it gives one
    (``stamp_on``), else the time the read returned."""
    from .latency import now

    data, anc, _flags, _addr = s.recvmsg(size, 64)
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(raw)
            return data, clock.from_realtime(sec * 1_000_000_000 + nsec)
    return data, now()
