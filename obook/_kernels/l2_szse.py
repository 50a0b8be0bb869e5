"""Kernels of the Shenzhen Level-2 ticks: the AX-SBE text log and binary
records become rows of one record table (R_* columns), from which one kernel makes
the book events.

Replay rules (``szse_events``), per channel in ApplSeqNum order:

- an order (192) of side '1'/'2' ('G'/'F', securities lending, are not in the book) whose
  next records in its channel are executions 'F' naming it is an *incoming* order: each
  fill reduces the resting order it names, and what the incoming order has left after its
  last fill is added at that fill's record (so no crossed book is ever published between
  an order and its fills). A market order ('1') rests at the price its first fill prints;
  an order whose own cancel '4' follows its fills (a market order's rest, an
  immediate-or-cancel) never rests. An order without fills rests at once at its price;
  an own-best order ('U') at its own side's best (the book kernel's OWN_BEST; with that
  side empty the exchange cancels it, and its cancel follows: it never rests).
- an execution 'F' that follows no incoming order (the call auctions' uncross) reduces both
  orders; only the first reduction prints a trade.
- a cancel '4' reduces the one order it names by LastQty (removed at 0).
- the ChiNext price cage (securities 300000-301999, continuous trading 09:30-14:57 by
  TransactTime): every event of such a book carries CAGED; a limit order that rests at
  once (no fills follow it) carries CAGE_ADD (the book kernel holds it when it is
  outside the cage); the last event of each record (of an incoming order: of its last
  fill) carries CAGE_LIVE (held orders the cage now admits enter there). The fills of an
  entering order follow no order of theirs, so they reduce both orders like an auction's.
  The previous close is not in the feed: with no best bid, best ask or trade (this
  session's, as replayed) a caged order has no reference and is not held.
"""

from collections import namedtuple

import numpy as np
from .jit import njit

from .l2_text import (K_BIDSEQ, K_CHANNEL, K_EXECTYPE, K_LASTPX, K_LASTQTY, K_MSGLEN, K_MSGTYPE,
                      K_OFFERSEQ, K_ORDERQTY, K_ORDTYPE, K_PHASE, K_PRICE, K_SECID, K_SIDE, K_SOURCE,
                      K_TTIME, K_APPLSEQ, KLEN, KMASK, KWORD, LINE_OK, _fast_value, _is_key,
                      binary_at, line_bounds, line_end, marker_lost, parse_line, parse_tokens)
from .layout import (ACT_ADD, ACT_CANCEL, ACT_EXEC, CAGE_ADD, CAGE_LIVE, CAGED, DEFER, NOT_PRINTABLE,
                     OWN_BEST, TYPE_SHIFT)

# record table columns
# (R_BAD: 0; no row of a bad record is made any more: the text workers report theirs, the
# binary framer refuses them)
(R_SEQ, R_CHAN, R_APPL, R_TYPE, R_SEC, R_BID, R_OFFER, R_SIDE, R_ORDTYPE, R_PRICE, R_QTY,
 R_TIME, R_EXEC, R_LASTPX, R_LASTQTY, R_BAD) = range(16)
R_WIDTH = 16
# a text line's head row (the text framer's; its workers parse the rest of their lines):
# the record row's first columns (R_SEQ .. R_OFFER: what the framer's checks read), then
# where the line is in the batch's text and where its head ends (-1: an unusual line, the
# worker parses it whole again)
H_START, H_END, H_POS = 7, 8, 9
H_WIDTH = 10
#: the text framer's results: per line its newline (``ends``), code and detail; the head
#: rows (``rows``, H_WIDTH columns)
Heads = namedtuple("Heads", ("ends", "codes", "details", "rows"))
# a binary record's head row (the binary framer's; its workers read the records): R_SEQ .. R_OFFER
B_WIDTH = 7

ORDER = 192
TRADE = 191
SNAPSHOT = 111
HEADER = 24
ORDER_LEN = 48
TRADE_LEN = 64
MAX_SECURITY = 1_000_000
CAGE_FIRST = 300000          # ChiNext: 300xxx, 301xxx
CAGE_END = 302000
CONTINUOUS_START = 34_200 * 10**9    # 09:30 (ns since midnight)
CONTINUOUS_END = 53_820 * 10**9      # 14:57
# order keys of the book events (ref_key): ApplSeqNum numbers each channel's records from 1,
# so one number is live in many books at once, and the book kernel's direct order index
# (refs below 2**32, one book each) sent nearly every Shenzhen order to its overflow hash
# table. Keys: a worker hands out chunks of 2**REF_BITS keys, one per (channel, ApplSeqNum
# >> REF_BITS) as they come (at most REF_CHUNKS: 2**32 keys; REF_SLOTS channels,
# ApplSeqNums below 2**(REF_BITS + REF_HI_BITS)); anything beyond: the ApplSeqNum ^ REF_FAR.
CHANNELS = 1 << 16
REF_BITS = 20
REF_LOW = (1 << REF_BITS) - 1
REF_HI_BITS = 6
REF_SLOTS = 1024
REF_CHUNKS = 1 << (32 - REF_BITS)
REF_FAR = np.int64(1) << 62
# the key state (one int64 array a worker keeps): the channel slots (slot + 1, 0: none),
# the chunk of each (slot, high bits) (chunk + 1), each chunk's high bits, two counters
RK_CHUNK = CHANNELS
RK_HI = RK_CHUNK + (REF_SLOTS << REF_HI_BITS)
RK_SLOTS = RK_HI + REF_CHUNKS
RK_CHUNKS = RK_SLOTS + 1
RK_WIDTH = RK_CHUNKS + 1

# scan codes (framer)
OK = 0
BAD_TOKEN = -1
BAD_MISSING = -2
BAD_NUMBER = -3
BAD_VALUE = -4
BAD_TYPE = -5
BAD_LENGTH = -6
BAD_CUT = -7        # the feed's last line, without a line end, is not a whole record (the framer's)
BAD_MARKER = -8     # a message line without its leading // (l2_text.marker_lost)
BAD_BINARY = -9     # a line holding bytes no text has (l2_text.binary_at)
NOT_MESSAGE = 1
#: the most an incoming order's fills are summed to (int64): fills past its quantity leave no rest
FILLED_MAX = (1 << 63) - 1

ORDER_KEYS = np.array([K_SECID, K_CHANNEL, K_APPLSEQ, K_PRICE, K_ORDERQTY, K_SIDE, K_ORDTYPE, K_TTIME],
                      np.int64)
TRADE_KEYS = np.array([K_SECID, K_CHANNEL, K_APPLSEQ, K_BIDSEQ, K_OFFERSEQ, K_LASTPX, K_LASTQTY,
                       K_EXECTYPE, K_TTIME], np.int64)
HEAD_KEYS = np.array([K_SECID, K_CHANNEL, K_APPLSEQ], np.int64)                  # the framer's
TRADE_HEAD_KEYS = np.array([K_SECID, K_CHANNEL, K_APPLSEQ, K_BIDSEQ, K_OFFERSEQ], np.int64)


@njit(cache=True, _nrt=False)
def time_ns(t):
    """TransactTime YYYYMMDDHHMMSSsss -> ns since midnight (the time of day HHMMSSsss taken
    apart in 32-bit unsigned steps: signed 64-bit divisions cost ~8 ns a record)."""
    x = np.uint32(t % 1_000_000_000)
    hh = x // np.uint32(10_000_000)
    x -= hh * np.uint32(10_000_000)
    mm = x // np.uint32(100_000)
    x -= mm * np.uint32(100_000)
    ss = x // np.uint32(1000)
    ms = x - ss * np.uint32(1000)
    s = np.int64(hh) * 3600 + np.int64(mm % np.uint32(100)) * 60 + np.int64(ss % np.uint32(100))
    return (s * 1000 + np.int64(ms)) * 1_000_000


@njit(cache=True, _nrt=False, inline="always")
def stamp_ok(t):
    """Whether a TransactTime is a YYYYMMDDHHMMSSsss stamp: a date (years 1990-2099)
    and a time of day (hours below 24, minutes and seconds below 60)."""
    if t < 19900101_000000000 or t >= 21000101_000000000:
        return False
    day = t // 1_000_000_000
    tod = t - day * 1_000_000_000
    month = day // 100 % 100
    mday = day % 100
    hh = tod // 10_000_000
    mm = tod // 100_000 % 100
    ss = tod // 1000 % 100
    return 1 <= month <= 12 and 1 <= mday <= 31 and hh < 24 and mm < 60 and ss < 60


@njit(cache=True, _nrt=False, inline="always")
def side_ok(side):
    """Side '1' buy, '2' sell, 'G' / 'F' securities lending."""
    return side == 49 or side == 50 or side == 71 or side == 70


@njit(cache=True, _nrt=False, inline="always")
def ordtype_ok(ordtype):
    """OrdType '1' market, '2' limit, 'U' own side's best."""
    return ordtype == 49 or ordtype == 50 or ordtype == 85


@njit(cache=True, _nrt=False)
def owner_of(security, n_workers):
    return (((np.int64(security) * 2654435761) >> 16) & 0xFFFF) % n_workers    # (int32 ``secs`` too)


@njit(cache=True, _nrt=False)
def _need(have, keys):
    """(OK, 0), or (BAD_MISSING / BAD_NUMBER, key id) of the first key of ``keys`` absent
    or not an integer."""
    for j in range(keys.shape[0]):
        if have[keys[j]] == 0:
            return BAD_MISSING, keys[j]
        if have[keys[j]] < 0:
            return BAD_NUMBER, keys[j]
    return OK, 0


@njit(cache=True, _nrt=False)
def text_check(vals, have):
    """(code, detail) of the fields of an order or execution line past the framer's
    (head_check): OK, or BAD_* with the key id."""
    c, d = _need(have, ORDER_KEYS if vals[K_MSGTYPE] == ORDER else TRADE_KEYS)
    if c != OK:
        return c, d
    if vals[K_MSGTYPE] == TRADE:
        if vals[K_EXECTYPE] != 70 and vals[K_EXECTYPE] != 52:
            return BAD_VALUE, K_EXECTYPE
        if vals[K_LASTQTY] < 0:       # no negative quantity
            return BAD_VALUE, K_LASTQTY
        if vals[K_LASTPX] < 0:        # nor price
            return BAD_VALUE, K_LASTPX
    else:
        if not side_ok(vals[K_SIDE]):
            return BAD_VALUE, K_SIDE
        if not ordtype_ok(vals[K_ORDTYPE]):
            return BAD_VALUE, K_ORDTYPE
        if vals[K_ORDERQTY] < 0:
            return BAD_VALUE, K_ORDERQTY
        if vals[K_PRICE] < 0:
            return BAD_VALUE, K_PRICE
    if not stamp_ok(vals[K_TTIME]):
        return BAD_VALUE, K_TTIME
    return OK, 0


@njit(cache=True, _nrt=False)
def _put_text(rec, r, seq, vals):
    for c in range(R_WIDTH):
        rec[r, c] = 0
    rec[r, R_SEQ] = seq
    rec[r, R_CHAN] = vals[K_CHANNEL]
    rec[r, R_APPL] = vals[K_APPLSEQ]
    rec[r, R_TYPE] = vals[K_MSGTYPE]
    rec[r, R_SEC] = vals[K_SECID]
    rec[r, R_TIME] = time_ns(vals[K_TTIME])
    if vals[K_MSGTYPE] == ORDER:
        rec[r, R_SIDE] = vals[K_SIDE]
        rec[r, R_ORDTYPE] = vals[K_ORDTYPE]
        rec[r, R_PRICE] = vals[K_PRICE]
        rec[r, R_QTY] = vals[K_ORDERQTY]
    else:
        rec[r, R_BID] = vals[K_BIDSEQ]
        rec[r, R_OFFER] = vals[K_OFFERSEQ]
        rec[r, R_EXEC] = vals[K_EXECTYPE]
        rec[r, R_LASTPX] = vals[K_LASTPX]
        rec[r, R_LASTQTY] = vals[K_LASTQTY]


@njit(cache=True, _nrt=False)
def head_check(vals, have):
    """(code, detail) of the fields the framer reads (type, security, channel, sequence
    and, for an execution, the two order numbers): OK, NOT_MESSAGE for a snapshot, BAD_*."""
    if have[K_MSGTYPE] == 0:
        return BAD_MISSING, K_MSGTYPE
    if have[K_MSGTYPE] < 0:
        return BAD_NUMBER, K_MSGTYPE
    t = vals[K_MSGTYPE]
    if t == SNAPSHOT:
        return NOT_MESSAGE, 0
    if t != ORDER and t != TRADE:
        return BAD_TYPE, t
    c, d = _need(have, HEAD_KEYS if t == ORDER else TRADE_HEAD_KEYS)
    if c != OK:
        return c, d
    if vals[K_SECID] < 0 or vals[K_SECID] >= MAX_SECURITY:
        return BAD_VALUE, K_SECID
    if have[K_SOURCE] != 0 and (have[K_SOURCE] < 0 or vals[K_SOURCE] != 102):
        return BAD_VALUE, K_SOURCE
    # the channel indexes per-channel tables (CHANNELS rows); ApplSeqNum numbers from 1
    if vals[K_CHANNEL] < 0 or vals[K_CHANNEL] >= CHANNELS:
        return BAD_VALUE, K_CHANNEL
    if vals[K_APPLSEQ] < 1:
        return BAD_VALUE, K_APPLSEQ
    if t == TRADE and vals[K_BIDSEQ] < 0:
        return BAD_VALUE, K_BIDSEQ
    if t == TRADE and vals[K_OFFERSEQ] < 0:
        return BAD_VALUE, K_OFFERSEQ
    return OK, 0


@njit(cache=True, _nrt=False)
def parse_head(buf, a, e, khash, kid, vals, have):
    """Parse the line buf[a:e] up to the fields the framer reads (the rest of a line in the
    usual key order is not read); returns (LINE_*, position parsing stopped at)."""
    st, pos = parse_line(buf, a, e, khash, kid, vals, have, K_APPLSEQ)
    if st != LINE_OK:
        return st, pos
    _, b = line_bounds(buf, a, e)
    return head_tail(buf, pos, b, khash, kid, vals, have)


@njit(cache=True, _nrt=False)
def head_tail(buf, pos, b, khash, kid, vals, have):
    """parse_head past ApplSeqNum: an execution's order numbers; all of an unusual line."""
    st = LINE_OK
    if have[K_MSGTYPE] > 0 and vals[K_MSGTYPE] == TRADE:
        st, pos = parse_tokens(buf, pos, b, khash, kid, vals, have, K_OFFERSEQ, K_APPLSEQ)
    if st == LINE_OK and (have[K_MSGTYPE] == 0 or have[K_SECID] == 0 or have[K_CHANNEL] == 0
                          or have[K_APPLSEQ] == 0
                          or (vals[K_MSGTYPE] == TRADE and (have[K_BIDSEQ] == 0 or have[K_OFFERSEQ] == 0))):
        st, pos = parse_tokens(buf, pos, b, khash, kid, vals, have, -1)   # an unusual key order
    return st, pos


@njit(cache=True, _nrt=False, inline="always")
def _key_value(buf, p, e, g):
    """(value, position after it and its space) of key g written ``g=digits `` at p in a
    line ending at e; position -1 when the bytes are anything else (or p is -1)."""
    if p < 0 or p + 24 > buf.shape[0] or not _is_key(buf, p, g, KLEN, KWORD, KMASK):
        return np.int64(0), -1
    x, c = _fast_value(buf, p + KLEN[g], buf.shape[0])
    if c < 0 or c >= e or buf[c] != 32:
        return np.int64(0), -1
    return x, c + 1


@njit(cache=True, _nrt=False, inline="always")
def fast_head(buf, a, e):
    """The head of a line buf[a:e] in the exchange's usual layout (``//SecurityIDSource=102
    MsgType=192|191 MsgLen=.. SecurityID=.. ChannelNo=.. ApplSeqNum=..``, an execution's
    ``TradingPhase=.. BidApplSeqNum=.. OfferApplSeqNum=..``, single spaces, unsigned
    values, more tokens after), read as words: (ok, type, security, channel, sequence,
    bid, offer, position of the space after the head); ok False: anything else (then
    parse_head reads it)."""
    p = a + 2 if e - a >= 2 and buf[a] == 47 and buf[a + 1] == 47 else -1
    src, p = _key_value(buf, p, e, K_SOURCE)
    t, p = _key_value(buf, p, e, K_MSGTYPE)
    _, p = _key_value(buf, p, e, K_MSGLEN)
    sec, p = _key_value(buf, p, e, K_SECID)
    ch, p = _key_value(buf, p, e, K_CHANNEL)
    appl, p = _key_value(buf, p, e, K_APPLSEQ)
    bid = np.int64(0)
    offer = np.int64(0)
    if t == TRADE:
        _, p = _key_value(buf, p, e, K_PHASE)
        bid, p = _key_value(buf, p, e, K_BIDSEQ)
        offer, p = _key_value(buf, p, e, K_OFFERSEQ)
    ok = (p >= 0 and src == 102 and (t == ORDER or t == TRADE) and sec < MAX_SECURITY and ch < CHANNELS
          and appl >= 1)
    return ok, t, sec, ch, appl, bid, offer, p - 1


@njit(cache=True, _nrt=False)
def text_heads(buf, p, n, final, k, max_lines, base_seq, F, H, r):
    """Text framer, one pass over the lines of buf[p:n] (appended to line k and head row r,
    up to max_lines lines; with ``final`` a last line without newline ends at n) into H
    (``Heads``): per line its newline (``ends``), code and detail, and for every order or
    execution line whose head is good (type, security, channel, sequence, an execution's
    order numbers) a head row (``rows``, H_WIDTH columns: R_SEQ .. R_OFFER, H_START, H_END,
    H_POS). The rest of each line is the workers' to parse (text_rows). Returns (lines,
    head rows)."""
    khash, kid, vals, have = F.khash, F.kid, F.vals, F.have
    ends, codes, details, heads = H.ends, H.codes, H.details, H.rows
    while k < max_lines and p < n:
        ok, t, sec, ch, appl, bid, offer, pos = fast_head(buf, p, n)
        e = line_end(buf, pos if ok else p, n)
        if e >= n:
            if not final:
                break
            e = n
        a = p
        p = e + 1
        ends[k] = e
        details[k] = 0
        codes[k] = OK
        k += 1
        if not ok:
            st, pos = parse_head(buf, a, e, khash, kid, vals, have)
            if st == 1:
                codes[k - 1] = (BAD_MARKER if marker_lost(buf, a, e)
                                else (BAD_BINARY if binary_at(buf, a, e) >= 0 else NOT_MESSAGE))
                continue
            if st == 2:
                codes[k - 1] = BAD_TOKEN
                continue
            c, d = head_check(vals, have)
            codes[k - 1] = c
            details[k - 1] = d
            if c != OK:
                continue
            t = vals[K_MSGTYPE]
            sec = vals[K_SECID]
            ch = vals[K_CHANNEL]
            appl = vals[K_APPLSEQ]
            bid = vals[K_BIDSEQ] if t == TRADE else 0
            offer = vals[K_OFFERSEQ] if t == TRADE else 0
            pos = -1
        heads[r, R_SEQ] = base_seq + k - 1
        heads[r, R_CHAN] = ch
        heads[r, R_APPL] = appl
        heads[r, R_TYPE] = t
        heads[r, R_SEC] = sec
        heads[r, R_BID] = bid
        heads[r, R_OFFER] = offer
        heads[r, H_START] = a
        heads[r, H_END] = e
        heads[r, H_POS] = pos
        r += 1
    return k, r


@njit(cache=True, _nrt=False, inline="always")
def _keep_head(have, k):
    """Mark key k as the head's (a second value of it in the line's rest is refused)."""
    if have[k] > 0:
        have[k] = 2


@njit(cache=True, _nrt=False)
def _head_again(have, t):
    """(OK, 0), or (BAD_VALUE, key) of a head key that the line's rest gives again (the
    framer routed and checked the line by the first value)."""
    for k in (K_MSGTYPE, K_SECID, K_CHANNEL, K_APPLSEQ):
        if have[k] != 2:
            return BAD_VALUE, k
    if t == TRADE:
        for k in (K_BIDSEQ, K_OFFERSEQ):
            if have[k] != 2:
                return BAD_VALUE, k
    return OK, 0


@njit(cache=True, _nrt=False)
def text_rows(text, heads, n, worker, n_workers, F, rec, bad):
    """Decoder: the record rows of the lines of heads[:n] (the framer's head rows; ``text``:
    the batch's bytes) whose security this worker owns, each line's rest parsed from where
    its head ends (a line the framer read the slow way: whole again). A line whose other
    fields are bad gets no row but a row (head row, code, detail) in ``bad``.
    Returns (record rows, bad lines)."""
    khash, kid, vals, have = F.khash, F.kid, F.vals, F.have
    r = 0
    nb = 0
    for i in range(n):
        if n_workers > 1 and owner_of(heads[i, R_SEC], n_workers) != worker:
            continue
        a = heads[i, H_START]
        e = heads[i, H_END]
        pos = heads[i, H_POS]
        t = heads[i, R_TYPE]
        if pos >= 0:
            for j in range(have.shape[0]):
                have[j] = 0
            vals[K_SOURCE] = 102
            have[K_SOURCE] = 1
            vals[K_MSGTYPE] = t
            vals[K_SECID] = heads[i, R_SEC]
            vals[K_CHANNEL] = heads[i, R_CHAN]
            vals[K_APPLSEQ] = heads[i, R_APPL]
            have[K_MSGTYPE] = have[K_SECID] = have[K_CHANNEL] = have[K_APPLSEQ] = 1
            if t == TRADE:
                vals[K_BIDSEQ] = heads[i, R_BID]
                vals[K_OFFERSEQ] = heads[i, R_OFFER]
                have[K_BIDSEQ] = have[K_OFFERSEQ] = 1
        else:
            _, pos = parse_head(text, a, e, khash, kid, vals, have)    # as the framer did
        for k in (K_MSGTYPE, K_SECID, K_CHANNEL, K_APPLSEQ, K_BIDSEQ, K_OFFERSEQ):
            _keep_head(have, k)
        _, b = line_bounds(text, a, e)
        st, _ = parse_tokens(text, pos, b, khash, kid, vals, have, -1,
                             K_OFFERSEQ if t == TRADE else K_APPLSEQ)
        c, d = text_check(vals, have)
        if st != LINE_OK:
            c, d = BAD_TOKEN, 0
        elif c == OK:
            c, d = _head_again(have, t)
        if c != OK:
            bad[nb, 0] = i
            bad[nb, 1] = c
            bad[nb, 2] = d
            nb += 1
            continue
        _put_text(rec, r, heads[i, R_SEQ], vals)
        r += 1
    return r, nb


@njit(cache=True, _nrt=False, inline="always")
def _le(buf, p, nb):
    x = np.int64(0)
    for j in range(nb - 1, -1, -1):
        x = (x << 8) | np.int64(buf[p + j])
    return x


@njit(cache=True, _nrt=False, inline="always")
def _le_signed(buf, p, nb):
    x = _le(buf, p, nb)
    if nb < 8 and x >= (np.int64(1) << (8 * nb - 1)):
        x -= np.int64(1) << (8 * nb)
    return x


@njit(cache=True, _nrt=False)
def security_of(buf, p):
    """The SecurityID char[9] at p as an integer (digits, then spaces or NULs); -1 if not."""
    x = 0
    nd = 0
    for j in range(9):
        c = buf[p + j]
        if 48 <= c <= 57 and nd == j:
            x = x * 10 + (np.int64(c) - 48)
            nd += 1
        elif c != 32 and c != 0:
            return -1
    return x if 0 < nd <= 6 else -1


@njit(cache=True, _nrt=False)
def _put_bin(buf, p, rec, r, seq, sec):
    t = buf[p + 1]
    rec[r, R_SEQ] = seq
    rec[r, R_TYPE] = t
    rec[r, R_SEC] = sec
    rec[r, R_CHAN] = _le(buf, p + 13, 2)
    rec[r, R_APPL] = _le(buf, p + 15, 8)
    b = p + HEADER
    if t == ORDER:
        rec[r, R_PRICE] = _le_signed(buf, b, 4)
        rec[r, R_QTY] = _le(buf, b + 4, 8)
        rec[r, R_SIDE] = buf[b + 12]
        rec[r, R_ORDTYPE] = buf[b + 13]
        rec[r, R_TIME] = time_ns(_le(buf, b + 14, 8))
        rec[r, R_BID] = 0
        rec[r, R_OFFER] = 0
        rec[r, R_LASTPX] = 0
        rec[r, R_LASTQTY] = 0
        rec[r, R_EXEC] = 0
    else:
        rec[r, R_BID] = _le(buf, b, 8)
        rec[r, R_OFFER] = _le(buf, b + 8, 8)
        rec[r, R_LASTPX] = _le_signed(buf, b + 16, 4)
        rec[r, R_LASTQTY] = _le(buf, b + 20, 8)
        rec[r, R_EXEC] = buf[b + 28]
        rec[r, R_TIME] = time_ns(_le(buf, b + 29, 8))
        rec[r, R_PRICE] = 0
        rec[r, R_QTY] = 0
        rec[r, R_SIDE] = 0
        rec[r, R_ORDTYPE] = 0
    rec[r, R_BAD] = 0


@njit(cache=True, _nrt=False)
def bin_count(buf, p, k, n, max_records):
    """Whole binary records at the front of buf[:n] (by their lengths alone), at most
    max_records, counted on from record k at byte p (a count of a shorter buffer with the
    same front); returns (records, their bytes); records max_records at a length below the
    header (for bin_heads to report it)."""
    while k < max_records and p + 4 <= n:
        ln = _le(buf, p + 2, 2)
        if ln < HEADER:
            return max_records, p
        if p + ln > n:
            break
        p += ln
        k += 1
    return k, p


@njit(cache=True, _nrt=False)
def bin_types(buf, offs, codes, n, counts):
    """Add the type byte of each record of the first n that is not refused (codes >= 0)
    to counts[type]."""
    for i in range(n):
        if codes[i] >= 0:
            counts[buf[offs[i] + 1]] += 1


@njit(cache=True, _nrt=False, inline="always")
def bin_check(buf, p, ln):
    """(code, detail, security) of the whole record of ``ln`` bytes at p: OK for an order
    or execution to replay, NOT_MESSAGE for a snapshot, else BAD_TYPE / BAD_LENGTH /
    BAD_VALUE with the type, length or field (SecurityID, ExecType)."""
    t = buf[p + 1]
    if t == ORDER or t == TRADE:
        if ln != (ORDER_LEN if t == ORDER else TRADE_LEN):
            return BAD_LENGTH, ln, -1
        if buf[p] != 102:
            return BAD_VALUE, K_SOURCE, -1
        sec = security_of(buf, p + 4)
        if sec < 0:
            return BAD_VALUE, K_SECID, -1
        if t == TRADE and buf[p + HEADER + 28] != 70 and buf[p + HEADER + 28] != 52:
            return BAD_VALUE, K_EXECTYPE, -1
        if _le(buf, p + HEADER + (4 if t == ORDER else 20), 8) < 0:     # no quantity from 2**63 up
            return BAD_VALUE, K_ORDERQTY if t == ORDER else K_LASTQTY, -1
        if _le_signed(buf, p + HEADER + (0 if t == ORDER else 16), 4) < 0:     # nor a negative price
            return BAD_VALUE, K_PRICE if t == ORDER else K_LASTPX, -1
        # ApplSeqNum numbers from 1; order numbers from REF_FAR up (or past 2**63: negative
        # here) would share book keys with others (ref_key)
        appl = _le(buf, p + 15, 8)
        if appl < 1 or appl >= REF_FAR:
            return BAD_VALUE, K_APPLSEQ, -1
        if t == TRADE:
            x = _le(buf, p + HEADER, 8)
            if x < 0 or x >= REF_FAR:
                return BAD_VALUE, K_BIDSEQ, -1
            x = _le(buf, p + HEADER + 8, 8)
            if x < 0 or x >= REF_FAR:
                return BAD_VALUE, K_OFFERSEQ, -1
            if not stamp_ok(_le(buf, p + HEADER + 29, 8)):
                return BAD_VALUE, K_TTIME, -1
        else:
            if not side_ok(buf[p + HEADER + 12]):
                return BAD_VALUE, K_SIDE, -1
            if not ordtype_ok(buf[p + HEADER + 13]):
                return BAD_VALUE, K_ORDTYPE, -1
            if not stamp_ok(_le(buf, p + HEADER + 14, 8)):
                return BAD_VALUE, K_TTIME, -1
        return OK, 0, sec
    if t != SNAPSHOT:
        return BAD_TYPE, t, -1
    return NOT_MESSAGE, 0, -1


@njit(cache=True, _nrt=False)
def bin_heads(buf, n, max_records, max_bytes, codes, details, offs, secs, heads):
    """Framer: whole binary records at the front of buf[:n]; per record its offset, code
    (OK, or BAD_TYPE / BAD_LENGTH / BAD_VALUE with the type, length or field: bin_check;
    a snapshot is OK) and ``secs`` (int32: the security of an order or execution to
    replay, else -1: what the workers route by), and for each order and execution to replay
    a head row (B_WIDTH columns: R_SEQ .. R_OFFER, what frame_check reads, R_SEQ the
    record's index in buf; the workers read the records themselves: bin_rows). Returns (records, bytes, head rows, records
    within max_bytes)."""
    p = 0
    k = 0
    r = 0
    fits = -1
    while k < max_records and p + 4 <= n:
        ln = _le(buf, p + 2, 2)
        if ln < HEADER:
            codes[k] = BAD_LENGTH
            details[k] = ln
            offs[k] = p
            secs[k] = -1
            return k + 1, p, r, k + 1 if fits < 0 else fits
        if p + ln > n:
            break
        if fits < 0 and p + ln > max_bytes:
            fits = k
        offs[k] = p
        c, d, sec = bin_check(buf, p, ln)
        codes[k] = OK if c == NOT_MESSAGE else c
        details[k] = d
        secs[k] = sec
        if c == OK:
            t = buf[p + 1]
            heads[r, R_SEQ] = k
            heads[r, R_CHAN] = _le(buf, p + 13, 2)
            heads[r, R_APPL] = _le(buf, p + 15, 8)
            heads[r, R_TYPE] = t
            heads[r, R_SEC] = sec
            if t == TRADE:
                heads[r, R_BID] = _le(buf, p + HEADER, 8)
                heads[r, R_OFFER] = _le(buf, p + HEADER + 8, 8)
            else:
                heads[r, R_BID] = 0
                heads[r, R_OFFER] = 0
            r += 1
        k += 1
        p += ln
    return k, p, r, k if fits < 0 else fits


@njit(cache=True, _nrt=False)
def bin_rows(buf, n, secs, base_seq, worker, n_workers, rec):
    """Decoder: the record rows of the orders and executions of buf[:n] (whole records,
    the first numbered base_seq; ``secs``: per record the framer's security, -1: not to
    replay) whose security this worker owns. Returns the rows."""
    p = 0
    k = 0
    r = 0
    while p + HEADER <= n and k < secs.shape[0]:
        ln = _le(buf, p + 2, 2)
        if ln < HEADER or p + ln > n:
            break
        sec = secs[k]
        if sec >= 0 and (n_workers == 1 or owner_of(sec, n_workers) == worker):
            _put_bin(buf, p, rec, r, base_seq + k, sec)
            r += 1
        k += 1
        p += ln
    return r


# roles of records (szse_events, first pass)
ROLE_NONE = 0      # order: rests at once; trade: an auction fill (both orders) or a cancel
ROLE_INCOMING = 1  # order: its fills follow (nothing at the order itself)
ROLE_DROP = 2      # order or cancel: no book effect (never rested)
ROLE_FILL_BID = 3  # a fill of an incoming buy: reduces the resting sell
ROLE_FILL_ASK = 4  # a fill of an incoming sell: reduces the resting buy
# aux columns
A_ROLE = 0
A_ADD_QTY = 1      # a last fill: the incoming order's rest to add after it (0: none)
A_ADD_PX = 2
A_ADD_REF = 3
A_ADD_SIDE = 4
A_NEXT = 5         # the next record of the same channel (n: none)
A_LAST = 6         # the last fill of an incoming order
A_WIDTH = 7


@njit(cache=True, _nrt=False)
def _roles(rec, n, aux, chan_next):
    for i in range(n):
        for c in range(A_WIDTH):
            aux[i, c] = 0
    for j in range(n):                      # chan_next: per channel, the next record (backward)
        chan_next[rec[j, R_CHAN]] = n
    for i in range(n - 1, -1, -1):
        ch = rec[i, R_CHAN]
        aux[i, A_NEXT] = chan_next[ch]
        chan_next[ch] = i
    for i in range(n):
        if rec[i, R_TYPE] != ORDER:
            continue
        side = rec[i, R_SIDE]
        if side != 49 and side != 50:          # securities lending: not in the book
            aux[i, A_ROLE] = ROLE_DROP
            continue
        a = rec[i, R_APPL]
        expect = a + 1
        filled = 0
        first_px = -1
        last = -1
        cancelled = False
        j = aux[i, A_NEXT]
        while j < n:
            if rec[j, R_APPL] != expect or rec[j, R_TYPE] != TRADE:
                break
            if rec[j, R_BID] != a and rec[j, R_OFFER] != a:
                break
            if rec[j, R_EXEC] == 52:            # its own cancel: the rest never rests
                cancelled = True
                aux[j, A_ROLE] = ROLE_DROP
                last = j
                break
            aux[j, A_ROLE] = ROLE_FILL_BID if side == 49 else ROLE_FILL_ASK
            q = rec[j, R_LASTQTY]           # the fills' sum, held at 2**63 - 1 (then no rest)
            filled = filled + q if q <= FILLED_MAX - filled else FILLED_MAX
            if first_px < 0:
                first_px = rec[j, R_LASTPX]
            if last >= 0:
                aux[last, A_LAST] = 0
            aux[j, A_LAST] = 1
            last = j
            expect += 1
            j = aux[j, A_NEXT]
        market = rec[i, R_ORDTYPE] == 49
        if last < 0:
            aux[i, A_ROLE] = ROLE_DROP if market else ROLE_NONE
            continue
        aux[i, A_ROLE] = ROLE_INCOMING
        left = rec[i, R_QTY] - filled
        if not cancelled and left > 0:
            aux[last, A_ADD_QTY] = left
            aux[last, A_ADD_PX] = first_px if market else rec[i, R_PRICE]
            aux[last, A_ADD_REF] = a
            aux[last, A_ADD_SIDE] = 0 if side == 49 else 1


@njit(cache=True, _nrt=False, inline="always")
def ref_key(rk, ch, a):
    """The book's key of order ApplSeqNum ``a`` of channel ``ch`` (``rk``: the worker's key
    state, RK_WIDTH zeros at first): 0 for 0; chunk << REF_BITS | the low bits of ``a``
    while chunks last; else a ^ REF_FAR. An ApplSeqNum from 2**62 up would collide with
    the chunk keys: the text parse cannot give one (|value| < 2**60) and bin_check refuses
    a binary record naming one."""
    if a == 0:
        return np.int64(0)
    hi = a >> REF_BITS
    if a < 0 or hi >= (1 << REF_HI_BITS):
        return a ^ REF_FAR
    s = rk[ch]
    if s == 0:
        if rk[RK_SLOTS] >= REF_SLOTS:
            return a ^ REF_FAR
        rk[RK_SLOTS] += 1
        s = rk[RK_SLOTS]
        rk[ch] = s
    j = RK_CHUNK + ((s - 1) << REF_HI_BITS) + hi
    c = rk[j]
    if c == 0:
        if rk[RK_CHUNKS] >= REF_CHUNKS:
            return a ^ REF_FAR
        rk[RK_CHUNKS] += 1
        c = rk[RK_CHUNKS]
        rk[j] = c
        rk[RK_HI + c - 1] = hi
    return ((c - 1) << REF_BITS) | (a & REF_LOW)


@njit(cache=True, _nrt=False, inline="always")
def feed_ref(rk, k):
    """The ApplSeqNum of book key k (ref_key)."""
    if 0 < k < (np.int64(1) << 32):
        return (rk[RK_HI + (k >> REF_BITS)] << REF_BITS) | (k & REF_LOW)
    return k ^ REF_FAR if k != 0 else k


@njit(cache=True, _nrt=False)
def feed_refs(rows, n, c0, c1, rk):
    """Columns c0 and c1 (the same twice for one) of rows[:n] (trades or orders rows):
    book keys back to ApplSeqNums."""
    for i in range(n):
        rows[i, c0] = feed_ref(rk, rows[i, c0])
        if c1 != c0:
            rows[i, c1] = feed_ref(rk, rows[i, c1])


@njit(cache=True, _nrt=False, inline="always")
def _ev(ev, ne, r, rec, b, act, ref, qty, px, aux_px):
    ev[ne, 0] = rec[r, R_SEQ]
    ev[ne, 1] = rec[r, R_TIME]
    ev[ne, 2] = b
    ev[ne, 3] = act
    ev[ne, 4] = ref
    ev[ne, 5] = qty
    ev[ne, 6] = px
    ev[ne, 7] = 0
    ev[ne, 8] = rec[r, R_APPL] if rec[r, R_TYPE] == TRADE else 0
    ev[ne, 9] = aux_px


@njit(cache=True, _nrt=False)
def szse_events(rec, n, aux, chan_next, books, n_books, names, ev, rk):
    """Book events of the record rows rec[:n] (see the module). ``books[security]``: local
    book + 1; new securities get rows (local book, security) in ``names``.
    ``chan_next``: scratch, one row per channel number; ``rk``: the worker's order key state
    (ref_key). Events name orders by their keys. Returns (events, books, new names)."""
    _roles(rec, n, aux, chan_next)
    ne = 0
    nn = 0
    C = np.int64(67) << TYPE_SHIFT
    for i in range(n):
        role = aux[i, A_ROLE]
        if role == ROLE_DROP or role == ROLE_INCOMING:
            continue
        sec = rec[i, R_SEC]
        ch = rec[i, R_CHAN]
        b = books[sec] - 1
        if b < 0:
            b = n_books
            n_books += 1
            books[sec] = b + 1
            names[nn, 0] = b
            names[nn, 1] = sec
            nn += 1
        cg = 0                                  # the price cage's bits (see the module)
        live = False
        if CAGE_FIRST <= sec < CAGE_END:
            cg = CAGED
            live = CONTINUOUS_START <= rec[i, R_TIME] < CONTINUOUS_END
        start = ne
        if rec[i, R_TYPE] == ORDER:
            side = 0 if rec[i, R_SIDE] == 49 else 1
            own = OWN_BEST if rec[i, R_ORDTYPE] == 85 else 0     # 'U': at its own side's best
            if live and rec[i, R_ORDTYPE] == 50:
                own |= CAGE_ADD
            _ev(ev, ne, i, rec, b, ACT_ADD | own | cg | (side << 8) | (np.int64(65) << TYPE_SHIFT),
                ref_key(rk, ch, rec[i, R_APPL]), rec[i, R_QTY], rec[i, R_PRICE], 0)
            ne += 1
        elif rec[i, R_EXEC] == 52:             # cancel
            ref = rec[i, R_BID] if rec[i, R_BID] != 0 else rec[i, R_OFFER]
            _ev(ev, ne, i, rec, b, ACT_CANCEL | cg | (np.int64(88) << TYPE_SHIFT), ref_key(rk, ch, ref),
                rec[i, R_LASTQTY], 0, 0)
            ne += 1
        elif role == ROLE_FILL_BID or role == ROLE_FILL_ASK:
            ref = rec[i, R_OFFER] if role == ROLE_FILL_BID else rec[i, R_BID]
            more = DEFER if aux[i, A_ADD_QTY] > 0 else 0     # the rest's add follows: one row
            _ev(ev, ne, i, rec, b, ACT_EXEC | C | cg | more, ref_key(rk, ch, ref), rec[i, R_LASTQTY], 0,
                rec[i, R_LASTPX])
            ne += 1
            live = live and aux[i, A_LAST] != 0     # an incoming order's fills end at its last
        else:                                   # an auction fill: both orders rest
            _ev(ev, ne, i, rec, b, ACT_EXEC | C | cg | DEFER, ref_key(rk, ch, rec[i, R_BID]),
                rec[i, R_LASTQTY], 0, rec[i, R_LASTPX])
            _ev(ev, ne + 1, i, rec, b, ACT_EXEC | C | cg | NOT_PRINTABLE, ref_key(rk, ch, rec[i, R_OFFER]),
                rec[i, R_LASTQTY], 0, rec[i, R_LASTPX])
            ne += 2
        if aux[i, A_ADD_QTY] > 0:
            _ev(ev, ne, i, rec, b, ACT_ADD | cg | (aux[i, A_ADD_SIDE] << 8) | (np.int64(65) << TYPE_SHIFT),
                ref_key(rk, ch, aux[i, A_ADD_REF]), aux[i, A_ADD_QTY], aux[i, A_ADD_PX], 0)
            ne += 1
        if live and ne > start:
            ev[ne - 1, 3] |= CAGE_LIVE
    return ne, n_books, nn


@njit(cache=True, _nrt=False)
def frame_check(rec, r, n_lines, limit, last_appl, gap_ok, cont, nxt):
    """Framer checks of the record rows rec[:r] (all securities; R_SEQ: the line index here).

    Sequence: each channel's ApplSeqNum follows the last one (``last_appl[ch]``, -1: none
    seen); the index of the first record that does not is returned as ``gap`` (-1: none;
    with ``gap_ok`` it is accepted and counted instead). Cut: the largest line count
    c <= min(limit, gap line) that splits no incoming order from its fills (the first record
    of each channel at or after c does not continue a chain: a trade naming the channel's
    last order). Updates ``last_appl`` for the records before the cut.
    Returns (cut, gap line or -1, gaps accepted)."""
    last_order = nxt  # scratch: per channel, the last order's ApplSeqNum (forward pass)
    for j in range(last_order.shape[0]):
        last_order[j] = -1
    # forward: chain continuation flags and the first gap
    gap = -1
    n_gaps = 0
    for j in range(r):
        ch = rec[j, R_CHAN]
        if rec[j, R_TYPE] == ORDER:
            cont[j] = 0
            last_order[ch] = rec[j, R_APPL]
        else:
            lo = last_order[ch]
            cont[j] = 1 if lo >= 0 and (rec[j, R_BID] == lo or rec[j, R_OFFER] == lo) else 0
    # backward: the largest safe cut <= limit
    for j in range(nxt.shape[0]):
        nxt[j] = 0
    bad = 0
    cut = 0
    for j in range(r - 1, -1, -1):
        line = rec[j, R_SEQ]
        # state "first record at or after (line_of[j-1], line]" is known after updating with j
        ch = rec[j, R_CHAN]
        if nxt[ch] != 0:
            bad -= 1
        nxt[ch] = cont[j]
        if cont[j] != 0:
            bad += 1
        if bad == 0 and cut == 0:
            lo_line = rec[j - 1, R_SEQ] + 1 if j > 0 else 0
            if lo_line <= limit:
                cut = min(limit, line)
    # lines after the last record up to the limit are safe too
    if r == 0 or rec[r - 1, R_SEQ] < limit:
        cut = limit
    # sequence numbers of the records before the cut
    for j in range(r):
        if rec[j, R_SEQ] >= cut:
            break
        ch = rec[j, R_CHAN]
        if last_appl[ch] >= 0 and rec[j, R_APPL] != last_appl[ch] + 1:
            if not gap_ok:
                gap = rec[j, R_SEQ]
                cut = gap
                break
            n_gaps += 1
        last_appl[ch] = rec[j, R_APPL]
    return cut, gap, n_gaps
