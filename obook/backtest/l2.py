"""Backtests on market-by-price (L2) inputs: the strategy, its orders in the L2 books with
the probabilistic queue model (obook.backtest.l2_venue) and the latencies between, in one
time order (the same order as the order-level backtest: an instruction arriving at ``a``
comes after every feed row at or before ``a``; what reaches the strategy at ``s`` after
everything at the venue at or before ``s``). The strategy interface, the risk gate and the
tables are the order-level backtest's; compiled strategies are not run on L2 inputs.
"""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np

from .._kernels.l2_queue import M_LOG, M_LOG2, M_POWER, M_POWER2, M_POWER3, M_RISK_AVERSE, Q_SIDE
from .._kernels.backtest_layout import R_POST_ONLY, X_ORIG, X_REF
from .._kernels.simulate_layout import (I_ACT, I_ARR, I_ROW, I_TB, K_ACCEPTED, K_FILLED, K_MODIFIED, K_PARTIAL,
                                        K_REJECTED, NONE, OP_MODIFY, OP_NEW, R_FOK, R_NOT_LIVE)
from ..errors import ObookError
from .orders import (EVENT_NAMES, BacktestTop, OpenOrder, OrderUpdate, action_of, as_checked, call_name,
                     flags_of, listed, market_price, named_ref, order_numbers, send_each, side_of, tif_of)

#: the queue models by name, and the exponent of those that have one
MODELS = {"power": M_POWER, "power2": M_POWER2, "power3": M_POWER3, "log": M_LOG, "log2": M_LOG2,
          "risk-averse": M_RISK_AVERSE}
DEFAULT_MODEL = "power:2"
ARRIVE, DELIVER, RESPONSE, TIMER = 1, 2, 3, 4


def parse_model(text: str, option: str = "queue model") -> tuple[int, float]:
    """``power:N``, ``power2:N``, ``power3:N``, ``log``, ``log2``, ``risk-averse`` -> (code, N);
    an error names the model by ``option`` (the command line's ``--queue``)."""
    name, colon, arg = str(text).partition(":")
    if name not in MODELS:
        raise ObookError(f"{option} {text!r}: one of {', '.join(MODELS)} (power, power2, power3 take :N)")
    if name.startswith("power"):
        try:
            n = float(arg) if arg else (2.0 if not colon else math.nan)
        except ValueError:
            n = math.nan
        if not (math.isfinite(n) and n > 0):
            raise ObookError(f"{option} {text!r}: the exponent N of {name}:N is a finite number > 0")
        return MODELS[name], n
    if arg:
        raise ObookError(f"{option} {text!r}: {name} takes no parameter")
    return MODELS[name], 1.0


def _constant(value, what: str) -> int:
    from ..simulation.prepare import MAX_LATENCY_NS

    if value is None:
        return 0
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value <= MAX_LATENCY_NS:
        return int(value)
    raise ObookError(f"{what}: an L2 backtest takes constant latencies (0 to {MAX_LATENCY_NS} ns, a week), "
                     f"not {value!r}")


class L2Context:
    """The strategy's view (obook.backtest.context.Context's interface): ``time``,
    ``instrument``, ``top``, ``depth``, ``orders``, ``position``."""

    def __init__(self, run):
        self._run = run
        self.time = 0
        self.instrument = None

    def _tb(self, instrument):
        from .context import book_of

        return book_of(self._run.tb_of, instrument if instrument is not None else self.instrument)

    def depth(self, levels: int = 10, instrument=None):
        view = self._run.view[self._tb(instrument)]
        if view is None:
            return [], []
        out = []
        for px, sz in ((view[0], view[1]), (view[2], view[3])):
            out.append([(int(p), int(q), None) for p, q in zip(px[:levels], sz[:levels]) if p != NONE])
        return out[0], out[1]

    def top(self, instrument=None):
        bids, asks = self.depth(1, instrument)
        bp, bq = bids[0][:2] if bids else (None, None)
        ap, aq = asks[0][:2] if asks else (None, None)
        return bp, bq, ap, aq

    @property
    def orders(self) -> dict:
        return {ref: OpenOrder(ref, *o[:6]) for ref, o in self._run.local.items() if o[6] in ("pending", "open")}

    def position(self, instrument=None) -> int:
        return self._run.pos[self._tb(instrument)]


class L2Run:
    def __init__(self, day, strategy, model, power, latencies, risk, unit_ns, timer, on, timer_start=None):
        from .l2_venue import L2Venue

        self.day, self.strategy, self.risk, self.unit_ns = day, strategy, risk, unit_ns
        self.feed_lat, self.order_lat, self.resp_lat = latencies
        self.names = day.names
        self.tb_of = {n: i for i, n in enumerate(self.names)}
        self.view = [None] * len(self.names)
        self.pos = [0] * len(self.names)
        self.local = {}                     # ref -> [symbol, side, price, remaining, filled, pending, state, key]
        self.kept = {}                      # row -> the record of a new order sent while its ref's was live
        self.renames = {}                   # row -> the new ref of a replace not yet answered
        self.ref_key, self.key_ref = {}, {}
        self.heap, self.order = [], itertools.count()
        self.last_arrival = self.last_response = 0
        self.calls = 0
        self.timer, self.on, self.timer_start = timer, on, timer_start
        self.ctx = L2Context(self)
        self.gate_view = L2Context(self)   # the book the risk gate reads: one the strategy never holds
        self.venue = L2Venue(len(self.names), model, power, self._respond)

    def push(self, t, kind, payload):
        heapq.heappush(self.heap, (t, kind, next(self.order), payload))

    def _respond(self, key, kind, reason, price, qty, rem, fill_price, taker, row):
        due = max(self.venue.time + self.resp_lat, self.last_response)
        self.last_response = due
        self.push(due, RESPONSE, (key, kind, reason, price, qty, rem, fill_price, taker, self.venue.time, row))

    # ------------------------------------------------------------ the loop

    def run(self, interval_units: int, day_end: bool):
        d, v = self.day, self.venue
        next_mark = None
        if self.timer and len(d.time):      # (as the order-level loop: one timer after the first row)
            first = self.timer_start if self.timer_start is not None else int(d.time[0]) + self.timer
            self.push(first, TIMER, None)
        for i in range(len(d.time)):
            t, tb = int(d.time[i]), int(d.tb[i])
            self._drain(t)
            if interval_units:
                if next_mark is None:
                    next_mark = (t // interval_units + 1) * interval_units
                if next_mark <= t:      # one mark for a stretch without rows, as the order-level loop
                    for b in range(len(self.names)):
                        v.mark(b, next_mark)
                    next_mark = (t // interval_units + 1) * interval_units
            if d.trade[i]:
                v.trade(t, i + 1, tb, int(d.side[i]), int(d.price[i]), int(d.size[i]))
                continue
            levels = (d.bid_px[i], d.bid_sz[i], d.ask_px[i], d.ask_sz[i])
            old = v.books[tb]
            v.book(t, i + 1, tb, levels)
            changed = old is None or (old[0][0], old[1][0], old[2][0], old[3][0]) != (
                levels[0][0], levels[1][0], levels[2][0], levels[3][0])
            if self.on == "book" or changed:
                self.push(t + self.feed_lat, DELIVER, (tb, levels, i + 1))
        end = int(d.time[-1]) if len(d.time) else 0
        self._drain(end + 1)
        while self.heap:                    # responses after the last row; no more timers
            item = heapq.heappop(self.heap)
            if item[1] != TIMER:
                self._step(item)
        if day_end:
            v.close(end)
        for b in range(len(self.names)):
            v.mark(b, end)
        return v.rows(self.names, self.calls)

    def _drain(self, t):
        """Everything due before time t: instructions arriving at the venue at t come after
        every feed row at t, and so does what reaches the strategy at t."""
        while self.heap and self.heap[0][0] < t:
            self._step(heapq.heappop(self.heap))

    def _step(self, item):
        t, kind, _, payload = item
        if kind == ARRIVE:
            self.venue.arrive(payload, t)
            return
        self.ctx.time = t
        if kind == DELIVER:
            tb, levels, seq = payload
            self.view[tb] = levels
            self.ctx.instrument = self.names[tb]
            if hasattr(self.strategy, "on_book"):
                self._call("on_book", lambda: self.strategy.on_book(self.ctx), t, tb)
            elif callable(self.strategy) and not hasattr(self.strategy, "on_order"):
                bid, bq, ask, aq = self.ctx.top()
                top = BacktestTop(seq, t, self.names[tb], 0, bid, bq, ask, aq, None, self.ctx)
                self._call(None, lambda: self.strategy(top), t, tb)
        elif kind == RESPONSE:
            self._deliver(t, *payload)
        else:
            self.push(t + self.timer, TIMER, None)
            if hasattr(self.strategy, "on_timer"):
                self._call("on_timer", lambda: self.strategy.on_timer(self.ctx), t, 0)

    def _deliver(self, t, key, kind, reason, price, qty, rem, fill_price, taker, venue_time, row):
        renamed = self.renames.pop(row, None)
        if renamed is not None and kind == K_MODIFIED:  # the venue accepted the replace: its ref names the order
            old = self.key_ref[key]
            if old in self.local:
                self.local[renamed] = self.local.pop(old)
            self.key_ref[key] = renamed
        ref = self.key_ref[key]
        away = self._renamed_away(ref, kind, reason, row)
        if away is not None:        # the ref it named: the order's record is another ref's
            ref = away
        kept = self.kept.pop(row, None)
        if kept is not None and kind == K_ACCEPTED:     # the live order of its ref ended first: this one is it
            self.local[ref] = kept
        o = kept if kept is not None and kind == K_REJECTED else None if away is not None else self.local.get(ref)
        if o is not None and kept is None and o[6] == "pending" and kind == K_REJECTED \
                and reason in (R_FOK, R_POST_ONLY):
            self._next_pending(ref, key, row)
        fill = kind in (K_FILLED, K_PARTIAL)
        if o is None:           # a cancel or replace of a ref never sent or renamed: rejected, no record to follow
            o = [self.names[int(self.venue.ins[row - 1][I_TB])]]
        else:
            if fill:
                o[4] += qty
                self.pos[self.tb_of[o[0]]] += qty if o[1] == "B" else -qty
            o[3] = rem
            if price >= 0:
                o[2] = price
            o[5] = False
            o[6] = "done" if (rem == 0 and kind != K_MODIFIED) or kind == K_REJECTED else "open"
        if hasattr(self.strategy, "on_order"):
            upd = OrderUpdate(ref, EVENT_NAMES[kind], reason, price, qty, rem, fill_price if fill else None,
                              ("taker" if taker else "maker") if fill else None, venue_time)
            self.ctx.instrument = o[0]
            self._call("on_order", lambda: self.strategy.on_order(self.ctx, upd), t, self.tb_of[o[0]])

    def _renamed_away(self, ref, kind, reason, row):
        """The ref a cancel or replace (instruction ``row``) named when the venue rejects it as
        not live and the order's record is under another ref (``ref``: a replace the venue
        accepted before renamed the order, or the replace whose new ref it names was
        rejected); else None."""
        if kind != K_REJECTED or reason != R_NOT_LIVE or row < 1:
            return None
        r = self.venue.ins[row - 1]
        if int(r[I_ACT]) == OP_NEW:
            return None
        named = named_ref(int(r[I_ACT]), int(r[X_REF]), int(r[X_ORIG]))
        return named if named != ref else None

    def _next_pending(self, ref, key, row):
        """The pending order of ``ref`` (instruction ``row``) was turned away whole, freeing
        its ref: the next new order of that ref sent after it is the ref's record, pending
        (the turned-away one's record is finished by the caller)."""
        later = [r for r, record in self.kept.items() if r > row and record[7] == key]
        if later:
            self.local[ref] = self.kept.pop(min(later))

    def _call(self, method, fn, t, tb):
        """``fn()``, the strategy's ``method`` (None: the strategy itself, called with a top),
        and the orders it returns sent."""
        from .worker import StrategyError, strategy_raised

        self.calls += 1
        try:
            orders = listed(fn())
        except (Exception, SystemExit) as e:
            raise strategy_raised(e, t, call_name(self.strategy, method)) from e
        send_each(orders, lambda o: self.send(o, t, tb), t, StrategyError, self.strategy, method)

    def send(self, order, now, call_tb):
        from .._kernels.backtest_layout import RISK_NAMES
        from .context import book_of
        from .worker import RISK_CODES

        act = action_of(order)
        symbol = order.symbol or self.names[call_tb]
        tb = book_of(self.tb_of, symbol)
        market, post_only = flags_of(order)
        qty, price, ref, orig = order_numbers(order, act, market)
        target = named_ref(act, ref, orig)
        if act == OP_NEW:
            key = self.ref_key.get(ref)
            if key is None:
                key = self.ref_key[ref] = self.venue.key()
            side = side_of(order)
        else:
            key = self.ref_key.get(target)
            if key is None:
                key = self.venue.key()
            side = int(self.venue.OQ[key, Q_SIDE])
        bid, _, ask, _ = self.gate_view.top(symbol)
        checked = as_checked(order, side, qty, market_price(side, bid, ask) if market else price)
        reason = self.risk.check(checked, bid, ask, now * self.unit_ns, bool(market))
        refused = RISK_CODES.get(reason, len(RISK_NAMES)) if reason is not None else 0
        r = self.venue.instruction(0, tb, key, act, side, qty, price, tif_of(order), market,
                                   post_only, ref, orig, now, refused)
        self.key_ref.setdefault(key, ref)
        if act == OP_NEW:
            record = [symbol, "BS"[side], price, qty, 0, True, "done" if refused else "pending", key]
            live = self.local.get(self.key_ref.get(key, ref), [None] * 7)      # the order of that id, by its name now
            if live[6] in ("pending", "open"):
                if not refused:         # the venue rejects it as a duplicate id unless the live one ends first
                    self.kept[int(r[I_ROW])] = record
            else:
                self.local[ref] = record
                self.key_ref[key] = ref
        elif act == OP_MODIFY and not refused and target in self.local:
            self.renames[int(r[I_ROW])] = ref       # the record takes the new ref when the venue accepts it
            self.ref_key[ref] = key
        if refused:
            return
        arrival = max(now + self.order_lat, self.last_arrival)
        self.last_arrival = arrival
        r[I_ARR] = arrival
        self.push(arrival, ARRIVE, r)


def backtest_l2(feed, strategy, *, queue=None, tickers=None, feed_latency=0, order_latency=0, response_latency=0,
                timer=None, timer_start=None, fees=None, risk=None, interval: float = 60.0, capital=None,
                day_end: bool = True, on=None, names=None):
    """``obook.backtest`` on an L2 input (obook.backtest.l2_input) with the queue model
    ``queue`` (default power:2). Times are ns (the inputs' ``ts_recv``), ``timer_start`` too. ``names``: the
    interval's and the timer's names in errors (obook.backtest.FEED_CHECKED by default)."""
    from ..live.risk import RiskGate
    from . import FEED_CHECKED, BacktestResult, timer_ticks
    from .arguments import check_interval, check_timer_start_use, strategy_on, timer_period
    from .l2_input import read_l2
    from .tables import Fees, build
    from .worker import StrategyError

    if hasattr(strategy, "fn") and hasattr(getattr(strategy, "fn"), "py_func"):
        raise ObookError("an L2 backtest runs Python strategies (on_book / on_order / on_timer, or callable(top))")
    model, power = parse_model(queue or DEFAULT_MODEL)
    tickers = tickers or getattr(strategy, "tickers", None)       # (obook.backtest made them a list)
    day = read_l2(feed, tickers)
    lat = tuple(_constant(v, w) for v, w in ((feed_latency, "feed_latency"), (order_latency, "order_latency"),
                                             (response_latency, "response_latency")))
    names = {**FEED_CHECKED, **(names or {})}
    period = timer_period(strategy, timer, names["timer"])
    interval_ns = check_interval(interval, 1, names["interval"])
    ticks = timer_ticks(period, 1, names["timer"] if timer is not None else "timer")
    check_timer_start_use(timer_start, ticks, names["timer_start"])
    run = L2Run(day, strategy, model, power, lat, risk if risk is not None else RiskGate(), 1, ticks,
                strategy_on(strategy, on), timer_start)
    fees = fees or Fees()
    try:
        rows = run.run(interval_ns, day_end)
    except StrategyError as e:
        tables, summary = build(run.venue.rows(run.names, run.calls), fees, 1, interval_ns, capital)
        e.partial = BacktestResult(tables, summary, {})
        raise
    finally:
        # the context and the venue (its response hook) refer back to the run: without
        # those cycles the day's rows go as soon as the result does, not at a cycle collection
        run.ctx = run.gate_view = run.venue = None
    tables, summary = build(rows, fees, 1, interval_ns, capital)
    return BacktestResult(tables, summary, {"rows": len(day.time), "calls": run.calls,
                                            "queue": queue or DEFAULT_MODEL})
