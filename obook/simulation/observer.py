"""The worker side of a simulation: an engine observer that runs the own-order kernels.

``SimObserver`` (picklable, the own orders inside) goes to every worker of a replay
(``Replay(observer=...)``); each worker makes a :class:`SimWorker` that sees every decoded
batch right after the book kernel applied it. A worker tracks the books whose ticker is an
own order's instrument as the decoder names them; every book belongs to one worker, so each
instrument's own orders run in exactly one worker. ``finish()`` returns the worker's rows.
"""

from __future__ import annotations

import numpy as np

from .._kernels.simulate_layout import (B_ASKQ, B_BID, B_CALL, B_CFROM, B_CTO, B_END, B_HEAD, B_INS, B_NEXT, B_ODIRTY, B_PROBE, B_DIRTY,
                                        B_RESTING, B_SEEN, B_TAIL, B_TIME, D_HEAD, ST_ND, W_BBO, W_DEPTH,
                                        B_WIDTH, E_WIDTH, I_ARR, I_HAS_PRICE, I_PRICE, I_PROBE, I_QTY, I_ROW, I_TB,
                                        I_TIF, I_WIDTH, F_WIDTH, H_WIDTH, MID_WIDTH, NONE, O_WIDTH,
                                        OK, Q_WIDTH, QN_WIDTH, ROOM_HASH, ROOM_SHADOW, ST_NE, ST_NF, ST_NQ,
                                        ST_POS, ST_WIDTH)
from .._kernels import book as K
from ..engine.books import BookState

#: starting sizes (tests make them tiny to exercise the growth paths)
HASH = 1 << 12
LEVELS = 64
CHUNK = 1 << 12


class SimObserver:
    """What every worker gets: the prepared own orders (obook.simulate.prepare.Own), the
    with-own tables to write (bbo_with_own, depth_with_own with ``levels`` a side), and
    the feed times of continuous trading, outside which the venue runs call auctions
    (``continuous``: (from, to), None: continuous trading all day)."""

    def __init__(self, own, want_bbo: bool = True, day_end: bool = True, want_depth: bool = False,
                 levels: int = 10, continuous: tuple | None = None):
        self.own = own
        self.continuous = continuous
        self.want_bbo = want_bbo
        self.want_depth = want_depth
        self.levels = levels
        self.day_end = day_end

    def worker(self, worker: int, n_workers: int) -> "SimWorker":
        return SimWorker(self)


class SimWorker:
    def __init__(self, obs: SimObserver):
        own = obs.own
        hash_size, levels, chunk = HASH, LEVELS, CHUNK
        self.want = (W_BBO if obs.want_bbo else 0) | (W_DEPTH if obs.want_depth else 0)
        self.day_end = obs.day_end
        # depth_with_own's own levels, last row per book and rows (1 level when not asked for)
        dlev = obs.levels if obs.want_depth else 1
        self.ins = own.ins
        self.names = {name: tb for tb, name in enumerate(own.instruments)}
        nt = len(own.instruments)
        self.tmap = np.full(1, -1, np.int64)
        self.H = np.zeros((hash_size, H_WIDTH), np.int64)
        self.at = np.zeros(3, np.int64)      # the kernels' scratch: the key of the rows being written
        self.shadow = shadow_book(max(nt, 1), levels)
        self.mid = np.full((len(self.ins), MID_WIDTH), NONE, np.int64)
        self.oo = np.zeros((max(len(own.key_ids), 1), O_WIDTH), np.int64)
        self.bk = np.zeros((nt, B_WIDTH), np.int64)
        self.bk[:, B_INS], self.bk[:, B_END] = own.bounds[:, 0], own.bounds[:, 1]
        self.bk[:, B_NEXT] = self.bk[:, B_PROBE] = own.bounds[:, 0]
        self.bk[:, B_HEAD] = self.bk[:, B_TAIL] = -1
        self.bk[:, B_BID:B_ASKQ + 1] = (NONE, 0, NONE, 0)     # the last bbo_with_own: none yet
        self.bk[:, B_DIRTY] = self.bk[:, B_ODIRTY] = 1
        if obs.continuous is not None:
            self.bk[:, B_CALL] = 1
            self.bk[:, B_CFROM], self.bk[:, B_CTO] = obs.continuous
        self.od = np.zeros((max(2 * nt, 1), dlev, 3), np.int64)
        self.dl = np.zeros((max(nt, 1), 6 * dlev), np.int64)
        self.dl.reshape(-1, 2 * dlev, 3)[:, :, :2] = -1        # every level empty: (-1, -1, 0)
        self.st = np.zeros(ST_WIDTH, np.int64)
        self.chunk = chunk
        self.fl = np.zeros((chunk, F_WIDTH), np.int64)
        self.ev = np.zeros((chunk, E_WIDTH), np.int64)
        self.qb = np.zeros((chunk, Q_WIDTH), np.int64)
        self.dq = np.zeros((chunk, D_HEAD + 6 * dlev), np.int64)
        self.out = {"fills": [], "events": [], "bbo": [], "depth": []}

    def batch(self, events: np.ndarray, n: int, names) -> None:
        """The events of a batch the books applied (events[:n]); names: (local book, ticker, ...)."""
        from .._kernels.simulate import sim_events

        for book, ticker, *_ in names:
            tb = self.names.get(ticker)
            if tb is not None:
                self.tmap = map_book(self.tmap, book, tb)
                self.bk[tb, B_SEEN] = 1
        if not self.bk[:, B_SEEN].any():
            return
        self.st[ST_POS] = 0
        while True:
            status, room = sim_events(events, n, self.tmap, self._books(), self._rows(), self.want, self.at)
            if status == OK:
                return
            self._grow(room)

    def _books(self):
        """The kernels' OwnBooks of the current arrays (a growth replaces some)."""
        from .._kernels.simulate import OwnBooks

        return OwnBooks(self.shadow.books(), self.H, self.ins, self.mid, self.oo, self.bk, self.fl, self.ev,
                        self.st)

    def _rows(self):
        from .._kernels.simulate import WithOwn

        return WithOwn(self.qb, self.od, self.dl, self.dq)

    def _grow(self, room: int) -> None:
        from .._kernels.simulate import h_grown

        if room == ROOM_HASH:
            self.H = h_grown(self.H, self.st)
        elif room > ROOM_SHADOW:
            self.shadow.grow(room - ROOM_SHADOW)
        else:
            self.flush()

    def flush(self) -> None:
        st = self.st
        for name, buf, c in (("fills", self.fl, ST_NF), ("events", self.ev, ST_NE), ("bbo", self.qb, ST_NQ),
                             ("depth", self.dq, ST_ND)):
            if st[c]:
                self.out[name].append(buf[:st[c]].copy())
                st[c] = 0
        need = 4 * (deepest_side(self.shadow) + int(self.bk[:, B_RESTING].max(initial=0))) + 64
        if need > self.fl.shape[0]:
            self.fl = np.zeros((need, F_WIDTH), np.int64)
            self.ev = np.zeros((2 * need, E_WIDTH), np.int64)
            self.qb = np.zeros((need, Q_WIDTH), np.int64)

    def finish(self) -> dict:
        """The rows of the day: the instructions after each book's last record run, DAY orders
        expired (``day_end``)."""
        from .._kernels.simulate import sim_finish

        self.st[ST_POS] = 0
        while True:
            status, room = sim_finish(self._books(), self._rows(), self.want, self.day_end, self.at)
            if status == OK:
                break
            self._grow(room)
        return self.partial()

    def partial(self) -> dict:
        """The rows so far (a replay stopped by a bad record: no end of day)."""
        self.flush()
        widths = {"fills": F_WIDTH, "events": E_WIDTH, "bbo": Q_WIDTH, "depth": self.dq.shape[1]}
        rows = {t: np.concatenate(v) if v else np.zeros((0, widths[t]), np.int64) for t, v in self.out.items()}
        seen = self.bk[:, B_SEEN] != 0
        # each instruction's mids come from the worker that ran its book
        mine = np.isin(self.ins[:, I_TB], np.flatnonzero(seen))
        # the instructions arriving after their book's last record (all of them: a unit mistake?)
        late = int((self.ins[mine, I_ARR] > self.bk[self.ins[mine, I_TB], B_TIME]).sum())
        return {**rows, "seen": seen, "mid": self.mid[mine], "mid_rows": self.ins[mine, I_ROW],
                "late": late, "shown": int(mine.sum()), "last_time": int(self.bk[seen, B_TIME].max(initial=0))}


def shadow_book(books: int, levels: int) -> BookState:
    """The shadow of ``books`` tracked books: the replay's book arrays with time priority and
    the simulation's queue node columns, starting with room for ``levels`` levels; its orders
    are a sparse few of the feed's ids, kept in the book's hash table."""
    return BookState(books=books, levels=levels, pages=1, overflow=64, queue=True, node_width=QN_WIDTH,
                     sparse_refs=True)


def deepest_side(shadow: BookState) -> int:
    """The most levels a side of the shadow's books has (near and far)."""
    sides = shadow.sides
    return int((sides[:, 1] + sides[:, 3]).max(initial=0))


def map_book(tmap: np.ndarray, book: int, tb: int) -> np.ndarray:
    """``tmap`` (the decoder's book -> tracked book, -1: untracked) with book -> tb, grown
    when the book is past its end."""
    if book >= len(tmap):
        grown = np.full(max(book + 1, 2 * len(tmap)), -1, np.int64)
        grown[:len(tmap)] = tmap
        tmap = grown
    tmap[book] = tb
    return tmap


def warm() -> None:
    """Load the simulation kernels (numba cache) into this process once: forked workers
    inherit them instead of each loading them again at every replay."""
    global _warm
    if _warm:
        return
    _warm = True
    from .._kernels.layout import ACT_ADD, EV_WIDTH
    from .prepare import Own

    ins = np.zeros((1, I_WIDTH), np.int64)
    ins[0, I_ARR] = ins[0, I_PROBE] = 2
    ins[0, I_QTY], ins[0, I_TIF], ins[0, I_PRICE], ins[0, I_HAS_PRICE] = 1, 1, 100, 1
    own = Own(ins, ["W"], np.zeros(1, np.int64), np.array([[0, 1]], np.int64), np.zeros(1, np.int64), 1)
    ev = np.zeros((2, EV_WIDTH), np.int64)
    ev[:, 1:7] = ((1, 0, ACT_ADD, 1, 10, 100), (3, 0, ACT_ADD, 2, 10, 100))
    w = SimObserver(own, want_depth=True, levels=1).worker(0, 1)
    w.batch(ev, 2, [(0, "W")])
    w.finish()
    # and the shadow's growth kernels (its order and far-level hash tables, the price lists)
    w.shadow.grow(K.ROOM_OVERFLOW)
    w.shadow.grow(K.ROOM_FAR_HASH)
    w._grow(ROOM_HASH)


_warm = False
