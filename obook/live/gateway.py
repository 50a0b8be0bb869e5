"""The order gateway: OUCH 5.0 messages over a SoupBinTCP session (login, client
heartbeats, logout) to a venue. It keeps every message sent (``digest()``: SHA-256 of their
bytes, the orders' identity) and reads the venue's answers, whose Timestamp is the venue's
receive stamp on the shared clock: ``venue_ns[ref]``. Order Rejected answers are counted
(``rejected``), the first one's UserRefNum and reason kept (``first_rejected``,
``rejections()`` says both).

A venue that ends the session or closes the connection once logged in is said at once (one
warning naming it); the orders after it are kept (``unsent`` counts them), not sent: the
listener goes on with the market data."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import selectors
import socket
import threading
import time

from ..errors import ObookError
from . import ouch, soupbin
from .accounts import check_login_fields
from .latency import now
from .net import hostport

log = logging.getLogger("obook")


def say_closed(where: str) -> None:
    """The warning of a venue that closed the session (the Python and the compiled path's)."""
    log.warning("venue %s closed the connection: the orders from here on are not sent (the listener goes on)",
                where)


class Gateway:
    def __init__(self, host: str, port: int, username: str = "obook", password: str = "",
                 heartbeat: float = 1.0, timeout: float = 5.0):
        self.heartbeat = heartbeat
        self.timeout = timeout
        self.sent: list[bytes] = []
        self.sent_ns: dict[int, int] = {}
        self.venue_ns: dict[int, int] = {}
        self.answers = 0
        self.rejected = 0
        self.first_rejected: tuple[int, int] | None = None     # (UserRefNum, reason code)
        self.ended = False
        self.unsent = 0             # orders after the venue closed the connection
        self.logged_in = False
        self.framer = soupbin.Framer()
        self.where = hostport(host, port)
        check_login_fields(username, password)      # before connecting: nothing to log out of
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except ConnectionRefusedError as e:
            raise ObookError(f"venue {self.where}: cannot connect: connection refused (no venue listens there: "
                             f"start one first, obook venue --listen {self.where})") from e
        except OSError as e:
            raise ObookError(f"venue {self.where}: cannot connect: {e}") from e
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._readable = selectors.DefaultSelector()        # select() fails on descriptors >= 1024
        self._readable.register(self.sock, selectors.EVENT_READ)
        self._last = now()
        self._write(soupbin.login(username, password))
        self._await_login(username)

    def _await_login(self, username: str) -> None:
        end = time.monotonic() + self.timeout
        while time.monotonic() < end:
            try:
                packets = self._recv(max(0.0, end - time.monotonic()))
            except ObookError:
                self._close_socket()
                raise
            for kind, payload in packets:
                if kind == soupbin.ACCEPTED:
                    self.logged_in = True
                    if self.ended:      # its end of session read with the acceptance
                        say_closed(self.where)
                    return
                if kind == soupbin.REJECTED:
                    self._close_socket()
                    raise ObookError(f"venue {self.where} rejected the login of {username!r}: "
                                     f"{soupbin.reject_reason(payload)}")
            if self.ended:
                self._close_socket()
                raise ObookError(f"venue {self.where} closed the connection before answering the login")
        self._close_socket()
        raise ObookError(f"venue {self.where} did not answer the login within {self.timeout:g} s")

    def _write(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise ObookError(f"venue {self.where}: connection lost: {e.strerror or e}") from e
        self._last = now()

    def _recv(self, wait: float) -> list[tuple[bytes, bytes]]:
        """The packets that arrived within ``wait`` seconds; an ObookError naming the venue
        when the connection broke or what came cannot be read."""
        if not self._readable.select(wait):
            return []
        try:
            data = self.sock.recv(1 << 16)
        except OSError as e:
            raise ObookError(f"venue {self.where}: connection lost: {e.strerror or e}") from e
        if not data:
            self._closed_by_venue()
            return []
        try:
            out = self.framer.feed(data)
            for kind, payload in out:
                if kind == soupbin.SEQUENCED:
                    stamp, ref = ouch.response_stamp(payload)
                    self.venue_ns.setdefault(ref, stamp)
                    if payload[:1] == b"J":
                        reason = ouch.rejection_reason(payload)
                        self.first_rejected = self.first_rejected or (ref, reason)
                        self.rejected += 1
                    self.answers += 1
                elif kind == soupbin.END_OF_SESSION:
                    self._closed_by_venue()
            if out and self.framer.pending >= 2:
                self.framer.feed(b"")       # a packet that cannot be framed after them: said now
        except ObookError as e:
            raise ObookError(f"venue {self.where}: {e}") from e
        return out

    def _closed_by_venue(self) -> None:
        if self.logged_in and not self.ended:
            say_closed(self.where)
        self.ended = True

    def send(self, order: ouch.Order, msg: bytes | None = None) -> int:
        """Send one order (``msg``: its OUCH message when the caller encoded it already);
        returns the stamp taken as the write starts (on loopback the venue may read it
        before the write call returns). After the venue closed the connection the order is
        counted in ``unsent``, not sent."""
        msg = ouch.encode(order) if msg is None else msg
        data = soupbin.packet(soupbin.UNSEQUENCED, msg)
        t = now()
        if self.ended:
            self.unsent += 1
            return t
        self._write(data)
        self.sent.append(msg)
        self.sent_ns.setdefault(order.ref, t)
        return t

    def poll(self) -> None:
        """Read the answers that arrived; a heartbeat when idle for ``heartbeat`` seconds."""
        while not self.ended and self._recv(0.0):
            pass
        if not self.ended and now() - self._last > self.heartbeat * 1e9:
            self._write(soupbin.packet(soupbin.CLIENT_HEARTBEAT))

    @contextlib.contextmanager
    def heartbeats(self):
        """Client heartbeats from a thread while the caller cannot poll (the listener loading
        its kernels after the login: a first compile takes minutes, and a venue ends a
        session it hears nothing from). Each is one small ``send`` of its own."""
        stop = threading.Event()

        def beat():
            while not stop.wait(self.heartbeat):
                try:
                    self.sock.send(soupbin.packet(soupbin.CLIENT_HEARTBEAT))
                except OSError:     # the caller's next write says so
                    return

        th = threading.Thread(target=beat, name="obook-venue-heartbeats", daemon=True)
        th.start()
        try:
            yield self
        finally:
            stop.set()
            th.join()
            self._last = now()

    def rejections(self) -> str | None:
        """What the venue rejected, in one line naming it and the first rejection; None
        when it rejected nothing."""
        if not self.rejected:
            return None
        ref, reason = self.first_rejected
        return (f"venue {self.where}: rejected {self.rejected} order message(s); the first, UserRefNum {ref}: "
                f"{ouch.reason_text(reason)}")

    def digest(self) -> str:
        return hashlib.sha256(b"".join(self.sent)).hexdigest()

    def close(self, wait: float | None = None) -> None:
        """Wait (up to ``wait``, default the timeout) for every answer, log out, close."""
        end = time.monotonic() + (self.timeout if wait is None else wait)
        try:
            while not self.ended and self.answers < len(self.sent) and time.monotonic() < end:
                self._recv(max(0.0, min(0.05, end - time.monotonic())))
            if not self.ended:
                self._write(soupbin.packet(soupbin.LOGOUT))
        except (OSError, ObookError):
            pass
        finally:
            self._close_socket()

    def _close_socket(self) -> None:
        self._readable.close()
        self.sock.close()
