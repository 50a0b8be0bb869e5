"""LOBSTER's rows, computed a batch at a time from the replay's tables (columnar: no row
is handled in Python but a replace's deletion step).

A ticker's state between batches (:class:`TickerState`): the book after its last depth
row, and its live orders (id, price, remaining shares), which a replace (``U``) needs to
write its deletion row. Every message row's book is the last depth row at or before its
record (depth has a row at a record only when the record changed the top levels).
"""

from __future__ import annotations

import numpy as np

from .errors import ObookError

DUMMY_ASK = 9_999_999_999
DUMMY_BID = -9_999_999_999
_CROSS_IDS = {"O": -1, "C": -2, "H": -3, "I": -4}
_HALT_PRICE = {"H": -1, "P": -1, "Q": 0, "T": 1}


class TickerState:
    """What one ticker's next batch needs of the ones before."""

    def __init__(self, deep: int):
        self.book = np.zeros(4 * deep, dtype=np.int64)       # the empty book: dummies
        self.book[0::4], self.book[2::4] = DUMMY_ASK, DUMMY_BID
        self.live = (np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.rows = 0


def _np(table, column: str, fill=0) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.fill_null(table[column], fill).to_numpy()


def _books(depth, first: np.ndarray, spare: int) -> np.ndarray:
    """The book after each depth row, LOBSTER's orderbook columns (ask px, ask size, bid px,
    bid size per level; a missing level is the dummy): row 0 ``first`` (the book before the
    batch), row k + 1 the book after depth row k; then ``spare`` rows to fill."""
    n = 0 if depth is None else depth.num_rows
    books = np.zeros((n + 1 + spare, len(first)), dtype=np.int64)
    books[0] = first
    for i in range(len(first) // 4):
        for j, side, dummy in ((0, "ask", DUMMY_ASK), (2, "bid", DUMMY_BID)):
            if n:
                have = depth[f"{side}_px_{i + 1}"].is_valid().to_numpy(zero_copy_only=False)
                books[1:n + 1, 4 * i + j] = np.where(have, _np(depth, f"{side}_px_{i + 1}"), dummy)
                books[1:n + 1, 4 * i + j + 1] = np.where(have, _np(depth, f"{side}_qty_{i + 1}"), 0)
    return books


def _without(row: np.ndarray, price: int, shares: int, direction: int) -> np.ndarray:
    """The book ``row`` with ``shares`` at ``price`` taken off one side (a replace's deletion
    step); a level left empty goes, and the next one moves up."""
    out = row.copy()
    j, dummy = (2, DUMMY_BID) if direction == 1 else (0, DUMMY_ASK)
    levels = [(int(px), int(qty)) for px, qty in zip(row[j::4], row[j + 1::4]) if px != dummy]
    kept = []
    for px, qty in levels:
        if px == price:
            qty -= shares
            if qty <= 0:
                continue
        kept.append((px, qty))
    kept += [(dummy, 0)] * (len(out[j::4]) - len(kept))
    out[j::4], out[j + 1::4] = [k[0] for k in kept], [k[1] for k in kept]
    return out


def _replaced(orders, live) -> tuple[np.ndarray, np.ndarray, tuple]:
    """For each orders row: (price, remaining) of the order a replace (``U``) takes away,
    as the rows before it left it (``live``: the orders live before the batch; an order
    added before the feed began, or already gone: 0, 0); and the orders live after the batch."""
    action = orders["action"].to_numpy(zero_copy_only=False)
    ref, new_ref = _np(orders, "ref").astype(np.uint64), _np(orders, "new_ref").astype(np.uint64)
    n, (live_id, live_price, live_remaining) = len(action), live
    m = len(live_id)
    price = np.concatenate([live_price, _np(orders, "price")])
    remaining = np.concatenate([live_remaining, _np(orders, "remaining")])
    replace = action == "U"
    u = np.flatnonzero(replace)
    # events on an order id, in order: what a row leaves it (kind 2; the live orders first),
    # a replace taking it away (kind 1) after its look-up (kind 0)
    key = np.concatenate([live_id, np.where(replace, new_ref, ref), ref[u], ref[u]])
    row = np.concatenate([np.full(m, -1), np.arange(n), u, u])
    kind = np.concatenate([np.full(m + n, 2), np.ones(len(u), int), np.zeros(len(u), int)])
    source = np.concatenate([np.arange(m + n), m + u, m + u])
    alive = np.concatenate([np.ones(m, bool), (action == "A") | replace | (remaining[m:] != 0),
                            np.zeros(2 * len(u), bool)])
    order = np.lexsort((kind, row, key))
    key, row, kind, source, alive = key[order], row[order], kind[order], source[order], alive[order]
    last = np.maximum.accumulate(np.where(kind > 0, np.arange(len(key)), -1))   # the event before
    lookup = np.flatnonzero(kind == 0)
    prev = last[np.maximum(lookup - 1, 0)]
    ok = (lookup > 0) & (prev >= 0)
    ok[ok] &= (key[prev[ok]] == key[lookup[ok]]) & alive[prev[ok]]
    old_price, old_remaining = np.zeros(n, np.int64), np.zeros(n, np.int64)
    at = row[lookup]
    old_price[at[ok]] = price[source[prev[ok]]]
    old_remaining[at[ok]] = remaining[source[prev[ok]]]
    # the last event of each id says whether the order lives on (a look-up is never last)
    ends = np.flatnonzero(np.r_[key[1:] != key[:-1], True]) if len(key) else np.zeros(0, int)
    ends = ends[alive[ends]]
    return old_price, old_remaining, (key[ends], price[source[ends]], remaining[source[ends]])


def _message_parts(tables, cross_types: dict, state: TickerState) -> list[dict]:
    """The message rows of a ticker's orders, trades and trading actions (unsorted), as
    column arrays: seq, step (a replace's deletion 0, its submission 1), time, type, id,
    size, price, direction."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = []

    def part(seq, step, time, kind, ident, size, price, direction):
        n = len(seq)
        parts.append({"seq": np.asarray(seq, np.int64), "step": np.broadcast_to(np.int64(step), (n,)),
                      "time": np.asarray(time, np.uint64), "type": np.broadcast_to(np.asarray(kind, np.int64), (n,)),
                      "id": _text(ident, n),
                      "size": np.asarray(size, np.int64), "price": np.asarray(price, np.int64),
                      "direction": np.broadcast_to(np.asarray(direction, np.int64), (n,))})

    orders = tables.get("orders")
    if orders is not None and orders.num_rows:
        action = orders["action"].to_numpy(zero_copy_only=False)
        unknown = set(action.tolist()) - set("AUECXD")
        if unknown:
            raise ObookError(f"unknown orders action {sorted(unknown)[0]!r}")
        d = np.where(orders["side"].to_numpy(zero_copy_only=False) == "B", 1, -1)
        seq, time = _np(orders, "seq"), _np(orders, "time")
        price, shares, remaining = _np(orders, "price"), _np(orders, "shares"), _np(orders, "remaining")
        kind = np.select([action == "A", action == "U", (action == "E") | (action == "C"),
                          (action == "X") & (remaining != 0)], [1, 1, 4, 2], 3)
        ident = pc.if_else(pa.array(action == "U"), orders["new_ref"], orders["ref"])
        part(seq, 1, time, kind, ident, shares, price, d)             # every row; a replace's submission
        old_price, old_remaining, state.live = _replaced(orders, state.live)
        u = np.flatnonzero(action == "U")
        if len(u):
            part(seq[u], 0, time[u], 3, orders["ref"].take(u), old_remaining[u], old_price[u], d[u])
    trades = tables.get("trades")
    if trades is not None and trades.num_rows:
        kinds = trades["kind"].to_numpy(zero_copy_only=False)
        seq, time, price, shares = (_np(trades, c) for c in ("seq", "time", "price", "shares"))
        p, q = np.flatnonzero(kinds == "P"), np.flatnonzero(kinds == "Q")
        if len(p):
            side = trades["side"].take(p).to_numpy(zero_copy_only=False)
            part(seq[p], 1, time[p], 5, trades["ref"].take(p), shares[p], price[p], np.where(side == "B", 1, -1))
        if len(q):
            cross = np.array([_CROSS_IDS.get(cross_types.get(int(s)), -4) for s in seq[q]], np.int64)
            part(seq[q], 1, time[q], 6, cross, shares[q], price[q], -1)
    halts = tables.get("halts")
    if halts is not None and halts.num_rows:
        price = np.array([_HALT_PRICE.get(s, -1) for s in halts["state"].to_pylist()], np.int64)
        part(_np(halts, "seq"), 1, _np(halts, "time"), 7, 0, np.zeros(halts.num_rows, np.int64), price, -1)
    return parts


def _text(ident, n: int):
    """Order ids as text (ITCH refs are unsigned 64-bit, LOBSTER's cross ids negative)."""
    import pyarrow as pa

    if isinstance(ident, pa.ChunkedArray):
        ident = ident.combine_chunks()
    if not isinstance(ident, pa.Array):
        ident = pa.array(np.broadcast_to(np.asarray(ident, np.int64), (n,)))
    return ident.cast(pa.string())


def ticker_rows(tables, state: TickerState, levels: int, cross_types: dict, start_ns: int, end_ns: int,
                style: str):
    """(message table, orderbook table) of one ticker's rows of a batch (its ``tables``:
    depth, orders, trades (P and Q), halts), LOBSTER's columns; None when it has none.
    ``cross_types``: the cross type (O, C, H, I) of each cross by its record number.
    Updates ``state``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = _message_parts(tables, cross_types, state)
    depth = tables.get("depth")
    if not parts:
        if depth is not None and depth.num_rows:
            state.book = _books(depth, state.book, 0)[-1]
        return None
    cols = {c: np.concatenate([p[c] for p in parts]) for c in parts[0] if c != "id"}
    ident = pa.chunked_array([p["id"] for p in parts], pa.string())
    inside = (cols["time"] >= start_ns) & (cols["time"] < end_ns)
    order = np.flatnonzero(inside)[np.lexsort((cols["step"][inside], cols["seq"][inside]))]
    cols = {c: v[order] for c, v in cols.items()}
    deletion = np.flatnonzero(cols["step"] == 0)
    books = _books(depth, state.book, len(deletion))
    state.book = books[len(books) - len(deletion) - 1].copy()
    # the book before and after each row's record (row 0: the book before the batch)
    dseq = _np(depth, "seq") if depth is not None else np.zeros(0, np.int64)
    before = np.searchsorted(dseq, cols["seq"], "left")
    after = np.searchsorted(dseq, cols["seq"], "right")
    # a replace: its deletion row shows the book after the deletion, its submission starts there
    at = np.arange(len(books) - len(deletion), len(books))
    for k, i in zip(at, deletion):
        books[k] = _without(books[before[i]], cols["price"][i], cols["size"][i], cols["direction"][i])
    after[deletion] = at
    before[deletion + 1] = at
    width = 4 * levels
    if style == "lobster":     # LOBSTER lists a submission, cancellation or deletion inside the levels only
        ask = np.flatnonzero(cols["type"] <= 3)
        keep = np.ones(len(order), bool)
        keep[ask] = (books[before[ask], :width] != books[after[ask], :width]).any(axis=1)
        rows = np.flatnonzero(keep)
    else:
        rows = np.arange(len(order))
    if not len(rows):
        return None
    time = cols["time"][rows]
    whole = pa.array(time // 1_000_000_000).cast(pa.string())
    frac = pc.utf8_slice_codeunits(pa.array(time % 1_000_000_000 + 1_000_000_000).cast(pa.string()), 1)
    if style == "lobster":      # the shortest form: 34200.05990197, 34200
        frac = pc.utf8_rtrim(frac, characters="0")
        when = pc.if_else(pc.equal(frac, ""), whole, pc.binary_join_element_wise(whole, frac, "."))
    else:
        when = pc.binary_join_element_wise(whole, frac, ".")
    messages = pa.table({"time": when, "type": cols["type"][rows], "id": ident.take(order[rows]),
                         "size": cols["size"][rows], "price": cols["price"][rows],
                         "direction": cols["direction"][rows]})
    names = [f"{s}_{k}_{i + 1}" for i in range(levels) for s in ("ask", "bid") for k in ("px", "qty")]
    shown = np.ascontiguousarray(books[after[rows], :width].T)
    return messages, pa.Table.from_arrays(list(shown), names)
