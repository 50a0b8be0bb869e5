"""A pure-Python reference replayer of the Shanghai AX-SBE text log, independent
of obook's kernels: parse ``//Key=Value`` lines, sort the orders and trades by BizIndex
(per channel), apply them to dict books, and list the BBO changes, the trades and the
depth changes per security."""

from __future__ import annotations


BBO_COLUMNS = ["time", "bid_px", "bid_qty", "bid_orders", "ask_px", "ask_qty", "ask_orders"]


def bbo_by_ticker(table) -> dict[str, list[tuple]]:
    """An obook BBO table as the references' rows: {ticker: [(time, bid px ... ask orders)]}."""
    out: dict[str, list[tuple]] = {}
    for row in table.select(["ticker"] + BBO_COLUMNS).to_pylist():
        out.setdefault(row["ticker"], []).append(tuple(row[c] for c in BBO_COLUMNS))
    return out


def parse(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith("//"):
            out.append({k: v for k, v in (t.split("=", 1) for t in line[2:].split() if "=" in t)})
    return out


def _sse_replay(text: str):
    """The orders and trades of a Shanghai log in BizIndex order (per channel), applied to
    dict books: yields (ticker, time ns, message, book after it) per message."""
    msgs = [m for m in parse(text) if m["MsgType"] in ("191", "192")]
    msgs.sort(key=lambda m: (int(m["ChannelNo"]), int(m["BizIndex"])))
    books: dict[str, dict[int, list]] = {}
    for m in msgs:
        tk = f"{int(m['SecurityID']):06d}"
        book = books.setdefault(tk, {})
        if m["MsgType"] == "192":
            no = int(m["OrderNo"])
            if m["OrdType"] == "65":
                book[no] = [m["Side"], int(m["Price"]), int(m["OrderQty"])]
            else:
                del book[no]
        else:
            for r in _sse_reduced(m):
                o = book[int(r)]
                o[2] -= int(m["LastQty"])
                if o[2] <= 0:
                    del book[int(r)]
        t = int(m["TransactTime"])
        ns = ((t // 1000000 * 3600 + t // 10000 % 100 * 60 + t // 100 % 100) * 100 + t % 100) * 10_000_000
        yield tk, ns, m, book


def _sse_reduced(m: dict) -> list[str]:
    """The orders a trade reduces: the sell order when the buyer was the aggressor (B), the
    buy order for S, both in a call auction (N, the buy order first)."""
    return {"66": [m["OfferApplSeqNum"]], "83": [m["BidApplSeqNum"]]}.get(
        m["ExecType"], [m["BidApplSeqNum"], m["OfferApplSeqNum"]])


def sse_bbo(text: str) -> dict[str, list[tuple]]:
    """{ticker: [(time ns, bid px, bid qty, bid orders, ask px, ask qty, ask orders), ...]}:
    a row per order or trade that changes the security's BBO (None for an empty side)."""
    out: dict[str, list] = {}
    last: dict[str, tuple] = {}
    for tk, ns, _m, book in _sse_replay(text):
        after = _bbo(book)
        if after != last.get(tk, _bbo({})):
            out.setdefault(tk, []).append((ns,) + after)
        last[tk] = after
    return out


def sse_trades(text: str) -> dict[str, list[tuple]]:
    """{ticker: [(time ns, price, shares, resting side, order ref, match), ...]}: a row per
    trade line, as obook's trades table gives it (side and ref: of the order it reduces,
    the buy order of a call auction's trade; match: its BizIndex)."""
    out: dict[str, list] = {}
    for tk, ns, m, _book in _sse_replay(text):
        if m["MsgType"] == "191":
            side = "S" if m["ExecType"] == "66" else "B"
            out.setdefault(tk, []).append((ns, int(m["LastPx"]), int(m["LastQty"]), side,
                                           int(_sse_reduced(m)[0]), int(m["BizIndex"])))
    return out


def sse_depth(text: str, levels: int) -> dict[str, list[tuple]]:
    """{ticker: [(time ns, bids, asks), ...]}: a row per order or trade that changes the
    security's top ``levels`` levels; bids and asks ``levels`` (price, shares, orders) best
    first, padded with None."""
    out: dict[str, list] = {}
    last: dict[str, tuple] = {}
    for tk, ns, _m, book in _sse_replay(text):
        after = tuple(tuple(_levels(book, side, levels)) for side in ("66", "83"))
        if after != last.get(tk, ((None,) * levels,) * 2):
            out.setdefault(tk, []).append((ns,) + after)
        last[tk] = after
    return out


def depth_by_ticker(table, levels: int) -> dict[str, list[tuple]]:
    """An obook depth table as :func:`sse_depth` rows."""
    out: dict[str, list] = {}
    for row in table.to_pylist():
        sides = tuple(tuple(None if row[f"{s}_px_{i}"] is None else
                            (row[f"{s}_px_{i}"], row[f"{s}_qty_{i}"], row[f"{s}_orders_{i}"])
                            for i in range(1, levels + 1)) for s in ("bid", "ask"))
        out.setdefault(row["ticker"], []).append((row["time"],) + sides)
    return out


def _levels(book, side: str, levels: int) -> list:
    agg: dict[int, list] = {}
    for s, price, shares in book.values():
        if s == side:
            lv = agg.setdefault(price, [price, 0, 0])
            lv[1] += shares
            lv[2] += 1
    best = sorted(agg, reverse=side == "66")[:levels]
    return [tuple(agg[p]) for p in best] + [None] * (levels - len(best))


def _bbo(book) -> tuple:
    res = ()
    for side, best in (("66", max), ("83", min)):
        px = [o[1] for o in book.values() if o[0] == side]
        if not px:
            res += (None, None, None)
            continue
        p = best(px)
        at = [o[2] for o in book.values() if o[0] == side and o[1] == p]
        res += (p, sum(at), len(at))
    return res


def szse_bbo(records: list[dict], trades: list | None = None) -> dict[str, list[tuple]]:
    """The Shenzhen replay of record dicts in feed order, as :func:`sse_bbo` rows.

    An order followed in its channel (consecutive ApplSeqNum) by fills naming it is
    incoming: the fills reduce the resting orders, its rest is added at its last fill
    (market orders at their first fill's price) unless its own cancel follows; an order
    with nothing following rests at once (a market one never); other fills reduce both
    orders; a cancel reduces the order it names; an own-best order rests at its side's best
    (with that side empty it never rests, its cancel following or not).
    Securities lending orders are ignored.

    The ChiNext price cage (300xxx/301xxx, continuous trading 09:30-14:57): a limit order
    that rests at once is held when it is a buy above 102% of (best ask, else best bid,
    else last trade) or a sell below 98% of (best bid, else best ask, else last trade);
    a cancel naming a held order reduces it; after each record (an incoming order: after
    its last fill) the held orders the cage admits enter, first held first; an entry that
    crosses the book holds back the rows until a record leaves the book uncrossed.

    ``trades``: a list that gets (security, fill's ApplSeqNum, side) per printed fill, the
    side of the resting order ('B' / 'S'): an incoming order's fill, the order it names;
    a fill of two resting orders, the bid, unless the bid is the entry that crossed the
    book (the price cage) and the book is still crossed: then the offer."""
    msgs = [r for r in records if r["MsgType"] in (191, 192)]
    by_chan: dict[int, dict[int, int]] = {}
    for i, r in enumerate(msgs):
        by_chan.setdefault(r["ChannelNo"], {})[r["ApplSeqNum"]] = i
    plan: dict[int, list] = {}       # record index -> what to do there
    skip = set()
    mid_chain = set()                # an incoming order's fills before its last
    for i, r in enumerate(msgs):
        if r["MsgType"] != 192 or chr(r["Side"]) not in "12":
            if r["MsgType"] == 192:
                skip.add(i)
            continue
        a, ch = r["ApplSeqNum"], r["ChannelNo"]
        fills, cancel = [], None
        k = a + 1
        while k in by_chan[ch]:
            j = by_chan[ch][k]
            m = msgs[j]
            if m["MsgType"] != 191 or a not in (m["BidApplSeqNum"], m["OfferApplSeqNum"]):
                break
            if chr(m["ExecType"]) == "4":
                cancel = j
                break
            fills.append(j)
            k += 1
        market = chr(r["OrdType"]) == "1"
        if not fills and cancel is None:
            if market:
                skip.add(i)
            continue
        skip.add(i)
        if cancel is not None:
            skip.add(cancel)
        mid_chain.update(fills[:-1])
        for j in fills:
            m = msgs[j]
            plan[j] = [("exec", m["OfferApplSeqNum"] if m["BidApplSeqNum"] == a else m["BidApplSeqNum"])]
        left = r["OrderQty"] - sum(msgs[j]["LastQty"] for j in fills)
        if fills and cancel is None and left > 0:
            px = msgs[fills[0]]["LastPx"] if market else r["Price"]
            plan[fills[-1]].append(("add", a, r["Side"], px, left))
    books: dict[str, dict[int, list]] = {}
    held: dict[str, dict[int, list]] = {}     # price cage: ref -> [side, price, qty], first held first
    last: dict[str, int] = {}                 # last trade price
    cross: set = set()                        # an entry crossed the book: rows held back ...
    entered: dict[str, int] = {}              # ... and the last entry that crossed it
    deferred: dict[str, tuple] = {}           # ... since this BBO
    out: dict[str, list] = {}
    for i, m in enumerate(msgs):
        if i in skip:
            continue
        tk = m["SecurityID"]
        book = books.setdefault(tk, {})
        hb = held.setdefault(tk, {})
        t = m["TransactTime"] % 1_000_000_000
        ns = ((t // 10_000_000 * 3600 + t // 100_000 % 100 * 60 + t // 1000 % 100) * 1000 + t % 1000) * 1_000_000
        chinext = tk[:3] in ("300", "301")
        live = chinext and 34_200 * 10**9 <= ns < 53_820 * 10**9
        before = deferred.pop(tk) if tk in deferred else _bbo(book)
        steps = plan.get(i)
        if steps is None:
            own = None
            if m["MsgType"] == 192 and chr(m["OrdType"]) == "U":     # own best: the best of its own side
                own = [o[1] for o in book.values() if o[0] == str(66 if m["Side"] == 49 else 83)]
            if own == []:                        # none: the exchange cancels it, it never rests
                steps = []
            elif m["MsgType"] == 192:
                px = m["Price"]
                if own:
                    px = max(own) if m["Side"] == 49 else min(own)
                if live and chr(m["OrdType"]) == "2" and _outside(book, last.get(tk), m["Side"], px):
                    steps = [("hold", m["ApplSeqNum"], m["Side"], px, m["OrderQty"])]
                else:
                    steps = [("add", m["ApplSeqNum"], m["Side"], px, m["OrderQty"])]
            elif chr(m["ExecType"]) == "4":
                steps = [("reduce", m["BidApplSeqNum"] or m["OfferApplSeqNum"])]
            else:
                steps = [("exec", m["BidApplSeqNum"]), ("exec", m["OfferApplSeqNum"])]
        for n_step, step in enumerate(steps):
            if step[0] == "add":
                book[step[1]] = [str(66 if step[2] == 49 else 83), step[3], step[4]]
            elif step[0] == "hold":
                hb[step[1]] = [step[2], step[3], step[4]]
            elif step[1] not in book and step[1] in hb:     # a cancel of a held order
                hb[step[1]][2] -= m["LastQty"]
                if hb[step[1]][2] <= 0:
                    del hb[step[1]]
            else:
                o = book[step[1]]
                if trades is not None and step[0] == "exec" and n_step == 0:
                    side = "B" if o[0] == "66" else "S"
                    if tk in cross and entered.get(tk) == step[1]:     # the entry's own fill
                        side = "S" if side == "B" else "B"
                    trades.append((tk, m["ApplSeqNum"], side))
                o[2] -= m["LastQty"]
                if o[2] <= 0:
                    del book[step[1]]
                if step[0] == "exec" and chinext:
                    last[tk] = m["LastPx"]
        if live and i not in mid_chain:
            crossing = _enter(book, hb, last.get(tk))
            if crossing is not None:
                cross.add(tk)
                entered[tk] = crossing
        after = _bbo(book)
        if tk in cross and _crossed(book):
            deferred[tk] = before
        else:
            cross.discard(tk)
            entered.pop(tk, None)
            if after != before:
                out.setdefault(tk, []).append((ns,) + after)
    return out


def _best(book, side):
    px = [o[1] for o in book.values() if o[0] == side]
    return (max(px) if side == "66" else min(px)) if px else None


def _crossed(book) -> bool:
    b, a = _best(book, "66"), _best(book, "83")
    return b is not None and a is not None and b >= a


def _outside(book, last, side, price) -> bool:
    """The price cage (side 49 buy / 50 sell): outside 102% / 98% of the reference."""
    order = ("83", "66") if side == 49 else ("66", "83")
    ref = next((p for p in (_best(book, order[0]), _best(book, order[1]), last) if p is not None), None)
    if ref is None:
        return False
    return price * 100 > ref * 102 if side == 49 else price * 100 < ref * 98


def _enter(book, hb, last) -> int | None:
    """Held orders the cage admits enter, first held first (the reference again after
    each); the last one that crossed the book (None: none did)."""
    crossed = None
    while True:
        ref = next((r for r, (side, px, _q) in hb.items() if not _outside(book, last, side, px)), None)
        if ref is None:
            return crossed
        side, px, qty = hb.pop(ref)
        book[ref] = [str(66 if side == 49 else 83), px, qty]
        opp = _best(book, "83" if side == 49 else "66")
        if opp is not None and (px >= opp if side == 49 else px <= opp):
            crossed = ref
