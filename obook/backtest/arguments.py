"""Checks of ``obook.backtest``'s arguments: what is of the wrong kind or out of range is an
``ObookError`` naming the argument and its value before the day is replayed (never a
``TypeError`` from deep inside, nor an error once the day has run)."""

from __future__ import annotations

import math
import numbers

from ..errors import ObookError
from .orders import INT64_MAX, shown

RISK_FIELDS = ("max_qty", "max_notional", "max_orders_per_second", "band_bps")


def load_backtest_strategy(spec: str, what: str = "--strategy"):
    """A strategy's text ``FILE.py:NAME`` or ``module:NAME`` loaded as the live path loads it
    (obook.live.cli_run.load_strategy), an ``obook.backtest.compiled(...)`` a strategy too."""
    from ..live.cli_run import load_strategy
    from . import CompiledStrategy

    return load_strategy(spec, what, accept=(CompiledStrategy,))


def strategy_object(strategy):
    """The strategy to run: text ``FILE.py:NAME`` or ``module:NAME`` is loaded (as the command
    line and DuckDB load it); a class, or what is no strategy, is an error."""
    from . import CompiledStrategy

    if isinstance(strategy, str):
        return _looked_up(load_backtest_strategy(strategy, "strategy"))
    if isinstance(strategy, type):
        raise ObookError(f"strategy {strategy.__name__} is a class: give an instance ({strategy.__name__}()) "
                         "or its text FILE.py:NAME")
    if isinstance(strategy, CompiledStrategy):
        return strategy
    if callable(_looked_up(strategy)) or any(hasattr(strategy, m) for m in ("on_book", "on_order", "on_timer")):
        return strategy
    raise ObookError(f"strategy {shown(strategy)} is no strategy: give a callable(top) -> orders, an object "
                     "with on_book / on_order / on_timer, obook.backtest.compiled(...) or FILE.py:NAME")


#: what obook reads of a strategy object (each may be missing)
LOOKED_UP = ("on_book", "on_order", "on_timer", "on", "timer", "tickers", "fn", "fresh", "stateful",
             "__name__", "__closure__", "__module__")


def _looked_up(strategy):
    """``strategy``, once each attribute obook reads of it has been looked up: one whose
    look-up raises (a ``__getattr__`` of its own that raises no AttributeError) is a
    StrategyError naming it, with the strategy's traceback."""
    import traceback

    from ..errors import StrategyError

    for name in LOOKED_UP:
        try:
            getattr(strategy, name, None)
        except Exception as e:
            raise StrategyError(f"the strategy {type(strategy).__name__}: looking up its {name} raised "
                                f"{type(e).__name__}: {e}", traceback.format_exc()) from e
    return strategy


def _whole_in(name: str, value, low: int, high: int = INT64_MAX) -> int:
    from ..checks import is_integer, not_int

    if not is_integer(value) or not low <= value <= high:
        raise ObookError(f"{name} must be an integer from {low} to {high}, not {not_int(value, shown)}")
    return int(value)


def check_timer(timer, name: str = "timer"):
    """None (a strategy's ``timer`` attribute, else no timer) or the timer's period, an
    integer of ns (its range, from the feed's time unit to a week: timer_ticks)."""
    from ..checks import is_integer, not_int

    if timer is None:
        return None
    if not is_integer(timer):
        raise ObookError(f"{name} {not_int(timer, shown)}: give an integer of ns")
    return int(timer)


def timer_period(strategy, timer, name: str = "timer"):
    """A Python strategy's timer period (ns): ``timer``, else its ``timer`` attribute; None for
    a strategy without on_timer (a timer given to it is an error, naming it by ``name``), and
    an error for one with on_timer and no period."""
    check_timer_use(strategy, timer, name)
    if not hasattr(strategy, "on_timer"):
        return None
    period = timer if timer is not None else getattr(strategy, "timer", None)
    if period is None:
        raise ObookError("the strategy has on_timer: give the timer's period (timer= ns or a timer attribute; "
                         "--timer on the command line)")
    return period


def check_timer_start_use(timer_start, ticks: int, name: str = "timer_start") -> None:
    """A first timer call (``timer_start``) is for a strategy called on a timer (``ticks``:
    its period, 0 for none); an error names it by ``name``."""
    if timer_start is not None and not ticks:
        raise ObookError(f"{name} {timer_start}: the strategy has no timer to start (a timer is for a strategy "
                         "with on_timer and a timer period, or obook.backtest.compiled(..., on='timer', timer=ns))")


def check_timer_start(timer_start, name: str = "timer_start"):
    """None, or the first timer call's time (the feed's time units) from 0."""
    return None if timer_start is None else _whole_in(name, timer_start, 0)


def check_seconds(interval, name: str = "interval") -> None:
    """Seconds between equity samples as far as they can be checked without the feed: a
    finite number > 0."""
    if isinstance(interval, bool) or not isinstance(interval, numbers.Real) or not math.isfinite(interval):
        raise ObookError(f"{name} must be a number of seconds, not {shown(interval)}")
    if interval <= 0:
        raise ObookError(f"{name} must be > 0 seconds, not {interval}")


def check_interval(interval, unit_ns: int, name: str = "interval") -> int:
    """Seconds between equity samples, from the feed's time unit to a week: in ns. An error
    names it by ``name``."""
    from ..simulation.prepare import MAX_LATENCY_NS

    check_seconds(interval, name)
    ns = int(min(interval, MAX_LATENCY_NS) * 1e9)     # (a larger one: beyond the week, no overflow)
    if not unit_ns <= ns <= MAX_LATENCY_NS:
        raise ObookError(f"{name} {interval} s: give {unit_ns / 1e9:g} s (the feed's time unit) to "
                         f"{MAX_LATENCY_NS // 10**9} s (a week)")
    return ns


def check_capital(capital, name: str = "capital"):
    """None (half the traded notional) or a finite number > 0."""
    if capital is None:
        return None
    if (isinstance(capital, bool) or not isinstance(capital, numbers.Real) or not math.isfinite(capital)
            or capital <= 0):
        raise ObookError(f"{name} must be a number > 0 (price units x quantity units), not {shown(capital)}")
    return capital


def check_timer_use(strategy, timer, name: str = "timer") -> None:
    """A timer is for a strategy object with on_timer (a compiled strategy's own ``on``); an
    error names it by ``name``."""
    if timer is not None and not hasattr(strategy, "on_timer"):
        raise ObookError(f"{name} {timer!r}: the strategy has no on_timer to call (a timer is for a strategy "
                         "object with on_timer)")


#: what a Python strategy's on_book is called on: changes of the top, or every book event
BOOK_CALLS = ("bbo", "book")


def check_on(on, name: str = "on"):
    """What a Python strategy's on_book is called on: None (its ``on`` attribute, else bbo),
    "bbo" or "book" in any case; as the word (lower-case) or None."""
    from ..checks import check_choice

    return None if on is None else check_choice(name, on, BOOK_CALLS)


def strategy_on(strategy, on) -> str:
    """What ``strategy``'s on_book is called on: ``on`` (checked) if given, else its ``on``
    attribute (bbo / book in any case, else ``ObookError``), else bbo."""
    if on is not None:
        return check_on(on)
    return check_on(getattr(strategy, "on", "bbo"), "the strategy's on")


def check_fees(fees):
    """None (no fees) or an obook.backtest.Fees."""
    from .tables import Fees

    if fees is None:
        return Fees()
    if not isinstance(fees, Fees):
        raise ObookError(f"fees must be obook.backtest.Fees(maker, taker, per), not {shown(fees)}")
    return fees


def check_risk(risk):
    """None (the live defaults in the feed's units: :func:`default_risk`, once the feed's format
    is known) or a risk gate (obook.live.risk.RiskGate) whose limits are whole numbers of 64 bits."""
    if risk is None:
        return None
    if not callable(getattr(risk, "check", None)) or not all(hasattr(risk, f) for f in RISK_FIELDS):
        raise ObookError(f"risk must be an obook.live.risk.RiskGate(...), not {shown(risk)}")
    for f in RISK_FIELDS:
        _whole_in(f"risk {f}", getattr(risk, f), 0)
    return risk


#: the decimals of a dollar in the price units the live gate's defaults count (ITCH's, obook listen's feed)
_GATE_PRICE_DIGITS = 4


def default_risk(fmt):
    """The live risk gate's defaults (obook.live.risk.RiskGate(): 10,000 shares, a notional of
    10,000 shares at $1,000,000, counted in ITCH's units) in the units of feed format ``fmt``:
    the size times its quantity scale (Shanghai's 1/1000 share: 10,000,000), the notional in its
    price and quantity units (Databento's 1e-9 dollar: at most 2^63 - 1, what the gate holds).
    The rate and the band have no units."""
    from ..live.risk import RiskGate

    base = RiskGate()
    qty = base.max_qty * fmt.quantity_scale
    notional = base.max_notional * fmt.quantity_scale * 10 ** fmt.price_scale // 10 ** _GATE_PRICE_DIGITS
    return RiskGate(max_qty=qty, max_notional=min(notional, (1 << 63) - 1))


def check_queue(queue, name: str = "queue model") -> None:
    """None, fifo or an L2 queue model (obook.backtest.l2.parse_model), in any case; an error
    names it by ``name``."""
    queue = queue.lower() if isinstance(queue, str) else queue
    if queue not in (None, "fifo"):
        from .l2 import parse_model

        parse_model(queue, name)


def check_reading(format, date, on_error) -> None:
    """The options of how the feed is read (``format``: a known format's name; ``date``: a
    day; ``on_error``: raise or skip), checked alike whether the input is an order-level feed
    or an L2 one (which reads none of them)."""
    from ..checks import check_choice, check_date, check_format_name
    from ..engine.replay import ON_ERROR

    check_format_name(format)
    if isinstance(format, str) and format:
        from ..feeds import get_format

        get_format(format)
    check_date(date)
    check_choice("on_error", on_error, ON_ERROR)


def check_keywords(kw: dict) -> None:
    """``obook.backtest``'s keyword arguments (``kw``: by name, every one of them, as
    ``inspect.signature(backtest).bind(...)`` with its defaults gives them) checked as far
    as they can be without the feed: what needs its time unit or its kind (an interval
    shorter than the unit, an L2 queue model for an order-level feed) is checked with it.
    A front end that runs the backtest later (a polars scan) says what is wrong now."""
    from ..checks import check_flag, check_progress, check_seed, ticker_names
    from .latency import pack

    check_progress(kw["progress"])
    ticker_names(kw["tickers"])
    check_timer(kw["timer"])
    check_reading(kw["format"], kw["date"], kw["on_error"])
    check_on(kw["on"])
    check_seed(kw["seed"])
    check_capital(kw["capital"])
    check_timer_start(kw["timer_start"])
    check_fees(kw["fees"])
    check_risk(kw["risk"])
    check_flag("day_end", kw["day_end"])
    if kw["pipeline"] is not None:
        check_flag("pipeline", kw["pipeline"])
    check_queue(kw["queue"])
    pack((kw["feed_latency"], kw["order_latency"], kw["response_latency"]), 1, kw["seed"])
    check_seconds(kw["interval"])
