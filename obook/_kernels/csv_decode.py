"""Numba kernels of the CSV order feed: framing, strict field parsing, interning.

Arrays and scalars in, status codes and counts out; the Python layer
(obook.feeds.csv) turns codes into error reasons. Two open-addressing hash
tables (linear probing, full byte comparison on a hit) map text to dense ints:
tickers to local book ids (never freed) and (book, order id) to order keys
(``ref``). The id table holds the live orders only: an order that dies leaves it at
once, but its key (and text) is released only at the start of the next
``decode_lines`` call (``release_pending``), so memory follows the live book and
``describe`` can still name any key of the batch just decoded. An id that comes
back within the batch (or names no live order) gets a fresh key.

Table rows are 32 bytes (hash, first 8 bytes of the text, book and length, key index
and remaining shares): a hit touches one cache line unless the text is longer than
8 bytes. ``keys[k]`` leads back from a key to its row and
text (for ``describe`` and for freeing). When a table or arena is full the
decoder returns NEED_ROOM at the line it stopped at; the Python layer grows
the arrays and calls again.
"""

from collections import namedtuple

import numpy as np

from .jit import INTERPRETED, njit
from .prefetch import prefetch
from .layout import (
    ACT_ADD_ZERO_OK, ACT_DELETE, ACT_EXEC_CLAMP, ACT_PRINT, ACT_REDUCE_TO, ASK, BID,
    FILLED, EV_ACTION, EV_AUX, EV_BOOK, EV_MATCH, EV_NEWREF, EV_PRICE, EV_REF, EV_SEQ, EV_SHARES, EV_TIME,
    TYPE_SHIFT,
)

# decode status codes (order = the order the fields are checked in)
ST_OK = 0
ST_FIELDS = 1          # expected at least 6 fields, got N
ST_TIME_NAN = 2
ST_TIME_RANGE = 3
ST_TYPE = 4
ST_SHARES_NAN = 5
ST_SHARES_RANGE = 6
ST_PRICE_NAN = 7
ST_PRICE_RANGE = 8
ST_MANY = 9            # more fields than the header has (two lines joined by a lost line end)
N_ST = 10

# parse results
P_OK = 0
P_NAN = 1
P_RANGE = 2

#: one text-keyed table as the kernels take it: its rows (T_*), its key rows (K_*) and its text
TextTable = namedtuple("TextTable", ("tab", "keys", "arena"))
#: a decoder's state as decode_lines takes it: its counters (S_*), the call's position and
#: results (O_*), the tolerant mode's counts by status, the lines by type, the scan's scratch
#: rows (SC_*), and the order id keys free for reuse and those freed at the next batch
Decoding = namedtuple("Decoding", ("st", "out", "counts", "types", "sc", "free", "pend"))

# hash table rows (32 bytes, two to a cache line: the hot data of a key)
T_HASH = 0         # mixed hash of (book, text); 0 in an empty row is fine: T_KEY tells
T_PREFIX = 1       # the first 8 bytes of the text, little-endian
T_TAG = 2          # book << 32 | text length (tag(book, n))
T_KEY = 3          # key index (order ref / local book) | remaining shares << 32; -1: empty row
T_WIDTH = 4
T_EMPTY = -1
LOW32 = 0xFFFFFFFF
# (remaining shares: a mirror of the book, it tells when an order dies; a row of the id
# table is a live order)

# key rows: key index -> where its row and text are
K_HASH = 0
K_OFF = 1
K_LEN = 2
K_WIDTH = 4

# scratch rows of decode_lines: one per line of a chunk that the worker decodes or reports
SC_START = 0       # first byte of the line
SC_END = 1         # its end (before the newline and a trailing CR)
SC_SEQ = 2         # line number
SC_STATUS = 3      # ST_*
SC_A = 4           # error: field start (ST_FIELDS, ST_MANY: the number of fields)
SC_B = 5           # error: field end
SC_TIME = 6
SC_TYP = 7
SC_SHARES = 8
SC_PRICE = 9
SC_HTK = 10        # FNV-1a of the ticker (uint64 bit pattern)
SC_HID = 11        # id table hash of the order id (id_hash)
SC_C0 = 12         # the first 6 comma positions: SC_C0 .. SC_C0 + 5
SC_WIDTH = 18
SC_ROWS = 64       # lines per chunk

# state counters (``st``)
S_NTK = 0          # tickers interned (= local books)
S_TK_ARENA = 1     # ticker arena bytes used
S_KEYS_HIGH = 2    # order keys ever allocated (high-water)
S_ARENA = 3        # order-id arena bytes used (incl. garbage)
S_NFREE = 4        # free order keys on the stack
S_NPEND = 5        # order keys that died (or never lived) during the last batch
S_IN_TABLE = 6     # order keys in the id table (the live orders)
S_ARENA_LIVE = 7   # arena bytes of the keys in use (live or pending)
S_WIDTH = 8

# ``out`` of decode_lines: in/out resume position, then results
O_POS = 0          # byte position of the next line
O_NEXT = 1         # its line number
O_EVENTS = 2       # events written
O_STATUS = 3
O_SEQ = 4
O_A = 5            # error field start (ST_FIELDS, ST_MANY: the number of fields)
O_B = 6            # error field end
O_ROOM = 7         # NEED_ROOM: bytes of text the line needs
O_WIDTH = 8
NEED_ROOM = 100

FNV_OFFSET = np.uint64(14695981039346656037)
FNV_PRIME = np.uint64(1099511628211)
U64_DIV10 = np.uint64(1844674407370955161)   # (2**64 - 1) // 10
U32_MAX = 4294967295
MIX1 = np.uint64(0xFF51AFD7ED558CCD)
MIX2 = np.uint64(0xC4CEB9FE1A85EC53)


FRAME_CHUNK = 4096


_LO7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_LF8 = np.uint64(0x0A0A0A0A0A0A0A0A)
_ONES = np.uint64(0x0101010101010101)


@njit(cache=True, _nrt=False)
def count_lf(buf, a, b):
    """Newlines in buf[a:b], eight bytes at a time (SWAR: exact zero-byte mask of w ^ LF*8)."""
    s = np.uint64(0)
    m = (b - a) >> 3
    words = buf[a:a + 8 * m].view(np.uint64)
    for k in range(m):
        w = words[k] ^ _LF8
        z = ~(((w & _LO7) + _LO7) | w | _LO7)            # 0x80 in each byte that was '\n'
        s += ((z >> np.uint64(7)) * _ONES) >> np.uint64(56)
    n = np.int64(s)
    i = a + 8 * m
    while i < b:
        n += buf[i] == 10
        i += 1
    return n


@njit(cache=True, _nrt=False)
def frame_lines(buf, final, max_records):
    """(lines, bytes) of the whole lines at the front of buf, at most max_records.

    With final, a last line without a newline counts too."""
    n = buf.shape[0]
    lines = 0
    i = 0
    while i + FRAME_CHUNK <= n:               # whole chunks, vectorized
        c = count_lf(buf, i, i + FRAME_CHUNK)
        if lines + c >= max_records:
            break
        lines += c
        i += FRAME_CHUNK
    end = 0
    if lines > 0:                             # just after the last newline before i
        j = i - 1
        while buf[j] != 10:
            j -= 1
        end = j + 1
    while i < n and lines < max_records:
        if buf[i] == 10:
            lines += 1
            end = i + 1
        i += 1
    if final and lines < max_records and end < n:
        lines += 1
        end = n
    return lines, end


@njit(cache=True, _nrt=False)
def fnv1a(buf, a, b):
    """FNV-1a 64 of buf[a:b] (uint64)."""
    h = FNV_OFFSET
    for i in range(a, b):
        h = (h ^ np.uint64(buf[np.uint64(i)])) * FNV_PRIME
    return h


@njit(cache=True, _nrt=False)
def owner_of(h, n_workers):
    """The worker owning a ticker of hash h (h mod n_workers; a mask for a power of 2)."""
    if n_workers & (n_workers - 1) == 0:
        return np.int64(h & np.uint64(n_workers - 1))
    return np.int64(h % np.uint64(n_workers))


@njit(cache=True, _nrt=False)
def parse_short(buf, a, b):
    """(P_*, value) of an unsigned decimal buf[a:b] of 1 to 18 digits (no overflow check)."""
    v = np.int64(0)
    for i in range(a, b):
        c = np.int64(buf[np.uint64(i)]) - 48
        if np.uint64(c) > np.uint64(9):
            return P_NAN, np.int64(0)
        v = v * 10 + c
    return P_OK, v


@njit(cache=True, _nrt=False)
def parse_u64(buf, a, b):
    """(P_*, value as int64 bit pattern) of an unsigned decimal buf[a:b]."""
    if a >= b:
        return P_NAN, np.int64(0)
    if b - a <= 18:                       # cannot overflow
        return parse_short(buf, a, b)
    v = np.uint64(0)
    over = False
    for i in range(a, b):
        c = np.int64(buf[np.uint64(i)]) - 48
        if c < 0 or c > 9:
            return P_NAN, np.int64(0)
        if not over:
            d = np.uint64(c)
            if v > U64_DIV10 or (v == U64_DIV10 and c > 5):
                over = True
            else:
                v = v * np.uint64(10) + d
    if over:
        return P_RANGE, np.int64(0)
    return P_OK, np.int64(v)


@njit(cache=True, _nrt=False)
def parse_u32(buf, a, b):
    """(P_*, value) of an unsigned decimal buf[a:b] that must fit in 32 bits."""
    if a >= b:
        return P_NAN, np.int64(0)
    if b - a <= 9:                        # cannot overflow
        return parse_short(buf, a, b)
    v = np.int64(0)
    over = False
    for i in range(a, b):
        c = np.int64(buf[np.uint64(i)]) - 48
        if c < 0 or c > 9:
            return P_NAN, np.int64(0)
        if not over:
            v = v * 10 + c
            if v > U32_MAX:
                over = True
    if over:
        return P_RANGE, np.int64(0)
    return P_OK, v


@njit(cache=True, _nrt=False)
def is_blank(buf, a, b):
    """Only ASCII whitespace (space, \\t, \\r, \\v, \\f) in buf[a:b]."""
    for i in range(a, b):
        c = buf[i]
        if c != 32 and (c < 9 or c > 13):
            return False
    return True


@njit(cache=True, _nrt=False)
def mix(h, book):
    """The table hash of text hash h (FNV-1a) in book: well mixed low bits, as int64."""
    x = (h ^ np.uint64(book + 1)) * MIX1
    x ^= x >> np.uint64(32)
    x *= MIX2
    x ^= x >> np.uint64(29)
    return np.int64(x)


@njit(cache=True, _nrt=False)
def id_hash(h, h_ticker):
    """The id table hash of an order id of text hash h under the ticker of text hash h_ticker.

    It depends on the ticker's text, not on its local book, so the decoder can compute
    it (and prefetch the row) before the ticker is interned."""
    return mix(h ^ (h_ticker * MIX2), 0)


@njit(cache=True, _nrt=False)
def prefix8(buf, a, b):
    """The first (up to) 8 bytes of buf[a:b], little-endian, as int64."""
    p = np.int64(0)
    m = min(b - a, 8)
    for j in range(m):
        p |= np.int64(buf[a + j]) << (8 * j)
    return p


@njit(cache=True, _nrt=False)
def tag(book, n):
    """T_TAG of a text of n bytes in book (-1: the ticker table)."""
    return (np.int64(book) << 32) | n


@njit(cache=True, _nrt=False, inline="always")
def table_find(tab, arena, keys, h, book, p, buf, a, b):
    """(row, found) of (book, buf[a:b]) (hash h, prefix p): its row, or the empty row for it."""
    mask = tab.shape[0] - 1
    i = h & mask
    n = b - a
    t = tag(book, n)
    while True:
        if tab[i, T_KEY] == T_EMPTY:
            return i, False
        if tab[i, T_HASH] == h and tab[i, T_PREFIX] == p and tab[i, T_TAG] == t:
            if n <= 8:
                return i, True
            off = keys[tab[i, T_KEY] & LOW32, K_OFF]
            same = True
            for j in range(8, n):
                if arena[off + j] != buf[a + j]:
                    same = False
                    break
            if same:
                return i, True
        i = (i + 1) & mask


@njit(cache=True, _nrt=False, inline="always")
def table_put(tab, arena, keys, used, row, k, h, book, p, buf, a, b):
    """Store key k (text buf[a:b]) in an empty row, its text at arena[used:]; the new arena use."""
    n = b - a
    tab[row, T_HASH] = h
    tab[row, T_PREFIX] = p
    tab[row, T_TAG] = tag(book, n)
    tab[row, T_KEY] = k
    keys[k, K_HASH] = h
    keys[k, K_OFF] = used
    keys[k, K_LEN] = n
    for j in range(n):
        arena[used + j] = buf[a + j]
    return used + n


@njit(cache=True, _nrt=False)
def table_row_of(tab, keys, k):
    """The row holding key k."""
    mask = tab.shape[0] - 1
    i = keys[k, K_HASH] & mask
    while tab[i, T_KEY] & LOW32 != k:
        i = (i + 1) & mask
    return i


@njit(cache=True, _nrt=False)
def table_remove(tab, i):
    """Empty row i (backward-shift deletion keeps every probe chain whole)."""
    mask = tab.shape[0] - 1
    j = i
    while True:
        j = (j + 1) & mask
        if tab[j, T_KEY] == T_EMPTY:
            break
        home = tab[j, T_HASH] & mask
        if i <= j:
            stays = i < home <= j
        else:
            stays = home > i or home <= j
        if not stays:
            for c in range(T_WIDTH):
                tab[i, c] = tab[j, c]
            i = j
    tab[i, T_KEY] = T_EMPTY


@njit(cache=True, _nrt=False)
def table_rehash(old, new):
    """Move every row of old into new (all T_KEY = -1, a power of 2 rows)."""
    mask = new.shape[0] - 1
    for r in range(old.shape[0]):
        if old[r, T_KEY] != T_EMPTY:
            i = old[r, T_HASH] & mask
            while new[i, T_KEY] != T_EMPTY:
                i = (i + 1) & mask
            for c in range(T_WIDTH):
                new[i, c] = old[r, c]


@njit(cache=True, _nrt=False)
def arena_compact(keys, n_keys, arena, new_arena):
    """Copy the text of every key in use (K_LEN >= 0) of keys[:n_keys] into new_arena; the bytes used.

    Keys in key order: a sequential walk (a walk of the table rows would miss the cache on
    every key row)."""
    used = 0
    for k in range(n_keys):
        n = keys[k, K_LEN]
        if n >= 0:
            off = keys[k, K_OFF]
            for j in range(n):
                new_arena[used + j] = arena[off + j]
            keys[k, K_OFF] = used
            used += n
    return used


#: release_pending prefetches the key rows this many keys ahead
RELEASE_AHEAD = 16


@njit(cache=True, _nrt=False)
def release_pending(id_tab, id_keys, free, pend, st):
    """Free the order keys that died (or never lived) during the previous batch.

    Their table rows went when they died; only their text stayed (for ``describe``)."""
    npend = st[S_NPEND]
    nfree = st[S_NFREE]
    for q in range(npend):
        if q + RELEASE_AHEAD < npend:
            prefetch(id_keys, pend[q + RELEASE_AHEAD] * K_WIDTH)
        k = pend[q]
        st[S_ARENA_LIVE] -= id_keys[k, K_LEN]
        id_keys[k, K_LEN] = -1       # not in use: arena_compact drops its text
        free[nfree] = k
        nfree += 1
    st[S_NFREE] = nfree
    st[S_NPEND] = 0


@njit(cache=True, _nrt=False, inline="always")
def _pend(pend, st, k):
    """Key k is dead: free it at the start of the next batch."""
    pend[st[S_NPEND]] = k
    st[S_NPEND] += 1


@njit(cache=True, _nrt=False, inline="always")
def _die(id_tab, r, pend, st):
    """The order of row r died: drop its row now, its key next batch."""
    _pend(pend, st, id_tab[r, T_KEY] & LOW32)
    table_remove(id_tab, r)
    st[S_IN_TABLE] -= 1


#: new_key prefetches the key row of the free key this many adds ahead
KEY_AHEAD = 8


@njit(cache=True, _nrt=False, inline="always")
def new_key(keys, arena, free, st, h, buf, a, b):
    """A free order key for the text buf[a:b] (hash h), its text stored in the arena."""
    if st[S_NFREE] > 0:
        st[S_NFREE] -= 1
        k = free[st[S_NFREE]]
        if st[S_NFREE] >= KEY_AHEAD:       # the key row the add KEY_AHEAD adds on will write
            prefetch(keys, free[st[S_NFREE] - KEY_AHEAD] * K_WIDTH)
    else:
        k = st[S_KEYS_HIGH]
        st[S_KEYS_HIGH] = k + 1
    used = st[S_ARENA]
    n = b - a
    keys[k, K_HASH] = h
    keys[k, K_OFF] = used
    keys[k, K_LEN] = n
    for j in range(n):
        arena[used + j] = buf[a + j]
    st[S_ARENA] = used + n
    st[S_ARENA_LIVE] += n
    return k


@njit(cache=True, _nrt=False, inline="always")
def has_room(tk_tab, tk_keys, tk_arena, id_tab, id_keys, id_arena, pend, st, n_text):
    """Room for one more ticker and order key of n_text bytes (else NEED_ROOM)."""
    return (2 * (st[S_NTK] + 1) <= tk_tab.shape[0] and st[S_NTK] < tk_keys.shape[0]
            and st[S_TK_ARENA] + n_text <= tk_arena.shape[0]
            and 2 * (st[S_IN_TABLE] + 1) <= id_tab.shape[0]
            and (st[S_NFREE] > 0 or st[S_KEYS_HIGH] < id_keys.shape[0])
            and st[S_NPEND] < pend.shape[0]
            and st[S_ARENA] + n_text <= id_arena.shape[0])


@njit(cache=True, _nrt=False, inline="always")
def intern_ticker(tk_tab, tk_keys, tk_arena, st, h, buf, a, b):
    """The local book of the ticker buf[a:b] (FNV-1a h), interned when new."""
    hh = mix(h, -1)
    p = prefix8(buf, a, b)
    r, found = table_find(tk_tab, tk_arena, tk_keys, hh, -1, p, buf, a, b)
    if found:
        return tk_tab[r, T_KEY] & LOW32
    k = st[S_NTK]
    st[S_TK_ARENA] = table_put(tk_tab, tk_arena, tk_keys, st[S_TK_ARENA], r, k, hh, -1, p, buf, a, b)
    st[S_NTK] = k + 1
    return k


@njit(cache=True, _nrt=False, inline="always")
def add_order(id_tab, id_keys, id_arena, free, st, r, book, h, p, buf, a, b):
    """Put a new live order id buf[a:b] of book in the empty row r; its key."""
    k = new_key(id_keys, id_arena, free, st, h, buf, a, b)
    id_tab[r, T_HASH] = h
    id_tab[r, T_PREFIX] = p
    id_tab[r, T_TAG] = tag(book, b - a)
    st[S_IN_TABLE] += 1
    return k


if INTERPRETED:
    import ctypes

    def _load_u64(address):
        """The 8 bytes at an address, little-endian, as uint64 (Python kernels)."""
        return np.uint64(ctypes.c_uint64.from_address(int(address)).value)

    def trailing_zeros(x):
        """The trailing zero bits of a nonzero uint64 (Python kernels)."""
        x = int(x)
        return np.uint64((x & -x).bit_length() - 1)
else:
    from llvmlite import ir
    from numba import types
    from numba.cpython.unsafe.numbers import trailing_zeros
    from numba.extending import intrinsic

    @intrinsic
    def _load_u64(typingctx, address):
        """The 8 bytes at an address (any alignment), little-endian, as uint64."""
        if not isinstance(address, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            return builder.load(ptr, align=1)

        return types.uint64(types.uintp), codegen


ONES8 = np.uint64(0x0101010101010101)
LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
NL8 = np.uint64(0x0A0A0A0A0A0A0A0A)
COMMA8 = np.uint64(0x2C2C2C2C2C2C2C2C)


@njit(cache=True, _nrt=False)
def zero_bytes(y):
    """0x80 in every byte of y that is 0, else 0 (exact: no borrow between bytes)."""
    t = (y & LOW7) + LOW7
    return ~(t | y | LOW7)


@njit(cache=True, _nrt=False)
def take_commas(cm, i, nc, sc, j):
    """Count the commas of the zero_bytes mask cm of the word at i; record the first 6 of the line."""
    while cm != np.uint64(0) and nc < 6:
        sc[j, SC_C0 + nc] = i + np.int64(trailing_zeros(cm) >> np.uint64(3))
        nc += 1
        cm &= cm - np.uint64(1)
    if cm != np.uint64(0):                # past the sixth: counted only
        nc += np.int64(((cm >> np.uint64(7)) * ONES8) >> np.uint64(56))
    return nc


@njit(cache=True, _nrt=False)
def find_commas(buf, pos, sc, j):
    """(newline index (or len(buf)), commas) of the line at pos; the first 6 commas to sc[j, SC_C0:].

    Eight bytes at a time (SWAR), bytewise for the last 7 bytes of buf."""
    n = buf.shape[0]
    nc = 0
    i = pos
    if n >= 8:
        base = buf.ctypes.data
        while i <= n - 8:
            x = _load_u64(base + i)
            nl = zero_bytes(x ^ NL8)
            cm = zero_bytes(x ^ COMMA8)
            if nl != np.uint64(0):
                cm &= (nl & (~nl + np.uint64(1))) - np.uint64(1)   # the commas before it
                nc = take_commas(cm, i, nc, sc, j)
                return i + np.int64(trailing_zeros(nl) >> np.uint64(3)), nc
            nc = take_commas(cm, i, nc, sc, j)
            i += 8
    while i < n:
        c = buf[np.uint64(i)]            # unsigned: no negative-index fix-up
        if c == 10:
            break
        if c == 44:
            if nc < 6:
                sc[j, SC_C0 + nc] = i
            nc += 1
        i += 1
    return i, nc


@njit(cache=True, _nrt=False)
def parse_fields(buf, sc, j, start, e, nc):
    """Check and parse the fields of the line buf[start:e] (commas in sc[j]) into sc[j]."""
    c0 = sc[j, SC_C0]
    c2 = sc[j, SC_C0 + 2]
    c3 = sc[j, SC_C0 + 3]
    c4 = sc[j, SC_C0 + 4]
    pe = sc[j, SC_C0 + 5] if nc >= 6 else e
    status = ST_OK
    ea = 0
    eb = 0
    typ = np.int64(0)
    shares = np.int64(0)
    price = np.int64(0)
    r, t = parse_u64(buf, start, c0)
    if r != P_OK:
        status = ST_TIME_NAN if r == P_NAN else ST_TIME_RANGE
        ea = start
        eb = c0
    else:
        typ = np.int64(buf[c2 + 1]) if c3 == c2 + 2 else np.int64(0)
        if not (typ == 66 or typ == 83 or typ == 67 or typ == 68 or typ == 69
                or typ == 70 or typ == 84 or typ == 88):
            status = ST_TYPE
            ea = c2 + 1
            eb = c3
        else:
            r, shares = parse_u32(buf, c3 + 1, c4)
            if r != P_OK:
                status = ST_SHARES_NAN if r == P_NAN else ST_SHARES_RANGE
                ea = c3 + 1
                eb = c4
            else:
                r, price = parse_u32(buf, c4 + 1, pe)
                if r != P_OK:
                    status = ST_PRICE_NAN if r == P_NAN else ST_PRICE_RANGE
                    ea = c4 + 1
                    eb = pe
    sc[j, SC_STATUS] = status
    sc[j, SC_A] = ea
    sc[j, SC_B] = eb
    sc[j, SC_TIME] = t
    sc[j, SC_TYP] = typ
    sc[j, SC_SHARES] = shares
    sc[j, SC_PRICE] = price
    return status, typ


@njit(cache=True, _nrt=False)
def scan_chunk(buf, pos, seq, worker, n_workers, max_commas, sc, id_tab):
    """Scan the lines from pos (line seq) for the rows of sc (pass 1 of decode_lines).

    Every line worker has to decode or report gets a row, in order: its position,
    parsed fields or failing status, ticker hash and order-id table hash; the id
    table row of each line to intern is prefetched. Header, blank and foreign lines
    get none. A line of more than max_commas commas (the header's) is ST_MANY.
    Returns (rows, pos, seq) after the last line scanned (at most sc.shape[0] rows).
    """
    n = buf.shape[0]
    cap = sc.shape[0]
    mask = id_tab.shape[0] - 1
    j = 0
    while pos < n and j < cap:
        start = pos
        i, nc = find_commas(buf, pos, sc, j)
        line = seq
        pos = i + 1
        seq += 1
        if line == 1:                     # header
            continue
        e = i
        if e > start and buf[e - 1] == 13:
            e -= 1
        sc[j, SC_START] = start
        sc[j, SC_END] = e
        sc[j, SC_SEQ] = line
        if nc < 5:
            if is_blank(buf, start, e) or worker != 0:
                continue
            sc[j, SC_STATUS] = ST_FIELDS
            sc[j, SC_A] = nc + 1
            sc[j, SC_B] = 0
            j += 1
            continue
        h = fnv1a(buf, sc[j, SC_C0] + 1, sc[j, SC_C0 + 1])
        if n_workers > 1 and owner_of(h, n_workers) != worker:
            continue
        if nc > max_commas:
            sc[j, SC_STATUS] = ST_MANY
            sc[j, SC_A] = nc + 1
            sc[j, SC_B] = 0
            j += 1
            continue
        status, typ = parse_fields(buf, sc, j, start, e, nc)
        if status == ST_OK:
            sc[j, SC_HTK] = np.int64(h)
            if typ == 84 or typ == 88:    # T / X: trade prints, the id is not looked up
                j += 1
                continue
            hid = id_hash(fnv1a(buf, sc[j, SC_C0 + 1] + 1, sc[j, SC_C0 + 2]), h)
            sc[j, SC_HID] = hid
            prefetch(id_tab, (hid & mask) * T_WIDTH)
            prefetch(id_tab, ((hid + 2) & mask) * T_WIDTH)   # the next cache line
        j += 1
    return j, pos, seq


@njit(cache=True, _nrt=False, inline="always")
def apply_line(sc, j, buf, events, ne, tk_tab, tk_keys, tk_arena, id_tab, id_keys, id_arena,
               free, pend, st):
    """Intern the ticker and order id of the well-formed line of sc[j]; write its event row ne.

    EV_MATCH holds the order id's bytes in buf (start << 32 | length) for the tables
    that show it; a trade print (T / X) becomes an ACT_PRINT event with its letter.
    """
    typ = sc[j, SC_TYP]
    shares = sc[j, SC_SHARES]
    c0 = sc[j, SC_C0]
    c1 = sc[j, SC_C0 + 1]
    book = intern_ticker(tk_tab, tk_keys, tk_arena, st, np.uint64(sc[j, SC_HTK]), buf, c0 + 1, c1)
    a = c1 + 1
    b = sc[j, SC_C0 + 2]
    events[ne, EV_SEQ] = sc[j, SC_SEQ]
    events[ne, EV_TIME] = sc[j, SC_TIME]
    events[ne, EV_BOOK] = book
    events[ne, EV_SHARES] = shares
    events[ne, EV_PRICE] = sc[j, SC_PRICE]
    events[ne, EV_NEWREF] = 0
    events[ne, EV_MATCH] = (a << 32) | (b - a)
    events[ne, EV_AUX] = 0              # an E executes at the resting order's price
    if typ == 84 or typ == 88:
        events[ne, EV_ACTION] = ACT_PRINT | (typ << TYPE_SHIFT)
        events[ne, EV_REF] = 0
        return
    h = sc[j, SC_HID]
    p = prefix8(buf, a, b)
    r, live = table_find(id_tab, id_arena, id_keys, h, book, p, buf, a, b)   # a row is a live order
    side = BID
    if typ == 66 or typ == 83:
        act = ACT_ADD_ZERO_OK
        if typ == 83:
            side = ASK
        if live:                          # a duplicate add replaces (tolerant mode)
            key = id_tab[r, T_KEY] & LOW32
        else:
            key = add_order(id_tab, id_keys, id_arena, free, st, r, book, h, p, buf, a, b)
        id_tab[r, T_KEY] = key | (shares << 32)
    elif live:
        key = id_tab[r, T_KEY] & LOW32
        rem = (id_tab[r, T_KEY] >> 32) & LOW32
        dies = True
        if typ == 67:
            act = ACT_REDUCE_TO
            dies = shares == 0 and rem > 0
            if shares < rem:
                rem = shares
        elif typ == 69:
            taken = min(shares, rem)
            act = ACT_EXEC_CLAMP
            if taken == 0:                # no share executed: no trade is printed (the
                # order's row still says E): a 0-share order goes, a live one stays as it is
                act = (ACT_DELETE if rem == 0 else ACT_REDUCE_TO) | (np.int64(69) << TYPE_SHIFT)
                events[ne, EV_SHARES] = rem
            rem -= taken
            dies = rem == 0
        else:
            act = ACT_DELETE if typ == 68 else ACT_DELETE | FILLED     # F: the order was filled
        id_tab[r, T_KEY] = key | (rem << 32)
        if dies:
            _die(id_tab, r, pend, st)
    else:                             # unknown order: a key (for its text) freed next batch
        act = ACT_REDUCE_TO if typ == 67 else (ACT_EXEC_CLAMP if typ == 69 else ACT_DELETE)
        key = new_key(id_keys, id_arena, free, st, h, buf, a, b)
        _pend(pend, st, key)
    events[ne, EV_ACTION] = act | (side << 8)
    events[ne, EV_REF] = key


@njit(cache=True, _nrt=False)
def decode_lines(buf, worker, n_workers, max_commas, tolerant, prints, events, tickers, ids, dec):
    """Decode the lines of buf from out[O_POS] (line out[O_NEXT]) that worker owns into events
    (``dec``: the decoder's state, a Decoding); a line of more than max_commas commas (the
    header's) fails with ST_MANY.

    Returns ST_OK when done; NEED_ROOM with out[O_POS], out[O_NEXT], out[O_EVENTS] at the
    line to resume at once the tables have grown; a failing ST_* (strict: tolerant == 0)
    with out[O_SEQ], out[O_A], out[O_B]. Tolerant: counts[status] += 1 and go on.
    ``prints``: also emit the trade prints (T / X) as events (for the trades table).
    types[t] counts the well-formed lines of each type.
    sc (scratch, (SC_ROWS, SC_WIDTH) int64): a chunk of lines is scanned and parsed
    first (scan_chunk, which prefetches their id table rows), then interned in order.
    tickers, ids: the ticker and order id TextTables.
    """
    tk_tab, tk_keys, tk_arena = tickers
    id_tab, id_keys, id_arena = ids
    st, out, counts, types, sc, free, pend = dec
    n = buf.shape[0]
    pos = out[O_POS]
    seq = out[O_NEXT]
    ne = out[O_EVENTS]
    ret = ST_OK
    while pos < n and ret == ST_OK:
        m, next_pos, next_seq = scan_chunk(buf, pos, seq, worker, n_workers, max_commas, sc, id_tab)
        for j in range(m):
            status = sc[j, SC_STATUS]
            if status != ST_OK:
                if tolerant:
                    counts[status] += 1
                    continue
                out[O_SEQ] = sc[j, SC_SEQ]
                out[O_A] = sc[j, SC_A]
                out[O_B] = sc[j, SC_B]
                ret = status
            elif not prints and (sc[j, SC_TYP] == 84 or sc[j, SC_TYP] == 88):
                types[sc[j, SC_TYP]] += 1         # a print, and no trades table to feed
                continue
            elif not has_room(tk_tab, tk_keys, tk_arena, id_tab, id_keys, id_arena, pend, st,
                              sc[j, SC_END] - sc[j, SC_START]):
                out[O_ROOM] = sc[j, SC_END] - sc[j, SC_START]
                ret = NEED_ROOM
            else:
                apply_line(sc, j, buf, events, ne, tk_tab, tk_keys, tk_arena, id_tab, id_keys,
                           id_arena, free, pend, st)
                types[sc[j, SC_TYP]] += 1
                ne += 1
                continue
            next_pos = sc[j, SC_START]
            next_seq = sc[j, SC_SEQ]
            break
        pos = next_pos
        seq = next_seq
    out[O_POS] = pos
    out[O_NEXT] = seq
    out[O_EVENTS] = ne
    return ret
