"""Databento DBN kernels: framing records (parent) and decoding MBO records to book events.

A DBN stream is a metadata header ("DBN", version, u32 length, ...; read in Python by
obook.feeds.databento.metadata) and then records. Every record starts with a 16-byte
header: ``length`` (u8, in 4-byte words), ``rtype`` (u8), ``publisher_id`` (u16),
``instrument_id`` (u32), ``ts_event`` (u64). All integers are little-endian. The MBO
record (rtype 0xA0, 56 bytes) continues with the fields at the ``MBO_*`` offsets below
(checked against ``databento_dbn.MBOMsg`` by the tests).
"""

import numpy as np
from .jit import njit
from .hashtab import ht_find, ht_full, ht_put

from .layout import (ACT_ADD, ACT_CANCEL, ACT_CLEAR, ACT_MODIFY, ACT_PRINT, DEFER, NO_SIDE, NEED_ROOM,
                     TYPE_SHIFT)

RTYPE_MBO = 0xA0
MBO_SIZE = 56
# MBO field offsets from the start of the record
MBO_PUBLISHER = 2     # u16
MBO_INSTRUMENT = 4    # u32
MBO_TS_EVENT = 8      # u64
MBO_ORDER_ID = 16     # u64
MBO_PRICE = 24        # i64, 1e-9 units; UNDEF_PRICE = i64 max
MBO_SIZE_FIELD = 32   # u32
MBO_FLAGS = 36        # u8
MBO_CHANNEL = 37      # u8
MBO_ACTION = 38       # char
MBO_SIDE = 39         # char
MBO_TS_RECV = 40      # u64
MBO_TS_IN_DELTA = 48  # i32
MBO_SEQUENCE = 52     # u32

F_LAST = 0x80
F_TOB = 0x40

#: every rtype DBN versions 1-3 define (databento_dbn.RType); others are "unknown rtype"
KNOWN_RTYPES = np.zeros(256, dtype=np.bool_)
for _r in (0x00, 0x01, 0x0A, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
           0x20, 0x21, 0x22, 0x23, 0x24, 0xA0, 0xB1, 0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5):
    KNOWN_RTYPES[_r] = True

# frame status
FRAME_OK = 0
FRAME_ZERO = 1        # length 0: framing cannot go on (an error in both modes)
FRAME_SHORT = 2       # shorter than its rtype's record (strict)
FRAME_UNKNOWN = 3     # unknown rtype (strict)
FRAME_HEADER = 4      # a metadata header ("DBN" + version 1-3; the next file of a feed)
# decode status (besides NEED_ROOM)
DEC_OK = 0
DEC_BAD_SIDE = 1      # A or M with a side other than B / A
DEC_BAD_ACTION = 2    # an action letter DBN does not define
DEC_TOB = 3           # a top-of-book (F_TOB) record: not an individual order
# st[] of dbn_decode
ST_POS = 0            # resume: byte position
ST_K = 1              # resume: record index within the batch
ST_NE = 2             # events written
ST_BOOKS = 3          # local books handed out
ST_NEW = 4            # books first seen in this call (their ids in new_ids)
ST_BAD = 5            # failing record index (DEC_* status)
ST_MAPS = 6           # symbol mapping records of owned instruments (in maps)
ST_KEYS_LIVE = 7      # the instrument table's live rows (and rows in use: it never deletes)
ST_KEYS_FILL = 8
ST_WIDTH = 9
RTYPE_SYMBOL_MAPPING = 0x16
SYMBOL_MAPPING_V1_SIZE = 80     # v1: stype_in_symbol at 16 (22 bytes); v2/v3 (176): at 17 (71)


@njit(cache=True, _nrt=False, inline="always")
def _le(b, p, n):
    v = np.int64(0)
    for j in range(n - 1, -1, -1):
        v = (v << 8) | np.int64(b[p + j])
    return v


@njit(cache=True, _nrt=False)
def dbn_frame(buf, n, max_records, strict, known, rtypes, actions, counts):
    """Walk whole records at the front of buf[:n]; rtypes[r] counts well-formed records by
    rtype, actions[a] MBO records by action letter; counts[0] (short) and counts[1]
    (unknown rtype) the tolerant mode's skipped ones. Stops before a metadata header (the
    next file of a feed of several). Returns (records, bytes, status)."""
    pos = 0
    k = 0
    while k < max_records and pos < n:
        ln = np.int64(buf[pos]) * 4
        if ln == 0:
            return k, pos, FRAME_ZERO
        if (pos + 4 <= n and buf[pos] == 68 and buf[pos + 1] == 66 and buf[pos + 2] == 78
                and 1 <= buf[pos + 3] <= 3):        # "DBN": never a record (rtype 0x42)
            return k, pos, FRAME_HEADER
        if pos + ln > n:
            break
        rt = buf[pos + 1]
        if ln < 16 or (rt == RTYPE_MBO and ln < MBO_SIZE):
            if strict:
                return k, pos, FRAME_SHORT
            counts[0] += 1
        elif not known[rt]:
            if strict:
                return k, pos, FRAME_UNKNOWN
            counts[1] += 1
        else:
            rtypes[rt] += 1
            if rt == RTYPE_MBO:
                actions[buf[pos + MBO_ACTION]] += 1
        pos += ln
        k += 1
    return k, pos, FRAME_OK


@njit(cache=True, _nrt=False)
def owner_of(instrument_id, n_workers):
    """The worker that owns an instrument: a multiplicative hash of the u32 id."""
    return (((instrument_id * 2654435761) & 0xFFFFFFFF) >> 16) % n_workers


@njit(cache=True, _nrt=False)
def book_of(iid, ins, st, new_ids):
    """The local book of instrument iid, interned on first sight (room checked by the
    caller: ht_full) in the instrument Table (obook._kernels.hashtab, keys (0, iid))."""
    s = ht_find(ins.keys, ins.state, 0, iid)
    if s >= 0:
        return ins.vals[s, 0]
    b = st[ST_BOOKS]
    ins.vals[ht_put(ins.keys, ins.state, st, ST_KEYS_LIVE, ST_KEYS_FILL, 0, iid), 0] = b
    st[ST_BOOKS] = b + 1
    new_ids[st[ST_NEW]] = iid
    st[ST_NEW] += 1
    return b


@njit(cache=True, _nrt=False)
def dbn_decode(buf, base_seq, worker, n_workers, ev, ins, is_open, new_ids, st, strict, skips, maps):
    """Book events of the owned MBO records of buf (whole records), from st[ST_POS].

    One event a record: A add, C cancel (size = cancelled shares), M modify, R clear,
    T/F prints (no book change), N nothing -- except an N with F_LAST that ends an event
    of deferred records: a print of type N, which publishes the event's rows. Records
    without F_LAST carry DEFER. is_open[book]: an event of the book is open. A symbol
    mapping record of an owned instrument gives maps[j] = (book, its byte position). Tolerant mode
    counts the records it cannot decode in skips[DEC_*]. ins: the instrument Table
    (instrument id -> local book). Returns a DEC_* status, or NEED_ROOM when it must grow (resume).
    """
    pos = st[ST_POS]
    k = st[ST_K]
    ne = st[ST_NE]
    n = buf.shape[0]
    while pos < n:
        ln = np.int64(buf[pos]) * 4
        p = pos
        if ln == 0:
            break
        rt = buf[p + 1]
        mapping = rt == RTYPE_SYMBOL_MAPPING and ln >= SYMBOL_MAPPING_V1_SIZE
        if not mapping and (rt != RTYPE_MBO or ln < MBO_SIZE):
            pos += ln
            k += 1
            continue
        iid = _le(buf, p + MBO_INSTRUMENT, 4)
        if n_workers > 1 and owner_of(iid, n_workers) != worker:
            pos += ln
            k += 1
            continue
        if ht_full(ins.keys, st, ST_KEYS_FILL) or st[ST_BOOKS] >= is_open.shape[0]:
            st[ST_POS] = pos
            st[ST_K] = k
            st[ST_NE] = ne
            return NEED_ROOM
        if mapping:                         # a live symbol mapping: the book's ticker
            maps[st[ST_MAPS], 0] = book_of(iid, ins, st, new_ids)
            maps[st[ST_MAPS], 1] = p
            st[ST_MAPS] += 1
            pos += ln
            k += 1
            continue
        a = buf[p + MBO_ACTION]
        s = buf[p + MBO_SIDE]
        flags = buf[p + MBO_FLAGS]
        side = 0 if s == 66 else 1          # 'B' bid, 'A' ask (and 'N')
        bad = DEC_OK
        act = 0
        if a == 65 or a == 67 or a == 77:   # A C M
            if s != 66 and s != 65 and a != 67:
                bad = DEC_BAD_SIDE
            elif flags & F_TOB:
                bad = DEC_TOB
            elif a == 65:
                act = ACT_ADD
            elif a == 67:
                act = ACT_CANCEL
            else:
                act = ACT_MODIFY
        elif a == 82:                       # R
            act = ACT_CLEAR
        elif a == 84 or a == 70:            # T F
            act = ACT_PRINT | (NO_SIDE if s != 66 and s != 65 else 0)
        elif a != 78:                       # not N
            bad = DEC_BAD_ACTION
        if bad != DEC_OK:
            if strict:
                st[ST_POS] = pos
                st[ST_K] = k
                st[ST_NE] = ne
                st[ST_BAD] = k
                return bad
            skips[bad] += 1
            pos += ln
            k += 1
            continue
        book = book_of(iid, ins, st, new_ids)
        last = (flags & F_LAST) != 0
        if act == 0:                        # N
            if not (last and is_open[book]):
                pos += ln
                k += 1
                continue
            act = ACT_PRINT
        ev[ne, 0] = base_seq + k
        ev[ne, 1] = _le(buf, p + MBO_TS_EVENT, 8)
        ev[ne, 2] = book
        ev[ne, 3] = act | (side << 8) | (np.int64(a) << TYPE_SHIFT) | (0 if last else DEFER)
        ev[ne, 4] = _le(buf, p + MBO_ORDER_ID, 8)
        ev[ne, 5] = _le(buf, p + MBO_SIZE_FIELD, 4)
        ev[ne, 6] = _le(buf, p + MBO_PRICE, 8)
        ev[ne, 7] = 0
        ev[ne, 8] = 0
        ev[ne, 9] = 0
        is_open[book] = 0 if last else 1
        ne += 1
        pos += ln
        k += 1
    st[ST_POS] = pos
    st[ST_K] = k
    st[ST_NE] = ne
    return DEC_OK


@njit(cache=True, _nrt=False)
def record_offsets(buf, n_records, out):
    """Byte offset of each of the n_records whole records of buf into out."""
    pos = 0
    for k in range(n_records):
        out[k] = pos
        pos += np.int64(buf[pos]) * 4
    return pos


#: the MBO record as a numpy structured dtype (databento_dbn.MBOMsg's layout)
MBO_DTYPE = np.dtype([
    ("length", "u1"), ("rtype", "u1"), ("publisher_id", "<u2"), ("instrument_id", "<u4"),
    ("ts_event", "<u8"), ("order_id", "<u8"), ("price", "<i8"), ("size", "<u4"),
    ("flags", "u1"), ("channel_id", "u1"), ("action", "S1"), ("side", "S1"),
    ("ts_recv", "<u8"), ("ts_in_delta", "<i4"), ("sequence", "<u4"),
])
UNDEF_PRICE = np.iinfo(np.int64).max


@njit(cache=True, _nrt=False, inline="always")
def _level_of(levels, side, price, n_levels):
    """Index of price among the side's levels (px, qty, n per level; bids then asks), or -1."""
    for k in range(n_levels):
        if levels[(side * n_levels + k) * 3] == price:
            return k
    return -1


@njit(cache=True, _nrt=False)
def mbp_rows(is_trade, book, side, price, lv, state, out, depth):
    """Rows of Databento-shaped MBP tables from depth rows and trade rows in feed order.

    lv[i]: a depth row's levels (per level px, qty, n; bids then asks; empty: UNDEF_PRICE,
    0, 0); state[b]: book b's levels so far (kept across calls). out[i] gets the book's
    levels after row i (a trade: the levels it saw); depth[i] the index of the record's
    price among its side's levels after the row (before it, for a level that went), 0 when
    it is in neither. A trade's side is the aggressor's: its price is looked up on the
    resting side.
    """
    n_levels = lv.shape[1] // 6
    for i in range(is_trade.shape[0]):
        b = book[i]
        s = side[i]
        if is_trade[i]:
            for c in range(lv.shape[1]):
                out[i, c] = state[b, c]
            d = _level_of(state[b], 1 - s, price[i], n_levels) if s >= 0 else -1
        else:
            d = _level_of(lv[i], s, price[i], n_levels) if s >= 0 else -1
            if d < 0 and s >= 0:
                d = _level_of(state[b], s, price[i], n_levels)
            for c in range(lv.shape[1]):
                out[i, c] = lv[i, c]
                state[b, c] = lv[i, c]
        depth[i] = d if d > 0 else 0
