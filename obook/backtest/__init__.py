"""Closed-loop backtests: a strategy, the day replayed through the books, and its orders in
the books with the latencies in between.

    >>> r = obook.backtest("day.dbn", MyStrategy(), tickers=["SYM0"], order_latency=50_000)
    >>> r.orders, r.events, r.fills, r.positions, r.equity      # pyarrow.Tables
    >>> r.summary                                                # pnl, return, sharpe, ...

See docs/backtesting.md for the strategy interface, the time model and the queue rules.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from ..errors import ObookError
from ..simulation import SimResult
from .tables import Fees

log = logging.getLogger("obook")

__all__ = ["backtest", "BacktestResult", "Fees", "Order", "compiled", "TABLES", "StrategyError"]

TABLES = ("orders", "events", "fills", "positions", "equity")


def __getattr__(name):
    if name == "Order":
        from .orders import Order
        return Order
    if name == "StrategyError":
        from ..errors import StrategyError
        return StrategyError
    raise AttributeError(name)


class BacktestResult(SimResult):
    """The tables of a backtest (``orders``, ``events``, ``fills``, ``positions``,
    ``equity``) as ``pyarrow.Table`` attributes, ``summary`` (a dict) and ``stats``."""

    RUN = "backtest"

    def __init__(self, tables: dict, summary: dict, stats: dict):
        super().__init__(tables, stats)
        self.summary = summary

    def write(self, prefix: str, suffix: str = "") -> list[str]:
        """Each table as Parquet: ``{prefix}.{table}.parquet{suffix}``, all or none (each is
        written to a temporary name first: a failure, a full disk or Ctrl-C, leaves none of
        them and no temporary file); returns the paths. ``prefix`` is a path in a folder that
        exists, such as ``DIR/backtest``, not a folder itself."""
        import pyarrow.parquet as pq

        from ..errors import OutputError
        from ..interrupts import deferred
        from ..tempfiles import remove_quietly, temp_path

        prefix = _prefix(prefix)
        staged, path = [], prefix
        try:
            for name in self._tables:     # a folder under a final name: found before any file is written
                path = f"{prefix}.{name}.parquet{suffix}"
                if os.path.isdir(path):
                    raise OutputError(f"{path}: is a directory; the {name} table cannot be written there")
            for name, t in self._tables.items():
                path = f"{prefix}.{name}.parquet{suffix}"
                staged.append((temp_path(path), path))
                pq.write_table(t, staged[-1][0])
            with deferred():    # a Ctrl-C: once every table is in place (not some of them)
                for tmp, path in staged:
                    os.replace(tmp, path)
        except OSError as e:        # (pyarrow's text names the temporary file: the errno's says it all)
            raise OutputError(f"{path}: write failed: {os.strerror(e.errno) if e.errno else e.strerror or e}") from None
        finally:
            with deferred():    # a second Ctrl-C: once every temp file is gone
                for tmp, _ in staged:
                    remove_quietly(tmp)         # (gone once renamed)
        return [p for _, p in staged]


def _prefix(prefix) -> str:
    """A result's file prefix as text: a path in a folder that exists, not a folder itself."""
    from ..errors import OutputError
    from .orders import shown

    text = os.fspath(prefix) if isinstance(prefix, (str, os.PathLike)) else None
    if not isinstance(text, str) or not text.strip():
        raise ObookError(f"write: give the tables' prefix, a path such as DIR/backtest, not {shown(prefix)}")
    if os.path.isdir(text) or text.endswith(("/", os.sep)):
        raise ObookError(f"{text}: a folder, not a prefix: give one in it, such as "
                         f"{os.path.join(text, 'backtest')} (backtest.orders.parquet ...)")
    folder = os.path.dirname(text) or "."
    if not os.path.isdir(folder):
        raise OutputError(f"{text}: write failed: there is no folder {folder}")
    return text


@dataclass
class CompiledStrategy:
    """A numba strategy ``fn(call, lo, refkey, state, out) -> n`` run inside the compiled
    loop (see docs/backtesting.md, "Compiled strategies"). ``state``: its int64 scratch
    array (kept between calls); ``on``: what it is called on ("bbo" or "book", "orders",
    "timer"); ``timer``: the timer's period in ns."""

    fn: object
    state: np.ndarray = field(default_factory=lambda: np.zeros(64, np.int64))
    tickers: tuple | None = None
    on: tuple = ("bbo",)
    timer: int | None = None
    timer_start: int | None = None


def compiled(fn, state=None, tickers=None, on=("bbo",), timer=None, timer_start=None) -> CompiledStrategy:
    from ..checks import check_names, ticker_names
    from .arguments import check_timer

    tickers, timer = ticker_names(tickers), check_timer(timer)
    on = check_names("on", on)
    _subscriptions(on, timer)               # what it is called on: names it knows, in any case
    on = tuple(o.lower() for o in on)
    return CompiledStrategy(fn, _state_array(state), tuple(tickers) if tickers else None, on, timer, timer_start)


def _state_array(state) -> np.ndarray:
    """A compiled strategy's scratch array: 64 zeros by default, else whole numbers of 64
    bits (kept as given when it is an int64 array already: the strategy's own)."""
    from ..live.fast_strategy import whole_numbers

    return np.zeros(64, np.int64) if state is None else _one_row(whole_numbers(state))


def _one_row(state: np.ndarray) -> np.ndarray:
    """``state`` when it is one contiguous row: the compiled loop hands the strategy its
    memory as that, so the rows of a 2-D array, or every element of a strided view (a[::2]),
    would not be the ones the strategy reads and writes."""
    if state.ndim != 1 or not state.flags.c_contiguous:
        step = " with a step" if state.ndim == 1 else ""
        raise ObookError("a compiled strategy's state must be one contiguous row of int64 (np.zeros(n, np.int64)), "
                         f"not an array of shape {state.shape}{step}")
    return state


def _subscriptions(on, timer) -> int:
    from .._kernels.backtest_layout import SUB_BBO, SUB_BOOK, SUB_ORDERS, SUB_TIMER

    from ..checks import check_choice

    bits = {"bbo": SUB_BBO, "book": SUB_BOOK, "orders": SUB_ORDERS, "timer": SUB_TIMER}
    sub = 0
    for o in on:
        sub |= bits[check_choice("on", o, tuple(bits))]        # 'BOOK' too
    if timer is not None:
        sub |= SUB_TIMER
    return sub


@dataclass
class Spec:
    strategy: object
    fn: object
    state: np.ndarray
    compiled: bool
    tickers: tuple | None
    sub: int
    zero_feed: int
    timer: int
    timer_start: int | None
    mark: int
    LM: np.ndarray
    LA: np.ndarray
    LB: np.ndarray
    risk: object
    risk_rk: np.ndarray
    unit_ns: int
    day_end: bool
    max_ref: int = 1 << 20
    feed_bytes: int = 0         # the feed's size, when known: the output buffers' first sizes
    continuous: tuple | None = None     # the feed times of continuous trading (FeedFormat.continuous)


def _live_fn(strategy):
    """The numba function inside an obook.live.strategy.numba_strategy wrapper, or None."""
    fn = getattr(strategy, "fn", None)
    if fn is not None and hasattr(fn, "py_func"):
        return fn
    for cell in getattr(strategy, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if hasattr(v, "py_func") and getattr(strategy, "__module__", "") == "obook.live.strategy":
            return v
    return None


def _strategy_spec(strategy, tickers, on, timer, timer_start, unit_ns, timer_name="timer"):
    """(fn, state, compiled, tickers, subscriptions, timer period, timer start); an error
    about ``timer`` names it by ``timer_name``."""
    from .adapt import live_adapter
    from .arguments import check_timer_use, strategy_on, timer_period

    if isinstance(strategy, CompiledStrategy):
        t = tickers or strategy.tickers
        period = timer if timer is not None else strategy.timer
        return (strategy.fn, strategy.state, True, t, _subscriptions(strategy.on, period), period,
                timer_start if timer_start is not None else strategy.timer_start)
    fn6 = _live_fn(strategy)
    if fn6 is not None:     # a live numba strategy (stateful: its fresh state after the locates)
        from .adapt import LOCATES

        check_timer_use(strategy, timer, timer_name)
        if hasattr(strategy, "check_result"):   # a float or a bool field: not cast by the loop's int64
            strategy.check_result()
        if hasattr(strategy, "fresh"):
            strategy = strategy.fresh()
        stateful = bool(getattr(strategy, "stateful", False))
        own = np.asarray(strategy.state, np.int64) if stateful else np.zeros(0, np.int64)
        return (live_adapter(fn6, stateful), np.concatenate([np.zeros(LOCATES, np.int64), own]), True, tickers,
                _subscriptions(("bbo",), None), None, None)
    tickers = tickers or getattr(strategy, "tickers", None)
    period = timer_period(strategy, timer, timer_name)
    names = []
    if hasattr(strategy, "on_book") or (callable(strategy) and not hasattr(strategy, "on_timer")
                                        and not hasattr(strategy, "on_order")):
        names.append(strategy_on(strategy, on))
    if hasattr(strategy, "on_order"):
        names.append("orders")
    if period is not None:
        names.append("timer")
    # no compiled function (None): the kernels' caches then serve every process
    return None, np.zeros(1, np.int64), False, tickers, _subscriptions(names, period), period, timer_start


def timer_ticks(period, unit_ns: int, name: str = "timer") -> int:
    """A timer's period (ns) in the feed's time units: a whole number of the feed's time units
    from one (a shorter one would call the strategy again and again at one time) to a week;
    0 for no timer (None). An error names it by ``name``."""
    from ..simulation.prepare import MAX_LATENCY_NS

    if period is None:
        return 0
    from ..checks import is_integer, not_int

    if not is_integer(period):
        raise ObookError(f"{name} {not_int(period)}: give an integer of ns")
    if not unit_ns <= period <= MAX_LATENCY_NS:
        raise ObookError(f"{name} {int(period)} ns: give {unit_ns} ns (the feed's time unit) to "
                         f"{MAX_LATENCY_NS} ns (a week)")
    if period % unit_ns:
        raise ObookError(f"{name} {int(period)} ns: not a whole number of the feed's time unit ({unit_ns} ns)")
    return int(period) // unit_ns


PIPELINE_BYTES = 8 << 20


def _size(feed) -> int:
    """The feed's size in bytes (0: not a file; a feed in several files: their sum)."""
    import os

    if isinstance(feed, (list, tuple)):
        return sum(map(_size, feed))
    try:
        return os.path.getsize(feed)
    except (OSError, TypeError, ValueError):
        return 0


def _pipelined(feed, pipeline) -> bool:
    """Whether the replay's books run in a worker process beside the backtest: asked, or
    worth a process (two cores, a file large enough)."""
    if pipeline is not None:
        return bool(pipeline)
    import os

    return (os.cpu_count() or 1) >= 2 and _size(feed) >= PIPELINE_BYTES


def backtest(feed, strategy, *, tickers=None, feed_latency=0, order_latency=0, response_latency=0, seed: int = 0,
             timer=None, timer_start=None, fees: Fees | None = None, risk=None, interval: float = 60.0,
             capital=None, format=None, date=None, on_error: str = "raise", day_end: bool = True,
             on=None, queue: str | None = None, pipeline: bool | None = None, progress=None) -> BacktestResult:
    """Run ``strategy`` against the replayed ``feed`` (see docs/backtesting.md): a file, a
    stream, one feed in several files (a glob pattern, a list or tuple of paths) or an L2 input.

    ``strategy``: a live strategy (``strategy(top) -> orders``), an object with ``on_book``,
    ``on_order``, ``on_timer`` methods, an ``obook.live.strategy.numba_strategy``, or
    :func:`compiled`. ``tickers``: the instruments it trades and sees (None: its
    ``tickers`` attribute, else every instrument). Latencies in ns (obook.backtest.latency):
    an integer, a distribution drawn with ``seed``, or a recorded table. ``timer``: ns
    between timer calls. ``fees``: :class:`Fees`. ``risk``: an obook.live.risk.RiskGate
    (the live defaults otherwise, in the feed's units). ``interval``: seconds between equity samples and of the
    Sharpe ratio's returns. ``capital``: the return's denominator (price units x quantity units, the feed's, as pnl;
    default half the traded notional). ``queue``: "fifo" (order-level feeds: the feed's
    order ids) or an L2 queue model ("power:N", "power2:N", "power3:N", "log", "log2",
    "risk-averse"); an L2 input (obook.backtest.l2_input: mbp-1 / mbp-10 tables or DBN
    files) runs with one (default power:2). ``pipeline``: the replay's books in a worker
    process, side by side with the strategy and its venue in this one (None: when the
    machine has two cores or more and the feed is a file of ``PIPELINE_BYTES`` or more).
    ``progress``: called with the bytes of the feed read so far (an order-level feed), e.g.
    for a progress bar. ``on_error``: "raise" (a feed record that cannot be read stops the
    backtest, its ``partial`` the tables so far) or "skip" (such records are skipped and
    counted in ``stats["skipped"]``, as in a tolerant replay).
    """
    return prepared(dict(locals())).finished()


def bound_arguments(feed, strategy, options: dict) -> dict:
    """:func:`backtest`'s arguments by name, every one (its defaults for those not in
    ``options``); an unknown option is a TypeError."""
    import inspect

    bound = inspect.signature(backtest).bind(feed, strategy, **options)
    bound.apply_defaults()
    return dict(bound.arguments)


def backtest_named(feed, strategy, names: dict, **options) -> BacktestResult:
    """:func:`backtest` whose errors about ``interval`` and ``timer`` name them as ``names``
    does (a front end's own names: the command line's ``--interval``, ``--timer``)."""
    return prepared(bound_arguments(feed, strategy, options), names).finished()


#: the options whose checks need the feed (its time unit), as :func:`backtest` names them
FEED_CHECKED = {"interval": "interval", "timer": "timer", "timer_start": "timer_start"}


def prepared(o: dict, names: dict | None = None) -> "Run":
    """:func:`backtest`'s arguments ``o`` (by name) checked, its replay set up, nothing run:
    an ``ObookError`` naming the first wrong one (``interval`` and ``timer`` by ``names``,
    when given: a front end's names for them)."""
    from .l2_input import is_l2

    from ..checks import check_flag, check_format_name, check_progress, check_seed, ticker_names
    from .arguments import (check_capital, check_fees, check_on, check_risk, check_timer, check_timer_start,
                            strategy_object)

    feed, queue = o["feed"], o["queue"]
    check_progress(o["progress"])
    names = {**FEED_CHECKED, **(names or {})}
    strategy, tickers = strategy_object(o["strategy"]), ticker_names(o["tickers"])
    timer = check_timer(o["timer"], names["timer"])
    check_format_name(o["format"])
    on = check_on(o["on"])
    seed, capital, timer_start = check_seed(o["seed"]), check_capital(o["capital"]), check_timer_start(o["timer_start"])
    fees, risk, day_end = check_fees(o["fees"]), check_risk(o["risk"]), check_flag("day_end", o["day_end"])
    pipeline = None if o["pipeline"] is None else check_flag("pipeline", o["pipeline"])
    queue = queue.lower() if isinstance(queue, str) else queue      # 'FIFO', 'Power:2' too
    latencies = {k: o[k] for k in ("feed_latency", "order_latency", "response_latency")}
    l2 = is_l2(feed)
    if not l2:
        from ..simulation.source import feed_source

        feed = feed_source(feed)        # one feed in several files: a list, a tuple or a glob pattern
    name = feed if isinstance(feed, (str, os.PathLike)) else f"the {type(feed).__name__} given"
    if queue not in (None, "fifo") and not l2:
        from .l2 import parse_model

        parse_model(queue)          # an unknown model is named as such
        raise ObookError(f"{name}: queue {queue!r} is for L2 inputs (mbp-1 / mbp-10); an order-level feed "
                         f"queues by its order ids (queue 'fifo')")
    if l2:
        if queue == "fifo":
            raise ObookError(f"{name}: an L2 input (levels, no order ids) has no FIFO queue: use an L2 queue model")
        from .arguments import check_reading
        from .l2 import backtest_l2

        check_reading(o["format"], o["date"], o["on_error"])        # (read by order-level feeds alone)

        return Run(done=lambda: backtest_l2(feed, strategy, queue=queue, tickers=tickers, **latencies, timer=timer,
                                            timer_start=timer_start, fees=fees, risk=risk, interval=o["interval"],
                                            capital=capital, day_end=day_end, on=on, names=names))
    from .._kernels.backtest_layout import SUB_TIMER
    from ..engine.replay import Replay
    from ..feeds import resolve_format
    from .arguments import check_interval, check_timer_start_use, default_risk
    from .latency import pack
    from .worker import BacktestObserver

    fmt = resolve_format(o["format"], feed)
    unit_ns = int(fmt.time_unit_ns)
    risk = risk if risk is not None else default_risk(fmt)
    fn, state, is_compiled, tickers, sub, period, t0 = _strategy_spec(strategy, tickers, on, timer, timer_start,
                                                                      unit_ns, names["timer"])
    if on is not None and not is_compiled:
        sub = (sub & ~3) | _subscriptions((on,), None)
    rk = np.array([risk.max_qty, risk.max_notional, risk.max_orders_per_second, risk.band_bps,
                   1_000_000_000 // unit_ns], np.int64)
    ticks = timer_ticks(period, unit_ns, names["timer"] if timer is not None else "timer")
    check_timer_start_use(t0, ticks, names["timer_start"])
    if sub & SUB_TIMER and not ticks:
        raise ObookError("the strategy is called on timer: give the timer's period (timer= ns; --timer on "
                         "the command line)")
    LM, LA, LB = pack(tuple(latencies.values()), unit_ns, seed)
    zero = int(LM[0, 0] == 0 and LB[0, 0] == 0)
    interval_ns = check_interval(o["interval"], unit_ns, names["interval"])
    spec = Spec(strategy, fn, state, is_compiled, tuple(tickers) if tickers else None, sub, zero,
                ticks, None if t0 is None else check_timer_start(t0), interval_ns // unit_ns,
                LM, LA, LB, risk, rk, unit_ns, day_end, feed_bytes=_size(feed), continuous=fmt.continuous)
    obs = BacktestObserver(spec)
    replay = Replay(feed, workers=1, format=fmt, on_error=o["on_error"], tables=("bbo",), date=o["date"],
                    observer=obs, tickers=spec.tickers, unknown_tickers="warn", rows=False,
                    observe_here=_pipelined(feed, pipeline),
                    progress=o["progress"])
    return Run(replay, obs, (fees, unit_ns, interval_ns, capital, fmt))


@dataclass
class Run:
    """A backtest set up (:func:`prepared`): ``steps()`` runs it, ``finished()`` to its end.
    An L2 input's runs whole (``done``)."""

    replay: object = None
    obs: object = None
    build_args: tuple = ()
    done: object = None
    result: BacktestResult | None = None
    rows: dict | None = None        # the whole run's rows (a worker's), once it ended

    @property
    def fmt(self):
        return self.build_args[-1] if self.build_args else None

    def build(self, rows: dict):
        """(tables, summary) of ``rows``: a worker's rows so far, or the whole run's."""
        from .tables import build

        return build(rows, *self.build_args)

    def finished(self) -> BacktestResult:
        for _ in self.steps():
            pass
        return self.result

    def steps(self):
        """Run the backtest, yielding its worker (obook.backtest.worker.BacktestWorker, None
        before the first batch) after each feed batch: its rows so far are final. At the end
        ``result`` holds the BacktestResult. A strategy's error or a bad feed record raises
        with ``partial``: the tables so far."""
        from ..errors import FeedError
        from .worker import StrategyError

        if self.done is not None:
            self.result = self.done()
            return
        replay, obs = self.replay, self.obs
        try:
            for _ in replay.table_batches():
                yield obs.last
        except (StrategyError, FeedError) as e:      # the tables so far (a bad feed record: before it)
            if obs.last is not None:
                e.partial = BacktestResult(*self.build(obs.last.rows()), {})
            raise
        finally:
            if obs.last is not None:
                obs.last.close()
        self.rows = rows = replay.observed[0] if replay.observed else obs.last.rows()
        if rows.get("unknown_refs"):
            log.warning("the compiled strategy returned %d order(s) whose ref was in use (a new order) or unknown "
                        "(a cancel or modify): not sent; the summary counts them as unknown_refs",
                        rows["unknown_refs"])
        tables, summary = self.build(rows)
        stats = dict(replay.stats)
        stats.update(calls=rows["calls"])
        self.result = BacktestResult(tables, summary, stats)


class _CallableModule(type(sys)):
    """``obook.backtest`` is this package, and also callable: ``obook.backtest(feed, strategy,
    ...)`` is ``obook.backtest.backtest(feed, strategy, ...)``."""

    def __call__(self, feed, strategy, **options) -> BacktestResult:
        return backtest(feed, strategy, **options)


sys.modules[__name__].__class__ = _CallableModule
