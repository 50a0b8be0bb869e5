"""The replay side of a backtest: an engine observer that runs the backtest kernel over
every decoded batch (in the replaying process: ``workers=1``), calls a Python strategy when
the kernel asks for it, and keeps the rows for the tables."""

from __future__ import annotations

import numpy as np

from .._kernels.backtest_layout import (C_ASK, C_ASKQ, C_BID, C_BIDQ, C_EVENT, C_FILL_PX, C_PRICE, C_QTY, C_REASON,
                                        C_REF, C_REM, C_ROW, C_SEQ, C_TAKER, C_TB, C_TIME, CALL, ERR_COUNT,
                                        ERR_FIELDS, ERR_RAISED, CALL_BOOK, CALL_ORDER, LAG_WIDTH, LO_REF, LO_SIDE,
                                        LO_TB, LO_WIDTH, M_WIDTH, MAX_PRICE, NEED_ROOM, OUT_ROWS, Q_WIDTH, R_TIME,
                                        R_WIDTH, RISK_NAMES, ROOM_HASH, ROOM_INS, ROOM_KEYS, ROOM_LAG, ROOM_MARKS,
                                        ROOM_OUT, ROOM_RQ, ROOM_SHADOW, ROOM_VHASH, ROOM_VSHADOW, S_CALL, S_CALLS,
                                        S_COMPILED, S_INS_TAIL, SEND_FIELDS, S_LAG_HEAD, S_LAG_TAIL, S_MARK_NEXT,
                                        S_MARK_PERIOD, S_NKEY, S_NM, S_ERR, S_ERR_ROW, S_ERR_VAL, S_NBOOKS, S_POS,
                                        S_REFUSED, S_RQ_HEAD, S_RQ_TAIL, S_SUB, S_TIMER_NEXT, S_TIMER_PERIOD, S_WIDTH,
                                        S_ZERO_FEED, STOP, X_WIDTH)
from .._kernels.book import ROOM_BOOKS
from .._kernels.simulate_layout import (B_ASKQ, B_BID, B_CALL, B_CFROM, B_CTO, B_DIRTY, B_HEAD, B_ODIRTY, B_RESTING, B_SEEN, B_TAIL, B_WIDTH,
                                        E_WIDTH, F_WIDTH, H_WIDTH, K_FILLED, K_PARTIAL, MID_WIDTH, NONE,
                                        O_WIDTH, OP_MODIFY, OP_NEW, ST_NE, ST_NF, ST_WIDTH)
from ..engine.buffers import Prefaulter, grown, written, zeros
from .context import book_of
from .entry import strategy_address
from ..errors import ObookError, StrategyError
from ..simulation.observer import deepest_side, map_book, shadow_book
from .orders import (EVENT_NAMES, BacktestTop, OrderUpdate, action_of, as_checked, call_name, flags_of,
                     listed, market_price, named_ref, order_numbers, send_each, side_of, tif_of)

HASH = 1 << 12
LEVELS = 64
CHUNK = 1 << 12
MAX_FIRST_EVENTS = 1 << 21
QUEUE_ROWS = 1 << 15     # the view's and the responses' queues (compacted, a return to Python, at their end)
RISK_CODES = {name: code for code, name in enumerate(RISK_NAMES) if name}


def strategy_raised(e: BaseException, now: int, call: str) -> StrategyError:
    """The StrategyError of the strategy's ``call`` (call_name: ``JoinAsk.on_book``) that
    raised ``e`` (an Exception, or a SystemExit the
    strategy raised: ``sys.exit()`` in it stops the backtest as an error, with its tables so
    far; a SIGTERM's SystemExit, which the command raised, is raised again as it is)."""
    import traceback

    from .. import interrupts

    if not isinstance(e, Exception) and interrupts.raised is not None:
        raise e
    what = f"called sys.exit({e.code!r})" if isinstance(e, SystemExit) else f"raised {type(e).__name__}: {e}"
    return StrategyError(f"the strategy {call} {what} (at time {now})", traceback.format_exc())


class BacktestObserver:
    """What the replay's applier gets (obook.engine: ``Replay(observer=...)``)."""

    def __init__(self, spec):
        self.spec = spec
        self.last = None

    def worker(self, worker: int, n_workers: int) -> "BacktestWorker":
        self.last = BacktestWorker(self.spec)
        return self.last


def _entry_of(kernel, args):
    """The compiled entry point of kernel for the types of args (kernel itself when it is
    plain Python, ``OBOOK_KERNELS=python``, or has no such overload)."""
    overloads = getattr(kernel, "overloads", None)
    if not overloads:
        return kernel
    from numba import typeof

    compiled = overloads.get(tuple(typeof(a) for a in args))
    return kernel if compiled is None else compiled.entry_point


def array_kind(a: np.ndarray) -> tuple:
    """What numba's type of the array ``a`` is made of (its dtype, dimensions, layout, and
    whether it is writeable and aligned): two arrays of one kind have one numba type, so a
    kernel's compiled entry found for the one takes the other."""
    f = a.flags
    return a.dtype, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned


def state_kind(x) -> tuple:
    """What numba's type of ``x`` is made of: an array's array_kind, a tuple's class and its
    items' kinds, numba's own type of anything else. Two values of one kind have one numba
    type."""
    if isinstance(x, np.ndarray):
        return array_kind(x)
    if isinstance(x, tuple):
        return type(x), tuple(state_kind(e) for e in x)
    from numba import typeof

    return (typeof(x),)


def _more(a: np.ndarray, used: int, free: int) -> np.ndarray:
    """``a`` with at least ``free`` rows free after its first ``used`` (four times as long,
    those rows kept: few steps), or ``a`` itself when it has them."""
    if a.shape[0] - used >= free:
        return a
    return grown(a, used, max(4 * a.shape[0], used + free))


def first_rows(feed_bytes: int) -> tuple[int, int]:
    """The first rows of the events buffer and of the other output buffers (orders, fills,
    marks) for a feed of ``feed_bytes`` (0: unknown): about an event row per 256 bytes of
    feed and an order per 1,024 for a busy strategy, so that a day rarely grows them
    (each growth copies the rows so far into fresh memory)."""
    return (min(max(CHUNK, feed_bytes // 256), MAX_FIRST_EVENTS),
            min(max(CHUNK, feed_bytes // 1024), MAX_FIRST_EVENTS // 4))


def _rq_none(v):
    return None if v == NONE else int(v)


class BacktestWorker:
    def __init__(self, spec):
        from .context import Context

        self.spec = spec
        self.names: list[str] = []
        self.tb_of: dict[str, int] = {}
        self.locate: list[int] = []
        self.tmap = np.full(1, -1, np.int64)
        self._entries: dict = {}             # kernel -> its compiled entry (see _kernel)
        self._batch_kind = None              # array_kind of the last batch's events and book map
        self._state_kind = None              # state_kind of the named state (see _args)
        self.H = np.zeros((HASH, H_WIDTH), np.int64)
        self.at = np.zeros(3, np.int64)      # the kernels' scratch: the key of the rows being written
        self.Hv = np.zeros((HASH, H_WIDTH), np.int64)
        self.st = np.zeros(ST_WIDTH, np.int64)
        self.stv = np.zeros(ST_WIDTH, np.int64)
        self._books(max(1, len(spec.tickers or ())))
        # the output rows' buffers, first sized from the feed's size (mapped as they are
        # written: a large first size costs nothing until its rows are); where the system
        # will not promise that much memory up front (strict overcommit), small ones that grow
        try:
            self._outputs_of(*first_rows(spec.feed_bytes))
        except (MemoryError, OSError):
            self._outputs_of(CHUNK, CHUNK)
        self.REFKEY = np.full(spec.max_ref if spec.compiled else 1, -1, np.int64)
        self.RQ = np.zeros((QUEUE_ROWS, R_WIDTH), np.int64)
        self.LAG = np.zeros((QUEUE_ROWS, LAG_WIDTH), np.int64)
        self.C = np.zeros(C_ROW, np.int64)
        self.OUT = np.zeros((OUT_ROWS, Q_WIDTH), np.int64)
        self.W = np.zeros(max(1, spec.risk_rk[2]), np.int64)
        self.S = np.zeros(S_WIDTH, np.int64)
        S = self.S
        S[S_SUB] = spec.sub
        S[S_COMPILED] = 1 if spec.compiled else 0
        S[S_ZERO_FEED] = spec.zero_feed
        S[S_TIMER_PERIOD] = spec.timer
        S[S_TIMER_NEXT] = spec.timer_start if spec.timer_start is not None else -1
        S[S_MARK_PERIOD] = spec.mark
        S[S_MARK_NEXT] = -1 if spec.mark else 0
        self.zero_feed = bool(spec.zero_feed)
        self.refs: dict = {}
        self.open: dict = {}
        self.ctx = Context(self)
        self.gate_view = Context(self)     # the book the risk gate reads: one the strategy never holds
        self.strategy = spec.strategy
        self.fn = spec.fn
        self.entry = strategy_address(spec.fn)     # what the kernels call (0: a Python strategy)
        self.raised = None                         # what a compiled strategy raised (sys.unraisablehook)
        self.state = spec.state
        for t in spec.tickers or ():
            self._track(t)
        self.prefault = Prefaulter(7)
        self.prefault.follow(self._outputs())
        self.X = np.zeros(len(SEND_FIELDS), np.int64)     # an order of a Python strategy, for bt_send

    def _outputs_of(self, n_ev: int, n_out: int) -> None:
        """The output buffers: n_ev event rows, n_out rows of the others."""
        self._named = None
        self.EV = zeros((n_ev, E_WIDTH))
        self.OO, self.LO = zeros((n_out, O_WIDTH)), zeros((n_out, LO_WIDTH))
        self.INS, self.MID = zeros((n_out, X_WIDTH)), zeros((n_out, MID_WIDTH))
        self.FL, self.MK = zeros((n_out, F_WIDTH)), zeros((n_out, M_WIDTH))

    def _outputs(self) -> list:
        """The output buffers and the rows written into each (what the prefaulter follows)."""
        st, S = self.st, self.S
        return [(self.EV, int(st[ST_NE])), (self.FL, int(st[ST_NF])), (self.MK, int(S[S_NM])),
                (self.INS, int(S[S_INS_TAIL])), (self.MID, int(S[S_INS_TAIL])), (self.OO, int(S[S_NKEY])),
                (self.LO, int(S[S_NKEY]))]

    def close(self) -> None:
        """Stop the prefaulter's thread (the backtest ended, or failed), and let go of the
        strategy's context: it refers back to this worker, and that cycle would keep the
        output buffers (hundreds of MB on a large day) until Python's cycle collector runs."""
        self.prefault.stop()
        self.ctx = self.gate_view = None
        for a, used in self._outputs():     # their mappings serve the next backtest's buffers
            written(a, (used + 2) * a.strides[0])

    # ------------------------------------------------------------ books

    def _books(self, nt):
        self._named = None
        old = getattr(self, "BK", None)
        n0 = 0 if old is None else old.shape[0]

        def grow(a, shape, fill=0):
            new = np.full(shape, fill, np.int64)
            if a is not None:
                new[:a.shape[0]] = a
            return new
        self.BK = grow(old, (nt, B_WIDTH))
        self.BKv = grow(getattr(self, "BKv", None), (nt, B_WIDTH))
        for BK in (self.BK, self.BKv):
            BK[n0:, B_HEAD] = BK[n0:, B_TAIL] = -1
            BK[n0:, B_BID:B_ASKQ + 1] = (NONE, 0, NONE, 0)
            BK[n0:, B_DIRTY] = BK[n0:, B_ODIRTY] = 1
            if self.spec.continuous is not None:     # the venue's call auctions (obook.simulate's rules)
                BK[n0:, B_CALL] = 1
                BK[n0:, B_CFROM], BK[n0:, B_CTO] = self.spec.continuous
        if old is None:
            self.shadow, self.view = shadow_book(nt, LEVELS), shadow_book(nt, LEVELS)
        for book in (self.shadow, self.view):
            while book.sides.shape[0] < 2 * nt:
                book.grow(ROOM_BOOKS)
        self.VT = grow(getattr(self, "VT", None), (2 * nt, 2), -1)     # a compiled strategy's view: empty
        self.PL = grow(getattr(self, "PL", None), (nt,))
        self.TOPS = grow(getattr(self, "TOPS", None), (nt, 4), NONE)
        self.TOPS[n0:, 1::2] = 0

    def _track(self, ticker):
        tb = len(self.names)
        self.names.append(ticker)
        self.tb_of[ticker] = tb
        self.locate.append(0)
        if tb >= self.BK.shape[0]:
            self._books(2 * self.BK.shape[0])
        self.S[S_NBOOKS] = len(self.names)      # a compiled strategy's order rows name books below
        return tb

    # ------------------------------------------------------------ the kernel

    def _args(self):
        """The kernels' named state of the current arrays, then the strategy's entry, state
        and output rows: built again only after a growth replaced an array (``_named`` None),
        as a Python strategy's every call passes them; the compiled entries found for the
        old arrays go with them when the new ones are of another kind (state_kind)."""
        if self._named is None:
            from .._kernels.backtest import Gate, OwnBooks, Run, View

            spec = self.spec
            self._named = (
                OwnBooks(self.shadow.books(), self.H, self.INS, self.MID, self.OO, self.BK, self.FL, self.EV,
                         self.st),
                View(self.view.books(), self.Hv, self.VT, self.BKv, self.stv),
                Run(self.RQ, self.LAG, self.MK, self.LO, self.REFKEY, self.PL, self.TOPS, self.S, self.C),
                Gate(spec.LM, spec.LA, spec.LB, spec.risk_rk, self.W), self.entry, self.state, self.OUT)
            kind = state_kind(self._named)
            if kind != self._state_kind:
                self._entries.clear()
                self._state_kind = kind
        return self._named

    def batch(self, events: np.ndarray, n: int, names) -> None:
        from .._kernels.backtest import bt_events

        wanted = self.spec.tickers
        for book, ticker, *_ in names:
            tb = self.tb_of.get(ticker)
            if tb is None and wanted is None:
                tb = self._track(ticker)
            if tb is not None:
                self.tmap = map_book(self.tmap, book, tb)
                self.locate[tb] = book
                if getattr(self.fn, "obook_live_locates", False) and tb < len(self.state):
                    self.state[tb] = book
                self.BK[tb, B_SEEN] = 1
        if self.S[S_MARK_NEXT] < 0 and n:
            p = self.S[S_MARK_PERIOD]
            self.S[S_MARK_NEXT] = (int(events[0, 1]) // p + 1) * p
        if self.S[S_TIMER_NEXT] < 0 and n:
            self.S[S_TIMER_NEXT] = int(events[0, 1]) + self.S[S_TIMER_PERIOD]
        self.S[S_POS] = 0
        shape = array_kind(events), array_kind(self.tmap)
        if shape != self._batch_kind:        # this batch's arrays typed otherwise: typed again at the first call
            self._entries.clear()
            self._batch_kind = shape
        self._drive(lambda: self._kernel(bt_events, events, n, self.tmap, *self._args(), self.at))
        self.prefault.follow(self._outputs())

    def _kernel(self, kernel, *args):
        """Call kernel: through its dispatcher the first time after a growth or a batch of
        arrays of another kind (array_kind; the dispatcher types the arguments, and compiles
        or loads the kernel), then through the compiled entry of those types. A dispatcher call
        costs a few microseconds more (it fingerprints every array of the named tuples), and a
        Python strategy returns here at each of its calls (benchmarks/bench_backtest_calls.py);
        finding the entry (``numba.typeof`` over them all, about half a millisecond) is why it
        is kept while the kinds stay."""
        entry = self._entries.get(kernel)
        if entry is not None:
            return entry(*args)
        status = kernel(*args)
        self._entries[kernel] = _entry_of(kernel, args)
        return status

    def _drive(self, step) -> None:
        """Run a kernel step until it is done: calls and room on the way. While a compiled
        strategy runs, what it raises reaches ``sys.unraisablehook`` (numba's C wrapper
        writes it out there) and is kept for the StrategyError."""
        import sys

        hook = sys.unraisablehook
        if self.entry:
            sys.unraisablehook = lambda u: self._unraisable(u, hook)
        try:
            while True:
                status = step()
                if status == CALL:
                    self._call()
                elif status == NEED_ROOM:
                    self._grow(int(self.S[S_CALL]))
                elif status == STOP:
                    raise self._stopped()
                else:
                    return
        finally:
            sys.unraisablehook = hook

    def _unraisable(self, u, hook) -> None:
        """Keep the first exception numba's C wrapper writes out (the strategy's); pass on
        any other."""
        if self.raised is None and "numba" in str(u.object):
            self.raised = u
        else:
            hook(u)

    def _stopped(self) -> StrategyError:
        """The StrategyError of a compiled strategy's call that failed (S_ERR)."""

        S, name = self.S, getattr(self.fn, "__name__", None) or repr(self.fn)[:80]
        err, row, value, now = int(S[S_ERR]), int(S[S_ERR_ROW]), int(S[S_ERR_VAL]), int(self.C[C_TIME])
        if err == ERR_RAISED:
            e, text = self._raised_exception()
            what = f"raised {type(e).__name__}: {e}" if e is not None else "raised an exception"
            return StrategyError(f"the compiled strategy {name} {what} (at time {now})", text)
        if err == ERR_COUNT:
            return StrategyError(f"the compiled strategy {name} returned {value}: the number of order rows it "
                                 f"wrote is 0 to {OUT_ROWS} (at time {now})")
        field = ERR_FIELDS.get(err, f"column {err}")
        live = getattr(self.fn, "obook_live_name", None)
        if live is not None and field in ("Q_ACT", "Q_SIDE"):     # a live numba strategy's (kind, side)
            from ..live.fast_strategy import not_an_order

            why = not_an_order(value, 0) if field == "Q_ACT" else not_an_order(1, value)
            return StrategyError(f"the numba strategy {live} {why}; nothing of it is sent (at time {now})")
        why = {"Q_TB": f"the books it trades are 0 to {len(self.names) - 1} (-1: the call's book)",
               "Q_ACT": "OP_NEW 0, OP_MODIFY 1 or OP_CANCEL 2", "Q_SIDE": "0 buy or 1 sell",
               "Q_TIF": "TIF_GTC 0, TIF_DAY 1, TIF_IOC 2 or TIF_FOK 3", "Q_MARKET": "0 or 1", "Q_POST": "0 or 1",
               "Q_PRICE": f"a limit price is 0 to {MAX_PRICE} (a replace's below 0: keep the price)"}
        return StrategyError(f"the compiled strategy {name} returned order row {row} with {field} {value}: "
                             f"{why.get(field, 'out of range')}; nothing of that row or after it is sent "
                             f"(at time {now})")

    def _raised_exception(self):
        """(the exception a compiled strategy raised or None, its traceback's text)."""
        import traceback

        from .._kernels import ccall

        u, self.raised = self.raised, None
        if u is not None:
            return u.exc_value, "".join(traceback.format_exception(u.exc_type, u.exc_value, u.exc_traceback))
        e = getattr(ccall, "RAISED", [None])[0]         # OBOOK_KERNELS=python
        if e is not None:
            ccall.RAISED[0] = None
            return e, "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return None, ""

    def finish(self) -> dict:
        from .._kernels.backtest import bt_finish

        self._drive(lambda: self._kernel(bt_finish, *self._args(), self.spec.day_end, self.at))
        self.close()
        return self.rows()

    def rows(self) -> dict:
        """The rows so far (also after a failure: the partial tables): views of the output
        buffers, which grow instead of being flushed (the instructions' queue too: its
        rows are the orders table), so there is nothing to join."""
        st, S = self.st, self.S
        cat = {"fills": self.FL[:st[ST_NF]], "events": self.EV[:st[ST_NE]], "marks": self.MK[:S[S_NM]],
               "orders": self.INS[:S[S_INS_TAIL]]}
        cat["names"] = list(self.names)
        cat["calls"] = int(S[S_CALLS])
        cat["unknown_refs"] = int(S[S_REFUSED])     # a compiled strategy's orders naming a ref in use / unknown
        return cat

    def _grow(self, kind: int) -> None:
        from .._kernels.simulate import h_grown

        self._named = None
        S = self.S
        if kind in (ROOM_HASH, ROOM_VHASH):
            H, st = (self.H, self.st) if kind == ROOM_HASH else (self.Hv, self.stv)
            new = h_grown(H, st)
            if kind == ROOM_HASH:
                self.H = new
            else:
                self.Hv = new
        elif kind > ROOM_VSHADOW:
            self.view.grow(kind - ROOM_VSHADOW)
        elif kind > ROOM_SHADOW:
            self.shadow.grow(kind - ROOM_SHADOW)
        elif kind in (ROOM_OUT, ROOM_MARKS):
            # the output rows stay where they are: the buffers double (no flushes to join later)
            need = 4 * (deepest_side(self.shadow) + OUT_ROWS) + 4 * self.BK.shape[0] \
                + 2 * int(self.BK[:, B_RESTING].max()) + 64
            st = self.st
            self.FL = _more(self.FL, int(st[ST_NF]), need)
            self.EV = _more(self.EV, int(st[ST_NE]), 2 * need)
            self.MK = _more(self.MK, int(S[S_NM]), need)
        elif kind == ROOM_INS:
            # the queue keeps its past: its rows are the orders table (and their row numbers)
            t = int(S[S_INS_TAIL])
            self.INS = _more(self.INS, t, OUT_ROWS + 2)
            self.MID = grown(self.MID, t, self.INS.shape[0])
        elif kind in (ROOM_RQ, ROOM_LAG):
            name, hc, tc = ("RQ", S_RQ_HEAD, S_RQ_TAIL) if kind == ROOM_RQ else ("LAG", S_LAG_HEAD, S_LAG_TAIL)
            a = getattr(self, name)
            h, t = int(S[hc]), int(S[tc])
            a[:t - h] = a[h:t]
            S[hc], S[tc] = 0, t - h
            if 2 * (t - h) + 2 * OUT_ROWS + 64 > a.shape[0]:
                setattr(self, name, np.concatenate([a, np.zeros_like(a)]))
        elif kind == ROOM_KEYS:
            n = int(S[S_NKEY])
            self.OO = grown(self.OO, n, 4 * self.OO.shape[0])
            self.LO = grown(self.LO, n, self.OO.shape[0])
        else:
            raise ObookError(f"backtest kernel: unknown room kind {kind}")

    # ------------------------------------------------------------ a Python strategy

    def _call(self) -> None:
        C, S = self.C, self.S
        kind = int(S[S_CALL])
        ctx = self.ctx
        tb = int(C[C_TB])
        now = int(C[C_TIME])
        ctx.time = now
        ctx.instrument = self.names[tb] if tb < len(self.names) else None
        S[S_CALLS] += 1
        strat = self.strategy
        method = ("on_book" if hasattr(strat, "on_book") else None) if kind == CALL_BOOK else \
            "on_order" if kind == CALL_ORDER else "on_timer"
        try:
            if kind == CALL_BOOK:
                if method:
                    orders = strat.on_book(ctx)
                else:
                    bid, ask = _rq_none(C[C_BID]), _rq_none(C[C_ASK])
                    top = BacktestTop(int(C[C_SEQ]), now, ctx.instrument, self.locate[tb], bid,
                                      None if bid is None else int(C[C_BIDQ]), ask,
                                      None if ask is None else int(C[C_ASKQ]), None, ctx)
                    orders = strat(top)
            elif kind == CALL_ORDER:
                ev = int(C[C_EVENT])
                fill = ev in (K_FILLED, K_PARTIAL)
                # the response is the queue's row just taken (the kernel stopped right after it)
                venue_time = int(self.RQ[int(S[S_RQ_HEAD]) - 1, R_TIME])
                upd = OrderUpdate(int(C[C_REF]), EVENT_NAMES[ev], int(C[C_REASON]), int(C[C_PRICE]), int(C[C_QTY]),
                                  int(C[C_REM]), int(C[C_FILL_PX]) if fill else None,
                                  ("taker" if C[C_TAKER] else "maker") if fill else None, venue_time)
                orders = strat.on_order(ctx, upd)
            else:
                orders = strat.on_timer(ctx)
            orders = listed(orders)
        except (Exception, SystemExit) as e:
            raise strategy_raised(e, now, call_name(strat, method)) from e
        send_each(orders, lambda o: self.send(o, now, tb), now, StrategyError, strat, method)

    def send(self, order, now: int, call_tb: int) -> None:
        from .._kernels.backtest import bt_send

        S, spec = self.S, self.spec
        if S[S_INS_TAIL] + 2 >= self.INS.shape[0]:
            self._grow(ROOM_INS)
        if S[S_NKEY] + 2 >= self.OO.shape[0]:
            self._grow(ROOM_KEYS)
        act = action_of(order)
        tb = book_of(self.tb_of, order.symbol) if order.symbol else call_tb
        market, post_only = flags_of(order)
        qty, price, ref, orig = order_numbers(order, act, market)
        if act == OP_NEW:
            key = self.refs.get(ref)
            if key is None:
                key = int(S[S_NKEY])
                S[S_NKEY] = key + 1
                self.refs[ref] = key
            side = side_of(order)
            target = ref
        else:
            target = named_ref(act, ref, orig)
            key = self.refs.get(target)
            if key is None:                 # unknown at the venue: it rejects it (naming this ref and side)
                key = int(S[S_NKEY])
                S[S_NKEY] = key + 1
                self.LO[key, LO_REF], self.LO[key, LO_SIDE], self.LO[key, LO_TB] = ref, side_of(order), tb
            side = int(self.LO[key, LO_SIDE])
        bid, bq, ask, aq = self.gate_view.top(self.names[tb])
        checked = as_checked(order, side, qty, market_price(side, bid, ask) if market else price)
        reason = spec.risk.check(checked, bid, ask, now * spec.unit_ns, bool(market))
        refused = RISK_CODES.get(reason, len(RISK_NAMES)) if reason is not None else 0
        if not refused:
            if act == OP_MODIFY and ref != target:
                self.refs[ref] = key
            if act != 2:
                self.open[ref] = key
        X = self.X                  # SEND_FIELDS
        X[:] = (tb, key, act, side, qty, price, tif_of(order), market, post_only, now, ref, orig, refused)
        bt_send(self.INS, self.LO, S, spec.LM, spec.LA, spec.LB, X)
