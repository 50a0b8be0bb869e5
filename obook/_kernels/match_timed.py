"""match_rows's book-only loop (no output, no self-trade prevention) with the cycle counter
read around every instruction (benchmarks only)."""

import numpy as np
from .jit import njit

from .clock import cycles
from .match import ahead, apply_one
from .match_layout import OK, ST_POS


@njit(cache=True, _nrt=False)
def match_rows_timed(ins, start, n, pf, state, out, lat):
    """Apply m[start:n] like match_rows with want = stp = 0; lat[i - start] gets the cycles
    instruction i took."""
    m, mw, mt = ins
    lv, od, ow, bk, st = state
    fl, ev = out[0], out[1]
    for i in range(start, n):
        t0 = cycles()
        if pf > 0:
            ahead(m, i, n, pf, lv, od)
        apply_one(m, mw, mt, i, 0, 0, lv, od, ow, bk, st, fl, ev)
        lat[np.uint64(i - start)] = cycles() - t0
    st[ST_POS] = n
    return OK
