"""A deliberately simple pure-Python matching engine: the reference for obook.match.

Books are dicts price -> list of orders (FIFO), searched by sorting keys every time;
nothing is clever. Input rows are dicts with the canonical column values (action
new/modify/cancel, side buy/sell, type limit/market, tif GTC/DAY/IOC/FOK, None where
empty). Output: lists of tuples in the column order of obook's tables.
"""

from __future__ import annotations

REASONS = {
    "unknown_id": "unknown order id", "not_live": "order is not live (filled, cancelled or expired)",
    "duplicate": "duplicate order id", "quantity": "quantity must be positive",
    "tick": "price is not a multiple of the tick", "instrument": "unknown instrument",
    "no_price": "limit order without a price", "fok": "fill-or-kill order cannot fill completely",
    "stp": "self-trade prevention", "request": "cancel request",
    "unfilled": "unfilled rest of an IOC, FOK or market order", "end": "end of session",
}
OTHER = {"buy": "sell", "sell": "buy"}


class Book:
    def __init__(self):
        self.levels = {"buy": {}, "sell": {}}     # price -> [order dicts]
        self.status = {}                          # id -> "live" / "done"

    def prices(self, side):
        """Prices of a side, best first."""
        return sorted(self.levels[side], reverse=(side == "buy"))

    def queue(self, side):
        for p in self.prices(side):
            for o in self.levels[side][p]:
                yield o

    def top(self, side, n):
        out = []
        for p in self.prices(side)[:n]:
            lv = self.levels[side][p]
            out.append((p, sum(o["qty"] for o in lv), len(lv)))
        return out + [(None, None, None)] * (n - len(out))

    def remove(self, o):
        lv = self.levels[o["side"]][o["price"]]
        lv.remove(o)
        if not lv:
            del self.levels[o["side"]][o["price"]]


def crosses(side, limit, price):
    return limit is None or (price <= limit if side == "buy" else price >= limit)


class Reference:
    def __init__(self, tick=1, stp=None, instruments=None, levels=10):
        self.tick, self.stp, self.known, self.levels = tick, stp, instruments, levels
        self.books, self.fills, self.events, self.bbo, self.depth = {}, [], [], [], []
        self.last_bbo, self.last_depth = {}, {}

    def ev(self, r, oid, kind, side, price, qty, remaining, qpos=None, reason=None):
        self.events.append((r["seq"], r["time"], r["instrument"], oid, kind, side, price, qty, remaining,
                            qpos, REASONS[reason] if reason else None))

    def run(self, rows):
        rows = [dict(r, seq=i + 1) for i, r in enumerate(rows)]
        for inst in sorted({r["instrument"] for r in rows}):
            self.books[inst] = Book()
        top = {}
        for r in rows:      # ids are assigned after the largest a new order gives
            if r["action"] == "new" and r.get("order_id") is not None:
                top[r["instrument"]] = max(top.get(r["instrument"], 0), r["order_id"])
        for r in rows:
            if r["action"] == "new" and r.get("order_id") is None:
                top[r["instrument"]] = top.get(r["instrument"], 0) + 1
                r["order_id"] = top[r["instrument"]]
        for r in rows:
            {"new": self.new, "modify": self.modify, "cancel": self.cancel}[r["action"]](r)
            self.quotes(r)
        end = {"seq": len(rows) + 1, "time": max((r["time"] for r in rows), default=0)}
        for inst, book in self.books.items():
            e = dict(end, instrument=inst)
            for p in sorted(set(book.levels["buy"]) | set(book.levels["sell"])):
                for side in ("buy", "sell"):
                    for o in list(book.levels[side].get(p, [])):
                        if o["tif"] == "DAY":
                            book.remove(o)
                            book.status[o["id"]] = "done"
                            self.ev(e, o["id"], "expired", side, p, o["qty"], 0, reason="end")
            self.quotes(e)
        return self

    def quotes(self, r):
        book = self.books[r["instrument"]]
        b, a = book.top("buy", 1)[0], book.top("sell", 1)[0]
        q = b + a
        if self.last_bbo.get(r["instrument"], (None,) * 6) != q:
            self.last_bbo[r["instrument"]] = q
            self.bbo.append((r["seq"], r["time"], r["instrument"]) + q)
        d = tuple(x for lv in book.top("buy", self.levels) + book.top("sell", self.levels) for x in lv)
        if self.last_depth.get(r["instrument"], (None,) * len(d)) != d:
            self.last_depth[r["instrument"]] = d
            self.depth.append((r["seq"], r["time"], r["instrument"]) + d)

    def check(self, r):
        """The reason a row is turned away before looking at the book."""
        new = r["action"] == "new"
        market = new and r.get("type") == "market"
        if self.known is not None and r["instrument"] not in self.known:
            return "instrument"
        qty = r.get("quantity")
        if (new or (r["action"] == "modify" and qty is not None)) and qty <= 0:
            return "quantity"
        if new and not market and r.get("price") is None:
            return "no_price"
        if r["action"] != "cancel" and not market and r.get("price") is not None and r["price"] % self.tick:
            return "tick"
        return None

    def available(self, book, side, limit, qty, owner):
        got = 0
        for o in book.queue(OTHER[side]):
            if not crosses(side, limit, o["price"]):
                break
            if self.stp and owner and o["owner"] == owner:
                if self.stp == "cancel_incoming":
                    break
                continue
            got += o["qty"]
        return got >= qty

    def take(self, r, book, oid, side, limit, qty, owner):
        """Match; returns (left, cut by self-trade prevention)."""
        while qty > 0:
            opp = book.prices(OTHER[side])
            if not opp or not crosses(side, limit, opp[0]):
                break
            m = book.levels[OTHER[side]][opp[0]][0]
            if self.stp and owner and m["owner"] == owner:
                if self.stp == "cancel_incoming":
                    return qty, True
                book.remove(m)
                book.status[m["id"]] = "done"
                self.ev(r, m["id"], "cancelled", m["side"], m["price"], m["qty"], 0, reason="stp")
                continue
            q = min(qty, m["qty"])
            qty -= q
            m["qty"] -= q
            self.fills.append((r["seq"], r["time"], r["instrument"], m["price"], q, oid, m["id"], side))
            if m["qty"] == 0:
                book.remove(m)
                book.status[m["id"]] = "done"
                self.ev(r, m["id"], "filled", m["side"], m["price"], q, 0)
            else:
                self.ev(r, m["id"], "partially_filled", m["side"], m["price"], q, m["qty"])
        return qty, False

    def finish(self, r, book, o, qty, left, cut, market):
        shown = None if market else o["price"]
        if left < qty:
            self.ev(r, o["id"], "filled" if left == 0 else "partially_filled", o["side"], shown, qty - left, left)
        if left == 0 or cut or market or o["tif"] in ("IOC", "FOK"):
            book.status[o["id"]] = "done"
            if left:
                self.ev(r, o["id"], "cancelled", o["side"], shown, left, 0, reason="stp" if cut else "unfilled")
            return
        o["qty"] = left
        book.levels[o["side"]].setdefault(o["price"], []).append(o)
        book.status[o["id"]] = "live"
        self.ev(r, o["id"], "rested", o["side"], o["price"], left, left, len(book.levels[o["side"]][o["price"]]))

    def new(self, r):
        book = self.books[r["instrument"]]
        market = r.get("type") == "market"
        tif = r.get("tif") or "GTC"
        reason = self.check(r)
        shown = None if market else r.get("price")      # a rejected order's too: the price sent
        if reason is None and r["order_id"] in book.status:
            reason = "duplicate"
        if reason is None and tif == "FOK" and not self.available(
                book, r["side"], None if market else r["price"], r["quantity"], r.get("owner") or 0):
            reason = "fok"
        if reason:
            self.ev(r, r["order_id"], "rejected", r["side"], shown, r["quantity"], 0, reason=reason)
            return
        self.ev(r, r["order_id"], "accepted", r["side"], shown, r["quantity"], r["quantity"])
        o = {"id": r["order_id"], "side": r["side"], "price": r.get("price"), "qty": r["quantity"], "tif": tif,
             "owner": r.get("owner") or 0}
        left, cut = self.take(r, book, o["id"], o["side"], None if market else o["price"], o["qty"], o["owner"])
        self.finish(r, book, o, o["qty"], left, cut, market)

    def find(self, r):
        """The live order a modify / cancel names, or None after a rejected event."""
        book = self.books[r["instrument"]]
        reason = self.check(r)
        oid = r["order_id"]
        if reason is None and book.status.get(oid) != "live":
            reason = "unknown_id" if oid not in book.status else "not_live"
        if reason:
            qty = r.get("quantity") if r["action"] == "modify" else 0
            self.ev(r, oid, "rejected", None, None, max(qty or 0, 0), 0, reason=reason)
            return None
        return next(o for o in book.queue("buy") if o["id"] == oid) if any(
            o["id"] == oid for o in book.queue("buy")) else next(o for o in book.queue("sell") if o["id"] == oid)

    def modify(self, r):
        o = self.find(r)
        if o is None:
            return
        book = self.books[r["instrument"]]
        np_ = o["price"] if r.get("price") is None else r["price"]
        nq = o["qty"] if r.get("quantity") is None else r["quantity"]
        self.ev(r, o["id"], "accepted", o["side"], np_, nq, o["qty"])
        if np_ == o["price"] and nq <= o["qty"]:
            o["qty"] = nq
            self.ev(r, o["id"], "modified", o["side"], np_, nq, nq)
            return
        book.remove(o)
        o["price"] = np_
        left, cut = self.take(r, book, o["id"], o["side"], np_, nq, o["owner"])
        self.finish(r, book, o, nq, left, cut, False)

    def cancel(self, r):
        o = self.find(r)
        if o is None:
            return
        book = self.books[r["instrument"]]
        book.remove(o)
        book.status[o["id"]] = "done"
        self.ev(r, o["id"], "cancelled", o["side"], o["price"], o["qty"], 0, reason="request")
