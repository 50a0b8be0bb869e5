"""A deterministic synthetic Nasdaq TotalView-ITCH 5.0 day (BinaryFILE framing).

``write_itch(path, messages, stocks, seed)`` writes exactly ``messages`` messages:

* ``S O`` (start of messages), ``S S`` (start of system hours), one ``R`` stock
  directory per stock (locate 1..K, names ``AAA``, ``AAB`` ...), ``S Q`` (market open);
* the body: order flow of Zipf-popular stocks (some are hot, most are quiet);
* ``S M``, ``S E``, ``S C`` (end of market hours, of system hours, of messages).

The body is realistic in the ways a book replayer notices: each stock's book sits
around a price that drifts a tick at a time (the touch moves when a level is
executed or cancelled away, or an order improves the spread); adds mostly land
at or within a few ticks of their side's touch and never cross or lock the book;
deletes mostly hit recent orders; executions mostly take the oldest order at
the touch. Live orders per stock are bounded (``CAP``), so a long day keeps a
constant book size. Order refs and match numbers increase strictly, timestamps
increase strictly. Every record is valid (no unknown refs, no over-executions).

Body mix (per 10,000): A 4000, F 500, D 2500, X 800, E 700, C 100, U 800, P 300,
I 150, Q 30, L 30, Y 30, H 20, B 10, V 1 and 29 of type ``N`` (retail price
improvement indicator, a type obook frames by its length and skips). Every type is an
ITCH 5.0 message type, as in a Nasdaq day. An order op on a stock with an empty book becomes an add;
an add to a full book (``CAP`` live orders) becomes a delete of an old order,
so on long days the hot stocks trade some adds for deletes.

The core loop is a numba kernel that fills a byte buffer a block at a time; the
random numbers come from a xorshift64* generator of its own, so the bytes depend
only on the arguments (and on nothing in numpy's or numba's versions).
"""

from __future__ import annotations

import struct
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from .._kernels.jit import njit

from .._kernels.itch_layout import offset, pack, size
from . import open_output

__all__ = ["write_itch", "stock_name", "CAP"]

CAP = 200            # live orders per stock, at most
TICK = 100           # price units (1/10000 $) per tick: one cent
MAXREC = 52          # the largest frame written (2-byte length + 50-byte I)
BLOCK = 1 << 18      # messages per kernel call
#: bytes a message takes at least: on disk (plain, compressed) and in memory while the day is
#: generated (0: written as it goes); a little below what 1 M messages measure, so that a size
#: `obook gen` refuses for want of room could not have fitted
MIN_BYTES = (30, 10, 0)
ZIPF_S = 1.0         # popularity exponent: weight of rank r is 1 / r**ZIPF_S

T_OPEN = 34_200 * 10**9    # 09:30
T_CLOSE = 57_600 * 10**9   # 16:00

# body operation codes, with their cumulative thresholds out of 10,000
(OP_A, OP_F, OP_D, OP_X, OP_E, OP_C, OP_U, OP_P, OP_I, OP_Q, OP_L, OP_Y, OP_H, OP_B,
 OP_V, OP_N) = range(16)
_MIX = [4000, 500, 2500, 800, 700, 100, 800, 300, 150, 30, 30, 30, 20, 10, 1, 29]
assert sum(_MIX) == 10_000
_MIX_CUM = np.cumsum(np.array(_MIX, dtype=np.int64))

# sizes and field offsets from the one ITCH layout (obook._kernels.itch_layout), as module
# constants the kernel folds
S_A, S_F, S_D, S_X, S_E, S_C, S_U, S_P, S_Q, S_B, S_H, S_I, S_L, S_Y, S_V = (
    size(t) for t in "AFDXECUPQBHILYV")
S_N, N_STOCK, N_FLAG = 20, 11, 19      # ITCH 5.0 N: stock (8), interest flag (1)
O_LOCATE, O_TIME = offset("A", "locate"), offset("A", "timestamp")
A_REF, A_SIDE, A_SHARES, A_STOCK, A_PRICE = (offset("A", f) for f in ("ref", "side", "shares", "stock", "price"))
F_MPID, P_MATCH = offset("F", "mpid"), offset("P", "match")
D_REF, X_REF, X_SHARES = offset("D", "ref"), offset("X", "ref"), offset("X", "shares")
E_REF, E_SHARES, E_MATCH = offset("E", "ref"), offset("E", "shares"), offset("E", "match")
C_PRINTABLE, C_PRICE = offset("C", "printable"), offset("C", "price")
U_REF, U_NEW_REF, U_SHARES, U_PRICE = (offset("U", f) for f in ("ref", "new_ref", "shares", "price"))
Q_SHARES, Q_STOCK, Q_PRICE, Q_MATCH, Q_CROSS = (offset("Q", f) for f in ("shares", "stock", "price", "match",
                                                                           "cross_type"))
B_MATCH = offset("B", "match")
H_STOCK, H_STATE, H_RESERVED, H_REASON = (offset("H", f) for f in ("stock", "state", "reserved", "reason"))
I_PAIRED, I_IMBALANCE, I_DIRECTION, I_STOCK, I_FAR, I_NEAR, I_REF, I_CROSS, I_VARIATION = (
    offset("I", f) for f in ("paired_shares", "imbalance_shares", "imbalance_direction", "stock", "far_price",
                             "near_price", "reference_price", "cross_type", "price_variation"))
L_MPID, L_STOCK, L_PRIMARY, L_MODE, L_STATE = (offset("L", f) for f in ("mpid", "stock", "primary", "mode",
                                                                         "state"))
Y_STOCK, Y_ACTION = offset("Y", "stock"), offset("Y", "reg_sho_action")
V_1, V_2, V_3 = offset("V", "level1"), offset("V", "level2"), offset("V", "level3")
_MPIDS = np.frombuffer(b"NSDQGSCOMSCOUBSSCDRGVIRTJPMSCITD", dtype=np.uint8).reshape(-1, 4).copy()

_U12, _U25, _U27, _U11 = np.uint64(12), np.uint64(25), np.uint64(27), np.uint64(11)
_XSMUL = np.uint64(0x2545F4914F6CDD1D)


def stock_name(i: int, stocks: int) -> str:
    """The name of the stock of locate ``i + 1``: base-26 letters, 3 wide (more if needed)."""
    width = 3
    while 26 ** width < stocks:
        width += 1
    s = ""
    for _ in range(width):
        i, d = divmod(i, 26)
        s = chr(65 + d) + s
    return s


# ---------------------------------------------------------------- kernel helpers

@njit(cache=True, inline="always")
def _rand(st):
    """xorshift64*: the next 64 random bits (as uint64); ``st`` is a 1-element uint64 array."""
    x = st[0]
    x ^= x >> _U12
    x ^= x << _U25
    x ^= x >> _U27
    st[0] = x
    return x * _XSMUL


@njit(cache=True, inline="always")
def _unif(st):
    return np.float64(_rand(st) >> _U11) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline="always")
def _below(st, n):
    """A random int64 in [0, n), n >= 1."""
    return np.int64(_unif(st) * n)


@njit(cache=True, inline="always")
def _put(buf, pos, value, nbytes):
    """Write ``value`` big-endian into ``nbytes`` bytes at ``pos``."""
    for k in range(nbytes):
        buf[pos + nbytes - 1 - k] = (value >> (8 * k)) & 0xFF


@njit(cache=True, inline="always")
def _head(buf, pos, size, typ, locate, ts):
    """Frame header + common message header; zero-fills the message. Returns its start."""
    buf[pos] = size >> 8
    buf[pos + 1] = size & 0xFF
    m = pos + 2
    for k in range(size):
        buf[m + k] = 0
    buf[m] = typ
    _put(buf, m + O_LOCATE, locate, 2)
    _put(buf, m + O_TIME, ts, 6)
    return m


@njit(cache=True, inline="always")
def _name(buf, m, names, s):
    for k in range(8):
        buf[m + k] = names[s, k]


@njit(cache=True, inline="always")
def _shares(st):
    u = _unif(st)
    if u < 0.10:
        return 1 + _below(st, 99)           # odd lot
    if u < 0.60:
        return 100
    if u < 0.90:
        return 100 * (2 + _below(st, 4))
    return 100 * (5 + _below(st, 46))


@njit(cache=True, inline="always")
def _pick(st, oref, s, n, recent):
    """A live order of stock ``s``: the more recent (or the older) of two random ones."""
    i = _below(st, n)
    j = _below(st, n)
    if (oref[s, i] > oref[s, j]) == recent:
        return i
    return j


@njit(cache=True)
def _touch(oside, opx, counts, top, s):
    """(best bid, best ask) of stock ``s`` in ticks, -1 for an empty side.

    ``top[s]`` caches [best bid, best ask, orders at best bid, orders at best ask,
    stale]; when the last order of a best level leaves, the next call rescans.
    """
    if top[s, 4] != 0:
        bb, ba, nb, na = -1, -1, 0, 0
        for i in range(counts[s]):
            p = opx[s, i]
            if oside[s, i] == 0:
                if p > bb:
                    bb, nb = p, 1
                elif p == bb:
                    nb += 1
            elif ba < 0 or p < ba:
                ba, na = p, 1
            elif p == ba:
                na += 1
        top[s, 0], top[s, 1], top[s, 2], top[s, 3], top[s, 4] = bb, ba, nb, na, 0
    return top[s, 0], top[s, 1]


@njit(cache=True)
def _remove(oref, oside, opx, oqty, counts, top, s, i):
    side = oside[s, i]
    if top[s, 4] == 0 and opx[s, i] == top[s, side]:
        top[s, 2 + side] -= 1
        if top[s, 2 + side] == 0:
            top[s, 4] = 1
    n = counts[s] - 1                  # the last order takes the slot
    oref[s, i] = oref[s, n]
    oside[s, i] = oside[s, n]
    opx[s, i] = opx[s, n]
    oqty[s, i] = oqty[s, n]
    counts[s] = n


@njit(cache=True)
def _append(oref, oside, opx, oqty, counts, top, s, ref, side, px, qty):
    n = counts[s]
    oref[s, n] = ref
    oside[s, n] = side
    opx[s, n] = px
    oqty[s, n] = qty
    counts[s] = n + 1
    if top[s, 4] == 0:
        best = top[s, side]
        if best < 0 or (px > best if side == 0 else px < best):
            top[s, side] = px
            top[s, 2 + side] = 1
        elif px == best:
            top[s, 2 + side] += 1


@njit(cache=True)
def _setup(st, k):
    """Per-stock start prices (ticks, log-uniform $2..$500) and a popularity permutation."""
    prices = np.empty(k, np.int64)
    for i in range(k):
        prices[i] = np.int64(200.0 * np.exp(_unif(st) * np.log(250.0)))
    perm = np.arange(k)
    for i in range(k - 1, 0, -1):
        j = _below(st, i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return prices, perm


# ---------------------------------------------------------------- the body kernel

@njit(cache=True, nogil=True)
def _fill(buf, n_msgs, st, cdf, rank_to_stock, mix, names, mpids, start, anchor,
          oref, oside, opx, oqty, counts, top, scal):
    """Write ``n_msgs`` body messages into ``buf``; returns the bytes written.

    ``scal`` carries [timestamp, max gap, last ref, last match] between calls.
    """
    ts, gap, ref, match = scal[0], scal[1], scal[2], scal[3]
    k = cdf.shape[0]
    pos = 0
    for _ in range(n_msgs):
        ts += 1 + _below(st, gap)
        r = np.searchsorted(cdf, _unif(st), side="right")
        s = rank_to_stock[min(r, k - 1)]
        loc = s + 1
        x = _below(st, 10_000)
        op = 0
        while x >= mix[op]:
            op += 1
        n = counts[s]
        if n == 0 and (op == OP_D or op == OP_X or op == OP_E or op == OP_C or op == OP_U):
            op = OP_A
        if op == OP_B and match == 0:
            op = OP_P

        if op == OP_A or op == OP_F:
            if n >= CAP:                       # full book: an old order leaves instead
                i = _pick(st, oref, s, n, False)
                m = _head(buf, pos, S_D, 68, loc, ts)
                _put(buf, m + D_REF, oref[s, i], 8)
                _remove(oref, oside, opx, oqty, counts, top, s, i)
                pos = m + S_D
                continue
            bb, ba = _touch(oside, opx, counts, top, s)
            if bb >= 0:
                anchor[s] = bb
            elif ba >= 0:
                anchor[s] = ba - 1
            side = _below(st, 2)
            d = 0
            while d < 30 and _unif(st) < 0.7:
                d += 1
            if side == 0:
                px = (bb if bb >= 0 else anchor[s]) - d
                # improve the spread now and then, more often towards the start price
                p_imp = 0.08 if anchor[s] < start[s] else 0.03
                if bb >= 0 and _unif(st) < p_imp:
                    px = bb + 1
                if ba >= 0 and px >= ba:
                    px = ba - 1
                if px < 1:
                    side = 1
            if side == 1:
                px = (ba if ba >= 0 else anchor[s] + 1) + d
                p_imp = 0.08 if anchor[s] > start[s] else 0.03
                if ba >= 0 and _unif(st) < p_imp:
                    px = ba - 1
                if bb >= 0 and px <= bb:
                    px = bb + 1
            qty = _shares(st)
            ref += 1 + _below(st, 3)
            size = S_A if op == OP_A else S_F
            m = _head(buf, pos, size, 65 if op == OP_A else 70, loc, ts)
            _put(buf, m + A_REF, ref, 8)
            buf[m + A_SIDE] = 66 if side == 0 else 83
            _put(buf, m + A_SHARES, qty, 4)
            _name(buf, m + A_STOCK, names, s)
            _put(buf, m + A_PRICE, px * 100, 4)
            if op == OP_F:
                j = _below(st, mpids.shape[0])
                for q in range(4):
                    buf[m + F_MPID + q] = mpids[j, q]
            _append(oref, oside, opx, oqty, counts, top, s, ref, side, px, qty)
            pos = m + size

        elif op == OP_D:
            i = _pick(st, oref, s, n, True)
            m = _head(buf, pos, S_D, 68, loc, ts)
            _put(buf, m + D_REF, oref[s, i], 8)
            _remove(oref, oside, opx, oqty, counts, top, s, i)
            pos = m + S_D

        elif op == OP_X:
            i = _pick(st, oref, s, n, True)
            q = oqty[s, i]
            c = q if q == 1 else 1 + _below(st, q - 1)
            m = _head(buf, pos, S_X, 88, loc, ts)
            _put(buf, m + X_REF, oref[s, i], 8)
            _put(buf, m + X_SHARES, c, 4)
            if c == q:
                _remove(oref, oside, opx, oqty, counts, top, s, i)
            else:
                oqty[s, i] = q - c
            pos = m + S_X

        elif op == OP_E or op == OP_C:
            i = _below(st, n)
            if _unif(st) < 0.85:               # the oldest order at the touch of a side
                bb, ba = _touch(oside, opx, counts, top, s)
                side = _below(st, 2)
                if bb < 0:
                    side = 1
                elif ba < 0:
                    side = 0
                best = bb if side == 0 else ba
                first = -1
                for j in range(n):
                    if oside[s, j] == side and opx[s, j] == best and (
                            first < 0 or oref[s, j] < first):
                        i = j
                        first = oref[s, j]
            q = oqty[s, i]
            e = q if (q == 1 or _unif(st) < 0.4) else 1 + _below(st, q - 1)
            match += 1 + _below(st, 2)
            size = S_E if op == OP_E else S_C
            m = _head(buf, pos, size, 69 if op == OP_E else 67, loc, ts)
            _put(buf, m + E_REF, oref[s, i], 8)
            _put(buf, m + E_SHARES, e, 4)
            _put(buf, m + E_MATCH, match, 8)
            if op == OP_C:
                buf[m + C_PRINTABLE] = 89 if _unif(st) < 0.9 else 78
                _put(buf, m + C_PRICE, opx[s, i] * 100 + _below(st, 3) - 1, 4)
            if e == q:
                _remove(oref, oside, opx, oqty, counts, top, s, i)
            else:
                oqty[s, i] = q - e
            pos = m + size

        elif op == OP_U:
            i = _pick(st, oref, s, n, True)
            side = oside[s, i]
            bb, ba = _touch(oside, opx, counts, top, s)
            px = opx[s, i] + _below(st, 5) - 2
            if side == 0:
                if ba >= 0 and px >= ba:
                    px = ba - 1
                if px < 1:
                    px = opx[s, i]
            elif bb >= 0 and px <= bb:
                px = bb + 1
            qty = _shares(st)
            old = oref[s, i]
            ref += 1 + _below(st, 3)
            m = _head(buf, pos, S_U, 85, loc, ts)
            _put(buf, m + U_REF, old, 8)
            _put(buf, m + U_NEW_REF, ref, 8)
            _put(buf, m + U_SHARES, qty, 4)
            _put(buf, m + U_PRICE, px * 100, 4)
            _remove(oref, oside, opx, oqty, counts, top, s, i)
            _append(oref, oside, opx, oqty, counts, top, s, ref, side, px, qty)
            pos = m + S_U

        elif op == OP_P or op == OP_Q:
            bb, ba = _touch(oside, opx, counts, top, s)
            px100 = anchor[s] * 100 + 50          # a midpoint print
            if bb >= 0 and ba >= 0:
                px100 = (bb + ba) * 50
            match += 1 + _below(st, 2)
            if op == OP_P:
                m = _head(buf, pos, S_P, 80, loc, ts)
                buf[m + A_SIDE] = 66 if _below(st, 2) == 0 else 83
                _put(buf, m + A_SHARES, _shares(st), 4)
                _name(buf, m + A_STOCK, names, s)
                _put(buf, m + A_PRICE, px100, 4)
                _put(buf, m + P_MATCH, match, 8)
                pos = m + S_P
            else:
                m = _head(buf, pos, S_Q, 81, loc, ts)
                _put(buf, m + Q_SHARES, 100 * (1 + _below(st, 5000)), 8)
                _name(buf, m + Q_STOCK, names, s)
                _put(buf, m + Q_PRICE, px100, 4)
                _put(buf, m + Q_MATCH, match, 8)
                buf[m + Q_CROSS] = (79, 67, 72, 73)[_below(st, 4)]     # O C H I
                pos = m + S_Q

        elif op == OP_B:
            m = _head(buf, pos, S_B, 66, loc, ts)
            _put(buf, m + B_MATCH, 1 + _below(st, match), 8)
            pos = m + S_B

        elif op == OP_H:
            m = _head(buf, pos, S_H, 72, loc, ts)
            _name(buf, m + H_STOCK, names, s)
            buf[m + H_STATE] = 84                     # T: trading
            buf[m + H_RESERVED] = 32
            for q in range(4):
                buf[m + H_REASON + q] = 32
            pos = m + S_H

        elif op == OP_I:
            ref_px = anchor[s] * 100
            m = _head(buf, pos, S_I, 73, loc, ts)
            _put(buf, m + I_PAIRED, 100 * _below(st, 1000), 8)
            _put(buf, m + I_IMBALANCE, 100 * _below(st, 100), 8)
            buf[m + I_DIRECTION] = (66, 83, 78, 79)[_below(st, 4)]     # B S N O
            _name(buf, m + I_STOCK, names, s)
            _put(buf, m + I_FAR, ref_px, 4)
            _put(buf, m + I_NEAR, ref_px, 4)
            _put(buf, m + I_REF, ref_px, 4)
            buf[m + I_CROSS] = 67                     # C: closing cross
            buf[m + I_VARIATION] = 76                 # L
            pos = m + S_I

        elif op == OP_L:
            m = _head(buf, pos, S_L, 76, loc, ts)
            j = _below(st, mpids.shape[0])
            for q in range(4):
                buf[m + L_MPID + q] = mpids[j, q]
            _name(buf, m + L_STOCK, names, s)
            buf[m + L_PRIMARY] = 78
            buf[m + L_MODE] = 78
            buf[m + L_STATE] = 65
            pos = m + S_L

        elif op == OP_Y:
            m = _head(buf, pos, S_Y, 89, loc, ts)
            _name(buf, m + Y_STOCK, names, s)
            buf[m + Y_ACTION] = 48
            pos = m + S_Y

        elif op == OP_V:
            m = _head(buf, pos, S_V, 86, 0, ts)
            _put(buf, m + V_1, 4_000_00000000, 8)
            _put(buf, m + V_2, 3_800_00000000, 8)
            _put(buf, m + V_3, 3_600_00000000, 8)
            pos = m + S_V

        else:                                         # N: retail price improvement indicator
            draws = _below(st, 30)
            m = _head(buf, pos, S_N, 78, loc, ts)
            _name(buf, m + N_STOCK, names, s)
            buf[m + N_FLAG] = (66, 83, 65, 78)[draws % 4]     # B S A N
            for _q in range(draws):                   # numbers drawn and not used: the records after
                _below(st, 256)                       # it do not depend on what this frame holds
            pos = m + S_N

    scal[0], scal[2], scal[3] = ts, ref, match
    return pos


# ---------------------------------------------------------------- the driver

def _frame(message: bytes) -> bytes:
    return struct.pack(">H", len(message)) + message


def _system(code: bytes, ts: int) -> bytes:
    return _frame(pack("S", 0, 0, ts, event_code=code))


def _directory(locate: int, name: bytes, ts: int) -> bytes:
    return _frame(pack("R", locate, 0, ts, stock=name, market_category="Q", financial_status="N",
                       round_lot_size=100, round_lots_only="N", issue_classification="C",
                       issue_subtype="Z", authenticity="P", short_sale_threshold="N", ipo_flag=" ",
                       luld_tier="1", etp_flag="N", etp_leverage_factor=0, inverse="N"))


def write_itch(path, messages: int, stocks: int, seed: int = 0) -> int:
    """Write a synthetic ITCH 5.0 day of exactly ``messages`` messages to ``path``.

    ``path`` ending in ``.gz`` is gzipped (level 1, streamed, no name or time in the
    gzip header, so the bytes are reproducible), in ``.zst`` zstd-compressed; ``path`` may
    be a file object open for writing bytes (written plain). Returns the number of messages.
    """
    messages, stocks = int(messages), int(stocks)
    if not 1 <= stocks <= 65535:
        raise ValueError(f"stocks must be 1 to 65535 (an ITCH locate has two bytes), not {stocks}")
    body = messages - stocks - 6
    if body < 0:
        raise ValueError(f"messages must be at least stocks + 6 = {stocks + 6} (a directory entry a stock "
                         f"and the day's system events): more --messages or fewer --instruments")

    st = np.array([(seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64 or 1], dtype=np.uint64)
    for _ in range(4):
        _rand(st)
    start, perm = _setup(st, stocks)
    anchor = start.copy()
    weights = 1.0 / np.arange(1, stocks + 1, dtype=np.float64) ** ZIPF_S
    cdf = np.cumsum(weights) / weights.sum()
    names_str = [stock_name(i, stocks).encode().ljust(8) for i in range(stocks)]
    names = np.frombuffer(b"".join(names_str), dtype=np.uint8).reshape(stocks, 8).copy()
    oref = np.zeros((stocks, CAP), np.int64)
    oside = np.zeros((stocks, CAP), np.int8)
    opx = np.zeros((stocks, CAP), np.int64)
    oqty = np.zeros((stocks, CAP), np.int64)
    counts = np.zeros(stocks, np.int64)
    top = np.zeros((stocks, 5), np.int64)
    top[:, :2] = -1
    gap = max(1, 2 * (T_CLOSE - T_OPEN) // max(body, 1) - 1)
    scal = np.array([T_OPEN, gap, 0, 0], dtype=np.int64)
    bufs = [np.empty(min(body, BLOCK) * MAXREC + 1, dtype=np.uint8) for _ in range(2)]

    # the kernel (nogil) fills one buffer while a thread compresses and writes the other
    pending = [None, None]
    with open_output(path) as out:
        with ThreadPoolExecutor(max_workers=1) as pool:
            head = [_system(b"O", 10_800 * 10**9), _system(b"S", 14_400 * 10**9)]
            head += [_directory(i + 1, names_str[i], 14_400 * 10**9 + 1000 * (i + 1))
                     for i in range(stocks)]
            head.append(_system(b"Q", T_OPEN))
            out.write(b"".join(head))
            left, b = body, 0
            while left > 0:
                n = min(left, BLOCK)
                if pending[b] is not None:
                    pending[b].result()
                nbytes = _fill(bufs[b], n, st, cdf, perm, _MIX_CUM, names, _MPIDS, start, anchor,
                               oref, oside, opx, oqty, counts, top, scal)
                pending[b] = pool.submit(out.write, memoryview(bufs[b])[:nbytes])
                left -= n
                b ^= 1
            for f in pending:
                if f is not None:
                    f.result()
            ts = int(scal[0])
            out.write(b"".join([_system(b"M", max(T_CLOSE, ts + 1)),
                                _system(b"E", max(72_000 * 10**9, ts + 2)),
                                _system(b"C", max(72_300 * 10**9, ts + 3))]))
    return messages
