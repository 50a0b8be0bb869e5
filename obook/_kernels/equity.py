"""Mark-to-market equity of a backtest in one pass (obook.backtest.equity: the int64 case).

``eq_marks`` walks the marks in (time, seq) order and the fills in the order they were
written, as one merge: before a mark, the fills written before it (K_COUNT below its M_SEQ)
reach their books' running position, cash and fees; the mark's book then gets its
mid (twice it, exact: both sides' best summed, one side's best doubled, else the last one)
and its equity. Amounts are x SCALE in int64, which wraps: the same pass sums them in floats
too (``bound``), from which the caller tells whether every amount was far inside int64's range
(else it computes them again in Python integers).
"""

from .jit import njit
from .backtest_layout import M_ASK, M_BID, M_SEQ, M_TB
from .simulate_layout import F_PRICE, F_QTY, F_SIDE, K_COUNT, K_TB, NONE

SCALE = 10_000                  # money: integers x SCALE (4 decimals)
HALF = SCALE // 2               # x * SCALE // 2 == x * HALF: SCALE is even
# a mark's row out[n, Q_WIDTH]
Q_POS, Q_CASH, Q_FEES, Q_MARK, Q_HAS, Q_VALUE, Q_TOTAL = range(7)
Q_WIDTH = 7
# a book's running state books[nt, BQ_WIDTH] (its values at the end)
BQ_POS, BQ_CASH, BQ_FEES, BQ_MID2, BQ_HAS, BQ_VALUE, BQ_BOUGHT, BQ_SOLD = range(8)
BQ_WIDTH = 8
# bound[B_WIDTH]: the largest |running cash| and |running position| of a book, the sum of
# |fees|, the largest |mid x 2|, the sum of |cash moved| (floats)
B_CASH, B_POS, B_FEES, B_MID2, B_MOVED = range(5)
B_WIDTH = 5


@njit(cache=True, _nrt=False)
def eq_marks(fl, order, fee, mk, out, books, fbooks, bound):
    """Fills fl[order] (their fees ``fee`` by row of fl), marks mk (sorted) -> out (a row a
    mark), books, and the floats' running sums fbooks[nt, 2] and ``bound`` (all zeroed by the
    caller). Returns the fills applied by the last mark."""
    nf = order.shape[0]
    j = 0
    total = 0
    for i in range(mk.shape[0]):
        while j < nf and fl[order[j], K_COUNT] < mk[i, M_SEQ]:
            r = order[j]
            tb, q = fl[r, K_TB], fl[r, F_QTY]
            d = q if fl[r, F_SIDE] == 0 else -q
            books[tb, BQ_POS] += d
            books[tb, BQ_CASH] -= d * fl[r, F_PRICE] * SCALE
            books[tb, BQ_FEES] += fee[r]
            books[tb, BQ_BOUGHT if fl[r, F_SIDE] == 0 else BQ_SOLD] += q
            moved = float(d) * float(fl[r, F_PRICE]) * SCALE
            fbooks[tb, 0] -= moved
            fbooks[tb, 1] += float(d)
            bound[B_CASH] = max(bound[B_CASH], abs(fbooks[tb, 0]))
            bound[B_POS] = max(bound[B_POS], abs(fbooks[tb, 1]))
            bound[B_FEES] += abs(float(fee[r]))
            bound[B_MOVED] += abs(moved)
            j += 1
        tb, bid, ask = mk[i, M_TB], mk[i, M_BID], mk[i, M_ASK]
        if bid != NONE and ask != NONE:
            books[tb, BQ_MID2], books[tb, BQ_HAS] = bid + ask, 1
            bound[B_MID2] = max(bound[B_MID2], abs(float(bid) + float(ask)))
        elif bid != NONE or ask != NONE:
            one = bid if bid != NONE else ask
            books[tb, BQ_MID2], books[tb, BQ_HAS] = 2 * one, 1
            bound[B_MID2] = max(bound[B_MID2], 2 * abs(float(one)))
        pos, cash, fees, m2 = books[tb, BQ_POS], books[tb, BQ_CASH], books[tb, BQ_FEES], books[tb, BQ_MID2]
        v = cash - fees + pos * m2 * HALF
        total += v - books[tb, BQ_VALUE]
        books[tb, BQ_VALUE] = v
        out[i, Q_POS], out[i, Q_CASH], out[i, Q_FEES], out[i, Q_MARK] = pos, cash, fees, m2 * HALF
        out[i, Q_HAS], out[i, Q_VALUE], out[i, Q_TOTAL] = books[tb, BQ_HAS], v, total
    return j
