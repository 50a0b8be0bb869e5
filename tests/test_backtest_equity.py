"""obook.backtest.equity (positions, cash, fees, equity by columns) against a row-by-row
Python reference, with amounts that fit int64 and amounts that do not."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from obook._kernels.backtest_layout import M_ASK, M_BID, M_SEQ, M_TB, M_TIME, M_WIDTH
from obook._kernels.simulate_layout import F_PRICE, F_QTY, F_SIDE, F_WIDTH, K_COUNT, K_TB, NONE
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


def test_equity_no_fills_no_marks_empty_tables():
    names, fl, fee, mk = _day(100, n_fills=0, n_marks=0)
    table, positions, (times, total) = equity(names, fl, fee, mk)
    assert table.num_rows == 0 and len(total) == 0
    assert positions.column("position").to_pylist() == [0, 0, 0]
    assert positions.column("mark").to_pylist() == [None, None, None]
