"""A backtest's rows -> Arrow tables (orders, events, fills, positions, equity) and the
summary statistics.

Money is exact: prices are the feed's integer units, fees and cash decimals in those units
(``MONEY``: 4 decimals, enough for a half-unit mid times shares and fees in basis points).
Equity of an instrument = cash - fees + position x mark, the mark being the exchange book's
mid (one side's best when the other is empty, the last mark when both are).
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pyarrow as pa

from .._kernels.backtest_layout import (M_ASK, M_BID, M_SEQ, M_TB, M_TIME, RISK_NAMES, X_ORIG, X_POST, X_REF,
                                        X_REFUSED, X_SEND, R_POST_ONLY)
from .._kernels.match_layout import REASON_NAMES
from .._kernels.simulate_layout import (E_AHEAD, E_KEY, E_KIND, E_PRICE, E_QTY, E_REASON, E_REM, E_ROW, E_SIDE,
                                        F_KEY, F_PRICE, F_PRIO, F_QTY, F_SIDE, F_TAKER, I_ACT, I_ARR, I_KEY,
                                        I_MARKET, I_PRICE, I_QTY, I_ROW, I_SIDE, I_TB, I_TIF, K_COUNT, K_SEQ,
                                        K_TB, K_TIME, KIND_NAMES, NONE)

MONEY = pa.decimal128(38, 4)
SCALE = 10_000
TIF_NAMES = ("GTC", "DAY", "IOC", "FOK")
ACTION_NAMES = ("new", "modify", "cancel")
END = 1 << 62


def _money(values) -> pa.Array:
    return pa.array([Decimal(int(v)).scaleb(-4) for v in values], MONEY)


def _sides(a):
    return pa.array(np.where(np.asarray(a) == 0, "B", "S"))


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

    def scaled(self, price: np.ndarray, qty: np.ndarray, taker: np.ndarray) -> list[int]:
        """Each fill's fee x SCALE, exact (half-even past 4 decimals)."""
        out = []
        for p, q, t in zip(price.tolist(), qty.tolist(), taker.tolist()):
            rate = self.taker if t else self.maker
            fee = rate * q if self.per == "share" else rate * p * q / 10_000
            out.append(int((fee * SCALE).to_integral_value()))
        return out


def build(rows: dict, fees: Fees, unit_ns: int, interval_ns: int, capital=None) -> tuple[dict, dict]:
    names = rows["names"]
    ins, fl, ev, mk = rows["orders"], rows["fills"], rows["events"], rows["marks"]
    ref_of = {}
    for r in ins:
        if r[I_ACT] == 0:
            ref_of.setdefault(int(r[I_KEY]), int(r[X_REF]))
    def refs(keys):
        return pa.array([ref_of.get(int(k), -1) for k in keys], pa.int64())
    def instr(tbs):
        return pa.array([names[int(t)] for t in tbs], pa.string())
    def seqs(a):
        return pa.array(np.where(a == END, 0, a), pa.int64(), mask=(a == END))

    refused = ins[:, X_REFUSED]
    arr = ins[:, I_ARR]
    orders = pa.table({
        "row": pa.array(ins[:, I_ROW]), "instrument": instr(ins[:, I_TB]), "ref": pa.array(ins[:, X_REF]),
        "orig": pa.array(ins[:, X_ORIG], mask=ins[:, X_ORIG] == 0),
        "action": pa.array([ACTION_NAMES[a] for a in ins[:, I_ACT]], pa.string()),
        "side": _sides(ins[:, I_SIDE]),
        "type": pa.array(np.where(ins[:, I_MARKET] != 0, "market", "limit")),
        "tif": pa.array([TIF_NAMES[t] for t in ins[:, I_TIF]], pa.string()),
        "post_only": pa.array(ins[:, X_POST] != 0),
        "price": pa.array(ins[:, I_PRICE], mask=ins[:, I_PRICE] < 0),
        "quantity": pa.array(ins[:, I_QTY]),
        "sent": pa.array(ins[:, X_SEND]), "arrival": pa.array(arr, mask=refused != 0),
        "refused": pa.array([RISK_NAMES[c] if 0 < c < len(RISK_NAMES) else None for c in refused], pa.string()),
    })
    events = pa.table({
        "seq": seqs(ev[:, K_SEQ]), "time": pa.array(ev[:, K_TIME]), "instrument": instr(ev[:, K_TB]),
        "ref": refs(ev[:, E_KEY]), "event": pa.array([KIND_NAMES[k] for k in ev[:, E_KIND]], pa.string()),
        "side": _sides(ev[:, E_SIDE]), "price": pa.array(ev[:, E_PRICE], mask=ev[:, E_PRICE] < 0),
        "quantity": pa.array(ev[:, E_QTY]), "remaining": pa.array(ev[:, E_REM]),
        "shares_ahead": pa.array(ev[:, E_AHEAD], mask=ev[:, E_AHEAD] < 0),
        "reason": pa.array([reason_name(int(c)) for c in ev[:, E_REASON]], pa.string()),
        "row": pa.array(ev[:, E_ROW], mask=ev[:, E_ROW] < 0),
    })
    fee = fees.scaled(fl[:, F_PRICE], fl[:, F_QTY], fl[:, F_TAKER])
    fills = pa.table({
        "seq": seqs(fl[:, K_SEQ]), "time": pa.array(fl[:, K_TIME]), "instrument": instr(fl[:, K_TB]),
        "ref": refs(fl[:, F_KEY]), "side": _sides(fl[:, F_SIDE]), "price": pa.array(fl[:, F_PRICE]),
        "quantity": pa.array(fl[:, F_QTY]),
        "liquidity": pa.array(np.where(fl[:, F_TAKER] != 0, "taker", "maker")),
        "priority_differs": pa.array(fl[:, F_PRIO] != 0), "fee": _money(fee),
    })
    equity, positions, series = _equity(names, fl, fee, mk)
    summary = _summary(rows, ins, fl, series, interval_ns // unit_ns if interval_ns else 0, capital, positions)
    return {"orders": orders, "events": events, "fills": fills, "positions": positions, "equity": equity}, summary


def _equity(names, fl, fee, mk):
    """Equity rows at every mark; positions at the end; the total equity series (x SCALE)."""
    nt = len(names)
    fill_order = np.argsort(fl[:, K_COUNT], kind="stable")
    counts = fl[fill_order, K_COUNT]
    mk = mk[np.lexsort((mk[:, M_SEQ], mk[:, M_TIME]))] if len(mk) else mk
    pos = [0] * nt
    cash = [0] * nt                  # x SCALE
    fees = [0] * nt
    bought = [0] * nt
    sold = [0] * nt
    last_mid2 = [None] * nt          # 2 x mid
    eq_now = [0] * nt
    j = 0
    out = {k: [] for k in ("time", "instrument", "position", "cash", "fees", "mark", "equity")}
    series_t, series_v = [], []
    for r in mk:
        upto = int(np.searchsorted(counts, r[M_SEQ], "left"))
        while j < upto:
            f = fl[fill_order[j]]
            tb, q, p = int(f[K_TB]), int(f[F_QTY]), int(f[F_PRICE])
            if f[F_SIDE] == 0:
                pos[tb] += q
                cash[tb] -= q * p * SCALE
                bought[tb] += q
            else:
                pos[tb] -= q
                cash[tb] += q * p * SCALE
                sold[tb] += q
            fees[tb] += fee[fill_order[j]]
            j += 1
        tb = int(r[M_TB])
        bid, ask = int(r[M_BID]), int(r[M_ASK])
        if bid != NONE and ask != NONE:
            last_mid2[tb] = bid + ask
        elif bid != NONE or ask != NONE:
            last_mid2[tb] = 2 * (bid if bid != NONE else ask)
        m2 = last_mid2[tb]
        value = cash[tb] - fees[tb] + (pos[tb] * m2 * SCALE // 2 if m2 is not None else 0)
        eq_now[tb] = value
        out["time"].append(int(r[M_TIME]))
        out["instrument"].append(names[tb])
        out["position"].append(pos[tb])
        out["cash"].append(cash[tb])
        out["fees"].append(fees[tb])
        out["mark"].append(None if m2 is None else m2 * SCALE // 2)
        out["equity"].append(value)
        series_t.append(int(r[M_TIME]))
        series_v.append(sum(eq_now))
    equity = pa.table({
        "time": pa.array(out["time"], pa.int64()), "instrument": pa.array(out["instrument"], pa.string()),
        "position": pa.array(out["position"], pa.int64()), "cash": _money(out["cash"]),
        "fees": _money(out["fees"]),
        "mark": pa.array([None if v is None else Decimal(v).scaleb(-4) for v in out["mark"]], MONEY),
        "equity": _money(out["equity"]),
    })
    positions = pa.table({
        "instrument": pa.array(names, pa.string()), "position": pa.array(pos, pa.int64()),
        "bought": pa.array(bought, pa.int64()), "sold": pa.array(sold, pa.int64()), "cash": _money(cash),
        "fees": _money(fees),
        "mark": pa.array([None if m is None else Decimal(m * SCALE // 2).scaleb(-4) for m in last_mid2], MONEY),
        "equity": _money(eq_now),
    })
    return equity, positions, (np.array(series_t, np.int64), series_v)


def _summary(rows, ins, fl, series, interval, capital, positions) -> dict:
    t, v = series
    pnl = Decimal(v[-1]).scaleb(-4) if v else Decimal(0)
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
    new = ins[(ins[:, I_ACT] == 0) & (ins[:, X_REFUSED] == 0)]
    sent_qty = int(new[:, I_QTY].sum()) if len(new) else 0
    filled = int(fl[:, F_QTY].sum()) if len(fl) else 0
    return {
        "pnl": pnl, "return": float(pnl) / capital if capital else None, "capital": capital,
        "sharpe": sharpe, "max_drawdown": dd, "turnover": notional,
        "fill_ratio": filled / sent_qty if sent_qty else None,
        "orders": int(len(ins)), "refused": int((ins[:, X_REFUSED] != 0).sum()) if len(ins) else 0,
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
