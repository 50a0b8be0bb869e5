"""Cboe PITCH kernels: framing sequenced units (parent) and decoding their messages to book events.

A PITCH stream is a run of sequenced units: an 8-byte header (``length`` u16 of the whole
unit, ``count`` u8 of its messages, ``unit`` u8, ``sequence`` u32 of its first message,
0 when unsequenced) and then ``count`` messages, each starting with its ``length`` (u8)
and ``type`` (u8). Integers are little-endian; long prices have 4 implied decimals, short
ones 2 (obook's prices have 4). docs/formats/pitch.md describes every message.

Only Add Order, Trade and Trading Status messages name a symbol; the others name an order
(or an execution) by its id. So every worker keeps the feed's live orders: id -> (its local
book, or -1 for another worker's, times two plus its side; remaining shares; price), and the
executions of its own books (id -> book) for trade breaks. The three tables are obook._kernels.hashtab Tables (key rows
(kind, id), value rows).
"""

from collections import namedtuple

import numpy as np
from .jit import njit

from .hashtab import ht_drop, ht_find, ht_full, ht_home, ht_put
from .prefetch import prefetch
from .dbn import _le
from .layout import (ACT_ADD, ACT_CANCEL, ACT_DELETE, ACT_EXEC, ACT_MODIFY, ACT_PRINT, DEFER, NEED_ROOM,
                     NO_SIDE, TO_BACK, TYPE_SHIFT)

HEADER = 8
#: every message obook reads: type -> (name, length, fields); a field is (name, offset,
#: width, kind): "u" unsigned little-endian, "c" one character, "s" space-padded text.
#: Every message starts with length (offset 0) and type (1); those after the Time ones
#: with the ns offset into the unit's current second (2, 4 bytes).
_OFS = ("offset", 2, 4, "u")
_ADD = (_OFS, ("order_id", 6, 8, "u"), ("side", 14, 1, "c"))
_ORDER = (_OFS, ("order_id", 6, 8, "u"))
MESSAGES = {
    0x20: ("time", 6, (("seconds", 2, 4, "u"),)),
    0x21: ("add_order_long", 34, _ADD + (("quantity", 15, 4, "u"), ("symbol", 19, 6, "s"),
                                          ("price", 25, 8, "u"), ("flags", 33, 1, "u"))),
    0x22: ("add_order_short", 26, _ADD + (("quantity", 15, 2, "u"), ("symbol", 17, 6, "s"),
                                           ("price", 23, 2, "u"), ("flags", 25, 1, "u"))),
    0x23: ("order_executed", 26, _ORDER + (("quantity", 14, 4, "u"), ("execution_id", 18, 8, "u"))),
    0x24: ("order_executed_at_price", 38, _ORDER + (("quantity", 14, 4, "u"), ("remaining", 18, 4, "u"),
                                                    ("execution_id", 22, 8, "u"), ("price", 30, 8, "u"))),
    0x25: ("reduce_size_long", 18, _ORDER + (("quantity", 14, 4, "u"),)),
    0x26: ("reduce_size_short", 16, _ORDER + (("quantity", 14, 2, "u"),)),
    0x27: ("modify_order_long", 27, _ORDER + (("quantity", 14, 4, "u"), ("price", 18, 8, "u"),
                                              ("flags", 26, 1, "u"))),
    0x28: ("modify_order_short", 19, _ORDER + (("quantity", 14, 2, "u"), ("price", 16, 2, "u"),
                                               ("flags", 18, 1, "u"))),
    0x29: ("delete_order", 14, _ORDER),
    0x2A: ("trade_long", 41, _ADD + (("quantity", 15, 4, "u"), ("symbol", 19, 6, "s"), ("price", 25, 8, "u"),
                                     ("execution_id", 33, 8, "u"))),
    0x2B: ("trade_short", 33, _ADD + (("quantity", 15, 2, "u"), ("symbol", 17, 6, "s"), ("price", 23, 2, "u"),
                                      ("execution_id", 25, 8, "u"))),
    0x2C: ("trade_break", 14, (_OFS, ("execution_id", 6, 8, "u"))),
    0x2D: ("end_of_session", 6, (_OFS,)),
    0x2F: ("add_order_expanded", 41, _ADD + (("quantity", 15, 4, "u"), ("symbol", 19, 8, "s"),
                                             ("price", 27, 8, "u"), ("flags", 35, 1, "u"),
                                             ("participant", 36, 4, "s"), ("customer", 40, 1, "c"))),
    0x30: ("trade_expanded", 43, _ADD + (("quantity", 15, 4, "u"), ("symbol", 19, 8, "s"),
                                         ("price", 27, 8, "u"), ("execution_id", 35, 8, "u"))),
    0x31: ("trading_status", 18, (_OFS, ("symbol", 6, 8, "s"), ("status", 14, 1, "c"),
                                  ("reg_sho_action", 15, 1, "c"), ("reserved", 16, 2, "s"))),
    0xB1: ("time_reference", 18, (("midnight", 2, 4, "u"), ("seconds", 6, 4, "u"), ("offset", 10, 4, "u"),
                                  ("trade_date", 14, 4, "u"))),
}
TYPES = {name: t for t, (name, _n, _f) in MESSAGES.items()}


def field(name: str, field_name: str) -> tuple[int, int, str]:
    """(offset, width, kind) of a field of a message (by its name)."""
    for f in MESSAGES[TYPES[name]][2]:
        if f[0] == field_name:
            return f[1], f[2], f[3]
    raise KeyError(f"PITCH {name} has no field {field_name!r}")


def pack(name: str, **values) -> bytes:
    """The bytes of one message: length, type, then the named fields (absent ones zero)."""
    t = TYPES[name]
    _name, n, fields = MESSAGES[t]
    out = bytearray(n)
    out[0] = n
    out[1] = t
    for fname, start, width, kind in fields:
        v = values.pop(fname, 0)
        if kind == "u":
            out[start:start + width] = int(v).to_bytes(width, "little")
        elif v:
            raw = v.encode("latin-1") if isinstance(v, str) else bytes(v)
            out[start:start + width] = raw.ljust(width)[:width]
    if values:
        raise KeyError(f"PITCH {name} has no field(s) {', '.join(sorted(values))}")
    return bytes(out)


def unit(messages: list, unit_no: int, sequence: int) -> bytes:
    """A sequenced unit of messages (bytes each) starting at ``sequence``."""
    body = b"".join(messages)
    return (len(body) + HEADER).to_bytes(2, "little") + bytes((len(messages), unit_no)) + \
        sequence.to_bytes(4, "little") + body


# message types
T_TIME = TYPES["time"]
T_ADD_LONG = TYPES["add_order_long"]
T_ADD_SHORT = TYPES["add_order_short"]
T_EXEC = TYPES["order_executed"]
T_EXEC_PRICE = TYPES["order_executed_at_price"]
T_REDUCE_LONG = TYPES["reduce_size_long"]
T_REDUCE_SHORT = TYPES["reduce_size_short"]
T_MODIFY_LONG = TYPES["modify_order_long"]
T_MODIFY_SHORT = TYPES["modify_order_short"]
T_DELETE = TYPES["delete_order"]
T_TRADE_LONG = TYPES["trade_long"]
T_TRADE_SHORT = TYPES["trade_short"]
T_BREAK = TYPES["trade_break"]
T_END = TYPES["end_of_session"]
T_ADD_EXPANDED = TYPES["add_order_expanded"]
T_TRADE_EXPANDED = TYPES["trade_expanded"]
T_STATUS = TYPES["trading_status"]
T_TIME_REF = TYPES["time_reference"]
#: the length of each message type obook reads (0: a type it passes over)
SIZES = np.zeros(256, np.int64)
for _t, (_name, _n, _f) in MESSAGES.items():
    SIZES[_t] = _n
# field offsets the kernel reads (module constants numba folds)
O_OFFSET = field("delete_order", "offset")[0]
O_ORDER_ID = field("delete_order", "order_id")[0]
O_SIDE = field("add_order_long", "side")[0]
O_QTY = field("add_order_long", "quantity")[0]              # adds and trades
O_SYM_SHORT = field("add_order_short", "symbol")[0]
O_PX_SHORT = field("add_order_short", "price")[0]
O_SYM_LONG = field("add_order_long", "symbol")[0]
O_PX_LONG = field("add_order_long", "price")[0]
O_SYM_EXP = field("add_order_expanded", "symbol")[0]
O_PX_EXP = field("add_order_expanded", "price")[0]
O_XID_TRADE_SHORT = field("trade_short", "execution_id")[0]
O_XID_TRADE_LONG = field("trade_long", "execution_id")[0]
O_XID_TRADE_EXP = field("trade_expanded", "execution_id")[0]
O_XID_BREAK = field("trade_break", "execution_id")[0]
O_EXEC_QTY = field("order_executed", "quantity")[0]         # executions, reduces, modifies
O_XID_EXEC = field("order_executed", "execution_id")[0]
O_XID_EXEC_PX = field("order_executed_at_price", "execution_id")[0]
O_PX_EXEC = field("order_executed_at_price", "price")[0]
O_REMAINING = field("order_executed_at_price", "remaining")[0]
O_PX_MOD_LONG = field("modify_order_long", "price")[0]
O_FLAGS_MOD_LONG = field("modify_order_long", "flags")[0]
O_PX_MOD_SHORT = field("modify_order_short", "price")[0]
O_FLAGS_MOD_SHORT = field("modify_order_short", "flags")[0]
O_SECONDS = field("time", "seconds")[0]
O_SECONDS_REF = field("time_reference", "seconds")[0]
#: the Modify Order flag that keeps the order's place in its queue
MAINTAIN_PRIORITY = 0x02
#: 1 for the message types that name an order by its id (at O_ORDER_ID): adds, executions,
#: reduces, modifies, deletes
BY_ORDER_ID = np.zeros(256, np.uint8)
for _name in ("add_order_long", "add_order_short", "add_order_expanded", "order_executed", "order_executed_at_price",
              "reduce_size_long", "reduce_size_short", "modify_order_long", "modify_order_short", "delete_order"):
    assert field(_name, "order_id")[0] == O_ORDER_ID
    BY_ORDER_ID[TYPES[_name]] = 1

# frame status
FRAME_OK = 0
FRAME_UNIT = 1        # a unit whose length, count and message lengths disagree
FRAME_SHORT = 2       # a message shorter than its type
FRAME_GAP = 3         # a unit's sequence is not the next of its unit
FRAME_LOST = 4        # tolerant mode: a unit whose length cannot be right (below the header,
                      # or no unit follows it): the units after it cannot be found
#: how far from its unit's next sequence number a bad unit's header may be and still read
#: like the feed's when it follows another bad unit (pitch_frame)
NEAR_SEQ = 1 << 16
#: how far past a bad unit's end the lengths are followed to find the first whole unit of
#: its number, when no unit of that number was framed yet (_unit_like)
WALK_BYTES = 1 << 20
# decode status (besides NEED_ROOM)
DEC_OK = 0
DEC_UNKNOWN = 1       # an order id no live order has
DEC_DUPLICATE = 2     # an add of an order id that is live
DEC_PRICE = 3         # a long or expanded price of 2**63 or more (prices are unsigned: no int64 holds it)
DEC_SIDE = 4          # an add or a trade whose side is not B or S
# st[] of pitch_decode
ST_POS = 0            # resume: byte position of the unit
ST_K = 1              # resume: index of the message within the batch
ST_NE = 2             # events written
ST_BOOKS = 3          # local books handed out
ST_NEW = 4            # books first seen in this call (their symbols in new_syms)
ST_BAD = 5            # failing message index (DEC_* status)
ST_ROOM = 6           # NEED_ROOM: the table to grow (0 symbols, 1 orders, 2 executions)
ST_FILL = 7           # live + deleted rows of the three tables (7, 8, 9)
ST_USED = 10          # live rows of the three tables (10, 11, 12)
ST_UK = 13            # resume: index of the unit's first message within the batch
ST_WIDTH = 14
K_SYMBOL, K_ORDER, K_EXEC = range(3)

#: a decoder's state as pitch_decode takes it: its counters (ST_*), each unit's time in
#: seconds, the symbol, live order and execution Tables, the symbols first seen in the call,
#: the tolerant mode's skips by status and each unit's next sequence number (0: none seen
#: yet); all kept across batches
Decoding = namedtuple("Decoding", ("st", "secs", "syms", "orders", "execs", "new_syms", "skips", "next_seq"))


@njit(cache=True, _nrt=False)
def unit_check(buf, pos, end, sizes):
    """(FRAME_OK, count), or (FRAME_UNIT / FRAME_SHORT, index of the bad message) of the
    whole unit buf[pos:end]: its messages fill it exactly, each at least as long as its type."""
    count = np.int64(buf[pos + 2])
    p = pos + HEADER
    for j in range(count):
        if p + 2 > end:
            return FRAME_UNIT, j
        m = np.int64(buf[p])
        if m < 2 or p + m > end:
            return FRAME_UNIT, j
        if m < sizes[buf[p + 1]]:
            return FRAME_SHORT, j
        p += m
    if p != end:
        return FRAME_UNIT, count
    return FRAME_OK, count


@njit(cache=True, _nrt=False)
def _first_whole(buf, pos, n, final, unit, sizes):
    """The sequence number of the first whole sequenced unit numbered ``unit`` that the unit
    lengths from pos lead to in buf[:n]; 0 when they lose the way first (a length below the
    header, or past the end of the file, or past WALK_BYTES), -1 when buf[:n] ends before
    it tells (not ``final``)."""
    start = pos
    while pos + HEADER <= n and pos - start < WALK_BYTES:
        ln = _le(buf, pos, 2)
        if ln < HEADER:
            return 0
        if pos + ln > n:
            break
        seq = _le(buf, pos + 4, 4)
        if buf[pos + 3] == unit and seq != 0 and unit_check(buf, pos, pos + ln, sizes)[0] == FRAME_OK:
            return seq
        pos += ln
    return 0 if final or pos - start >= WALK_BYTES else -1


@njit(cache=True, _nrt=False)
def _unit_like(buf, pos, n, final, sizes, next_seq):
    """1 when the header of the unit buf[pos:] (whole in buf[:n]) reads like one of the
    feed's, else 0 (-1: buf[:n] ends before it tells): it names a unit a sequenced unit was
    framed on, or one that a whole sequenced unit of its number follows (by the lengths of
    the units after it: the first unit of that number was damaged), and a sequence number 0
    (unsequenced) or within NEAR_SEQ of that unit's next one. A length that lands in the
    middle of a unit rarely finds both."""
    unit = buf[pos + 3]
    expect = next_seq[unit]
    if expect == 0:
        expect = _first_whole(buf, pos + _le(buf, pos, 2), n, final, unit, sizes)
        if expect <= 0:
            return expect
    seq = _le(buf, pos + 4, 4)
    return 1 if seq == 0 or abs(seq - expect) < NEAR_SEQ else 0


@njit(cache=True, _nrt=False)
def _framed_after(buf, pos, n, final, sizes, next_seq):
    """Whether a unit follows at pos (a malformed unit's end): FRAME_OK when pos is the end
    of the file, starts a unit whose messages fill it (FRAME_SHORT ones included) or a
    malformed unit whose header reads like the feed's (what follows that one decides in
    turn), FRAME_UNIT when it does not, FRAME_GAP when buf[:n] does not hold it whole yet."""
    if pos == n and final:
        return FRAME_OK
    if pos + HEADER > n:
        return FRAME_UNIT if final else FRAME_GAP
    ln = _le(buf, pos, 2)
    if ln < HEADER:
        return FRAME_UNIT
    if pos + ln > n:
        return FRAME_UNIT if final else FRAME_GAP
    if unit_check(buf, pos, pos + ln, sizes)[0] == FRAME_UNIT:
        like = _unit_like(buf, pos, n, final, sizes, next_seq)
        if like < 0:
            return FRAME_GAP
        if like == 0:
            return FRAME_UNIT
    return FRAME_OK


@njit(cache=True, _nrt=False)
def pitch_frame(buf, n, max_records, strict, final, sizes, types, next_seq, counts):
    """Walk whole sequenced units at the front of buf[:n] (``final``: buf ends the file);
    types[t] counts their messages by type, next_seq[unit] is each unit's next sequence
    number (0: none seen yet). Tolerant mode counts what it passes over in counts (0: bad
    units, 1: short messages, 2: gaps): a bad unit is passed over whole (its messages get
    no record numbers; the decoders pass over it too) when its length holds, that is when
    the end of the file, a unit whose messages fill it, or another bad unit whose header
    reads like the feed's (and whose own length holds) follows it; a gap is counted and
    the feed goes on. A unit length below the header, or a bad unit no unit follows, leaves
    nothing to go on from: FRAME_UNIT (strict) or FRAME_LOST (tolerant) in both modes.
    Returns (messages, bytes, status, the failing message's index within its unit)."""
    pos = 0
    k = 0
    while pos + HEADER <= n:
        ln = _le(buf, pos, 2)
        if ln < HEADER:
            return k, pos, FRAME_UNIT if strict else FRAME_LOST, 0
        count = np.int64(buf[pos + 2])
        unit = buf[pos + 3]
        seq = _le(buf, pos + 4, 4)
        if pos + ln > n or (k > 0 and k + count > max_records):
            break
        end = pos + ln
        bad, j = unit_check(buf, pos, end, sizes)
        if bad == FRAME_OK and seq != 0 and count > 0:
            if next_seq[unit] != 0 and seq != next_seq[unit]:
                if strict:
                    return k, pos, FRAME_GAP, 0
                counts[2] += 1
            next_seq[unit] = seq + count
        if bad != FRAME_OK:
            if strict:
                return k, pos, bad, j
            if bad == FRAME_UNIT:
                after = _framed_after(buf, end, n, final, sizes, next_seq)
                if after == FRAME_GAP:
                    break                    # read on: the next unit decides
                if after == FRAME_UNIT:
                    return k, pos, FRAME_LOST, j
            counts[bad - 1] += 1
            pos = end
            continue
        p = pos + HEADER
        for j in range(count):
            types[buf[p + 1]] += 1
            p += np.int64(buf[p])
        k += count
        pos = end
    return k, pos, FRAME_OK, 0


@njit(cache=True, _nrt=False)
def pitch_breaks(buf, n_records, base_seq, seqs, matches):
    """The Trade Breaks among the whole units of buf (the framer's n_records messages; a
    bad unit of a tolerant replay is passed over, as the framer did): their record numbers
    and execution ids into seqs and matches (>= n_records long). Returns how many."""
    pos = 0
    k = 0
    nb = 0
    n = buf.shape[0]
    while pos + HEADER <= n and k < n_records:
        ln = _le(buf, pos, 2)
        if ln < HEADER or pos + ln > n:
            break
        count = np.int64(buf[pos + 2])
        if unit_check(buf, pos, pos + ln, SIZES)[0] == FRAME_OK:
            p = pos + HEADER
            for j in range(count):
                if buf[p + 1] == T_BREAK:
                    seqs[nb] = base_seq + k + j
                    matches[nb] = _le(buf, p + O_XID_BREAK, 8)
                    nb += 1
                p += np.int64(buf[p])
            k += count
        pos += ln
    return nb


@njit(cache=True, _nrt=False)
def owner_of(symbol, n_workers):
    """The worker that owns a symbol (its 8 bytes as a big-endian integer)."""
    h = (symbol ^ (symbol >> 32)) & 0xFFFFFFFF
    return (((h * 2654435761) & 0xFFFFFFFF) >> 16) % n_workers


@njit(cache=True, _nrt=False, inline="always")
def _symbol(b, p, n):
    """A symbol of n (6 or 8) bytes as 8 big-endian bytes, space-padded."""
    v = np.int64(0)
    for j in range(8):
        v = (v << 8) | (np.int64(b[p + j]) if j < n else 32)
    return v


@njit(cache=True, _nrt=False, inline="always")
def _sized(buf, p, short, expanded):
    """(quantity, symbol, price) of an add or a trade in its short, long or expanded form."""
    if short:
        return _le(buf, p + O_QTY, 2), _symbol(buf, p + O_SYM_SHORT, 6), _le(buf, p + O_PX_SHORT, 2) * 100
    if expanded:
        return _le(buf, p + O_QTY, 4), _symbol(buf, p + O_SYM_EXP, 8), _le(buf, p + O_PX_EXP, 8)
    return _le(buf, p + O_QTY, 4), _symbol(buf, p + O_SYM_LONG, 6), _le(buf, p + O_PX_LONG, 8)


@njit(cache=True, _nrt=False)
def _room(t, st, kind):
    return ht_full(t.keys, st, ST_FILL + kind)


@njit(cache=True, _nrt=False, inline="always")
def _find(t, kind, key):
    """The live slot of key in Table t (-1: none)."""
    return ht_find(t.keys, t.state, kind, key)


@njit(cache=True, _nrt=False)
def _put(t, st, kind, key, v0, v1):
    s = ht_put(t.keys, t.state, st, ST_USED + kind, ST_FILL + kind, kind, key)
    t.vals[s, 0] = v0
    t.vals[s, 1] = v1
    return s


@njit(cache=True, _nrt=False)
def _drop(state, st, kind, s):
    ht_drop(state, st, ST_USED + kind, s)


@njit(cache=True, _nrt=False)
def _book_of(symbol, syms, st, new_syms):
    """This worker's local book of a symbol, interned on first sight."""
    s = _find(syms, K_SYMBOL, symbol)
    if s >= 0:
        return syms.vals[s, 0]
    b = st[ST_BOOKS]
    _put(syms, st, K_SYMBOL, symbol, b, 0)
    st[ST_BOOKS] = b + 1
    new_syms[st[ST_NEW]] = symbol
    st[ST_NEW] += 1
    return b


#: the letter of each message type in the trades and orders tables (their ``kind`` and
#: ``action``): A add, E executed, C executed at a price, X reduced, M modified, D deleted,
#: P trade, B break
_LETTER = np.zeros(256, np.int64)
for _t, _c in ((T_ADD_LONG, "A"), (T_ADD_SHORT, "A"), (T_ADD_EXPANDED, "A"), (T_EXEC, "E"),
               (T_EXEC_PRICE, "C"), (T_REDUCE_LONG, "X"), (T_REDUCE_SHORT, "X"), (T_MODIFY_LONG, "M"),
               (T_MODIFY_SHORT, "M"), (T_DELETE, "D"), (T_TRADE_LONG, "P"), (T_TRADE_SHORT, "P"),
               (T_TRADE_EXPANDED, "P"), (T_BREAK, "B")):
    _LETTER[_t] = ord(_c)


@njit(cache=True, _nrt=False, inline="always")
def _stop(st, pos, k, i, ne):
    """Where a call stopped: the unit at pos (its first message k), message i, ne events."""
    st[ST_POS] = pos
    st[ST_UK] = k
    st[ST_K] = i
    st[ST_NE] = ne


@njit(cache=True, _nrt=False, inline="always")
def _event(ev, row, seq, tm, book, act, side, letter, oid, shares, price, new_ref, match, aux):
    ev[row, 0] = seq
    ev[row, 1] = tm
    ev[row, 2] = book
    ev[row, 3] = act | (side << 8) | (np.int64(letter) << TYPE_SHIFT)
    ev[row, 4] = oid
    ev[row, 5] = shares
    ev[row, 6] = price
    ev[row, 7] = new_ref
    ev[row, 8] = match
    ev[row, 9] = aux


@njit(cache=True, _nrt=False, inline="always")
def _prefetch_unit(buf, p, count, orders):
    """Start loading the order table rows the unit's ``count`` messages from ``p`` will look
    up (a checked unit: each message as long as its type): the table is mostly out of the
    near caches, and the unit's messages are decoded right after."""
    mask = orders.state.shape[0] - 1
    for _ in range(count):
        if BY_ORDER_ID[buf[p + 1]]:
            h = ht_home(K_ORDER, _le(buf, p + O_ORDER_ID, 8), mask)
            prefetch(orders.state, h)
            prefetch(orders.keys, orders.keys.shape[1] * h)
            prefetch(orders.vals, orders.vals.shape[1] * h)
        p += np.int64(buf[p])


@njit(cache=True, _nrt=False)
def pitch_decode(buf, base_seq, worker, n_workers, ev, dec, strict, prints):
    """Book events of the owned messages of buf (whole units), from st[ST_POS] / st[ST_K]
    (``dec``: the decoder's state, a Decoding).

    secs[unit]: the unit's time in seconds (Time, Time Reference), kept across batches.
    syms, orders, execs: the symbol, live order and execution Tables (hashtab), kept too.
    One event a message, two for an Order Executed at Price whose remaining quantity is not
    the order's size less the execution (the second sets the size; the first is DEFER, so
    the message gets one BBO and depth row, of the book after both). An id no live order has (or an add of a live id) is
    DEC_UNKNOWN (DEC_DUPLICATE), a price of 2**63 or more DEC_PRICE, an add's or a trade's
    side other than B or S DEC_SIDE: strict mode stops there (st[ST_BAD]); tolerant mode
    passes over the message, worker 0 counting it in skips. A unit whose sequence goes back
    (sent again; the framer counted it as a gap) has the messages next_seq[unit] says were
    seen passed over: they keep their record numbers but change no book again. Returns a
    DEC_* status, or NEED_ROOM (st[ST_ROOM]: the table to grow; resume from st).
    """
    st, secs, syms, orders, execs, new_syms, skips, next_seq = dec
    pos = st[ST_POS]
    k = st[ST_UK]
    resume = st[ST_K]
    ne = st[ST_NE]
    n = buf.shape[0]
    while pos + HEADER <= n:
        ln = _le(buf, pos, 2)
        if ln < HEADER:
            break                    # never in a batch: the framer stops before it
        end = pos + ln
        if end > n:
            break
        count = np.int64(buf[pos + 2])
        unit = buf[pos + 3]
        if unit_check(buf, pos, end, SIZES)[0] != FRAME_OK:
            pos = end                # a bad unit (tolerant mode): passed over, as the framer did
            continue
        seq = _le(buf, pos + 4, 4)
        seen = min(count, next_seq[unit] - seq) if seq != 0 and next_seq[unit] > seq else 0
        p = pos + HEADER
        _prefetch_unit(buf, p, count, orders)
        done = 0
        while k + done < resume or done < seen:     # decoded already (a resumed call), or seen
            p += np.int64(buf[p])
            done += 1
        while done < count:
            ln = np.int64(buf[p])
            t = buf[p + 1]
            i = k + done
            if t == T_TIME:
                secs[unit] = _le(buf, p + O_SECONDS, 4)
                p += ln
                done += 1
                continue
            if t == T_TIME_REF:
                secs[unit] = _le(buf, p + O_SECONDS_REF, 4)
                p += ln
                done += 1
                continue
            kind = -1
            if t == T_ADD_LONG or t == T_ADD_SHORT or t == T_ADD_EXPANDED:
                kind = K_ORDER if _room(orders, st, K_ORDER) else (K_SYMBOL if _room(syms, st, K_SYMBOL) else -1)
            elif t == T_TRADE_LONG or t == T_TRADE_SHORT or t == T_TRADE_EXPANDED:
                kind = K_EXEC if prints and _room(execs, st, K_EXEC) else (
                    K_SYMBOL if _room(syms, st, K_SYMBOL) else -1)
            elif prints and (t == T_EXEC or t == T_EXEC_PRICE):
                kind = K_EXEC if _room(execs, st, K_EXEC) else -1
            if kind >= 0:
                _stop(st, pos, k, i, ne)
                st[ST_ROOM] = kind
                return NEED_ROOM
            tm = secs[unit] * 1_000_000_000 + _le(buf, p + O_OFFSET, 4)
            act = 0
            book = -1
            bad = DEC_OK
            oid = 0
            shares = 0
            price = 0
            side = 0
            match = 0
            aux = 0
            new_ref = 0
            resize = -1      # an Order Executed at Price's remaining quantity when not size - executed
            at = 0           # the order's price and side
            at_side = 0
            was = 0          # and its size after the execution
            if t == T_ADD_LONG or t == T_ADD_SHORT or t == T_ADD_EXPANDED:
                oid = _le(buf, p + O_ORDER_ID, 8)
                side = 0 if buf[p + O_SIDE] == 66 else 1
                shares, sym, price = _sized(buf, p, t == T_ADD_SHORT, t == T_ADD_EXPANDED)
                if buf[p + O_SIDE] != 66 and buf[p + O_SIDE] != 83:
                    bad = DEC_SIDE
                elif price < 0:
                    bad = DEC_PRICE
                elif _find(orders, K_ORDER, oid) >= 0:
                    bad = DEC_DUPLICATE
                else:
                    if n_workers == 1 or owner_of(sym, n_workers) == worker:
                        book = _book_of(sym, syms, st, new_syms)
                    orders.vals[_put(orders, st, K_ORDER, oid, (book << 1) | side, shares), 2] = price
                    act = ACT_ADD
            elif t == T_TRADE_LONG or t == T_TRADE_SHORT or t == T_TRADE_EXPANDED:
                oid = _le(buf, p + O_ORDER_ID, 8)
                side = 0 if buf[p + O_SIDE] == 66 else 1
                shares, sym, price = _sized(buf, p, t == T_TRADE_SHORT, t == T_TRADE_EXPANDED)
                match = _le(buf, p + (O_XID_TRADE_SHORT if t == T_TRADE_SHORT else (
                    O_XID_TRADE_LONG if t == T_TRADE_LONG else O_XID_TRADE_EXP)), 8)
                if buf[p + O_SIDE] != 66 and buf[p + O_SIDE] != 83:
                    bad = DEC_SIDE
                elif price < 0:
                    bad = DEC_PRICE
                elif prints and (n_workers == 1 or owner_of(sym, n_workers) == worker):
                    book = _book_of(sym, syms, st, new_syms)
                    _put(execs, st, K_EXEC, match, book, 0)
                    act = ACT_PRINT
            elif t == T_BREAK:
                match = _le(buf, p + O_XID_BREAK, 8)
                if prints:
                    s = _find(execs, K_EXEC, match)
                    if s >= 0:
                        book = execs.vals[s, 0]
                        act = ACT_PRINT | NO_SIDE
            elif (t == T_EXEC or t == T_EXEC_PRICE or t == T_REDUCE_LONG or t == T_REDUCE_SHORT
                  or t == T_MODIFY_LONG or t == T_MODIFY_SHORT or t == T_DELETE):
                oid = _le(buf, p + O_ORDER_ID, 8)
                s = _find(orders, K_ORDER, oid)
                if s < 0:
                    bad = DEC_UNKNOWN
                elif (t == T_EXEC_PRICE and _le(buf, p + O_PX_EXEC, 8) < 0) or (
                        t == T_MODIFY_LONG and _le(buf, p + O_PX_MOD_LONG, 8) < 0):
                    bad = DEC_PRICE
                else:
                    book = orders.vals[s, 0] >> 1
                    left = orders.vals[s, 1]
                    if t == T_EXEC or t == T_EXEC_PRICE:
                        act = ACT_EXEC
                        shares = _le(buf, p + O_EXEC_QTY, 4)
                        match = _le(buf, p + (O_XID_EXEC if t == T_EXEC else O_XID_EXEC_PX), 8)
                        left -= shares
                        if t == T_EXEC_PRICE:
                            aux = _le(buf, p + O_PX_EXEC, 8)
                            rest = _le(buf, p + O_REMAINING, 4)
                            if rest != left and left >= 0:
                                # the order's size after the execution is the message's remaining
                                # quantity: a second event cancels what is no longer there, or sets
                                # the larger size (a reserve refilled: the back of the level; the
                                # order back in the book if the execution took it all)
                                resize = rest
                                was = left
                                at = orders.vals[s, 2]
                                at_side = orders.vals[s, 0] & 1
                                left = rest
                        if prints and book >= 0:
                            _put(execs, st, K_EXEC, match, book, 0)
                    elif t == T_REDUCE_LONG or t == T_REDUCE_SHORT:
                        act = ACT_CANCEL
                        shares = _le(buf, p + O_EXEC_QTY, 4 if t == T_REDUCE_LONG else 2)
                        left -= shares
                    elif t == T_DELETE:
                        act = ACT_DELETE
                        left = 0
                    else:
                        act = ACT_MODIFY
                        if t == T_MODIFY_LONG:
                            shares = _le(buf, p + O_EXEC_QTY, 4)
                            price = _le(buf, p + O_PX_MOD_LONG, 8)
                            flags = buf[p + O_FLAGS_MOD_LONG]
                        else:
                            shares = _le(buf, p + O_EXEC_QTY, 2)
                            price = _le(buf, p + O_PX_MOD_SHORT, 2) * 100
                            flags = buf[p + O_FLAGS_MOD_SHORT]
                        if (flags & MAINTAIN_PRIORITY) == 0:
                            act |= TO_BACK
                        new_ref = oid
                        left = shares
                        orders.vals[s, 2] = price
                    if left <= 0:
                        _drop(orders.state, st, K_ORDER, s)
                    else:
                        orders.vals[s, 1] = left
            if bad != DEC_OK:
                if strict:
                    _stop(st, pos, k, i, ne)
                    st[ST_BAD] = i
                    return bad
                if worker == 0:
                    skips[bad] += 1
            elif act != 0 and book >= 0:
                if resize >= 0:
                    act |= DEFER     # one message: its BBO and depth rows after the second event
                _event(ev, ne, base_seq + i, tm, book, act, side, _LETTER[t], oid, shares, price, new_ref, match, aux)
                ne += 1
                if resize >= 0:
                    if resize < was:
                        _event(ev, ne, base_seq + i, tm, book, ACT_CANCEL, at_side, _LETTER[T_REDUCE_LONG], oid,
                               was - resize, 0, 0, 0, 0)
                    else:
                        _event(ev, ne, base_seq + i, tm, book, ACT_MODIFY, at_side, _LETTER[T_MODIFY_LONG], oid,
                               resize, at, oid, 0, 0)
                    ne += 1
            p += ln
            done += 1
        if seq != 0 and count > 0 and seq + count > next_seq[unit]:
            next_seq[unit] = seq + count     # (once the unit is decoded: a resumed call sees it as before)
        k += count
        pos = end
    _stop(st, pos, k, k, ne)
    return DEC_OK
