"""Strategies compiled by numba: one object that runs inside the compiled live loop, behind a
file replay (Python calls it row by row) and in a backtester.

``numba_strategy(fn)`` wraps a numba function

* ``fn(locate, time, bid_px, bid_qty, ask_px, ask_qty)`` (stateless), or, with ``state=`` an
  int64 array, ``fn(state, locate, time, bid_px, bid_qty, ask_px, ask_qty)``: the strategy
  keeps what it needs in ``state`` (changed in place);

returning ``(kind, side, qty, price, ref, orig)``: kind 0 nothing, 1 enter, 2 replace, 3
cancel; side 0 buy, 1 sell; prices in the feed's units (ITCH: 1/10000). It is called on
every BBO change of a subscribed instrument, with the book top after the change; an empty
side's price and quantity are -1.

The object is a Python strategy (``strategy(top) -> [Order] | None``), and compiled code
calls it through :attr:`NumbaStrategy.address`, a C function of :data:`C_SIGNATURE`:
``kind = f(state pointer, state length, locate, time, bid_px, bid_qty, ask_px, ask_qty,
out pointer)`` writing ``side, qty, price, ref, orig`` to ``out[0:5]``. A result that is no
order (a kind other than 0 to 3, a side other than 0 or 1) returns kind 0 and, the first
time, writes ``locate + 1, kind, side`` to ``out[5:8]`` (:func:`not_an_order` says why). Each run (a live
session, a replay, a backtest) takes :meth:`NumbaStrategy.fresh`: the same function with
the initial state.
"""

from __future__ import annotations

import numpy as np

from .ouch import Order

KINDS = {1: "enter", 2: "replace", 3: "cancel"}
#: the order fields a strategy's C entry writes after the kind
OUT_FIELDS = ("side", "qty", "price", "ref", "orig")
#: the C entry's out array: the order's fields, then the first result that was no order
OUT_SLOTS = 8


def not_an_order(kind: int, side: int) -> str | None:
    """Why ``(kind, side)`` returned by a numba strategy is no order (None: it is one)."""
    if kind == 0:
        return None
    if kind not in KINDS:
        return f"returned kind {kind}, not 0 (nothing), 1 (enter), 2 (replace) or 3 (cancel)"
    if side not in (0, 1):
        return f"returned side {side}, not 0 (buy) or 1 (sell)"
    return None


def _c_signature():
    from numba import types

    i64, p64 = types.int64, types.CPointer(types.int64)
    return i64(p64, i64, i64, i64, i64, i64, i64, i64, p64)


class NumbaStrategy:
    """See the module's docstring. ``fn``: the numba function; ``state``: its int64 state
    (None: a stateless ``fn``); ``symbol_of``: kept for callers that name instruments."""

    def __init__(self, fn, symbol_of=None, state=None):
        if not hasattr(fn, "py_func"):
            raise TypeError("numba_strategy takes a numba function (decorate it with @numba.njit)")
        _check_state_use(fn, state is not None)
        self.fn = fn
        self.symbol_of = symbol_of
        self.stateful = state is not None
        self.initial = np.zeros(1, np.int64) if state is None else _one_row(whole_numbers(state))
        self.state = self.initial.copy()
        self._cfunc = None
        self._checked = False

    def fresh(self) -> "NumbaStrategy":
        """The same strategy with its initial state (a new run); the compiled entry is shared."""
        other = NumbaStrategy.__new__(NumbaStrategy)
        other.__dict__.update(self.__dict__)
        other.state = self.initial.copy()
        return other

    def check_result(self) -> None:
        """A StrategyError when ``fn`` does not compile for the loop's arguments or returns a
        field that is no integer (what :attr:`address` refuses, without its C entry)."""
        from numba.core.errors import NumbaError

        try:
            self.fn.compile(_arguments(self.stateful))
        except NumbaError as e:
            raise _not_the_loops(self.fn, self.stateful, _first_line(str(e))) from None
        _check_integers(self.fn, self.stateful)

    def step(self, locate: int, time: int, bid_px: int, bid_qty: int, ask_px: int, ask_qty: int) -> tuple:
        """One call: (kind, side, qty, price, ref, orig)."""
        if self.stateful:
            got = self.fn(self.state, locate, time, bid_px, bid_qty, ask_px, ask_qty)
        else:
            got = self.fn(locate, time, bid_px, bid_qty, ask_px, ask_qty)
        if not self._checked:       # compiled by the call: what it returns, as the loop would take it
            _check_integers(self.fn, self.stateful)
            self._checked = True
        return got

    def __call__(self, top):
        kind, side, qty, price, ref, orig = self.step(
            top.locate or 0, top.time, -1 if top.bid_px is None else top.bid_px,
            -1 if top.bid_qty is None else top.bid_qty, -1 if top.ask_px is None else top.ask_px,
            -1 if top.ask_qty is None else top.ask_qty)
        if kind == 0:
            return None
        why = not_an_order(int(kind), int(side))
        if why is not None:
            from ..errors import StrategyError

            raise StrategyError(f"strategy on message {top.seq} ({top.ticker}): {why}")
        return [Order(KINDS[int(kind)], top.ticker, "BS"[int(side)], int(qty), int(price), int(ref), int(orig))]

    @property
    def address(self) -> int:
        """The C entry's address (compiled on first use, about a second)."""
        if self._cfunc is None:
            self._cfunc = _compile_entry(self.fn, self.stateful)
        return self._cfunc.address


def _compile_entry(fn, stateful: bool):
    from numba import carray, cfunc

    if stateful:
        def entry(state_p, n_state, locate, time, bid_px, bid_qty, ask_px, ask_qty, out_p):
            state = carray(state_p, (n_state,))
            out = carray(out_p, (OUT_SLOTS,))
            kind, side, qty, price, ref, orig = fn(state, locate, time, bid_px, bid_qty, ask_px, ask_qty)
            if kind != 0 and (kind < 0 or kind > 3 or side < 0 or side > 1):   # no order: see the docstring
                if out[5] == 0:
                    out[5], out[6], out[7] = locate + 1, kind, side
                return 0
            out[0], out[1], out[2], out[3], out[4] = side, qty, price, ref, orig
            return kind
    else:
        def entry(state_p, n_state, locate, time, bid_px, bid_qty, ask_px, ask_qty, out_p):
            out = carray(out_p, (OUT_SLOTS,))
            kind, side, qty, price, ref, orig = fn(locate, time, bid_px, bid_qty, ask_px, ask_qty)
            if kind != 0 and (kind < 0 or kind > 3 or side < 0 or side > 1):   # no order: see the docstring
                if out[5] == 0:
                    out[5], out[6], out[7] = locate + 1, kind, side
                return 0
            out[0], out[1], out[2], out[3], out[4] = side, qty, price, ref, orig
            return kind
    from numba.core.errors import NumbaError

    try:
        made = cfunc(_c_signature(), nopython=True)(entry)
    except NumbaError as e:     # fn's arguments or its result are not the loop's
        raise _not_the_loops(fn, stateful, _first_line(str(e))) from None
    _check_integers(fn, stateful)
    return made


def _not_the_loops(fn, stateful: bool, why: str):
    from ..errors import StrategyError

    shown = "fn(state, locate" if stateful else "fn(locate"
    return StrategyError(f"numba strategy {getattr(fn, '__name__', fn)}: cannot be compiled into the live loop as "
                         f"{shown}, time, bid_px, bid_qty, ask_px, ask_qty) returning (kind, side, qty, price, ref, "
                         f"orig): {why}")


def _check_state_use(fn, stateful: bool) -> None:
    """An ObookError when ``fn`` takes the state and none is given, or the other way round
    (told by its number of arguments: 7 with the state, 6 without)."""
    import inspect

    from ..errors import ObookError

    try:
        params = inspect.signature(fn.py_func).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return
    n, name = len(params), getattr(fn, "__name__", fn)
    if n == 7 and not stateful:
        raise ObookError(f"numba strategy {name}: takes state first (7 arguments): give its state, "
                         "numba_strategy(fn, state=np.zeros(n, np.int64))")
    if n == 6 and stateful:
        raise ObookError(f"numba strategy {name}: takes no state (6 arguments): leave out state=")


def _arguments(stateful: bool) -> tuple:
    """The numba types the loop calls a strategy's function with."""
    from numba import types

    return ((types.Array(types.int64, 1, "C"),) if stateful else ()) + (types.int64,) * 6


def _check_integers(fn, stateful: bool) -> None:
    """A StrategyError when ``fn``, compiled for the loop's arguments, returns a field that is
    no integer (a float or a bool: the loop's int64 would cast it, a price of 10.5 sent as 10,
    a kind True as an enter)."""
    from numba import types

    got = getattr(fn, "overloads", {}).get(_arguments(stateful))
    returned = None if got is None else got.signature.return_type
    if not isinstance(returned, types.BaseTuple) or len(returned) != 6:
        return      # (numba refused it already, or a call of other types compiled it)
    for name, t in zip(("kind",) + OUT_FIELDS, returned):
        t = types.unliteral(t)
        if not isinstance(t, types.Integer) or t is types.boolean:
            raise _not_the_loops(fn, stateful, f"it returns {name} as {t}, not an integer")


def _first_line(numba_message: str) -> str:
    """The reason in numba's message, one line without its colours (the first line names
    only the compiler's pipeline step)."""
    import re

    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", numba_message).splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("Failed in nopython mode pipeline")]
    return lines[0] if lines else "numba refused it"


def whole_numbers(state) -> np.ndarray:
    """A compiled strategy's state as int64: an int64 array as it is, else whole numbers
    (integers, or floats without a fraction); anything else is an ObookError."""
    from ..checks import whole_int64
    from ..errors import ObookError

    if isinstance(state, np.ndarray) and state.dtype == np.int64:
        return state
    as_int = whole_int64(state)
    if as_int is None:
        raise ObookError(f"a compiled strategy's state must be whole numbers of 64 bits, not {state!r}"[:300])
    return as_int


def _one_row(state: np.ndarray) -> np.ndarray:
    """A copy of ``state`` as the row the compiled loop hands the strategy (a strided view's
    elements, contiguous); a state of more dimensions is an ObookError."""
    if state.ndim != 1:
        from ..errors import ObookError

        raise ObookError("a compiled strategy's state must be one row of int64 (np.zeros(n, np.int64)), "
                         f"not an array of shape {state.shape}")
    return np.array(state, np.int64)


def numba_strategy(fn, symbol_of=None, state=None) -> NumbaStrategy:
    """A :class:`NumbaStrategy` of the numba function ``fn`` (see the module's docstring)."""
    return NumbaStrategy(fn, symbol_of, state)


def fresh(strategy):
    """A compiled strategy's fresh copy for a new run; any other strategy as it is."""
    return strategy.fresh() if isinstance(strategy, NumbaStrategy) else strategy


__all__ = ["NumbaStrategy", "numba_strategy", "fresh", "OUT_FIELDS"]
