"""The probabilistic queue model of own orders in market-by-price (L2) books (numba).

An L2 feed gives each price level's total shares, not its orders, so an own order's place
in its level is an estimate: ``AH[k]``, the shares ahead of own order ``k``. It joins at
the back (``AH`` = the level's visible shares); a trade at its price consumes the shares
ahead first and fills it with what goes past them; a fall of the level's shares that no
trade explains (cancels) is split between ahead and behind by ``queue_prob`` (the
probability that a cancelled share was behind the order), the family of hftbacktest's
ProbQueueModel. docs/backtesting.md states the rules and their assumptions.

Own orders are rows of ``OQ`` (int64, ``Q_*`` columns); fills are written into a
preallocated ``FILLS`` buffer (``FILL_*`` columns) and the kernels return how many.
"""

import numpy as np

from .jit import njit

# own orders OQ[k, Q_WIDTH]
Q_TB, Q_SIDE, Q_PRICE, Q_REM, Q_LIVE = range(5)
Q_WIDTH = 5
# fills FILLS[n, FILL_WIDTH]
FILL_KEY, FILL_PRICE, FILL_QTY = range(3)
FILL_WIDTH = 3

# models (queue_prob's ``model``; ``n`` its exponent where it has one)
M_POWER, M_POWER2, M_POWER3, M_LOG, M_LOG2, M_RISK_AVERSE = range(6)


@njit(cache=True)
def queue_prob(model, n, front, back):
    """The probability that a share leaving the level (not traded) was behind the order,
    from the shares ahead (front) and behind (back): f(back) / (f(back) + f(front)) with
    f(x) = x**n (power) or log(1 + x) (log); f(back) / f(back + front) (power2, log2);
    1 - (front / (front + back))**n (power3); 1 (risk-averse: every cancel is behind).
    An undefined ratio (both 0) is 1."""
    if model == M_RISK_AVERSE:
        return 1.0
    if model == M_POWER3:
        total = front + back
        return 1.0 if total <= 0.0 else 1.0 - (front / total) ** n
    if model == M_POWER or model == M_POWER2:
        fb, ff = back ** n, front ** n
        if model == M_POWER2:
            ff = (back + front) ** n - fb
    else:
        fb, ff = np.log1p(back), np.log1p(front)
        if model == M_LOG2:
            ff = np.log1p(back + front) - fb
    den = fb + ff
    return 1.0 if den <= 0.0 else fb / den


@njit(cache=True)
def l2_depth(OQ, AH, n, tb, side, price, prev_qty, new_qty, traded, model, power):
    """The level (tb, side, price) went from prev_qty to new_qty shares, ``traded`` of them
    by trades the model has already applied: the rest of a fall is split between the shares
    ahead of each own order there and those behind it (queue_prob), never more from
    behind than there are; a rise is behind every own order. Ahead never exceeds the
    level. Returns the own orders moved."""
    fall = float(prev_qty - new_qty - traded)
    moved = 0
    for k in range(n):
        if OQ[k, Q_LIVE] == 0 or OQ[k, Q_TB] != tb or OQ[k, Q_SIDE] != side or OQ[k, Q_PRICE] != price:
            continue
        front = AH[k]
        if fall > 0.0:
            back = max(float(prev_qty - traded) - front, 0.0)
            behind = min(queue_prob(model, power, front, back) * fall, back)
            front = front - (fall - behind)
        AH[k] = max(0.0, min(front, float(new_qty)))
        moved += 1
    return moved


@njit(cache=True)
def l2_trade(OQ, AH, n, tb, side, price, qty, FILLS):
    """A trade of ``qty`` shares against the resting ``side`` (0 bids, 1 asks) at ``price``:
    own orders at that price lose qty of the shares ahead and fill with what goes past
    them (each of them: the trade is a sweep of the level's time queue, the model does not
    know the other own orders' places relative to each other); own orders at a better
    price (a bid above, an ask below) were passed through: they fill qty shares at their
    own price. Writes the fills; returns their count."""
    nf = 0
    for k in range(n):
        if OQ[k, Q_LIVE] == 0 or OQ[k, Q_TB] != tb or OQ[k, Q_SIDE] != side:
            continue
        p = OQ[k, Q_PRICE]
        better = p > price if side == 0 else p < price
        got = 0
        if p == price:
            left = AH[k] - float(qty)
            if left < 0.0:
                got = min(int(-left), OQ[k, Q_REM])
                left = 0.0
            AH[k] = left
        elif better:
            got = min(qty, OQ[k, Q_REM])
        if got > 0:
            FILLS[nf, FILL_KEY], FILLS[nf, FILL_PRICE], FILLS[nf, FILL_QTY] = k, p, got
            OQ[k, Q_REM] -= got
            if OQ[k, Q_REM] == 0:
                OQ[k, Q_LIVE] = 0
            nf += 1
    return nf


@njit(cache=True)
def l2_crossed(OQ, n, tb, best_bid, best_ask, has_bid, has_ask, FILLS):
    """Own orders the opposite side's best price reached (an ask at or below an own bid,
    a bid at or above an own ask: someone posted there and would have met them) fill whole
    at their own price. Returns the fills written."""
    nf = 0
    for k in range(n):
        if OQ[k, Q_LIVE] == 0 or OQ[k, Q_TB] != tb:
            continue
        p = OQ[k, Q_PRICE]
        hit = (has_ask != 0 and best_ask <= p) if OQ[k, Q_SIDE] == 0 else (has_bid != 0 and best_bid >= p)
        if hit:
            FILLS[nf, FILL_KEY], FILLS[nf, FILL_PRICE], FILLS[nf, FILL_QTY] = k, p, OQ[k, Q_REM]
            OQ[k, Q_REM] = 0
            OQ[k, Q_LIVE] = 0
            nf += 1
    return nf
