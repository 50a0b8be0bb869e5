"""obook.engine.books.BookState: the growth of the overflow order table (64-bit order ids)."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels import book as K
from obook._kernels.layout import ACT_ADD, ACT_DELETE, BID, EV_WIDTH, OK, ROW_WIDTH
from obook.engine.books import BookState, ExtraRows


def _churn(orders: int, live: int) -> np.ndarray:
    """Adds of ``orders`` bids with 64-bit ids, each deleted once ``live`` newer ones rest.
    A first order with ref 1 (deleted at the end) puts the direct index's window at 0, so
    the 64-bit ids all go to the overflow table."""
    ev = np.zeros((2 * orders + 2, EV_WIDTH), np.int64)
    ev[0] = (1, 0, 0, ACT_ADD | (BID << 8), 1, 10, 99, 0, 0, 0)
    k = 1
    for i in range(orders):
        ev[k] = (k + 1, k, 0, ACT_ADD | (BID << 8), 2**40 + i, 10, 100 + i % 50, 0, 0, 0)
        k += 1
        if i >= live:
            ev[k] = (k + 1, k, 0, ACT_DELETE, 2**40 + i - live, 0, 0, 0, 0, 0)
            k += 1
    ev[k] = (k + 1, k, 0, ACT_DELETE, 1, 0, 0, 0, 0, 0)
    return ev[:k + 1]


def _grows(ev, monkeypatch, kept=None):
    if kept is not None:
        monkeypatch.setattr(BookState, "OV_ROWS_KEPT", kept)
    b = BookState()
    calls = []
    grow = b.grow
    b.grow = lambda room: (calls.append(room), grow(room))
    status, _, n = b.apply(ev, len(ev), np.zeros((len(ev) + 8, ROW_WIDTH), np.int64), ExtraRows())
    assert status == OK and n > 0
    return calls.count(K.ROOM_OVERFLOW), b.live_orders


@pytest.mark.parametrize("kept", [None, 64])
def test_book_state_overflow_full_of_tombstones_rare_kernel_returns(monkeypatch, kept):
    """Orders come and go with few live: tombstones, not live orders, fill the table. It
    doubles to OV_ROWS_KEPT rows, so the kernel comes back to Python a few times, not once
    every few dozen orders (the rule without that floor: kept=64)."""
    ev = _churn(60_000, 20)
    grows, live = _grows(ev, monkeypatch, kept)
    assert live == 20
    if kept is None:
        assert grows <= 20
    else:
        assert grows > 1_000
