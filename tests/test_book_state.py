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


def test_book_state_sparse_refs_hash_only_same_book():
    """sparse_refs keeps the orders in the hash table (no page of the direct index), an id
    in the parked window (a 64-bit id from 2**63) through the pages, and the book's rows
    are those of the direct index's."""
    ev = _churn(2_000, 300)
    ev[ev[:, 4] >= 2**40, 4] -= 2**40 - 1_000          # small ids: the direct index's
    ev[ev[:, 4] == 1_004, 4] = -(1 << 63) + 7          # one order's id is 2**63 + 7 (uint64)
    rows = {}
    for sparse in (False, True):
        b = BookState(sparse_refs=sparse)
        out = np.zeros((len(ev) + 8, ROW_WIDTH), np.int64)
        status, _, n = b.apply(ev, len(ev), out, ExtraRows())
        assert status == OK
        rows[sparse] = b.out_rows[:n].copy()
        pages, hashed = int(b.st[K.ST_PAGE_TOP]), int(b.st[K.ST_OV_USED])
        assert b.live_orders == 300
        assert (pages, hashed) == (1, 300) if sparse else (pages > 1 and hashed == 0)
    assert np.array_equal(rows[True], rows[False])
