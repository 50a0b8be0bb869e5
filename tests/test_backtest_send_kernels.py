"""obook._kernels.backtest's order queue: ``bt_send`` (a Python strategy's order, its fields
in a row ``X``) and ``bt_queue`` (the instruction written at the queue's tail), compiled and
as Python, against the rows and local order table worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels.backtest import bt_queue, bt_send
from obook._kernels.backtest_layout import (LM_CONST, LO_DONE, LO_PENDING, LO_PRICE, LO_REF, LO_REM, LO_SIDE,
                                            LO_STATE, LO_TB, LO_WIDTH, S_INS_TAIL, S_LAST_ARR, S_WIDTH,
                                            SEND_FIELDS, X_ORIG, X_POST, X_REF, X_REFUSED, X_SEND, X_WIDTH)
from obook._kernels.simulate_layout import (I_ACT, I_ARR, I_HAS_PRICE, I_KEY, I_MARKET, I_PRICE, I_PROBE, I_QTY,
                                            I_ROW, I_SIDE, I_TB, I_TIF, OP_CANCEL, OP_MODIFY, OP_NEW, TIF_IOC)

LATENCY = 500


def _run(send, orders):
    """Each order (a dict of fields by SEND_FIELDS column, the rest 0) through ``send``."""
    INS, LO, S = np.zeros((8, X_WIDTH), np.int64), np.zeros((8, LO_WIDTH), np.int64), np.zeros(S_WIDTH, np.int64)
    LM = np.array([[LM_CONST, 1]] * 3, np.int64)
    LA, LB = np.zeros((3, 1), np.int64), np.full((3, 1), LATENCY, np.int64)
    INS[:] = -7                         # whatever an earlier use left: every field is written
    rows = []
    for o in orders:
        X = np.array([o.get(c, 0) for c in SEND_FIELDS], np.int64)
        rows.append(send(INS, LO, S, LM, LA, LB, X))
    return INS, LO, S, rows


def _queue_py(INS, LO, S, LM, LA, LB, X):
    """bt_send's job with bt_queue as Python: the fields written at the tail by hand."""
    q = S[S_INS_TAIL]
    INS[q, :] = 0
    INS[q, list(SEND_FIELDS)] = X
    return bt_queue.py_func(INS, LO, S, LM, LA, LB)


ORDERS = [
    {I_TB: 1, I_KEY: 3, I_ACT: OP_NEW, I_SIDE: 1, I_QTY: 200, I_PRICE: 1010, X_SEND: 100, X_REF: 31},
    # sent earlier than the first one's arrival: it arrives after it, never before
    {I_TB: 1, I_KEY: 4, I_ACT: OP_NEW, I_SIDE: 0, I_QTY: 50, I_PRICE: 77, I_MARKET: 1, I_TIF: TIF_IOC,
     X_SEND: 90, X_REF: 32},
    {I_TB: 1, I_KEY: 3, I_ACT: OP_MODIFY, I_SIDE: 1, I_QTY: 150, I_PRICE: -1, X_SEND: 2_000, X_REF: 33,
     X_ORIG: 31, X_POST: 1},
    {I_TB: 0, I_KEY: 5, I_ACT: OP_NEW, I_SIDE: 0, I_QTY: 10 ** 12, I_PRICE: 990, X_SEND: 2_100, X_REF: 34,
     X_REFUSED: 2},
    {I_TB: 1, I_KEY: 3, I_ACT: OP_CANCEL, I_SIDE: 1, X_SEND: 2_200, X_REF: 35, X_ORIG: 33},
]


@pytest.mark.parametrize("send", [bt_send, bt_send.py_func, _queue_py], ids=["compiled", "python", "queue_python"])
def test_bt_send_orders_rows_and_local_table_as_worked_by_hand(send):
    INS, LO, S, rows = _run(send, ORDERS)
    assert rows == [0, 1, 2, 3, 4] and S[S_INS_TAIL] == 5
    assert list(INS[:5, I_ROW]) == [1, 2, 3, 4, 5]
    # arrivals: sent + latency, in order; a refused one never arrives
    assert list(INS[:5, I_ARR]) == [600, 600, 2_500, -1, 2_700] and S[S_LAST_ARR] == 2_700
    assert list(INS[:5, I_PROBE]) == [600, 600, 2_500, 0, 2_700]
    # a market order has no price; a modify with price -1 keeps the resting one's
    assert list(INS[:5, I_PRICE]) == [1010, -1, -1, 990, 0]
    assert list(INS[:5, I_HAS_PRICE]) == [1, 0, 0, 1, 1]
    for c in (I_TB, I_KEY, I_ACT, I_SIDE, I_QTY, I_TIF, I_MARKET, X_POST, X_SEND, X_REF, X_ORIG, X_REFUSED):
        assert list(INS[:5, c]) == [o.get(c, 0) for o in ORDERS], c
    assert np.all(INS[5:] == -7)
    # the strategy's table: pending with its quantity; a modify sent leaves the ref (the venue's
    # acceptance moves it); refused: done
    assert (LO[3, LO_STATE], LO[3, LO_SIDE], LO[3, LO_PRICE], LO[3, LO_REM], LO[3, LO_TB], LO[3, LO_REF]) == (
        LO_PENDING, 1, 1010, 200, 1, 31)
    assert (LO[4, LO_STATE], LO[4, LO_PRICE], LO[4, LO_REM], LO[4, LO_REF]) == (LO_PENDING, 77, 50, 32)
    assert (LO[5, LO_STATE], LO[5, LO_REM], LO[5, LO_TB], LO[5, LO_REF]) == (LO_DONE, 0, 0, 34)


def test_bt_send_compiled_and_python_same_rows():
    got = [_run(send, ORDERS) for send in (bt_send, bt_send.py_func, _queue_py)]
    for INS, LO, S, _ in got[1:]:
        assert np.array_equal(INS, got[0][0]) and np.array_equal(LO, got[0][1]) and np.array_equal(S, got[0][2])


def _respond(deliver, INS, LO, S, responses):
    """Each response (key, kind, reason, price, qty, rem, row) through ``deliver``; the
    strategy's record of each key after each, as (ref, state, side, price, remaining)."""
    from obook._kernels.backtest_layout import R_KEY, R_KIND, R_PRICE, R_QTY, R_REASON, R_REM, R_ROW, R_WIDTH

    RQ, PL = np.zeros((len(responses), R_WIDTH), np.int64), np.zeros(2, np.int64)
    seen = []
    for q, (key, kind, reason, price, qty, rem, row) in enumerate(responses):
        RQ[q, [R_KEY, R_KIND, R_REASON, R_PRICE, R_QTY, R_REM, R_ROW]] = key, kind, reason, price, qty, rem, row
        deliver(RQ, LO, PL, INS, S, q)
        seen.append(tuple(int(v) for v in LO[key, [LO_REF, LO_STATE, LO_SIDE, LO_PRICE, LO_REM]]))
    return seen


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_deliver_replace_renames_record_at_its_modified_response_not_at_its_rejection(compiled):
    from obook._kernels.backtest import deliver
    from obook._kernels.backtest_layout import LO_OPEN
    from obook._kernels.simulate_layout import K_ACCEPTED, K_MODIFIED, K_REJECTED, R_NOT_LIVE

    deliver = deliver if compiled else deliver.py_func
    INS, LO, S, _ = _run(bt_send, ORDERS)       # row 3: the replace of ref 31 by ref 33
    assert _respond(deliver, INS, LO, S, [(3, K_ACCEPTED, 0, 1010, 200, 200, 1),
                                          (3, K_REJECTED, R_NOT_LIVE, 1010, 150, 0, 3)])[1][0] == 31
    INS, LO, S, _ = _run(bt_send, ORDERS)
    assert _respond(deliver, INS, LO, S, [(3, K_ACCEPTED, 0, 1010, 200, 200, 1),
                                          (3, K_MODIFIED, 0, 1010, 150, 150, 3)]) == [
        (31, LO_OPEN, 1, 1010, 200), (33, LO_OPEN, 1, 1010, 150)]


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_deliver_turned_away_pending_order_makes_next_sent_order_of_its_ref_the_record(compiled):
    from obook._kernels.backtest import deliver
    from obook._kernels.backtest_layout import LO_OPEN
    from obook._kernels.simulate_layout import K_ACCEPTED, K_REJECTED, R_FOK, TIF_FOK

    deliver = deliver if compiled else deliver.py_func
    buy = {I_TB: 1, I_KEY: 3, I_ACT: OP_NEW, I_SIDE: 0, I_QTY: 200, I_PRICE: 1010, I_TIF: TIF_FOK, X_REF: 1}
    refused = {**buy, I_SIDE: 1, I_QTY: 7, I_TIF: 0, X_REFUSED: 2}
    sell = {**buy, I_SIDE: 1, I_QTY: 10, I_PRICE: 1030, I_TIF: 0}
    INS, LO, S, _ = _run(bt_send, [buy, refused, sell])
    assert tuple(LO[3, [LO_STATE, LO_SIDE, LO_REM]]) == (LO_PENDING, 0, 200)     # the others kept out
    # the FOK turned away: the sell (row 3, sent after it and not refused) is the record, pending
    assert _respond(deliver, INS, LO, S, [(3, K_REJECTED, R_FOK, 1010, 200, 0, 1),
                                          (3, K_ACCEPTED, 0, 1030, 10, 10, 3)]) == [
        (1, LO_PENDING, 1, 1030, 10), (1, LO_OPEN, 1, 1030, 10)]
