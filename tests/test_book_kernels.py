"""The book kernel on hand-made event rows, compiled and as plain Python (.py_func)."""

import numpy as np
import pytest

from obook._kernels import book as K
from obook._kernels.layout import (ACT_ADD, ACT_ADD_ZERO_OK, ACT_CANCEL, ACT_DELETE, ACT_EXEC,
                                   ACT_EXEC_CLAMP, ACT_REDUCE_TO, ACT_REPLACE, ASK, BID,
                                   ERR_DUPLICATE_REF, ERR_OVER_CANCEL, ERR_OVER_EXECUTION,
                                   ERR_UNKNOWN_REF, ERR_ZERO_ADD, EV_WIDTH, OK, ROW_WIDTH)
from obook.engine.books import BookState

KERNELS = [pytest.param(K.apply_events, id="compiled"), pytest.param(K.apply_events.py_func, id="py_func")]


def ev(*rows):
    """rows of (action, side, book, ref, shares, price, new_ref); seq = position + 1."""
    out = np.zeros((len(rows), EV_WIDTH), dtype=np.int64)
    for i, (act, side, book, ref, shares, price, new_ref) in enumerate(rows):
        out[i, :8] = (i + 1, 1000 + i, book, act | (side << 8), ref, shares, price, new_ref)
    return out


def add(ref, side, shares, price, book=1, act=ACT_ADD):
    return (act, side, book, ref, shares, price, 0)


def op(act, ref, shares=0, book=1, price=0, new_ref=0):
    return (act, 0, book, ref, shares, price, new_ref)


def run(events, kernel, strict=True, **sizes):
    b = BookState(strict=strict, kernel=kernel, **sizes)
    rows = np.zeros((len(events) + 1, ROW_WIDTH), dtype=np.int64)
    status, i, n = b.apply(events, len(events), rows)
    return status, i, [tuple(int(x) for x in r) for r in rows[:n]], b


@pytest.mark.parametrize("kernel", KERNELS)
def test_apply_events_adds_and_reductions_emit_bbo_rows(kernel):
    status, _, rows, b = run(ev(add(1, BID, 100, 50), add(2, ASK, 30, 60), add(3, BID, 10, 49),
                                op(ACT_EXEC, 1, 40), op(ACT_CANCEL, 1, 60), op(ACT_DELETE, 2)), kernel)
    assert status == OK
    assert rows == [
        (1, 1000, 1, 50, 100, 1, -1, -1, 0),
        (2, 1001, 1, 50, 100, 1, 60, 30, 1),
        (4, 1003, 1, 50, 60, 1, 60, 30, 1),   # 3 is below the touch: no row
        (5, 1004, 1, 49, 10, 1, 60, 30, 1),   # cancel to zero removes the level
        (6, 1005, 1, 49, 10, 1, -1, -1, 0),
    ]
    assert b.live_orders == 1


@pytest.mark.parametrize("kernel", KERNELS)
def test_apply_events_replace_of_replaced_order_moves_to_back(kernel):
    status, _, rows, b = run(ev(add(1, ASK, 10, 60), add(2, ASK, 5, 60), op(ACT_REPLACE, 1, 7, price=61, new_ref=3),
                                op(ACT_REPLACE, 3, 8, price=60, new_ref=4), op(ACT_DELETE, 2)), kernel)
    assert status == OK
    assert [r[6:] for r in rows] == [(60, 10, 1), (60, 15, 2), (60, 5, 1), (60, 13, 2), (60, 8, 1)]
    assert b.live_orders == 1


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("events,code,at", [
    (ev(op(ACT_DELETE, 9)), ERR_UNKNOWN_REF, 0),
    (ev(add(1, BID, 5, 10), add(1, ASK, 5, 11)), ERR_DUPLICATE_REF, 1),
    (ev(add(1, BID, 5, 10), op(ACT_EXEC, 1, 6)), ERR_OVER_EXECUTION, 1),
    (ev(add(1, BID, 5, 10), op(ACT_CANCEL, 1, 6)), ERR_OVER_CANCEL, 1),
    (ev(add(1, BID, 0, 10)), ERR_ZERO_ADD, 0),
    (ev(add(1, BID, 5, 10), add(2, BID, 5, 10), op(ACT_REPLACE, 1, 5, price=9, new_ref=2)), ERR_DUPLICATE_REF, 2),
    (ev(add(1, BID, 5, 10, book=2), op(ACT_DELETE, 1, book=3)), ERR_UNKNOWN_REF, 1),
])
def test_apply_events_failing_event_strict_stops_there(kernel, events, code, at):
    status, i, rows, _ = run(events, kernel)
    assert (status, i) == (code, at)
    assert all(r[0] <= at for r in rows)


@pytest.mark.parametrize("kernel", KERNELS)
def test_apply_events_tolerant_counts_and_applies_rules(kernel):
    status, _, rows, b = run(ev(op(ACT_DELETE, 9), add(1, BID, 5, 10), add(1, BID, 7, 11),
                                op(ACT_EXEC, 1, 9), add(2, ASK, 0, 20), add(3, ASK, 4, 20),
                                op(ACT_CANCEL, 3, 5)), kernel, strict=False)
    assert status == OK
    assert b.skips[ERR_UNKNOWN_REF] == 1 and b.skips[ERR_DUPLICATE_REF] == 1
    assert b.skips[ERR_OVER_EXECUTION] == 1 and b.skips[ERR_ZERO_ADD] == 1 and b.skips[ERR_OVER_CANCEL] == 1
    assert rows[1][3:6] == (11, 7, 1)       # the duplicate add replaced the live order
    assert b.live_orders == 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_apply_events_csv_actions_follow_spec(kernel):
    status, _, rows, b = run(ev(add(1, BID, 0, 10, act=ACT_ADD_ZERO_OK), add(2, BID, 50, 10, act=ACT_ADD_ZERO_OK),
                                op(ACT_REDUCE_TO, 2, 80), op(ACT_REDUCE_TO, 2, 20), op(ACT_EXEC_CLAMP, 1, 0),
                                op(ACT_EXEC_CLAMP, 2, 999)), kernel)
    assert status == OK
    assert [r[3:6] for r in rows] == [(10, 0, 1), (10, 50, 2), (10, 20, 2), (-1, -1, 0)]
    assert b.live_orders == 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_apply_events_same_ref_in_two_books_kept_apart(kernel):
    status, _, rows, b = run(ev(add(5, BID, 10, 10, book=1), add(5, BID, 20, 11, book=2), op(ACT_DELETE, 5, book=1),
                                add(5, ASK, 3, 30, book=1), op(ACT_EXEC, 5, 20, book=2)), kernel)
    assert status == OK
    assert [(r[2], r[3], r[4], r[6]) for r in rows] == [(1, 10, 10, -1), (2, 11, 20, -1), (1, -1, -1, -1),
                                                       (1, -1, -1, 30), (2, -1, -1, -1)]
    assert b.live_orders == 1


@pytest.mark.parametrize("kernel", KERNELS)
def test_apply_events_huge_and_far_refs_use_overflow_table(kernel):
    refs = [0, 2**32 - 1, 2**32, 2**63 - 1, -(2**63)]   # the last one is u64 2**63 as int64
    events = ev(*[add(r, BID, 1 + k, 100 + k) for k, r in enumerate(refs)], *[op(ACT_DELETE, r) for r in refs])
    status, _, rows, b = run(events, kernel, overflow=4)
    assert status == OK
    assert rows[-1][3] == -1 and b.live_orders == 0
    assert b.pages.shape[0] // K.PAGE <= 64 and b.page_dir.shape[0] <= 4  # memory for what is live only


def test_apply_events_growth_from_tiny_pools_gives_identical_rows():
    rng = np.random.default_rng(3)
    rows_spec, live = [], []
    for ref in range(1, 3000):
        if live and rng.random() < 0.45:
            r = live.pop(rng.integers(len(live)))
            rows_spec.append(op(ACT_DELETE, r, book=int(r % 7)))
        else:
            rows_spec.append(add(ref, int(rng.integers(2)), int(rng.integers(1, 500)),
                                 100 + int(rng.integers(-40, 40)), book=ref % 7))
            live.append(ref)
    events = ev(*rows_spec)
    big = run(events, K.apply_events)
    tiny = run(events, K.apply_events, books=1, levels=1, pages=1, overflow=2)
    assert big[0] == tiny[0] == OK and big[2] == tiny[2]
