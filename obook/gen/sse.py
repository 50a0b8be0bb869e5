"""A deterministic synthetic Shanghai AX-SBE text log for tests and benchmarks.

Several securities on a few channels. The day: the opening call auction (orders from
09:15 and deletes; the book may cross, nothing trades) and its uncross at 09:25:00.00, the
best bid against the best ask while they cross, every trade (ExecType 'N') at one price a
security; continuous trading from 09:30: limit orders near the touch, deletes, and orders
that cross the book: their trades (ExecType 'B' or 'S': the aggressor's side) name the
resting order and the incoming one, and whatever the incoming order has left is added
after its trades, as the exchange publishes it; the closing call auction from 14:57 and its
uncross at 15:00:00.00. The order lines and the trade lines are each in BizIndex order but
interleaved with a random lag (file order is not event order; a line is at most ``lag``
events from its place), an uncross's trades before the call's last orders (those and the
trades ``AHEAD`` events at most), as the real log has them. A snapshot (10 levels a side
and the day tallies) of a security every few of its events, stamped with the second of its
last event; during a call auction the exchange's: the price the book would uncross at and
the shares it would match on the first level of both sides (see ``_call_snapshot``); one
of each security after each uncross.
"""

from __future__ import annotations

import heapq
import random

from . import open_output

SNAP_FIELDS = ("NumTrades", "TotalVolumeTrade", "TotalValueTrade", "LastPx", "HighPx", "LowPx")
#: bytes a message takes at least: on disk (plain, compressed) and in memory while the day is
#: generated (0: written as it goes); a little below what 1 M messages measure, so that a size
#: `obook gen` refuses for want of room could not have fitted
MIN_BYTES = (220, 25, 700)


class _Book:
    """One security's book: resting orders, a heap a side for the best (stale entries
    skipped), the shares at each price a side, and a list to pick a random order from."""

    def __init__(self, sec: int, channel: int, mid: int):
        self.sec, self.channel, self.mid = sec, channel, mid
        self.orders: dict[int, list] = {}       # order no -> [side, price, qty]
        self.heaps = {66: [], 83: []}           # (-price bid / price ask, order no)
        self.shares = {66: {}, 83: {}}          # price -> resting shares
        self.live: list[int] = []               # the resting order nos (random picks) ...
        self.where: dict[int, int] = {}         # ... and each one's place in it
        self.trades = self.volume = self.value = self.last = self.high = 0
        self.low = 0

    def add(self, no: int, side: int, price: int, qty: int) -> None:
        self.orders[no] = [side, price, qty]
        heapq.heappush(self.heaps[side], (-price if side == 66 else price, no))
        lv = self.shares[side]
        lv[price] = lv.get(price, 0) + qty
        self.where[no] = len(self.live)
        self.live.append(no)

    def reduce(self, no: int, q: int) -> None:
        """Take q shares off order no (removing it when none are left)."""
        v = self.orders[no]
        v[2] -= q
        lv = self.shares[v[0]]
        lv[v[1]] -= q
        if not lv[v[1]]:
            del lv[v[1]]
        if not v[2]:
            del self.orders[no]
            i, last = self.where.pop(no), self.live.pop()
            if last != no:
                self.live[i] = last
                self.where[last] = i

    def top(self, side: int):
        """(order no, [side, price, qty]) of the side's best order (price, then number), or None."""
        h = self.heaps[side]
        while h:
            no = h[0][1]
            if no in self.orders:
                return no, self.orders[no]
            heapq.heappop(h)
        return None

    def levels(self, side: int) -> list[tuple[int, int]]:
        """The ten best (price, shares) of a side: a walk from the best price in steps of the
        tick (prices are multiples of 10) while the levels are dense, else a sort."""
        lv, top = self.shares[side], self.top(side)
        if top is None:
            return []
        step = -10 if side == 66 else 10
        px, found = top[1][1], []
        for _ in range(60):
            if px in lv:
                found.append((px, lv[px]))
                if len(found) == 10:
                    return found
            px += step
        if len(found) == len(lv):
            return found
        keys = heapq.nlargest(10, lv) if side == 66 else heapq.nsmallest(10, lv)
        return [(p, lv[p]) for p in keys]


def _line(fields: dict) -> str:
    return "//" + " ".join(f"{k}={v}" for k, v in fields.items())


def _cs(h: int, m: int, s: int = 0) -> int:
    """A time of day in centiseconds since midnight."""
    return ((h * 60 + m) * 60 + s) * 100


T_LAST = _cs(15, 0)           # the events' latest time: 15:00:00.00, the closing uncross
OPEN_CALL = (_cs(9, 15), _cs(9, 25))      # the opening call auction: orders, then the uncross
CONTINUOUS = (_cs(9, 30), _cs(14, 57))    # continuous trading (its last events by 14:56:59.99)
CLOSE_CALL = (_cs(14, 57), T_LAST)        # the closing call auction
CALL_N = 78                   # ExecType 'N': a call auction's trade
#: an uncross's trade lines come before the last order lines of its call (the real log's
#: trade stream runs ahead: its uncross trades come before the call's orders), those order
#: lines and the trades at most this many events, well inside the replay's window of 4,096
#: lines (an uncross of more trades: its trades at their place)
AHEAD = 1500


def _time(t: int) -> int:
    """Centiseconds since midnight -> HHMMSScc."""
    s, cc = divmod(t, 100)
    return (s // 3600) * 1000000 + (s // 60 % 60) * 10000 + (s % 60) * 100 + cc


class _Day:
    """The day being generated: the books, the order and trade streams, the snapshots."""

    def __init__(self, securities: int, seed: int, channels: int):
        self.rnd = rnd = random.Random(seed)
        self.books = [_Book(600000 + 7 * i, 1 + i % channels, rnd.randrange(10_000, 200_000) * 10)
                      for i in range(securities)]
        self.biz = {c: 0 for c in range(1, channels + 1)}
        self.order_no = {c: 0 for c in range(1, channels + 1)}
        self.streams = {"o": [], "t": []}          # (place, line) in BizIndex order per kind
        self.snaps: list[tuple[int, str]] = []     # (position in the order stream, line)
        self.n = 0                                 # order and trade lines
        self.since = [0] * securities

    def emit(self, kind, b, fields, place=None):
        """An order ("o") or trade ("t") line of book b; ``place``: its position among the
        events for the interleaving (default: the event's own)."""
        c = b.channel
        self.biz[c] += 1
        fields["BizIndex"] = self.biz[c]
        at = len(self.streams["o"]) + len(self.streams["t"])
        self.streams[kind].append((at if place is None else place, _line({
            "SecurityIDSource": 101, "MsgType": 192 if kind == "o" else 191,
            "SecurityID": b.sec, "ChannelNo": c, **fields})))
        self.n += 1

    def trade(self, b, bid, offer, px, q, exec_type, tt, place=None):
        self.emit("t", b, {"BidApplSeqNum": bid, "OfferApplSeqNum": offer, "LastPx": px, "LastQty": q,
                           "ExecType": exec_type, "TransactTime": tt}, place)
        b.trades += 1
        b.volume += q
        b.value += px * q // 10
        b.last = px
        b.high = max(b.high, px)
        b.low = px if not b.low else min(b.low, px)

    def step(self, t: int, call: bool) -> None:
        """One random event of a random security at time t (centiseconds): a delete, or a
        new order; in continuous trading an order may cross the book and trade, in a call
        auction it rests (the book may cross). A snapshot every 15 events of a security."""
        rnd = self.rnd
        i = rnd.randrange(len(self.books))
        b = self.books[i]
        tt = _time(t)
        r = rnd.random()
        if r < 0.25 and b.orders:                  # delete a resting order
            no = rnd.choice(b.live)
            s, p, q = b.orders[no]
            b.reduce(no, q)
            self.emit("o", b, {"OrderNo": no, "Price": p, "OrderQty": q, "OrdType": 68, "Side": s,
                               "TransactTime": tt})
        else:
            side = 66 if rnd.random() < 0.5 else 83
            cross = r > 0.85
            tick = 10 * rnd.randrange(0 if cross else 1, 12)
            price = b.mid + (tick if (side == 66) == cross else -tick)
            qty = 1000 * rnd.randrange(1, 20) * 100
            self.order_no[b.channel] += 1
            no = self.order_no[b.channel]
            left = qty
            while left and cross and not call:
                best = b.top(83 if side == 66 else 66)
                if best is None or (best[1][1] > price if side == 66 else best[1][1] < price):
                    break
                o, v = best
                q = min(left, v[2])
                self.trade(b, no if side == 66 else o, o if side == 66 else no, v[1], q, side, tt)
                left -= q
                b.reduce(o, q)
            if left:
                b.add(no, side, price, left)
                self.emit("o", b, {"OrderNo": no, "Price": price, "OrderQty": left, "OrdType": 65,
                                   "Side": side, "TransactTime": tt})
            if b.last and not call:
                b.mid = b.last
        self.since[i] += 1
        if self.since[i] >= 15:
            self.since[i] = 0
            # stamped a second on (in a call auction: at most its last second)
            stamp = min(t + 100, (OPEN_CALL if t < OPEN_CALL[1] else CLOSE_CALL)[1] - 100) if call else t + 100
            self.snaps.append((len(self.streams["o"]), _call_snapshot(b, stamp) if call else _snapshot(b, stamp)))

    def call(self, start: int, end: int, until: int, ahead: int) -> None:
        """A call auction from ``start`` until ``end`` (centiseconds) of events until the
        day has ``until`` lines, then its uncross at ``end``, its trades placed before the
        call's last orders: those and the trades ``ahead`` events at most."""
        t, first = start, len(self.streams["o"]) + len(self.streams["t"])
        while self.n < until:
            t = _next_time(self.rnd, t, end - 1, until - self.n)
            self.step(t, True)
        uncross = [_matching(b) for b in self.books]
        # the trades and the orders after them: at most ``ahead`` lines (events) of the file
        ahead = max(0, min(ahead, len(self.streams["o"]) + len(self.streams["t"]) - first)
                    - sum(len(fills) for fills, _ in uncross))
        for b, (fills, px) in zip(self.books, uncross):
            at = len(self.streams["o"]) + len(self.streams["t"]) - ahead
            for bid, offer, q in fills:
                self.trade(b, bid, offer, px, q, CALL_N, _time(end), at)
                b.reduce(bid, q)
                b.reduce(offer, q)
            if fills:
                b.mid = px
            self.snaps.append((len(self.streams["o"]), _snapshot(b, end + 100)))

    def continuous(self, start: int, end: int, until: int) -> int:
        """Continuous trading from ``start`` (centiseconds) until the day has ``until``
        lines, its events at most at ``end``; returns the last event's time."""
        t = start
        while self.n < until:
            t = _next_time(self.rnd, t, end, until - self.n)
            self.step(t, False)
        return t


def _next_time(rnd, t: int, end: int, left: int) -> int:
    """The next event's time (centiseconds): 0-0.4 s after t, 0.2 s on average, closer
    together when ``left`` more events would not fit before ``end`` that way (never past it,
    so that no long stretch of events shares one time)."""
    return min(t + rnd.randrange(max(1, min(40, 2 * (end - t) // max(1, left)))), end)


def generate(events: int, securities: int = 4, seed: int = 0, channels: int = 2,
             lag: int = 20, ahead: int = AHEAD) -> list[str]:
    """The lines of a synthetic day of about ``events`` order and trade lines: the opening
    call auction (a tenth of them) and its uncross at 09:25, continuous trading from 09:30,
    the closing call auction from 14:57 (a twentieth) and its uncross at 15:00. An
    uncross's trades come before the call's last orders, those and the trades ``ahead``
    events at most (0: the trades at their place, as any line at most ``lag`` events from
    it)."""
    day = _Day(securities, seed, channels)
    day.call(*OPEN_CALL, max(1, events // 10), ahead)
    t = day.continuous(CONTINUOUS[0], CONTINUOUS[1] - 1, events - max(1, events // 20))
    day.call(max(t, CLOSE_CALL[0]), CLOSE_CALL[1], events, ahead)
    return _interleave(day.streams["o"], day.streams["t"], day.snaps, day.rnd, lag)


def _indicative(b: _Book) -> tuple[int, int]:
    """(price, shares) of the uncross a call auction's book would make: the best bid level
    against the best ask level while they cross; its price the book's reference (its mid)
    brought inside [the last crossing ask, bid]; (0, 0) when the book does not cross."""
    top_b, top_a = b.top(66), b.top(83)
    if top_b is None or top_a is None or top_b[1][1] < top_a[1][1]:
        return 0, 0
    bids = sorted((p for p in b.shares[66] if p >= top_a[1][1]), reverse=True)
    asks = sorted(p for p in b.shares[83] if p <= top_b[1][1])
    i = j = matched = 0
    lb, la = b.shares[66][bids[0]], b.shares[83][asks[0]]
    while True:
        q = min(lb, la)
        matched += q
        lb, la = lb - q, la - q
        last = asks[j], bids[i]
        if not lb:
            i += 1
            if i == len(bids):
                break
            lb = b.shares[66][bids[i]]
        if not la:
            j += 1
            if j == len(asks):
                break
            la = b.shares[83][asks[j]]
        if bids[i] < asks[j]:
            break
    return min(max(b.mid, last[0]), last[1]), matched


def _matching(b: _Book) -> tuple[list[tuple[int, int, int]], int]:
    """The uncross of a call auction's book: the (buy order, sell order, shares) fills of
    the best bid against the best ask (price, then order number) while they cross, and
    their one price (:func:`_indicative`)."""
    px, matched = _indicative(b)
    bids = sorted((-v[1], no) for no, v in b.orders.items() if v[0] == 66 and v[1] >= px) if matched else []
    asks = sorted((v[1], no) for no, v in b.orders.items() if v[0] == 83 and v[1] <= px) if matched else []
    fills, i, j = [], 0, 0
    left = {}
    while matched:
        bid, ask = bids[i][1], asks[j][1]
        lb, la = left.get(bid, b.orders[bid][2]), left.get(ask, b.orders[ask][2])
        q = min(lb, la)
        fills.append((bid, ask, q))
        left[bid], left[ask] = lb - q, la - q
        matched -= q
        i += not left[bid]
        j += not left[ask]
    return fills, px


def _call_snapshot(b: _Book, t: int) -> str:
    """A snapshot during a call auction as the exchange publishes it: the first level of
    both sides holds the price the book would uncross at and the shares it would match,
    the second level of the side with shares left over at that price their total (price
    0); every level is empty when the book does not cross."""
    px, matched = _indicative(b)
    levels = {66: [], 83: []}
    if matched:
        for side in (66, 83):
            at = sum(v for p, v in b.shares[side].items() if (p >= px if side == 66 else p <= px))
            levels[side] = [(px, matched), (0, at - matched)]
    return _snapshot(b, t, levels)


def _snapshot(b: _Book, t: int, levels: dict | None = None) -> str:
    """A snapshot line stamped second t // 100: the book's 10 levels a side (or ``levels``:
    side -> [(price, shares)]) and the day tallies."""
    s = t // 100
    f = {"SecurityIDSource": 101, "MsgType": 111, "SecurityID": b.sec, "ChannelNo": 0,
         "NumTrades": b.trades, "TotalVolumeTrade": b.volume, "TotalValueTrade": b.value,
         "LastPx": b.last, "HighPx": b.high, "LowPx": b.low,
         "DataTimeStamp": (s // 3600) * 10000 + (s // 60 % 60) * 100 + s % 60}
    for name, side in (("Bid", 66), ("Ask", 83)):
        lv = (b.levels(side) if levels is None else levels[side]) + [(0, 0)] * 10
        for k in range(10):
            f[f"{name}Level[{k}].Price"] = lv[k][0]
            f[f"{name}Level[{k}].Qty"] = lv[k][1]
    return _line(f)


def _interleave(orders, trades, snaps, rnd, lag) -> list[str]:
    """The two streams of (place, line), each in its own order, mixed so that a line comes
    at most ``lag`` events after a line of the other stream placed after it: the next line
    is the earlier placed of the two streams' heads, or (half the time) the other head when
    it is within ``lag`` events of it. A line's place is its event's position, but for an
    uncross's trades (placed before the call's last orders)."""
    out, i, j, s = [], 0, 0, 0
    while i < len(orders) or j < len(trades):
        if j >= len(trades):
            take_o = True
        elif i >= len(orders):
            take_o = False
        else:
            first_o = orders[i][0] < trades[j][0]
            near = abs(orders[i][0] - trades[j][0]) <= lag
            take_o = first_o != (near and rnd.random() < 0.5)
        if take_o:
            out.append(orders[i][1])
            i += 1
            while s < len(snaps) and snaps[s][0] <= i - lag:
                out.append(snaps[s][1])
                s += 1
        else:
            out.append(trades[j][1])
            j += 1
    out += [line for _, line in snaps[s:]]
    return out


def write_sse(path, events: int = 10_000, securities: int = 4, seed: int = 0) -> int:
    """Write the synthetic log (gzipped when ``path`` ends in .gz); returns its number of lines."""
    lines = generate(events, securities, seed)
    with open_output(path) as f:
        f.write(("\n".join(lines) + "\n").encode())
    return len(lines)
