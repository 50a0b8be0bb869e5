"""A live compiled strategy (obook.live.strategy.numba_strategy: ``fn(locate, time, bid_px,
bid_qty, ask_px, ask_qty) -> (kind, side, qty, price, ref, orig)``, or with a state array
``fn(state, locate, ...)``) as a backtest's compiled strategy, called on BBO changes in the
compiled loop. The kernel's ``state`` array holds the books' locates (``state[tb]``, the
first ``LOCATES``) and then the strategy's own state."""

from __future__ import annotations

from .._kernels.jit import njit


LOCATES = 1024


def live_adapter(fn6, stateful: bool = False):
    from .._kernels.backtest_layout import (C_ASK, C_ASKQ, C_BID, C_BIDQ, C_KIND, C_TB, C_TIME, CALL_BOOK,
                                            Q_ACT, Q_MARKET, Q_ORIG, Q_POST, Q_PRICE, Q_QTY, Q_REF, Q_SIDE,
                                            Q_TB, Q_TIF)
    from .._kernels.simulate_layout import NONE, TIF_DAY

    @njit
    def adapted(c, lo, refkey, state, out):
        if c[C_KIND] != CALL_BOOK:
            return 0
        bid, ask = c[C_BID], c[C_ASK]
        loc, t = state[c[C_TB]], c[C_TIME]
        bq, aq = -1 if bid == NONE else c[C_BIDQ], -1 if ask == NONE else c[C_ASKQ]
        bid, ask = -1 if bid == NONE else bid, -1 if ask == NONE else ask
        if stateful:
            kind, side, qty, price, ref, orig = fn6(state[LOCATES:], loc, t, bid, bq, ask, aq)
        else:
            kind, side, qty, price, ref, orig = fn6(loc, t, bid, bq, ask, aq)
        if kind == 0:
            return 0
        # a kind that is no order is written as it is: no action has its number, so the
        # kernel stops on it (the worker words it as the live loop does)
        out[0, Q_ACT] = kind if kind < 1 or kind > 3 else kind - 1
        out[0, Q_SIDE], out[0, Q_QTY], out[0, Q_PRICE] = side, qty, price
        out[0, Q_TIF], out[0, Q_MARKET], out[0, Q_POST] = TIF_DAY, 0, 0
        out[0, Q_REF], out[0, Q_ORIG], out[0, Q_TB] = ref, orig, -1
        return 1

    adapted.obook_live_locates = True
    adapted.obook_live_name = getattr(fn6, "__name__", None) or repr(fn6)[:80]
    return adapted
