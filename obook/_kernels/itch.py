"""ITCH 5.0 kernels: framing (parent), decoding to book events (workers), and
decoding to message columns (obook.read_itch).

A BinaryFILE is a sequence of frames: a 2-byte big-endian length, then the
message (type byte first). All integers are big-endian.
"""

import numpy as np

from .jit import INTERPRETED, njit

from .itch_layout import BODY, MESSAGES, offset as _at
from .layout import (ACT_ADD, ACT_CANCEL, ACT_DELETE, ACT_EXEC, ACT_PRINT, ACT_REPLACE,
                     NOT_PRINTABLE, TYPE_SHIFT)

#: message size (type byte included) of the types obook checks; other types are framed by
#: their length and skipped, whatever it is
SIZES = np.zeros(256, dtype=np.int64)
for _t, (_n, _fields) in MESSAGES.items():
    SIZES[ord(_t)] = _n

# the field offsets of obook._kernels.itch_layout as module constants (numba folds them)
LOCATE, TRACKING, TIMESTAMP = _at("A", "locate"), _at("A", "tracking"), _at("A", "timestamp")
T_S, T_R, T_H, T_A, T_F, T_E, T_C, T_X, T_D, T_U, T_P, T_Q, T_B = (ord(t) for t in "SRHAFECXDUPQB")
ADD_REF, ADD_SIDE, ADD_SHARES, ADD_STOCK, ADD_PRICE = (_at("A", f) for f in ("ref", "side", "shares",
                                                                            "stock", "price"))
assert all(_at(t, f) == _at("A", f) for t in "FP" for f in ("ref", "side", "shares", "stock", "price"))
P_MATCH = _at("P", "match")
EXEC_REF, EXEC_SHARES, EXEC_MATCH = _at("E", "ref"), _at("E", "shares"), _at("E", "match")
assert all(_at("C", f) == _at("E", f) for f in ("ref", "shares", "match"))
C_PRINTABLE, C_PRICE = _at("C", "printable"), _at("C", "price")
X_REF, X_SHARES = _at("X", "ref"), _at("X", "shares")
D_REF = _at("D", "ref")
U_REF, U_NEW_REF, U_SHARES, U_PRICE = (_at("U", f) for f in ("ref", "new_ref", "shares", "price"))
Q_SHARES, Q_STOCK, Q_PRICE, Q_MATCH = (_at("Q", f) for f in ("shares", "stock", "price", "match"))
B_MATCH, B_SIZE = _at("B", "match"), MESSAGES["B"][0]
R_STOCK = _at("R", "stock")
assert _at("H", "stock") == R_STOCK

FRAME_OK = 0
FRAME_MALFORMED = 1

# itch_decode's status
DECODE_OK = 0
DECODE_SHARES_PAST_INT64 = 1   # a Q's 8-byte shares of 2^63 or more (no int64 column holds them)


if INTERPRETED:     # Python kernels: one call a field instead of numpy scalar shifts (~8x faster)
    def _be16(b, p):
        return int.from_bytes(b[p:p + 2], "big")

    def _be32(b, p):
        return int.from_bytes(b[p:p + 4], "big")

    def _be48(b, p):
        return int.from_bytes(b[p:p + 6], "big")

    def _be64(b, p):     # int64, as the compiled kernel's shifts wrap
        return int.from_bytes(b[p:p + 8], "big", signed=True)
else:
    @njit(cache=True, _nrt=False, inline="always")
    def _be16(b, p):
        return (np.int64(b[p]) << 8) | np.int64(b[p + 1])

    @njit(cache=True, _nrt=False, inline="always")
    def _be32(b, p):
        return ((np.int64(b[p]) << 24) | (np.int64(b[p + 1]) << 16)
                | (np.int64(b[p + 2]) << 8) | np.int64(b[p + 3]))

    @njit(cache=True, _nrt=False, inline="always")
    def _be48(b, p):
        return (_be16(b, p) << 32) | _be32(b, p + 2)

    @njit(cache=True, _nrt=False, inline="always")
    def _be64(b, p):
        return (_be32(b, p) << 32) | _be32(b, p + 4)


@njit(cache=True, _nrt=False)
def owner_of(locate, n_workers):
    """The worker that owns a stock locate: a multiplicative hash."""
    return (((locate * 2654435761) >> 16) & 0xFFFF) % n_workers


def owners(n_workers: int) -> np.ndarray:
    """``owner_of`` of every locate, as the table itch_decode reads (a load instead of a
    division: 12% of a worker's decoding with 2 workers)."""
    return owner_of.py_func(np.arange(1 << 16, dtype=np.int64), n_workers).astype(np.uint8)


@njit(cache=True, _nrt=False)
def itch_frame(buf, n, max_records, strict, sizes, types):
    """Walk whole frames at the front of buf[:n]; types[t] counts the well-formed ones by type.

    Returns (records, bytes, status, malformed): status FRAME_MALFORMED (strict
    only) means the frame after the returned records is shorter than its type.
    """
    pos = 0
    k = 0
    bad = 0
    while k < max_records and pos + 2 <= n:
        ln = _be16(buf, pos)
        if pos + 2 + ln > n:
            break
        if ln == 0 or ln < sizes[buf[pos + 2]]:
            if strict:
                return k, pos, FRAME_MALFORMED, bad
            bad += 1
        else:
            types[buf[pos + 2]] += 1
        pos += 2 + ln
        k += 1
    return k, pos, FRAME_OK, bad


@njit(cache=True, _nrt=False)
def itch_breaks(buf, n_records, base_seq, seqs, matches):
    """The trade breaks (B) among the n_records whole frames of buf: their record numbers
    and match numbers into seqs and matches (>= n_records long). Returns how many."""
    pos = 0
    nb = 0
    for k in range(n_records):
        ln = _be16(buf, pos)
        if ln >= B_SIZE and buf[pos + 2] == T_B:
            seqs[nb] = base_seq + k
            matches[nb] = _be64(buf, pos + 2 + B_MATCH)
            nb += 1
        pos += 2 + ln
    return nb


@njit(cache=True, _nrt=False)
def itch_decode(buf, base_seq, worker, owner, sizes, ev, names, prints, keep, wanted):
    """Book events of the records (buf holds whole frames) whose locate this worker owns
    (``owner[locate] == worker``; ``owners(n_workers)``).

    Ticker selection: only locates with keep[locate] != 0 are decoded (all ones: every
    book); when wanted (the 8-byte space-padded stocks, big-endian int64) is not empty, each
    owned 'R' message sets keep[locate] to whether its stock is wanted, so the records of
    other books are skipped right after framing.
    names receives (locate, byte position of the 8-byte stock) of owned, kept 'R'
    messages. Malformed frames are skipped (the framer accounted for them). With
    prints, P, Q and B become ACT_PRINT events (for the trades table).
    Returns (events, names, status): DECODE_OK, or DECODE_SHARES_PAST_INT64 when a Q's
    shares are 2^63 or more (with prints: the trades table's int64 shares cannot hold them);
    decoding stops there, ev[events] holds that record's number (column 0) and its
    shares (column 5, as int64 bits) and the events before it are returned.
    """
    pos = 0
    ne = 0
    nn = 0
    k = -1
    n = buf.shape[0]
    while pos + 2 <= n:
        k += 1
        ln = _be16(buf, pos)
        m = pos + 2
        pos = m + ln
        if ln == 0:
            continue
        t = buf[m]
        if ln < sizes[t] or ln < BODY:
            continue
        loc = _be16(buf, m + LOCATE)
        if owner[loc] != worker:
            continue
        if t == 82 and wanted.shape[0] > 0:     # R: is this locate's stock selected?
            stock = _be64(buf, m + 11)
            keep[loc] = 0
            for i in range(wanted.shape[0]):
                if wanted[i] == stock:
                    keep[loc] = 1
        if keep[loc] == 0:
            continue
        act = 0
        aux = 0         # EV_AUX: a C's execution price; 0, at the order's price (E, as the venue executes)
        if t == T_A or t == T_F:
            act = ACT_ADD | ((0 if buf[m + ADD_SIDE] == 66 else 1) << 8)
            ev[ne, 4] = _be64(buf, m + ADD_REF)
            ev[ne, 5] = _be32(buf, m + ADD_SHARES)
            ev[ne, 6] = _be32(buf, m + ADD_PRICE)
        elif t == T_E or t == T_C:
            act = ACT_EXEC
            ev[ne, 4] = _be64(buf, m + EXEC_REF)
            ev[ne, 5] = _be32(buf, m + EXEC_SHARES)
            ev[ne, 8] = _be64(buf, m + EXEC_MATCH)
            if t == T_C:
                aux = _be32(buf, m + C_PRICE)
                if buf[m + C_PRINTABLE] != 89:   # 'Y'
                    act |= NOT_PRINTABLE
        elif t == T_X:
            act = ACT_CANCEL
            ev[ne, 4] = _be64(buf, m + X_REF)
            ev[ne, 5] = _be32(buf, m + X_SHARES)
        elif t == T_D:
            act = ACT_DELETE
            ev[ne, 4] = _be64(buf, m + D_REF)
        elif t == T_U:
            act = ACT_REPLACE
            ev[ne, 4] = _be64(buf, m + U_REF)
            ev[ne, 7] = _be64(buf, m + U_NEW_REF)
            ev[ne, 5] = _be32(buf, m + U_SHARES)
            ev[ne, 6] = _be32(buf, m + U_PRICE)
        elif t == T_R:
            names[nn, 0] = loc
            names[nn, 1] = m + R_STOCK
            nn += 1
        elif prints and t == T_P:
            act = ACT_PRINT | ((0 if buf[m + ADD_SIDE] == 66 else 1) << 8)
            ev[ne, 4] = _be64(buf, m + ADD_REF)
            ev[ne, 5] = _be32(buf, m + ADD_SHARES)
            ev[ne, 6] = _be32(buf, m + ADD_PRICE)
            ev[ne, 8] = _be64(buf, m + P_MATCH)
        elif prints and t == T_Q:
            act = ACT_PRINT
            ev[ne, 5] = _be64(buf, m + Q_SHARES)
            if ev[ne, 5] < 0:           # 2^63 or more (unsigned): no row
                ev[ne, 0] = base_seq + k
                return ne, nn, DECODE_SHARES_PAST_INT64
            ev[ne, 6] = _be32(buf, m + Q_PRICE)
            ev[ne, 8] = _be64(buf, m + Q_MATCH)
        elif prints and t == T_B:
            act = ACT_PRINT
            ev[ne, 8] = _be64(buf, m + B_MATCH)
        if act != 0:
            ev[ne, 0] = base_seq + k
            ev[ne, 1] = _be48(buf, m + TIMESTAMP)
            ev[ne, 2] = loc
            ev[ne, 3] = act | (np.int64(t) << TYPE_SHIFT)
            ev[ne, 9] = aux
            ne += 1
    return ne, nn, DECODE_OK


# field-presence bits of itch_messages
F_REF = 1
F_SIDE = 2
F_SHARES = 4
F_PRICE = 8
F_NEWREF = 16
F_MATCH = 32
F_STOCK = 64
F_RAW = 128      # S, R, H, Q: the whole message is kept in the raw column


@njit(cache=True, _nrt=False)
def itch_messages(buf, n_records, base_seq, base_offset, sizes, ints, fields, stock_pos):
    """Decode every record into columns.

    ints[k] = seq, offset, type, locate, tracking, time, ref, side, shares,
    price, new_ref, match; fields[k] = F_* bits of the columns that apply;
    stock_pos[k] = byte position of the 8-byte stock (or -1).
    Malformed frames keep only seq, offset and type (-1 when the frame is empty).
    """
    pos = 0
    for k in range(n_records):
        ln = _be16(buf, pos)
        m = pos + 2
        r = ints[k]
        r[0] = base_seq + k
        r[1] = base_offset + pos
        pos = m + ln
        fields[k] = 0
        stock_pos[k] = -1
        for j in range(3, 12):
            r[j] = 0
        if ln == 0:
            r[2] = -1
            continue
        t = buf[m]
        r[2] = t
        if ln < sizes[t] or ln < BODY:
            continue
        r[3] = _be16(buf, m + LOCATE)
        r[4] = _be16(buf, m + TRACKING)
        r[5] = _be48(buf, m + TIMESTAMP)
        f = 0
        if t == T_A or t == T_F or t == T_P:
            r[6] = _be64(buf, m + ADD_REF)
            r[7] = buf[m + ADD_SIDE]
            r[8] = _be32(buf, m + ADD_SHARES)
            r[9] = _be32(buf, m + ADD_PRICE)
            stock_pos[k] = m + ADD_STOCK
            f = F_REF | F_SIDE | F_SHARES | F_PRICE | F_STOCK
            if t == T_P:
                r[11] = _be64(buf, m + P_MATCH)
                f |= F_MATCH
        elif t == T_E or t == T_C:
            r[6] = _be64(buf, m + EXEC_REF)
            r[8] = _be32(buf, m + EXEC_SHARES)
            r[11] = _be64(buf, m + EXEC_MATCH)
            f = F_REF | F_SHARES | F_MATCH
            if t == T_C:
                r[9] = _be32(buf, m + C_PRICE)
                f |= F_PRICE
        elif t == T_X:
            r[6] = _be64(buf, m + X_REF)
            r[8] = _be32(buf, m + X_SHARES)
            f = F_REF | F_SHARES
        elif t == T_D:
            r[6] = _be64(buf, m + D_REF)
            f = F_REF
        elif t == T_U:
            r[6] = _be64(buf, m + U_REF)
            r[10] = _be64(buf, m + U_NEW_REF)
            r[8] = _be32(buf, m + U_SHARES)
            r[9] = _be32(buf, m + U_PRICE)
            f = F_REF | F_SHARES | F_PRICE | F_NEWREF
        elif t == T_Q:
            r[8] = _be64(buf, m + Q_SHARES)
            r[9] = _be32(buf, m + Q_PRICE)
            r[11] = _be64(buf, m + Q_MATCH)
            stock_pos[k] = m + Q_STOCK
            f = F_SHARES | F_PRICE | F_MATCH | F_STOCK | F_RAW
        elif t == T_B:
            r[11] = _be64(buf, m + B_MATCH)
            f = F_MATCH
        elif t == T_R or t == T_H:
            stock_pos[k] = m + R_STOCK
            f = F_STOCK | F_RAW
        elif t == T_S:
            f = F_RAW
        fields[k] = f
    return n_records
