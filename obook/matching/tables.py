"""Arrow schemas of the matching engine's tables, and kernel rows -> Arrow tables."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._kernels.match_layout import (E_KEY, E_KIND, E_PRICE, E_QPOS, E_QTY, E_REMAINING, E_SEQ, E_SIDE,
                                     F_MAKER, F_PRICE, F_QTY, F_SIDE, F_TAKER, K_REJECTED, KIND_NAMES,
                                     OP_NEW, REASON_NAMES)


def _head():
    return [pa.field("seq", pa.int64(), nullable=False),          # 1-based input row (end of session: n + 1)
            pa.field("time", pa.int64(), nullable=False),
            pa.field("instrument", pa.string(), nullable=False)]


fills_schema = pa.schema(_head() + [
    pa.field("price", pa.int64(), nullable=False),                # the resting order's price
    pa.field("quantity", pa.int64(), nullable=False),
    pa.field("taker_order_id", pa.int64(), nullable=False),
    pa.field("maker_order_id", pa.int64(), nullable=False),
    pa.field("taker_side", pa.string(), nullable=False),          # buy / sell
], metadata={b"obook.table": b"fills"})

events_schema = pa.schema(_head() + [
    pa.field("order_id", pa.int64(), nullable=False),
    pa.field("event", pa.string(), nullable=False),               # accepted, rejected, rested, ...
    pa.field("side", pa.string()),                                # null: a rejected modify / cancel
    pa.field("price", pa.int64()),                                # the order's limit; null: market
    pa.field("quantity", pa.int64(), nullable=False),             # what the event is about
    pa.field("remaining", pa.int64(), nullable=False),            # open quantity after it
    pa.field("queue_position", pa.int64()),                       # rested: 1 = front of its level
    pa.field("reason", pa.string()),                              # rejected / cancelled / expired
], metadata={b"obook.table": b"events"})

bbo_schema = pa.schema(_head() + [
    pa.field("bid_px", pa.int64()), pa.field("bid_qty", pa.int64()), pa.field("bid_orders", pa.int32()),
    pa.field("ask_px", pa.int64()), pa.field("ask_qty", pa.int64()), pa.field("ask_orders", pa.int32()),
], metadata={b"obook.table": b"match_bbo"})


def depth_schema(levels: int = 10) -> pa.Schema:
    fields = _head()
    for side in ("bid", "ask"):
        for i in range(1, levels + 1):
            fields += [pa.field(f"{side}_px_{i}", pa.int64()), pa.field(f"{side}_qty_{i}", pa.int64()),
                       pa.field(f"{side}_orders_{i}", pa.int32())]
    return pa.schema(fields, metadata={b"obook.table": b"match_depth", b"obook.levels": str(levels).encode()})


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
        self.ops = prep.msg.rows["op"].astype(np.int64)
        self.levels = levels

    def _head(self, rows):
        return [pa.array(rows[:, 0]), pa.array(rows[:, 1]), self.names.take(pa.array(rows[:, 2]))]

    def _price(self, rows_col):
        valid = rows_col >= 0
        return pa.array(self.lv_price[np.where(valid, rows_col, 0)] if len(self.lv_price) else
                        np.zeros(len(rows_col), np.int64), mask=~valid)

    def fills(self, r) -> pa.Table:
        cols = self._head(r) + [pa.array(self.lv_price[r[:, F_PRICE]] if len(r) else np.zeros(0, np.int64)),
                                pa.array(r[:, F_QTY]), pa.array(self.key_ids[r[:, F_TAKER]]),
                                pa.array(self.key_ids[r[:, F_MAKER]]), _SIDES.take(pa.array(r[:, F_SIDE]))]
        return pa.Table.from_arrays(cols, schema=fills_schema)

    def events(self, r) -> pa.Table:
        kind = r[:, E_KIND] & 0xFF
        reason = r[:, E_KIND] >> 8
        row = np.maximum(r[:, E_SEQ] - 1, 0)
        action = self.ops[np.minimum(row, len(self.ops) - 1)] & 3 if len(self.ops) else np.zeros(len(r), np.int64)
        no_side = (kind == K_REJECTED) & (action != OP_NEW)
        qpos = r[:, E_QPOS]
        cols = self._head(r) + [
            pa.array(self.key_ids[r[:, E_KEY]] if len(r) else np.zeros(0, np.int64)),
            _KINDS.take(pa.array(kind)),
            _SIDES.take(pa.array(r[:, E_SIDE], mask=no_side)),
            self._price(r[:, E_PRICE]),
            pa.array(r[:, E_QTY]), pa.array(r[:, E_REMAINING]),
            pa.array(qpos, mask=qpos < 0),
            _REASONS.take(pa.array(reason)),
        ]
        return pa.Table.from_arrays(cols, schema=events_schema)

    def _levels(self, r, first, n, schema):
        cols = self._head(r)
        for j in range(n):
            c = first + 3 * j
            empty = r[:, c] < 0
            cols += [self._price(r[:, c]), pa.array(r[:, c + 1], mask=empty),
                     pa.array(r[:, c + 2].astype(np.int32), mask=empty)]
        return pa.Table.from_arrays(cols, schema=schema)

    def bbo(self, r) -> pa.Table:
        return self._levels(r, 3, 2, bbo_schema)

    def depth(self, r) -> pa.Table:
        return self._levels(r, 3, 2 * self.levels, depth_schema(self.levels))

    def table(self, name: str, rows) -> pa.Table:
        return getattr(self, name)(rows)
