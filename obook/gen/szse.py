"""A deterministic synthetic Shenzhen Level-2 day for tests and benchmarks,
written as the AX-SBE text log, as AX-SBE binary records, or as vendor CSV files.

Several securities (main board 000xxx and ChiNext 300xxx) on two channels, each channel
numbering its orders and executions from 1. The day: an opening call auction (orders
accumulate, the book may cross, cancels) uncrossed by fills of resting orders at one
price; then continuous trading: limit orders near the touch and crossing ones (their
fills follow them at once), market orders (their rest either cancelled or resting at
the first fill's price; with no liquidity, cancelled), own-best orders on an empty own
side (cancelled by the exchange), cancels of resting orders, securities-lending orders
(not part of the book); a thin book with asks only, where own-best buys are cancelled;
a closing call auction and its uncross; a few snapshots.

The ChiNext price cage on the 300xxx securities in continuous trading: a limit
buy above 102% of the buy reference (best ask, best bid, last trade) or a sell below 98%
of the sell reference is held; after each step the held orders the cage now admits enter
(first held first) and trade at once against the book if they cross it (their fills
follow, naming them). Some are placed just outside the cage (most enter later), some far
outside (they never do); held orders are cancelled too. A step whose entries would trade
against the order the step itself placed is not taken (the feed could not tell that from
an incoming order's fills).
"""

from __future__ import annotations

import heapq
import random
import struct
from pathlib import Path

DATE = 20240105_000000000
HEADER = struct.Struct("<BBH9sHQB")
ORDER = struct.Struct("<iqbbQ2x")
TRADE = struct.Struct("<qqiqbQ3x")
#: bytes a message takes at least: on disk (plain, compressed) and in memory while the day is
#: generated (0: written as it goes); a little below what 1 M messages measure, so that a size
#: `obook gen` refuses for want of room could not have fitted
MIN_BYTES_TEXT = (180, 15, 600)      # the text log
MIN_BYTES_BINARY = (50, 9, 600)     # AX-SBE binary records
MIN_BYTES_VENDOR = (45, 45, 350)    # vendor CSV files


def _ms(h, m, s=0):
    return ((h * 60 + m) * 60 + s) * 1000


def date_stamp(date: str | None) -> int:
    """YYYY-MM-DD as the TransactTime of its midnight (YYYYMMDD000000000); None: ``DATE``."""
    if date is None:
        return DATE
    import datetime as dt

    return int(dt.date.fromisoformat(date).strftime("%Y%m%d")) * 10**9


def _stamp(ms: int, day: int = DATE) -> int:
    s, milli = divmod(ms, 1000)
    return day + ((s // 3600) * 10000 + (s // 60 % 60) * 100 + s % 60) * 1000 + milli


class _Sec:
    """One security's book: resting orders, a heap a side for the best, a list to pick a
    random order from, and the journal that undoes a step (each operation O(log n))."""

    def __init__(self, sec, channel, mid):
        self.sec, self.channel, self.mid = sec, channel, mid
        self.orders: dict[int, list] = {}   # appl -> [side '1'/'2', price, qty, priority]
        self.heaps = {"1": [], "2": []}     # (-price bid / price ask, priority, appl); stale entries skipped
        self.live: list[int] = []           # the resting appls (random picks), ...
        self.where: dict[int, int] = {}     # ... and each one's place in it
        self.held: dict[int, list] = {}     # price cage: appl -> [side, price, qty], first held first
        self.last = None                    # last trade price
        self.caged = sec[:3] in ("300", "301")
        self.journal: list | None = None    # while a step may be undone: what it changed

    def rest(self, a, side, price, qty, prio):
        self.orders[a] = [side, price, qty, prio]
        heapq.heappush(self.heaps[side], (-price if side == "1" else price, prio, a))
        self.where[a] = len(self.live)
        self.live.append(a)
        if self.journal is not None:
            self.journal.append(("rest", a))

    def remove(self, a) -> list:
        o = self.orders.pop(a)
        i, last = self.where.pop(a), self.live.pop()
        if last != a:
            self.live[i] = last
            self.where[last] = i
        if self.journal is not None:
            self.journal.append(("removed", a, o))
        return o

    def reduce(self, o, q) -> None:
        if self.journal is not None:
            self.journal.append(("qty", o, o[2]))
        o[2] -= q

    def hold(self, a, rec) -> None:
        self.held[a] = rec
        if self.journal is not None:
            self.journal.append(("held", a))

    def release(self, a) -> list:
        rec = self.held.pop(a)
        if self.journal is not None:
            self.journal.append(("released", a, rec))
        return rec

    def top(self, side):
        """(appl, order) of the side's best resting order (price, then time), or None."""
        h = self.heaps[side]
        while h:
            _, prio, a = h[0]
            o = self.orders.get(a)
            if o is not None and o[3] == prio:
                return a, o
            heapq.heappop(h)
        return None

    def undo(self) -> None:
        """Undo what the journal holds (newest first) and stop journaling."""
        journal, self.journal = self.journal, None
        for entry in reversed(journal):
            kind, a = entry[0], entry[1]
            if kind == "rest":
                self.remove(a)
            elif kind == "removed":
                o = entry[2]
                self.rest(a, o[0], o[1], o[2], o[3])
                self.orders[a] = o            # the same list: later entries refer to it
            elif kind == "qty":
                a[2] = entry[2]
            elif kind == "held":
                del self.held[a]
            else:
                self.held[a] = entry[2]
        self.held = dict(sorted(self.held.items()))     # appls grow with time: first held first


class _Day:
    def __init__(self, securities, seed, day=DATE):
        self.day = day
        self.rnd = random.Random(seed)
        self.secs = [_Sec(f"{300000 + i if i % 3 == 2 else i + 1:06d}", 2011 + i % 2,
                          self.rnd.randrange(50_000, 500_000) // 100 * 100) for i in range(securities)]
        self.thin = _Sec("300999", 2012, 100_000)      # asks only: own-best buys are cancelled
        self.appl = {2011: 0, 2012: 0}
        self.prio = 0
        self.out: list[dict] = []
        self.t = _ms(9, 15)
        self.t_max = _ms(9, 25) - 1      # the phase's last millisecond
        self.placed = None               # the order the current step rested (price cage)

    def _rec(self, s, **f):
        self.appl[s.channel] += 1
        f.update(SecurityID=s.sec, ChannelNo=s.channel, ApplSeqNum=self.appl[s.channel],
                 TransactTime=_stamp(self.t, self.day))
        self.out.append(f)
        return self.appl[s.channel]

    def order(self, s, side, typ, price, qty, rest=True):
        a = self._rec(s, MsgType=192, Price=price, OrderQty=qty, Side=ord(side), OrdType=ord(typ))
        if rest and side in "12":
            self.prio += 1
            s.rest(a, side, price, qty, self.prio)
            self.placed = a
        return a

    def cage_ref(self, s, side):
        """The cage's reference for an order of side: the other side's best, its own, the last trade."""
        for sd in ("2", "1") if side == "1" else ("1", "2"):
            b = self.best(s, sd)
            if b is not None:
                return b
        return s.last

    def outside(self, s, side, price):
        ref = self.cage_ref(s, side)
        if ref is None:
            return False
        return price * 100 > ref * 102 if side == "1" else price * 100 < ref * 98

    def hold(self, s, side, price, qty):
        """A limit order held by the cage (no fills follow it)."""
        a = self.order(s, side, "2", price, qty, rest=False)
        s.hold(a, [side, price, qty])

    def enter_held(self, s):
        """Held orders the cage now admits enter, first held first, trading what they cross.
        False when one would trade against the order this step placed."""
        while True:
            for a, (side, price, qty) in s.held.items():
                if not self.outside(s, side, price):
                    break
            else:
                return True
            s.release(a)
            opp = s.top("2" if side == "1" else "1")
            if opp and (opp[1][1] <= price if side == "1" else opp[1][1] >= price) and opp[0] == self.placed:
                return False
            left, _ = self.match(s, a, side, price, qty)
            if left:
                self.prio += 1
                s.rest(a, side, price, left, self.prio)

    def fill(self, s, bid, offer, px, qty):
        s.last = px
        self._rec(s, MsgType=191, BidApplSeqNum=bid, OfferApplSeqNum=offer, LastPx=px, LastQty=qty,
                  ExecType=ord("F"))

    def cancel(self, s, a, qty, side):
        self._rec(s, MsgType=191, BidApplSeqNum=a if side == "1" else 0,
                  OfferApplSeqNum=a if side == "2" else 0, LastPx=0, LastQty=qty, ExecType=ord("4"))

    def best(self, s, side):
        top = s.top(side)
        return top[1][1] if top else None

    def match(self, s, a, side, limit, qty):
        """Fills of incoming order a against the book; returns (left, first fill price)."""
        first = None
        other = "2" if side == "1" else "1"
        while qty:
            top = s.top(other)
            if top is None or (limit is not None and (top[1][1] > limit if side == "1" else top[1][1] < limit)):
                break
            k, o = top
            q = min(qty, o[2])
            self.fill(s, a if side == "1" else k, k if side == "1" else a, o[1], q)
            first = o[1] if first is None else first
            qty -= q
            s.reduce(o, q)
            if not o[2]:
                s.remove(k)
        return qty, first

    def uncross(self, s):
        bid, ask = self.best(s, "1"), self.best(s, "2")
        if bid is None or ask is None or bid < ask:
            return
        px = ask
        while True:       # best bid against best ask while they cross, all at one price
            b, a = s.top("1"), s.top("2")
            if b is None or a is None:
                break
            (kb, ob), (ka, oa) = b, a
            if ob[1] < oa[1]:
                break
            q = min(ob[2], oa[2])
            self.fill(s, kb, ka, px, q)
            for k, o in ((kb, ob), (ka, oa)):
                s.reduce(o, q)
                if not o[2]:
                    s.remove(k)

    def step(self, auction: bool):
        rnd = self.rnd
        s = rnd.choice(self.secs)
        self.t = min(self.t + rnd.randrange(0, 30), self.t_max)
        caged = s.caged and not auction
        undoable = caged and bool(s.held)   # a step whose entries trade against its own order is not taken
        if undoable:
            saved = (s.last, s.mid, len(self.out), dict(self.appl), self.prio, rnd.getstate())
            s.journal = []
        self.placed = None
        self._step(s, auction, caged)
        if undoable and s.held and not self.enter_held(s):
            s.undo()
            s.last, s.mid, n, self.appl, self.prio, state = saved
            del self.out[n:]
            rnd.setstate(state)
            rnd.random()                   # another draw next time
        s.journal = None

    def _step(self, s, auction, caged):
        rnd = self.rnd
        side = rnd.choice("12")
        tick = 100 * rnd.randrange(0, 10)
        qty = 100 * rnd.randrange(1, 30)
        r = rnd.random()
        if r < 0.2 and (s.orders or s.held):
            if s.held and (not s.orders or rnd.random() < 0.2):    # a held order (price cage)
                a = rnd.choice(list(s.held))
                o = s.release(a)
            else:
                a = rnd.choice(s.live)
                o = s.remove(a)
            self.cancel(s, a, o[2], o[0])
        elif caged and r < 0.26 and self.cage_ref(s, side) is not None:   # outside the cage
            ref = self.cage_ref(s, side)
            far = 100 * (rnd.choice((1, 2, 3)) if rnd.random() < 0.8 else 200)
            price = ref * 102 // 100 + far if side == "1" else ref * 98 // 100 - far
            self.hold(s, side, max(100, price), qty)
        elif auction or r < 0.6:
            price = s.mid + (-tick if side == "1" else tick) + (100 * rnd.randrange(0, 4) if auction else 0)
            opp = None if auction else self.best(s, "2" if side == "1" else "1")
            if opp is not None:       # passive in continuous trading: never at or through the other side
                price = min(price, opp - 100) if side == "1" else max(price, opp + 100)
            if caged and self.outside(s, side, max(100, price)):
                self.hold(s, side, max(100, price), qty)
            else:
                self.order(s, side, "2", max(100, price), qty)
        elif r < 0.75:                                      # crossing limit order
            price = s.mid + (tick if side == "1" else -tick)
            if caged and self.outside(s, side, max(100, price)):
                self.hold(s, side, max(100, price), qty)
                return
            a = self.order(s, side, "2", max(100, price), qty, rest=False)
            left, _ = self.match(s, a, side, price, qty)
            if left:
                self.prio += 1
                s.rest(a, side, max(100, price), left, self.prio)
                self.placed = a
        elif r < 0.87:                                      # market order
            a = self.order(s, side, "1", 0, qty, rest=False)
            left, first = self.match(s, a, side, None, qty)
            if left and (first is None or rnd.random() < 0.5):
                self.cancel(s, a, left, side)
            elif left:
                self.prio += 1
                s.rest(a, side, first, left, self.prio)
                self.placed = a
        elif r < 0.89:                                      # own best: rests at its side's best
            best = self.best(s, side)
            a = self.order(s, side, "U", 0, qty, rest=False)
            if best is None:
                self.cancel(s, a, qty, side)
            else:
                self.prio += 1
                s.rest(a, side, best, qty, self.prio)
                self.placed = a
        elif r < 0.92:              # own best on an empty own side (the thin book has no bids)
            s = self.thin
            if rnd.random() < 0.5:
                self.order(s, "2", "2", s.mid + tick, qty)
            else:
                a = self.order(s, "1", "U", 0, qty, rest=False)
                self.cancel(s, a, qty, "1")
        elif r < 0.95:                                      # securities lending
            self.order(s, rnd.choice("GF"), "2", s.mid, qty, rest=False)
        else:
            self.out.append({"MsgType": 111, "SecurityID": s.sec, "ChannelNo": s.channel,
                             "ApplSeqNum": 0, "TransactTime": _stamp(self.t, self.day)})
        b = self.best(s, "1")
        if b and not auction:
            s.mid = b


def generate(messages: int, securities: int = 6, seed: int = 0, date: str | None = None) -> list[dict]:
    """The records of a synthetic day of about ``messages`` messages (dicts of the feed's
    fields) on ``date`` (YYYY-MM-DD; None: 2024-01-05)."""
    day = _Day(securities, seed, date_stamp(date))
    n_open = max(1, messages // 10)
    n_close = max(1, messages // 20)
    while len(day.out) < n_open:
        day.step(True)
    day.t = _ms(9, 25)
    for s in day.secs:
        day.uncross(s)
    day.t, day.t_max = _ms(9, 30), _ms(14, 57) - 1
    while len(day.out) < messages - n_close:
        day.step(False)
    day.t, day.t_max = max(day.t, _ms(14, 57)), _ms(15, 0) - 1
    while len(day.out) < messages:
        day.step(True)
    day.t = _ms(15, 0)
    for s in day.secs:
        day.uncross(s)
    return day.out


def text_line(r: dict) -> str:
    t = r["MsgType"]
    ln = {192: 48, 191: 64}.get(t, 24)
    head = (f"//SecurityIDSource=102 MsgType={t} MsgLen={ln} SecurityID={r['SecurityID']} "
            f"ChannelNo={r['ChannelNo']} ApplSeqNum={r['ApplSeqNum']} TradingPhase=0")
    if t == 192:
        body = (f" Price={r['Price']} OrderQty={r['OrderQty']} Side={r['Side']} OrdType={r['OrdType']}"
                f" TransactTime={r['TransactTime']}")
    elif t == 191:
        body = (f" BidApplSeqNum={r['BidApplSeqNum']} OfferApplSeqNum={r['OfferApplSeqNum']}"
                f" LastPx={r['LastPx']} LastQty={r['LastQty']} ExecType={r['ExecType']}"
                f" TransactTime={r['TransactTime']}")
    else:
        body = f" TransactTime={r['TransactTime']}"
    return head + body


def binary_record(r: dict) -> bytes:
    t = r["MsgType"]
    if t == 192:
        body = ORDER.pack(r["Price"], r["OrderQty"], r["Side"], r["OrdType"], r["TransactTime"])
    elif t == 191:
        body = TRADE.pack(r["BidApplSeqNum"], r["OfferApplSeqNum"], r["LastPx"], r["LastQty"],
                          r["ExecType"], r["TransactTime"])
    else:
        body = b""
    return HEADER.pack(102, t, HEADER.size + len(body), r["SecurityID"].encode().ljust(9),
                       r["ChannelNo"], r["ApplSeqNum"], 0) + body


def write_szse(path, messages: int = 100_000, securities: int = 6, seed: int = 0,
               binary: bool = False, date: str | None = None) -> int:
    """Write the synthetic day as a text log (or binary records), gzipped when ``path`` ends
    in .gz; returns its messages."""
    from . import open_output

    recs = generate(messages, securities, seed, date)
    with open_output(path) as f:
        if binary:
            f.write(b"".join(binary_record(r) for r in recs))
        else:
            f.write(("\n".join(text_line(r) for r in recs) + "\n").encode())
    return len(recs)


def _decimal(v: int, digits: int) -> str:
    s = f"{v:0{digits + 1}d}"
    return f"{s[:-digits]}.{s[-digits:]}"


ORDERS_HEAD = "ApplSeqNum,Side,OrdType,Price,OrderQty,TransactTime,ChannelNo"
TICKS_HEAD = "ApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo"


def write_vendor(folder, recs: list[dict]) -> list[Path]:
    """The records as vendor CSV files, an orders and a ticks file per security with orders
    (prices in decimal yuan, quantities in shares; a security without trades gets a ticks
    file of its header alone, as its orders file is read with one); returns the files
    written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[Path, list[str]] = {}
    for r in recs:
        if r["MsgType"] not in (191, 192):
            continue
        sec = r["SecurityID"]
        for name, head in (("orders", ORDERS_HEAD), ("ticks", TICKS_HEAD)):   # a pair, even a header alone
            out.setdefault(folder / f"{sec}_{name}.csv", [head])
        if r["MsgType"] == 192:
            out[folder / f"{sec}_orders.csv"].append(
                f"{r['ApplSeqNum']},{chr(r['Side'])},{chr(r['OrdType'])},{_decimal(r['Price'], 4)},"
                f"{_decimal(r['OrderQty'], 2)},{r['TransactTime']},{r['ChannelNo']}")
        else:
            out[folder / f"{sec}_ticks.csv"].append(
                f"{r['ApplSeqNum']},{r['BidApplSeqNum']},{r['OfferApplSeqNum']},{_decimal(r['LastPx'], 4)},"
                f"{_decimal(r['LastQty'], 2)},{chr(r['ExecType'])},{r['TransactTime']},{r['ChannelNo']}")
    for p, lines in out.items():
        p.write_text("\n".join(lines) + "\n")
    return sorted(out)


def vendor_order(recs: list[dict]) -> list[dict]:
    """The orders and executions in the order the vendor files merge into: (TransactTime,
    ChannelNo, ApplSeqNum)."""
    return sorted((r for r in recs if r["MsgType"] in (191, 192)),
                  key=lambda r: (r["TransactTime"], r["ChannelNo"], r["ApplSeqNum"]))
