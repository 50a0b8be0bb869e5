"""A plain pure-Python reference of obook.simulate: clarity over speed.

Books are dicts ``ref -> [side, price, shares, stamp]``; levels are found by scanning the
dict; an own order remembers the SET of feed refs that stood at its level when it arrived
(with their stamps) and the consumed shares then, and its shares ahead are recomputed
from that set: max(0, shares still held by that set - consumed at arrival). Only the
rules of obook.simulate's doc are shared with the engine, no code.

Feed records are plain tuples ``(seq, time, ticker, kind, ref, side, shares, price, new_ref)``
with kind one of add, add0 (0 shares allowed), exec, exec_clamp, cancel, reduce_to,
delete, fill (an execution of all its shares, then removed), replace, other (an exec's price:
the trade's, None or 0: the order's); ``itch_records`` / ``csv_records`` read them from a feed file.
"""

from __future__ import annotations

import gzip

from reference_csv import data_lines, header_fields, parse_line
from reference_itch import reference_messages

END = None
REASONS = {1: "unknown order id", 2: "order is not live (filled, cancelled or expired)",
           3: "duplicate order id", 4: "quantity must be positive", 6: "unknown instrument",
           7: "limit order without a price", 8: "fill-or-kill order cannot fill completely",
           10: "cancel request", 11: "unfilled rest of an IOC, FOK or market order", 12: "end of session"}


def itch_records(path):
    """(records, tickers seen)"""
    kinds = {"A": "add", "F": "add", "E": "exec", "C": "exec", "X": "cancel", "D": "delete", "U": "replace"}
    names, out = {}, []
    for m in reference_messages(path):
        if m["type"] == "R":
            names[m["locate"]] = m["stock"]
        kind = kinds.get(m["type"])
        if kind is None or m["locate"] not in names:
            continue
        side = {"B": 0, "S": 1}.get(m["side"])
        out.append((m["seq"], m["time"], names[m["locate"]], kind, m["ref"], side, m["shares"], m["price"],
                    m["new_ref"]))
    return out, set(names.values())


def csv_records(path):
    data = open(path, "rb").read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    kinds = {b"B": "add0", b"S": "add0", b"C": "reduce_to", b"D": "delete", b"E": "exec_clamp",
             b"F": "fill"}
    out, seen, most = [], set(), header_fields(data)
    for no, line in data_lines(data):
        time, ticker, oid, typ, shares, price = parse_line(line, most)
        name = ticker.decode()
        seen.add(name)
        if typ in kinds:
            out.append((no, time, name, kinds[typ], oid, 0 if typ == b"B" else 1, shares, price, None))
    return out, seen


class _Own:
    def __init__(self, oid, book, side, price, qty, tif, row):
        self.oid, self.book, self.side, self.price, self.rem, self.tif = oid, book, side, price, qty, tif
        self.row, self.state, self.stamp = row, "live", None
        self.ahead_set, self.used0, self.ahead = {}, 0, None


class Reference:
    def __init__(self, instruments, levels=0, continuous=None):
        self.inst = sorted(instruments)
        self.levels = levels      # depth_with_own levels a side (0: no depth rows)
        self.continuous = continuous  # (from, to): feed times of continuous trading, call auctions outside
        self.books = {}           # ticker -> {ref: [side, price, shares, stamp]}
        self.used = {}            # (ticker, side, price) -> consumed shares
        self.own = {}             # (ticker, order id) -> _Own
        self.stamp = 0
        self.rows = {"fills": [], "events": [], "bbo": [], "depth": []}
        self.last_bbo = {}
        self.last_depth = {}
        self.counter = 0
        self.opened = set()       # books whose continuous trading started

    # -- helpers
    def _next_stamp(self):
        self.stamp += 1
        return self.stamp

    def level_shares(self, book, side, price):
        return sum(o[2] for o in self.books.get(book, {}).values() if o[0] == side and o[1] == price)

    def level_count(self, book, side, price):
        return sum(1 for o in self.books.get(book, {}).values() if o[0] == side and o[1] == price)

    def prices(self, book, side):
        ps = {o[1] for o in self.books.get(book, {}).values() if o[0] == side}
        return sorted(ps, reverse=(side == 0))

    def avail(self, book, side, price):
        return max(0, self.level_shares(book, side, price) - self.used.get((book, side, price), 0))

    def resting(self, book):
        return sorted((o for o in self.own.values() if o.book == book and o.state == "resting"), key=lambda o: o.stamp)

    def ahead_of(self, o):
        b = self.books.get(o.book, {})
        held = sum(b[r][2] for r, st in o.ahead_set.items() if r in b and b[r][3] == st)
        return max(0, held - o.used0)

    def auction(self, t):
        return self.continuous is not None and not self.continuous[0] <= t < self.continuous[1]

    def opens(self, book, t):
        """Continuous trading of book starts by time t and has not started yet."""
        return self.continuous is not None and book not in self.opened and t >= self.continuous[0]

    def open_cross(self, at, book):
        """At the start of continuous trading own orders resting through the feed's other side
        take it as on arrival: bids, then asks, best price first, then oldest."""
        self.opened.add(book)
        for side in (0, 1):
            mine = [o for o in self.resting(book) if o.side == side]
            for o in sorted(mine, key=lambda o: (-o.price if side == 0 else o.price, o.stamp)):
                self.take(at, o, False)
                if o.state == "resting":
                    break

    def _emit(self, table, at, row):
        seq, phase, time = at
        self.rows[table].append(((END if seq is None else seq, phase, time, self.inst.index(row[0]), self.counter), row))
        self.counter += 1

    def event(self, at, o_or_book, oid, kind, side, price, qty, rem, ahead, reason=None, row=None):
        self._emit("events", at, (o_or_book, oid, kind, side, price, qty, rem, ahead, reason, row))

    def fill(self, at, o, price, qty, taker, prio):
        o.rem -= qty
        self._emit("fills", at, (o.book, o.oid, o.side, price, qty, "taker" if taker else "maker", prio))
        ahead = o.ahead if o.state == "resting" else None
        self.event(at, o.book, o.oid, "filled" if o.rem == 0 else "partially_filled", o.side, o.price, qty, o.rem, ahead)
        if o.rem == 0:
            o.state = "done"

    def refresh_queue(self, at, book):
        """Own orders whose shares ahead changed get a queue event."""
        for o in self.resting(book):
            a = self.ahead_of(o)
            if a != o.ahead:
                o.ahead = a
                self.event(at, book, o.oid, "queue", o.side, o.price, 0, o.rem, a)

    def top(self, book, side):
        best = None
        for p in self.prices(book, side):
            q = self.level_shares(book, side, p) - self.used.get((book, side, p), 0)
            if q > 0 or (self.level_shares(book, side, p) == 0 and self.used.get((book, side, p), 0) == 0):
                best = [p, q]
                break
        for o in self.resting(book):
            if o.side != side:
                continue
            if best is None or (o.price > best[0] if side == 0 else o.price < best[0]):
                best = [o.price, o.rem]
            elif o.price == best[0]:
                best[1] += o.rem
        return (None, None) if best is None else tuple(best)

    def bbo(self, at, book):
        now = self.top(book, 0) + self.top(book, 1)
        if self.last_bbo.get(book, (None, None, None, None)) != now:
            self.last_bbo[book] = now
            self._emit("bbo", at, (book,) + now)
        if self.levels:
            self.depth(at, book)

    def depth_side(self, book, side):
        """The top levels a side with your orders: (price, shares, orders) per level, None
        for a missing one. A feed level shows its shares less the consumed ones (gone when
        nothing is left, unless it is a level of zero-share orders); your resting orders add
        their shares and count at their prices."""
        feed = {}
        for s, price, shares, _ in self.books.get(book, {}).values():
            if s == side:
                q = feed.setdefault(price, [0, 0])
                q[0] += shares
                q[1] += 1
        lv = {}
        for price, (q, n) in feed.items():
            u = self.used.get((book, side, price), 0)
            if q - u > 0 or (q == 0 and u == 0):
                lv[price] = [q - u, n]
        for o in self.resting(book):
            if o.side == side:
                x = lv.setdefault(o.price, [0, 0])
                x[0] += o.rem
                x[1] += 1
        out = []
        for price in sorted(lv, reverse=(side == 0))[:self.levels]:
            out += [price, lv[price][0], lv[price][1]]
        return out + [None, None, None] * (self.levels - len(out) // 3)

    def depth(self, at, book):
        now = tuple(self.depth_side(book, 0) + self.depth_side(book, 1))
        if self.last_depth.get(book, (None,) * (6 * self.levels)) != now:
            self.last_depth[book] = now
            self._emit("depth", at, (book,) + now)

    def feed_mid(self, book):
        bids, asks = self.prices(book, 0), self.prices(book, 1)
        return (bids[0] if bids else None, asks[0] if asks else None)

    # -- the feed
    def _remove_shares(self, at, book, ref, x, is_exec, remove, px=None):
        b = self.books[book]
        side, price, shares, stamp = b[ref]
        key = (book, side, price)
        if is_exec:
            budget, px = x, (px or price) if self.auction(at[2]) else price
            if self.auction(at[2]):     # own orders at better prices first: the auction executes them first
                better = [o for o in self.resting(book) if o.side == side and
                          (o.price > price if side == 0 else o.price < price)]
                for o in sorted(better, key=lambda o: (-o.price if side == 0 else o.price, o.stamp)):
                    f = min(budget, o.rem)
                    if f:
                        budget -= f
                        self.fill(at, o, px, f, False, True)
            for o in self.resting(book):
                if o.side != side or o.price != price or budget == 0:
                    continue
                if ref in o.ahead_set and o.ahead_set[ref] == stamp:
                    continue
                if o.ahead == 0:
                    f = min(budget, o.rem)
                    budget -= f
                    self.fill(at, o, px, f, False, True)
            self.used[key] = self.used.get(key, 0) - min(self.used.get(key, 0), x)
        b[ref][2] -= x
        if remove or b[ref][2] == 0:
            del b[ref]
        self.used[key] = min(self.used.get(key, 0), self.level_shares(book, side, price))
        self.refresh_queue(at, book)

    def _add(self, at, book, ref, side, price, shares):
        b = self.books.setdefault(book, {})
        b[ref] = [side, price, shares, self._next_stamp()]
        budget = shares
        feed = self.prices(book, 1 - side)       # the feed's orders it would meet
        if feed and (feed[0] >= price if side == 1 else feed[0] <= price) or self.auction(at[2]):
            budget = 0          # they did not trade with it: no matching then (a call auction)
        while budget > 0:
            cross = [o for o in self.resting(book) if o.side != side and
                     (o.price >= price if side == 1 else o.price <= price)]
            if not cross:
                break
            o = sorted(cross, key=lambda o: (-o.price if o.side == 0 else o.price, o.stamp))[0]
            f = min(budget, o.rem)
            budget -= f
            self.used[(book, side, price)] = self.used.get((book, side, price), 0) + f
            self.fill(at, o, o.price, f, False, False)
        self.refresh_queue(at, book)

    def record(self, rec):
        seq, time, book, kind, ref, side, shares, price, new_ref = rec
        at = (seq, 1, time)
        b = self.books.setdefault(book, {})
        if kind in ("add", "add0"):
            if not (kind == "add" and shares == 0):
                self._add(at, book, ref, side, price, shares)
        elif ref in b:
            have = b[ref][2]
            if kind in ("exec", "exec_clamp"):
                self._remove_shares(at, book, ref, min(shares, have), True, False, price)
            elif kind == "cancel":
                self._remove_shares(at, book, ref, min(shares, have), False, False)
            elif kind == "reduce_to":
                if shares < have:
                    self._remove_shares(at, book, ref, have - shares, False, False)
            elif kind == "delete":
                self._remove_shares(at, book, ref, have, False, True)
            elif kind == "fill":         # the order filled and left: an execution of its shares
                self._remove_shares(at, book, ref, have, True, True)
            elif kind == "replace":
                s = b[ref][0]
                self._remove_shares(at, book, ref, have, False, True)
                self._add(at, book, new_ref, s, price, shares)
        if book in self.inst:
            self.bbo(at, book)

    # -- your instructions
    def instruction(self, at, ins, mids):
        self.now = at[2]
        book, oid, act = ins["instrument"], ins["order_id"], ins["action"]
        mids[ins["row"]] = self.feed_mid(book)
        o = self.own.get((book, oid))
        reason = ins.get("reason")
        if reason is None and act == "new" and o is not None:
            reason = 3
        elif reason is None and act != "new" and (o is None or o.state != "resting"):
            reason = 1 if o is None else 2
        if reason is not None:
            side, price = (ins["side"], ins.get("price")) if act == "new" else (None, None)
            qty = 0 if act == "cancel" else max(ins.get("quantity") or 0, 0)
            self.event(at, book, oid, "rejected", side, price, qty, 0, None, REASONS[reason], ins["row"])
            return
        if act == "new":
            o = _Own(oid, book, ins["side"], None if ins["market"] else ins["price"], ins["quantity"], ins["tif"],
                     ins["row"])
            self.own[(book, oid)] = o
            if o.tif == 3 and sum(self.avail(book, 1 - o.side, p) for p in self.crossing(o, ins["market"])) < o.rem:
                del self.own[(book, oid)]       # turned away whole: no accepted event, its id stays free
                self.event(at, book, oid, "rejected", o.side, o.price, o.rem, 0, None, REASONS[8], o.row)
                return
            self.event(at, book, oid, "accepted", o.side, o.price, o.rem, o.rem, None, None, o.row)
            self.enter(at, o, ins["market"])
        elif act == "cancel":
            rem, o.rem, o.state = o.rem, 0, "done"
            self.event(at, book, oid, "cancelled", o.side, o.price, rem, 0, None, REASONS[10], ins["row"])
        else:
            price = ins["price"] if ins["price"] is not None else o.price
            qty = ins["quantity"] if ins["quantity"] is not None else o.rem
            if price == o.price and qty <= o.rem:
                o.rem = qty
                self.event(at, book, oid, "modified", o.side, price, qty, qty, o.ahead, None, ins["row"])
                return
            o.state, o.price, o.rem, o.ahead, o.row = "live", price, qty, None, ins["row"]
            self.event(at, book, oid, "modified", o.side, price, qty, qty, None, None, ins["row"])
            self.enter(at, o, False)

    def crossing(self, o, market):
        """The other side's prices an own order would take, best first (none in a call auction)."""
        if self.auction(self.now):
            return []
        return [p for p in self.prices(o.book, 1 - o.side)
                if market or (p <= o.price if o.side == 0 else p >= o.price)]

    def take(self, at, o, market):
        """The own order takes the visible liquidity within its limit, best price first."""
        book, other = o.book, 1 - o.side
        for p in self.prices(book, other):
            if o.rem == 0 or not (market or (p <= o.price if o.side == 0 else p >= o.price)):
                break
            f = min(self.avail(book, other, p), o.rem)
            if f > 0:
                self.used[(book, other, p)] = self.used.get((book, other, p), 0) + f
                self.fill(at, o, p, f, True, False)

    def enter(self, at, o, market):
        book = o.book
        if not self.auction(self.now):
            self.take(at, o, market)
        if o.rem == 0:
            return
        if market or o.tif in (2, 3):
            rem, o.rem, o.state = o.rem, 0, "done"
            self.event(at, book, o.oid, "cancelled", o.side, o.price, rem, 0, None, REASONS[11], o.row)
            return
        o.state, o.stamp = "resting", self._next_stamp()
        o.ahead_set = {r: v[3] for r, v in self.books.get(book, {}).items() if v[0] == o.side and v[1] == o.price}
        o.used0 = self.used.get((book, o.side, o.price), 0)
        o.ahead = self.ahead_of(o)
        self.event(at, book, o.oid, "rested", o.side, o.price, o.rem, o.rem, o.ahead, None, o.row)


def simulate(records, seen, instructions, day_end=True, levels=0, continuous=None):
    """``instructions``: dicts (row, arrival, probe, instrument, order_id, action, side, market,
    tif, price, quantity, reason) with side 'buy'/'sell', tif 0-3, reason a code or None;
    ``continuous``: the feed times (from, to) of continuous trading (None: all day).
    Returns (fills, events, bbo_with_own, mids at arrival, mids at probe, depth_with_own with
    ``levels`` a side: [] when 0) as lists of tuples."""
    ref = Reference({i["instrument"] for i in instructions}, levels, continuous)
    pending = {}
    for ins in sorted(instructions, key=lambda i: (i["arrival"], i["row"])):
        pending.setdefault(ins["instrument"], []).append(ins)
    probes = {b: sorted(v, key=lambda i: (i["probe"], i["row"])) for b, v in pending.items()}
    mids, later = {}, {}
    last_time = {}

    def before(book, t, seq):
        for ins in probes.get(book, []):
            if ins["row"] not in later and (t is None or ins["probe"] < t):
                later[ins["row"]] = ref.feed_mid(book)
        while pending.get(book) and (t is None or pending[book][0]["arrival"] < t):
            ins = pending[book].pop(0)
            start(book, ins["arrival"], seq)
            at = (seq, 0, ins["arrival"])
            ref.instruction(at, ins, mids)
            ref.bbo(at, book)

    def start(book, t, seq):
        if ref.opens(book, t):
            at = (seq, 0, continuous[0])
            ref.open_cross(at, book)
            ref.bbo(at, book)

    for rec in records:
        book = rec[2]
        if book in pending:
            before(book, rec[1], rec[0])
            start(book, rec[1], rec[0])
            ref.record(rec)
            last_time[book] = rec[1]
    for book in ref.inst:
        if book not in seen:
            for ins in pending.get(book, []):
                new = ins["action"] == "new"
                ref.event((None, 0, ins["arrival"]), book, ins["order_id"], "rejected",
                          ins["side"] if new else None, ins["price"] if new else None,
                          0 if ins["action"] == "cancel" else max(ins["quantity"] or 0, 0), 0, None, REASONS[6],
                          ins["row"])
                ref.rows["events"][-1] = ((END, 0, ins["arrival"], ref.inst.index(book), ins["row"]),
                                          ref.rows["events"][-1][1])
            continue
        last = max([last_time.get(book, 0)] + [i["arrival"] for i in pending.get(book, [])])
        before(book, None, None)
        if day_end:
            at = (None, 1, last)
            for o in ref.resting(book):
                if o.tif == 1:
                    rem, o.rem, o.state = o.rem, 0, "done"
                    ref.event(at, book, o.oid, "expired", o.side, o.price, rem, 0, None, REASONS[12])
            ref.bbo(at, book)

    def ordered(rows):
        big = 1 << 62
        return [(k[0] if k[0] is not None else None, k[2]) + r
                for k, r in sorted(rows, key=lambda kr: (big if kr[0][0] is None else kr[0][0],) + kr[0][1:])]
    return (ordered(ref.rows["fills"]), ordered(ref.rows["events"]), ordered(ref.rows["bbo"]), mids, later,
            ordered(ref.rows["depth"]))
