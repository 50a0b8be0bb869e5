"""A backtest's rows -> Arrow tables (orders, events, fills, positions, equity) and the
summary statistics.

Money is exact: prices are the feed's integer units, fees and cash decimals in those units
(``MONEY``: 4 decimals, enough for a half-unit mid times shares and fees in basis points).
Equity of an instrument = cash - fees + position x mark, the mark being the exchange book's
mid (one side's best when the other is empty, the last mark when both are).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal

import numpy as np
import pyarrow as pa

from .._kernels.backtest_layout import RISK_NAMES, X_ORIG, X_POST, X_REF, X_REFUSED, X_SEND, R_POST_ONLY
from .._kernels.match_layout import REASON_NAMES
from .._kernels.simulate_layout import (E_AHEAD, E_KEY, E_KIND, E_PRICE, E_QTY, E_REASON, E_REM, E_ROW, E_SIDE,
                                        F_KEY, F_PRICE, F_PRIO, F_QTY, F_SIDE, F_TAKER, I_ACT, I_ARR, I_KEY,
                                        I_MARKET, I_PRICE, I_QTY, I_ROW, I_SIDE, I_TB, I_TIF, K_SEQ, K_TB,
                                        K_TIME, KIND_NAMES, OP_CANCEL)
from .equity import MONEY, SAFE, SCALE, equity, money
TIF_NAMES = ("GTC", "DAY", "IOC", "FOK")
ACTION_NAMES = ("new", "modify", "cancel")
END = 1 << 62


def _pick(cond, yes: str, no: str) -> pa.Array:
    """``yes`` where cond, else ``no`` (a string column taken from the two words, not
    built from a numpy array of strings)."""
    return pa.array([no, yes], pa.string()).take(pa.array(np.asarray(cond).astype(np.int8)))


def _sides(a):
    return _pick(np.asarray(a) != 0, "S", "B")


def _named(codes, name) -> pa.Array:
    """name(code) of every code (a string or None), each distinct code named once."""
    codes = np.asarray(codes, np.int64).reshape(-1)
    if len(codes) and 0 <= codes.min() and codes.max() < 1 << 16:   # small codes: counted, not sorted
        present = np.bincount(codes) > 0
        distinct, at = np.flatnonzero(present), (np.cumsum(present) - 1)[codes]
    else:
        distinct, at = np.unique(codes, return_inverse=True)
    return pa.array([name(int(c)) for c in distinct], pa.string()).take(pa.array(at.reshape(-1), pa.int64()))


def reason_name(code: int) -> str | None:
    if code == 0:
        return None
    if code == R_POST_ONLY:
        return "post-only order would take liquidity"
    return REASON_NAMES[code] if code < len(REASON_NAMES) else str(code)


class Fees:
    """Fees of a fill: ``maker`` / ``taker`` per share (``per="share"``, in the feed's price
    units, decimals allowed) or in basis points of the notional (``per="bps"``); negative
    is a rebate."""

    def __init__(self, maker=0, taker=0, per: str = "share"):
        if per not in ("share", "bps"):
            raise ValueError(f"fees per 'share' or 'bps', not {per!r}")
        self.maker, self.taker, self.per = Decimal(str(maker)), Decimal(str(taker)), per

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


def build(rows: dict, fees: Fees, unit_ns: int, interval_ns: int, capital=None) -> tuple[Tables, dict]:
    names = rows["names"]
    ins, fl, ev, mk = rows["orders"], rows["fills"], rows["events"], rows["marks"]
    # the columns the summary reads, each once and contiguous (a column of the rows is
    # strided: every pass over one reads the whole table)
    act, key, ref, refused, qty = np.take(ins, [I_ACT, I_KEY, X_REF, X_REFUSED, I_QTY], axis=1).T
    new = act == 0
    keys = key[new]
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):   # keys are handed out in order
        keys, first = np.unique(keys, return_index=True)
    else:
        first = np.arange(len(keys))
    lut = np.full(int(keys.max()) + 1 if len(keys) else 0, -1, np.int64)
    lut[keys] = ref[new][first]                    # a key's ref: its first new order's

    def refs(k):
        k = np.asarray(k, np.int64)
        ok = (k >= 0) & (k < len(lut))
        return pa.array(np.where(ok, lut[np.where(ok, k, 0)] if len(lut) else -1, -1), pa.int64())

    names_a = pa.array(names, pa.string())

    def instr(tbs):
        return names_a.take(pa.array(np.asarray(tbs, np.int64), pa.int64()))

    def seqs(a):
        return pa.array(np.where(a == END, 0, a), pa.int64(), mask=(a == END))

    def orders():
        refused, arr = ins[:, X_REFUSED], ins[:, I_ARR]
        return pa.table({
            "row": pa.array(ins[:, I_ROW]), "instrument": instr(ins[:, I_TB]), "ref": pa.array(ins[:, X_REF]),
            "orig": pa.array(ins[:, X_ORIG], mask=ins[:, X_ORIG] == 0),
            "action": _named(ins[:, I_ACT], ACTION_NAMES.__getitem__),
            "side": _sides(ins[:, I_SIDE]),
            "type": _pick(ins[:, I_MARKET] != 0, "market", "limit"),
            "tif": _named(ins[:, I_TIF], TIF_NAMES.__getitem__),
            "post_only": pa.array(ins[:, X_POST] != 0),
            "price": pa.array(ins[:, I_PRICE], mask=ins[:, I_PRICE] < 0),
            "quantity": pa.array(ins[:, I_QTY]),
            "sent": pa.array(ins[:, X_SEND]), "arrival": pa.array(arr, mask=refused != 0),
            "refused": _named(refused, lambda c: RISK_NAMES[c] if 0 < c < len(RISK_NAMES) else None),
        })

    def events():
        return pa.table({
            "seq": seqs(ev[:, K_SEQ]), "time": pa.array(ev[:, K_TIME]), "instrument": instr(ev[:, K_TB]),
            "ref": refs(ev[:, E_KEY]), "event": _named(ev[:, E_KIND], KIND_NAMES.__getitem__),
            "side": _sides(ev[:, E_SIDE]), "price": pa.array(ev[:, E_PRICE], mask=ev[:, E_PRICE] < 0),
            "quantity": pa.array(ev[:, E_QTY]), "remaining": pa.array(ev[:, E_REM]),
            "shares_ahead": pa.array(ev[:, E_AHEAD], mask=ev[:, E_AHEAD] < 0),
            "reason": _named(ev[:, E_REASON], reason_name),
            "row": pa.array(ev[:, E_ROW], mask=ev[:, E_ROW] < 0),
        })

    fee = fees.scaled(fl[:, F_PRICE], fl[:, F_QTY], fl[:, F_TAKER])

    def fills():
        return pa.table({
            "seq": seqs(fl[:, K_SEQ]), "time": pa.array(fl[:, K_TIME]), "instrument": instr(fl[:, K_TB]),
            "ref": refs(fl[:, F_KEY]), "side": _sides(fl[:, F_SIDE]), "price": pa.array(fl[:, F_PRICE]),
            "quantity": pa.array(fl[:, F_QTY]),
            "liquidity": _pick(fl[:, F_TAKER] != 0, "taker", "maker"),
            "priority_differs": pa.array(fl[:, F_PRIO] != 0), "fee": money(fee),
        })

    equity_t, positions, series = equity(names, fl, fee, mk)
    summary = _summary(rows, (act, refused, qty), fl, series, interval_ns // unit_ns if interval_ns else 0, capital,
                       positions)
    tables = Tables({"orders": orders, "events": events, "fills": fills, "positions": lambda: positions,
                     "equity": lambda: equity_t})
    return tables, summary


def _summary(rows, order_columns, fl, series, interval, capital, positions) -> dict:
    """The summary statistics; ``order_columns``: the orders' action, refusal and quantity."""
    act, refused, qty = order_columns
    t, v = series
    pnl = Decimal(int(v[-1])).scaleb(-4) if len(v) else Decimal(0)
    notional = int(np.sum(fl[:, F_PRICE] * fl[:, F_QTY])) if len(fl) else 0
    if capital is None:
        capital = notional / 2 if notional else None
    vals = np.array(v, dtype=np.float64) / SCALE
    dd = float(np.max(np.maximum.accumulate(vals) - vals)) if len(vals) else 0.0
    sharpe = None
    if interval and len(t) > 1:
        grid = np.arange((t[0] // interval + 1) * interval, t[-1] + interval, interval)
        idx = np.searchsorted(t, grid, "right") - 1
        sampled = np.concatenate([[0.0], vals[idx]])
        d = np.diff(sampled)
        if len(d) > 1 and d.std(ddof=1) > 0:
            sharpe = float(d.mean() / d.std(ddof=1) * math.sqrt(len(d)))
    # shares offered: each new order's and each replacement's (a replacement offers its
    # quantity again, so what fills after it counts against it; -1 keeps the remaining)
    sent_qty = int(qty[(act != OP_CANCEL) & (refused == 0) & (qty > 0)].sum())
    filled = int(fl[:, F_QTY].sum()) if len(fl) else 0
    return {
        "pnl": pnl, "return": float(pnl) / capital if capital else None, "capital": capital,
        "sharpe": sharpe, "max_drawdown": dd, "turnover": notional,
        "fill_ratio": filled / sent_qty if sent_qty else None,
        "orders": int(len(act)), "refused": int(np.count_nonzero(refused)),
        "fills": int(len(fl)), "filled_shares": filled, "calls": rows.get("calls", 0),
        "position": {n: int(p) for n, p in zip(positions.column("instrument").to_pylist(),
                                               positions.column("position").to_pylist())},
    }


def schemas() -> dict:
    """Each table's schema (the tables of a backtest without rows)."""
    from .._kernels.backtest_layout import X_WIDTH
    from .._kernels.simulate_layout import E_WIDTH, F_WIDTH
    from .._kernels.backtest_layout import M_WIDTH

    rows = {"names": [], "orders": np.zeros((0, X_WIDTH), np.int64), "fills": np.zeros((0, F_WIDTH), np.int64),
            "events": np.zeros((0, E_WIDTH), np.int64), "marks": np.zeros((0, M_WIDTH), np.int64)}
    return {name: t.schema for name, t in build(rows, Fees(), 1, 0)[0].items()}
