"""A compiled backtest strategy's C entry: what the backtest kernels call.

The kernels take a strategy as the address of a C function (an int64), never as a numba
function object: numba keys a function argument's compiled code by the function object,
so kernels that took one would compile again (about ten seconds) in every process and for
every strategy. The entry is a small ``cfunc`` that turns pointers and row counts back into
the arrays of ``fn(call, lo, refkey, state, out) -> n``; compiling it compiles (or loads
from numba's cache) the strategy itself, about a second.

Under ``OBOOK_KERNELS=python`` the "address" is the strategy's key in the Python kernels'
table of entries, and the kernels call the strategy from Python.
"""

from __future__ import annotations

import logging
import threading

from .._kernels.jit import INTERPRETED
from ..errors import ObookError

log = logging.getLogger("obook")

_lock = threading.Lock()
#: id(fn) -> (fn, entry): the entries of this process (fn kept, so its id stays its own)
_entries: dict = {}


def _signature():
    from numba import types

    i64, p64 = types.int64, types.CPointer(types.int64)
    return i64(p64, p64, i64, p64, i64, p64, i64, p64, i64)


def _compile(fn):
    from numba import carray, cfunc

    from numba.core.errors import NumbaError

    from .._kernels.backtest_layout import C_RAISED, C_ROW, C_WIDTH, LO_WIDTH, Q_WIDTH
    from ..errors import StrategyError

    def entry(c_p, lo_p, lo_rows, refkey_p, refkeys, state_p, states, out_p, out_rows):
        row = carray(c_p, (C_ROW,))
        c = carray(c_p, (C_WIDTH,))
        lo = carray(lo_p, (lo_rows, LO_WIDTH))
        refkey = carray(refkey_p, (refkeys,))
        state = carray(state_p, (states,))
        out = carray(out_p, (out_rows, Q_WIDTH))
        # an exception in fn ends this entry here: numba's C wrapper writes it out as
        # "unraisable" and returns 0, and the flag left set tells the kernel it raised
        row[C_RAISED] = 1
        n = fn(c, lo, refkey, state, out)
        row[C_RAISED] = 0
        return n

    def not_int(first: str) -> StrategyError:
        return StrategyError(f"the compiled strategy {_name(fn)} does not compile as fn(call, lo, refkey, state, "
                             f"out) -> int (the number of order rows written): {first}"[:500])

    try:
        made = cfunc(_signature(), nopython=True)(entry)
    except NumbaError as e:
        raise not_int(next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)) from e
    returned = _returned(fn)
    if returned is not None:        # the entry's int64 would cast it: 1.5 rows as 1, True as 1
        raise not_int(f"it returns {returned}, not an integer")
    return made


def _returned(fn):
    """The type ``fn`` returns for the entry's arrays when that is no integer (a float, a
    bool), else None."""
    from numba import types

    v, m = types.Array(types.int64, 1, "C"), types.Array(types.int64, 2, "C")
    got = getattr(fn, "overloads", {}).get((v, m, v, v, m))
    kind = None if got is None else types.unliteral(got.signature.return_type)
    return None if kind is None or (isinstance(kind, types.Integer) and kind is not types.boolean) else kind


def _name(fn) -> str:
    return getattr(fn, "__name__", None) or repr(fn)[:80]


def strategy_address(fn) -> int:
    """The address of ``fn``'s C entry (compiled on first use in this process), or 0 for
    None (a Python strategy: nothing to call)."""
    if fn is None:
        return 0
    with _lock:
        known = _entries.get(id(fn))
        if known is not None:
            return known[1] if INTERPRETED else known[1].address
        if INTERPRETED:
            from .._kernels.ccall import ENTRIES

            key = len(ENTRIES) + 1
            ENTRIES[key] = fn
            _entries[id(fn)] = (fn, key)
            return key
        if not hasattr(fn, "py_func"):
            raise ObookError("a compiled strategy is a numba function (decorate it with @numba.njit), "
                             f"not {fn!r}")
        log.debug("compiling the strategy %s's entry", getattr(fn, "__name__", fn))
        compiled = _compile(fn)
        _entries[id(fn)] = (fn, compiled)
        return compiled.address
