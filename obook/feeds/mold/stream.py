"""The lines of a capture arbitrated into one ITCH stream (what the engine reads).

:func:`arbitrate` reads the captures, keeps the datagrams of each line, checks their
MoldUDP64 headers, and takes the first copy of every sequence number in arrival order
(capture time; lines in different files are merged by time, line A first on equal times).
:class:`ArbitratedStream` writes the won messages as BinaryFILE frames in sequence order,
numbered from 1: a message lost on every line is a 1-byte frame of type 0, so a record
number is the MoldUDP64 sequence number. A capture problem (cut mid-record ...) follows the
last message as a frame of type 2 holding its text; the format's framer turns both into
a FeedError (strict) or counts (tolerant).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import FeedError, ObookError
from .arbiter import STAT_KEYS
from .capture import PCAPNG_MAGIC, dating_packet, read_capture
from .lines import LINE_NAMES, Lines
from .sessions import majority_session, session_bytes, session_halves

log = logging.getLogger("obook")

PROBLEM = 2          # type byte of a capture problem's frame
#: what a capture problem's frame holds after its type byte, random per process: a message
#: of type 0x02 in a packet (no ITCH type) is never taken for a problem
PROBLEM_TAG = b"obook capture problem " + os.urandom(8).hex().encode() + b"\0"
CHUNK_RECORDS = 1 << 16
FILL_BYTES = 1 << 17     # holds one record at least (a frame is at most 2 + 65535 bytes)
STAT_NAMES = STAT_KEYS     # a capture line's counts are the live arbiter's, in its order


@dataclass
class Arbitration:
    lines: list                # (LineSpec, ip, port) per line
    captures: list             # Capture per file
    who: np.ndarray            # per sequence number (index = seq): the winning packet, -1 lost
    p_off: np.ndarray          # per packet: its payload's offset in its file, its first number,
    p_seq: np.ndarray          # file index, line, time
    p_file: np.ndarray
    p_line: np.ndarray
    p_ts: np.ndarray
    hi: int                    # one past the last sequence number
    end_seq: int               # the end of session's number, -1: none seen
    stats: np.ndarray          # lines x STAT_NAMES
    session: bytes | None
    problems: list             # FeedError of the captures

    def gaps(self) -> list[tuple[int, int, int, int]]:
        """Lost ranges: (first_seq, count, ts_before, ts_after): the capture times of the
        messages delivered just before and after (-1: none)."""
        lost = self.who[1:self.hi] < 0
        if not lost.any():
            return []
        edges = np.flatnonzero(np.diff(np.concatenate(([0], lost.view(np.int8), [0]))))
        out = []
        for a, b in zip(edges[::2] + 1, edges[1::2] + 1):
            before = self.who[a - 1] if a > 1 else -1
            after = self.who[b] if b < self.hi else -1
            out.append((int(a), int(b - a), int(self.p_ts[before]) if before >= 0 else -1,
                        int(self.p_ts[after]) if after >= 0 else -1))
        return out


def _line_datagrams(lines: Lines):
    """Open each capture once; the (capture index, datagram indices) of every line."""
    index = {}
    for spec in lines:
        index.setdefault(spec.path, len(index))
    paths = list(index)
    if len(paths) > 1:      # the kernels release the GIL: the captures are read side by side
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=min(len(paths), 4)) as pool:
            captures = list(pool.map(read_capture, paths))
    else:
        captures = [read_capture(p) for p in paths]
    out = []
    for spec in lines:
        f = index[spec.path]
        cap = captures[f]
        if spec.ip is not None:
            sel = np.flatnonzero((cap.ip == spec.ip) & (cap.port == spec.port))
            out.append((spec, f, sel, spec.ip, spec.port))
            continue
        # every destination carrying MoldUDP64 (a 20-byte header at least), first seen first
        key = (cap.ip << 16) | cap.port
        mold = cap.plen >= 20
        keys, first = np.unique(key[mold], return_index=True)
        for k in keys[np.argsort(first)]:
            out.append((spec, f, np.flatnonzero(key == k), int(k) >> 16, int(k) & 0xFFFF))
    if len(out) > len(LINE_NAMES):
        raise ObookError(f"{'+'.join(s.path for s in lines)}: {len(out)} UDP destinations; "
                         f"choose the lines as CAPTURE:ADDRESS:PORT")
    return captures, out


def _each(fn, n: int) -> None:
    """fn(0) .. fn(n-1), side by side in threads when n > 1 (GIL-free kernels)."""
    if n == 1:
        fn(0)
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(n, 4)) as pool:
        list(pool.map(fn, range(n)))


def arbitrate(lines: Lines) -> Arbitration:
    captures, chosen = _line_datagrams(lines)
    return decide(lines, captures, chosen)


def decide(lines: Lines, captures: list, chosen: list, headers: list | None = None) -> Arbitration:
    """The arbitration of the datagrams ``chosen`` of each line (``headers``: their
    MoldUDP64 header arrays seq, count, session high/low, status if already known)."""
    from ..._kernels import mold as M

    n_lines = len(chosen)
    parts = {k: [] for k in ("file", "line", "ts", "off", "len", "rec")}
    for line, (_spec, f, sel, _ip, _port) in enumerate(chosen):
        cap = captures[f]
        parts["file"].append(np.full(len(sel), f, np.int64))
        parts["line"].append(np.full(len(sel), line, np.int64))
        parts["ts"].append(cap.ts[sel])
        parts["off"].append(cap.poff[sel])
        parts["len"].append(cap.plen[sel])
        parts["rec"].append(cap.record[sel])
    p_file, p_line, p_ts, p_off, p_len, p_rec = (np.concatenate(parts[k]) if parts[k] else np.zeros(0, np.int64)
                                                 for k in ("file", "line", "ts", "off", "len", "rec"))
    n = len(p_file)
    seq, count, s_hi, s_lo, status = (np.empty(n, np.int64) for _ in range(5))
    # each line's packets are one slice of the packet arrays (lines concatenated in order)
    bounds = np.concatenate(([0], np.cumsum([len(c[2]) for c in chosen])))
    spans = [(chosen[i][1], int(bounds[i]), int(bounds[i + 1])) for i in range(n_lines)]

    def read_headers(i):
        f, a, b = spans[i]
        M.mold_headers(captures[f].buf, p_off[a:b], p_len[a:b], b - a,
                       seq[a:b], count[a:b], s_hi[a:b], s_lo[a:b], status[a:b])
    if headers is None:
        _each(read_headers, n_lines)
    else:
        for out, part in zip((seq, count, s_hi, s_lo, status), headers):
            out[:] = part
    stats = np.zeros((n_lines, M.N_STATS), np.int64)
    stats[:, M.S_PACKETS] = np.bincount(p_line, minlength=n_lines)
    good = status == M.P_OK
    stats[:, M.S_BAD] = np.bincount(p_line[~good], minlength=n_lines)
    # arrival order: capture time (the lines are concatenated A first, each in file order:
    # a stable sort keeps line order on ties), or file order when one capture holds them all
    if len({c[1] for c in chosen}) > 1:
        order = np.argsort(p_ts, kind="stable")
    else:
        order = np.argsort(p_rec, kind="stable")
    session = None
    ok = good.astype(np.uint8)
    if good.any():
        # the session that dates the replay (of most packets at the first line's start: a
        # stale or stray one is outvoted), else the session of most packets
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        dated_ns, session = dating_packet(lines[0].path, lines[0].ip, lines[0].port)
        if session is None:
            hi_, lo_, _n = majority_session(s_hi[good], s_lo[good], rank[good])
            session = session_bytes(hi_, lo_)
        hi_, lo_ = session_halves(session)
        wrong = good & ((s_hi != hi_) | (s_lo != lo_))
        stats[:, M.S_WRONG_SESSION] = np.bincount(p_line[wrong], minlength=n_lines)
        ok[wrong] = 0
        if wrong.any():
            n_sessions = len(np.unique(np.stack([s_hi[wrong], s_lo[wrong]], axis=1), axis=0))
            _ignored_sessions("+".join(sorted({s.path for s in lines})), _session_text(session),
                              int(wrong.sum()), n_sessions)
            _other_day(captures, order, good & ~wrong, wrong, p_file, p_ts, p_rec, s_hi, s_lo, session, dated_ns)
    data = ok.astype(bool) & (count != 0) & (count != M.END_OF_SESSION)
    # a corrupt sequence number must not size the arrays: numbers beyond every message the
    # packets hold (x4, + 1 Mi) are implausible (counted, ignored); most of them so: a
    # capture of a later part of the session, which this replay (numbered from 1) cannot take
    limit = 4 * int(count[data].sum()) + (1 << 20)
    far = ok.astype(bool) & ((seq < 1) | (seq + np.where(data, count, 0) > limit))
    if far.any():
        if 2 * int(far.sum()) > int(ok.sum()):
            raise ObookError(f"{'+'.join(sorted({s.path for s in lines}))}: MoldUDP64 sequence numbers "
                             f"from {int(seq[far].min())}: a capture is replayed from its session's "
                             f"first message (sequence number 1)")
        stats[:, M.S_IMPLAUSIBLE] += np.bincount(p_line[far], minlength=n_lines)
        ok[far] = 0
        data &= ~far
    top = int((seq + np.where(data, count, 0))[ok.astype(bool)].max(initial=1))
    hi = max(top, 1)
    who = np.full(hi + 1, -1, np.int64)
    have = np.zeros(hi + 1, np.uint8)
    line_next = np.full(n_lines, -1, np.int64)
    # an end of session ends nothing a line delivered: its number only tells of messages lost
    # before it (as in the live arbiter)
    end_seq = M.arbitrate(order, p_line, seq, count, ok, who, have, line_next, stats)
    M.recovered(have, 1, hi, n_lines, line_next, stats)
    problems = [c.problem for c in captures if c.problem is not None]
    lines_out = [(spec, ip, port) for spec, _f, _sel, ip, port in chosen]
    return Arbitration(lines_out, captures, who[:hi + 1], p_off, seq, p_file, p_line, p_ts, hi, end_seq, stats,
                       session, problems)


def _session_text(session: bytes) -> str:
    return session.decode("ascii", "replace").strip()


def _other_day(captures, order, mine, wrong, p_file, p_ts, p_rec, s_hi, s_lo, session, dated_ns) -> None:
    """A packet of another session than the replayed one, after the replayed one's first packet
    and dated another day (New York), is the capture's problem (at most one a capture, as a cut
    is): a strict replay stops with it after the session's rows, a tolerant one counts it. Its
    packets are not replayed (counted as wrong_session): the rows would carry the wrong date."""
    from .capture import new_york_date

    if dated_ns is None or not mine.any():
        return
    day = new_york_date(dated_ns)
    arrival = np.empty(len(order), np.int64)
    arrival[order] = np.arange(len(order))
    start = arrival[mine].min()
    later = np.flatnonzero(wrong & (arrival > start))
    for p in later[np.argsort(arrival[later], kind="stable")]:
        other = new_york_date(int(p_ts[p]))
        if other == day:
            continue
        cap = captures[int(p_file[p])]
        if cap.problem is None:
            cap.problem = FeedError(
                cap.path, int(p_rec[p]),
                f"a packet of MoldUDP64 session {_session_text(session_bytes(s_hi[p], s_lo[p]))!r} "
                f"of {other}, while the replay follows session {_session_text(session)!r} of {day}: one "
                f"session is replayed (the other's packets are counted as wrong_session; give its capture "
                f"alone to replay it)", unit="record" if cap.buf[:4].tobytes() != PCAPNG_MAGIC else "block")
        return


#: (captures, session, packets, sessions) already told of in this process
_told: set = set()


def _ignored_sessions(paths: str, session: str, packets: int, others: int) -> None:
    """A warning that packets of other sessions are ignored, once per captures and counts in
    a process: a command reads a capture more than once (its date, a pre-pass, the replay)."""
    if (paths, session, packets, others) in _told:
        return
    _told.add((paths, session, packets, others))
    log.warning("%s: MoldUDP64 session %r replayed; %d packets of %d other sessions ignored",
                paths, session, packets, others)


class ArbitratedStream:
    """A Reader (readinto, pos, close) of the arbitrated ITCH stream, with the per-record
    columns ``mold_seq``, ``line`` and ``ts_recv`` (:meth:`record_columns`)."""

    def __init__(self, lines: Lines, arb=None):
        """``arb``: an :class:`Arbitration`, or the ``rounds.Rounds`` running one (the
        decided numbers are written while the captures are still read)."""
        self.lines = lines
        self.arb = None
        self._rounds = None
        self._next = 1                   # the next sequence number to write
        self._problem_at = None          # (number, frame): a capture problem written in a lost one's place
        self._out = np.zeros(0, np.uint8)
        self._at = 0
        self._view = None                # the last _decided_range (valid below its end)
        if arb is None:
            arb = arbitrate(lines)
        if isinstance(arb, Arbitration):
            self._decided(arb)
        else:
            self._rounds = arb

    def _decided(self, arb: Arbitration) -> None:
        self.arb = arb
        at = _problem_number(arb)
        frame = self._problem_frame(at > 0)
        # a problem met before the end: its frame in a lost message's place, else after the last
        self._problem_at, self._tail = ((at, frame), b"") if at else (None, frame)
        self._total = sum(len(c.buf) for c in arb.captures)
        lost = int((arb.who[1:arb.hi] < 0).sum())
        if lost:
            log.info("%s: %d messages lost on every line", "+".join(s.path for s in self.lines), lost)

    def _problem_frame(self, for_lost: bool) -> bytes:
        """The frame of the first capture problem (``for_lost``: standing for a lost message)."""
        if not self.arb.problems:
            return b""
        p = self.arb.problems[0]
        text = PROBLEM_TAG + (b"L" if for_lost else b"-") + \
            f"{p.path}\0{p.record}\0{p.unit}\0{p.reason}".encode("utf-8", "replace")[:60000]
        return (len(text) + 1).to_bytes(2, "big") + bytes([PROBLEM]) + text

    def _decided_range(self):
        """(files' bytes, who, p_file, p_off, p_seq, end): the numbers from ``_next`` to
        ``end`` are decided; None once every number is written. Kept until ``_next`` reaches
        its end: the numbers below a frontier stay decided, their arrays keep their values."""
        s0 = self._next
        if self._view is not None and s0 < self._view[-1]:
            return self._view
        if self.arb is None:
            view = self._rounds.wait(s0)
            if not isinstance(view, Arbitration):
                who, p_file, p_off, p_seq, frontier = view
                bufs = self._view[0] if self._view else tuple(_readonly(b) for b in self._rounds.bufs())
                self._view = (bufs, who, p_file, p_off, p_seq, frontier)
                return self._view
            self._decided(view)
        arb = self.arb
        if s0 >= arb.hi:
            return None
        bufs = tuple(_readonly(c.buf) for c in arb.captures)
        self._view = (bufs, arb.who, arb.p_file, arb.p_off, arb.p_seq, arb.hi)
        return self._view

    def _write(self, out, decided) -> int:
        """As many whole records from ``_next`` as fit in ``out``; returns the bytes."""
        from ..._kernels import mold as M

        bufs, who, p_file, p_off, p_seq, end = decided
        s1 = min(end, self._next + CHUNK_RECORDS)
        if self._problem_at is not None:
            at, frame = self._problem_at
            if self._next == at:                 # the problem's frame in the lost message's place
                if len(frame) > len(out):
                    return 0
                out[:len(frame)] = np.frombuffer(frame, np.uint8)
                self._next, self._problem_at = at + 1, None
                return len(frame)
            s1 = min(s1, at)
        n, self._next = M.stream_write(bufs, self._next, s1, who, p_file, p_off, p_seq, out)
        return n

    def _fill(self) -> bool:
        decided = self._decided_range()
        if decided is None:
            if self._tail:
                self._out, self._at, self._tail = np.frombuffer(self._tail, np.uint8), 0, b""
                return True
            return False
        out = np.empty(FILL_BYTES, np.uint8)
        n = self._write(out, decided)
        self._out, self._at = out[:n], 0
        return True

    def readinto(self, view) -> int:
        if self._at >= len(self._out):   # straight into the caller's buffer when a record fits
            decided = self._decided_range()
            if decided is not None:
                n = self._write(np.frombuffer(view, np.uint8), decided)
                if n:
                    return n
        while self._at >= len(self._out):
            if not self._fill():
                return 0
        n = min(len(view), len(self._out) - self._at)
        view[:n] = memoryview(self._out[self._at:self._at + n])
        self._at += n
        return n

    def pos(self) -> int:
        if self.arb is None:
            # the captures' bytes read so far, scaled by the part of the decided numbers written
            done = min(1.0, (self._next - 1) / max(1, self._rounds.frontier - 1))
            return int(self._rounds.read_bytes() * done)
        if self.arb.hi <= 1:
            return self._total
        return int(self._total * min(1.0, (self._next - 1) / (self.arb.hi - 1)))

    def close(self) -> None:
        self._out = np.zeros(0, np.uint8)
        if self._rounds is not None:
            self._rounds.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def record_columns(self, seq: np.ndarray) -> list:
        """``mold_seq``, ``line`` and ``ts_recv`` of the records ``seq`` (uint64 or int64)."""
        if self.arb is None:         # numbers the rounds decided (they stay so)
            return record_columns(self._rounds.columns_view(), seq)
        return record_columns(self.arb, seq)


def _readonly(buf) -> np.ndarray:
    """A file's bytes as a plain read-only array (one kernel type for every file)."""
    view = np.asarray(buf).view()
    view.flags.writeable = False
    return view


LINE_TYPE = pa.string()
TS_TYPE = pa.timestamp("ns", tz="UTC")


def record_columns(arb: Arbitration, seq: np.ndarray) -> list:
    from ..._kernels import mold as M

    s = np.ascontiguousarray(seq, dtype=np.int64) if np.asarray(seq).dtype != np.uint64 else \
        np.asarray(seq).view(np.int64)
    n = len(s)
    offsets = np.empty(n + 1, np.int32)          # the line column built as Arrow buffers
    chars = np.empty(n, np.uint8)
    ts = np.empty(n, np.int64)
    valid = np.empty(n, np.bool_)
    missing = M.record_fields(s, arb.who, arb.p_line, arb.p_ts, offsets, chars, ts, valid)
    bits = None if not missing else pa.py_buffer(np.packbits(valid, bitorder="little"))
    line_col = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars), bits, missing)
    return [pa.array(s.view(np.uint64)), line_col, pa.Array.from_buffers(TS_TYPE, n, [bits, pa.py_buffer(ts)], missing)]


def _problem_number(arb: Arbitration) -> int:
    """Where a capture problem (a cut, a corrupt record) is met: the first number lost on
    every line after the last one the capture's lines delivered (it may be in the part of the
    capture not read); 0: none, the problem follows the last message."""
    f = next((i for i, c in enumerate(arb.captures) if c.problem is not None), None)
    if f is None or arb.hi <= 1:
        return 0
    who = arb.who[1:arb.hi]
    won = np.flatnonzero((who >= 0) & (arb.p_file[np.maximum(who, 0)] == f))
    lost = np.flatnonzero(who < 0)
    after = lost[lost > (won[-1] if len(won) else -1)]
    return int(after[0]) + 1 if len(after) else 0


def problem_error(frame: bytes) -> FeedError | None:
    """The FeedError a capture problem's frame (type 2) carries; None for a frame of type 2
    that is a message of the capture (no problem the stream wrote)."""
    if not frame[1:].startswith(PROBLEM_TAG):
        return None
    path, record, unit, reason = frame[2 + len(PROBLEM_TAG):].decode("utf-8", "replace").split("\0", 3)
    return FeedError(path, int(record) if record.isdigit() else None, reason, unit=unit)


def problem_for_lost(frame: bytes) -> bool:
    """Whether a capture problem's frame stands in a lost message's place (see ``_problem_number``)."""
    return frame[1 + len(PROBLEM_TAG):2 + len(PROBLEM_TAG)] == b"L"
