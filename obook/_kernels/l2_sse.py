"""Kernels of the Shanghai AX-SBE text log: line scan and BizIndex order
(framer), and book events (decoder).

Line kinds of ``sse_scan``: KIND_NONE (no message: blank, hex dump), KIND_EVENT (an
order 192 or a trade 191, ordered by its BizIndex within its channel), KIND_SNAPSHOT
(111, read by the audit, not by the books), or a negative error code with the key
id (or the message type) it is about in ``keys``. Lines are read by l2_text's tokenizer
(the Shanghai layout's next key guessed, digits read a word at a time); the kernels take
its state as one ``l2_text.Fields`` (F) and the framer's per-line results as one ``Lines``.
"""

from collections import namedtuple

import numpy as np
from .jit import njit

from .l2_text import (K_BID_PX, K_BIDSEQ, K_BIZ, K_CHANNEL, K_DATATS, K_EXECTYPE, K_HIGH,
                      K_LASTPX, K_LASTQTY, K_LOW, K_MSGTYPE, K_NUMTRADES, K_OPEN, K_TOTVAL, K_TOTVOL, K_OFFERSEQ, K_ORDERNO, K_ORDERQTY, K_ORDTYPE, K_PRICE, K_SECID,
                      K_SIDE, K_TTIME, LINE_BAD_TOKEN, LINE_NOT_MESSAGE, LINE_OK, line_bounds, line_end,
                      binary_at, marker_at, marker_lost, parse_line, parse_tokens)
from .layout import ACT_ADD, ACT_DELETE, ACT_EXEC, DEFER, NOT_PRINTABLE, TYPE_SHIFT

KIND_NONE = 0
KIND_EVENT = 1
KIND_SNAPSHOT = 2
BAD_TOKEN = -1        # a token without '='
BAD_MISSING = -2      # a field the message type needs is absent (keys: key id)
BAD_NUMBER = -3       # a field is not an integer (keys: key id)
BAD_VALUE = -4        # a field has a value outside its codes (keys: key id)
BAD_TYPE = -5         # unknown MsgType (keys: the type)
BAD_SECURITY = -6     # SecurityID not a number below 10**6
BAD_CUT = -7          # the feed's last line, without a line end, is not a whole message (the framer's)
BAD_MARKER = -8       # a message line without its leading // (l2_text.marker_lost)
BAD_BINARY = -9       # a line holding bytes no text has (l2_text.binary_at)
BAD_MERGED = -10      # a message line holding a second // (l2_text.marker_at): a line end lost

MAX_SECURITY = 1_000_000

#: the framer's scan, one entry a line: its bounds, kind, key (BizIndex, or an error's
#: detail), channel and MsgType
Lines = namedtuple("Lines", ("starts", "ends", "kinds", "keys", "chans", "mtypes"))
ORDER_KEYS = np.array([K_SECID, K_CHANNEL, K_ORDERNO, K_PRICE, K_ORDERQTY, K_ORDTYPE, K_SIDE,
                       K_TTIME, K_BIZ], np.int64)
TRADE_KEYS = np.array([K_SECID, K_CHANNEL, K_BIDSEQ, K_OFFERSEQ, K_LASTPX, K_LASTQTY, K_EXECTYPE,
                       K_TTIME, K_BIZ], np.int64)
#: the keys of a snapshot the audit compares besides its book and time (the day tallies, the
#: 10 levels a side: every exchange snapshot has them all, an empty level as 0): not negative
SNAP_VALUES = np.array([K_NUMTRADES, K_TOTVOL, K_TOTVAL, K_LASTPX, K_HIGH, K_LOW]
                       + list(range(K_BID_PX, K_BID_PX + 40)), np.int64)
SNAP_KEYS = np.concatenate((np.array([K_SECID, K_DATATS], np.int64), SNAP_VALUES))


@njit(cache=True, _nrt=False)
def _check(vals, have, need):
    """0 when every key of ``need`` is a present integer, else (code, key id)."""
    for j in range(need.shape[0]):
        k = need[j]
        if have[k] == 0:
            return BAD_MISSING, k
        if have[k] < 0:
            return BAD_NUMBER, k
    return 0, 0


@njit(cache=True, _nrt=False, inline="always")
def transact_ok(t):
    """Whether a TransactTime is a time of day HHMMSScc (hours below 24, minutes and
    seconds below 60)."""
    return 0 <= t < 24_000_000 and t // 10_000 % 100 < 60 and t // 100 % 100 < 60


@njit(cache=True, _nrt=False)
def classify(vals, have):
    """(kind, detail) of a parsed message line."""
    if have[K_MSGTYPE] == 0:
        return BAD_MISSING, K_MSGTYPE
    if have[K_MSGTYPE] < 0:
        return BAD_NUMBER, K_MSGTYPE
    t = vals[K_MSGTYPE]
    if t == 192:
        c, k = _check(vals, have, ORDER_KEYS)
        if c != 0:
            return c, k
        if vals[K_ORDTYPE] != 65 and vals[K_ORDTYPE] != 68:
            return BAD_VALUE, K_ORDTYPE
        if vals[K_SIDE] != 66 and vals[K_SIDE] != 83:
            return BAD_VALUE, K_SIDE
    elif t == 191:
        c, k = _check(vals, have, TRADE_KEYS)
        if c != 0:
            return c, k
        if vals[K_EXECTYPE] != 66 and vals[K_EXECTYPE] != 83 and vals[K_EXECTYPE] != 78:
            return BAD_VALUE, K_EXECTYPE
    elif t == 111:
        c, k = _check(vals, have, SNAP_KEYS)
        if c != 0:
            return c, k
        ts = vals[K_DATATS]         # HHMMSS
        if not (0 <= ts < 240000 and ts // 100 % 100 < 60 and ts % 100 < 60):
            return BAD_VALUE, K_DATATS
        for j in range(SNAP_VALUES.shape[0]):
            if vals[SNAP_VALUES[j]] < 0:
                return BAD_VALUE, SNAP_VALUES[j]
    else:
        return BAD_TYPE, t
    if vals[K_SECID] < 0 or vals[K_SECID] >= MAX_SECURITY:
        return BAD_SECURITY, K_SECID
    if t != 111 and not transact_ok(vals[K_TTIME]):
        return BAD_VALUE, K_TTIME
    if t != 111:      # no negative price or quantity
        for k in (K_PRICE, K_ORDERQTY) if t == 192 else (K_LASTPX, K_LASTQTY):
            if vals[k] < 0:
                return BAD_VALUE, k
    return (KIND_SNAPSHOT, 0) if t == 111 else (KIND_EVENT, 0)


@njit(cache=True, _nrt=False)
def sse_scan(buf, n, final, max_lines, F, L):
    """Whole lines at the front of buf[:n] (a last line without newline when final), up to
    max_lines, into L (``Lines``): their bounds, kinds, BizIndex (keys), channel and
    MsgType. Returns the number of lines."""
    khash, kid, vals, have = F.khash, F.kid, F.vals, F.have
    starts, ends, kinds, keys, chans, mtypes = L.starts, L.ends, L.kinds, L.keys, L.chans, L.mtypes
    p = 0
    k = 0
    while k < max_lines and p < n:
        e = line_end(buf, p, n)
        if e >= n and not final:
            break
        starts[k] = p
        ends[k] = e
        chans[k] = 0
        keys[k] = 0
        mtypes[k] = 0
        st, _ = parse_line(buf, p, e, khash, kid, vals, have)
        if st == LINE_NOT_MESSAGE:
            kinds[k] = (BAD_MARKER if marker_lost(buf, p, e)
                        else (BAD_BINARY if binary_at(buf, p, e) >= 0 else KIND_NONE))
        elif marker_at(buf, p + 2, e) >= 0:    # (two messages read as one: the first one lost)
            kinds[k] = BAD_MERGED
        elif st == LINE_BAD_TOKEN:
            kinds[k] = BAD_TOKEN
        else:
            c, d = classify(vals, have)
            kinds[k] = c
            mtypes[k] = vals[K_MSGTYPE] if have[K_MSGTYPE] > 0 else 0
            if c == KIND_EVENT:
                keys[k] = vals[K_BIZ]
                chans[k] = vals[K_CHANNEL]
            else:
                keys[k] = d
        k += 1
        p = e + 1
    return k


@njit(cache=True, _nrt=False)
def last_cut(kinds, chans, rank, n, limit, n_chan_slots, cnt, top):
    """The largest c <= limit such that, in every channel, the events among lines [0, c)
    are exactly that channel's lowest-BizIndex events among lines [0, n) (``rank``: an
    event's position in its channel's BizIndex order; ``chans`` mapped to 0..slots-1).
    0 when there is none."""
    for j in range(n_chan_slots):
        cnt[j] = 0
        top[j] = 0
    bad = 0
    best = 0
    for i in range(limit):
        if kinds[i] == KIND_EVENT:
            c = chans[i]
            before = cnt[c] != top[c]
            cnt[c] += 1
            if rank[i] + 1 > top[c]:
                top[c] = rank[i] + 1
            after = cnt[c] != top[c]
            if before and not after:
                bad -= 1
            elif after and not before:
                bad += 1
        if bad == 0:
            best = i + 1
    return best


@njit(cache=True, _nrt=False)
def permute_lines(buf, starts, ends, order, n_lines, out):
    """Write lines order[0..n_lines) of buf (each with a newline) into out; returns bytes."""
    w = 0
    for j in range(n_lines):
        i = order[j]
        for p in range(starts[i], ends[i]):
            out[w] = buf[p]
            w += 1
        out[w] = 10
        w += 1
    return w


@njit(cache=True, _nrt=False)
def owner_of(security, n_workers):
    return (((security * 2654435761) >> 16) & 0xFFFF) % n_workers


@njit(cache=True, _nrt=False)
def transact_ns(t):
    """HHMMSScc (hundredths of a second) -> ns since midnight."""
    s = (t // 1000000) * 3600 + ((t // 10000) % 100) * 60 + (t // 100) % 100
    return (s * 100 + t % 100) * 10_000_000


@njit(cache=True, _nrt=False)
def sse_decode(buf, base_seq, worker, n_workers, F, books, n_books, names, ev):
    """Book events of the owned order and trade lines of buf (whole lines in BizIndex order).

    ``books[security]``: local book + 1 (0: not seen); a new security gets the next local
    book and a row (local book, security) in ``names``. An add rests the order; a delete
    removes it; a trade reduces the resting order: ExecType 'B' (buyer aggressor) the sell
    order, 'S' the buy order, 'N' (call auction) both, the second not printed again.
    Lines the framer rejected are skipped. Returns (events, books, new names).
    """
    khash, kid, vals, have = F.khash, F.kid, F.vals, F.have
    n = buf.shape[0]
    p = 0
    k = -1
    ne = 0
    nn = 0
    while p < n:
        e = line_end(buf, p, n)
        k += 1
        a = p
        p = e + 1
        st, pos = parse_line(buf, a, e, khash, kid, vals, have, K_SECID)
        if st != LINE_OK or have[K_SECID] <= 0:
            continue
        if n_workers > 1 and owner_of(vals[K_SECID], n_workers) != worker:
            continue      # not this worker's: the rest of the line is not read
        st, _ = parse_tokens(buf, pos, line_bounds(buf, a, e)[1], khash, kid, vals, have, -1)
        if st != LINE_OK:
            continue
        c, _d = classify(vals, have)
        if c != KIND_EVENT:
            continue
        sec = vals[K_SECID]
        b = books[sec] - 1
        if b < 0:
            b = n_books
            n_books += 1
            books[sec] = b + 1
            names[nn, 0] = b
            names[nn, 1] = sec
            nn += 1
        seq = base_seq + k
        tm = transact_ns(vals[K_TTIME])
        if vals[K_MSGTYPE] == 192:
            side = 0 if vals[K_SIDE] == 66 else 1
            for col in range(ev.shape[1]):
                ev[ne, col] = 0
            ev[ne, 0] = seq
            ev[ne, 1] = tm
            ev[ne, 2] = b
            ev[ne, 4] = vals[K_ORDERNO]
            if vals[K_ORDTYPE] == 65:
                ev[ne, 3] = ACT_ADD | (side << 8) | (65 << TYPE_SHIFT)
                ev[ne, 5] = vals[K_ORDERQTY]
                ev[ne, 6] = vals[K_PRICE]
            else:
                ev[ne, 3] = ACT_DELETE | (side << 8) | (68 << TYPE_SHIFT)
            ne += 1
        else:
            x = vals[K_EXECTYPE]
            first = True
            for r in range(2):
                if (r == 0 and x == 66) or (r == 1 and x == 83):   # B: the bid is the aggressor
                    continue
                for col in range(ev.shape[1]):
                    ev[ne, col] = 0
                ev[ne, 0] = seq
                ev[ne, 1] = tm
                ev[ne, 2] = b
                act = ACT_EXEC | (67 << TYPE_SHIFT)
                if not first:
                    act |= NOT_PRINTABLE
                elif x == 78:
                    act |= DEFER      # the second reduction follows: one row for the trade
                ev[ne, 3] = act
                ev[ne, 4] = vals[K_BIDSEQ] if r == 0 else vals[K_OFFERSEQ]
                ev[ne, 5] = vals[K_LASTQTY]
                ev[ne, 8] = vals[K_BIZ]
                ev[ne, 9] = vals[K_LASTPX]
                first = False
                ne += 1
    return ne, n_books, nn


# snapshot rows of sse_snapshots
(S_SEQ, S_SECURITY, S_TIME, S_NUM_TRADES, S_VOLUME, S_VALUE, S_LAST, S_OPEN, S_HIGH,
 S_LOW) = range(10)
S_LEVELS = 10          # then bid px 0..9, bid qty 0..9, ask px 0..9, ask qty 0..9
S_WIDTH = S_LEVELS + 40


@njit(cache=True, _nrt=False)
def sse_snapshots(buf, n, final, base_seq, F, out, chan_of, stop, sec_time):
    """The snapshot (111) lines among the whole lines at the front of buf[:n], one row of
    ``out`` each (S_* columns; a time of DataTimeStamp HHMMSS as ns since midnight).
    Of the order and trade lines: ``chan_of[security]`` the channel of its events (-1: none
    yet, -2: several), ``sec_time[security]`` the latest time of its events on the lines
    numbered below ``stop``. Returns (lines, bytes, rows); stops early when ``out`` is full."""
    khash, kid, vals, have = F.khash, F.kid, F.vals, F.have
    p = 0
    k = 0
    r = 0
    while p < n and r < out.shape[0]:
        e = line_end(buf, p, n)
        if e >= n and not final:
            break
        st, _ = parse_line(buf, p, e, khash, kid, vals, have)
        if st == 0 and have[K_MSGTYPE] > 0 and vals[K_MSGTYPE] == 111:
            c, _d = classify(vals, have)
            if c == KIND_SNAPSHOT:
                for j in range(out.shape[1]):
                    out[r, j] = 0
                t = vals[K_DATATS]
                out[r, S_SEQ] = base_seq + k
                out[r, S_SECURITY] = vals[K_SECID]
                out[r, S_TIME] = ((t // 10000) * 3600 + ((t // 100) % 100) * 60 + t % 100) * 1_000_000_000
                for j, key in enumerate((K_NUMTRADES, K_TOTVOL, K_TOTVAL, K_LASTPX, K_OPEN, K_HIGH, K_LOW)):
                    if have[key] > 0:
                        out[r, S_NUM_TRADES + j] = vals[key]
                for j in range(40):
                    if have[K_BID_PX + j] > 0:
                        out[r, S_LEVELS + j] = vals[K_BID_PX + j]
                r += 1
        elif (st == 0 and have[K_MSGTYPE] > 0 and (vals[K_MSGTYPE] == 191 or vals[K_MSGTYPE] == 192)
              and have[K_SECID] > 0 and have[K_CHANNEL] > 0 and have[K_TTIME] > 0):
            s = vals[K_SECID]
            if 0 <= s < chan_of.shape[0]:
                c = vals[K_CHANNEL]
                if chan_of[s] == -1 and c >= 0:
                    chan_of[s] = c
                elif chan_of[s] != c:
                    chan_of[s] = -2
                if base_seq + k < stop and transact_ok(vals[K_TTIME]):
                    tm = transact_ns(vals[K_TTIME])
                    if tm > sec_time[s]:
                        sec_time[s] = tm
        k += 1
        p = e + 1
    return k, min(p, n), r
