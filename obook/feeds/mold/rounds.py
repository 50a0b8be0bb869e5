"""The lines arbitrated in rounds while the replay runs: the first batches start at once.

:class:`Rounds` reads each line's capture a piece at a time in a thread (GIL-free kernels),
merges the lines' datagrams by capture time up to the time every line has reached (line A
first on equal times), arbitrates them (first copy wins) and publishes ``frontier``: every
sequence number below it is decided, and :class:`~.stream.ArbitratedStream` writes those
messages while the rest of the captures is still being read.

Only what cannot change later is published. A number's first copy is final once every line
has been read past its time, provided the captures' times never go back and its packet is
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
from .capture import CaptureReader
from .stream import arbitrate

FIRST_ROUND = 1 << 16        # datagrams a line in the first round (then doubling)
LAST_ROUND = 1 << 20
_FIELDS = {"line": np.int64, "ts": np.int64, "off": np.int64, "seq": np.int64, "count": np.int64,
           "ok": np.uint8}


#: on: at the issue's size (15 M messages) the rounds won 6 of 6 alternating runs against
#: the whole arbitration (1.61-1.80x against 1.66-2.30x); at 5 M they were even (their thread
#: competes with the parent and the workers on a loaded 2-core machine; benchmarks/LEDGER.md)
USE_ROUNDS = True


def streamable(lines) -> bool:
    """Rounds (when :data:`USE_ROUNDS`) need each line in its own capture, named by address and port."""
    return USE_ROUNDS and all(s.ip is not None for s in lines) and len({s.path for s in lines}) == len(lines)


class _Growing:
    """Named int arrays that grow (by doubling) keeping their values."""

    def __init__(self, fields: dict, size: int, fill: dict | None = None):
        self.fields, self.fill, self.n = fields, fill or {}, 0
        self.arrays = {k: np.full(max(size, 1024), self.fill.get(k, 0), t) for k, t in fields.items()}

    def ensure(self, n: int) -> None:
        cap = len(next(iter(self.arrays.values())))
        if n <= cap:
            return
        while cap < n:
            cap *= 2
        for k, a in self.arrays.items():
            new = np.full(cap, self.fill.get(k, 0), a.dtype)
            new[:len(a)] = a
            self.arrays[k] = new


class Rounds:
    """The arbitration of ``lines`` (see the module), run in a thread from construction."""

    def __init__(self, lines):
        self.lines = lines
        self.frontier = 1
        self.final = None
        self.error: BaseException | None = None
        self.streaming = True
        self.cancelled = False
        self.readers: list = []
        self._cond = threading.Condition()
        self.packets = None                 # _Growing, in arrival order (sized once the captures are open)
        self.seqs = None                    # _Growing, per sequence number
        self.stats = None
        self._top = 1
        self._end_seq = -1
        self._checked = False               # the rounds stopped: decide() again and compare
        self._line_next = np.full(len(lines), -1, np.int64)
        self._session = None
        self._data_messages = 0
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

        readers = [CaptureReader(s.path) for s in self.lines]
        n_lines = len(readers)
        size = sum(len(r.buf) for r in readers)
        self.packets = _Growing(_FIELDS, size // 128)
        self.seqs = _Growing({"who": np.int64, "off": np.int64, "len": np.int32, "have": np.uint8}, size // 80,
                             {"who": -1, "len": 3})
        self.stats = np.zeros((n_lines, M.N_STATS), np.int64)
        self.readers = readers
        pending = [None] * n_lines           # per line: its datagrams not yet arbitrated
        last = [None] * n_lines              # per line: the last capture time read
        room = FIRST_ROUND
        while not all(r.done for r in readers) and not self.cancelled:
            for i, (r, spec) in enumerate(zip(readers, self.lines)):
                if r.done:
                    continue
                ts, ip, port, poff, plen, rec = r.read(room)
                if len(ts):
                    if (last[i] is not None and ts[0] < last[i]) or bool((np.diff(ts) < 0).any()):
                        self.streaming = False      # capture times going back: no rounds
                    last[i] = int(ts[-1])
                sel = np.flatnonzero((ip == spec.ip) & (port == spec.port))
                off = poff[sel]
                hdr = [np.empty(len(sel), np.int64) for _ in range(5)]
                M.mold_headers(r.buf, off, plen[sel], len(sel), *hdr)
                new = {"ts": ts[sel], "off": off, "seq": hdr[0], "count": hdr[1], "hi": hdr[2],
                       "lo": hdr[3], "status": hdr[4]}
                pending[i] = new if pending[i] is None else {k: np.concatenate((pending[i][k], v))
                                                             for k, v in new.items()}
            room = min(2 * room, LAST_ROUND)
            if self.streaming:
                self._round(pending, last)
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

    def _round(self, pending, last):
        """Arbitrate the datagrams every line has been read past; publish the frontier."""
        from ..._kernels import mold as M

        open_lines = [last[i] for i, r in enumerate(self.readers) if not r.done]
        if any(t is None for t in open_lines):
            return
        bound = min(open_lines) if open_lines else None     # None: every line read
        take = []
        for i, p in enumerate(pending):
            if p is None:
                continue
            k = len(p["ts"]) if bound is None else int(np.searchsorted(p["ts"], bound, "left"))
            take.append((i, {key: v[:k] for key, v in p.items()}))
            pending[i] = {key: v[k:] for key, v in p.items()}
        if not take:
            return
        cat = {key: np.concatenate([t[key] for _i, t in take]) for key in take[0][1]}
        line = np.concatenate([np.full(len(t["ts"]), i, np.int64) for i, t in take])
        order = np.argsort(cat["ts"], kind="stable")
        cat = {key: v[order] for key, v in cat.items()}
        line = line[order]
        good = cat["status"] == M.P_OK
        if self._session is None and good.any():
            first = int(np.flatnonzero(good)[0])
            self._session = (cat["hi"][first], cat["lo"][first])
        if self._session is not None:
            ok = good & (cat["hi"] == self._session[0]) & (cat["lo"] == self._session[1])
        else:
            ok = np.zeros(len(good), bool)
        count = cat["count"]
        data = ok & (count != 0) & (count != M.END_OF_SESSION)
        self._data_messages += int(count[data].sum())
        limit = 4 * self._data_messages + (1 << 20)      # stream.decide's far bound, so far
        ends = cat["seq"] + np.where(data, count, 0)
        eos = ok & (count == M.END_OF_SESSION)
        if bool((ok & ((cat["seq"] < 1) | (ends > limit))).any()) or (
                eos.any() and int(cat["seq"][eos].min()) < self.frontier):
            self.streaming = False          # a maybe-far number, an end before what was replayed
            return
        bad = ~good
        wrong = good & ~ok
        for i in range(len(self.lines)):
            mine = line == i
            self.stats[i, M.S_PACKETS] += int(mine.sum())
            self.stats[i, M.S_BAD] += int((mine & bad).sum())
            self.stats[i, M.S_WRONG_SESSION] += int((mine & wrong).sum())
        pk = self.packets
        base, m = pk.n, len(line)
        pk.ensure(base + m)
        a = pk.arrays
        a["line"][base:base + m] = line
        a["ts"][base:base + m] = cat["ts"]
        a["off"][base:base + m] = cat["off"]
        a["seq"][base:base + m] = cat["seq"]
        a["count"][base:base + m] = count
        a["ok"][base:base + m] = ok
        pk.n = base + m
        self._top = max(self._top, int(ends[ok].max(initial=1)))
        top = self._top + 1
        self.seqs.ensure(top)
        s = self.seqs.arrays
        end_seq = M.arbitrate(np.arange(base, base + m), a["line"], a["seq"], a["count"], a["ok"], s["who"],
                              s["have"], self._line_next, self.stats)
        if end_seq > 0 and (self._end_seq < 0 or end_seq < self._end_seq):
            self._end_seq = end_seq
        won = np.flatnonzero(data) + base
        for i, r in enumerate(self.readers):
            M.message_offsets(r.buf, won[line[won - base] == i], a["seq"], a["count"], a["off"], s["who"],
                              s["off"], s["len"])
        self.seqs.n = max(self.seqs.n, top)
        upto = self.seqs.n if self._end_seq < 0 else min(self.seqs.n, self._end_seq)
        lost = np.flatnonzero(s["who"][self.frontier:upto] < 0)
        frontier = max(self.frontier, self.frontier + (int(lost[0]) if len(lost) else upto - self.frontier))
        with self._cond:
            self.frontier = frontier
            self._cond.notify_all()

    def _arbitration(self):
        """The rounds' result as stream.decide gives it (every packet went through them)."""
        from ..._kernels import mold as M
        from .stream import Arbitration

        hi = self._top
        if self._end_seq > 0:
            hi = min(hi, self._end_seq)
        s, a, n = self.seqs.arrays, self.packets.arrays, self.packets.n
        M.recovered(s["have"], 1, hi, len(self.lines), self.stats)
        session = None
        if self._session is not None:
            session = int(self._session[0]).to_bytes(8, "big") + int(self._session[1]).to_bytes(2, "big")
        empty = [np.zeros(0, np.int64)] * 6          # the datagram arrays are not kept
        captures = [r.capture(empty) for r in self.readers]
        return Arbitration([(spec, spec.ip, spec.port) for spec in self.lines], captures, s["who"][:hi + 1],
                           s["off"][:hi + 1], s["len"][:hi + 1], a["line"][:n], a["line"][:n], a["ts"][:n], hi,
                           self._end_seq, self.stats, session, [c.problem for c in captures if c.problem])

    def _check(self, final) -> None:
        """The published prefix is what the whole arbitration decides."""
        fr = self.frontier
        if fr <= 1:
            return
        s = self.seqs.arrays
        who = final.who[1:fr] if fr <= final.hi else None
        same = who is not None and bool((who >= 0).all())
        if same:
            line = self.packets.arrays["line"][s["who"][1:fr]]
            same = bool((final.p_file[who] == line).all() and (final.src_off[1:fr] == s["off"][1:fr]).all())
        if not same:
            raise ObookError(f"{'+'.join(x.path for x in self.lines)}: a line's capture times go back "
                             f"across messages already replayed (before sequence number {fr})")

    # -- the stream's side -----------------------------------------------------------------

    def wait(self, s0: int):
        """Block until number ``s0`` is decided: the final Arbitration once there, else
        (who, packet line, offsets, frame lengths, frontier) of the rounds."""
        with self._cond:
            while self.error is None and self.final is None and self.frontier <= s0:
                self._cond.wait()
            if self.error is not None:
                raise self.error
            if self.final is not None:
                return self.final
            s = self.seqs.arrays
            return s["who"], self.packets.arrays["line"], s["off"], s["len"], self.frontier

    def bufs(self) -> list:
        return [r.buf for r in self.readers]

    def columns_view(self):
        """who, p_line, p_ts of the decided numbers (for ``stream.record_columns``)."""
        from types import SimpleNamespace

        s, a = self.seqs.arrays, self.packets.arrays
        return SimpleNamespace(who=s["who"][:self.frontier], p_line=a["line"][:self.packets.n],
                               p_ts=a["ts"][:self.packets.n])

    def read_bytes(self) -> int:
        return sum(int(r.pos) for r in self.readers)

    def total_bytes(self) -> int:
        return sum(len(r.buf) for r in self.readers)

    def close(self) -> None:
        self.cancelled = True
