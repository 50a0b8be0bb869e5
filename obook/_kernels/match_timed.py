"""match_rows with the cycle counter read around every instruction (benchmarks only)."""

import numpy as np
from numba import njit

from .clock import cycles
from .match import ahead, apply_one, room
from .match_layout import OK, ST_POS


@njit(cache=True, _nrt=False)
def match_rows_timed(m, mw, mt, start, n, stp, want, pf, lv, od, ow, bk, st, fl, ev, qt, dq, lat):
    """Apply m[start:n] like match_rows (no bbo / depth rows); lat[i - start] gets the
    cycles instruction i took."""
    for i in range(start, n):
        status = room(m, i, want, od, st, fl, ev, qt, dq)
        if status != OK:
            st[ST_POS] = i
            return status
        t0 = cycles()
        if pf > 0:
            ahead(m, i, n, pf, lv, od)
        apply_one(m, mw, mt, i, stp, want, lv, od, ow, bk, st, fl, ev)
        lat[np.uint64(i - start)] = cycles() - t0
    st[ST_POS] = n
    return OK
