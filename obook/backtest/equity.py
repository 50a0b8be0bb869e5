"""Positions, cash, fees and mark-to-market equity of a backtest, computed by columns.

Money is exact: every amount is an integer x SCALE (4 decimals). The columns are int64 when
the day's largest possible amount fits in it with room to spare, else Python integers in
object arrays (the same arithmetic, slower): never a binary float.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa

from .._kernels.backtest_layout import M_ASK, M_BID, M_SEQ, M_TB, M_TIME
from .._kernels.simulate_layout import F_PRICE, F_QTY, F_SIDE, K_COUNT, K_TB, NONE

MONEY = pa.decimal128(38, 4)
SCALE = 10_000
HALF = SCALE // 2               # x * SCALE // 2 == x * HALF: SCALE is even
SAFE = 1 << 62


def money(values, valid=None) -> pa.Array:
    """Amounts x SCALE as MONEY (``valid``: False where null). An int64 column becomes the
    decimals' 16-byte little-endian two's complement words directly."""
    a = np.asarray(values)
    if a.dtype != np.int64:
        ok = np.ones(len(a), bool) if valid is None else np.asarray(valid, bool)
        return pa.array([Decimal(int(v)).scaleb(-4) if k else None for v, k in zip(a.tolist(), ok.tolist())], MONEY)
    words = np.empty((len(a), 2), np.int64)
    words[:, 0] = a
    words[:, 1] = a >> 63
    bitmap, nulls = None, 0
    if valid is not None and not np.all(valid):
        bitmap = pa.py_buffer(np.packbits(np.asarray(valid, bool), bitorder="little"))
        nulls = int(len(a) - np.count_nonzero(valid))
    return pa.Array.from_buffers(MONEY, len(a), [bitmap, pa.py_buffer(words)], null_count=nulls)


def equity(names: list, fl: np.ndarray, fee: np.ndarray, mk: np.ndarray):
    """(equity rows at every mark, positions at the end, the total equity series (times,
    amounts x SCALE)). A mark applies the fills written before it (K_COUNT below its
    M_SEQ), in the order they were written; the mark price is the book's mid (x 2 kept
    exact), one side's best when the other is empty, the last one when both are."""
    nt = len(names)
    order = np.argsort(fl[:, K_COUNT], kind="stable")
    f_tb, f_q, f_p, f_side = (fl[order, c] for c in (K_TB, F_QTY, F_PRICE, F_SIDE))
    f_fee = np.asarray(fee)[order] if len(fee) else np.zeros(0, np.int64)
    if len(mk):
        mk = mk[np.lexsort((mk[:, M_SEQ], mk[:, M_TIME]))]
    m_tb, m_bid, m_ask = mk[:, M_TB], mk[:, M_BID], mk[:, M_ASK]
    # fills applied at each mark (a mark never takes fills back)
    applied = np.maximum.accumulate(np.searchsorted(fl[order, K_COUNT], mk[:, M_SEQ], "left")) if len(mk) \
        else np.zeros(0, np.int64)
    done = int(applied[-1]) if len(applied) else 0

    big_q = int(np.abs(f_q).sum()) if len(f_q) else 0
    big_p = int(np.abs(f_p).max()) if len(f_p) else 0
    prices = [abs(int(x)) for x in (m_bid[m_bid != NONE].max(initial=0), m_bid[m_bid != NONE].min(initial=0),
                                   m_ask[m_ask != NONE].max(initial=0), m_ask[m_ask != NONE].min(initial=0))]
    big_fee = int(np.abs(f_fee).sum()) if f_fee.dtype == np.int64 else sum(abs(int(x)) for x in f_fee)
    bound = big_q * big_p * SCALE + big_fee + big_q * 2 * max(prices) * HALF
    dt = np.int64 if 2 * max(nt, 1) * bound < SAFE else object

    q = f_q.astype(dt)
    dpos = np.where(f_side == 0, q, -q)
    dcash = -dpos * f_p.astype(dt) * SCALE
    f_fee = f_fee.astype(dt)
    n = len(mk)
    pos_m = np.zeros(n, dt)
    cash_m = np.zeros(n, dt)
    fees_m = np.zeros(n, dt)
    value_m = np.zeros(n, dt)
    mark_m = np.zeros(n, dt)
    has_mark = np.zeros(n, bool)
    delta = np.zeros(n, dt)          # the change of the total equity at each mark
    zero = dt(0) if dt is np.int64 else 0
    pos_end, bought, sold, cash_end, fees_end = ([zero] * nt for _ in range(5))
    mid_end, eq_end = [None] * nt, [zero] * nt
    m2_all = np.where((m_bid != NONE) & (m_ask != NONE), m_bid + m_ask,
                      np.where(m_bid != NONE, 2 * m_bid, 2 * m_ask))
    known = (m_bid != NONE) | (m_ask != NONE)
    for tb in range(nt):
        mine = np.flatnonzero(f_tb[:done] == tb)        # this book's applied fills, in order
        cum = lambda x: np.concatenate([np.zeros(1, dt), np.cumsum(x[mine])])
        c_pos, c_cash, c_fee = cum(dpos), cum(dcash), cum(f_fee)
        if len(mine):
            pos_end[tb], cash_end[tb], fees_end[tb] = c_pos[-1], c_cash[-1], c_fee[-1]
            bought[tb] = q[mine][f_side[mine] == 0].sum()
            sold[tb] = q[mine][f_side[mine] != 0].sum()
        at = np.flatnonzero(m_tb == tb)
        if not len(at):
            continue
        k = np.searchsorted(mine, applied[at], "left")  # this book's fills applied at each of its marks
        pos_m[at], cash_m[at], fees_m[at] = c_pos[k], c_cash[k], c_fee[k]
        last = np.maximum.accumulate(np.where(known[at], np.arange(len(at)), -1))
        ok = last >= 0
        m2 = np.where(ok, m2_all[at][np.maximum(last, 0)], 0).astype(dt)
        has_mark[at] = ok
        mark_m[at] = m2 * HALF
        v = c_cash[k] - c_fee[k] + c_pos[k] * m2 * HALF
        value_m[at] = v
        delta[at] = np.diff(np.concatenate([np.zeros(1, dt), v]))
        eq_end[tb] = v[-1]
        if ok[-1]:
            mid_end[tb] = m2[-1] * HALF
    total = np.cumsum(delta) if n else np.zeros(0, dt)
    equity_t = pa.table({
        "time": pa.array(mk[:, M_TIME], pa.int64()),
        "instrument": pa.array(names, pa.string()).take(pa.array(m_tb, pa.int64())) if nt else pa.array([], pa.string()),
        "position": pa.array(pos_m.astype(np.int64) if dt is np.int64 else pos_m.tolist(), pa.int64()),
        "cash": money(cash_m), "fees": money(fees_m), "mark": money(mark_m, has_mark), "equity": money(value_m),
    })
    positions = pa.table({
        "instrument": pa.array(names, pa.string()), "position": pa.array([int(x) for x in pos_end], pa.int64()),
        "bought": pa.array([int(x) for x in bought], pa.int64()), "sold": pa.array([int(x) for x in sold], pa.int64()),
        "cash": money(np.array([int(x) for x in cash_end], dt)), "fees": money(np.array([int(x) for x in fees_end], dt)),
        "mark": money(np.array([0 if m is None else int(m) for m in mid_end], dt),
                      np.array([m is not None for m in mid_end], bool)),
        "equity": money(np.array([int(x) for x in eq_end], dt)),
    })
    return equity_t, positions, (mk[:, M_TIME].astype(np.int64), total)
