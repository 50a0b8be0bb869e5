"""The L2 queue model's kernels (obook._kernels.l2_queue), compiled and as Python, on
numbers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from obook._kernels import l2_queue as K


def both(fn):
    return [fn, fn.py_func]


def orders(*rows):
    OQ = np.array(rows, np.int64).reshape(-1, K.Q_WIDTH)
    return OQ, np.zeros(len(OQ), np.float64)


@pytest.mark.parametrize("prob", both(K.queue_prob))
def test_queue_prob_each_model_by_hand(prob):
    front, back = 200.0, 100.0
    assert prob(K.M_POWER, 2.0, front, back) == pytest.approx(100**2 / (100**2 + 200**2))     # 0.2
    assert prob(K.M_POWER2, 2.0, front, back) == pytest.approx(100**2 / 300**2)
    assert prob(K.M_POWER3, 2.0, front, back) == pytest.approx(1 - (200 / 300) ** 2)
    assert prob(K.M_LOG, 1.0, front, back) == pytest.approx(math.log(101) / (math.log(101) + math.log(201)))
    assert prob(K.M_LOG2, 1.0, front, back) == pytest.approx(math.log(101) / math.log(301))
    assert prob(K.M_RISK_AVERSE, 1.0, front, back) == 1.0
    assert prob(K.M_POWER, 2.0, 0.0, 0.0) == 1.0            # undefined: from behind
    assert prob(K.M_POWER, 2.0, 300.0, 0.0) == 0.0          # nothing behind: from ahead


@pytest.mark.parametrize("depth", both(K.l2_depth))
def test_l2_depth_splits_a_cancel_by_the_model(depth):
    OQ, AH = orders((0, 0, 1000, 50, 1), (0, 0, 990, 50, 1))
    AH[:] = 200.0, 7.0
    # 300 -> 240 shares, no trade: 60 cancelled; ahead 200, behind 100: 0.2 of it behind
    assert depth(OQ, AH, 2, 0, 0, 1000, 300, 240, 0, K.M_POWER, 2.0) == 1
    assert AH[0] == pytest.approx(200 - 0.8 * 60) and AH[1] == 7.0           # 152; the other level untouched
    # a fall the trades already explain moves nothing more
    assert depth(OQ, AH, 2, 0, 0, 1000, 240, 88, 152, K.M_POWER, 2.0) == 1
    assert AH[0] == pytest.approx(88)                                        # capped by the level
    # more behind than there is: the rest comes from ahead (risk-averse: all from behind)
    AH[0] = 80.0
    depth(OQ, AH, 2, 0, 0, 1000, 100, 50, 0, K.M_RISK_AVERSE, 1.0)
    assert AH[0] == pytest.approx(50)                                       # 20 behind, 30 from ahead
    AH[0] = 10.0
    depth(OQ, AH, 2, 0, 0, 1000, 50, 400, 0, K.M_POWER, 2.0)                # a rise is behind
    assert AH[0] == 10.0


@pytest.mark.parametrize("trade", both(K.l2_trade))
def test_l2_trade_consumes_ahead_then_fills(trade):
    OQ, AH = orders((0, 0, 1000, 50, 1), (0, 0, 1001, 40, 1), (0, 1, 1000, 10, 1))
    AH[:] = 152.0, 0.0, 0.0
    FILLS = np.zeros((3, K.FILL_WIDTH), np.int64)
    # a sell of 152 at 1000: the queue ahead goes; the bid at 1001 was passed through
    assert trade(OQ, AH, 3, 0, 0, 1000, 152, FILLS) == 1
    assert FILLS[0].tolist() == [1, 1001, 40] and OQ[1, K.Q_LIVE] == 0 and AH[0] == 0.0
    assert trade(OQ, AH, 3, 0, 0, 1000, 30, FILLS) == 1                    # 30 past an empty queue
    assert FILLS[0].tolist() == [0, 1000, 30] and OQ[0, K.Q_REM] == 20 and OQ[0, K.Q_LIVE] == 1
    assert OQ[2, K.Q_REM] == 10                                           # the ask side is untouched


@pytest.mark.parametrize("crossed", both(K.l2_crossed))
def test_l2_crossed_fills_orders_the_opposite_best_reached(crossed):
    OQ, _ = orders((0, 0, 1000, 50, 1), (0, 1, 1010, 5, 1), (0, 0, 999, 5, 1))
    FILLS = np.zeros((3, K.FILL_WIDTH), np.int64)
    assert crossed(OQ, 3, 0, 990, 1000, 1, 1, FILLS) == 1                   # an ask at 1000 meets the 1000 bid
    assert FILLS[0].tolist() == [0, 1000, 50] and OQ[0, K.Q_LIVE] == 0
    assert crossed(OQ, 3, 0, 990, 0, 1, 0, FILLS) == 0                      # no ask: nothing
