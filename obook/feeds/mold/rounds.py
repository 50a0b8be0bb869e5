"""The lines arbitrated in rounds while the replay runs: the first batches start at once.

:class:`Rounds` reads each line's capture a piece at a time in a thread (the capture kernel
keeps the line's own datagrams, into one reused buffer a line), merges the lines' datagrams
by capture time up to the time every line has reached (line A first on equal times),
arbitrates them (first copy wins; ``obook._kernels.mold`` ``round_*``: GIL-free, no numpy
step per round) and publishes ``frontier``: every
sequence number below it is decided, and :class:`~.stream.ArbitratedStream` writes those
messages while the rest of the captures is still being read.

Only what cannot change later is published. A number's first copy is final once every line
has been read past its time, provided the lines' capture times never go back and its packet is
well formed, of the session and not a far (corrupt) number by a bound the rest of the
captures can only raise. Anything else (an end of session, a number that may be far, a
capture time going back) stops the rounds: the rest waits for the whole arbitration
(``stream.arbitrate``: the captures read again whole, the same rules), checked against the
published prefix. Otherwise the rounds' own result is the arbitration (``gaps``,
``line_stats``, the stream's end).
"""

from __future__ import annotations

import threading

import numpy as np

from ...errors import ObookError
from .capture import CaptureReader, dating_packet
from .sessions import session_bytes, session_halves
from .stream import arbitrate

FIRST_ROUND = 1 << 16        # datagrams a line in the first round (then doubling)
LAST_ROUND = 1 << 18


#: on: at 15 M messages the rounds won 6 of 6 alternating runs against
#: the whole arbitration (1.61-1.80x against 1.66-2.30x); at 5 M they were even (their thread
#: competes with the parent and the workers on a loaded 2-core machine; benchmarks/bench_pcap.py)
USE_ROUNDS = True


def streamable(lines) -> bool:
    """Rounds (when :data:`USE_ROUNDS`) need each line in its own capture, named by address and port."""
    return USE_ROUNDS and all(s.ip is not None for s in lines) and len({s.path for s in lines}) == len(lines)


class _Growing:
    """Named 1-D arrays that grow (by doubling) keeping their values; new room holds ``fill``
    (a field without one is left uninitialised)."""

    def __init__(self, fields: dict, size: int, fill: dict | None = None):
        self.fields, self.fill = fields, fill or {}
        self.arrays = {k: self._new(k, t, max(size, 1024)) for k, t in fields.items()}

    def _new(self, key, dtype, n):
        return np.full(n, self.fill[key], dtype) if key in self.fill else np.empty(n, dtype)

    def ensure(self, n: int) -> None:
        cap = len(next(iter(self.arrays.values())))
        if n <= cap:
            return
        while cap < n:
            cap *= 2
        for k, a in self.arrays.items():
            new = self._new(k, a.dtype, cap)
            new[:len(a)] = a
            self.arrays[k] = new


class Rounds:
    """The arbitration of ``lines`` (see the module), run in a thread from construction."""

    def __init__(self, lines):
        from ..._kernels import mold as M

        self.lines = lines
        self.frontier = 1
        self.final = None
        self.error: BaseException | None = None
        self.streaming = True
        self.cancelled = False
        self.readers: list = []
        self._cond = threading.Condition()
        self.winners = None                 # _Growing: the packets that won a number (line, ts, off, seq)
        self.seqs = None                    # _Growing, per sequence number: who (winner), have (line bits)
        self.stats = None
        self._state = np.zeros(M.N_STATE, np.int64)
        self._state[M.R_TOP] = 1
        self._state[M.R_END] = -1
        self._state[M.R_FRONTIER] = 1
        _ns, session = dating_packet(lines[0].path, lines[0].ip, lines[0].port)
        if session is not None:      # the session that dates the replay (another one stops the rounds)
            self._state[M.R_SESSION] = 1
            self._state[M.R_HI], self._state[M.R_LO] = session_halves(session)
        self._line_next = np.full(len(lines), -1, np.int64)
        self._order = np.empty(0, np.int64)
        self._thread = threading.Thread(target=self._run, name="obook-arbitrate", daemon=True)
        self._thread.start()

    # -- the reading thread ----------------------------------------------------------------

    def _run(self):
        try:
            self._read_all()
        except BaseException as e:  # noqa: BLE001 - raised by wait()
            with self._cond:
                self.error = e
                self._cond.notify_all()

    def _read_all(self):
        from ..._kernels import mold as M

        readers = [CaptureReader(s.path, s.ip, s.port) for s in self.lines]
        n_lines = len(readers)
        size = sum(len(r.buf) for r in readers)
        self.winners = _Growing({"line": np.int64, "ts": np.int64, "off": np.int64, "seq": np.int64},
                                size // (128 * n_lines))
        self.seqs = _Growing({"who": np.int64, "have": np.uint8}, size // 80, {"who": -1, "have": 0})
        self.stats = np.zeros((n_lines, M.N_STATS), np.int64)
        self.readers = readers
        # per line: its datagrams read, not yet arbitrated (rows M.F_*), how many, the last time
        pend = [np.empty((M.N_FIELDS, 2 * FIRST_ROUND), np.int64) for _ in readers]
        n_pend = [0] * n_lines
        last = [None] * n_lines
        room = FIRST_ROUND
        while not all(r.done for r in readers) and not self.cancelled:
            for i, r in enumerate(readers):
                if r.done:
                    continue
                n = n_pend[i]
                if n + room > pend[i].shape[1]:
                    grown = np.empty((M.N_FIELDS, 2 * (n + room)), np.int64)
                    grown[:, :n] = pend[i][:, :n]
                    pend[i] = grown
                k = r.read_into(pend[i][:M.F_SEQ, n:n + room])
                if k:
                    if M.line_headers(r.buf, pend[i], n, n + k, -(1 << 62) if last[i] is None else last[i]):
                        self.streaming = False      # capture times going back: no rounds
                    last[i] = int(pend[i][M.F_TS, n + k - 1])
                n_pend[i] = n + k
            room = min(2 * room, LAST_ROUND)
            if self.streaming:
                self._round(pend, n_pend, last)
        if self.cancelled:
            return
        if self.streaming:
            final = self._arbitration()
            with self._cond:
                self.final = final
                self._cond.notify_all()
            return
        final = arbitrate(self.lines)        # the rounds stopped (rare): the captures read again, whole
        self._check(final)
        with self._cond:
            self.final = final
            self._cond.notify_all()

    def _round(self, pend, n_pend, last):
        """Arbitrate the datagrams every line has been read past (kernels); publish the frontier."""
        from ..._kernels import mold as M

        open_lines = [last[i] for i, r in enumerate(self.readers) if not r.done]
        if any(t is None for t in open_lines):
            return
        bound = min(open_lines) if open_lines else None     # None: every line read
        take = np.array([n if bound is None else int(np.searchsorted(p[M.F_TS, :n], bound, "left"))
                         for p, n in zip(pend, n_pend)], np.int64)
        total = int(take.sum())
        if not total:
            return
        if len(self._order) < total:
            self._order = np.empty(2 * total, np.int64)
        lines = tuple(pend)
        m = M.round_order(lines, take, self._order)
        stop, data, top = M.round_check(lines, self._order, m, self._state)
        if stop:
            self.streaming = False          # a maybe-far number, an end before what was replayed
            return
        self._state[M.R_DATA], self._state[M.R_TOP] = data, top
        self.seqs.ensure(top + 1)
        self.winners.ensure(int(self._state[M.R_WON]) + m)
        s, w = self.seqs.arrays, self.winners.arrays
        frontier = M.round_apply(lines, self._order, m, self._state, s["who"], s["have"], self._line_next,
                                 self.stats, w["line"], w["ts"], w["off"], w["seq"])
        for i, k in enumerate(take.tolist()):          # keep the rest for the next round
            rest = n_pend[i] - k
            if k and rest:
                pend[i][:, :rest] = pend[i][:, k:k + rest].copy()
            n_pend[i] = rest
        with self._cond:
            self.frontier = int(frontier)
            self._cond.notify_all()

    def _arbitration(self):
        """The rounds' result as stream.decide gives it (every packet went through them)."""
        from ..._kernels import mold as M
        from .stream import Arbitration

        st = self._state
        hi = int(st[M.R_TOP])            # an end of session hides no message (see stream.decide)
        s, w, n = self.seqs.arrays, self.winners.arrays, int(st[M.R_WON])
        M.recovered(s["have"], 1, hi, len(self.lines), self._line_next, self.stats)
        session = None
        if st[M.R_SESSION]:
            session = session_bytes(st[M.R_HI], st[M.R_LO])
        empty = [np.zeros(0, np.int64)] * 6          # the datagram arrays are not kept
        captures = [r.capture(empty) for r in self.readers]
        return Arbitration([(spec, spec.ip, spec.port) for spec in self.lines], captures, s["who"][:hi + 1],
                           w["off"][:n], w["seq"][:n], w["line"][:n], w["line"][:n], w["ts"][:n], hi,
                           int(st[M.R_END]), self.stats, session, [c.problem for c in captures if c.problem])

    def _check(self, final) -> None:
        """The published prefix is what the whole arbitration decides."""
        fr = self.frontier
        if fr <= 1:
            return
        who = final.who[1:fr] if fr <= final.hi else None
        same = who is not None and bool((who >= 0).all())
        if same:
            mine = self.seqs.arrays["who"][1:fr]
            w = self.winners.arrays
            same = bool((final.p_file[who] == w["line"][mine]).all() and (final.p_off[who] == w["off"][mine]).all())
        if not same:
            raise ObookError(f"{'+'.join(x.path for x in self.lines)}: a line's capture times go back "
                             f"across messages already replayed (before sequence number {fr})")

    # -- the stream's side -----------------------------------------------------------------

    def wait(self, s0: int):
        """Block until number ``s0`` is decided: the final Arbitration once there, else
        (who, winners' lines, payload offsets, first numbers, frontier) of the rounds."""
        with self._cond:
            while self.error is None and self.final is None and self.frontier <= s0:
                self._cond.wait()
            if self.error is not None:
                raise self.error
            if self.final is not None:
                return self.final
            w = self.winners.arrays
            return self.seqs.arrays["who"], w["line"], w["off"], w["seq"], self.frontier

    def bufs(self) -> list:
        return [r.buf for r in self.readers]

    def columns_view(self):
        """who, p_line, p_ts of the decided numbers (for ``stream.record_columns``)."""
        from types import SimpleNamespace

        with self._cond:
            w = self.winners.arrays
            return SimpleNamespace(who=self.seqs.arrays["who"][:self.frontier], p_line=w["line"], p_ts=w["ts"])

    def read_bytes(self) -> int:
        return sum(int(r.pos) for r in self.readers)

    def total_bytes(self) -> int:
        return sum(len(r.buf) for r in self.readers)

    def close(self) -> None:
        self.cancelled = True
