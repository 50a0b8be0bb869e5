"""The compiled live path's Python side: sockets, buffers and the books set up once, then
``obook._kernels.live_loop.run`` called in time slices (Python runs between slices and for
what only it can do: growing an array, raising an error, a Python strategy's rows).

:class:`HotLoop` is the loop (lines A and B, re-requests, books, strategy, risk, OUCH to the
venue, latency histograms); :class:`RingSource` reads what it delivered as an ITCH stream
for obook's replay engine, in another thread, so that writing tables never holds the loop.
"""

from __future__ import annotations

import ctypes
import logging
import os
import socket
import threading
import time

import numpy as np

from .._kernels import live_layout as L
from .._kernels.latency import N_BUCKETS, record_many
from .._kernels.mold import N_STATS, S_BAD, S_PACKETS, S_WRONG_SESSION
from ..errors import ObookError
from .latency import Clock, Histogram, cycles_per_ns, now

log = logging.getLogger("obook")

RING_BITS = 26          # delivered bytes kept for the tables' writer (64 MiB)
RECORD_BITS = 21        # delivered records kept (2 Mi)
PY_ROWS = 4096
#: order-id pages the books start with (16 MiB): growing them stops the loop for milliseconds
#: (a 300,000-message day of 200 stocks outgrew 1,024 pages twice)
BOOK_PAGES = 1 << 14
#: the venue's unread answers: the longest SoupBinTCP packet (2 + 65535 bytes) fits behind
#: the start of another, so a read always has room and no packet is too long for it
VENUE_BUF = 1 << 17
REST_EVERY_NS = 1_000_000   # a spinning real-time loop rests (rest_us) once a millisecond
_MULT = None


def _mult() -> int:
    """ns per cycle of the cycle counter, << 24 (measured once per process)."""
    global _MULT
    if _MULT is None:
        _MULT = int(round((1.0 / cycles_per_ns(0.02)) * (1 << 24)))
    return _MULT


def _libc_functions() -> np.ndarray:
    libc = ctypes.CDLL(None, use_errno=True)
    fns = np.zeros(L.N_FNS, np.int64)
    for i, name in ((L.F_RECVMMSG, "recvmmsg"), (L.F_SEND, "send"), (L.F_POLL, "poll"),
                    (L.F_CLOCK, "clock_gettime"), (L.F_RECV, "recv"), (L.F_PPOLL, "ppoll"),
                    (L.F_ERRNO, "__errno_location")):
        fns[i] = ctypes.cast(getattr(libc, name), ctypes.c_void_p).value
    return fns


def arbitration(ring: np.ndarray, recs: np.ndarray) -> tuple:
    """The arbitration's arrays (``obook._kernels.live_arb``'s ``arb``) around the delivered
    ring ``ring`` and its records ``recs``: per-line stats, each line's next number and own
    gaps (and the numbers no line delivered), the messages held ahead of a gap, the sessions
    and packets held until one is chosen."""
    return (ring, recs, np.zeros((L.N_LINES, N_STATS), np.int64), np.full(L.N_LINES, -1, np.int64),
            np.zeros((L.N_LINES, L.GAP_SLOTS + 1, 2), np.int64), np.full(1 << L.PEND_BITS, -1, np.int64),
            np.zeros((1 << L.PEND_BITS, 3), np.int64), np.zeros((1 << L.PEND_BITS, L.PEND_SLOT), np.uint8),
            np.zeros((L.CHOICE_SESSIONS, L.C_WIDTH), np.int64),
            np.zeros((L.CHOICE_SESSIONS * L.CHOICE_HELD, L.HP_WIDTH), np.int64),
            np.zeros((L.CHOICE_SESSIONS * L.CHOICE_HELD, L.DGRAM), np.uint8))


class Receive:
    """recvmmsg's headers, datagram and control buffers for the three lines."""

    def __init__(self):
        self.pk = np.zeros((L.N_LINES, L.VLEN, L.DGRAM), np.uint8)
        self.ctl = np.zeros((L.N_LINES, L.VLEN, L.CTL), np.uint8)
        self.iov = np.zeros((L.N_LINES, L.VLEN, 2), np.int64)
        self.hdr = np.zeros((L.N_LINES, L.VLEN, 8), np.int64)      # struct mmsghdr: 64 bytes
        for line in range(L.N_LINES):
            for i in range(L.VLEN):
                self.iov[line, i] = (self.pk[line, i].ctypes.data, L.DGRAM)
                self.hdr[line, i, 2] = self.iov[line, i].ctypes.data
                self.hdr[line, i, 3] = 1
                self.hdr[line, i, 4] = self.ctl[line, i].ctypes.data
                self.hdr[line, i, 5] = L.CTL


class HotLoop:
    """Lines A and B (and the re-request socket ``req``, connected to the server or None)
    through the compiled loop. ``strategy``: a NumbaStrategy (in the loop), a Python
    callable (the slow path: its rows come back to Python) or None; ``risk``: a RiskGate;
    ``venue``: a logged-in :class:`~obook.live.gateway.Gateway` or None; ``lines``: the
    addresses of lines A and B and of the re-request server (or None), which errors name."""

    def __init__(self, socks, req, strategy=None, tickers=None, risk=None, venue=None, *,
                 lines=(None, None, None), on_gap="raise", gap_wait=0.05, request_timeout=0.2, retries=3,
                 max_request=1000,
                 spin=False, spin_us: float = 0.0, slice_s=0.05, session: str | None = None,
                 rest_us: float = 0.0):
        from ..engine.books import BookState, ExtraRows
        from .._kernels.itch import SIZES
        from ..feeds.mold.packets import check_session_option
        from .fast_strategy import OUT_SLOTS, NumbaStrategy
        from .risk import RiskGate

        check_session_option(session)
        self.clock = Clock()
        self.lines = tuple(lines)
        self.fns = _libc_functions()
        self.fds = np.full(4, -1, np.int64)
        for i, s in enumerate(socks):
            self.fds[i] = s.fileno()
        if req is not None:
            self.fds[L.LINE_REQUEST] = req.fileno()
        self.venue = venue
        if venue is not None:
            self.fds[3] = venue.sock.fileno()
        self.rx = Receive()
        fds = [int(f) for f in self.fds if f >= 0]
        self.pollfds = np.zeros((len(fds), 2), np.int32)
        self.pollfds[:, 0] = fds
        self.pollfds[:, 1] = 1          # POLLIN
        S = self.S = np.zeros(L.S_WIDTH, np.int64)
        S[L.S_NEXT] = S[L.S_HIGH] = 1
        S[L.S_END] = -1
        S[L.S_GAP_AT] = -1
        S[L.S_GAP_WAIT] = int(gap_wait * 1e9)
        S[L.S_REQ_TIMEOUT] = int(request_timeout * 1e9)
        S[L.S_RETRIES] = retries
        S[L.S_MAX_REQUEST] = max(1, min(int(max_request), 0xFFFE))
        S[L.S_ON_GAP_SKIP] = on_gap == "skip"
        S[L.S_HAVE_REQUEST] = req is not None
        S[L.S_STRICT] = on_gap == "raise"
        S[L.S_SPIN] = bool(spin)
        S[L.S_SPIN_NS] = int(max(0.0, spin_us or 0.0) * 1000)
        S[L.S_REST_NS] = int(max(0.0, rest_us) * 1000)
        S[L.S_REST_EVERY] = REST_EVERY_NS
        S[L.S_SLICE_NS] = int(slice_s * 1e9)
        S[L.S_MULT] = _mult()
        S[L.S_CLOCK_OFFSET] = self.clock.offset
        S[L.S_HEARTBEAT] = int((venue.heartbeat if venue is not None else 1.0) * 1e9)
        S[L.S_HAS_VENUE] = venue is not None
        S[L.S_LAST_VENUE] = S[L.S_LAST_PACKET] = now()
        if session is not None:
            raw = session.encode().ljust(10)[:10]
            S[L.S_SESSION_SET] = 1
            S[L.S_SESSION_HI] = int.from_bytes(raw[:8], "big", signed=True)
            S[L.S_SESSION_LO] = int.from_bytes(raw[8:], "big")
        self.risk = risk or RiskGate()
        S[L.S_MAX_QTY], S[L.S_MAX_NOTIONAL] = self.risk.max_qty, self.risk.max_notional
        S[L.S_MAX_RATE], S[L.S_BAND_BPS] = self.risk.max_orders_per_second, self.risk.band_bps
        self.strategy = strategy.fresh() if isinstance(strategy, NumbaStrategy) else strategy
        self.compiled = isinstance(self.strategy, NumbaStrategy)
        S[L.S_HAS_STRATEGY] = strategy is not None
        S[L.S_PY_STRATEGY] = strategy is not None and not self.compiled
        self.fns[L.F_STRATEGY] = self.strategy.address if self.compiled else 0
        state = self.strategy.state if self.compiled else np.zeros(1, np.int64)
        # the delivered ring and the arbitration
        ring = np.zeros(1 << RING_BITS, np.uint8)
        recs = np.zeros((4, 1 << RECORD_BITS), np.int64)          # mold seq, line, kernel, delivered
        self.arb = arbitration(ring, recs)
        self.stats_arr = self.arb[2]
        self._session_said = session is not None
        # the decoder: every locate in worker 0; subscribed instruments only when given
        if isinstance(tickers, str):
            tickers = tickers.split(",")
        names = sorted({str(t).strip() for t in tickers if str(t).strip()}) if tickers else []
        self.ticker_names = names
        wanted = np.array([int.from_bytes(n.encode().ljust(8)[:8], "big", signed=True) for n in names], np.int64)
        keep = np.zeros(1 << 16, np.uint8) if names else np.ones(1 << 16, np.uint8)
        self.sym = np.full((1 << 16, 8), 32, np.uint8)
        self.itch = (SIZES, np.zeros((8, 10), np.int64), np.zeros((8, 2), np.int64), np.zeros(1 << 16, np.uint8),
                     keep, wanted, self.sym, np.zeros(1 << 17, np.uint8))
        self.books = BookState(strict=on_gap == "raise", books=1 << 16 if not names else 1024, levels=1 << 14,
                               pages=BOOK_PAGES, overflow=1 << 10)
        x = ExtraRows()
        self.rows = np.zeros((16, 9), np.int64)
        self.extra = x
        self.window = np.zeros(max(1, self.risk.max_orders_per_second), np.int64)
        self.olog = np.zeros(1 << 24, np.uint8)
        self.refs = np.zeros((4, 1 << L.REF_BITS), np.int64)
        self.ords = (state, np.zeros(OUT_SLOTS, np.int64), self.window, np.zeros(L.OUTBOX, np.uint8), self.olog, self.refs,
                     np.zeros(VENUE_BUF, np.uint8))
        if venue is not None:       # what the login's read took beyond the Login Accepted: framed from there
            pending = bytes(venue.framer.buf)
            self.ords[6][:len(pending)] = np.frombuffer(pending, np.uint8)
            S[L.S_VBUF_N] = len(pending)
            S[L.S_VENUE_ENDED] = venue.ended
        self._closed_at_login = venue is not None and venue.ended
        self.hists = np.zeros((len(L.HISTS), N_BUCKETS + 1), np.int64)
        self.py_rows = np.zeros((PY_ROWS, L.PY_WIDTH), np.int64)
        self.gaps_out = np.zeros((L.GAPS_MAX, 4), np.int64)
        self.misc = (self.hists, self.py_rows, self.gaps_out, np.zeros((64, 2), np.int64), np.zeros(20, np.uint8),
                     np.zeros(2, np.int64))
        self.status = None
        self.py_orders = 0
        self.venue_closed_at: int | None = None     # the orders before the venue closed the connection
        self.grown: list[tuple] = []    # the books' arrays grown while running: (which, records so far)
        prefault((self.net(), self.arb, self.itch, self._bk(), self._outs(), self.ords, self.misc))
        self._warm_up()

    def _warm_up(self) -> None:
        """Load the kernels before the first packet (numba's cache: ~0.3 s): one turn of the
        loop (a zero time slice) and the tables' reader on an empty ring."""
        from .._kernels.live_arb import ring_take

        S = self.S
        slice_ns, S[L.S_SLICE_NS] = S[L.S_SLICE_NS], 0
        try:
            self.call()
        finally:
            S[L.S_SLICE_NS] = slice_ns
        ring_take(S, self.arb[0], self.arb[1], np.zeros(16, np.uint8), 1)
        if S[L.S_PY_STRATEGY]:      # what a Python strategy's rows take (loaded on the first row: ms)
            from . import soupbin, strategy  # noqa: F401

            record_many(np.zeros(N_BUCKETS + 1, np.int64), np.zeros(1, np.int64), 0)

    # -- the kernel's arguments ------------------------------------------------------------

    def _bk(self) -> tuple:
        b = self.books
        b._dstate(0)
        return (b.skips, b.lv, b.lv_free, b.lvx, b.sides, b.pool, b.seg_free, b.heaps, b.hp, b.fh, b.pages,
                b.page_dir, b.page_live, b.page_key, b.page_free, b.ov_key, b.ov_val, b.ov_state, b.qn, b.pnode,
                b.ovnode, b.dstate, b.cage, b.held, b.st)

    def _outs(self) -> tuple:
        x = self.extra
        return (self.rows, x.trades, x.orders, x.depth, x.counts, x.snap)

    def net(self) -> tuple:
        return (self.rx.hdr, self.rx.pk, self.rx.ctl, self.pollfds)

    def call(self) -> int:
        """One call of the loop; handles what Python must and returns the RUN_* code."""
        from .._kernels.live_loop import run

        status = run(self.fns, self.fds, self.S, self.net(), self.arb, self.itch, self._bk(), self._outs(),
                     self.ords, self.misc)
        S = self.S
        if self.compiled and self.ords[1][5] != 0:      # the numba strategy returned what is no order
            from ..errors import StrategyError
            from .fast_strategy import not_an_order

            loc, kind, side = (int(v) for v in self.ords[1][5:8])
            raise StrategyError(f"strategy on {self.symbol(loc - 1)}: {not_an_order(kind, side)}")
        if not self._session_said and S[L.S_SESSION_SET]:
            self._say_session()
        if self.venue_closed_at is None and self.venue is not None and S[L.S_VENUE_ENDED]:
            self._venue_closed()
        if status == L.RUN_NEED_ROOM:
            from .._kernels import book as K

            room = int(S[L.S_NEED_ROOM])
            self.grown.append((room, int(S[L.S_W_REC])))
            if room == K.ROOM_ROWS:
                self.rows = np.zeros((self.rows.shape[0] * 2, 9), np.int64)
            else:
                self.books.grow(room)
            prefault((self._bk(), self._outs()))
        elif status == L.RUN_PY_ROWS:
            self._python_rows()
        elif status == L.RUN_GIVE_UP:
            from .feed import lost_on_both_lines

            raise lost_on_both_lines(int(S[L.S_GIVEUP_FIRST]), int(S[L.S_GIVEUP_COUNT]),
                                     int(S[L.S_RETRIES]) if S[L.S_HAVE_REQUEST] else None)
        elif status == L.RUN_BOOK_ERROR:     # the reason as a replay of the same message gives it
            from ..feeds.itch.decoder import describe_error

            raise self._refused(describe_error(int(S[L.S_BOOK_ERROR]), self.itch[1][int(S[L.S_ERROR_EVENT])]))
        elif status == L.RUN_MALFORMED:
            t, ln = int(S[L.S_BAD_TYPE]), int(S[L.S_BAD_LEN])
            raise self._refused("malformed frame: length 0" if t < 0 else
                                f"malformed frame: type {chr(t)!r} needs {int(self.itch[0][t])} bytes, frame has {ln}")
        elif status == L.RUN_VENUE_LOST:
            if S[L.S_VENUE_BAD]:
                raise self._venue_unframed()
            raise self._venue_lost()
        return status

    def _venue_closed(self) -> None:
        """The venue ended the session or closed the connection (the loop sends it nothing
        more): said once, its socket out of the loop's poll."""
        from .gateway import say_closed

        self.venue_closed_at = int(self.S[L.S_ORDERS])
        self.pollfds[self.pollfds[:, 0] == self.fds[3], 0] = -1      # (poll passes over a negative fd)
        if not self._closed_at_login:       # (the gateway said it)
            say_closed(self.venue.where)

    def _venue_lost(self) -> ObookError:
        """The error of an order the loop could not send: the send()'s errno in the words of
        the Python path's (a buffer that stayed full: said so)."""
        err = int(self.S[L.S_SEND_ERRNO])
        why = ("" if err == 0 else ": its send buffer stayed full" if err in L.RETRY_ERRNOS
               else f": {os.strerror(err)}")
        return ObookError(f"venue {self.venue.where}: connection lost (an order could not be sent{why})")

    def _venue_unframed(self) -> ObookError:
        """The error of the packet the loop could not frame, at the front of its buffer for
        the venue: in the gateway's words (the answers before it were read)."""
        from .soupbin import Framer

        try:
            Framer().feed(bytes(self.ords[6][:int(self.S[L.S_VBUF_N])]))
        except ObookError as e:
            return ObookError(f"venue {self.venue.where}: {e}")
        return ObookError(f"venue {self.venue.where}: a packet that cannot be framed")

    def skipped(self) -> dict[str, int]:
        """What a tolerant loop skipped, by reason: messages shorter than their type and
        messages its books refused (as a replay's ``skipped``)."""
        from .._kernels.layout import BOOK_ERROR_NAMES

        counts = {"malformed frame": int(self.S[L.S_MALFORMED])}
        for code, name in BOOK_ERROR_NAMES.items():
            counts[name] = counts.get(name, 0) + int(self.books.skips[code])
        return {k: n for k, n in counts.items() if n}

    def _refused(self, reason: str):
        """The FeedError of the message the loop refused (S_H_REC, S_ERROR_SEQ): its line,
        session and sequence number, and ``reason``."""
        from .feed import message_error

        S = self.S
        found = self.message_of(int(S[L.S_H_REC]))
        line = found[1] if found is not None and found[0] == S[L.S_ERROR_SEQ] else None
        return message_error(reason, int(S[L.S_ERROR_SEQ]), line, self.lines, self.session())

    def message_of(self, record: int) -> tuple[int, int] | None:
        """The MoldUDP64 sequence number and line (0 A, 1 B, 2 re-request) of delivered record
        ``record``; None for one not delivered or no longer in the ring."""
        recs = self.arb[1]
        if not 1 <= record <= int(self.S[L.S_W_REC]):
            return None
        i = record & (recs.shape[1] - 1)
        seq, line = int(recs[0, i]), int(recs[1, i])
        if int(self.S[L.S_W_REC]) - record >= recs.shape[1]:      # its slot written again meanwhile
            return None
        return seq, line

    def session(self) -> str | None:
        """The MoldUDP64 session followed (given or chosen), None before one is."""
        S = self.S
        if not S[L.S_SESSION_SET]:
            return None
        from ..feeds.mold.sessions import session_bytes

        return session_bytes(S[L.S_SESSION_HI], S[L.S_SESSION_LO]).decode("ascii", "replace").rstrip()

    def _say_session(self) -> None:
        self._session_said = True
        wrong = int(self.stats_arr[:, S_WRONG_SESSION].sum())
        if wrong:
            log.warning("MoldUDP64: following session %r; %d packets of other sessions ignored", self.session(), wrong)

    def _heard(self) -> int:
        """Packets of the session followed (or, before one is, any well-formed one)."""
        st = self.stats_arr
        return int(st[:, S_PACKETS].sum() - st[:, S_WRONG_SESSION].sum() - st[:, S_BAD].sum())

    def run(self, idle_timeout: float | None = None, until=None) -> int:
        """Call the loop until the end of session, a stop, or ``until()`` turns true. With
        ``idle_timeout``, an ObookError after that many seconds without a packet of the
        session (packets of other sessions keep no session alive)."""
        heard, heard_at = self._heard(), int(self.S[L.S_LAST_PACKET])
        while True:
            status = self.call()
            if status in (L.RUN_END, L.RUN_STOPPED):
                self.status = status
                return status
            if until is not None and until():
                return status
            if idle_timeout is not None:
                if self._heard() != heard:
                    heard, heard_at = self._heard(), int(self.S[L.S_LAST_PACKET])
                if now() - heard_at > idle_timeout * 1e9:
                    from .feed import idle_error

                    raise idle_error(idle_timeout, int(self.S[L.S_NEXT]), self.session(),
                                     int(self.stats_arr[:, S_WRONG_SESSION].sum()))

    def stop(self) -> None:
        self.S[L.S_STOP] = 1

    # -- the Python strategy (slow path) -----------------------------------------------------

    def symbol(self, locate: int) -> str:
        return bytes(self.sym[locate]).decode("ascii", "replace").rstrip()

    def tickers_missing(self) -> list[str]:
        """The subscribed tickers that no stock directory message so far named."""
        found = {self.symbol(int(loc)) for loc in np.flatnonzero(self.itch[4])} if self.ticker_names else set()
        return [t for t in self.ticker_names if t not in found]

    def _python_rows(self) -> None:
        from . import soupbin
        from .strategy import Top, bad_order, call_strategy, encoded

        S, rows, h = self.S, self.py_rows, self.hists
        n = int(S[L.S_PY_N])
        strat, risk, gate = [], [], []
        for q in range(n):
            seq, t, loc, bpx, bq, tk, apx, aq, tb = (int(v) for v in rows[q])
            top = Top(seq, t, self.symbol(loc), loc, None if bpx < 0 else bpx, None if bq < 0 else bq,
                      None if apx < 0 else apx, None if aq < 0 else aq, {"recv": tk, "book": tb})
            orders = call_strategy(self.strategy, top)
            t1 = now()
            strat.append(t1 - tb)
            for o in orders:
                try:
                    reason = self.risk.check(o, top.bid_px, top.ask_px, t)
                except (TypeError, ValueError) as e:        # a field of the wrong type
                    raise bad_order(o, top, e) from e
                t2 = now()
                risk.append(t2 - t1)
                t1 = t2
                if reason is not None:
                    continue
                msg = encoded(o, top)
                lb = int(S[L.S_LOG_BYTES])
                if lb + len(msg) <= len(self.olog):
                    self.olog[lb:lb + len(msg)] = np.frombuffer(msg, np.uint8)
                    S[L.S_LOG_BYTES] = lb + len(msg)
                else:
                    S[L.S_LOG_FULL] += 1
                S[L.S_ORDERS] += 1
                self.py_orders += 1
                if S[L.S_HAS_VENUE]:        # (not after the venue closed the connection)
                    i = o.ref & (self.refs.shape[1] - 1)
                    t3 = now()
                    if self.refs[0, i] != o.ref or self.refs[1, i] == 0:    # a ref's first order's stamps
                        self.refs[:, i] = (o.ref, t3, tk, 0)
                    try:
                        self.venue.sock.sendall(soupbin.packet(soupbin.UNSEQUENCED, msg))
                    except OSError as e:        # the venue went away (the compiled path says so too)
                        raise ObookError(f"venue {self.venue.where}: connection lost (an order could not "
                                         f"be sent: {e.strerror or e})") from e
                    S[L.S_LAST_VENUE] = t3
                    gate.append(t3 - t2)
                t1 = now()
        for k, v in ((L.H_STRATEGY, strat), (L.H_RISK, risk), (L.H_GATEWAY, gate)):
            if v:
                a = np.asarray(v, np.int64)
                record_many(h[k], a, len(a))
        S[L.S_PY_N] = 0

    # -- after the session -------------------------------------------------------------------

    def finish_venue(self, wait: float = 5.0) -> None:
        """Read the venue's answers until every order has one (or ``wait`` s), log out."""
        from .._kernels.live_orders import answers
        from . import soupbin

        if self.venue is None:
            return
        S = self.S
        sock = self.venue.sock
        end = time.monotonic() + wait
        try:
            while (S[L.S_ANSWERS] < S[L.S_ORDERS] and not S[L.S_VENUE_ENDED] and not S[L.S_VENUE_BAD]
                   and time.monotonic() < end):
                sock.settimeout(max(0.001, min(0.05, end - time.monotonic())))
                vbuf = self.ords[6]
                n = int(S[L.S_VBUF_N])
                try:
                    data = sock.recv(len(vbuf) - n)        # (whole packets leave the buffer each turn)
                except (socket.timeout, BlockingIOError):
                    continue
                if not data:
                    break
                vbuf[n:n + len(data)] = np.frombuffer(data, np.uint8)
                S[L.S_VBUF_N] = n + len(data)
                answers(S, vbuf, self.refs, self.hists)
            sock.sendall(soupbin.packet(soupbin.LOGOUT))
        except OSError:
            pass
        finally:
            sock.close()

    def order_log(self) -> bytes:
        """Every OUCH message sent (or kept, without a venue), in order."""
        return bytes(self.olog[:int(self.S[L.S_LOG_BYTES])])

    def messages(self) -> list[bytes]:
        """The order log cut into its OUCH messages."""
        from .ouch import SIZES

        log, out, p = self.order_log(), [], 0
        while p < len(log):
            n = SIZES[log[p:p + 1]]
            out.append(log[p:p + n])
            p += n
        return out

    def digest(self) -> str:
        import hashlib

        return hashlib.sha256(self.order_log()).hexdigest()

    def histograms(self) -> list[Histogram]:
        out = []
        for i, name in enumerate(L.HISTS):
            h = Histogram(name)
            h.counts[:] = self.hists[i]
            out.append(h)
        return out

    def refused(self) -> dict:
        if not self.compiled:
            return dict(self.risk.refused)
        return {name: int(self.S[L.S_REFUSED_RATE + i]) for i, name in enumerate(L.REFUSED)
                if self.S[L.S_REFUSED_RATE + i]}


class RingSource:
    """The loop's delivered messages as an ITCH stream (``readinto``, whole messages) for
    obook's replay engine, in another thread than the loop's. ``done()``: the loop is over
    (the rest is read, then the end); it raises the loop's error if it had one."""

    partial_reads = True

    def __init__(self, loop: HotLoop, done, name: str = "<live>"):
        self.loop = loop
        self.done = done
        self.name = name        # how the replay's warnings name the stream (the listener: its lines)
        self.empty_reason = "nothing received"      # what the replay's warning of no records says
        self.wake = threading.Event()

    def readinto(self, view) -> int:
        from .._kernels.live_arb import ring_take

        S = self.loop.S
        ring, recs = self.loop.arb[0], self.loop.arb[1]
        out = np.frombuffer(view, np.uint8)
        tmp = None if out.flags.writeable else np.empty(len(out), np.uint8)
        while True:
            if S[L.S_T_LAPPED]:
                raise ObookError(f"live tables: the table writer fell more than {len(ring) >> 20} MiB "
                                 f"({recs.shape[1]} messages) behind the feed; the tables stop before "
                                 f"message {int(S[L.S_T_LAPPED])} (the books and the strategy go on)")
            n, k = ring_take(S, ring, recs, out if tmp is None else tmp, 1 << 16)
            if k:
                if tmp is not None:
                    view[:n] = tmp[:n].tobytes()
                S[L.S_T_BYTE] += n
                S[L.S_T_REC] += k
                return n
            finished = self.done()
            if finished and S[L.S_T_REC] >= S[L.S_W_REC]:
                return 0
            self.wake.wait(0.001)
            self.wake.clear()

    def record_columns(self, seq: np.ndarray) -> list:
        """mold_seq, line and ts_recv (kernel stamp, UTC) of delivered records."""
        import pyarrow as pa

        from ..feeds.mold.side import RECORD_FIELDS
        from .feed import LINE_LETTERS

        recs = self.loop.arb[1]
        idx = np.asarray(seq, np.int64) & (recs.shape[1] - 1)
        letters = pa.array(LINE_LETTERS, RECORD_FIELDS[1].type)
        return [pa.array(recs[0, idx].astype(np.uint64)), letters.take(pa.array(recs[1, idx])),
                pa.array(recs[2, idx] + self.loop.clock.offset, RECORD_FIELDS[2].type)]


def prefault(arrays) -> None:
    """Map every page of the loop's arrays (nested tuples) writable now, contents unchanged
    (``madvise(MADV_POPULATE_WRITE)``, Linux 5.14+; elsewhere nothing), so that the loop meets
    no first-touch page fault: np.zeros maps its pages on their first write."""
    if isinstance(arrays, tuple):
        for a in arrays:
            prefault(a)
        return
    if isinstance(arrays, np.ndarray) and arrays.nbytes >= _PAGE and arrays.flags.writeable:
        start = arrays.ctypes.data & ~(_PAGE - 1)
        end = arrays.ctypes.data + arrays.nbytes
        _madvise()(ctypes.c_void_p(start), ctypes.c_size_t(end - start), 23)     # MADV_POPULATE_WRITE


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_MADVISE = []


def _madvise():
    if not _MADVISE:
        libc = ctypes.CDLL(None, use_errno=True)
        _MADVISE.append(libc.madvise)
    return _MADVISE[0]


def given(option: str, value) -> str:
    """An option as the user gave it: ``--cpu 4`` (a command's option) or ``cpu=4`` (a
    keyword argument: ``option`` ends with ``=``)."""
    return f"{option}{value!r}" if option.endswith("=") else f"{option} {value}"


def realtime(priority: int, option: str = "--realtime") -> None:
    """Run the calling thread under SCHED_FIFO at ``priority`` (0: leave it); errors name ``option``."""
    if priority:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(priority)))
        except (OSError, ValueError, TypeError, OverflowError) as e:
            raise ObookError(f"{given(option, priority)}: cannot run at that SCHED_FIFO priority: {e}") from e


def check_realtime(priority: int, option: str = "--realtime") -> None:
    """The ObookError :func:`realtime` would raise for ``priority``, raised now (0: nothing):
    SCHED_FIFO is tried in a thread that ends at once, so the caller's thread is left as it
    was and an option the machine refuses is refused before anything is opened."""
    if not priority:
        return
    refused = []

    def probe() -> None:
        try:
            realtime(priority, option)
        except ObookError as e:
            refused.append(e)

    t = threading.Thread(target=probe, name="obook-realtime-probe")
    t.start()
    t.join()
    if refused:
        raise refused[0]


def check_cpu(cpu: int | None, option: str = "--cpu") -> None:
    """ObookError naming ``option`` unless ``cpu`` is None or a core this process may run on."""
    if cpu is None or not hasattr(os, "sched_getaffinity"):
        return
    whole = isinstance(cpu, (int, np.integer)) and not isinstance(cpu, (bool, np.bool_))
    if not whole or int(cpu) not in os.sched_getaffinity(0):
        raise ObookError(f"{given(option, cpu)}: cannot pin to that core (this process may run on cores "
                         f"{', '.join(map(str, sorted(os.sched_getaffinity(0))))})")


def pin(cpu: int | None, option: str = "--cpu", checked: bool = False) -> None:
    """Pin the calling thread to ``cpu`` (None: leave it); errors name ``option``. ``checked``:
    ``check_cpu`` passed before (a thread started by a pinned one may move to any core of
    the process, not only those of its starter)."""
    if not checked:
        check_cpu(cpu, option)
    if cpu is not None:
        try:
            os.sched_setaffinity(0, {int(cpu)})
        except (OSError, ValueError, OverflowError) as e:
            raise ObookError(f"{given(option, cpu)}: cannot pin to that core: {e}") from e
