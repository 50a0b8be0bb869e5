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


def distinct_addresses(addresses: dict) -> None:
    """An ObookError when two of ``addresses`` (option -> (host, port)) are one: one socket
    would get the datagrams of both."""
    seen: dict = {}
    for option, address in addresses.items():
        if address in seen:
            raise ObookError(f"{option} {address[0]}:{address[1]} is {seen[address]}'s address too; "
                             "give each line and the re-request server its own")
        seen[address] = option


def parse_address(text: str, what: str = "address", port_zero: bool = True, ipv6: bool = True) -> tuple[str, int]:
    """``host:port`` or ``[IPv6]:port`` (a port alone: 127.0.0.1); a host name is resolved to
    its address (IPv4 first). ``port_zero``: whether port 0 (the system picks one) may be
    given; not where the address is where to send, or where the other side sends to.
    ``ipv6``: whether an IPv6 address may be the answer; not on the UDP lines, IPv4 only."""
    text = str(text)
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            raise ObookError(f"{what} {text!r}: give host:port or [IPv6 address]:port")
        port = port[1:]
    else:
        host, _, port = text.rpartition(":")
        if ":" in host:
            raise ObookError(f"{what} {text!r}: an IPv6 address goes in brackets: [{host}]:{port}")
    try:
        host, port = host or "127.0.0.1", int(port)
    except ValueError as e:
        raise ObookError(f"{what} {text!r}: give host:port") from e
    if not 0 <= port <= 65535:
        raise ObookError(f"{what} {text!r}: a port is {0 if port_zero else 1} to 65535")
    if port == 0 and not port_zero:
        raise ObookError(f"{what} {text!r}: give the port (1 to 65535); port 0 is none the other side can know")
    host = resolve(host, f"{what} {text!r}")
    if not ipv6:
        ipv4_only((host, port), f"{what} {text!r}")
    return host, port


def ipv4_only(address, what: str) -> None:
    """An ObookError when ``address`` (host, port) is an IPv6 one: the UDP lines and the
    re-request server are IPv4 only (the sending loop builds IPv4 addresses, lines join IPv4
    multicast groups)."""
    if address is not None and ":" in str(address[0]):
        raise ObookError(f"{what}: IPv4 only (the UDP lines and the re-request server take no IPv6 "
                         f"address, and {address[0]} is one)")


def resolve(host: str, what: str) -> str:
    """``host``'s address: itself when it is one, else the name's IPv4 address, or its IPv6
    one when it has none."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        raise ObookError(f"{what}: unknown host {host!r} ({getattr(e, 'strerror', None) or e})") from None
    found.sort(key=lambda info: info[0] != socket.AF_INET)
    return found[0][4][0]


def hostport(host: str, port: int) -> str:
    """``host:port`` as a user gives it: an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def family(host: str) -> int:
    """The socket family of an address (an IPv6 one has a colon)."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def is_multicast(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False


def _multicast_on(s: socket.socket, interface: str) -> None:
    """Multicast of ``s`` goes out on ``interface``; an ObookError when it is no local IPv4 address."""
    try:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(interface))
    except OSError as e:
        raise ObookError(f"--interface {interface!r}: not the IPv4 address of a local interface "
                         f"({e.strerror or e})") from None


def check_interface(interface: str) -> None:
    """An ObookError when ``interface`` is not the IPv4 address of a local interface (what a
    multicast line is joined on), for unicast lines too: a wrong one is not ignored."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        _multicast_on(s, interface)


def sender_socket(interface: str = "127.0.0.1") -> socket.socket:
    """A UDP socket sending multicast on ``interface`` (a local IPv4 address): anything else
    raises ObookError naming it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        _multicast_on(s, interface)
    except BaseException:
        s.close()
        raise
    return s


def line_socket(host: str, port: int, interface: str = "127.0.0.1", name: str = "line") -> tuple[socket.socket, bool]:
    """A non-blocking socket receiving a line; (socket, kernel stamps on). IPv4 only. An
    ObookError names the line (``name``: "line A") and the reason."""
    ipv4_only((host, port), f"line {hostport(host, port)}")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        except OSError:
            pass
        if is_multicast(host):
            # several receivers of one group on a host; on a unicast address a second socket
            # would take the datagrams from the first, which would wait in silence
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
        raise ObookError(f"{name} {host}:{port}: cannot listen: {e.strerror or e}") from e


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


SO_ATTACH_FILTER = 26       # Linux: a classic BPF program run on each datagram before it is queued
SO_MEMINFO = 55             # Linux: the socket's memory counters; index 8 counts the datagrams dropped
_UDP = 8                    # a UDP socket's filter sees the datagram from its UDP header


def _mold_program() -> list[tuple[int, int, int, int]]:
    """A classic BPF program keeping the datagrams whose MoldUDP64 header holds together as
    the live loop checks it (20 bytes at least; a heartbeat or end of session exactly 20; a
    sequence number from 1 below 2**63; the first two message blocks inside the datagram,
    ending it exactly when there are no more): the rest never reaches the socket's queue.
    It drops nothing the loop would take (a packet it keeps may still be refused there)."""
    U = _UDP
    prog, fix = [], []

    def op(code, k=0, jt=None, jf=None):         # jt / jf: a label, or None for the next one
        fix.append((len(prog), jt, jf))
        prog.append([code, 0, 0, k])

    LD_LEN, LD_W, LD_H, LD_H_X, LD_M, LDX_M, ST = 0x80, 0x20, 0x28, 0x48, 0x60, 0x61, 0x02
    ADD_K, ADD_X, RET = 0x04, 0x0C, 0x06
    JEQ, JGE, JGT_X, JEQ_X, JSET = 0x15, 0x35, 0x2D, 0x1D, 0x45
    op(LD_LEN)
    op(JGE, U + 20, None, "drop")
    op(ST, 0)                                      # M0 = datagram length
    op(LD_W, U + 10)                               # sequence number: high half
    op(JSET, 0x80000000, "drop", None)
    op(JEQ, 0, None, "seq_ok")
    op(LD_W, U + 14)
    op(JEQ, 0, "drop", "seq_ok")
    fix.append(("seq_ok", len(prog)))
    op(LD_H, U + 18)                               # count
    op(ST, 1)
    op(JEQ, 0, "empty", None)
    op(JEQ, 0xFFFF, "empty", None)
    op(LDX_M, 0)
    op(LD_H, U + 20)                               # first block's length (beyond the datagram: dropped)
    op(ADD_K, U + 22)
    op(JGT_X, 0, "drop", None)                     # its end past the datagram's
    op(ST, 2)                                      # M2 = where the blocks read so far end
    op(LD_M, 1)
    op(JEQ, 1, "exact", None)
    op(LDX_M, 2)
    op(LD_H_X, 0)                                  # second block's length
    op(ADD_X)
    op(ADD_K, 2)
    op(LDX_M, 0)
    op(JGT_X, 0, "drop", None)
    op(ST, 2)
    op(LD_M, 1)
    op(JEQ, 2, "exact", None)
    op(LD_M, 2)                                    # three blocks or more: the third's length field fits
    op(ADD_K, 2)
    op(JGT_X, 0, "drop", "keep")
    fix.append(("exact", len(prog)))
    op(LD_M, 2)
    op(LDX_M, 0)
    op(JEQ_X, 0, "keep", "drop")
    fix.append(("empty", len(prog)))
    op(LD_M, 0)
    op(JEQ, U + 20, "keep", "drop")
    fix.append(("keep", len(prog)))
    op(RET, 0xFFFFFFFF)
    fix.append(("drop", len(prog)))
    op(RET, 0)
    labels = {f[0]: f[1] for f in fix if isinstance(f[0], str)}
    for at, jt, jf in (f for f in fix if not isinstance(f[0], str)):
        for slot, target in ((1, jt), (2, jf)):
            if target is not None:
                prog[at][slot] = labels[target] - at - 1
    return [tuple(i) for i in prog]


def mold_filter(s: socket.socket) -> bool:
    """Attach the MoldUDP64 header filter (``_mold_program``) to a line's socket: garbage is
    dropped by the kernel before it is queued, counted in ``kernel_drops``. False where the
    platform has no socket filters (the loop still screens every datagram)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    prog = _mold_program()
    code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in prog))
    fprog = struct.pack("HL", len(prog), ctypes.addressof(code))
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)     # the kernel copies the program
        return True
    except OSError:
        return False


def kernel_drops(s: socket.socket) -> int | None:
    """Datagrams the kernel dropped on this socket (by its filter, or a full receive buffer);
    None where it does not say."""
    try:
        raw = s.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 9 * 4)
    except OSError:
        return None
    return struct.unpack("9I", raw[:36])[8] if len(raw) >= 36 else None
