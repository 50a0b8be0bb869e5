"""Arrow schemas of the matching engine's tables, and kernel rows -> Arrow tables."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._kernels.match_layout import (D_HEAD, E_KEY, E_KIND, E_PRICE, E_QPOS, E_QTY, E_REMAINING, E_SEQ, E_SIDE,
                                     EVENT_COLUMNS, F_MAKER, F_PRICE, F_QTY, F_SIDE, F_TAKER, FILL_COLUMNS,
                                     K_REJECTED, KIND_NAMES, LEVEL_COLUMNS, LEVEL_ROW, MATCH_HEAD_COLUMNS, OP_NEW,
                                     REASON_NAMES)
from ..schema import fields


def _levels_columns(levels: int | None) -> tuple:
    """The bbo's (levels None: bid_px ... ask_orders) or depth's level columns, as declared."""
    out = ()
    for side in ("bid", "ask"):
        for i in ([None] if levels is None else range(1, levels + 1)):
            out += tuple((f"{side}_{name}" + ("" if i is None else f"_{i}"), typ, nullable, src)
                         for name, typ, nullable, src in LEVEL_COLUMNS)
    return out


#: bbo: the head and the best level a side (the kernels' quote rows)
BBO_COLUMNS = MATCH_HEAD_COLUMNS + _levels_columns(None)

fills_schema = pa.schema(fields(FILL_COLUMNS), metadata={b"obook.table": b"fills"})
events_schema = pa.schema(fields(EVENT_COLUMNS), metadata={b"obook.table": b"events"})
bbo_schema = pa.schema(fields(BBO_COLUMNS), metadata={b"obook.table": b"match_bbo"})


def depth_schema(levels: int = 10) -> pa.Schema:
    return pa.schema(fields(MATCH_HEAD_COLUMNS + _levels_columns(levels)),
                     metadata={b"obook.table": b"match_depth", b"obook.levels": str(levels).encode()})


def schema_of(table: str, levels: int = 10) -> pa.Schema:
    return {"fills": fills_schema, "events": events_schema, "bbo": bbo_schema}.get(table) or depth_schema(levels)


# built from numpy arrays: pyarrow's conversion of Python lists imports pandas
_SIDES = pa.array(np.array(["buy", "sell"], object), pa.string())
_KINDS = pa.array(np.array(list(KIND_NAMES), object), pa.string())
_REASONS = pa.array(np.array([None] + list(REASON_NAMES[1:]), object), pa.string())


class Converter:
    """Turns one run's int64 rows into Arrow tables (prices, ids and names looked up)."""

    def __init__(self, prep, levels: int):
        self.names = pa.array(np.array(prep.instruments, object), pa.string())
        self.lv_price = prep.lv_price
        self.key_ids = prep.key_ids
        self.prep = prep
        self.levels = levels

    def _head(self, rows):
        """seq, time, instrument: the rows' first columns (every table's head)."""
        return [pa.array(rows[:, 0]), pa.array(rows[:, 1]), self.names.take(pa.array(rows[:, 2]))]

    def _price(self, rows_col, given=None, given_price=None):
        """The level rows' prices (null where -1); ``given``: rows whose null takes
        ``given_price`` instead."""
        valid = rows_col >= 0
        price = (self.lv_price[np.where(valid, rows_col, 0)] if len(self.lv_price) else
                 np.zeros(len(rows_col), np.int64))
        if given is not None:
            fill = given & ~valid
            price = np.where(fill, given_price, price)
            valid = valid | fill
        return pa.array(price, mask=~valid)

    def fills(self, r) -> pa.Table:
        cols = self._head(r) + [pa.array(self.lv_price[r[:, F_PRICE]] if len(r) else np.zeros(0, np.int64)),
                                pa.array(r[:, F_QTY]), pa.array(self.key_ids[r[:, F_TAKER]]),
                                pa.array(self.key_ids[r[:, F_MAKER]]), _SIDES.take(pa.array(r[:, F_SIDE]))]
        return pa.Table.from_arrays(cols, schema=fills_schema)

    def events(self, r) -> pa.Table:
        kind = r[:, E_KIND] & 0xFF
        reason = r[:, E_KIND] >> 8
        # seq is the instruction's 1-based row in the whole input (the plan numbers the rows
        # before they are sharded; the end of session's n + 1 is never a rejection)
        n = self.prep.n_rows
        row = np.minimum(np.maximum(r[:, E_SEQ] - 1, 0), max(n - 1, 0))
        action = self.prep.orders.action[row] if n else np.zeros(len(r), np.int64)
        rejected = kind == K_REJECTED
        no_side = rejected & (action != OP_NEW)
        # a rejected new limit order shows the price it was sent with, also one that maps to
        # no level row (off the tick, an unknown instrument)
        given, sent_price = self.prep.sent(row) if n else (np.zeros(len(r), bool), np.zeros(len(r), np.int64))
        sent = rejected & given
        qpos = r[:, E_QPOS]
        cols = self._head(r) + [
            pa.array(self.key_ids[r[:, E_KEY]] if len(r) else np.zeros(0, np.int64)),
            _KINDS.take(pa.array(kind)),
            _SIDES.take(pa.array(r[:, E_SIDE], mask=no_side)),
            self._price(r[:, E_PRICE], sent, sent_price),
            pa.array(r[:, E_QTY]), pa.array(r[:, E_REMAINING]),
            pa.array(qpos, mask=qpos < 0),
            _REASONS.take(pa.array(reason)),
        ]
        return pa.Table.from_arrays(cols, schema=events_schema)

    def _levels(self, r, first, n, schema):
        cols = self._head(r)
        for j in range(n):
            c = first + len(LEVEL_ROW) * j
            empty = r[:, c] < 0
            cols += [self._price(r[:, c]), pa.array(r[:, c + 1], mask=empty),
                     pa.array(r[:, c + 2].astype(np.int32), mask=empty)]
        return pa.Table.from_arrays(cols, schema=schema)

    def bbo(self, r) -> pa.Table:
        return self._levels(r, D_HEAD, 2, bbo_schema)

    def depth(self, r) -> pa.Table:
        return self._levels(r, D_HEAD, 2 * self.levels, depth_schema(self.levels))

    def table(self, name: str, rows) -> pa.Table:
        return getattr(self, name)(rows)
