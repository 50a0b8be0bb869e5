"""Kernels of the AX-SBE text log (Shanghai and Shenzhen): lines of ``//Key=Value`` tokens.

A line is a record (line numbers count every physical line). A line that starts
with ``//`` is a message; any other line (blank, or the hex dump of the struct that
may follow a message) carries nothing (the Shanghai and Shenzhen scans refuse one that
starts like a message, ``marker_lost``, and one holding bytes no text has, ``binary_at``).
``parse_line`` walks the tokens of one line and stores the integer values of the keys it
knows (``KEYS``; the key text is matched by a hash of its length and bytes in a small
open-addressing table built at import) in ``vals[key id]`` with ``have[key id]`` = 1 (-1:
the value is not an integer; 0: absent). Unknown keys are skipped. Arrays and scalars in,
codes out; nothing raises.

The framers' and decoders' entry kernels take that state as one ``Fields`` (the key table
``khash`` / ``kid`` and one line's ``vals`` / ``have``; ``fields()`` makes one).
"""

from collections import namedtuple

import numpy as np
from .jit import njit

# key hash: the key's length and its bytes as three little-endian words (keys of at most
# 24 bytes; a longer key is unknown), mixed by three multiplies (no chain per byte)
M0 = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xC2B2AE3D27D4EB4F)
M2 = np.uint64(0x165667B19E3779F9)
MAX_KEY = 24
MAX_DIGITS = 18        # values of more digits take the checked path (no overflow)
#: the longest line the framers wait for (a message line is a few hundred bytes): a longer
#: one is an error naming it, after the lines before it (memory stays bounded)
MAX_LINE = 1 << 20

# key ids
(K_MSGTYPE, K_SECID, K_CHANNEL, K_APPLSEQ, K_ORDERNO, K_PRICE, K_ORDERQTY, K_ORDTYPE, K_SIDE,
 K_TTIME, K_BIZ, K_BIDSEQ, K_OFFERSEQ, K_LASTPX, K_LASTQTY, K_EXECTYPE, K_DATATS, K_NUMTRADES,
 K_TOTVOL, K_TOTVAL, K_PREVCLOSE, K_OPEN, K_HIGH, K_LOW, K_PHASE) = range(25)   # LastPx: K_LASTPX (trade price, snapshot last price)
K_SOURCE, K_MSGLEN, K_RESV = 25, 26, 27    # read only to guess the next key (SecurityIDSource ...)
K_BID_PX = 30      # BidLevel[i].Price = K_BID_PX + i, then the Qty, AskLevel Price, Qty
K_BID_QTY = 40
K_ASK_PX = 50
K_ASK_QTY = 60
N_KEYS = 70

KEYS = {
    "MsgType": K_MSGTYPE, "SecurityID": K_SECID, "ChannelNo": K_CHANNEL, "ApplSeqNum": K_APPLSEQ,
    "OrderNo": K_ORDERNO, "Price": K_PRICE, "OrderQty": K_ORDERQTY, "OrdType": K_ORDTYPE,
    "Side": K_SIDE, "TransactTime": K_TTIME, "BizIndex": K_BIZ, "BidApplSeqNum": K_BIDSEQ,
    "OfferApplSeqNum": K_OFFERSEQ, "LastPx": K_LASTPX, "LastQty": K_LASTQTY, "ExecType": K_EXECTYPE,
    "DataTimeStamp": K_DATATS, "NumTrades": K_NUMTRADES, "TotalVolumeTrade": K_TOTVOL,
    "TotalValueTrade": K_TOTVAL, "PrevClosePx": K_PREVCLOSE, "OpenPx": K_OPEN, "HighPx": K_HIGH,
    "LowPx": K_LOW, "TradingPhase": K_PHASE, "SecurityIDSource": K_SOURCE, "MsgLen": K_MSGLEN,
    "resv": K_RESV,
}
for _i in range(10):
    KEYS[f"BidLevel[{_i}].Price"] = K_BID_PX + _i
    KEYS[f"BidLevel[{_i}].Qty"] = K_BID_QTY + _i
    KEYS[f"AskLevel[{_i}].Price"] = K_ASK_PX + _i
    KEYS[f"AskLevel[{_i}].Qty"] = K_ASK_QTY + _i

# parse_line results
LINE_OK = 0
LINE_NOT_MESSAGE = 1   # does not start with //: carries nothing
LINE_BAD_TOKEN = 2     # a token without '=' (the position of the token is returned)


def _word(b: bytes) -> int:
    return int.from_bytes(b[:8].ljust(8, b"\0"), "little")


def key_hash(text: str) -> int:
    """The table hash of a key (as ``_key_hash`` computes it from the buffer)."""
    b = text.encode()
    h = (_word(b) * int(M0)) ^ (_word(b[8:]) * int(M1)) ^ (_word(b[16:]) * int(M2)) ^ len(b)
    return h & 0xFFFFFFFFFFFFFFFF


def _key_table(keys: dict) -> tuple[np.ndarray, np.ndarray]:
    size = 512
    khash = np.zeros(size, np.uint64)
    kid = np.full(size, -1, np.int64)
    for text, i in keys.items():
        assert len(text.encode()) <= MAX_KEY
        h = key_hash(text)
        s = (h ^ (h >> 29)) & (size - 1)
        while kid[s] >= 0:
            s = (s + 1) & (size - 1)
        khash[s] = h
        kid[s] = i
    return khash, kid


KHASH, KID = _key_table(KEYS)

Fields = namedtuple("Fields", ("khash", "kid", "vals", "have"))


def fields() -> Fields:
    """A line parser's state: the key table and room for one line's values."""
    return Fields(KHASH, KID, np.zeros(N_KEYS, np.int64), np.zeros(N_KEYS, np.int8))

# The next key's guess (parse_tokens compares it as words before any scan or hash): the
# layouts the exchanges' AX-SBE logs print, per previous key (row N_KEYS: the line's
# start) and column: Shenzhen (source 102) order / execution / other, then Shanghai (101).
LINE_START = N_KEYS
_HEAD = ["SecurityIDSource", "MsgType", "MsgLen", "SecurityID", "ChannelNo", "ApplSeqNum", "TradingPhase"]
_LAYOUTS = {
    0: _HEAD + ["Price", "OrderQty", "Side", "OrdType", "TransactTime"],
    1: _HEAD + ["BidApplSeqNum", "OfferApplSeqNum", "LastPx", "LastQty", "ExecType", "TransactTime"],
    2: _HEAD,
    3: _HEAD + ["OrderNo", "Price", "OrderQty", "OrdType", "Side", "TransactTime", "resv", "BizIndex"],
    4: _HEAD + ["BidApplSeqNum", "OfferApplSeqNum", "LastPx", "LastQty", "ExecType", "TransactTime",
                "resv", "BizIndex"],
    5: _HEAD,
}


def _guess_tables():
    guess = np.full((N_KEYS + 1, 6), -1, np.int64)
    for col, names in _LAYOUTS.items():
        prev = LINE_START
        for name in names:
            guess[prev, col] = KEYS[name]
            prev = KEYS[name]
    klen = np.zeros(N_KEYS, np.int64)              # the key and its '='
    kword = np.zeros((N_KEYS, 3), np.uint64)
    kmask = np.zeros((N_KEYS, 3), np.uint64)
    for text, i in KEYS.items():
        b = text.encode() + b"="
        klen[i] = len(b)
        for j in range(3):
            part = b[8 * j:8 * j + 8]
            kword[i, j] = _word(part)
            kmask[i, j] = (1 << (8 * len(part))) - 1
    return guess, klen, kword, kmask


GUESS, KLEN, KWORD, KMASK = _guess_tables()


@njit(cache=True, _nrt=False, inline="always")
def _load8(buf, p):
    """The 8 bytes at p as a little-endian word (one unaligned load)."""
    x = np.uint64(0)
    for j in range(8):
        x |= np.uint64(buf[p + j]) << np.uint64(8 * j)
    return x


@njit(cache=True, _nrt=False, inline="always")
def _word_at(buf, p, m):
    """The m (0..8) bytes at p as a little-endian word (the rest zero)."""
    if m >= 8:
        return _load8(buf, p)
    x = np.uint64(0)
    for j in range(m):
        x |= np.uint64(buf[p + j]) << np.uint64(8 * j)
    return x


@njit(cache=True, _nrt=False, inline="always")
def words_of(buf):
    """(buf from its first 8-byte aligned byte a0 as whole uint64 words, a0): line_end's
    word loads (built byte by byte they were not combined into one load there; the key
    hash's words are, and stay so)."""
    a0 = (-buf.ctypes.data) & 7
    if a0 > buf.shape[0]:
        a0 = buf.shape[0]
    return buf[a0:a0 + (buf.shape[0] - a0) // 8 * 8].view(np.uint64), a0


@njit(cache=True, _nrt=False, inline="always")
def _key_id(buf, p, q, khash, kid):
    """The key id of the key buf[p:q] (-1: not a known key)."""
    m = q - p
    if m > MAX_KEY:
        return -1
    h = _word_at(buf, p, min(m, 8)) * M0
    if m > 8:
        h ^= _word_at(buf, p + 8, min(m - 8, 8)) * M1
    if m > 16:
        h ^= _word_at(buf, p + 16, m - 16) * M2
    h ^= np.uint64(m)
    mask = khash.shape[0] - 1
    s = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))
    while kid[s] >= 0:
        if khash[s] == h:
            return kid[s]
        s = (s + 1) & mask
    return -1


@njit(cache=True, _nrt=False)
def line_end(buf, p, n):
    """Index of the newline ending the line at p (n when the buffer ends first). Eight
    bytes a step, aligned words of buf: the zero bytes of a word xor newlines (the lowest
    flagged byte of a word is a true one: the trick's false flags sit above a true zero)."""
    words, a0 = words_of(buf)
    while p < n and (p < a0 or ((p - a0) & 7) != 0):
        if buf[p] == 10:
            return p
        p += 1
    m1 = np.uint64(0x0101010101010101)
    m8 = np.uint64(0x8080808080808080)
    nl = np.uint64(0x0A0A0A0A0A0A0A0A)
    i = (p - a0) >> 3
    last = min(words.shape[0], (n - a0) >> 3)      # whole words before n
    while i < last:
        x = words[i] ^ nl
        t = (x - m1) & ~x & m8
        if t != 0:
            lo = t & (~t + np.uint64(1))
            j = 0
            while lo > np.uint64(0x80):
                lo >>= np.uint64(8)
                j += 1
            return a0 + 8 * i + j
        i += 1
    p = max(p, a0 + 8 * i)
    while p < n and buf[p] != 10:
        p += 1
    return p


@njit(cache=True, _nrt=False)
def line_ends(buf, p, n, final, ends, k, max_lines):
    """Append to ends[k:] the newline positions of the lines of buf[p:n], up to max_lines
    lines in all (with ``final``, a last line without newline ends at n). Returns the lines."""
    while k < max_lines and p < n:
        e = line_end(buf, p, n)
        if e >= n:
            if final:
                ends[k] = n
                k += 1
            break
        ends[k] = e
        k += 1
        p = e + 1
    return k


@njit(cache=True, _nrt=False, inline="always")
def _int_value(buf, v, e):
    """(value, ok) of the integer text buf[v:e] (an optional '-', then digits), checked
    digit by digit (the long values; parse_tokens reads the short ones in its scan)."""
    neg = v < e and buf[v] == 45
    c = v + 1 if neg else v
    if c >= e:
        return np.int64(0), False
    x = np.int64(0)
    while c < e:
        d = np.int64(buf[c]) - 48
        if d < 0 or d > 9 or x > 922337203685477579:
            return x, False
        x = x * 10 + d
        c += 1
    return (-x if neg else x), True


@njit(cache=True, _nrt=False, inline="always")
def _digit_run(w):
    """(leading digit bytes of the word w, 0..8; w's bytes minus '0'). A byte below a
    non-digit is never disturbed by the borrows and carries of the word arithmetic."""
    d = w - np.uint64(0x3030303030303030)
    f = ((d + np.uint64(0x7676767676767676)) | d) & np.uint64(0x8080808080808080)
    if f == 0:
        return 8, d
    lo = f & (~f + np.uint64(1))
    return np.int64(((lo >> np.uint64(7)) * np.uint64(0x0001020304050607)) >> np.uint64(56)), d


@njit(cache=True, _nrt=False, inline="always")
def _digits_value(d, m):
    """The value of the m (1..8) digits in the low bytes of d (bytes minus '0'), first
    digit lowest: eight digits in three multiplies."""
    if m < 8:
        d = d << np.uint64(8 * (8 - m))
    d = d * np.uint64(10) + (d >> np.uint64(8))
    d = (((d & np.uint64(0x000000FF000000FF)) * np.uint64(100 + (1000000 << 32)))
         + (((d >> np.uint64(16)) & np.uint64(0x000000FF000000FF)) * np.uint64(1 + (10000 << 32)))) >> np.uint64(32)
    return np.int64(d & np.uint64(0xFFFFFFFF))


@njit(cache=True, _nrt=False, inline="always")
def _fast_value(buf, v, nbuf):
    """(value, end) of the unsigned integer of 1..18 digits at v, read a word at a time;
    end -1 when the fast read does not apply (no digit, more digits, near the buffer's end)."""
    if v + 8 > nbuf:
        return np.int64(0), -1
    m0, d0 = _digit_run(_load8(buf, v))
    if m0 == 0:
        return np.int64(0), -1
    if m0 < 8:
        return _digits_value(d0, m0), v + m0
    if v + 16 > nbuf:
        return np.int64(0), -1
    x = _digits_value(d0, 8)
    m1, d1 = _digit_run(_load8(buf, v + 8))
    if m1 < 8:
        if m1 == 0:
            return x, v + 8
        return x * POW10[m1] + _digits_value(d1, m1), v + 8 + m1
    x = x * 100_000_000 + _digits_value(d1, 8)
    if v + 24 > nbuf:
        return np.int64(0), -1
    m2, d2 = _digit_run(_load8(buf, v + 16))
    if m2 > 2:
        return np.int64(0), -1
    if m2 == 0:
        return x, v + 16
    return x * POW10[m2] + _digits_value(d2, m2), v + 16 + m2


POW10 = np.array([10 ** i for i in range(9)], np.int64)


@njit(cache=True, _nrt=False, inline="always")
def _is_key(buf, p, g, klen, kword, kmask):
    """Whether the key g and its '=' are the bytes at p (as words; needs 24 bytes at p)."""
    if (_load8(buf, p) & kmask[g, 0]) != kword[g, 0]:
        return False
    m = klen[g]
    if m > 8 and (_load8(buf, p + 8) & kmask[g, 1]) != kword[g, 1]:
        return False
    if m > 16 and (_load8(buf, p + 16) & kmask[g, 2]) != kword[g, 2]:
        return False
    return True


@njit(cache=True, _nrt=False)
def parse_tokens(buf, p, b, khash, kid, vals, have, stop, prev=-1):
    """Parse the tokens of buf[p:b] into vals/have (see the module); ``stop``: a key id,
    return right after its value (-1: parse to b); ``prev``: the key id before p
    (LINE_START at the line's start, -1 unknown): the next key is guessed from the
    layouts (GUESS) and compared as words; a value of digits is read a word at a time;
    anything else takes the byte by byte path. Returns (LINE_OK or LINE_BAD_TOKEN,
    position: where parsing stopped, or the bad token)."""
    nbuf = buf.shape[0]
    while p < b:
        while p < b and buf[p] == 32:
            p += 1
        if p >= b:
            break
        k = -1
        v = -1
        if prev >= 0 and p + 24 <= nbuf:
            col = 2
            if have[K_MSGTYPE] > 0:
                t = vals[K_MSGTYPE]
                col = 0 if t == 192 else (1 if t == 191 else 2)
            if have[K_SOURCE] > 0 and vals[K_SOURCE] == 101:
                col += 3
            g = GUESS[prev, col]
            if g >= 0 and p + KLEN[g] <= b and _is_key(buf, p, g, KLEN, KWORD, KMASK):
                k = g
                v = p + KLEN[g]
        if v < 0:
            q = p
            while q < b and buf[q] != 61 and buf[q] != 32:
                q += 1
            if q >= b or buf[q] != 61:
                return LINE_BAD_TOKEN, p
            k = _key_id(buf, p, q, khash, kid)
            v = q + 1
        x, c = _fast_value(buf, v, nbuf)
        if c < 0 or (c < b and buf[c] != 32):
            x, c, ok = _slow_value(buf, v, b, k >= 0)
        else:
            ok = True
        if k >= 0:
            vals[k] = x
            have[k] = 1 if ok else -1
            if k == stop:
                return LINE_OK, c
        prev = k
        p = c
    return LINE_OK, b


@njit(cache=True, _nrt=False, inline="always")
def _slow_value(buf, v, b, signed):
    """(value, end, ok) of the value at v (up to a space or b), byte by byte; ``signed``:
    a leading '-' is a sign (a known key's value)."""
    neg = signed and v < b and buf[v] == 45
    c = v + 1 if neg else v
    c0 = c
    x = np.int64(0)
    bad = np.int64(0)
    while c < b:              # the value's end, and its digits read on the way
        ch = buf[c]
        if ch == 32:
            break
        d = np.int64(ch) - 48
        bad |= (d & ~np.int64(15)) | ((d + 6) & 16)    # not '0'..'9'
        x = x * 10 + d
        c += 1
    ok = c > c0 and bad == 0
    if c - c0 > MAX_DIGITS:
        x, ok = _int_value(buf, v, c)
    elif neg:
        x = -x
    return x, c, ok


@njit(cache=True, _nrt=False)
def line_bounds(buf, a, b):
    """(start of the tokens, end without trailing CR/spaces) of the line buf[a:b]; the start
    is -1 when the line is not a message (does not start with //)."""
    while b > a and (buf[b - 1] == 13 or buf[b - 1] == 32):
        b -= 1
    if b - a < 2 or buf[a] != 47 or buf[a + 1] != 47:
        return -1, b
    return a + 2, b


@njit(cache=True, _nrt=False)
def marker_lost(buf, a, b):
    """Whether the line buf[a:b], which does not start with ``//``, is a message that lost
    its marker: it starts (after at most three ``/``, spaces, tabs or carriage returns, a
    damaged ``//`` among them) with a key and its ``=`` (a letter, then letters, digits,
    ``_``, ``.``, ``[`` or ``]``). A hex dump starts with hex digits and a space or ``:``, a
    blank line with nothing."""
    e = min(a + 3, b)
    while a < e and (buf[a] == 47 or buf[a] == 32 or buf[a] == 9 or buf[a] == 13):
        a += 1
    if a >= b or not ((65 <= buf[a] <= 90) or (97 <= buf[a] <= 122)):
        return False
    i = a + 1
    while i < b:
        c = buf[i]
        if c == 61:
            return True
        if not ((48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 46 or c == 91 or c == 93
                or c == 95):
            return False
        i += 1
    return False


@njit(cache=True, _nrt=False)
def binary_at(buf, a, b):
    """The position of the first byte in buf[a:b] that no text line holds (a control byte
    other than tab, vertical tab, form feed and carriage return; DEL; 0xFF, which neither
    UTF-8 nor GBK has), or -1: a line of such bytes is binary data (a binary feed read as
    text, or damage), not a hex dump or a blank line to pass over."""
    for i in range(a, b):
        c = buf[i]
        if (c < 32 and not (9 <= c <= 13)) or c == 127 or c == 255:
            return i
    return -1


@njit(cache=True, _nrt=False)
def marker_at(buf, a, b):
    """The position of the first ``//`` in buf[a:b], or -1: inside a message line (past its
    own marker) it starts a second message, whose line end was lost."""
    for i in range(a, b - 1):
        if buf[i] == 47 and buf[i + 1] == 47:
            return i
    return -1


@njit(cache=True, _nrt=False)
def parse_line(buf, a, b, khash, kid, vals, have, stop=-1):
    """Parse the line buf[a:b] (no newline): LINE_NOT_MESSAGE, or parse_tokens' result
    (``stop``: stop after that key's value). ``have`` is cleared first."""
    for j in range(have.shape[0]):
        have[j] = 0
    p, b = line_bounds(buf, a, b)
    if p < 0:
        return LINE_NOT_MESSAGE, a
    return parse_tokens(buf, p, b, khash, kid, vals, have, stop, LINE_START)
