"""The backtest's tables, declared once: each column's name, Arrow type, nullability and
how its values come from a run's rows.

A declaration is ``(name, type, nullable, value)``; ``value(rows)`` turns the run's rows
(:class:`Rows`: the kernels' instruction, event, fill and mark rows, or the equity pass's
amount columns) into the column. The schemas (:func:`schemas`: the DuckDB macros, the polars
scans, an empty run's tables) and the tables of every run (:func:`table`) both come from
these declarations, so a column added here appears everywhere with its type.

Money is exact: amounts are integers x SCALE (4 decimals), shown as ``MONEY`` decimals.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa

from .._kernels.backtest_layout import (M_TB, M_TIME, RISK_NAMES, X_ORIG, X_POST, X_REF, X_REFUSED, X_SEND,
                                        R_POST_ONLY)
from .._kernels.match_layout import REASON_NAMES
from .._kernels.simulate_layout import (E_AHEAD, E_KEY, E_KIND, E_PRICE, E_QTY, E_REASON, E_REM, E_ROW, E_SIDE,
                                        F_KEY, F_PRICE, F_PRIO, F_QTY, F_SIDE, F_TAKER, I_ACT, I_ARR, I_MARKET,
                                        I_PRICE, I_QTY, I_ROW, I_SIDE, I_TB, I_TIF, K_SEQ, K_TB, K_TIME,
                                        KIND_NAMES, END_SEQ)

MONEY = pa.decimal128(38, 4)
TIF_NAMES = ("GTC", "DAY", "IOC", "FOK")
ACTION_NAMES = ("new", "modify", "cancel")
INT, STR, BOOL = pa.int64(), pa.string(), pa.bool_()


def money(values, valid=None) -> pa.Array:
    """Amounts x SCALE as MONEY (``valid``: False where null). An int64 column becomes the
    decimals' 16-byte little-endian two's complement words directly."""
    a = np.asarray(values)
    if a.dtype != np.int64:
        ok = np.ones(len(a), bool) if valid is None else np.asarray(valid, bool)
        return pa.array([Decimal(int(v)).scaleb(-4) if k else None for v, k in zip(a.tolist(), ok.tolist())], MONEY)
    words = np.empty((len(a), 2), np.int64)
    words[:, 0] = a
    words[:, 1] = a >> 63
    bitmap, nulls = None, 0
    if valid is not None and not np.all(valid):
        bitmap = pa.py_buffer(np.packbits(np.asarray(valid, bool), bitorder="little"))
        nulls = int(len(a) - np.count_nonzero(valid))
    return pa.Array.from_buffers(MONEY, len(a), [bitmap, pa.py_buffer(words)], null_count=nulls)


def _ints(a, null=None) -> pa.Array:
    """An int64 column (Python integers too), null where ``null``."""
    a = np.asarray(a)
    if a.dtype == object:
        return pa.array([None if n else int(v) for v, n in zip(a.tolist(), (
            np.zeros(len(a), bool) if null is None else null).tolist())], INT)
    return pa.array(a.astype(np.int64, copy=False), INT, mask=null)


def _pick(cond, yes: str, no: str) -> pa.Array:
    """``yes`` where cond, else ``no`` (a string column taken from the two words, not
    built from a numpy array of strings)."""
    return pa.array([no, yes], STR).take(pa.array(np.asarray(cond).astype(np.int8)))


def _sides(a) -> pa.Array:
    return _pick(np.asarray(a) != 0, "S", "B")


def _named(codes, name) -> pa.Array:
    """name(code) of every code (a string or None), each distinct code named once."""
    codes = np.asarray(codes, np.int64).reshape(-1)
    if len(codes) and 0 <= codes.min() and codes.max() < 1 << 16:   # small codes: counted, not sorted
        present = np.bincount(codes) > 0
        distinct, at = np.flatnonzero(present), (np.cumsum(present) - 1)[codes]
    else:
        distinct, at = np.unique(codes, return_inverse=True)
    return pa.array([name(int(c)) for c in distinct], STR).take(pa.array(at.reshape(-1), INT))


def reason_name(code: int) -> str | None:
    if code == 0:
        return None
    if code == R_POST_ONLY:
        return "post-only order would take liquidity"
    return REASON_NAMES[code] if code < len(REASON_NAMES) else str(code)


def _risk_name(code: int) -> str | None:
    return RISK_NAMES[code] if 0 < code < len(RISK_NAMES) else None


def _seqs(a) -> pa.Array:
    """The rows' feed record, null after the feed's last (END_SEQ)."""
    return pa.array(np.where(a == END_SEQ, 0, a), INT, mask=(a == END_SEQ))


class Rows:
    """What the column values are made from: ``ins`` / ``ev`` / ``fl`` / ``mk`` (the kernels'
    rows), ``names`` (the instruments, by tracked book), ``refs(keys)`` (the strategy's
    reference of each order key), ``fee`` (each fill's fee x SCALE) and ``c`` (the equity
    pass's amount columns)."""

    def __init__(self, names, ins=None, ev=None, fl=None, mk=None, refs=None, fee=None, c=None):
        self.names, self.ins, self.ev, self.fl, self.mk, self.refs, self.fee, self.c = (
            names, ins, ev, fl, mk, refs, fee, c)
        self._names_a = pa.array(names, STR)

    def instrument(self, tbs) -> pa.Array:
        return self._names_a.take(pa.array(np.asarray(tbs, np.int64), INT))

    def event_ref_side(self) -> tuple[pa.Array, pa.Array]:
        """Each event's ref and side: its order's; for an instruction the venue rejected as
        naming no order of the strategy's (side -1 in its row), the instruction's."""
        if getattr(self, "_event_ref_side", None) is not None:
            return self._event_ref_side
        side = self.ev[:, E_SIDE]
        bare = np.flatnonzero(side < 0)
        row = self.ev[bare, E_ROW]
        bare, row = bare[row >= 1], row[row >= 1]
        if len(bare) == 0 or len(self.ins) == 0:
            self._event_ref_side = self.refs(self.ev[:, E_KEY]), _sides(side)
            return self._event_ref_side
        ref = np.array(self.refs(self.ev[:, E_KEY]).to_numpy(zero_copy_only=False), np.int64)
        at = np.clip(np.searchsorted(self.ins[:, I_ROW], row), 0, len(self.ins) - 1)
        found = self.ins[at, I_ROW] == row
        idx, at = bare[found], at[found]
        side = side.copy()
        ref[idx] = np.where(ref[idx] < 0, self.ins[at, X_REF], ref[idx])
        side[idx] = self.ins[at, I_SIDE]
        self._event_ref_side = pa.array(ref, INT), _sides(side)
        return self._event_ref_side


ORDER_COLUMNS = (
    ("row", INT, False, lambda r: _ints(r.ins[:, I_ROW])),              # 1-based, in the order sent
    ("instrument", STR, False, lambda r: r.instrument(r.ins[:, I_TB])),
    ("ref", INT, False, lambda r: _ints(r.ins[:, X_REF])),
    ("orig", INT, True, lambda r: _ints(r.ins[:, X_ORIG], r.ins[:, X_ORIG] == 0)),   # a replace's original
    ("action", STR, False, lambda r: _named(r.ins[:, I_ACT], ACTION_NAMES.__getitem__)),
    ("side", STR, False, lambda r: _sides(r.ins[:, I_SIDE])),
    ("type", STR, False, lambda r: _pick(r.ins[:, I_MARKET] != 0, "market", "limit")),
    ("tif", STR, False, lambda r: _named(r.ins[:, I_TIF], TIF_NAMES.__getitem__)),
    ("post_only", BOOL, False, lambda r: pa.array(r.ins[:, X_POST] != 0)),
    ("price", INT, True, lambda r: _ints(r.ins[:, I_PRICE], r.ins[:, I_PRICE] < 0)),
    ("quantity", INT, False, lambda r: _ints(r.ins[:, I_QTY])),
    ("sent", INT, False, lambda r: _ints(r.ins[:, X_SEND])),            # the strategy's local time
    ("arrival", INT, True, lambda r: _ints(r.ins[:, I_ARR], r.ins[:, X_REFUSED] != 0)),   # at the venue
    ("refused", STR, True, lambda r: _named(r.ins[:, X_REFUSED], _risk_name)),    # by the risk gate
)
EVENT_COLUMNS = (
    ("seq", INT, True, lambda r: _seqs(r.ev[:, K_SEQ])),                 # null: after the feed's last record
    ("time", INT, False, lambda r: _ints(r.ev[:, K_TIME])),
    ("instrument", STR, False, lambda r: r.instrument(r.ev[:, K_TB])),
    ("ref", INT, False, lambda r: r.event_ref_side()[0]),
    ("event", STR, False, lambda r: _named(r.ev[:, E_KIND], KIND_NAMES.__getitem__)),
    ("side", STR, False, lambda r: r.event_ref_side()[1]),
    ("price", INT, True, lambda r: _ints(r.ev[:, E_PRICE], r.ev[:, E_PRICE] < 0)),
    ("quantity", INT, False, lambda r: _ints(r.ev[:, E_QTY])),
    ("remaining", INT, False, lambda r: _ints(r.ev[:, E_REM])),
    ("shares_ahead", INT, True, lambda r: _ints(r.ev[:, E_AHEAD], r.ev[:, E_AHEAD] < 0)),
    ("reason", STR, True, lambda r: _named(r.ev[:, E_REASON], reason_name)),
    ("row", INT, True, lambda r: _ints(r.ev[:, E_ROW], r.ev[:, E_ROW] < 0)),   # the order's row in orders
)
FILL_COLUMNS = (
    ("seq", INT, True, lambda r: _seqs(r.fl[:, K_SEQ])),
    ("time", INT, False, lambda r: _ints(r.fl[:, K_TIME])),
    ("instrument", STR, False, lambda r: r.instrument(r.fl[:, K_TB])),
    ("ref", INT, False, lambda r: r.refs(r.fl[:, F_KEY])),
    ("side", STR, False, lambda r: _sides(r.fl[:, F_SIDE])),
    ("price", INT, False, lambda r: _ints(r.fl[:, F_PRICE])),
    ("quantity", INT, False, lambda r: _ints(r.fl[:, F_QTY])),
    ("liquidity", STR, False, lambda r: _pick(r.fl[:, F_TAKER] != 0, "taker", "maker")),
    ("priority_differs", BOOL, False, lambda r: pa.array(r.fl[:, F_PRIO] != 0)),
    ("fee", MONEY, False, lambda r: money(r.fee)),                      # negative: a rebate
)
# at every mark (every fill, every interval): the instrument's position and money then
EQUITY_COLUMNS = (
    ("time", INT, False, lambda r: _ints(r.mk[:, M_TIME])),
    ("instrument", STR, False, lambda r: r.instrument(r.mk[:, M_TB])),
    ("position", INT, False, lambda r: _ints(r.c["pos"])),
    ("cash", MONEY, False, lambda r: money(r.c["cash"])),
    ("fees", MONEY, False, lambda r: money(r.c["fees"])),
    ("mark", MONEY, True, lambda r: money(r.c["mark"], r.c["has_mark"])),   # null: no price seen yet
    ("equity", MONEY, False, lambda r: money(r.c["value"])),
)
# per instrument, at the end
POSITION_COLUMNS = (
    ("instrument", STR, False, lambda r: pa.array(r.names, STR)),
    ("position", INT, False, lambda r: _ints(r.c["pos_end"])),
    ("bought", INT, False, lambda r: _ints(r.c["bought"])),
    ("sold", INT, False, lambda r: _ints(r.c["sold"])),
    ("cash", MONEY, False, lambda r: money(r.c["cash_end"])),
    ("fees", MONEY, False, lambda r: money(r.c["fees_end"])),
    ("mark", MONEY, True, lambda r: money(r.c["mid_end"], r.c["has_mid"])),
    ("equity", MONEY, False, lambda r: money(r.c["eq_end"])),
)
COLUMNS = {"orders": ORDER_COLUMNS, "events": EVENT_COLUMNS, "fills": FILL_COLUMNS, "positions": POSITION_COLUMNS,
           "equity": EQUITY_COLUMNS}


#: each table's (price, quantity, feed time, duration, money) columns: the units metadata a run's
#: tables carry (obook.tables.units.run_metadata; money: amounts in the feed's price units x its
#: quantity units, / (price_scale x quantity_scale) for the currency)
UNIT_COLUMNS = {
    "orders": (("price",), ("quantity",), ("sent", "arrival"), (), ()),
    "events": (("price",), ("quantity", "remaining", "shares_ahead"), ("time",), (), ()),
    "fills": (("price",), ("quantity",), ("time",), (), ("fee",)),
    "positions": (("mark",), ("position", "bought", "sold"), (), (), ("cash", "fees", "equity")),
    "equity": (("mark",), ("position",), ("time",), (), ("cash", "fees", "equity")),
}


def with_units(t: pa.Table, name: str, fmt) -> pa.Table:
    """The backtest table ``name`` with the metadata of ``schema(name, fmt)``; as it is when
    ``fmt`` is None (an L2 input's units are not known)."""
    return t if fmt is None else t.replace_schema_metadata(schema(name, fmt).metadata)


def _units(name: str, fmt) -> dict:
    """The units metadata of the backtest table ``name`` of a feed of format ``fmt``: a
    replay table's (obook.tables.units), plus ``obook.money_columns``."""
    from ..tables.units import run_metadata

    return run_metadata(f"backtest_{name}", fmt, [n for n, *_ in COLUMNS[name]], UNIT_COLUMNS[name])


def schema(name: str, fmt=None) -> pa.Schema:
    """The schema of the backtest table ``name``, from its declaration; ``fmt``: the feed's
    format, whose units its metadata carries (None: the table's name alone)."""
    return pa.schema([pa.field(n, t, nullable=k) for n, t, k, _ in COLUMNS[name]],
                     metadata=_units(name, fmt) if fmt is not None else {b"obook.table": f"backtest_{name}".encode()})


def schemas() -> dict:
    """Each table's schema."""
    return {name: schema(name) for name in COLUMNS}


def table(name: str, rows: Rows) -> pa.Table:
    """The backtest table ``name`` of a run's rows."""
    return pa.Table.from_arrays([value(rows) for _, _, _, value in COLUMNS[name]], schema=schema(name))
