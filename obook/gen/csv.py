"""Deterministic synthetic CSV order feed for tests and benchmarks.

``write_csv(path, events, tickers, seed=0, depth=200)`` writes
``Time,Ticker,Order,T,Shares,Price,MPID,X`` with CRLF line ends: tickers AAA,
AAB, ...; each ticker's mid drifts by a tick (one cent) now and then; adds
(~46%) rest within 20 ticks of the mid and never cross the other side; deletes
(25%), reduce-to C (10%, a few no-ops), executions E (7%, some past the
remaining), fills F (5%) and trade prints T/X (7%). Order ids are per-ticker
counters, so the same id is live under several tickers. At most ``depth`` live
orders a ticker; a final drain deletes every live order, so the feed replays
without error. A ``path`` ending in ``.gz`` is gzipped. Returns the number of data
lines (events + drain).
"""

from __future__ import annotations

import numpy as np
from .._kernels.jit import njit
from . import open_output

TICK = 100                  # one cent in 1/10000 $
CHUNK = 1 << 22
HEADER = b"Time,Ticker,Order,T,Shares,Price,MPID,X\r\n"
#: bytes a message takes at least: on disk (plain, compressed) and in memory while the day is
#: generated (0: written as it goes); a little below what 1 M messages measure, so that a size
#: `obook gen` refuses for want of room could not have fitted
MIN_BYTES = (33, 10, 0)

# generator state g[]
G_DONE, G_TIME, G_DRAIN, G_LINES, G_RNG = range(5)
# per-order columns
O_ID, O_SIDE, O_PX, O_REM = range(4)


@njit(cache=True)
def _rand(g):
    """xorshift64* in the int64 bit pattern of g[G_RNG]; a non-negative int63."""
    x = np.uint64(g[G_RNG])
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    g[G_RNG] = np.int64(x)
    return np.int64((x * np.uint64(2685821657736338717)) >> np.uint64(1))


@njit(cache=True)
def _put_uint(buf, pos, v):
    if v == 0:
        buf[pos] = 48
        return pos + 1
    n = 0
    t = v
    while t > 0:
        n += 1
        t //= 10
    for j in range(n - 1, -1, -1):
        buf[pos + j] = 48 + v % 10
        v //= 10
    return pos + n


@njit(cache=True)
def _line(buf, pos, g, names, t, oid, typ, shares, px, mpid):
    pos = _put_uint(buf, pos, g[G_TIME])
    buf[pos] = 44
    pos += 1
    for j in range(names.shape[1]):
        buf[pos] = names[t, j]
        pos += 1
    buf[pos] = 44
    pos = _put_uint(buf, pos + 1, oid)
    buf[pos] = 44
    buf[pos + 1] = typ
    buf[pos + 2] = 44
    pos = _put_uint(buf, pos + 3, shares)
    buf[pos] = 44
    pos = _put_uint(buf, pos + 1, px)
    buf[pos] = 44
    pos += 1
    if mpid:
        for c in (78, 83, 68, 81):            # NSDQ
            buf[pos] = c
            pos += 1
    buf[pos] = 44
    buf[pos + 1] = 13
    buf[pos + 2] = 10
    g[G_LINES] += 1
    return pos + 3


@njit(cache=True)
def _remove(orders, nlive, t, j):
    last = nlive[t] - 1
    for c in range(4):
        orders[t, j, c] = orders[t, last, c]
    nlive[t] = last


@njit(cache=True)
def _gen_chunk(buf, g, events, names, mid, nlive, next_id, orders, depth):
    """Write lines into buf until it is nearly full or the feed ends; returns (bytes, done)."""
    n_tk = names.shape[0]
    pos = 0
    limit = buf.shape[0] - 256
    while pos < limit:
        if g[G_DONE] >= events:               # drain: delete every live order
            t = g[G_DRAIN]
            while t < n_tk and nlive[t] == 0:
                t += 1
            g[G_DRAIN] = t
            if t == n_tk:
                return pos, True
            j = nlive[t] - 1
            g[G_TIME] += _rand(g) % 2
            pos = _line(buf, pos, g, names, t, orders[t, j, O_ID], 68, orders[t, j, O_REM],
                        orders[t, j, O_PX], False)
            nlive[t] = j
            continue
        g[G_DONE] += 1
        g[G_TIME] += _rand(g) % 4
        t = _rand(g) % n_tk
        if _rand(g) % 50 == 0:                 # the mid drifts by a tick
            mid[t] += TICK if _rand(g) % 2 == 0 else -TICK
            if mid[t] < 40 * TICK:
                mid[t] = 40 * TICK
        r = _rand(g) % 100
        n = nlive[t]
        if r >= 46 and r < 93 and n == 0:
            r = 0                              # nothing to act on: add
        if r < 46 and n >= depth:
            r = 50                             # full: delete
        if r < 46:                             # add, never crossing
            side = _rand(g) % 2
            best_bid = np.int64(0)
            best_ask = np.int64(1) << 40
            for j in range(n):
                p = orders[t, j, O_PX]
                if orders[t, j, O_SIDE] == 0:
                    best_bid = max(best_bid, p)
                else:
                    best_ask = min(best_ask, p)
            k = 1 + _rand(g) % 20
            if side == 0:
                px = mid[t] - k * TICK
                if px >= best_ask:
                    px = best_ask - TICK
                if px < TICK:
                    px = TICK
            else:
                px = mid[t] + k * TICK
                if px <= best_bid:
                    px = best_bid + TICK
            u = _rand(g) % 1000
            shares = 0 if u < 2 else (1 + u % 99 if u < 40 else 100 * (1 + u % 10))
            next_id[t] += 1
            orders[t, n, O_ID] = next_id[t]
            orders[t, n, O_SIDE] = side
            orders[t, n, O_PX] = px
            orders[t, n, O_REM] = shares
            nlive[t] = n + 1
            pos = _line(buf, pos, g, names, t, next_id[t], 66 if side == 0 else 83, shares, px,
                        _rand(g) % 4 == 0)
        elif r < 93:
            j = _rand(g) % n
            oid = orders[t, j, O_ID]
            rem = orders[t, j, O_REM]
            px = orders[t, j, O_PX]
            if r < 71:                         # delete
                typ = 68
                shares = rem
                _remove(orders, nlive, t, j)
            elif r < 81:                       # reduce to
                typ = 67
                if rem > 0 and _rand(g) % 10 != 0:
                    shares = _rand(g) % rem
                    orders[t, j, O_REM] = shares
                    if shares == 0:
                        _remove(orders, nlive, t, j)
                else:
                    shares = rem + _rand(g) % 100   # no change
            elif r < 88:                       # execute, clamped
                typ = 69
                shares = 1 + _rand(g) % max(rem, 1)
                if _rand(g) % 5 == 0:
                    shares = rem + _rand(g) % 50
                rem -= min(shares, rem)
                orders[t, j, O_REM] = rem
                if rem == 0:
                    _remove(orders, nlive, t, j)
            else:                              # fill
                typ = 70
                shares = rem
                _remove(orders, nlive, t, j)
            pos = _line(buf, pos, g, names, t, oid, typ, shares, px, False)
        else:                                  # trade print
            typ = 84 if _rand(g) % 2 == 0 else 88
            pos = _line(buf, pos, g, names, t, _rand(g) % 1000, typ, 100 * (1 + _rand(g) % 5),
                        mid[t], False)
    return pos, False


def ticker_names(tickers: int) -> np.ndarray:
    """uint8 (tickers, width) of AAA, AAB, ... (4 letters past 17576 tickers)."""
    width = 3
    while 26 ** width < tickers:
        width += 1
    i = np.arange(tickers, dtype=np.int64)
    cols = [(i // 26 ** (width - 1 - j)) % 26 + 65 for j in range(width)]
    return np.stack(cols, axis=1).astype(np.uint8)


def write_csv(path, events: int, tickers: int, seed: int = 0, depth: int = 200) -> int:
    """Write a deterministic CSV feed to ``path``; returns the number of data lines."""
    if tickers < 1 or depth < 1:
        raise ValueError("tickers and depth must be at least 1")
    names = ticker_names(tickers)
    rng = np.random.default_rng(seed)
    mid = rng.integers(1000, 50000, tickers).astype(np.int64) * TICK
    g = np.zeros(5, np.int64)
    g[G_TIME] = 34_200_000
    g[G_RNG] = int(rng.integers(1, 1 << 62))
    nlive = np.zeros(tickers, np.int64)
    next_id = np.zeros(tickers, np.int64)
    orders = np.zeros((tickers, depth, 4), np.int64)
    buf = np.empty(CHUNK, np.uint8)
    with open_output(path) as f:
        f.write(HEADER)
        done = False
        while not done:
            n, done = _gen_chunk(buf, g, int(events), names, mid, nlive, next_id, orders, int(depth))
            f.write(buf[:n].tobytes())
    return int(g[G_LINES])
