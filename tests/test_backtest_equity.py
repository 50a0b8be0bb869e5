"""obook.backtest.equity (positions, cash, fees, equity by columns) against a row-by-row
Python reference, with amounts that fit int64 and amounts that do not."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from obook._kernels.backtest_layout import M_ASK, M_BID, M_SEQ, M_TB, M_TIME, M_WIDTH
from obook._kernels.simulate_layout import F_PRICE, F_QTY, F_SIDE, F_WIDTH, K_COUNT, K_TB, NONE
from obook.backtest.columns import schema
from obook.backtest.equity import SCALE, equity


def reference(names, fl, fee, mk):
    """Marks in (time, seq) order; each applies the fills written before it, in order."""
    nt = len(names)
    fills = sorted(range(len(fl)), key=lambda i: fl[i, K_COUNT])
    pos, cash, fees, mid2, eq = [0] * nt, [0] * nt, [0] * nt, [None] * nt, [0] * nt
    j, rows, total = 0, [], []
    for r in sorted(mk.tolist(), key=lambda r: (r[M_TIME], r[M_SEQ])):
        while j < len(fills) and fl[fills[j], K_COUNT] < r[M_SEQ]:
            f = fl[fills[j]]
            tb, q, p = int(f[K_TB]), int(f[F_QTY]), int(f[F_PRICE])
            sign = 1 if f[F_SIDE] == 0 else -1
            pos[tb] += sign * q
            cash[tb] -= sign * q * p * SCALE
            fees[tb] += int(fee[fills[j]])
            j += 1
        tb, bid, ask = r[M_TB], r[M_BID], r[M_ASK]
        if bid != NONE and ask != NONE:
            mid2[tb] = bid + ask
        elif bid != NONE or ask != NONE:
            mid2[tb] = 2 * (bid if bid != NONE else ask)
        eq[tb] = cash[tb] - fees[tb] + (pos[tb] * mid2[tb] * SCALE // 2 if mid2[tb] is not None else 0)
        rows.append((r[M_TIME], names[tb], pos[tb], Decimal(cash[tb]).scaleb(-4), Decimal(fees[tb]).scaleb(-4),
                     None if mid2[tb] is None else Decimal(mid2[tb] * SCALE // 2).scaleb(-4), Decimal(eq[tb]).scaleb(-4)))
        total.append(sum(eq))
    return rows, total, pos, eq


def _day(price: int, seed: int = 5, nt: int = 3, n_fills: int = 400, n_marks: int = 300):
    rng = np.random.default_rng(seed)
    fl = np.zeros((n_fills, F_WIDTH), np.int64)
    fl[:, K_COUNT] = rng.permutation(np.arange(0, 2 * n_fills, 2))
    fl[:, K_TB] = rng.integers(0, nt, n_fills)
    fl[:, F_QTY] = rng.integers(1, 500, n_fills)
    fl[:, F_PRICE] = price + rng.integers(-50, 50, n_fills)
    fl[:, F_SIDE] = rng.integers(0, 2, n_fills)
    fee = rng.integers(-3000, 3000, n_fills)
    mk = np.zeros((n_marks, M_WIDTH), np.int64)
    mk[:, M_TIME] = rng.integers(0, 1000, n_marks)
    mk[:, M_SEQ] = rng.integers(0, 2 * n_fills + 2, n_marks)
    mk[:, M_TB] = rng.integers(0, nt, n_marks)
    mk[:, M_BID] = price - rng.integers(1, 20, n_marks)
    mk[:, M_ASK] = price + rng.integers(1, 20, n_marks)
    gone = rng.random((n_marks, 2)) < 0.3               # a side (or both) empty
    mk[gone[:, 0], M_BID] = NONE
    mk[gone[:, 1], M_ASK] = NONE
    return [f"S{i}" for i in range(nt)], fl, fee, mk


# int64 columns; Python integers (amounts near or outside int64's range); marks alone
# outside it
@pytest.mark.parametrize("price, n_fills", [(10_000, 400), (10 ** 10, 400), (10 ** 14, 400), (10 ** 15, 0)])
def test_equity_columns_equal_row_by_row_reference(price, n_fills):
    names, fl, fee, mk = _day(price, n_fills=n_fills)
    table, positions, (times, total) = equity(names, fl, fee, mk)
    rows, want_total, pos, eq = reference(names, fl, fee, mk)
    got = [tuple(r.values()) for r in table.to_pylist()]
    assert got == rows
    assert [int(v) for v in total] == want_total
    assert positions.column("position").to_pylist() == pos
    assert positions.column("equity").to_pylist() == [Decimal(v).scaleb(-4) for v in eq]
    assert table.schema.equals(schema("equity"), check_metadata=True)
    assert positions.schema.equals(schema("positions"), check_metadata=True)


def test_equity_no_fills_no_marks_empty_tables():
    names, fl, fee, mk = _day(100, n_fills=0, n_marks=0)
    table, positions, (times, total) = equity(names, fl, fee, mk)
    assert table.num_rows == 0 and len(total) == 0
    assert positions.column("position").to_pylist() == [0, 0, 0]
    assert positions.column("mark").to_pylist() == [None, None, None]


def test_equity_rows_already_in_order_equal_reference():
    names, fl, fee, mk = _day(10_000, seed=11)
    by = np.argsort(fl[:, K_COUNT])
    fl, fee = fl[by], fee[by]
    mk = mk[np.lexsort((mk[:, M_SEQ], mk[:, M_TIME]))]
    table, positions, (times, total) = equity(names, fl, fee, mk)
    rows, want_total, pos, eq = reference(names, fl, fee, mk)
    assert [tuple(r.values()) for r in table.to_pylist()] == rows
    assert [int(v) for v in total] == want_total
    assert positions.column("position").to_pylist() == pos


def _both_ways(seed):
    """The int64 pass (obook._kernels.equity) and the Python-integer columns of one day."""
    from obook.backtest.equity import _columns, _int_columns, _sorted_by

    names, fl, fee, mk = _day(10_000, seed=seed)
    mk = mk[np.lexsort((mk[:, M_SEQ], mk[:, M_TIME]))]
    order = _sorted_by(fl[:, K_COUNT])
    fast = _int_columns(len(names), fl, order, fee, mk)
    m_bid, m_ask = mk[:, M_BID], mk[:, M_ASK]
    m2 = np.where((m_bid != NONE) & (m_ask != NONE), m_bid + m_ask, np.where(m_bid != NONE, 2 * m_bid, 2 * m_ask))
    applied = np.maximum.accumulate(np.searchsorted(fl[order, K_COUNT], mk[:, M_SEQ], "left"))
    slow = _columns(object, len(names), *(fl[order, c] for c in (K_TB, F_QTY, F_PRICE, F_SIDE)), fee[order],
                    mk[:, M_TB], m2, (m_bid != NONE) | (m_ask != NONE), applied, int(applied[-1]))
    return fast, slow


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_equity_int64_pass_equals_python_integer_columns(seed):
    fast, slow = _both_ways(seed)
    for k in ("pos", "cash", "fees", "mark", "value", "total", "pos_end", "bought", "sold", "cash_end", "fees_end",
              "eq_end", "mid_end"):
        assert [int(v) for v in fast[k]] == [int(v) for v in slow[k]], k
    for k in ("has_mark", "has_mid"):
        assert fast[k].tolist() == slow[k].tolist(), k


def test_eq_marks_compiled_and_python_equal():
    from obook._kernels.equity import B_WIDTH, BQ_WIDTH, Q_WIDTH, eq_marks

    names, fl, fee, mk = _day(10_000, seed=4)
    mk = mk[np.lexsort((mk[:, M_SEQ], mk[:, M_TIME]))]
    order = np.argsort(fl[:, K_COUNT], kind="stable")
    outs = []
    for fn in (eq_marks, getattr(eq_marks, "py_func", eq_marks)):
        out, books = np.zeros((len(mk), Q_WIDTH), np.int64), np.zeros((len(names), BQ_WIDTH), np.int64)
        bound = np.zeros(B_WIDTH)
        done = fn(fl, order, fee, mk, out, books, np.zeros((len(names), 2)), bound)
        outs.append((done, out, books, bound))
    assert outs[0][0] == outs[1][0] > 0
    assert np.array_equal(outs[0][1], outs[1][1]) and np.array_equal(outs[0][2], outs[1][2])
    assert np.allclose(outs[0][3], outs[1][3]) and outs[0][3].min() > 0


def test_equity_int64_overflow_of_mid_alone_falls_back_to_python_integers():
    # both sides near the largest price: their sum overflows int64, the equity does not
    names, fl, fee, mk = _day(100, n_fills=0, n_marks=5)
    mk[:, M_BID], mk[:, M_ASK] = (1 << 62) - 10, (1 << 62) - 5
    table, positions, (times, total) = equity(names, fl, fee, mk)
    rows, want_total, pos, eq = reference(names, fl, fee, mk)
    assert [tuple(r.values())[-2] for r in table.to_pylist()] == [r[-2] for r in rows]
