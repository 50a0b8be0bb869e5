"""A deterministic synthetic Shanghai AX-SBE text log for tests and benchmarks.

Several securities on a few channels; limit orders near the touch, deletes, and orders
that cross the book: their trades (ExecType 'B' or 'S': the aggressor's side) name the
resting order and the incoming one, and whatever the incoming order has left is added
after its trades, as the exchange publishes it. The order lines and the trade lines are
each in BizIndex order but interleaved with a random lag (file order is not event
order; a line is at most ``lag`` events from its place). A snapshot (10 levels a side
and the day tallies) of a security every few of its events, stamped with the second of
its last event.
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


T_LAST = 15 * 3600 * 100      # the events' latest time (centiseconds since midnight): 15:00:00.00


def _time(t: int) -> int:
    """Centiseconds since midnight -> HHMMSScc."""
    s, cc = divmod(t, 100)
    return (s // 3600) * 1000000 + (s // 60 % 60) * 10000 + (s % 60) * 100 + cc


def generate(events: int, securities: int = 4, seed: int = 0, channels: int = 2,
             lag: int = 20) -> list[str]:
    """The lines of a synthetic log of about ``events`` order and trade lines."""
    rnd = random.Random(seed)
    books = [_Book(600000 + 7 * i, 1 + i % channels, rnd.randrange(10_000, 200_000) * 10)
             for i in range(securities)]
    biz = {c: 0 for c in range(1, channels + 1)}
    order_no = {c: 0 for c in range(1, channels + 1)}
    streams = {"o": [], "t": []}                  # (line, ...) in BizIndex order per kind
    snaps: list[tuple[int, str]] = []             # (position in the order stream, line)
    t = (9 * 3600 + 30 * 60) * 100
    n = 0
    since = [0] * securities

    def emit(kind, b, fields):
        c = b.channel
        biz[c] += 1
        fields["BizIndex"] = biz[c]
        streams[kind].append((len(streams["o"]) + len(streams["t"]),     # the event's position
                              _line({"SecurityIDSource": 101, "MsgType": 192 if kind == "o" else 191,
                                     "SecurityID": b.sec, "ChannelNo": c, **fields})))

    while n < events:
        i = rnd.randrange(securities)
        b = books[i]
        t = min(t + rnd.randrange(0, 40), T_LAST)     # a long day's last events share the close's time
        tt = _time(t)
        r = rnd.random()
        if r < 0.25 and b.orders:                  # delete a resting order
            no = rnd.choice(b.live)
            s, p, q = b.orders[no]
            b.reduce(no, q)
            emit("o", b, {"OrderNo": no, "Price": p, "OrderQty": q, "OrdType": 68, "Side": s,
                          "TransactTime": tt})
            n += 1
        else:
            side = 66 if rnd.random() < 0.5 else 83
            cross = r > 0.85
            tick = 10 * rnd.randrange(0 if cross else 1, 12)
            price = b.mid + (tick if (side == 66) == cross else -tick)
            qty = 1000 * rnd.randrange(1, 20) * 100
            order_no[b.channel] += 1
            no = order_no[b.channel]
            left = qty
            while left and cross:
                best = b.top(83 if side == 66 else 66)
                if best is None or (best[1][1] > price if side == 66 else best[1][1] < price):
                    break
                o, v = best
                q = min(left, v[2])
                emit("t", b, {"BidApplSeqNum": no if side == 66 else o,
                              "OfferApplSeqNum": o if side == 66 else no, "LastPx": v[1], "LastQty": q,
                              "ExecType": side, "TransactTime": tt})
                n += 1
                b.trades += 1
                b.volume += q
                b.value += v[1] * q // 10
                b.last = v[1]
                b.high = max(b.high, v[1])
                b.low = v[1] if not b.low else min(b.low, v[1])
                left -= q
                b.reduce(o, q)
            if left:
                b.add(no, side, price, left)
                emit("o", b, {"OrderNo": no, "Price": price, "OrderQty": left, "OrdType": 65,
                              "Side": side, "TransactTime": tt})
                n += 1
            if b.last:
                b.mid = b.last
        since[i] += 1
        if since[i] >= 15:
            since[i] = 0
            snaps.append((len(streams["o"]), _snapshot(b, t + 100)))   # stamped a second on
    return _interleave(streams["o"], streams["t"], snaps, rnd, lag)


def _snapshot(b: _Book, t: int) -> str:
    s = t // 100
    f = {"SecurityIDSource": 101, "MsgType": 111, "SecurityID": b.sec, "ChannelNo": 0,
         "NumTrades": b.trades, "TotalVolumeTrade": b.volume, "TotalValueTrade": b.value,
         "LastPx": b.last, "HighPx": b.high, "LowPx": b.low,
         "DataTimeStamp": (s // 3600) * 10000 + (s // 60 % 60) * 100 + s % 60}
    for name, side in (("Bid", 66), ("Ask", 83)):
        lv = b.levels(side) + [(0, 0)] * 10
        for k in range(10):
            f[f"{name}Level[{k}].Price"] = lv[k][0]
            f[f"{name}Level[{k}].Qty"] = lv[k][1]
    return _line(f)


def _interleave(orders, trades, snaps, rnd, lag) -> list[str]:
    """The two streams of (event position, line), each in its own order, mixed so that a
    line comes at most ``lag`` events after a line of the other stream that follows it:
    the next line is the earlier event of the two streams' heads, or (half the time) the
    other head when it is within ``lag`` events of it."""
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
