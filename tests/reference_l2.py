"""A pure-Python reference replayer of the Shanghai AX-SBE text log (SPEC §5), independent
of obook's kernels: parse ``//Key=Value`` lines, sort the orders and trades by BizIndex
(per channel), apply them to dict books, and list the BBO changes per security."""

from __future__ import annotations


def parse(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith("//"):
            out.append({k: v for k, v in (t.split("=", 1) for t in line[2:].split() if "=" in t)})
    return out


def sse_bbo(text: str) -> dict[str, list[tuple]]:
    """{ticker: [(time ns, bid px, bid qty, bid orders, ask px, ask qty, ask orders), ...]}:
    a row per order or trade that changes the security's BBO (None for an empty side)."""
    msgs = [m for m in parse(text) if m["MsgType"] in ("191", "192")]
    msgs.sort(key=lambda m: (int(m["ChannelNo"]), int(m["BizIndex"])))
    books: dict[str, dict[int, list]] = {}
    out: dict[str, list] = {}
    for m in msgs:
        tk = f"{int(m['SecurityID']):06d}"
        book = books.setdefault(tk, {})
        before = _bbo(book)
        if m["MsgType"] == "192":
            no = int(m["OrderNo"])
            if m["OrdType"] == "65":
                book[no] = [m["Side"], int(m["Price"]), int(m["OrderQty"])]
            else:
                del book[no]
        else:
            x = m["ExecType"]
            refs = {"66": [m["OfferApplSeqNum"]], "83": [m["BidApplSeqNum"]]}.get(
                x, [m["BidApplSeqNum"], m["OfferApplSeqNum"]])
            for r in refs:
                o = book[int(r)]
                o[2] -= int(m["LastQty"])
                if o[2] <= 0:
                    del book[int(r)]
        after = _bbo(book)
        if after != before:
            t = int(m["TransactTime"])
            ns = ((t // 1000000 * 3600 + t // 10000 % 100 * 60 + t // 100 % 100) * 100 + t % 100) * 10_000_000
            out.setdefault(tk, []).append((ns,) + after)
    return out


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
