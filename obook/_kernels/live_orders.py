"""The live loop's order side: the risk gate (the rules of obook.live.risk.RiskGate), OUCH 5.0
Enter / Replace / Cancel encoded in a SoupBinTCP 'U' packet, and the venue's answers read
back ('S' packets: the venue's receive stamp of each order; Order Rejected counted, the first
one's UserRefNum and reason kept)."""

from .jit import njit
from .latency import record
from .live_layout import (H_T2T, H_VENUE, S_ANSWERS, S_BAND_BPS, S_MAX_NOTIONAL, S_MAX_QTY, S_MAX_RATE, S_REFUSED_BAND,
                          S_REFUSED_NOTIONAL, S_REFUSED_PRICE, S_REFUSED_RATE, S_REFUSED_SIZE, S_REJECT_REASON,
                          S_REJECT_REF, S_REJECTED, S_RW_COUNT, S_RW_HEAD, S_VBUF_N, S_VENUE_BAD, S_VENUE_ENDED)
from .mold import _be

K_ENTER, K_REPLACE, K_CANCEL = 1, 2, 3
REFUSED = -1


@njit(cache=True, nogil=True, _nrt=False)
def risk_check(S, window, kind, side, qty, price, bid, ask, feed_ns):
    """0 when the order may go (it then counts in the rate window), else the S_REFUSED_*
    counter it was counted in. bid, ask: -1 for an empty side."""
    size = window.shape[0]
    while S[S_RW_COUNT] > 0 and window[S[S_RW_HEAD]] <= feed_ns - 1_000_000_000:
        S[S_RW_HEAD] = (S[S_RW_HEAD] + 1) % size
        S[S_RW_COUNT] -= 1
    why = 0
    if S[S_RW_COUNT] >= S[S_MAX_RATE]:
        why = S_REFUSED_RATE
    elif kind != K_CANCEL:
        best = bid if side == 0 else ask
        if best < 0:
            best = ask if side == 0 else bid
        if qty <= 0 or qty > S[S_MAX_QTY]:
            why = S_REFUSED_SIZE
        elif qty * price > S[S_MAX_NOTIONAL]:
            why = S_REFUSED_NOTIONAL
        elif best < 0:
            why = S_REFUSED_PRICE
        elif abs(price - best) * 10_000 > S[S_BAND_BPS] * best:
            why = S_REFUSED_BAND
    if why != 0:
        S[why] += 1
        return why
    window[(S[S_RW_HEAD] + S[S_RW_COUNT]) % size] = feed_ns
    S[S_RW_COUNT] += 1
    return 0


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _put_be(out, p, v, nbytes):
    for k in range(nbytes):
        out[p + k] = (v >> (8 * (nbytes - 1 - k))) & 0xFF


@njit(cache=True, nogil=True, _nrt=False)
def _clordid(out, p, ref):
    out[p] = 79       # O
    out[p + 1] = 66   # B
    v = ref
    for k in range(11, -1, -1):
        out[p + 2 + k] = 48 + v % 10
        v //= 10


@njit(cache=True, nogil=True, _nrt=False)
def encode(out, kind, side, qty, price, ref, orig, symbol):
    """The order as a SoupBinTCP 'U' packet holding its OUCH message, into ``out``; returns
    its bytes. symbol: the instrument's 8 bytes (space-padded)."""
    m = 3
    if kind == K_ENTER:
        out[m] = 79                      # 'O'
        _put_be(out, m + 1, ref, 4)
        out[m + 5] = 66 if side == 0 else 83
        _put_be(out, m + 6, qty, 4)
        for k in range(8):
            out[m + 10 + k] = symbol[k]
        _put_be(out, m + 18, price, 8)
        out[m + 26] = 48                 # time in force '0' (day)
        out[m + 27] = 89                 # display 'Y'
        out[m + 28] = 65                 # capacity 'A'
        out[m + 29] = 78                 # intermarket sweep 'N'
        out[m + 30] = 78                 # cross type 'N'
        _clordid(out, m + 31, ref)
        _put_be(out, m + 45, 0, 2)
        n = 47
    elif kind == K_REPLACE:
        out[m] = 85                      # 'U'
        _put_be(out, m + 1, orig, 4)
        _put_be(out, m + 5, ref, 4)
        _put_be(out, m + 9, qty, 4)
        _put_be(out, m + 13, price, 8)
        out[m + 21] = 48
        out[m + 22] = 89
        out[m + 23] = 78
        _clordid(out, m + 24, ref)
        _put_be(out, m + 38, 0, 2)
        n = 40
    else:
        out[m] = 88                      # 'X'
        _put_be(out, m + 1, ref, 4)
        _put_be(out, m + 5, qty, 4)
        n = 9
    _put_be(out, 0, n + 1, 2)
    out[2] = 85                          # SoupBinTCP 'U' (unsequenced data)
    return n + 3


@njit(cache=True, nogil=True, _nrt=False)
def answers(S, vbuf, refs, hists):
    """Read the whole SoupBinTCP packets in vbuf[:S_VBUF_N]: per 'S' answer, the venue's
    stamp against the order's send and kernel stamps (``refs``: rows ref, sent, kernel,
    answered, by ``ref & mask``); keeps the rest at the front. A packet of length 0 (no type
    byte) stops the reading there and sets S_VENUE_BAD."""
    n = S[S_VBUF_N]
    rmask = refs.shape[1] - 1
    p = 0
    while p + 2 <= n:
        ln = _be(vbuf, p, 2)
        if ln == 0:                              # no type byte: the stream cannot be framed further
            S[S_VENUE_BAD] = 1
            break
        if p + 2 + ln > n:
            break
        kind = vbuf[p + 2]
        if kind == 83 and ln >= 1 + 17:          # 'S': an OUCH answer: type, stamp, refs
            q = p + 3
            stamp = _be(vbuf, q + 1, 8)
            ref = _be(vbuf, q + 13, 4) if vbuf[q] == 85 else _be(vbuf, q + 9, 4)
            i = ref & rmask
            if refs[0, i] == ref and refs[3, i] == 0:
                refs[3, i] = stamp
                record(hists[H_VENUE], stamp - refs[1, i])
                record(hists[H_T2T], stamp - refs[2, i])
            if vbuf[q] == 74:                    # 'J' Order Rejected: UserRefNum, then its reason
                if S[S_REJECTED] == 0:
                    S[S_REJECT_REF], S[S_REJECT_REASON] = ref, _be(vbuf, q + 13, 2)
                S[S_REJECTED] += 1
            S[S_ANSWERS] += 1
        elif kind == 90:                         # 'Z' end of session
            S[S_VENUE_ENDED] = 1
        p += 2 + ln
    for k in range(n - p):
        vbuf[k] = vbuf[p + k]
    S[S_VBUF_N] = n - p
    return p

