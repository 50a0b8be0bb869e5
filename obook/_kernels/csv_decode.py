"""Numba kernels of the CSV order feed: framing, strict field parsing, interning.

Arrays and scalars in, status codes and counts out; the Python layer
(obook.feeds.csv) turns codes into SPEC reasons. Two open-addressing hash
tables (linear probing, full byte comparison on a hit) map text to dense ints:
tickers to local book ids (never freed) and (book, order id) to order keys
(``ref``). An order key whose order died is released at the start of the next
``decode_lines`` call (``release_pending``), so memory follows the live book and
``describe`` can still name any key of the batch just decoded.

Table rows are one 64-byte line each (hash, book, length, first 8 bytes of the
text, key index, flags, remaining shares): a hit touches one cache line unless the
text is longer than 8 bytes. ``keys[k]`` leads back from a key to its row and
text (for ``describe`` and for freeing). When a table or arena is full the
decoder returns NEED_ROOM at the line it stopped at; the Python layer grows
the arrays and calls again.
"""

import numpy as np
from numba import njit

from .layout import (
    ACT_ADD_ZERO_OK, ACT_DELETE, ACT_EXEC_CLAMP, ACT_REDUCE_TO, ASK, BID,
    EV_ACTION, EV_BOOK, EV_NEWREF, EV_PRICE, EV_REF, EV_SEQ, EV_SHARES, EV_TIME,
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
N_ST = 9

# parse results
P_OK = 0
P_NAN = 1
P_RANGE = 2

# hash table rows (one 64-byte cache line each; the hot data of a key)
T_HASH = 0         # mixed hash of (book, text); 0 in an empty row is fine: T_KEY tells
T_BOOK = 1
T_LEN = 2
T_PREFIX = 3       # the first 8 bytes of the text, little-endian
T_KEY = 4          # key index (order ref / local book), -1 when the row is empty
T_FLAGS = 5        # F_LIVE | F_PENDING
T_REM = 6          # remaining shares (a mirror of the book: it tells when an order dies)
T_WIDTH = 8
F_LIVE = 1
F_PENDING = 2

# key rows: key index -> where its row and text are
K_HASH = 0
K_OFF = 1
K_LEN = 2
K_WIDTH = 4

# state counters (``st``)
S_NTK = 0          # tickers interned (= local books)
S_TK_ARENA = 1     # ticker arena bytes used
S_KEYS_HIGH = 2    # order keys ever allocated (high-water)
S_ARENA = 3        # order-id arena bytes used (incl. garbage)
S_NFREE = 4        # free order keys on the stack
S_NPEND = 5        # order keys that died (or never lived) during the last batch
S_IN_TABLE = 6     # order keys in the id table
S_ARENA_LIVE = 7   # arena bytes of the keys in the id table
S_WIDTH = 8

# ``out`` of decode_lines: in/out resume position, then results
O_POS = 0          # byte position of the next line
O_NEXT = 1         # its line number
O_EVENTS = 2       # events written
O_STATUS = 3
O_SEQ = 4
O_A = 5            # error field start (ST_FIELDS: the number of fields)
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


@njit(cache=True, _nrt=False)
def count_lf(buf, a, b):
    """Newlines in buf[a:b] (a loop LLVM vectorizes)."""
    s = 0
    for i in range(a, b):
        s += buf[i] == 10
    return s


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
        h = (h ^ np.uint64(buf[i])) * FNV_PRIME
    return h


@njit(cache=True, _nrt=False)
def owner_of(h, n_workers):
    """The worker owning a ticker of hash h."""
    return np.int64(h % np.uint64(n_workers))


@njit(cache=True, _nrt=False)
def parse_u64(buf, a, b):
    """(P_*, value as int64 bit pattern) of an unsigned decimal buf[a:b]."""
    if a >= b:
        return P_NAN, np.int64(0)
    v = np.uint64(0)
    over = False
    for i in range(a, b):
        c = np.int64(buf[i]) - 48
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
    v = np.int64(0)
    over = False
    for i in range(a, b):
        c = np.int64(buf[i]) - 48
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
def prefix8(buf, a, b):
    """The first (up to) 8 bytes of buf[a:b], little-endian, as int64."""
    p = np.int64(0)
    m = min(b - a, 8)
    for j in range(m):
        p |= np.int64(buf[a + j]) << (8 * j)
    return p


@njit(cache=True, _nrt=False)
def table_find(tab, arena, keys, h, book, p, buf, a, b):
    """(row, found) of (book, buf[a:b]) (hash h, prefix p): its row, or the empty row for it."""
    mask = tab.shape[0] - 1
    i = h & mask
    n = b - a
    while True:
        if tab[i, T_KEY] < 0:
            return i, False
        if tab[i, T_HASH] == h and tab[i, T_PREFIX] == p and tab[i, T_LEN] == n and tab[i, T_BOOK] == book:
            if n <= 8:
                return i, True
            off = keys[tab[i, T_KEY], K_OFF]
            same = True
            for j in range(8, n):
                if arena[off + j] != buf[a + j]:
                    same = False
                    break
            if same:
                return i, True
        i = (i + 1) & mask


@njit(cache=True, _nrt=False)
def table_put(tab, arena, keys, used, row, k, h, book, p, buf, a, b):
    """Store key k (text buf[a:b]) in an empty row, its text at arena[used:]; the new arena use."""
    n = b - a
    tab[row, T_HASH] = h
    tab[row, T_BOOK] = book
    tab[row, T_LEN] = n
    tab[row, T_PREFIX] = p
    tab[row, T_KEY] = k
    tab[row, T_FLAGS] = 0
    tab[row, T_REM] = 0
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
    while tab[i, T_KEY] != k:
        i = (i + 1) & mask
    return i


@njit(cache=True, _nrt=False)
def table_remove(tab, i):
    """Empty row i (backward-shift deletion keeps every probe chain whole)."""
    mask = tab.shape[0] - 1
    j = i
    while True:
        j = (j + 1) & mask
        if tab[j, T_KEY] < 0:
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
    tab[i, T_KEY] = -1


@njit(cache=True, _nrt=False)
def table_rehash(old, new):
    """Move every row of old into new (all T_KEY = -1, a power of 2 rows)."""
    mask = new.shape[0] - 1
    for r in range(old.shape[0]):
        if old[r, T_KEY] >= 0:
            i = old[r, T_HASH] & mask
            while new[i, T_KEY] >= 0:
                i = (i + 1) & mask
            for c in range(T_WIDTH):
                new[i, c] = old[r, c]


@njit(cache=True, _nrt=False)
def arena_compact(tab, keys, arena, new_arena):
    """Copy the text of every key in the table into new_arena; the bytes used."""
    used = 0
    for r in range(tab.shape[0]):
        k = tab[r, T_KEY]
        if k >= 0:
            off = keys[k, K_OFF]
            n = keys[k, K_LEN]
            for j in range(n):
                new_arena[used + j] = arena[off + j]
            keys[k, K_OFF] = used
            used += n
    return used


@njit(cache=True, _nrt=False)
def release_pending(id_tab, id_keys, free, pend, st):
    """Free the order keys that died during the previous batch and did not come back."""
    for q in range(st[S_NPEND]):
        k = pend[q]
        r = table_row_of(id_tab, id_keys, k)
        f = id_tab[r, T_FLAGS] & ~F_PENDING
        id_tab[r, T_FLAGS] = f
        if f & F_LIVE == 0:
            st[S_IN_TABLE] -= 1
            st[S_ARENA_LIVE] -= id_tab[r, T_LEN]
            table_remove(id_tab, r)
            free[st[S_NFREE]] = k
            st[S_NFREE] += 1
    st[S_NPEND] = 0


@njit(cache=True, _nrt=False)
def _die(id_tab, r, pend, st):
    f = id_tab[r, T_FLAGS] & ~F_LIVE
    if f & F_PENDING == 0:
        f |= F_PENDING
        pend[st[S_NPEND]] = id_tab[r, T_KEY]
        st[S_NPEND] += 1
    id_tab[r, T_FLAGS] = f


@njit(cache=True, _nrt=False)
def has_room(tk_tab, tk_keys, tk_arena, id_tab, id_keys, id_arena, pend, st, n_text):
    """Room for one more ticker and order key of n_text bytes (else NEED_ROOM)."""
    return (2 * (st[S_NTK] + 1) <= tk_tab.shape[0] and st[S_NTK] < tk_keys.shape[0]
            and st[S_TK_ARENA] + n_text <= tk_arena.shape[0]
            and 2 * (st[S_IN_TABLE] + 1) <= id_tab.shape[0]
            and (st[S_NFREE] > 0 or st[S_KEYS_HIGH] < id_keys.shape[0])
            and st[S_NPEND] < pend.shape[0]
            and st[S_ARENA] + n_text <= id_arena.shape[0])


@njit(cache=True, _nrt=False)
def intern_ticker(tk_tab, tk_keys, tk_arena, st, h, buf, a, b):
    """The local book of the ticker buf[a:b] (FNV-1a h), interned when new."""
    hh = mix(h, -1)
    p = prefix8(buf, a, b)
    r, found = table_find(tk_tab, tk_arena, tk_keys, hh, -1, p, buf, a, b)
    if found:
        return tk_tab[r, T_KEY]
    k = st[S_NTK]
    st[S_TK_ARENA] = table_put(tk_tab, tk_arena, tk_keys, st[S_TK_ARENA], r, k, hh, -1, p, buf, a, b)
    st[S_NTK] = k + 1
    return k


@njit(cache=True, _nrt=False)
def intern_order(id_tab, id_keys, id_arena, free, pend, st, book, buf, a, b):
    """The row of the order id buf[a:b] of book, a new key (not live) when unseen."""
    h = mix(fnv1a(buf, a, b), book)
    p = prefix8(buf, a, b)
    r, found = table_find(id_tab, id_arena, id_keys, h, book, p, buf, a, b)
    if found:
        return r
    if st[S_NFREE] > 0:
        st[S_NFREE] -= 1
        k = free[st[S_NFREE]]
    else:
        k = st[S_KEYS_HIGH]
        st[S_KEYS_HIGH] = k + 1
    st[S_ARENA] = table_put(id_tab, id_arena, id_keys, st[S_ARENA], r, k, h, book, p, buf, a, b)
    st[S_IN_TABLE] += 1
    st[S_ARENA_LIVE] += b - a
    return r                    # not live: the caller adds it or marks it pending


@njit(cache=True, _nrt=False)
def decode_lines(buf, worker, n_workers, tolerant, events,
                 tk_tab, tk_keys, tk_arena, id_tab, id_keys, id_arena, free, pend,
                 st, counts, out, cm):
    """Decode the lines of buf from out[O_POS] (line out[O_NEXT]) that worker owns into events.

    Returns ST_OK when done; NEED_ROOM with out[O_POS], out[O_NEXT], out[O_EVENTS] at the
    line to resume at once the tables have grown; a failing ST_* (strict: tolerant == 0)
    with out[O_SEQ], out[O_A], out[O_B]. Tolerant: counts[status] += 1 and go on.
    cm (scratch, 6 int64) receives the comma positions of a line.
    """
    n = buf.shape[0]
    pos = out[O_POS]
    seq = out[O_NEXT]
    ne = out[O_EVENTS]
    ret = ST_OK
    while pos < n:
        start = pos
        nc = 0
        i = pos
        while i < n:
            c = buf[i]
            if c == 10:
                break
            if c == 44 and nc < 6:
                cm[nc] = i
                nc += 1
            i += 1
        line = seq
        if line == 1:                     # header
            pos = i + 1
            seq += 1
            continue
        e = i
        if e > start and buf[e - 1] == 13:
            e -= 1
        status = ST_OK
        ea = 0
        eb = 0
        h = np.uint64(0)
        t = np.int64(0)
        typ = np.int64(0)
        shares = np.int64(0)
        price = np.int64(0)
        if nc < 5:
            if is_blank(buf, start, e) or worker != 0:
                pos = i + 1
                seq += 1
                continue
            status = ST_FIELDS
            ea = nc + 1
        else:
            h = fnv1a(buf, cm[0] + 1, cm[1])
            if n_workers > 1 and owner_of(h, n_workers) != worker:
                pos = i + 1
                seq += 1
                continue
            pe = cm[5] if nc == 6 else e
            r, t = parse_u64(buf, start, cm[0])
            if r != P_OK:
                status = ST_TIME_NAN if r == P_NAN else ST_TIME_RANGE
                ea = start
                eb = cm[0]
            else:
                typ = np.int64(buf[cm[2] + 1]) if cm[3] == cm[2] + 2 else np.int64(0)
                if not (typ == 66 or typ == 83 or typ == 67 or typ == 68 or typ == 69
                        or typ == 70 or typ == 84 or typ == 88):
                    status = ST_TYPE
                    ea = cm[2] + 1
                    eb = cm[3]
                else:
                    r, shares = parse_u32(buf, cm[3] + 1, cm[4])
                    if r != P_OK:
                        status = ST_SHARES_NAN if r == P_NAN else ST_SHARES_RANGE
                        ea = cm[3] + 1
                        eb = cm[4]
                    else:
                        r, price = parse_u32(buf, cm[4] + 1, pe)
                        if r != P_OK:
                            status = ST_PRICE_NAN if r == P_NAN else ST_PRICE_RANGE
                            ea = cm[4] + 1
                            eb = pe
        if status != ST_OK:
            if tolerant:
                counts[status] += 1
                pos = i + 1
                seq += 1
                continue
            out[O_SEQ] = line
            out[O_A] = ea
            out[O_B] = eb
            ret = status
            break
        if typ == 84 or typ == 88:        # T / X: trade prints
            pos = i + 1
            seq += 1
            continue
        if not has_room(tk_tab, tk_keys, tk_arena, id_tab, id_keys, id_arena, pend, st, e - start):
            out[O_ROOM] = e - start
            ret = NEED_ROOM
            break
        pos = i + 1
        seq += 1
        book = intern_ticker(tk_tab, tk_keys, tk_arena, st, h, buf, cm[0] + 1, cm[1])
        r = intern_order(id_tab, id_keys, id_arena, free, pend, st, book, buf, cm[1] + 1, cm[2])
        live = (id_tab[r, T_FLAGS] & F_LIVE) != 0
        side = BID
        if typ == 66 or typ == 83:
            act = ACT_ADD_ZERO_OK
            if typ == 83:
                side = ASK
            id_tab[r, T_FLAGS] |= F_LIVE      # a duplicate add replaces (tolerant mode)
            id_tab[r, T_REM] = shares
        elif live:
            rem = id_tab[r, T_REM]
            dies = True
            if typ == 67:
                act = ACT_REDUCE_TO
                dies = shares == 0 and rem > 0
                if shares < rem:
                    rem = shares
            elif typ == 69:
                act = ACT_EXEC_CLAMP
                rem -= min(shares, rem)
                dies = rem == 0
            else:
                act = ACT_DELETE
            id_tab[r, T_REM] = rem
            if dies:
                _die(id_tab, r, pend, st)
        else:                             # unknown order: its key is freed next batch
            act = ACT_REDUCE_TO if typ == 67 else (ACT_EXEC_CLAMP if typ == 69 else ACT_DELETE)
            _die(id_tab, r, pend, st)
        events[ne, EV_SEQ] = line
        events[ne, EV_TIME] = t
        events[ne, EV_BOOK] = book
        events[ne, EV_ACTION] = act | (side << 8)
        events[ne, EV_REF] = id_tab[r, T_KEY]
        events[ne, EV_SHARES] = shares
        events[ne, EV_PRICE] = price
        events[ne, EV_NEWREF] = 0
        ne += 1
    out[O_POS] = pos
    out[O_NEXT] = seq
    out[O_EVENTS] = ne
    return ret
