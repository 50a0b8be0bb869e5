"""Positions, cash, fees and mark-to-market equity of a backtest.

Money is exact: every amount is an integer x SCALE (4 decimals). The columns come from one
compiled pass in int64 (obook._kernels.equity) when the day's largest possible amount fits
in it with room to spare, else by numpy columns of Python integers (object arrays: the same
arithmetic, slower): never a binary float.
"""

from __future__ import annotations

import numpy as np

from .._kernels.backtest_layout import M_ASK, M_BID, M_SEQ, M_TB, M_TIME
from .._kernels.equity import HALF, SCALE
from .._kernels.simulate_layout import F_PRICE, F_QTY, F_SIDE, K_COUNT, K_TB, NONE
from .columns import Rows, table

SAFE = 1 << 62


def equity(names: list, fl: np.ndarray, fee: np.ndarray, mk: np.ndarray):
    """(equity rows at every mark, positions at the end, the total equity series (times,
    amounts x SCALE)). A mark applies the fills written before it (K_COUNT below its
    M_SEQ), in the order they were written; the mark price is the book's mid (x 2 kept
    exact), one side's best when the other is empty, the last one when both are."""
    nt = len(names)
    order = _sorted_by(fl[:, K_COUNT])
    fee = np.asarray(fee) if len(fee) else np.zeros(0, np.int64)
    if len(mk) and not _in_order(mk[:, M_TIME], mk[:, M_SEQ]):
        mk = mk[np.lexsort((mk[:, M_SEQ], mk[:, M_TIME]))]
    m_tb = mk[:, M_TB]
    # int64 arithmetic wraps, so it is exact wherever the true result fits: a bound of every
    # amount from float sums tells whether all are far inside that range (else the same
    # columns in Python integers)
    c = _int_columns(nt, fl, order, fee, mk) if fee.dtype == np.int64 else None
    if c is None:
        m_bid, m_ask = mk[:, M_BID], mk[:, M_ASK]
        m2_all = np.where((m_bid != NONE) & (m_ask != NONE), m_bid.astype(object) + m_ask,
                          np.where(m_bid != NONE, 2 * m_bid.astype(object), 2 * m_ask.astype(object)))
        known = (m_bid != NONE) | (m_ask != NONE)
        # fills applied at each mark (a mark never takes fills back)
        applied = np.maximum.accumulate(np.searchsorted(fl[order, K_COUNT], mk[:, M_SEQ], "left")) \
            if len(mk) else np.zeros(0, np.int64)
        done = int(applied[-1]) if len(applied) else 0
        f_tb, f_q, f_p, f_side = (fl[order, c] for c in (K_TB, F_QTY, F_PRICE, F_SIDE))
        c = _columns(object, nt, f_tb, f_q, f_p, f_side, fee[order] if len(fee) else fee, m_tb, m2_all, known,
                     applied, done)
    r = Rows(names, mk=mk, c=c)
    equity_t, positions = table("equity", r), table("positions", r)
    return equity_t, positions, (mk[:, M_TIME].astype(np.int64), c["total"])


def _sorted_by(key: np.ndarray) -> np.ndarray:
    """The rows' order by ``key`` (stable): 0, 1, ... when they are in order already."""
    if len(key) < 2 or bool(np.all(key[1:] >= key[:-1])):
        return np.arange(len(key))
    return np.argsort(key, kind="stable")


def _in_order(time: np.ndarray, seq: np.ndarray) -> bool:
    """Rows already in (time, seq) order."""
    if len(time) < 2:
        return True
    dt = time[1:] - time[:-1]
    return bool(np.all((dt > 0) | ((dt == 0) & (seq[1:] >= seq[:-1]))))


def _int_columns(nt, fl, order, fee, mk) -> dict | None:
    """The columns in int64, in one compiled pass over the marks and fills
    (obook._kernels.equity), or None when an amount may not fit."""
    from .._kernels.equity import (B_CASH, B_FEES, B_MID2, B_MOVED, B_POS, B_WIDTH, BQ_BOUGHT, BQ_CASH, BQ_FEES,
                                   BQ_HAS, BQ_MID2, BQ_POS, BQ_SOLD, BQ_VALUE, BQ_WIDTH, Q_CASH, Q_FEES, Q_HAS,
                                   Q_MARK, Q_POS, Q_TOTAL, Q_VALUE, Q_WIDTH, eq_marks)

    out = np.empty((len(mk), Q_WIDTH), np.int64)
    books = np.zeros((nt, BQ_WIDTH), np.int64)
    bound = np.zeros(B_WIDTH, np.float64)
    eq_marks(fl, np.ascontiguousarray(order, np.int64), np.ascontiguousarray(fee, np.int64),
             np.ascontiguousarray(mk), out, books, np.zeros((nt, 2), np.float64), bound)
    # a book's cash, fees and position x mark, their sum for its equity, twice that for a
    # change of it, the books' for the total; and the floats' rounding
    book = bound[B_CASH] + bound[B_FEES] + (bound[B_POS] + 1) * bound[B_MID2] * HALF
    if book * max(2, nt) + bound[B_MOVED] * len(order) * 2 ** -50 >= SAFE / 2:
        return None
    c = {k: out[:, q] for k, q in (("pos", Q_POS), ("cash", Q_CASH), ("fees", Q_FEES), ("mark", Q_MARK),
                                   ("value", Q_VALUE), ("total", Q_TOTAL))}
    c["has_mark"] = out[:, Q_HAS] != 0
    c.update({k: books[:, q] for k, q in (("pos_end", BQ_POS), ("bought", BQ_BOUGHT), ("sold", BQ_SOLD),
                                          ("cash_end", BQ_CASH), ("fees_end", BQ_FEES), ("eq_end", BQ_VALUE))})
    c["mid_end"] = books[:, BQ_MID2] * HALF
    c["has_mid"] = books[:, BQ_HAS] != 0
    return c


def _columns(dt, nt, f_tb, f_q, f_p, f_side, f_fee, m_tb, m2_all, known, applied, done) -> dict:
    """Every amount column of the equity and positions tables in dtype dt (int64, or Python
    integers in object arrays)."""
    q = f_q.astype(dt)
    dpos = np.where(f_side == 0, q, -q)
    dcash = -dpos * f_p.astype(dt) * SCALE
    fee = f_fee.astype(dt)
    n = len(m_tb)
    c = {k: np.zeros(n, dt) for k in ("pos", "cash", "fees", "value", "mark", "delta")}
    c.update({k: np.zeros(nt, dt) for k in ("pos_end", "bought", "sold", "cash_end", "fees_end", "mid_end", "eq_end")})
    c["has_mark"] = np.zeros(n, bool)
    c["has_mid"] = np.zeros(nt, bool)
    for tb in range(nt):
        mine = np.flatnonzero(f_tb[:done] == tb)        # this book's applied fills, in order
        c_pos, c_cash, c_fee = (np.concatenate([np.zeros(1, dt), np.cumsum(x[mine])]) for x in (dpos, dcash, fee))
        c["pos_end"][tb], c["cash_end"][tb], c["fees_end"][tb] = c_pos[-1], c_cash[-1], c_fee[-1]
        c["bought"][tb] = q[mine][f_side[mine] == 0].sum()
        c["sold"][tb] = q[mine][f_side[mine] != 0].sum()
        at = np.flatnonzero(m_tb == tb)
        if not len(at):
            continue
        k = np.searchsorted(mine, applied[at], "left")  # this book's fills applied at each of its marks
        c["pos"][at], c["cash"][at], c["fees"][at] = c_pos[k], c_cash[k], c_fee[k]
        last = np.maximum.accumulate(np.where(known[at], np.arange(len(at)), -1))
        ok = last >= 0
        m2 = np.where(ok, m2_all[at][np.maximum(last, 0)], 0).astype(dt)
        c["has_mark"][at] = ok
        c["mark"][at] = m2 * HALF
        v = c_cash[k] - c_fee[k] + c_pos[k] * m2 * HALF
        c["value"][at] = v
        c["delta"][at] = np.diff(np.concatenate([np.zeros(1, dt), v]))
        c["eq_end"][tb] = v[-1]
        c["has_mid"][tb] = ok[-1]
        c["mid_end"][tb] = m2[-1] * HALF
    c["total"] = np.cumsum(c["delta"]) if n else np.zeros(0, dt)
    return c
