"""Kernels of the AX-SBE text log (SPEC §5, §6): lines of ``//Key=Value`` tokens.

A line is a record (line numbers count every physical line). A line that starts
with ``//`` is a message; any other line (blank, or the hex dump of the struct that
may follow a message) carries nothing. ``parse_line`` walks the tokens of one line
and stores the integer values of the keys it knows (``KEYS``; the key text is
matched by its FNV-1a hash in a small open-addressing table built at import) in
``vals[key id]`` with ``have[key id]`` = 1 (-1: the value is not an integer; 0:
absent). Unknown keys are skipped. Arrays and scalars in, codes out; nothing raises.
"""

import numpy as np
from numba import njit

FNV_OFFSET = np.uint64(14695981039346656037)
FNV_PRIME = np.uint64(1099511628211)

# key ids
(K_MSGTYPE, K_SECID, K_CHANNEL, K_APPLSEQ, K_ORDERNO, K_PRICE, K_ORDERQTY, K_ORDTYPE, K_SIDE,
 K_TTIME, K_BIZ, K_BIDSEQ, K_OFFERSEQ, K_LASTPX, K_LASTQTY, K_EXECTYPE, K_DATATS, K_NUMTRADES,
 K_TOTVOL, K_TOTVAL, K_PREVCLOSE, K_OPEN, K_HIGH, K_LOW, K_PHASE) = range(25)   # LastPx: K_LASTPX (trade price, snapshot last price)
K_BID_PX = 30      # BidLevel[i].Price = K_BID_PX + i, then the Qty, AskLevel Price, Qty
K_BID_QTY = 40
K_ASK_PX = 50
K_ASK_QTY = 60
N_KEYS = 70

KEYS = {
    "MsgType": K_MSGTYPE, "SecurityID": K_SECID, "ChannelNo": K_CHANNEL, "ApplSeqNum": K_APPLSEQ,
    "OrderNo": K_ORDERNO, "Price": K_PRICE, "OrderQty": K_ORDERQTY, "OrdType": K_ORDTYPE,
    "Side": K_SIDE, "TransactTime": K_TTIME, "BizIndex": K_BIZ, "BidApplSeqNum": K_BIDSEQ,
    "OfferApplSeqNum": K_OFFERSEQ, "LastPx": K_LASTPX, "LastQty": K_LASTQTY, "ExecType": K_EXECTYPE,
    "DataTimeStamp": K_DATATS, "NumTrades": K_NUMTRADES, "TotalVolumeTrade": K_TOTVOL,
    "TotalValueTrade": K_TOTVAL, "PrevClosePx": K_PREVCLOSE, "OpenPx": K_OPEN, "HighPx": K_HIGH,
    "LowPx": K_LOW, "TradingPhase": K_PHASE,
}
for _i in range(10):
    KEYS[f"BidLevel[{_i}].Price"] = K_BID_PX + _i
    KEYS[f"BidLevel[{_i}].Qty"] = K_BID_QTY + _i
    KEYS[f"AskLevel[{_i}].Price"] = K_ASK_PX + _i
    KEYS[f"AskLevel[{_i}].Qty"] = K_ASK_QTY + _i

# parse_line results
LINE_OK = 0
LINE_NOT_MESSAGE = 1   # does not start with //: carries nothing
LINE_BAD_TOKEN = 2     # a token without '=' (the position of the token is returned)


def _fnv(text: str) -> int:
    h = int(FNV_OFFSET)
    for c in text.encode():
        h = ((h ^ c) * int(FNV_PRIME)) & 0xFFFFFFFFFFFFFFFF
    return h


def _key_table(keys: dict) -> tuple[np.ndarray, np.ndarray]:
    size = 512
    khash = np.zeros(size, np.uint64)
    kid = np.full(size, -1, np.int64)
    for text, i in keys.items():
        h = _fnv(text)
        s = h & (size - 1)
        while kid[s] >= 0:
            s = (s + 1) & (size - 1)
        khash[s] = h
        kid[s] = i
    return khash, kid


KHASH, KID = _key_table(KEYS)


@njit(cache=True, _nrt=False)
def line_end(buf, p, n):
    """Index of the newline ending the line at p (n when the buffer ends first)."""
    while p < n and buf[p] != 10:
        p += 1
    return p


@njit(cache=True, _nrt=False)
def parse_line(buf, a, b, khash, kid, vals, have):
    """Parse the tokens of the line buf[a:b] (no newline). Returns (LINE_*, position)."""
    for j in range(have.shape[0]):
        have[j] = 0
    while b > a and (buf[b - 1] == 13 or buf[b - 1] == 32):
        b -= 1
    if b - a < 2 or buf[a] != 47 or buf[a + 1] != 47:
        return LINE_NOT_MESSAGE, a
    mask = khash.shape[0] - 1
    p = a + 2
    while p < b:
        while p < b and buf[p] == 32:
            p += 1
        if p >= b:
            break
        h = FNV_OFFSET
        q = p
        while q < b and buf[q] != 61 and buf[q] != 32:
            h = (h ^ np.uint64(buf[q])) * FNV_PRIME
            q += 1
        if q >= b or buf[q] != 61:
            return LINE_BAD_TOKEN, p
        v = q + 1
        e = v
        while e < b and buf[e] != 32:
            e += 1
        s = np.int64(h & np.uint64(mask))
        k = -1
        while kid[s] >= 0:
            if khash[s] == h:
                k = kid[s]
                break
            s = (s + 1) & mask
        if k >= 0:
            x = np.int64(0)
            ok = e > v
            neg = False
            c = v
            if ok and buf[c] == 45:
                neg = True
                c += 1
                ok = e > c
            while c < e:
                d = np.int64(buf[c]) - 48
                if d < 0 or d > 9 or x > 922337203685477579:
                    ok = False
                    break
                x = x * 10 + d
                c += 1
            vals[k] = -x if neg else x
            have[k] = 1 if ok else -1
        p = e
    return LINE_OK, b
