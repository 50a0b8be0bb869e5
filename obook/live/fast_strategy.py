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
        self.fn = fn
        self.symbol_of = symbol_of
        self.stateful = state is not None
        self.initial = np.zeros(1, np.int64) if state is None else np.array(state, np.int64).ravel()
        self.state = self.initial.copy()
        self._cfunc = None

    def fresh(self) -> "NumbaStrategy":
        """The same strategy with its initial state (a new run); the compiled entry is shared."""
        other = NumbaStrategy.__new__(NumbaStrategy)
        other.__dict__.update(self.__dict__)
        other.state = self.initial.copy()
        return other

    def step(self, locate: int, time: int, bid_px: int, bid_qty: int, ask_px: int, ask_qty: int) -> tuple:
        """One call: (kind, side, qty, price, ref, orig)."""
        if self.stateful:
            return self.fn(self.state, locate, time, bid_px, bid_qty, ask_px, ask_qty)
        return self.fn(locate, time, bid_px, bid_qty, ask_px, ask_qty)

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
        return cfunc(_c_signature(), nopython=True)(entry)
    except NumbaError as e:     # fn's arguments or its result are not the loop's
        from ..errors import StrategyError

        shown = "fn(state, locate" if stateful else "fn(locate"
        why = _first_line(str(e))
        raise StrategyError(f"numba strategy {getattr(fn, '__name__', fn)}: cannot be compiled into the live loop as "
                            f"{shown}, time, bid_px, bid_qty, ask_px, ask_qty) returning (kind, side, qty, price, ref, "
                            f"orig): {why}") from None


def _first_line(numba_message: str) -> str:
    """The reason in numba's message, one line without its colours (the first line names
    only the compiler's pipeline step)."""
    import re

    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", numba_message).splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("Failed in nopython mode pipeline")]
    return lines[0] if lines else "numba refused it"


def numba_strategy(fn, symbol_of=None, state=None) -> NumbaStrategy:
    """A :class:`NumbaStrategy` of the numba function ``fn`` (see the module's docstring)."""
    return NumbaStrategy(fn, symbol_of, state)


def fresh(strategy):
    """A compiled strategy's fresh copy for a new run; any other strategy as it is."""
    return strategy.fresh() if isinstance(strategy, NumbaStrategy) else strategy


__all__ = ["NumbaStrategy", "numba_strategy", "fresh", "OUT_FIELDS"]
