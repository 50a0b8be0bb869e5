"""Checks of option values the front ends share."""

from __future__ import annotations

import decimal
import math
import numbers


def is_whole(value) -> bool:
    """An integer, or a finite number equal to one (``5.0``, ``Decimal('5')``); never a bool or
    text (``'5'``), so that an option given 1.5 or '5' is an error, not rounded or parsed."""
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return isinstance(value, (numbers.Real, decimal.Decimal)) and math.isfinite(value) and value == int(value)
