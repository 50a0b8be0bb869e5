"""A simulated venue: a SoupBinTCP server that accepts OUCH 5.0 orders, stamps their
arrival on the live path's clock, answers each (Accepted / Replaced / Canceled / Rejected,
the stamp in its Timestamp; the kernel's receive stamp where it gives one; see
:mod:`.venue_orders`) and logs them: one line per message, ``recv_ns,session,hex``, flushed as it
goes (a stopped venue leaves a complete log).

One thread serves every session from a ``selectors`` loop (epoll where there is one: no
limit on descriptor numbers). A session is closed, alone, when it breaks the protocol (a
malformed, oversized or unexpected packet, or a message that is no OUCH order), logs in with an account that is not known
(after a Login Rejected), does not log in within ``login_timeout`` seconds, sends no packet
(no message, no heartbeat) for ``idle_timeout`` seconds once logged in (SoupBinTCP's end of a
silent session; the answers sent before still go), or stops reading while more than
``max_output`` bytes of answers wait for it. Connections beyond
``max_connections`` are closed as they are accepted."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import selectors
import socket
import threading
import time
from collections import Counter

from ..checks import raise_fd_limit
from ..errors import ObookError
from . import soupbin
from .accounts import authorised, check_account, read_accounts
from .latency import Clock, now
from .net import family, hostport, recv_stamped_tcp, resolve, stamp_on
from .venue_orders import SessionOrders

log = logging.getLogger("obook")

_FD_MARGIN = 64     # descriptors kept for the log, the listening socket and the process
READ_BATCH = 256    # packets read from one session before the others are served


class _Client:
    def __init__(self, sock, number, accepted_at, orders):
        self.sock = sock
        self.orders = orders
        self.number = number
        self.framer = soupbin.Framer(soupbin.CLIENT_MAX_PACKET)
        self.logged_in = False
        self.accepted_at = accepted_at
        self.last_heard = accepted_at       # a whole packet's arrival (bytes of one are not heard)
        self.last_sent = now()
        self.sequence = 1
        self.out = bytearray()
        self.writing = False


def _drain(sock: socket.socket, most: int = 1 << 20) -> None:
    """Read and discard what has arrived on a session about to be closed (up to ``most``
    bytes: a client that keeps sending is not waited for): a close with unread bytes resets
    the connection, and the client may lose the answers sent before it."""
    try:
        while most > 0:
            data = sock.recv(1 << 16)
            if not data:
                return
            most -= len(data)
    except OSError:
        pass


class Venue:
    """Serve on ``host:port`` (port 0: a free one, see ``address``) until ``stop()`` or, with
    ``sessions``, after that many clients logged out. ``accounts``: username -> password
    (with ``username``/``password``: that one account too); none: any login is accepted.
    ``orders``: the order messages answered; ``messages``: (recv_ns, bytes) of each
    (``keep_messages``; else empty: a venue that runs for long keeps none in memory);
    ``digest()``: SHA-256 of their bytes in arrival order; ``closed``: sessions closed by the
    venue, by reason; ``rejected``: Order Rejected answers, by reason. ``max_live_orders``:
    the live orders of all sessions together (an Enter beyond is rejected). ``idle_timeout``:
    seconds a logged-in session may send nothing (no order, no heartbeat) before it is closed."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, log_path=None, username: str = "",
                 password: str = "", sessions: int | None = None, heartbeat: float = 1.0,
                 accounts: dict[str, str] | None = None, login_timeout: float = 10.0,
                 max_connections: int = 1000, max_output: int = 1 << 20, spin_us: float = 0.0,
                 keep_messages: bool = True, max_live_orders: int = 1_000_000, idle_timeout: float = 15.0):
        if not 0 <= spin_us < float("inf"):
            raise ObookError(f"venue: spin_us {spin_us!r}: a number of microseconds, 0 or more")
        self.spin_ns = int(spin_us * 1000)
        self.accounts = dict(accounts or {})
        if username:
            self.accounts[username] = password
        self.accounts = dict(check_account(u, p, "venue account") for u, p in self.accounts.items())
        self.sessions = sessions
        self.heartbeat = heartbeat
        self.login_timeout = login_timeout
        if not 0 < idle_timeout < float("inf"):
            raise ObookError(f"venue: idle_timeout {idle_timeout!r}: a number of seconds above 0")
        self.idle_timeout = idle_timeout
        self.max_output = max_output
        limit = raise_fd_limit(max_connections + _FD_MARGIN)
        self.max_connections = max(1, min(max_connections, limit - _FD_MARGIN))
        if self.max_connections < max_connections:
            log.warning("venue: at most %d connections (the descriptor limit is %d)", self.max_connections, limit)
        if host:        # a name as ``--listen`` resolves it (its IPv4 address first, else its IPv6 one)
            host = resolve(host, "venue")
        try:
            self.server = socket.create_server((host, port), family=family(host), backlog=socket.SOMAXCONN)
        except (OSError, OverflowError) as e:
            why = os.strerror(e.errno) if getattr(e, "errno", None) else e    # (create_server's adds the address)
            raise ObookError(f"venue: cannot listen on {hostport(host, port)}: {why}") from e
        self.server.setblocking(False)
        self.address = self.server.getsockname()[:2]
        try:
            self.log_path = log_path
            self.log_file = open(log_path, "w") if log_path else None
        except OSError as e:
            self.server.close()
            raise ObookError(f"venue: cannot write the log {log_path}: {e.strerror or e}") from e
        # stamps asked for on the listening socket too: Linux turns receive stamping on for
        # the machine a moment after the first socket asks (deferred work), so asking only at
        # a connection's accept could leave its first segments unstamped (stamped as read)
        stamp_on(self.server)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.server, selectors.EVENT_READ, None)
        self.messages: list[tuple[int, bytes]] = []
        self.keep_messages = keep_messages
        self.orders = 0
        self._sha = hashlib.sha256()
        self.rejected: Counter = Counter()
        self._live_limit = [max_live_orders]
        self.clients: dict[socket.socket, _Client] = {}
        self.waiting_login: dict[socket.socket, _Client] = {}    # in accept order
        self.closed: Counter = Counter()
        self.ended_sessions = 0
        self._stop = threading.Event()
        self.clock = Clock()
        self._served = 0
        self._last_sweep = 0.0
        self._accept_paused = False

    def stop(self) -> None:
        self._stop.set()

    def digest(self) -> str:
        return self._sha.hexdigest()

    def serve(self, timeout: float | None = None) -> None:
        """Run until stopped, the sessions are done, or ``timeout`` seconds; closes all. With
        ``spin_us`` the loop polls without sleeping for that long after each event (a woken
        process waits for its core, and on a virtual machine an idle core wakes slowly),
        yielding the core between polls to any other process that wants it."""
        end = None if timeout is None else time.monotonic() + timeout
        hot_until = 0
        try:
            while not self._stop.is_set():
                if self.sessions is not None and self.ended_sessions >= self.sessions:
                    break
                if end is not None and time.monotonic() > end:
                    break
                hot = self.spin_ns and now() < hot_until
                if self.step(0 if hot else 0.05):
                    hot_until = now() + self.spin_ns
                elif hot:
                    os.sched_yield()         # a process sharing the core runs first
        finally:
            self.close()

    def step(self, wait: float) -> bool:
        """Serve what is ready, waiting up to ``wait`` seconds for it; whether anything was."""
        events = self.selector.select(wait)
        for key, mask in events:
            c = key.data
            if c is None:
                self._accept()
                continue
            if mask & selectors.EVENT_READ and c.sock in self.clients:
                self._read(c)
            if mask & selectors.EVENT_WRITE and c.sock in self.clients:
                self._flush(c)
        if time.monotonic() - self._last_sweep >= 0.02:
            self._sweep()
        return bool(events)

    def _sweep(self) -> None:
        """Login and idle timeouts, server heartbeats, accepting again after running out of
        descriptors."""
        self._last_sweep = time.monotonic()
        t = now()
        for c in list(self.waiting_login.values()):
            if t - c.accepted_at <= self.login_timeout * 1e9:
                break
            self._close(c, "login timeout", "no login request in time", logging.INFO)
        for c in list(self.clients.values()):
            if not c.logged_in:
                continue
            if t - c.last_heard > self.idle_timeout * 1e9:
                self._close(c, "idle timeout", f"nothing heard for {self.idle_timeout:g} s", logging.INFO)
            elif not c.out and t - c.last_sent > self.heartbeat * 1e9:
                self._send(c, soupbin.packet(soupbin.SERVER_HEARTBEAT))
        if self._accept_paused:
            self._accept_paused = False
            self.selector.register(self.server, selectors.EVENT_READ, None)

    def _accept(self) -> None:
        for _ in range(256):
            try:
                sock, _ = self.server.accept()
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning("venue: cannot accept a connection: %s", e.strerror)
                    self.selector.unregister(self.server)       # until the next sweep
                    self._accept_paused = True
                return
            if len(self.clients) >= self.max_connections:
                if not self.closed["over the connection limit"]:
                    log.warning("venue: %d connections: closing the ones beyond", self.max_connections)
                self.closed["over the connection limit"] += 1
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stamp_on(sock)
            self._served += 1
            c = _Client(sock, self._served, now(), SessionOrders(self._live_limit, self.rejected))
            self.clients[sock] = c
            self.waiting_login[sock] = c
            self.selector.register(sock, selectors.EVENT_READ, c)

    def _read(self, c: _Client) -> None:
        """Read a session's packets one at a time (up to READ_BATCH of them, then the other
        sessions' turn): a read of no more than a packet's bytes carries the kernel stamp of
        the segment holding its last byte, so orders sent together share their segment's
        stamp and an order is never stamped with a later segment's time. The answers to what
        was read leave together, in one write after the reads."""
        try:
            self._read_packets(c)
        finally:
            if c.out and not c.writing and c.sock in self.clients:
                self._flush(c)

    def _read_packets(self, c: _Client) -> None:
        for _ in range(READ_BATCH):
            try:
                data, stamp = recv_stamped_tcp(c.sock, self.clock, c.framer.wanted())
            except BlockingIOError:
                return
            except OSError:
                data, stamp = b"", now()
            if not data:
                self._drop(c)
                return
            try:
                packets = c.framer.feed(data)
            except ObookError as e:
                self._close(c, "protocol error", str(e))
                return
            for kind, payload in packets:
                if not self._packet(c, kind, payload, stamp):
                    return

    def _packet(self, c: _Client, kind: bytes, payload: bytes, stamp: int) -> bool:
        """Handle one packet; False when the session was closed."""
        c.last_heard = stamp
        if not c.logged_in:
            if kind != soupbin.LOGIN:
                self._close(c, "protocol error", f"a {kind!r} packet before the login")
                return False
            try:
                user, pw, _session, _seq = soupbin.parse_login(payload)
            except ObookError as e:
                self._close(c, "protocol error", str(e))
                return False
            del self.waiting_login[c.sock]
            if not authorised(self.accounts, user, pw):
                self._send(c, soupbin.rejected(b"A"))
                self._close(c, "login rejected", f"username {user!r}")
                return False
            c.logged_in = True
            self._send(c, soupbin.accepted("OBOOK", c.sequence))
        elif kind == soupbin.UNSEQUENCED:
            if not self._order(c, payload, stamp):
                return False
        elif kind == soupbin.LOGOUT:
            self._drop(c)
            return False
        elif kind != soupbin.CLIENT_HEARTBEAT:
            self._close(c, "protocol error", f"an unexpected {kind!r} packet")
            return False
        return c.sock in self.clients     # a slow reader is closed as it is answered

    def _order(self, c: _Client, msg: bytes, stamp: int) -> bool:
        """Answer one order message; False when it was none (the session is closed)."""
        try:
            answer = c.orders.answer(msg, stamp, self.orders + 1)
        except ObookError as e:
            self._close(c, "protocol error", f"order message {c.sequence}: {e}")
            return False
        if self.log_file:       # logged before it is counted: a log that fails stops the venue
            try:
                self.log_file.write(f"{stamp},{c.number},{msg.hex()}\n")
                self.log_file.flush()
            except OSError as e:
                raise self._log_failed(e) from None
        self.orders += 1
        self._sha.update(msg)
        if self.keep_messages:
            self.messages.append((stamp, msg))
        self._send(c, soupbin.packet(soupbin.SEQUENCED, answer), at_once=False)
        c.sequence += 1
        return True

    def _send(self, c: _Client, data: bytes, at_once: bool = True) -> None:
        """Queue ``data``; write what the socket takes now (``at_once``; else after the reads
        in progress), the rest when it is writable."""
        if c.sock not in self.clients:
            return
        c.out += data
        c.last_sent = now()
        if at_once and not c.writing:
            self._flush(c)
        if c.sock in self.clients and len(c.out) > self.max_output:
            self._close(c, "slow reader", f"{len(c.out)} bytes of answers waiting")

    def _flush(self, c: _Client) -> None:
        try:
            sent = c.sock.send(c.out)
        except BlockingIOError:
            sent = 0
        except OSError:
            self._drop(c)
            return
        del c.out[:sent]
        if bool(c.out) != c.writing:
            c.writing = bool(c.out)
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if c.writing else 0)
            self.selector.modify(c.sock, events, c)

    def _close(self, c: _Client, why: str, detail: str, level: int = logging.WARNING) -> None:
        log.log(level, "venue: session %d closed: %s: %s", c.number, why, detail)
        self.closed[why] += 1
        _drain(c.sock)
        self._drop(c)

    def _drop(self, c: _Client) -> None:
        if self.clients.pop(c.sock, None) is not None:
            self.waiting_login.pop(c.sock, None)
            self.selector.unregister(c.sock)
            c.orders.close()
            if c.out:               # what the socket takes now (a rejection, the end of session)
                try:
                    c.sock.send(c.out)
                except OSError:
                    pass
            c.sock.close()
            if c.logged_in:
                self.ended_sessions += 1

    def close(self) -> None:
        for c in list(self.clients.values()):
            if c.logged_in:
                c.out += soupbin.packet(soupbin.END_OF_SESSION)
            self._drop(c)
        if not self._accept_paused and self.server.fileno() >= 0:
            self.selector.unregister(self.server)
        self.selector.close()
        self.server.close()
        if self.log_file:
            try:
                self.log_file.close()
            except OSError as e:
                raise self._log_failed(e) from None
            self.log_file = None

    def _log_failed(self, e: OSError) -> ObookError:
        """The error of a log the venue cannot write (a full disk): the file let go (what it
        could not take is lost), so that closing the venue does not fail on it again."""
        f, self.log_file = self.log_file, None
        with contextlib.suppress(OSError):
            f.close()
        return ObookError(f"venue: cannot write the log {self.log_path}: {e.strerror or e}")


def venue_from_options(address: tuple[str, int], log_path, sessions, username, password, accounts_path,
                       login_timeout: float, max_connections: int, spin_us: float = 0.0,
                       idle_timeout: float = 15.0) -> Venue:
    """The venue of ``obook venue``'s options: the accounts checked, and none only on a
    loopback address (an open venue on a network would take anyone's orders); it keeps no
    messages in memory (the log has them)."""
    import ipaddress

    accounts = read_accounts(accounts_path) if accounts_path is not None else {}
    if username is not None:
        user, pw = check_account(username, password, "--username/--password",
                                 " (give --password, or the environment's OBOOK_VENUE_PASSWORD)")
        if user in accounts:
            raise ObookError(f"--username {user!r} is in --accounts too")
        accounts[user] = pw
    elif password:
        raise ObookError("--password needs --username")
    if not accounts:
        host = address[0] or "0.0.0.0"
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ObookError(f"--listen {host}: a venue on a network needs --username/--password or --accounts")
    return Venue(*address, log_path=log_path, sessions=sessions, accounts=accounts, login_timeout=login_timeout,
                 max_connections=max_connections, spin_us=spin_us, keep_messages=False, idle_timeout=idle_timeout)


def read_log(path) -> list[tuple[int, bytes]]:
    """(recv_ns, message) of a venue log."""
    out = []
    with open(path) as f:
        for line in f:
            stamp, _session, hexmsg = line.rstrip("\n").split(",")
            out.append((int(stamp), bytes.fromhex(hexmsg)))
    return out
