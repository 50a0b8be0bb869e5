"""The live loop's arbitration of lines A and B (and re-request answers): first copy wins,
each message written once, in sequence order, into the delivered ring.

The delivered ring is a BinaryFILE stream (2-byte length, message) in ``ring`` (bytes
``S_W_BYTE`` written so far, a power-of-two size) with per record (numbered from 1, ring
index ``record & rmask``) its MoldUDP64 number, line, kernel receive stamp and delivery
stamp. Two readers follow it: the loop's own book (``S_H_*``) and the tables' writer
(``S_T_*``, another thread). The writer never holds the loop back: when it falls a whole
ring behind, the tables stop there (``S_T_LAPPED``: the first record they miss) and the
caller reports it.

A packet numbered below 1 is bad, one more than ``FAR`` past the next number implausible (so
20 bytes of garbage, a well-formed heartbeat, rarely pass for one). Once the session is
chosen, a packet numbered more than a window (2**18) past every number seen is held aside and
counted implausible, as ``obook.feeds.mold.sessions.Quarantine`` does (``hold_far``): a
forged or stray number never makes the loop ask for the numbers below it; three held
packets that chain (the feed did jump) are taken, and so is a held packet the numbers seen
reach. The session is the one
given (a packet of another is counted in ``wrong_session`` and dropped), else chosen as
``obook.feeds.mold.sessions.SessionChoice`` does: packets are held per session (``cand``:
``CHOICE_SESSIONS`` sessions, the least recently heard making room for a new one;
``held``/``held_data``: ``CHOICE_HELD`` packets each) until a
session's packets chain (a data packet, then one starting where it ends), or the re-request
server answers for it (``probe``: a session heard only in heartbeats, every data packet lost,
has the numbers below its heartbeats' asked for); its held packets are then taken in arrival
order, every other session's counted in ``wrong_session``. One stray packet never names it. A message ahead of a gap waits in ``pend_*`` (slot ``seq & pmask``); one too far ahead, or
too long for a slot, is counted (``S_PEND_FULL``) and re-requested like a lost one. Per line
the counts of ``obook.feeds.mold.arbiter`` (``stats``, the ``mold`` kernels' S_* columns), by
its definitions: a line's sequence is followed from number 1; ``line_gap[line]`` holds its own
gaps (``GAP_SLOTS`` ranges, the rows' last entry the bound of their ends), the re-request row the
numbers no line delivered (given up, or answered by the server); a number in a line's gaps counts
``recovered_other_line`` when another line's copy arrives first (or at the jump, when it came
before), and a late copy on the line takes it back.
"""

import numpy as np

from .jit import njit
from .live_layout import (C_DROPPED, C_HELD, C_HI, C_LAST, C_LO, C_PROBE_SEQ, C_PROBED, CHOICE_HELD, GAP_SLOTS, HP_COUNT,
                          HP_LEN, HP_LINE, HP_ORDER, HP_SEQ, HP_TS, JUMP_CONFIRM, LINE_REQUEST, N_LINES, PEND_SLOT,
                          QUARANTINE_HELD, QUARANTINE_WINDOW, S_CANDIDATES, S_CHOICE_N, S_END, S_HIGH, S_H_BYTE,
                          S_H_REC, S_NEXT, S_PEND, S_PEND_FULL, S_Q_HELD, S_Q_MIN, S_Q_ORDER, S_SESSION_HI,
                          S_SESSION_LO, S_SESSION_SET, S_TABLES, S_T_BYTE, S_T_LAPPED, S_T_REC, S_W_BYTE, S_W_REC,
                          S_WINDOW)
from .memcopy import copy_bytes
from .mold import (END_OF_SESSION, P_OK, S_BACKWARDS, S_BAD, S_DUPLICATES, S_GAP_MESSAGES, S_GAPS,
                   S_HEARTBEATS, S_IMPLAUSIBLE, S_MESSAGES, S_PACKETS, S_RECOVERED_OTHER, S_RECOVERED_REQUEST,
                   S_WRONG_SESSION, _be, _header)


#: a packet numbered this far past the next number to deliver is not of this feed (bad)
FAR = 1 << 26


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _room(S, nbytes, bsize, rsize):
    """Whether the ring takes one more record of nbytes (the book's reader never falls a
    ring behind: it runs after every receive); the tables' reader is dropped if it would."""
    if S[S_W_BYTE] + nbytes - S[S_H_BYTE] > bsize or S[S_W_REC] + 1 - S[S_H_REC] > rsize:
        return False
    if S[S_TABLES] != 0 and (S[S_W_BYTE] + nbytes - S[S_T_BYTE] > bsize or S[S_W_REC] + 1 - S[S_T_REC] > rsize):
        S[S_TABLES] = 0
        S[S_T_LAPPED] = S[S_T_REC] + 1     # the first message the writer will not get
    return True


@njit(cache=True, nogil=True, _nrt=False)
def deliver(S, src, at, nbytes, seq, line, ts, t, ring, recs, stats, line_gap):
    """Write message ``seq`` (its frame: src[at:at+nbytes]) to the ring; False: no room."""
    bsize = ring.shape[0]
    rsize = recs.shape[1]
    if not _room(S, nbytes, bsize, rsize):
        return False
    w = S[S_W_BYTE]
    p = w & (bsize - 1)
    if p + nbytes <= bsize:
        copy_bytes(ring, p, src, at, nbytes)
    else:
        for k in range(nbytes):
            ring[(w + k) & (bsize - 1)] = src[at + k]
    r = S[S_W_REC] + 1
    i = r & (rsize - 1)
    recs[0, i] = seq
    recs[1, i] = line
    recs[2, i] = ts
    recs[3, i] = t
    S[S_W_BYTE] = w + nbytes          # published after the record (the tables' thread reads it)
    S[S_W_REC] = r
    if line == LINE_REQUEST:
        stats[line, S_RECOVERED_REQUEST] += 1
        _ranges_add(line_gap, LINE_REQUEST, seq, seq + 1)
    S[S_NEXT] = seq + 1
    return True


# ---------------------------------------------------------------- ranges of numbers per line


@njit(cache=True, nogil=True, _nrt=False)
def _ranges_add(g, row, a, b):
    """Numbers a..b-1 into row ``row`` of ``g`` (one range extended when it ends at ``a``; a
    free slot, else the lowest range's)."""
    if a >= b:
        return
    free = -1
    low = -1
    for k in range(GAP_SLOTS):
        lo, hi = g[row, k, 0], g[row, k, 1]
        if lo >= hi:
            if free < 0:
                free = k
            continue
        if hi == a:
            g[row, k, 1] = b
            free = -2
            break
        if low < 0 or lo < g[row, low, 0]:
            low = k
    if free != -2:
        k = free if free >= 0 else low
        g[row, k, 0] = a
        g[row, k, 1] = b
    if b > g[row, GAP_SLOTS, 1]:
        g[row, GAP_SLOTS, 1] = b


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _ranges_has(g, row, s):
    if s >= g[row, GAP_SLOTS, 1]:
        return False
    for k in range(GAP_SLOTS):
        if g[row, k, 0] <= s < g[row, k, 1]:
            return True
    return False


@njit(cache=True, nogil=True, _nrt=False)
def _by_lines(S, g, a, b, pend_seq, pend_meta):
    """How many of the numbers a..b-1 a line's copy brought first: below the next number to
    deliver, those not given up nor answered by the re-request server; from it on, those held."""
    nxt = S[S_NEXT]
    n = 0
    m = min(b, nxt)
    if m > a:
        n += m - a
        for k in range(GAP_SLOTS):
            x, y = max(a, g[LINE_REQUEST, k, 0]), min(m, g[LINE_REQUEST, k, 1])
            if x < y:
                n -= y - x
    pmask = pend_seq.shape[0] - 1
    for s in range(max(a, nxt), min(b, nxt + pmask + 1)):
        slot = s & pmask
        if pend_seq[slot] == s and pend_meta[slot, 0] != LINE_REQUEST:
            n += 1
    return n


@njit(cache=True, nogil=True, _nrt=False)
def _ranges_cut(S, g, row, a, b, pend_seq, pend_meta):
    """Take a..b-1 out of row ``row``: (numbers taken out, how many of them a line's copy
    brought first: ``_by_lines``)."""
    cut = 0
    by = 0
    if a >= b:
        return cut, by
    for k in range(GAP_SLOTS):
        lo, hi = g[row, k, 0], g[row, k, 1]
        x, y = max(lo, a), min(hi, b)
        if x >= y:
            continue
        cut += y - x
        by += _by_lines(S, g, x, y, pend_seq, pend_meta)
        if lo < x:
            g[row, k, 1] = x
            if y < hi:
                _ranges_add(g, row, y, hi)
        elif y < hi:
            g[row, k, 0] = y
        else:
            g[row, k, 0] = 0
            g[row, k, 1] = 0
    return cut, by


@njit(cache=True, nogil=True, _nrt=False)
def drain(S, t, ring, recs, stats, line_gap, pend_seq, pend_meta, pend_data):
    """Deliver the held messages that follow the delivered ones."""
    pmask = pend_seq.shape[0] - 1
    while S[S_PEND] > 0:
        s = S[S_NEXT]
        slot = s & pmask
        if pend_seq[slot] != s:
            return
        if not deliver(S, pend_data[slot], 0, pend_meta[slot, 2], s, pend_meta[slot, 0], pend_meta[slot, 1], t,
                       ring, recs, stats, line_gap):
            return
        pend_seq[slot] = -1
        S[S_PEND] -= 1


@njit(cache=True, nogil=True, _nrt=False)
def _follow(S, line, seq, end, stats, line_next, line_gap, pend_seq, pend_meta):
    """The line's own sequence from number 1: a jump forward is one of its gaps (its numbers
    another line brought already count as recovered), a late packet takes its numbers off
    them (and off recovered), a packet below that fills none of them goes backwards."""
    expect = line_next[line]
    if expect < 0:
        expect = 1
    if seq > expect:
        stats[line, S_GAPS] += 1
        stats[line, S_GAP_MESSAGES] += seq - expect
        stats[line, S_RECOVERED_OTHER] += _by_lines(S, line_gap, expect, seq, pend_seq, pend_meta)
        _ranges_add(line_gap, line, expect, seq)
    elif seq < expect:
        cut, by = _ranges_cut(S, line_gap, line, seq, min(end, expect), pend_seq, pend_meta)
        if cut == 0:
            stats[line, S_BACKWARDS] += 1
        stats[line, S_RECOVERED_OTHER] -= by
    line_next[line] = max(expect, end)


@njit(cache=True, nogil=True, _nrt=False)
def packet(S, line, buf, ln, ts, t, arb):
    """One datagram of ``line`` (buf[:ln]) received at ``ts`` (kernel stamp): counted,
    checked, its new messages delivered or held (or the packet held until a session is chosen)."""
    seq, c, hi, lo, ok = screen(S, line, buf, ln, arb[2])
    if ok:
        arbitrate(S, line, buf, ln, ts, t, seq, c, hi, lo, arb)


# ---------------------------------------------------------------- numbers far ahead


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _seen(S):
    """The highest number seen (or next to deliver)."""
    return max(S[S_HIGH], S[S_NEXT])


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _window(S):
    return S[S_WINDOW] if S[S_WINDOW] > 0 else QUARANTINE_WINDOW


@njit(cache=True, nogil=True, _nrt=False)
def hold_far(S, line, buf, ln, ts, t, seq, c, arb):
    """A packet of the session numbered more than the window past every number seen: held
    aside and counted implausible (a forged or stray packet never raises the numbers to ask
    for); when JUMP_CONFIRM held packets chain through it (the feed did jump), those near it
    are taken in arrival order. When the rows are full the oldest goes."""
    stats, held, held_data = arb[2], arb[9], arb[10]
    stats[line, S_IMPLAUSIBLE] += 1
    n = S[S_Q_HELD]
    if ln > held_data.shape[1]:
        return
    k = n
    if n < QUARANTINE_HELD:
        S[S_Q_HELD] = n + 1
    else:
        k = 0
        for j in range(1, n):
            if held[j, HP_ORDER] < held[k, HP_ORDER]:
                k = j
    copy_bytes(held_data[k], 0, buf, 0, ln)
    held[k, HP_LINE] = line
    held[k, HP_LEN] = ln
    held[k, HP_TS] = ts
    held[k, HP_SEQ] = seq
    held[k, HP_COUNT] = c
    held[k, HP_ORDER] = S[S_Q_ORDER]
    S[S_Q_ORDER] += 1
    _q_min(S, held)
    if _chain(S, held, seq, c) >= JUMP_CONFIRM:
        _take_held(S, t, arb, seq - _window(S), seq + _window(S))


@njit(cache=True, nogil=True, _nrt=False)
def _chain(S, held, seq, c):
    """Held packets in a row through (seq, c): each starting where the one before ends (a
    heartbeat or end of session ends a row), within the window of seq."""
    w = _window(S)
    n = S[S_Q_HELD]
    length = 1
    s = seq                      # back: a data packet ending where the row starts
    found = True
    while found and length < JUMP_CONFIRM:
        found = False
        for j in range(n):
            c2 = held[j, HP_COUNT]
            if 0 < c2 < END_OF_SESSION and held[j, HP_SEQ] + c2 == s and abs(held[j, HP_SEQ] - seq) <= w:
                s = held[j, HP_SEQ]
                length += 1
                found = True
                break
    if not 0 < c < END_OF_SESSION:
        return length
    e = seq + c                  # on: a packet starting where the row ends
    found = True
    while found and length < JUMP_CONFIRM:
        found = False
        for j in range(n):
            if held[j, HP_SEQ] == e and abs(e - seq) <= w:
                length += 1
                found = True
                c2 = held[j, HP_COUNT]
                if not 0 < c2 < END_OF_SESSION:
                    return length
                e += c2
                break
    return length


@njit(cache=True, nogil=True, _nrt=False)
def release_near(S, t, arb):
    """Held packets that the numbers seen now reach, taken in arrival order (taking them may
    bring more within reach)."""
    while S[S_Q_HELD] > 0 and _seen(S) + _window(S) >= S[S_Q_MIN]:
        _take_held(S, t, arb, -(1 << 62), _seen(S) + _window(S))


@njit(cache=True, nogil=True, _nrt=False)
def _take_held(S, t, arb, lo, hi):
    """The held packets numbered lo..hi, in arrival order, taken (no longer implausible)."""
    stats, held, held_data = arb[2], arb[9], arb[10]
    while True:
        k = -1
        for j in range(S[S_Q_HELD]):
            if lo <= held[j, HP_SEQ] <= hi and (k < 0 or held[j, HP_ORDER] < held[k, HP_ORDER]):
                k = j
        if k < 0:
            break
        line = held[k, HP_LINE]
        stats[line, S_IMPLAUSIBLE] -= 1
        _take(S, line, held_data[k], held[k, HP_SEQ], held[k, HP_COUNT], held[k, HP_TS], t, arb)
        last = S[S_Q_HELD] - 1       # its row filled by the last one
        if k != last:
            copy_bytes(held_data[k], 0, held_data[last], 0, held[last, HP_LEN])
            for col in range(held.shape[1]):
                held[k, col] = held[last, col]
        S[S_Q_HELD] = last
    _q_min(S, held)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _q_min(S, held):
    m = 1 << 62
    for j in range(S[S_Q_HELD]):
        m = min(m, held[j, HP_SEQ])
    S[S_Q_MIN] = m


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def screen(S, line, buf, ln, stats):
    """The datagram counted and its header checked before anything else is done with it:
    (seq, count, session high, low, whether to go on); a malformed or implausible packet,
    or one of another session than the given or chosen one, is counted and goes no further."""
    stats[line, S_PACKETS] += 1
    seq, c, hi, lo, status = _header(buf, 0, ln)
    data = 0 if c == 0 or c == END_OF_SESSION else c
    if status != P_OK or seq < 1:
        stats[line, S_BAD] += 1
        return seq, c, hi, lo, False
    if seq + data > S[S_NEXT] + FAR:     # numbered where no feed of ours can be
        stats[line, S_IMPLAUSIBLE] += 1
        return seq, c, hi, lo, False
    if S[S_SESSION_SET] != 0 and (hi != S[S_SESSION_HI] or lo != S[S_SESSION_LO]):
        stats[line, S_WRONG_SESSION] += 1
        return seq, c, hi, lo, False
    return seq, c, hi, lo, True


@njit(cache=True, nogil=True, _nrt=False)
def arbitrate(S, line, buf, ln, ts, t, seq, c, hi, lo, arb):
    """A datagram that passed ``screen``: its messages delivered or held, or (no session yet)
    the packet held until one is chosen, or (numbered far ahead) held aside (``hold_far``)."""
    if S[S_SESSION_SET] == 0:
        j = choose(S, line, buf, ln, ts, seq, c, hi, lo, arb[8], arb[9], arb[10], arb[2])
        if j < 0:
            return
        _adopt(S, j, t, arb, seq)
    elif seq > _seen(S) + _window(S):
        hold_far(S, line, buf, ln, ts, t, seq, c, arb)
        return
    _take(S, line, buf, seq, c, ts, t, arb)
    if S[S_Q_HELD] > 0 and _seen(S) + _window(S) >= S[S_Q_MIN]:
        release_near(S, t, arb)


@njit(cache=True, nogil=True, _nrt=False)
def choose(S, line, buf, ln, ts, seq, c, hi, lo, cand, held, held_data, stats):
    """No session yet: the candidate session this packet chooses, else -1 (the packet held,
    or counted when the bounds are full)."""
    n = S[S_CANDIDATES]
    j = -1
    for i in range(n):
        if cand[i, C_HI] == hi and cand[i, C_LO] == lo:
            j = i
            break
    if j < 0:
        if n < cand.shape[0]:
            j = n
            S[S_CANDIDATES] = n + 1
        else:                             # the least recently heard session makes room
            j = 0
            for i in range(1, n):
                if cand[i, C_LAST] < cand[j, C_LAST]:
                    j = i
            _count_wrong(j, cand, held, stats)
        for k in range(cand.shape[1]):
            cand[j, k] = 0
        cand[j, C_HI] = hi
        cand[j, C_LO] = lo
    S[S_CHOICE_N] += 1
    cand[j, C_LAST] = S[S_CHOICE_N]
    data = 0 < c < END_OF_SESSION
    if data and line == LINE_REQUEST and cand[j, C_PROBED] != 0:
        return j                          # the re-request server answers for this session
    base = j * CHOICE_HELD
    for k in range(cand[j, C_HELD]):
        s2 = held[base + k, HP_SEQ]
        c2 = held[base + k, HP_COUNT]
        if (0 < c2 < END_OF_SESSION and s2 + c2 == seq) or (data and seq + c == s2):
            return j                      # two packets chain
    if not data and seq > cand[j, C_PROBE_SEQ]:
        cand[j, C_PROBE_SEQ] = seq
    if ln > held_data.shape[1]:
        cand[j, C_DROPPED + line] += 1
        return -1
    k = cand[j, C_HELD]
    if k < CHOICE_HELD:
        cand[j, C_HELD] = k + 1
    else:           # full: the oldest makes room (stray packets repeated must not keep the stream out)
        k = 0
        for i in range(1, CHOICE_HELD):
            if held[base + i, HP_ORDER] < held[base + k, HP_ORDER]:
                k = i
        cand[j, C_DROPPED + held[base + k, HP_LINE]] += 1
    copy_bytes(held_data[base + k], 0, buf, 0, ln)
    held[base + k, HP_LINE] = line
    held[base + k, HP_LEN] = ln
    held[base + k, HP_TS] = ts
    held[base + k, HP_SEQ] = seq
    held[base + k, HP_COUNT] = c
    held[base + k, HP_ORDER] = S[S_CHOICE_N]
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _adopt(S, j, t, arb, seq):
    """Candidate ``j`` is the session (the packet numbered ``seq`` chose it): its held packets
    taken in arrival order, but for those numbered more than the window away from ``seq``
    (counted implausible: a forged number held with the session's packets must not set the
    numbers to ask for), the others' counted as wrong_session."""
    stats, cand, held, held_data = arb[2], arb[8], arb[9], arb[10]
    S[S_SESSION_SET] = 1
    S[S_SESSION_HI] = cand[j, C_HI]
    S[S_SESSION_LO] = cand[j, C_LO]
    for i in range(S[S_CANDIDATES]):
        if i != j:
            _count_wrong(i, cand, held, stats)
    base = j * CHOICE_HELD
    w = _window(S)
    last = -1
    for _ in range(cand[j, C_HELD]):      # in arrival order
        k = -1
        for i in range(cand[j, C_HELD]):
            if held[base + i, HP_ORDER] > last and (k < 0 or held[base + i, HP_ORDER] < held[base + k, HP_ORDER]):
                k = i
        last = held[base + k, HP_ORDER]
        if abs(held[base + k, HP_SEQ] - seq) > w:
            stats[held[base + k, HP_LINE], S_IMPLAUSIBLE] += 1
            continue
        _take(S, held[base + k, HP_LINE], held_data[base + k], held[base + k, HP_SEQ], held[base + k, HP_COUNT],
              held[base + k, HP_TS], t, arb)
    S[S_CANDIDATES] = 0


@njit(cache=True, nogil=True, _nrt=False)
def _count_wrong(i, cand, held, stats):
    """Candidate ``i``'s packets (held or not) counted in wrong_session."""
    base = i * CHOICE_HELD
    for k in range(cand[i, C_HELD]):
        stats[held[base + k, HP_LINE], S_WRONG_SESSION] += 1
    for line in range(N_LINES):
        stats[line, S_WRONG_SESSION] += cand[i, C_DROPPED + line]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _recovered(line, s, stats, line_gap):
    """Number ``s``'s first copy came on ``line``: recovered for the other lines whose gaps hold it."""
    if line != LINE_REQUEST:
        for o in range(N_LINES):
            if o != line and o != LINE_REQUEST and _ranges_has(line_gap, o, s):
                stats[o, S_RECOVERED_OTHER] += 1


@njit(cache=True, nogil=True, _nrt=False)
def _take(S, line, buf, seq, c, ts, t, arb):
    """A well-formed packet of the session (header: ``seq``, count ``c``)."""
    ring, recs, stats, line_next, line_gap, pend_seq, pend_meta, pend_data = (
        arb[0], arb[1], arb[2], arb[3], arb[4], arb[5], arb[6], arb[7])
    n = 0
    if c == END_OF_SESSION and seq < S[S_HIGH]:     # an end below messages already seen: forged
        stats[line, S_BAD] += 1
        return
    if c == 0 or c == END_OF_SESSION:
        stats[line, S_HEARTBEATS] += 1
        if c == END_OF_SESSION and (S[S_END] < 0 or seq < S[S_END]):
            S[S_END] = seq
    else:
        n = c
        stats[line, S_MESSAGES] += n
    end = seq + n
    if line != LINE_REQUEST:
        _follow(S, line, seq, end, stats, line_next, line_gap, pend_seq, pend_meta)
    if end > S[S_HIGH]:
        S[S_HIGH] = end
    if n == 0 and seq > S[S_HIGH]:
        S[S_HIGH] = seq
    pmask = pend_seq.shape[0] - 1
    q = 20
    for k in range(n):
        s = seq + k
        nbytes = 2 + _be(buf, q, 2)
        nxt = S[S_NEXT]
        if s < nxt:
            stats[line, S_DUPLICATES] += 1
        elif s == nxt:
            _recovered(line, s, stats, line_gap)
            if deliver(S, buf, q, nbytes, s, line, ts, t, ring, recs, stats, line_gap):
                drain(S, t, ring, recs, stats, line_gap, pend_seq, pend_meta, pend_data)
        elif s - nxt > pmask or nbytes > PEND_SLOT:
            S[S_PEND_FULL] += 1
        else:
            slot = s & pmask
            if pend_seq[slot] == s:
                stats[line, S_DUPLICATES] += 1
            else:
                _recovered(line, s, stats, line_gap)
                pend_seq[slot] = s
                pend_meta[slot, 0] = line
                pend_meta[slot, 1] = ts
                pend_meta[slot, 2] = nbytes
                copy_bytes(pend_data[slot], 0, buf, q, nbytes)
                S[S_PEND] += 1
        q += nbytes


@njit(cache=True, nogil=True, _nrt=False)
def missing(S, pend_seq, out):
    """The numbers not delivered below the highest seen, as (first, count) rows of ``out``
    (at most its length); returns how many."""
    pmask = pend_seq.shape[0] - 1
    nxt, high = S[S_NEXT], S[S_HIGH]
    if S[S_END] >= 0 and S[S_END] < high:
        high = S[S_END]
    k = 0
    s = nxt
    top = min(high, nxt + pmask + 1)
    while s < top and k < out.shape[0]:
        if pend_seq[s & pmask] == s:
            s += 1
            continue
        a = s
        while s < top and pend_seq[s & pmask] != s:
            s += 1
        out[k, 0] = a
        out[k, 1] = s - a
        k += 1
    if top < high and k < out.shape[0]:     # past the held slots: everything (not kept)
        if k > 0 and out[k - 1, 0] + out[k - 1, 1] == top:
            out[k - 1, 1] = high - out[k - 1, 0]
        else:
            out[k, 0] = top
            out[k, 1] = high - top
            k += 1
    return k


@njit(cache=True, nogil=True, _nrt=False)
def skip(S, first, count, t, ring, recs, stats, line_gap, pend_seq, pend_meta, pend_data):
    """Give up ``first .. first+count-1`` (the first missing range): delivery goes on after it."""
    if first == S[S_NEXT]:
        _ranges_add(line_gap, LINE_REQUEST, first, first + count)
        S[S_NEXT] = first + count
        if S[S_HIGH] < first + count:
            S[S_HIGH] = first + count
        drain(S, t, ring, recs, stats, line_gap, pend_seq, pend_meta, pend_data)


@njit(cache=True, nogil=True, _nrt=False)
def ring_take(S, ring, recs, out, max_records):
    """The tables' reader: as many whole frames after ``S_T_BYTE`` as fit in ``out`` (at most
    max_records); returns (bytes, records). The caller then moves S_T_BYTE and S_T_REC."""
    bsize = ring.shape[0]
    t = S[S_T_BYTE]
    w = S[S_W_BYTE]
    r0 = S[S_T_REC]
    k = 0
    a = 0
    while r0 + k < S[S_W_REC] and k < max_records and t + a + 2 <= w:
        p = t + a
        ln = 2 + ((np.int64(ring[p & (bsize - 1)]) << 8) | np.int64(ring[(p + 1) & (bsize - 1)]))
        if a + ln > out.shape[0]:
            break
        for j in range(ln):
            out[a + j] = ring[(p + j) & (bsize - 1)]
        a += ln
        k += 1
    return a, k

