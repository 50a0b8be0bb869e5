"""A plain reference of obook's Databento MBO tables: Databento's book-building rules over
the records ``databento_dbn``'s own decoder reads. Clarity over speed; strict mode only.

Rules (Databento's order-book example): T, F and N change no book; R clears the
instrument's book; A adds an order at the back of its price level; C takes ``size``
from an order (removed at 0; more than it has is an error); M of an unknown order is an
add, else the order gets the record's price and size and keeps its queue place only if
the price is unchanged and the size did not grow (otherwise it goes to the back of its
new level). Books are per instrument_id. Rows are published at the end of an event: at
the record whose flags carry F_LAST, comparing the book with its state before the
event's first record.

Every function returns plain tuples (``None`` for a null); ``seq`` is the 1-based
record number in the file (every record counts, MBO or not).
"""

from __future__ import annotations

from pathlib import Path

import databento_dbn as dbn

F_LAST = 0x80
UNDEF = (1 << 63) - 1


def records(path):
    """(seq, record) for every record of a DBN file (plain or zstd)."""
    raw = Path(path).read_bytes()
    compression = dbn.Compression.ZSTD if raw[:4] == b"\x28\xb5\x2f\xfd" else dbn.Compression.NONE
    dec = dbn.DBNDecoder(compression=compression, upgrade_policy=dbn.VersionUpgradePolicy.AS_IS)
    dec.write(raw)
    out = dec.decode()
    meta = out[0]
    tickers = {}
    for raw_symbol, intervals in meta.mappings.items():
        for iv in intervals:
            if iv["symbol"].isdigit():
                tickers.setdefault(int(iv["symbol"]), raw_symbol)
    return tickers, list(enumerate(out[1:], start=1))


def _ch(v) -> str:
    return v if isinstance(v, str) else str(v.value)


class Book:
    """One instrument: orders by id, and per side price -> FIFO list of order ids."""

    def __init__(self):
        self.orders: dict[int, list] = {}           # id -> [side, price, size]
        self.levels = {"B": {}, "A": {}}

    def _queue(self, side, price):
        return self.levels[side].setdefault(price, [])

    def _unlink(self, oid):
        side, price, _ = self.orders[oid]
        q = self.levels[side][price]
        q.remove(oid)
        if not q:
            del self.levels[side][price]

    def apply(self, action, side, oid, price, size):
        """None, or the reason the record fails."""
        if action in "TFN":
            return None
        if action == "R":
            self.orders.clear()
            self.levels = {"B": {}, "A": {}}
            return None
        if action == "A" or (action == "M" and oid not in self.orders):
            if oid in self.orders:
                return "duplicate order"
            self.orders[oid] = [side, price, size]
            self._queue(side, price).append(oid)
            return None
        if oid not in self.orders:
            return "unknown order"
        o = self.orders[oid]
        if action == "C":
            if size > o[2]:
                return "over-cancel"
            o[2] -= size
            if o[2] == 0:
                self._unlink(oid)
                del self.orders[oid]
            return None
        # M
        if o[1] != price or size > o[2]:
            self._unlink(oid)
            o[1], o[2] = price, size
            self._queue(o[0], price).append(oid)
        else:
            o[2] = size
        return None

    def ahead(self, oid):
        """(shares, orders) in front of a resting order at its price; (None, None) if gone."""
        if oid not in self.orders:
            return None, None
        side, price, _ = self.orders[oid]
        q = self.levels[side][price]
        front = q[:q.index(oid)]
        return sum(self.orders[o][2] for o in front), len(front)

    def orders_front_to_back(self):
        """(side, price, size, id) of every order: bids then asks, best level first, each
        level front to back."""
        out = []
        for side in ("B", "A"):
            for p in sorted(self.levels[side], reverse=(side == "B")):
                out += [(side, p, self.orders[o][2], o) for o in self.levels[side][p]]
        return out

    def top(self, side, n):
        """The best n levels of a side: (price, total size, orders), padded with None."""
        prices = sorted(self.levels[side], reverse=(side == "B"))[:n]
        rows = [(p, sum(self.orders[o][2] for o in self.levels[side][p]), len(self.levels[side][p]))
                for p in prices]
        return rows + [None] * (n - len(rows))


def _mbp_row(r, rtype, levels_now, levels_seen, symbol, trade):
    """An mbp row (obook.feeds.databento.mbp's column order) for record r."""
    side = _ch(r.side)
    n = len(levels_now) // 2
    look = ({"B": "A", "A": "B"}.get(side) if trade else side)
    depth = 0
    if look in ("B", "A"):
        for lv in (levels_now, levels_seen):
            part = lv[:n] if look == "B" else lv[n:]
            prices = [x[0] if x else None for x in part]
            if r.price in prices:
                depth = prices.index(r.price)
                break
    row = (r.ts_recv, r.ts_event, rtype, r.publisher_id, r.instrument_id, _ch(r.action), side, depth,
           None if r.price == UNDEF else r.price, r.size, int(r.flags), r.ts_in_delta, r.sequence)
    for k in range(n):
        b, a = levels_now[k], levels_now[n + k]
        row += (b and b[0], a and a[0], b[1] if b else 0, a[1] if a else 0, b[2] if b else 0,
                a[2] if a else 0)
    return row + (symbol,)


def replay(path, levels: int = 10):
    """(tables, error): tables = {"bbo", "depth", "trades", "mbp1", "mbp10"} row lists;
    depth has ``levels`` levels a side."""
    tickers, recs = records(path)
    books: dict[int, Book] = {}
    before: dict[int, tuple] = {}      # instrument -> (top1, topN) at its open event's start
    shown: dict[int, dict] = {}        # instrument -> {1: levels, 10: levels} last published
    out = {"bbo": [], "depth": [], "trades": [], "orders": [], "mbp1": [], "mbp10": []}
    for seq, r in recs:
        if not isinstance(r, dbn.MBOMsg):
            continue
        iid = r.instrument_id
        book = books.setdefault(iid, Book())
        action, side = _ch(r.action), _ch(r.side)
        head = (seq, r.ts_event, tickers.get(iid, str(iid)), iid)
        symbol = head[2]
        seen = shown.setdefault(iid, {m: [None] * 2 * m for m in (1, 10)})
        opened = iid in before
        if not opened:
            before[iid] = {m: book.top("B", m) + book.top("A", m) for m in {1, 10, levels}}
        gone = book.orders_front_to_back() if action == "R" else []
        had = book.orders.get(r.order_id)
        had = list(had) if had else None
        err = book.apply(action, side, r.order_id, r.price, r.size)
        if err:
            return out, (seq, err)
        out["orders"] += _order_rows(head, action, side, r, had, book, gone)
        if action == "T":
            # one row per trade: the T (its F records report the same shares again, per
            # resting order); the side is the resting one, the other side of the aggressor
            out["trades"].append(head + (action, None if r.price == UNDEF else r.price, r.size,
                                         {"B": "S", "A": "B"}.get(side), r.order_id))
        if action == "T":
            for m in (1, 10):
                out[f"mbp{m}"].append((seq,) + _mbp_row(r, m, seen[m], seen[m], symbol, True))
        if not r.flags & F_LAST:
            continue
        was = before.pop(iid)
        now = {m: book.top("B", m) + book.top("A", m) for m in was}
        if [x and x[:2] for x in now[1]] != [x and x[:2] for x in was[1]]:
            out["bbo"].append(head + _flat(now[1]))
        if now[levels] != was[levels]:
            out["depth"].append(head + _flat(now[levels]))
        for m in (1, 10):
            if now[m] != was[m]:
                out[f"mbp{m}"].append((seq,) + _mbp_row(r, m, now[m], was[m], symbol, False))
            seen[m] = now[m]
    return out, None


def _order_rows(head, action, side, r, had, book, gone):
    """The orders table's rows of record r (obook's columns up to ``ref``, then the queue
    place; sides B/S): A and M: the order's new price and size (remaining = size); C: the
    order's price, the size cancelled and what remains; R: one row per removed order,
    remaining 0; queue_shares_ahead / queue_orders_ahead after the record (None: gone)."""
    bs = {"B": "B", "A": "S"}
    if action == "R":
        return [head + ("R", bs[s], p, n, 0, o, None, None) for s, p, n, o in gone]
    if action in "AM":
        return [head + (action, bs[side], r.price, r.size, r.size, r.order_id) + book.ahead(r.order_id)]
    if action == "C":
        left = book.orders[r.order_id][2] if r.order_id in book.orders else 0
        return [head + ("C", bs[had[0]], had[1], r.size, left, r.order_id) + book.ahead(r.order_id)]
    return []


def _flat(levels):
    row = ()
    for lv in levels:
        row += lv if lv is not None else (None, None, None)
    return row
