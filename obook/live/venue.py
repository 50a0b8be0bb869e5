"""A simulated venue: a SoupBinTCP server that accepts OUCH 5.0 orders, stamps their
arrival on the live path's clock, answers each (Accepted / Replaced / Canceled, the stamp in
its Timestamp; the kernel's receive stamp where it gives one) and logs them: one line per message, ``recv_ns,session,hex``, flushed as it
goes (a stopped venue leaves a complete log)."""

from __future__ import annotations

import hashlib
import logging
import select
import socket
import threading
import time

from . import ouch, soupbin
from .latency import Clock, now
from .net import recv_stamped_tcp, stamp_on

log = logging.getLogger("obook")


class _Client:
    def __init__(self, sock, number):
        self.sock = sock
        self.number = number
        self.framer = soupbin.Framer()
        self.logged_in = False
        self.last_sent = now()
        self.sequence = 1


class Venue:
    """Serve on ``host:port`` (port 0: a free one, see ``address``) until ``stop()`` or, with
    ``sessions``, after that many clients logged out. ``messages``: (recv_ns, bytes) of every
    order message received; ``digest()``: SHA-256 of their bytes in arrival order."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, log_path=None, username: str = "",
                 password: str = "", sessions: int | None = None, heartbeat: float = 1.0):
        self.server = socket.create_server((host, port))
        self.server.setblocking(False)
        self.address = self.server.getsockname()[:2]
        self.log_file = open(log_path, "w") if log_path else None
        self.username, self.password = username, password
        self.sessions = sessions
        self.heartbeat = heartbeat
        self.messages: list[tuple[int, bytes]] = []
        self.clients: dict[socket.socket, _Client] = {}
        self.ended_sessions = 0
        self._stop = threading.Event()
        self.clock = Clock()
        self._served = 0
        self._orders = 0

    def stop(self) -> None:
        self._stop.set()

    def digest(self) -> str:
        return hashlib.sha256(b"".join(m for _, m in self.messages)).hexdigest()

    def serve(self, timeout: float | None = None) -> None:
        """Run until stopped, the sessions are done, or ``timeout`` seconds; closes all."""
        end = None if timeout is None else time.monotonic() + timeout
        try:
            while not self._stop.is_set():
                if self.sessions is not None and self.ended_sessions >= self.sessions:
                    break
                if end is not None and time.monotonic() > end:
                    break
                self.step(0.05)
        finally:
            self.close()

    def step(self, wait: float) -> None:
        socks = [self.server, *self.clients]
        ready, _, _ = select.select(socks, [], [], wait)
        for s in ready:
            if s is self.server:
                self._accept()
            else:
                self._read(self.clients[s])
        t = now()
        for c in list(self.clients.values()):
            if c.logged_in and t - c.last_sent > self.heartbeat * 1e9:
                self._send(c, soupbin.packet(soupbin.SERVER_HEARTBEAT))

    def _accept(self) -> None:
        try:
            sock, _ = self.server.accept()
        except BlockingIOError:
            return
        sock.setblocking(True)
        sock.settimeout(5.0)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stamp_on(sock)
        self._served += 1
        self.clients[sock] = _Client(sock, self._served)

    def _read(self, c: _Client) -> None:
        try:
            data, stamp = recv_stamped_tcp(c.sock, self.clock)
        except OSError:
            data, stamp = b"", now()
        if not data:
            self._drop(c)
            return
        for kind, payload in c.framer.feed(data):
            if kind == soupbin.LOGIN:
                user, pw, _session, _seq = soupbin.parse_login(payload)
                if (self.username and user != self.username) or (self.password and pw != self.password):
                    self._send(c, soupbin.rejected(b"A"))
                    self._drop(c)
                    return
                c.logged_in = True
                self._send(c, soupbin.accepted("OBOOK", c.sequence))
            elif kind == soupbin.UNSEQUENCED and c.logged_in:
                self._order(c, payload, stamp)
            elif kind == soupbin.LOGOUT:
                self._drop(c)
                return

    def _order(self, c: _Client, msg: bytes, stamp: int) -> None:
        try:
            answer = ouch.response(msg, stamp, self._orders + 1)
        except Exception as e:  # noqa: BLE001 - a bad message is logged, the session goes on
            log.warning("venue: session %d: bad OUCH message %s: %s", c.number, msg.hex(), e)
            return
        self._orders += 1
        self.messages.append((stamp, msg))
        if self.log_file:
            self.log_file.write(f"{stamp},{c.number},{msg.hex()}\n")
            self.log_file.flush()
        self._send(c, soupbin.packet(soupbin.SEQUENCED, answer))
        c.sequence += 1

    def _send(self, c: _Client, data: bytes) -> None:
        try:
            c.sock.sendall(data)
            c.last_sent = now()
        except OSError:
            self._drop(c)

    def _drop(self, c: _Client) -> None:
        if self.clients.pop(c.sock, None) is not None:
            c.sock.close()
            if c.logged_in:
                self.ended_sessions += 1

    def close(self) -> None:
        for c in list(self.clients.values()):
            if c.logged_in:
                self._send(c, soupbin.packet(soupbin.END_OF_SESSION))
            self._drop(c)
        self.server.close()
        if self.log_file:
            self.log_file.close()
            self.log_file = None


def read_log(path) -> list[tuple[int, bytes]]:
    """(recv_ns, message) of a venue log."""
    out = []
    with open(path) as f:
        for line in f:
            stamp, _session, hexmsg = line.rstrip("\n").split(",")
            out.append((int(stamp), bytes.fromhex(hexmsg)))
    return out
