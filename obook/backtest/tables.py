"""A backtest's rows -> Arrow tables (orders, events, fills, positions, equity: their
columns declared in obook.backtest.columns) and the summary statistics.

Money is exact: prices and quantities are the feed's integer units, fees and cash decimals of
price x quantity in those units (``MONEY``: 4 decimals, enough for a half-unit mid times a
quantity and fees in basis points); the tables' metadata and the summary give the scales.
Equity of an instrument = cash - fees + position x mark, the mark being the exchange book's
mid (one side's best when the other is empty, the last mark when both are).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal

import numpy as np
import pyarrow as pa

from .._kernels.backtest_layout import X_REF, X_REFUSED
from .._kernels.simulate_layout import F_PRICE, F_QTY, F_TAKER, I_ACT, I_KEY, I_QTY, OP_CANCEL
from ..errors import ObookError
from .columns import Rows, table, with_units
from .equity import SAFE, SCALE, equity


#: the largest fee rate (either sign): per share, in the feed's price units; in basis points,
#: the whole notional
MAX_FEE = {"share": Decimal(10**12), "bps": Decimal(10_000)}


def fee_rates(maker, taker, per, names=("maker fee", "taker fee", "fees per")) -> tuple[Decimal, Decimal, str]:
    """(maker, taker, per) as :class:`Fees` keeps them; an error names the one it is about by
    ``names`` (the command line's are ``--maker-fee`` ...)."""
    from ..checks import check_choice

    per = check_choice(names[2], per, tuple(MAX_FEE))        # 'BPS' too
    return _rate(maker, names[0], per), _rate(taker, names[1], per), per


def _rate(value, name: str, per: str) -> Decimal:
    """A fee rate as an exact decimal; what is no finite number, or beyond MAX_FEE, is an
    ObookError."""
    from decimal import InvalidOperation

    try:
        rate = Decimal(str(value).strip())
    except InvalidOperation:
        raise ObookError(f"{name} {value!r} is no number") from None
    if not rate.is_finite():
        raise ObookError(f"{name} {value!r} is not a finite number")
    top = MAX_FEE[per]
    if abs(rate) > top:
        raise ObookError(f"{name} {value!r} is out of range: at most {top} "
                         + ("price units a share" if per == "share" else "bps (the whole notional)")
                         + " either way (negative: a rebate)")
    return rate


class Fees:
    """Fees of a fill: ``maker`` / ``taker`` per share (``per="share"``, in the feed's price
    units, decimals allowed) or in basis points of the notional (``per="bps"``; either word in
    any case); negative is a rebate. A rate is at most MAX_FEE either way (10^12 price units a share, or
    10,000 bps)."""

    def __init__(self, maker=0, taker=0, per: str = "share"):
        self.maker, self.taker, self.per = fee_rates(maker, taker, per)

    def scaled(self, price: np.ndarray, qty: np.ndarray, taker: np.ndarray) -> np.ndarray:
        """Each fill's fee x SCALE, exact (half-even past 4 decimals): int64 when every rate x
        SCALE (per share) or rate (bps: x SCALE / 10,000 = 1) is whole and the fees fit,
        else Python integers (an object array)."""
        price, qty, taker = (np.asarray(a, np.int64) for a in (price, qty, taker))
        unit = SCALE if self.per == "share" else 1
        rates = (self.maker * unit, self.taker * unit)
        if all(r == r.to_integral_value() for r in rates) and len(qty):
            r = np.where(taker != 0, int(rates[1]), int(rates[0]))
            base = qty if self.per == "share" else price * qty
            top = max(abs(int(rates[0])), abs(int(rates[1]))) * int(np.abs(qty).max()) * (
                1 if self.per == "share" else int(np.abs(price).max()))
            if top * len(qty) < SAFE:
                return r * base
        out = []
        for p, q, t in zip(price.tolist(), qty.tolist(), taker.tolist()):
            rate = self.taker if t else self.maker
            fee = rate * q if self.per == "share" else rate * p * q / 10_000
            out.append(int((fee * SCALE).to_integral_value()))
        if not out or max(map(abs, out)) * len(out) < SAFE:
            return np.array(out, np.int64)
        return np.array(out, dtype=object)


class Tables(Mapping):
    """A backtest's tables by name, each built from its rows when first read (the summary
    needs none of them: a backtest that only asks for it builds none)."""

    def __init__(self, makers: dict):
        self._makers = makers
        self._built: dict = {}

    def __getitem__(self, name: str) -> pa.Table:
        if name not in self._built:
            self._built[name] = self._makers[name]()
        return self._built[name]

    def __iter__(self):
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


def key_refs(act: np.ndarray, key: np.ndarray, ref: np.ndarray):
    """``refs(keys)``: the strategy's reference of each order key (-1: none), from the
    instructions' action, key and ref columns: a key's ref is its first new order's. A key is
    handed out as its first new order is sent, so the instructions sent so far name every key
    the rows made so far hold."""
    new = act == 0
    keys = key[new]
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):   # keys are handed out in order
        keys, first = np.unique(keys, return_index=True)
    else:
        first = np.arange(len(keys))
    lut = np.full(int(keys.max()) + 1 if len(keys) else 0, -1, np.int64)
    lut[keys] = ref[new][first]

    def refs(k):
        k = np.asarray(k, np.int64)
        ok = (k >= 0) & (k < len(lut))
        return pa.array(np.where(ok, lut[np.where(ok, k, 0)] if len(lut) else -1, -1), pa.int64())
    return refs


def fee_of(fees: Fees, fl: np.ndarray) -> np.ndarray:
    """Each fill row's fee x SCALE."""
    return fees.scaled(fl[:, F_PRICE], fl[:, F_QTY], fl[:, F_TAKER])


def build(rows: dict, fees: Fees, unit_ns: int, interval_ns: int, capital=None, fmt=None) -> tuple[Tables, dict]:
    """The tables and summary of a run's rows; ``fmt``: the feed's format, whose units the
    tables' metadata and the summary state (None: not known)."""
    names = rows["names"]
    ins, fl, ev, mk = rows["orders"], rows["fills"], rows["events"], rows["marks"]
    # the columns the summary reads, each once and contiguous (a column of the rows is
    # strided: every pass over one reads the whole table)
    act, key, ref, refused, qty = np.take(ins, [I_ACT, I_KEY, X_REF, X_REFUSED, I_QTY], axis=1).T
    r = Rows(names, ins=ins, ev=ev, fl=fl, refs=key_refs(act, key, ref), fee=fee_of(fees, fl))
    equity_t, positions, series = equity(names, fl, r.fee, mk)
    summary = _summary(rows, (act, refused, qty), fl, series, interval_ns // unit_ns if interval_ns else 0, capital,
                       positions)
    summary["price_scale"] = 10 ** fmt.price_scale if fmt is not None else None
    summary["quantity_scale"] = fmt.quantity_scale if fmt is not None else None
    made = {"orders": lambda: table("orders", r), "events": lambda: table("events", r),
            "fills": lambda: table("fills", r), "positions": lambda: positions, "equity": lambda: equity_t}
    tables = Tables({name: (lambda name=name, make=make: with_units(make(), name, fmt)) for name, make in made.items()})
    return tables, summary


GRID_ROWS = 1 << 22


def _sharpe(t: np.ndarray, vals: np.ndarray, interval: int):
    """The Sharpe ratio of the equity's changes over each ``interval`` (feed time units) from
    the first one after ``t[0]`` to the one at or past ``t[-1]``, times the square root of
    their number; None when they do not vary. A grid of more than ``GRID_ROWS`` steps (a
    short interval over a long day) is not made: only its steps with a change are, the
    others' changes being 0."""
    start = (int(t[0]) // interval + 1) * interval
    n = (int(t[-1]) + interval - start + interval - 1) // interval      # the grid's steps
    if n <= GRID_ROWS:
        grid = np.arange(start, int(t[-1]) + interval, interval)
        d = np.diff(np.concatenate([[0.0], vals[np.searchsorted(t, grid, "right") - 1]]))
        return float(d.mean() / d.std(ddof=1) * math.sqrt(len(d))) if len(d) > 1 and d.std(ddof=1) > 0 else None
    if n < 2:
        return None
    step = np.maximum(-(-(t - start) // interval), 0)           # the first step at or after each time
    last = np.flatnonzero(np.append(step[1:] != step[:-1], True))  # the last value before each such step
    d = np.diff(np.concatenate([[0.0], vals[last]]))
    mean = d.sum() / n
    var = (np.square(d - mean).sum() + (n - len(d)) * mean * mean) / (n - 1)
    return float(mean / math.sqrt(var) * math.sqrt(n)) if var > 0 else None


def _summary(rows, order_columns, fl, series, interval, capital, positions) -> dict:
    """The summary statistics; ``order_columns``: the orders' action, refusal and quantity."""
    act, refused, qty = order_columns
    t, v = series
    pnl = Decimal(int(v[-1]) if len(v) else 0).scaleb(-4)       # 4 decimals, 0 too
    notional = int(np.sum(fl[:, F_PRICE] * fl[:, F_QTY])) if len(fl) else 0
    if capital is None:
        capital = notional / 2 if notional else None
    vals = np.array(v, dtype=np.float64) / SCALE
    dd = float(np.max(np.maximum.accumulate(vals) - vals)) if len(vals) else 0.0
    sharpe = _sharpe(np.asarray(t, np.int64), vals, interval) if interval and len(t) > 1 else None
    # shares offered: each new order's and each replacement's (a replacement offers its
    # quantity again, so what fills after it counts against it; -1 keeps the remaining)
    sent_qty = int(qty[(act != OP_CANCEL) & (refused == 0) & (qty > 0)].sum())
    filled = int(fl[:, F_QTY].sum()) if len(fl) else 0
    return {
        "pnl": pnl, "return": float(pnl) / capital if capital else None, "capital": capital,
        "sharpe": sharpe, "max_drawdown": dd, "turnover": notional,
        "fill_ratio": filled / sent_qty if sent_qty else None,
        "orders": int(len(act)), "refused": int(np.count_nonzero(refused)),
        "unknown_refs": rows.get("unknown_refs", 0),
        "fills": int(len(fl)), "filled_quantity": filled, "calls": rows.get("calls", 0),
        "position": {n: int(p) for n, p in zip(positions.column("instrument").to_pylist(),
                                               positions.column("position").to_pylist())},
    }
