"""The workers' simulation rows -> Arrow tables: fills, events, summary, bbo_with_own,
depth_with_own.

Every row starts with its sort key (seq, phase, time, book, counter); rows of one book come
from one worker in the kernel's order, so sorting the concatenated rows by that key gives
the same tables for any number of workers.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa

from .._kernels.match_layout import REASON_NAMES, R_UNKNOWN_INSTRUMENT
from .._kernels.simulate_layout import (D_HEAD, E_AHEAD, E_KEY, E_KIND, E_PRICE, E_QTY, E_REASON, E_REM,
                                        E_ROW, E_SIDE, E_WIDTH, END_SEQ, F_KEY, F_PRICE, F_PRIO,
                                        F_QTY, F_SIDE, F_TAKER, F_WIDTH, I_ACT, I_ARR, I_KEY,
                                        I_PRICE, I_QTY, I_ROW, I_SIDE, I_TB, K_ACCEPTED, K_CANCELLED, K_COUNT,
                                        K_EXPIRED, K_FILLED, K_MODIFIED, K_PHASE, K_REJECTED, K_SEQ, K_TB,
                                        K_TIME, KIND_NAMES, NONE, OP_CANCEL, OP_NEW, Q_ASK, Q_ASKQ, Q_BID,
                                        Q_BIDQ, Q_WIDTH, SIM_BBO_COLUMNS, SIM_EVENT_COLUMNS,
                                        SIM_FILL_COLUMNS, SIM_HEAD_COLUMNS, SORT_KEY)
from ..schema import fields

fills_schema = pa.schema(fields(SIM_FILL_COLUMNS), metadata={b"obook.table": b"sim_fills"})
events_schema = pa.schema(fields(SIM_EVENT_COLUMNS), metadata={b"obook.table": b"sim_events"})

MID = pa.decimal128(38, 1)
AVG = pa.decimal128(38, 4)
NOTIONAL = pa.decimal128(38, 0)     # price x quantity summed: beyond 64 bits for large prices and orders
#: prices from this size on make the summary's sums, averages and mids Python integers (scaled
#: by 10,000 they would pass 64 bits)
WIDE_PRICE = 1 << 49

summary_schema = pa.schema([
    pa.field("instrument", pa.string(), nullable=False), pa.field("order_id", pa.int64(), nullable=False),
    pa.field("side", pa.string(), nullable=False), pa.field("price", pa.int64()),
    pa.field("quantity", pa.int64(), nullable=False), pa.field("arrival", pa.int64(), nullable=False),
    pa.field("status", pa.string(), nullable=False),     # filled, cancelled, expired, rejected, open, pending
    pa.field("filled", pa.int64(), nullable=False), pa.field("fill_ratio", pa.float64(), nullable=False),
    pa.field("notional", NOTIONAL, nullable=False),               # sum of price * quantity of the fills
    pa.field("first_fill_time", pa.int64()), pa.field("time_to_fill", pa.int64()),
    # prices in the feed's integer units, exact decimals (never binary floats): a mid is a
    # half unit at worst (1 decimal); an average fill price is rounded half-even to 4 decimals
    pa.field("avg_price", AVG), pa.field("mid_at_arrival", MID), pa.field("mid_later", MID),
    pa.field("vs_mid_at_arrival", AVG), pa.field("vs_mid_later", AVG),
], metadata={b"obook.table": b"sim_summary"})

bbo_own_schema = pa.schema(fields(SIM_BBO_COLUMNS), metadata={b"obook.table": b"bbo_with_own"})


def depth_own_schema(levels: int = 10) -> pa.Schema:
    """depth_with_own: the feed's depth columns (``obook.schema.depth_schema(levels)``: per
    level price, shares, orders) after the simulation's seq, time, instrument."""
    from ..schema import depth_schema

    level_fields = [f for f in depth_schema(levels) if f.name.startswith(("bid_", "ask_"))]
    return pa.schema(fields(SIM_HEAD_COLUMNS) + level_fields, metadata={b"obook.table": b"depth_with_own",
                                                                         b"obook.levels": str(levels).encode()})


SCHEMAS = {"fills": fills_schema, "events": events_schema, "summary": summary_schema, "bbo_with_own": bbo_own_schema,
           "depth_with_own": depth_own_schema()}


def schema_of(table: str, levels: int = 10, stamp=None) -> pa.Schema:
    """A table's schema; with ``stamp`` (an :class:`obook.session.Stamp` whose session date is
    known) ``timestamp`` after ``time`` (the summary has no ``time``: left as it is)."""
    schema = depth_own_schema(levels) if table == "depth_with_own" else SCHEMAS[table]
    return schema if stamp is None else stamp.schema(schema)


def stamped(tables: dict, stamp) -> dict:
    """The simulation's tables with ``timestamp`` (UTC) after ``time`` when ``stamp`` (the
    replay's :class:`obook.session.Stamp`) knows the session date, as the replay's tables."""
    if stamp.base_ns is None:
        return tables
    return {name: t if "time" not in t.schema.names else
            pa.Table.from_batches([stamp.batch(b) for b in t.to_batches()], stamp.schema(t.schema))
            for name, t in tables.items()}


#: each own table's (price, quantity, feed time, duration, money) columns: the units metadata its
#: schema carries (obook.tables.units), the feed's; the summary's averages and mids are in price
#: units too, with decimals
UNIT_COLUMNS = {
    "fills": (("price",), ("quantity",), ("time",), (), ()),
    "events": (("price",), ("quantity", "remaining", "shares_ahead"), ("time",), (), ()),
    "summary": (("price", "avg_price", "mid_at_arrival", "mid_later", "vs_mid_at_arrival", "vs_mid_later"),
                ("quantity", "filled"), ("arrival", "first_fill_time"), ("time_to_fill",), ("notional",)),
    "bbo_with_own": (("bid_px", "ask_px"), ("bid_qty", "ask_qty"), ("time",), (), ()),
    "depth_with_own": (("bid_px_*", "ask_px_*"), ("bid_qty_*", "ask_qty_*"), ("time",), (), ()),
}


def with_units(tables: dict, fmt) -> dict:
    """The simulation's own tables with the units of feed format ``fmt`` in their schemas'
    metadata (obook.tables.units: a replay table's keys, and ``obook.money_columns``), their
    own ``obook.table`` and ``obook.levels`` kept; the feed's tables, which carry theirs, as they are."""
    from ..tables.units import run_metadata

    out = {}
    for name, t in tables.items():
        if name not in UNIT_COLUMNS:
            out[name] = t
            continue
        md = dict(t.schema.metadata or {})
        md.update(run_metadata(md[b"obook.table"].decode(), fmt, t.schema.names, UNIT_COLUMNS[name]))
        out[name] = t.replace_schema_metadata(md)
    return out


# built from numpy arrays: pyarrow's conversion of Python lists imports pandas
_SIDES = pa.array(np.array(["buy", "sell"], object), pa.string())
_KINDS = pa.array(np.array(list(KIND_NAMES), object), pa.string())
_REASONS = pa.array(np.array([None] + list(REASON_NAMES[1:]), object), pa.string())


def _sorted(parts: list) -> np.ndarray:
    rows = np.concatenate(parts) if parts else np.zeros((0, len(SORT_KEY)), np.int64)
    if len(rows):
        rows = rows[np.lexsort((rows[:, K_COUNT], rows[:, K_TB], rows[:, K_TIME], rows[:, K_PHASE], rows[:, K_SEQ]))]
    return rows


def _unseen_rejections(own, seen: np.ndarray) -> np.ndarray:
    """Rejected events of the instructions of instruments the feed never named."""
    ins = own.ins[~seen[own.ins[:, I_TB]]] if len(own.ins) else own.ins
    ev = np.zeros((len(ins), E_WIDTH), np.int64)
    if len(ins):
        ev[:, K_SEQ], ev[:, K_TIME], ev[:, K_TB], ev[:, K_COUNT] = END_SEQ, ins[:, I_ARR], ins[:, I_TB], ins[:, I_ROW]
        ev[:, E_KEY], ev[:, E_KIND], ev[:, E_REASON] = ins[:, I_KEY], K_REJECTED, R_UNKNOWN_INSTRUMENT
        ev[:, E_SIDE] = np.where(ins[:, I_ACT] == OP_NEW, ins[:, I_SIDE], -1)
        # the quantity as the kernel's rejections give it: a new order's, a modify's new one, a cancel none
        qty = np.where(ins[:, I_ACT] == OP_CANCEL, 0, np.maximum(ins[:, I_QTY], 0))
        ev[:, E_PRICE], ev[:, E_QTY], ev[:, E_AHEAD], ev[:, E_ROW] = ins[:, I_PRICE], qty, -1, ins[:, I_ROW]
    return ev


def _head_cols(r, names):
    seq = r[:, K_SEQ]
    return [pa.array(seq, mask=seq == END_SEQ), pa.array(r[:, K_TIME]), names.take(pa.array(r[:, K_TB]))]


def depth_table(qd: np.ndarray, names, levels: int) -> pa.Table:
    """depth_with_own rows (sorted) -> the table; a level with no orders is null."""
    cols = _head_cols(qd, names)
    for k in range(2 * levels):
        c = D_HEAD + 3 * k
        empty = qd[:, c + 2] == 0
        cols += [pa.array(qd[:, c], mask=empty), pa.array(qd[:, c + 1], mask=empty),
                 pa.array(qd[:, c + 2].astype(np.int32), mask=empty)]
    return pa.Table.from_arrays(cols, schema=depth_own_schema(levels))


def build_tables(own, observed: list, want_bbo: bool = True, depth_levels: int = 0,
                 before: int | None = None) -> dict:
    """The simulation's tables from the workers' parts (``depth_levels`` > 0: depth_with_own
    too, with that many levels a side). ``before``: the feed record that stopped the replay:
    the rows of earlier records only (a worker whose books met no bad record went on), and
    no instrument is unknown yet."""
    if before is not None:
        observed = [{**p, **{t: p[t][p[t][:, K_SEQ] < before] for t in ("fills", "events", "bbo", "depth")}}
                    for p in observed]
    names = pa.array(own.instruments, pa.string())
    nt = len(own.instruments)
    seen = np.zeros(nt, bool)
    mid = np.full((own.n_rows + 1, 4), NONE, np.int64)
    for part in observed:
        seen |= part["seen"]
        m = part["mid"][:, :4].copy()
        if before is not None:      # the mids taken at or after the bad record (another worker's books)
            m[part["mid"][:, 4] >= before, 0:2] = NONE
            m[part["mid"][:, 5] >= before, 2:4] = NONE
        mid[part["mid_rows"]] = m
    fl = _sorted([p["fills"] for p in observed] or [np.zeros((0, F_WIDTH), np.int64)])
    ev = _sorted([p["events"] for p in observed] + ([_unseen_rejections(own, seen)] if before is None else []))
    qb = _sorted([p["bbo"] for p in observed] or [np.zeros((0, Q_WIDTH), np.int64)])
    ids = own.key_ids
    fills = pa.Table.from_arrays(_head_cols(fl, names) + [
        pa.array(ids[fl[:, F_KEY]] if len(fl) else np.zeros(0, np.int64)), _SIDES.take(pa.array(fl[:, F_SIDE])),
        pa.array(fl[:, F_PRICE]), pa.array(fl[:, F_QTY]),
        pa.array(np.where(fl[:, F_TAKER] == 1, "taker", "maker").astype(object), pa.string()),
        pa.array(fl[:, F_PRIO] != 0)], schema=fills_schema)
    kind, side, price, ahead, row = ev[:, E_KIND], ev[:, E_SIDE], ev[:, E_PRICE], ev[:, E_AHEAD], ev[:, E_ROW]
    no_price = (price < 0) | ((kind == K_REJECTED) & (side < 0))      # a rejected modify or cancel: as match gives it
    events = pa.Table.from_arrays(_head_cols(ev, names) + [
        pa.array(ids[ev[:, E_KEY]] if len(ev) else np.zeros(0, np.int64)), _KINDS.take(pa.array(kind)),
        _SIDES.take(pa.array(np.maximum(side, 0), mask=side < 0)), pa.array(price, mask=no_price),
        pa.array(ev[:, E_QTY]), pa.array(ev[:, E_REM]), pa.array(ahead, mask=ahead < 0),
        _REASONS.take(pa.array(ev[:, E_REASON])), pa.array(row, mask=row < 0)], schema=events_schema)
    cols = _head_cols(qb, names)
    for c, q in ((Q_BID, Q_BIDQ), (Q_ASK, Q_ASKQ)):
        empty = qb[:, c] == NONE
        cols += [pa.array(qb[:, c], mask=empty), pa.array(qb[:, q], mask=empty)]
    bbo_own = pa.Table.from_arrays(cols, schema=bbo_own_schema)
    out = {"fills": fills, "events": events, "summary": summary(own, fl, ev, mid, names)}
    if want_bbo:
        out["bbo_with_own"] = bbo_own
    if depth_levels:
        width = D_HEAD + 6 * depth_levels
        out["depth_with_own"] = depth_table(_sorted([p["depth"] for p in observed] or [np.zeros((0, width), np.int64)]),
                                            names, depth_levels)
    return out


def _decimals(unscaled: np.ndarray, valid: np.ndarray, type_: pa.DataType) -> pa.Array:
    """Exact decimals of ``type_`` from their unscaled int64 values, or Python integers (an
    object array), null where not valid."""
    if unscaled.dtype == object:
        return pa.array([Decimal(int(v)).scaleb(-type_.scale) if ok else None
                         for v, ok in zip(unscaled.tolist(), np.asarray(valid, bool).tolist())], type_)
    n = len(unscaled)
    words = np.empty((n, 2), np.int64)             # 128-bit two's complement, little-endian
    words[:, 0] = np.where(valid, unscaled, 0)
    words[:, 1] = words[:, 0] >> 63
    bits = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(type_, n, [bits, pa.py_buffer(words)], null_count=int(n - valid.sum()))


def _mid(bid, ask) -> tuple:
    """The mids (exact: (bid + ask) / 2, unscaled at 1 decimal) and where both sides exist."""
    valid = (bid != NONE) & (ask != NONE)
    return np.where(valid, (bid + ask) * 5, 0), valid


def _avg(notional, filled) -> tuple:
    """The average fill prices notional / filled rounded half-even to 4 places (unscaled;
    the remainder is scaled, never the notional; Python integers where the prices are
    large), and where there are fills."""
    valid = filled > 0
    f = np.where(valid, filled, 1)
    if notional.dtype == object:
        f = f.astype(object)
        whole, rest = notional // f, notional % f
    else:
        whole, rest = np.divmod(notional, f)       # rest in [0, f)
    frac, rem = (rest * 10_000) // f, (rest * 10_000) % f
    up = (2 * rem > f) | ((2 * rem == f) & (frac % 2 == 1))
    return np.where(valid, whole * 10_000 + frac + up, 0), valid


def _versus(sign, avg, mid) -> pa.Array:
    """sign * (avg - mid) per order (positive: paid more than the mid for a buy), or null."""
    (a, av), (m, mv) = avg, mid
    return _decimals(sign * (a - m * 1000), av & mv, AVG)


def _added(ev, nk: int) -> np.ndarray:
    """Per order key, the shares its modifies added to its open quantity (a modify's new open
    quantity less the order's remaining before it, when more): with the new order's quantity,
    the shares it offered in all."""
    added = np.zeros(nk, np.int64)
    mods = np.flatnonzero(ev[:, E_KIND] == K_MODIFIED) if len(ev) else np.zeros(0, np.int64)
    if len(mods):
        order = np.lexsort((np.arange(len(ev)), ev[:, E_KEY]))     # by order key, then in time
        pos = np.empty(len(ev), np.int64)
        pos[order] = np.arange(len(ev))
        before = order[np.maximum(pos[mods] - 1, 0)]
        has = (pos[mods] > 0) & (ev[before, E_KEY] == ev[mods, E_KEY])
        old = np.where(has, ev[before, E_REM], 0)
        np.add.at(added, ev[mods, E_KEY], np.maximum(ev[mods, E_QTY] - old, 0))
    return added


def summary(own, fl, ev, mid, names) -> pa.Table:
    """One row per own order id: its accepted ``new`` instruction (an id a fill-or-kill left
    free, turned away whole, may be sent again), else its first."""
    ins = own.ins[own.ins[:, I_ACT] == OP_NEW]
    ins = ins[np.argsort(ins[:, I_ROW], kind="stable")]
    nk = max(len(own.key_ids), 1)
    if len(ev):
        acc = ev[ev[:, E_KIND] == K_ACCEPTED]
        chosen = np.full(nk, -1, np.int64)
        chosen[acc[:, E_KEY]] = acc[:, E_ROW]
        ins = ins[(chosen[ins[:, I_KEY]] < 0) | (chosen[ins[:, I_KEY]] == ins[:, I_ROW])]
    keys, first = np.unique(ins[:, I_KEY], return_index=True)
    ins = ins[np.sort(first)]
    keys = ins[:, I_KEY]
    filled = np.zeros(nk, np.int64)
    m = mid[ins[:, I_ROW]]
    prices = np.concatenate([fl[:, F_PRICE], m[m != NONE]])
    wide = len(prices) > 0 and (int(np.abs(prices).max()) >= WIDE_PRICE
                                or int(np.abs(prices).max()) * int(fl[:, F_QTY].sum()) >= 1 << 63)
    if wide:                 # exact in Python integers (object arrays)
        m = m.astype(object)
    notional = np.zeros(nk, object if wide else np.int64)
    first_t = np.full(nk, np.iinfo(np.int64).max)
    last_t = np.full(nk, np.iinfo(np.int64).min)
    if len(fl):
        k = fl[:, F_KEY]
        np.add.at(filled, k, fl[:, F_QTY])
        if wide:
            for key, q, p in zip(k.tolist(), fl[:, F_QTY].tolist(), fl[:, F_PRICE].tolist()):
                notional[key] += q * p
        else:
            np.add.at(notional, k, fl[:, F_QTY] * fl[:, F_PRICE])
        np.minimum.at(first_t, k, fl[:, K_TIME])
        np.maximum.at(last_t, k, fl[:, K_TIME])
    status = np.full(nk, "open", dtype=object)
    accepted = np.zeros(nk, bool)
    if len(ev):
        accepted[ev[ev[:, E_KIND] == K_ACCEPTED, E_KEY]] = True
        for kind, word in ((K_FILLED, "filled"), (K_CANCELLED, "cancelled"), (K_EXPIRED, "expired")):
            status[ev[ev[:, E_KIND] == kind, E_KEY]] = word
        # the new order itself rejected after its acceptance (a fill-or-kill that cannot fill);
        # a modify or cancel rejected leaves the order's status alone
        new_row = np.full(nk, -1, np.int64)
        new_row[keys] = ins[:, I_ROW]
        rej = ev[ev[:, E_KIND] == K_REJECTED]
        status[rej[rej[:, E_ROW] == new_row[rej[:, E_KEY]], E_KEY]] = "rejected"
    answered = np.zeros(nk, bool)          # none of its instructions arrived: a partial run stopped first
    answered[ev[:, E_KEY]] = True
    status[~accepted] = np.where(answered[~accepted], "rejected", "pending")
    f = filled[keys]
    has = f > 0
    avg = _avg(notional[keys], f)
    sign = np.where(ins[:, I_SIDE] == 0, 1, -1)
    at = _mid(m[:, 0], m[:, 1])
    later = _mid(m[:, 2], m[:, 3])
    st = status[keys]
    done = st == "filled"
    qty = ins[:, I_QTY]
    offered = qty + _added(ev, nk)[keys]
    cols = [names.take(pa.array(ins[:, I_TB])), pa.array(own.key_ids[keys] if len(keys) else np.zeros(0, np.int64)),
            _SIDES.take(pa.array(np.maximum(ins[:, I_SIDE], 0))), pa.array(ins[:, I_PRICE], mask=ins[:, I_PRICE] < 0),
            pa.array(qty), pa.array(ins[:, I_ARR]), pa.array(st.astype(object), pa.string()), pa.array(f),
            pa.array(np.where(offered > 0, f / np.maximum(offered, 1), 0.0)),
            _decimals(notional[keys], np.ones(len(keys), bool), NOTIONAL),
            pa.array(first_t[keys], mask=~has), pa.array(last_t[keys] - ins[:, I_ARR], mask=~done),
            _decimals(*avg, AVG), _decimals(*at, MID), _decimals(*later, MID),
            pa.array(_versus(sign, avg, at), AVG), pa.array(_versus(sign, avg, later), AVG)]
    return pa.Table.from_arrays(cols, schema=summary_schema)
