"""MoldUDP64 in captures: packet headers, arbitration of the lines, the ITCH stream out.

The capture's UDP payloads of the chosen lines are checked (``mold_headers``), arbitrated in
arrival order (``arbitrate``: the first copy of each sequence number wins), located in their
files (``message_offsets``) and written out as a BinaryFILE ITCH stream in sequence order
(``stream_write``): a message lost on every line becomes a 1-byte frame
of type 0 (``LOST``) so that record numbers stay MoldUDP64 sequence numbers. Never raise.
"""

import numpy as np
from numba import njit

# mold_headers status
P_OK = 0
P_SHORT = 1          # shorter than the 20-byte header
P_OVERRUN = 2        # a message block runs past the payload
P_TRAILING = 3       # bytes after the counted messages (or after a heartbeat's header)

END_OF_SESSION = 0xFFFF
LOST = 0             # the type byte of a lost message's placeholder frame

# stats columns (per line)
S_PACKETS, S_MESSAGES, S_DUPLICATES, S_GAPS, S_GAP_MESSAGES, S_RECOVERED_OTHER = 0, 1, 2, 3, 4, 5
S_RECOVERED_REQUEST, S_HEARTBEATS, S_BAD, S_WRONG_SESSION, S_BACKWARDS = 6, 7, 8, 9, 10
N_STATS = 11

@njit(cache=True, inline="always")
def _be(buf, p, nbytes):
    v = np.int64(0)
    for k in range(nbytes):
        v = (v << 8) | np.int64(buf[p + k])
    return v

@njit(cache=True, nogil=True)
def mold_headers(buf, poff, plen, n, seq, count, sess_hi, sess_lo, status):
    """Header fields of n payloads and whether their blocks fit exactly."""
    for i in range(n):
        p = poff[i]
        ln = plen[i]
        seq[i] = 0
        count[i] = 0
        if ln < 20:
            status[i] = P_SHORT
            continue
        sess_hi[i] = _be(buf, p, 8)
        sess_lo[i] = _be(buf, p + 8, 2)
        seq[i] = _be(buf, p + 10, 8)
        c = _be(buf, p + 18, 2)
        count[i] = c
        end = p + ln
        if c == 0 or c == END_OF_SESSION:
            status[i] = P_OK if ln == 20 else P_TRAILING
            continue
        q = p + 20
        st = P_OK
        for _ in range(c):
            if q + 2 > end:
                st = P_OVERRUN
                break
            q += 2 + _be(buf, q, 2)
            if q > end:
                st = P_OVERRUN
                break
        if st == P_OK and q != end:
            st = P_TRAILING
        status[i] = st

@njit(cache=True, nogil=True)
def arbitrate(order, p_line, p_seq, p_count, p_ok, who, have, line_next, stats):
    """Packets in arrival order: the first copy of each number wins (``who[s]``: the packet,
    -1: none yet; ``have[s]``: bit per line that had it). ``p_ok``: 1 well-formed packet of
    the session, 0 malformed (counted by the caller). Returns the end-of-session number or -1."""
    end_seq = -1
    for j in range(len(order)):
        p = order[j]
        if p_ok[p] == 0:
            continue
        line = p_line[p]
        s0 = p_seq[p]
        c = p_count[p]
        n = 0
        if c == 0 or c == END_OF_SESSION:
            stats[line, S_HEARTBEATS] += 1
            if c == END_OF_SESSION and (end_seq < 0 or s0 < end_seq):
                end_seq = s0
        else:
            n = c
            stats[line, S_MESSAGES] += n
        e = line_next[line]
        if e < 0:
            e = s0          # a line starts where its first packet does
        if s0 > e:
            stats[line, S_GAPS] += 1
            stats[line, S_GAP_MESSAGES] += s0 - e
        elif s0 < e and n > 0:
            stats[line, S_BACKWARDS] += 1
        if s0 + n > e:
            line_next[line] = s0 + n
        else:
            line_next[line] = e
        bit = np.uint8(1 << line)
        for s in range(s0, s0 + n):
            if who[s] < 0:
                who[s] = p
            else:
                stats[line, S_DUPLICATES] += 1
            have[s] |= bit
    return end_seq

@njit(cache=True, nogil=True)
def recovered(have, lo, hi, lines, stats):
    """Per line: the numbers it never received that another line did."""
    for s in range(lo, hi):
        h = have[s]
        if h == 0:
            continue
        for line in range(lines):
            if (h >> line) & 1 == 0:
                stats[line, S_RECOVERED_OTHER] += 1

@njit(cache=True, nogil=True)
def message_offsets(buf, pkts, p_seq, p_count, p_off, who, src_off, src_len):
    """For the packets ``pkts`` (of one file): the offset and frame length (2 + message) of
    each message block it won."""
    for j in range(len(pkts)):
        p = pkts[j]
        c = p_count[p]
        if c == 0 or c == END_OF_SESSION:
            continue
        q = p_off[p] + 20
        s = p_seq[p]
        for _ in range(c):
            ln = 2 + _be(buf, q, 2)
            if who[s] == p:
                src_off[s] = q
                src_len[s] = ln
            q += ln
            s += 1


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
def record_fields(seq, who, p_line, p_ts, line, ts, missing):
    """Per record number: the line and capture time of the packet that delivered it
    (``missing`` 1: none, a lost message or a number outside the stream; line and ts 0)."""
    n_who = len(who)
    for i in range(len(seq)):
        s = seq[i]
        p = who[s] if 1 <= s < n_who else -1
        if p < 0:
            missing[i] = 1
            line[i] = 0
            ts[i] = 0
        else:
            missing[i] = 0
            line[i] = p_line[p]
            ts[i] = p_ts[p]


@njit(cache=True, nogil=True)
def stream_write(bufs, s0, s1, who, p_file, src_off, src_len, out):
    """Write the records s0..s1-1 to ``out`` in one pass, as many whole records as fit
    (``bufs``: a tuple of the files' bytes; a lost message is the frame 00 01 00); a
    packet's consecutive messages are copied as one run. Returns (bytes written, the next
    record number)."""
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
        if a + src_len[s] > cap:
            break
        buf = bufs[p_file[p]]
        q = src_off[s]
        e = q + src_len[s]
        s += 1
        while s < s1 and who[s] == p and src_off[s] == e and a + (e - q) + src_len[s] <= cap:
            e += src_len[s]
            s += 1
        out[a:a + (e - q)] = buf[q:e]
        a += e - q
    return a, s
