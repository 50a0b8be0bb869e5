"""The state of a set of matching books and the loop that drives the kernels over it.

``MatchBooks(prepared, books).run(msg)`` applies the instructions of those books and
returns every output table as int64 rows (concatenated chunks). The kernels never
allocate: when an output buffer fills they stop before an instruction, the rows so far
are copied out and the buffers reused. The order rows are one per key, allocated (and
touched) up front, so they never grow.
"""

from __future__ import annotations

import numpy as np

from .._kernels.match_layout import (BK_ASK, BK_BID, BK_HI, BK_LAST, BK_LO, BK_WIDTH, D_HEAD,
                                     E_WIDTH, F_WIDTH, LV_DTYPE, NEVER, OD_DTYPE, OD_WIDE_DTYPE, OK, Q_WIDTH, ST_LIVE, ST_ND, ST_NE, ST_NF,
                                     ST_NQ, ST_POS, ST_WIDTH, STP_CANCEL_INCOMING,
                                     STP_CANCEL_RESTING, STP_NONE, T_SEQ, W_BBO, W_DEPTH, W_EVENTS, W_FILLS)
from ..errors import ObookError

#: starting sizes (tests make them tiny to exercise the growth paths)
CHUNK = 1 << 16
#: prefetch distance of match_rows (instructions ahead; 0: none)
PREFETCH = 16
TABLES = ("fills", "events", "bbo", "depth")
WANT = {"fills": W_FILLS, "events": W_EVENTS, "bbo": W_BBO, "depth": W_DEPTH}
STP = {None: STP_NONE, "none": STP_NONE, "cancel_resting": STP_CANCEL_RESTING,
       "cancel_incoming": STP_CANCEL_INCOMING}


def stp_code(stp) -> int:
    try:
        return STP[stp if stp is None else str(stp).lower().replace("-", "_")]
    except KeyError:
        raise ObookError(f"stp must be one of none, cancel_resting, cancel_incoming, not {stp!r}") from None


def want_bits(tables) -> int:
    if not tables:          # a match that writes nothing is a mistake, not a choice
        raise ObookError(f"tables names no table; choose from {', '.join(TABLES)}")
    bits = 0
    for t in tables:
        if t not in WANT:
            raise ObookError(f"unknown table {t!r}; choose from {', '.join(TABLES)}")
        bits |= WANT[t]
    return bits


def widths(levels: int) -> dict:
    """Columns of each table's int64 rows (depth: ``levels`` a side)."""
    return {"fills": F_WIDTH, "events": E_WIDTH, "bbo": Q_WIDTH, "depth": D_HEAD + 6 * levels}


def new_state(n_levels: int, lo, hi, n_keys: int, levels: int, wide: bool = False):
    """Fresh kernel state: (lv, od, ow, bk, st, ds); every order row written once here, so
    the replay takes no page faults on them (the owners, touched only with self-trade
    prevention, are left to the kernel's zero pages). ``wide``: some quantity needs int64."""
    lv = np.zeros(max(n_levels, 1), LV_DTYPE)
    lv["head"] = lv["tail"] = -1
    if n_keys >= 2**31:                 # the FIFO links are int32
        raise ObookError(f"{n_keys:,} order ids in one run; at most 2,147,483,647")
    od = np.zeros(max(n_keys, 1), OD_WIDE_DTYPE if wide else OD_DTYPE)
    od["lv"] = NEVER
    ow = np.zeros(max(n_keys, 1), np.int64)
    bk = np.zeros((len(lo), BK_WIDTH), np.int64)
    bk[:, BK_LO], bk[:, BK_HI] = lo, hi
    bk[:, BK_BID], bk[:, BK_ASK] = np.asarray(lo) - 1, np.asarray(hi) + 1
    bk[:, BK_LAST:BK_LAST + 6] = (-1, 0, 0, -1, 0, 0)
    st = np.zeros(ST_WIDTH, np.int64)
    ds = np.zeros((len(lo), 6 * levels), np.int64)
    ds[:, 0::3] = -1
    return lv, od, ow, bk, st, ds


class MatchBooks:
    def __init__(self, n_levels, lo, hi, n_keys, *, want: int, stp: int = STP_NONE, levels: int = 10,
                 chunk: int = 1 << 16, wide: bool = False, sink=None):
        self.want, self.stp, self.levels = want, stp, levels
        self.sink = sink                # sink(table, rows): takes flushed rows (default: kept in self.out)
        self.lv, self.od, self.ow, self.bk, self.st, self.ds = new_state(n_levels, lo, hi, n_keys, levels, wide)
        self.chunk = chunk
        self._alloc(chunk)
        self.out = {t: [] for t in TABLES}

    def _alloc(self, cap: int) -> None:
        self.cap = cap
        w = self.want
        self.fl = np.zeros((cap if w & W_FILLS else 1, F_WIDTH), np.int64)
        self.ev = np.zeros((cap if w & W_EVENTS else 1, E_WIDTH), np.int64)
        self.qt = np.zeros((cap if w & W_BBO else 1, Q_WIDTH), np.int64)
        self.dq = np.zeros((cap if w & W_DEPTH else 1, D_HEAD + 6 * self.levels), np.int64)

    def _state(self):
        from .._kernels.match import MatchState

        return MatchState(self.lv, self.od, self.ow, self.bk, self.st)

    def _rows(self):
        """The output buffers as the kernels take them (rebuilt: a flush may reallocate them)."""
        from .._kernels.match import MatchRows

        return MatchRows(self.fl, self.ev, self.qt, self.dq, self.ds)

    def flush(self) -> None:
        st = self.st
        for t, buf, c in (("fills", self.fl, ST_NF), ("events", self.ev, ST_NE),
                          ("bbo", self.qt, ST_NQ), ("depth", self.dq, ST_ND)):
            if st[c]:
                if self.sink is None:
                    self.out[t].append(buf[:st[c]].copy())
                else:
                    self.sink(t, buf[:st[c]])
                st[c] = 0
        if self.cap < st[ST_LIVE] + 64:       # a taker may touch every live order
            self._alloc(2 * (int(st[ST_LIVE]) + 64))

    def steps(self, msg):
        """Apply ``msg``, yielding each time the output buffers were flushed to ``self.out``."""
        from .._kernels.match import Stream, match_rows

        pos, n = 0, len(msg)
        ins = Stream(msg.rows, msg.owner, msg.clock)
        while True:
            status = match_rows(ins, pos, n, self.stp, self.want, self.levels, PREFETCH, self._state(), self._rows())
            pos = int(self.st[ST_POS])
            if status == OK:
                return
            self.flush()                    # NEED_OUTPUT
            yield

    def run(self, msg) -> None:
        for _ in self.steps(msg):
            pass

    def take(self) -> dict:
        """The rows flushed so far, per table (lists of chunks); ``self.out`` starts empty again."""
        out, self.out = self.out, {t: [] for t in TABLES}
        return out

    def expire(self, books: np.ndarray, seq: int, time: int) -> None:
        """End of session: DAY orders expire; then each book's last bbo / depth rows."""
        from .._kernels.match import expire_day

        self.flush()
        if self.cap < len(books) + 8:
            self._alloc(len(books) + 8 + int(self.st[ST_LIVE]))
        expire_day(np.asarray(books, np.int64), seq, time, self.want, self.levels, self._state(), self._rows())

    def widths(self) -> dict:
        return widths(self.levels)

    def result(self) -> dict:
        """Every table's rows, one array each."""
        self.flush()
        widths = self.widths()
        return {t: (np.concatenate(self.out[t]) if self.out[t] else np.zeros((0, widths[t]), np.int64))
                for t in TABLES}

    def chunks(self) -> dict:
        """Every table's rows as the list of chunks the kernels flushed (no copy; with a
        ``sink``: empty lists)."""
        self.flush()
        widths = self.widths()
        return {t: self.out[t] or [np.zeros((0, widths[t]), np.int64)] for t in TABLES}


def _books(prep, want: int, stp: int, levels: int, sink=None, chunk: int | None = None) -> MatchBooks:
    return MatchBooks(len(prep.lv_price), prep.lo, prep.hi, len(prep.key_ids), want=want, stp=stp, levels=levels,
                      chunk=chunk or CHUNK, wide=prep.wide, sink=sink)


#: ``stream_books``'s ``upto`` once every row is out
DONE = np.iinfo(np.int64).max


def stream_books(prep, books, parts, *, want: int, stp: int, levels: int, day_end: bool, chunk: int | None = None):
    """Like ``run_books``, but yields the rows as the kernels make them: ``(upto, rows)``, rows
    a dict of table -> list of int64 row chunks, each at most about ``chunk`` (default
    ``CHUNK``) rows a table, in input order; every row of a ``seq`` below ``upto`` is out
    (``DONE`` with the last). ``parts``: the instructions, in order, as one or more
    ``Instructions`` (each taken when the book gets to it: ``Prepared.chunks()``)."""
    mb = _books(prep, want, stp, levels, chunk=chunk)
    for msg in parts:
        seqs = msg.clock[:, T_SEQ]
        for _ in mb.steps(msg):
            pos = int(mb.st[ST_POS])        # (the kernels stop before an instruction of msg)
            yield (int(seqs[pos]) if pos < len(msg) else int(seqs[-1]) + 1), mb.take()
    if day_end and len(books):
        mb.expire(books, prep.n_rows + 1, prep.end_time)
    mb.flush()
    yield DONE, mb.take()


def run_books(prep, books, parts, *, want: int, stp: int, levels: int, day_end: bool, sink=None) -> dict:
    """Match ``parts`` (the instructions of ``books``, as ``stream_books`` takes them) and
    return every table's int64 rows as the kernels' chunks (lists of arrays; ``sink``: see
    ``MatchBooks``)."""
    mb = _books(prep, want, stp, levels, sink)
    for msg in parts:
        mb.run(msg)
    if day_end and len(books):
        mb.expire(books, prep.n_rows + 1, prep.end_time)
    return mb.chunks()
