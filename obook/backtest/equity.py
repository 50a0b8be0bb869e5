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

    m2_all = np.where((m_bid != NONE) & (m_ask != NONE), m_bid + m_ask,
                      np.where(m_bid != NONE, 2 * m_bid, 2 * m_ask))
    known = (m_bid != NONE) | (m_ask != NONE)
    # int64 arithmetic wraps, so it is exact wherever the true result fits: a bound of every
    # amount from float sums tells whether all are far inside that range (else the same
    # columns in Python integers)
    top = _bound(nt, f_tb, f_q, f_p, f_side, f_fee, float(np.abs(m2_all[known]).max(initial=0))) \
        if f_fee.dtype == np.int64 else SAFE
    dt = np.int64 if top < SAFE / 2 else object
    c = _columns(dt, nt, f_tb, f_q, f_p, f_side, f_fee, m_tb, m2_all, known, applied, done)
    equity_t = pa.table({
        "time": pa.array(mk[:, M_TIME], pa.int64()),
        "instrument": pa.array(names, pa.string()).take(pa.array(m_tb, pa.int64())),
        "position": pa.array(c["pos"].tolist() if dt is object else c["pos"], pa.int64()),
        "cash": money(c["cash"]), "fees": money(c["fees"]), "mark": money(c["mark"], c["has_mark"]),
        "equity": money(c["value"]),
    })
    positions = pa.table({
        "instrument": pa.array(names, pa.string()),
        **{k: pa.array([int(x) for x in c[col]], pa.int64())
           for k, col in (("position", "pos_end"), ("bought", "bought"), ("sold", "sold"))},
        "cash": money(c["cash_end"]), "fees": money(c["fees_end"]), "mark": money(c["mid_end"], c["has_mid"]),
        "equity": money(c["eq_end"]),
    })
    return equity_t, positions, (mk[:, M_TIME].astype(np.int64), c["total"])


def _bound(nt, f_tb, f_q, f_p, f_side, f_fee, m2_max) -> float:
    """A bound (a float, rounding included) of every amount the columns hold: a book's
    cash (the largest of its running sums), fees and position times the largest mark, their
    sum for the book's equity, twice that for a change of it, the books' for the total."""
    q = f_q.astype(np.float64)
    dpos = np.where(f_side == 0, q, -q)
    dcash = dpos * f_p.astype(np.float64) * SCALE
    by = np.argsort(f_tb, kind="stable")
    tb = f_tb[by]
    first = np.ones(len(tb), bool)                          # each book's first fill
    first[1:] = tb[1:] != tb[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(len(tb)), 0))

    def most(x):
        """The largest |running sum| of x within a book."""
        xs = x[by]
        c = np.cumsum(xs)
        return float(np.abs(c - (c - xs)[start]).max(initial=0))

    book = most(dcash) + float(np.abs(f_fee.astype(np.float64)).sum()) + (most(dpos) + 1) * m2_max * HALF
    rounding = float(np.abs(dcash).sum()) * len(q) * 2 ** -50
    return book * max(2, nt) + rounding


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
