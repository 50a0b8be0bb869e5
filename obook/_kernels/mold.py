"""MoldUDP64 in captures: packet headers, arbitration of the lines, the ITCH stream out.

The capture's UDP payloads of the chosen lines are checked (``mold_headers``), arbitrated in
arrival order (``arbitrate``: the first copy of each sequence number wins; the rounds of a
replay that starts before the captures are read: ``line_headers``, ``round_order``,
``round_check``, ``round_apply``) and written out as a BinaryFILE ITCH stream in sequence
order (``stream_write``, each message found in its packet): a message lost on every line becomes a 1-byte frame
of type 0 (``LOST``) so that record numbers stay MoldUDP64 sequence numbers, and a message of the lines
that is that one byte 0x00 is written as the 2-byte frame body 00 00 (``ESCAPED``: an ITCH message of
no known type either way), so the 1-byte frame 0x00 stands for a lost message only. Never raise.
"""

import numpy as np
from .jit import njit

from .memcopy import copy_bytes

# mold_headers status
P_OK = 0
P_SHORT = 1          # shorter than the 20-byte header
P_OVERRUN = 2        # a message block runs past the payload
P_TRAILING = 3       # bytes after the counted messages (or after a heartbeat's header)
P_EMPTY = 4          # a message block of no bytes (no ITCH message is empty)

END_OF_SESSION = 0xFFFF
LOST = 0             # the type byte of a lost message's placeholder frame (its only byte)
ESCAPED = 2          # the frame length a message of the lines that is the one byte 0x00 is written with

# stats columns (per line)
S_PACKETS, S_MESSAGES, S_DUPLICATES, S_GAPS, S_GAP_MESSAGES, S_RECOVERED_OTHER = 0, 1, 2, 3, 4, 5
S_RECOVERED_REQUEST, S_HEARTBEATS, S_BAD, S_WRONG_SESSION, S_BACKWARDS, S_IMPLAUSIBLE = 6, 7, 8, 9, 10, 11
N_STATS = 12

@njit(cache=True, inline="always")
def _be(buf, p, nbytes):
    v = np.int64(0)
    for k in range(nbytes):
        v = (v << 8) | np.int64(buf[p + k])
    return v

@njit(cache=True, nogil=True, inline="always")
def _header(buf, p, ln):
    """(seq, count, session high, session low, status) of the payload buf[p:p+ln]."""
    if ln < 20:
        return 0, 0, 0, 0, P_SHORT
    hi = _be(buf, p, 8)
    lo = _be(buf, p + 8, 2)
    seq = _be(buf, p + 10, 8)
    c = _be(buf, p + 18, 2)
    end = p + ln
    if c == 0 or c == END_OF_SESSION:
        return seq, c, hi, lo, (P_OK if ln == 20 else P_TRAILING)
    q = p + 20
    for _ in range(c):
        if q + 2 > end:
            return seq, c, hi, lo, P_OVERRUN
        m = _be(buf, q, 2)
        if m == 0:
            return seq, c, hi, lo, P_EMPTY
        q += 2 + m
        if q > end:
            return seq, c, hi, lo, P_OVERRUN
    return seq, c, hi, lo, (P_OK if q == end else P_TRAILING)


@njit(cache=True, nogil=True)
def mold_headers(buf, poff, plen, n, seq, count, sess_hi, sess_lo, status):
    """Header fields of n payloads and whether their blocks fit exactly."""
    for i in range(n):
        seq[i], count[i], sess_hi[i], sess_lo[i], status[i] = _header(buf, poff[i], plen[i])


@njit(cache=True, nogil=True, inline="always")
def _take(w, line, s0, c, who, have, line_next, stats, end_seq):
    """One well-formed packet of the session, in arrival order: its new numbers go to ``w``
    (``who``), the line's own sequence is followed from number 1: a jump forward is a gap, a
    packet below the line's next number that brings none of the numbers its jumps skipped
    (``have``: bit per line) goes backwards. Returns (end-of-session number, numbers won)."""
    n = 0
    if c == 0 or c == END_OF_SESSION:
        stats[line, S_HEARTBEATS] += 1
        if c == END_OF_SESSION and (end_seq < 0 or s0 < end_seq):
            end_seq = s0
    else:
        n = c
        stats[line, S_MESSAGES] += n
    bit = np.uint8(1 << line)
    e = line_next[line]
    if e < 0:
        e = 1           # a line's sequence starts at the session's first number
    if s0 > e:
        stats[line, S_GAPS] += 1
        stats[line, S_GAP_MESSAGES] += s0 - e
    elif s0 < e:
        fills = False
        for s in range(s0, min(e, s0 + n)):
            if have[s] & bit == 0:
                fills = True
                break
        if not fills:
            stats[line, S_BACKWARDS] += 1
    if s0 + n > e:
        line_next[line] = s0 + n
    else:
        line_next[line] = e
    won = 0
    for s in range(s0, s0 + n):
        if who[s] < 0:
            who[s] = w
            won += 1
        else:
            stats[line, S_DUPLICATES] += 1
        have[s] |= bit
    return end_seq, won


@njit(cache=True, nogil=True)
def arbitrate(order, p_line, p_seq, p_count, p_ok, who, have, line_next, stats):
    """Packets in arrival order: the first copy of each number wins (``who[s]``: the packet,
    -1: none yet; ``have[s]``: bit per line that had it). ``p_ok``: 1 well-formed packet of
    the session, 0 malformed (counted by the caller). Returns the end-of-session number or -1."""
    end_seq = -1
    for j in range(len(order)):
        p = order[j]
        if p_ok[p] != 0:
            end_seq, _won = _take(p, p_line[p], p_seq[p], p_count[p], who, have, line_next, stats, end_seq)
    return end_seq

# a line's datagrams read but not yet arbitrated (rounds): rows of an int64 array, the
# capture kernel's six (time, address, port, payload offset and length, record), the header's five
F_TS, F_IP, F_PORT, F_POFF, F_PLEN, F_REC, F_SEQ, F_COUNT, F_HI, F_LO, F_STATUS = range(11)
N_FIELDS = 11
# the rounds' state: session seen, its high and low parts, data messages, highest number
# end, end of session, frontier, winning packets, numbers in use
R_SESSION, R_HI, R_LO, R_DATA, R_TOP, R_END, R_FRONTIER, R_WON, R_SEQS = range(9)
N_STATE = 9
R_STOP = 1           # round_check: the round cannot be published (see rounds)
_LINE_SHIFT = 40


@njit(cache=True, nogil=True)
def line_headers(buf, pend, a, b, last_ts):
    """The header fields of a line's datagrams a..b-1 (rows F_SEQ..F_STATUS); returns True
    when their capture times go back (from ``last_ts``, the line's last time before)."""
    back = False
    prev = last_ts
    for i in range(a, b):
        t = pend[F_TS, i]
        if t < prev:
            back = True
        prev = t
        pend[F_SEQ, i], pend[F_COUNT, i], pend[F_HI, i], pend[F_LO, i], pend[F_STATUS, i] = _header(
            buf, pend[F_POFF, i], pend[F_PLEN, i])
    return back


@njit(cache=True, nogil=True)
def round_order(pend, take, order):
    """The first ``take[i]`` datagrams of every line merged by time, the lower line first on
    equal times: ``order[j]`` = line << 40 | index. Returns their number."""
    n_lines = len(take)
    at = np.zeros(n_lines, np.int64)
    m = 0
    while True:
        best = -1
        bt = 0
        for i in range(n_lines):
            if at[i] < take[i]:
                t = pend[i][F_TS, at[i]]
                if best < 0 or t < bt:
                    best = i
                    bt = t
        if best < 0:
            return m
        order[m] = (best << _LINE_SHIFT) | at[best]
        at[best] += 1
        m += 1


@njit(cache=True, nogil=True, inline="always")
def _of_session(P, i, state):
    """A well-formed datagram of the session (the first well-formed one names it)."""
    if P[F_STATUS, i] != P_OK:
        return False
    if state[R_SESSION] == 0:
        state[R_SESSION] = 1
        state[R_HI] = P[F_HI, i]
        state[R_LO] = P[F_LO, i]
    return P[F_HI, i] == state[R_HI] and P[F_LO, i] == state[R_LO]


@njit(cache=True, nogil=True)
def round_check(pend, order, m, state):
    """Whether the round's datagrams can be published: no number that may be far (below 1 or
    past 4x the data messages so far + 1 Mi), no end of session before the frontier and no
    well-formed packet of another session (the session that dates the replay is the one kept).
    Returns (0 or R_STOP, data messages, highest number end) (nothing committed but the
    session). One pass: the bound is checked against the highest end after it."""
    data = state[R_DATA]
    top = state[R_TOP]
    low = 1
    stop = False
    mask = (np.int64(1) << _LINE_SHIFT) - 1
    for j in range(m):
        P = pend[order[j] >> _LINE_SHIFT]
        i = order[j] & mask
        if not _of_session(P, i, state):
            stop = stop or P[F_STATUS, i] == P_OK     # another session: the dating one is kept
            continue
        s0 = P[F_SEQ, i]
        c = P[F_COUNT, i]
        n = 0 if c == 0 or c == END_OF_SESSION else c
        data += n
        low = min(low, s0)
        if c == END_OF_SESSION and s0 < state[R_FRONTIER]:
            stop = True
        if s0 + n > top:
            top = s0 + n
    if stop or low < 1 or top > 4 * data + (1 << 20):
        return R_STOP, data, top
    return 0, data, top


@njit(cache=True, nogil=True)
def round_apply(pend, order, m, state, who, have, line_next, stats, w_line, w_ts, w_off, w_seq):
    """Arbitrate the round's datagrams (after ``round_check``): counts per line, first copy
    wins; a packet that wins a number joins the winners (``w_*``: line, time, payload offset,
    first number; ``who`` holds winner indices). Returns the new frontier: the first number
    not decided (every number below it delivered)."""
    mask = (np.int64(1) << _LINE_SHIFT) - 1
    end = state[R_END]
    for j in range(m):
        line = order[j] >> _LINE_SHIFT
        P = pend[line]
        i = order[j] & mask
        stats[line, S_PACKETS] += 1
        if P[F_STATUS, i] != P_OK:
            stats[line, S_BAD] += 1
            continue
        if not _of_session(P, i, state):
            stats[line, S_WRONG_SESSION] += 1
            continue
        w = state[R_WON]
        end, won = _take(w, line, P[F_SEQ, i], P[F_COUNT, i], who, have, line_next, stats, end)
        if won:
            w_line[w] = line
            w_ts[w] = P[F_TS, i]
            w_off[w] = P[F_POFF, i]
            w_seq[w] = P[F_SEQ, i]
            state[R_WON] = w + 1
    state[R_END] = end
    seqs = max(state[R_SEQS], state[R_TOP] + 1)
    state[R_SEQS] = seqs
    upto = seqs if end < 0 else min(seqs, end)
    f = state[R_FRONTIER]
    while f < upto and who[f] >= 0:
        f += 1
    state[R_FRONTIER] = f
    return f


@njit(cache=True, nogil=True)
def recovered(have, lo, hi, lines, line_next, stats):
    """Per line: the numbers its jumps skipped (below its next number, ``line_next``) that it
    never received and another line did."""
    for s in range(lo, hi):
        h = have[s]
        if h == 0:
            continue
        for line in range(lines):
            if (h >> line) & 1 == 0 and s < line_next[line]:
                stats[line, S_RECOVERED_OTHER] += 1

@njit(cache=True, nogil=True)
def frame_offsets(buf, n, out):
    """Offsets of the BinaryFILE frames of buf[:n] into out (len >= frames + 1); the last
    entry is where the whole frames end. Returns the frames."""
    pos = 0
    k = 0
    while pos + 2 <= n and k < len(out) - 1:
        ln = (np.int64(buf[pos]) << 8) | np.int64(buf[pos + 1])
        if pos + 2 + ln > n:
            break
        out[k] = pos
        pos += 2 + ln
        k += 1
    out[k] = pos
    return k


@njit(cache=True, nogil=True)
def record_fields(seq, who, p_line, p_ts, offsets, chars, ts, valid):
    """Per record number: the line (its letter, A for line 0, as an Arrow string column's
    ``offsets`` and ``chars``) and capture time of the packet that delivered it; ``valid`` 0
    (an empty string, ts 0): none, a lost message or a number outside the stream. Returns
    how many are not valid."""
    n_who = len(who)
    k = 0
    offsets[0] = 0
    for i in range(len(seq)):
        s = seq[i]
        p = who[s] if 1 <= s < n_who else -1
        if p < 0:
            valid[i] = False
            ts[i] = 0
        else:
            valid[i] = True
            chars[k] = 65 + p_line[p]
            k += 1
            ts[i] = p_ts[p]
        offsets[i + 1] = k
    return len(seq) - k


@njit(cache=True, nogil=True, inline="always")
def _is_zero_byte(buf, q):
    """Whether the message at buf[q] (its 2-byte length first) is the one byte 0x00."""
    return buf[q] == 0 and buf[q + 1] == 1 and buf[q + 2] == LOST


@njit(cache=True, nogil=True)
def stream_write(bufs, s0, s1, who, p_file, p_off, p_seq, out):
    """Write the records s0..s1-1 to ``out`` in one pass, as many whole records as fit
    (``bufs``: a tuple of the files' bytes; ``who[s]``: the packet that delivered number s,
    whose payload is at ``p_off`` in file ``p_file`` and starts with number ``p_seq``; a lost
    message is the frame 00 01 00, a message that is the byte 0x00 the frame 00 02 00 00);
    a packet's consecutive messages are copied as one run.
    Returns (bytes written, the next record number)."""
    cap = len(out)
    a = 0
    s = s0
    while s < s1:
        p = who[s]
        if p < 0:
            if a + 3 > cap:
                break
            out[a] = 0
            out[a + 1] = 1
            out[a + 2] = LOST
            a += 3
            s += 1
            continue
        buf = bufs[p_file[p]]
        q = p_off[p] + 20
        for _ in range(s - p_seq[p]):        # a run starting inside its packet (rare)
            q += 2 + _be(buf, q, 2)
        if _is_zero_byte(buf, q):            # not the lost one's frame: escaped
            if a + 2 + ESCAPED > cap:
                break
            out[a] = 0
            out[a + 1] = ESCAPED
            out[a + 2] = LOST
            out[a + 3] = LOST
            a += 2 + ESCAPED
            s += 1
            continue
        e = q
        while s < s1 and who[s] == p:
            if _is_zero_byte(buf, e):
                break
            ln = 2 + _be(buf, e, 2)
            if a + (e - q) + ln > cap:
                break
            e += ln
            s += 1
        if e == q:
            break
        copy_bytes(out, a, buf, q, e - q)   # inside both: the packet fit its payload (P_OK)
        a += e - q
        if s < s1 and who[s] == p and not _is_zero_byte(buf, e):     # out is full
            break
    return a, s
