"""The compiled live loop: receive (``recvmmsg``, batches of datagrams, or a busy poll),
arbitrate A/B and re-request answers, decode ITCH, apply to the books, call the strategy,
check risk, encode OUCH and send it, with a stamp at each stage counted in histograms.
Python runs between calls only (a time slice, an event it must handle: see RUN_*).

Arguments are grouped in tuples: ``net`` (recvmmsg headers, datagram and control buffers,
poll fds), ``arb`` (the delivered ring and the arbitration's arrays, see live_arb), ``itch``
(the decoder's tables and the instruments' names), ``bk`` (obook.engine.books.BookState's
arrays: the skip counts, then book.Books' and replay.Rules' fields), ``outs`` (its row buffers), ``ords`` (the strategy's state,
risk window, order buffers and log, order stamps, venue input) and ``misc`` (histograms,
rows for a Python strategy, gaps given up, scratch).

Clock: monotonic ns from the cycle counter, anchored to ``clock_gettime`` at each call and
every 2 ms (``S_MULT``: ns per cycle << 24, measured against the clock over the run); the
kernel's receive stamps (realtime) are moved onto it by ``S_CLOCK_OFFSET``.
"""

import numpy as np

from .book import Books
from .book_rows import Tables
from .replay import Rules, replay_events
from .ccall import ccall, ccall9, ccall_int, peek_i32
from .clock import cycles
from .itch import itch_decode
from .jit import njit
from .latency import record
from .layout import NEED_ROOM, OK
from .live_arb import arbitrate, missing, screen, skip
from .live_layout import (C_HI, C_LO, C_PROBE_SEQ, C_PROBED, CTL, F_CLOCK, F_ERRNO, F_POLL, F_PPOLL, F_RECV, F_RECVMMSG, F_SEND, F_STRATEGY, H_BOOK,
                          H_DECODE, H_GATEWAY, H_HANDOVER, H_R2B, H_RECV, H_RISK, H_STRATEGY, LINE_REQUEST,
                          MSG_DONTWAIT, MSG_NOSIGNAL, MSG_TRUNC, N_LINES, RETRY_ERRNOS, RUN_BOOK_ERROR, RUN_END,
                          RUN_GIVE_UP, RUN_MALFORMED, RUN_NEED_ROOM, RUN_PY_ROWS, RUN_SLICE, RUN_STOPPED, RUN_VENUE_LOST,
                          S_BAD_LEN, S_BAD_TYPE, S_BASE_CYC, S_BASE_NS, S_BBO_ROWS, S_CAL_CYC, S_CAL_NS, S_BOOK_ERROR, S_CALLS,
                          S_CLOCK_OFFSET, S_END, S_ERROR_EVENT,
                          S_ERROR_SEQ, S_GAP_AT, S_GAP_HIGH, S_GAP_LAST, S_GAP_SINCE, S_GAP_TRIES,
                          S_GAP_WAIT, S_GIVEUP_COUNT, S_GIVEUP_FIRST, S_HAS_STRATEGY, S_HAS_VENUE,
                          S_HEARTBEAT, S_HIGH, S_H_BYTE, S_H_REC, S_LAST_PACKET, S_LAST_VENUE, S_LOG_BYTES,
                          S_LOG_FULL, S_LOOPS, S_MALFORMED, S_MAX_REQUEST, S_MULT, S_NEED_ROOM, S_NEXT, S_N_GAPS,
                          S_ON_GAP_SKIP, S_ORDERS, S_POLLS, S_PY_N, S_PY_STRATEGY, S_REQ_TIMEOUT,
                          S_REQUESTS, S_RESUME_I, S_RETRIES, S_SEND_BLOCKED, S_SEND_ERRNO, S_SEND_ERRORS, S_SESSION_HI,
                          S_SESSION_LO, S_SLICE_NS, S_SPIN, S_STOP, S_STRICT, S_TRUNCATED, S_VBUF_N,
                          S_VENUE_BAD, S_VENUE_ENDED, S_VENUE_READ, S_ANSWERS, S_W_REC, S_HAVE_REQUEST, S_CANDIDATES, S_PROBE_LAST,
                          S_PROBES, S_REST_EVERY, S_REST_LAST, S_REST_NS, S_REST_OWED, S_RESTS, S_SESSION_SET, S_SPIN_NS,
                          S_OUT_N, S_OUT_SENDS, S_OUT_LONE, S_OUT_HOLD, ORDER_MAX, VLEN)
from .live_orders import answers, encode, risk_check
from .mold import S_BAD, S_PACKETS


ANCHOR_EVERY_NS = 2_000_000     # the loop re-pairs its cycle counter with the clock this often
#: send() tries in a row that find the socket's buffer full before the venue is taken as lost
#: (about a second)
SEND_TRIES = 1_000_000
_AGAIN, _WOULDBLOCK, _INTR = RETRY_ERRNOS


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _now(S):
    return S[S_BASE_NS] + (((cycles() - S[S_BASE_CYC]) * S[S_MULT]) >> 24)


@njit(cache=True, nogil=True, _nrt=False)
def anchor(S, fns, ts):
    """Pair the cycle counter with the monotonic clock (CLOCK_MONOTONIC = 1), and measure
    the counter's rate against the clock between this pair and a reference pair at least
    0.2 s older (S_MULT: ns per cycle << 24; the reference moves on every 100 s), so that
    stamps between anchors stay on the kernel's clock, not on a rate measured in 20 ms."""
    c = cycles()
    ccall_int(fns[F_CLOCK], 1, ts.ctypes.data, 0, 0, 0)
    ns = ts[0] * 1_000_000_000 + ts[1]
    S[S_BASE_NS] = ns
    S[S_BASE_CYC] = c
    dn = ns - S[S_CAL_NS]
    dc = c - S[S_CAL_CYC]
    if S[S_CAL_NS] == 0 or dn > 100_000_000_000 or dc <= 0:
        S[S_CAL_NS] = ns
        S[S_CAL_CYC] = c
    elif dn > 200_000_000:
        S[S_MULT] = (dn << 24) // dc


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _failed_for_now(fns, k):
    """Whether a socket call that returned ``k`` failed for now only (-1 with errno EAGAIN,
    EWOULDBLOCK or EINTR: a full or empty buffer, a signal); its errno (0: k is no failure)."""
    if k >= 0:
        return False, np.int64(0)
    e = peek_i32(ccall(fns[F_ERRNO], 0, 0, 0, 0, 0))
    return e == _AGAIN or e == _WOULDBLOCK or e == _INTR, e


@njit(cache=True, nogil=True, _nrt=False)
def _send_all(fns, fd, buf, n, S):
    """Write buf[:n] to a non-blocking socket, waiting out a full buffer (counted in
    S_SEND_BLOCKED) for SEND_TRIES tries in a row; False: failed, at once on any other error
    (a broken connection: EPIPE, ECONNRESET, ...), with its errno in S_SEND_ERRNO."""
    at = 0
    tries = 0
    while at < n:
        k = ccall(fns[F_SEND], fd, buf.ctypes.data + at, n - at, MSG_DONTWAIT | MSG_NOSIGNAL, 0)
        if k > 0:
            at += k
            tries = 0
            continue
        again, e = _failed_for_now(fns, k)
        if not again or tries >= SEND_TRIES:
            S[S_SEND_ERRNO] = e
            return False
        S[S_SEND_BLOCKED] += 1
        tries += 1
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _receive(fns, fds, S, net, arb, hists, line):
    """One recvmmsg on a line; returns the datagrams. A datagram's header is screened first:
    garbage and other sessions' packets are counted and dropped before its stamp is read."""
    hdr, pk, ctl = net[0], net[1], net[2]
    stats = arb[2]
    for i in range(VLEN):
        hdr[line, i, 5] = CTL
        hdr[line, i, 6] = 0
    n = ccall_int(fns[F_RECVMMSG], fds[line], hdr[line].ctypes.data, VLEN, MSG_DONTWAIT, 0)
    if n <= 0:
        return 0
    t_user = _now(S)
    for i in range(n):
        ln = hdr[line, i, 7] & 0xFFFFFFFF
        if hdr[line, i, 6] & MSG_TRUNC:
            stats[line, S_PACKETS] += 1
            stats[line, S_BAD] += 1
            S[S_TRUNCATED] += 1
            continue
        buf = pk[line, i]
        seq, cnt, hi, lo, ok = screen(S, line, buf, ln, stats)
        if not ok:
            continue
        ts = t_user
        c = ctl[line, i]
        if hdr[line, i, 5] >= 32 and c[8] == 1 and c[12] == 35:     # SOL_SOCKET, SO_TIMESTAMPNS
            sec = np.int64(0)
            nsec = np.int64(0)
            for k in range(8):
                sec |= np.int64(c[16 + k]) << (8 * k)
                nsec |= np.int64(c[24 + k]) << (8 * k)
            ts = sec * 1_000_000_000 + nsec - S[S_CLOCK_OFFSET]
        record(hists[H_RECV], t_user - ts)
        arbitrate(S, line, buf, ln, ts, t_user, seq, cnt, hi, lo, arb)
        record(hists[H_DECODE], _now(S) - t_user)
    S[S_LAST_PACKET] = t_user
    return n


@njit(cache=True, nogil=True, _nrt=False)
def flush_orders(fns, fds, S, ords):
    """Send the orders gathered in the outbox (``ords[3][:S_OUT_N]``) in one call: one TCP
    segment for all the orders one batch of datagrams caused. False: the venue failed."""
    n = S[S_OUT_N]
    if n == 0:
        return True
    S[S_OUT_N] = 0
    S[S_OUT_SENDS] += 1
    S[S_LAST_VENUE] = _now(S)
    return _send_all(fns, fds[3], ords[3], n, S)


@njit(cache=True, nogil=True, _nrt=False)
def _order(fns, fds, S, loc, time, bpx, apx, kind, itch, ords, hists, t_s, t_kernel):
    """Risk, then the order encoded into the outbox. The first order of a batch of datagrams
    goes at once (S_OUT_LONE; a lone order waits for nothing), the later ones are sent together
    by flush_orders after the batch (sooner when the outbox is nearly full): a burst of orders
    takes two TCP segments, not one each. False: the venue failed."""
    state, sout, window, obuf, olog, refs, vbuf = ords
    why = risk_check(S, window, kind, sout[0], sout[1], sout[2], bpx, apx, time)
    t_r = _now(S)
    record(hists[H_RISK], t_r - t_s)
    if why != 0:
        return True
    at = S[S_OUT_N]
    if at + ORDER_MAX > obuf.shape[0]:
        if not flush_orders(fns, fds, S, ords):
            return False
        at = 0
    n = encode(obuf[at:], kind, sout[0], sout[1], sout[2], sout[3], sout[4], itch[6][loc])
    t_g = _now(S)
    record(hists[H_GATEWAY], t_g - t_r)
    S[S_ORDERS] += 1
    lb = S[S_LOG_BYTES]
    if lb + n - 3 <= olog.shape[0]:
        for k in range(n - 3):
            olog[lb + k] = obuf[at + 3 + k]
        S[S_LOG_BYTES] = lb + n - 3
    else:
        S[S_LOG_FULL] += 1
    if S[S_HAS_VENUE] != 0:
        ref = sout[3]
        i = ref & (refs.shape[1] - 1)
        if refs[0, i] != ref or refs[1, i] == 0:     # a ref's first order keeps its stamps
            refs[0, i] = ref
            refs[1, i] = t_g
            refs[2, i] = t_kernel
            refs[3, i] = 0
        S[S_OUT_N] = at + n
        if S[S_OUT_LONE] != 0 or S[S_OUT_HOLD] == 2:    # the batch's first at once, the others together
            S[S_OUT_LONE] = 0
            return flush_orders(fns, fds, S, ords)
    return True


@njit(cache=True, nogil=True, _nrt=False)
def consume(fns, fds, S, arb, itch, bk, outs, ords, misc):
    """The delivered records not through the books yet (see _consume), then the orders they
    caused (see _order)."""
    S[S_OUT_LONE] = S[S_OUT_HOLD] == 0
    status = _consume(fns, fds, S, arb, itch, bk, outs, ords, misc)
    if not flush_orders(fns, fds, S, ords):
        return RUN_VENUE_LOST
    return status


@njit(cache=True, nogil=True, _nrt=False)
def _consume(fns, fds, S, arb, itch, bk, outs, ords, misc):
    """The delivered records not through the books yet: decode, books, strategy, order."""
    ring, recs = arb[0], arb[1]
    sizes, ev, names, owner, keep, wanted, sym, scratch = itch
    (skips, lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh, pages, page_dir, page_live, page_key,
     page_free, ov_key, ov_val, ov_state, qn, pnode, ovnode, dstate, cage, held, st) = bk
    rows, trades, orders, depth, nx, snap = outs
    state, sout = ords[0], ords[1]
    hists, py_rows = misc[0], misc[1]
    bsize = ring.shape[0]
    rmask = recs.shape[1] - 1
    while S[S_H_REC] < S[S_W_REC]:
        r = S[S_H_REC] + 1
        i = r & rmask
        hb = S[S_H_BYTE]
        p = hb & (bsize - 1)
        nb = 2 + ((np.int64(ring[p]) << 8) | np.int64(ring[(p + 1) & (bsize - 1)]))
        t_h = _now(S)
        if p + nb <= bsize:
            frame = ring[p:p + nb]
        else:
            for k in range(nb):
                scratch[k] = ring[(hb + k) & (bsize - 1)]
            frame = scratch[:nb]
        if nb == 2 or nb - 2 < sizes[frame[2]]:     # shorter than its type: refused, or skipped
            S[S_H_REC] = r
            S[S_H_BYTE] = hb + nb
            if S[S_STRICT] != 0:
                S[S_BAD_TYPE] = -1 if nb == 2 else frame[2]
                S[S_BAD_LEN] = nb - 2
                S[S_ERROR_SEQ] = recs[0, i]
                return RUN_MALFORMED
            S[S_MALFORMED] += 1
            continue
        ne, nn, _ = itch_decode(frame, r, 0, owner, sizes, ev, names, False, keep, wanted)  # no prints: OK
        for k in range(nn):
            for j in range(8):
                sym[names[k, 0], j] = frame[names[k, 1] + j]
        status, j, nrow, room = replay_events(
            ev, ne, S[S_RESUME_I], rows, 0, skips, S[S_STRICT] != 0,
            Books(lv, lv_free, lvx, sides, pool, seg_free, heaps, hp, fh, pages, page_dir, page_live, page_key,
                  page_free, ov_key, ov_val, ov_state, qn, pnode, ovnode, st),
            Rules(dstate, cage, held), Tables(0, trades, orders, depth, nx, snap))
        if status == NEED_ROOM:
            S[S_RESUME_I] = j
            S[S_NEED_ROOM] = room
            return RUN_NEED_ROOM
        S[S_RESUME_I] = 0
        S[S_H_REC] = r
        S[S_H_BYTE] = hb + nb
        if status != OK:
            S[S_BOOK_ERROR] = status
            S[S_ERROR_SEQ] = recs[0, i]
            S[S_ERROR_EVENT] = j
            return RUN_BOOK_ERROR
        t_b = _now(S)
        record(hists[H_HANDOVER], t_h - recs[3, i])
        record(hists[H_BOOK], t_b - t_h)
        record(hists[H_R2B], t_b - recs[2, i])
        S[S_BBO_ROWS] += nrow
        if S[S_HAS_STRATEGY] == 0:
            continue
        for k in range(nrow):
            loc = rows[k, 2]
            S[S_CALLS] += 1
            if S[S_PY_STRATEGY] != 0:
                q = S[S_PY_N]
                if q < py_rows.shape[0]:
                    for c in range(9):
                        py_rows[q, c] = rows[k, c]
                    py_rows[q, 5] = recs[2, i]     # (the order counts are not the strategy's)
                    py_rows[q, 8] = t_b
                    S[S_PY_N] = q + 1
                continue
            kind = ccall9(fns[F_STRATEGY], state.ctypes.data, state.shape[0], loc, rows[k, 1], rows[k, 3],
                          rows[k, 4], rows[k, 6], rows[k, 7], sout.ctypes.data)
            t_s = _now(S)
            record(hists[H_STRATEGY], t_s - t_b)
            if kind != 0:
                if not _order(fns, fds, S, loc, rows[k, 1], rows[k, 3], rows[k, 6], kind, itch, ords, hists, t_s,
                              recs[2, i]):
                    return RUN_VENUE_LOST
            t_b = _now(S)
        if S[S_PY_N] > 0:
            return RUN_PY_ROWS
    return RUN_SLICE


@njit(cache=True, nogil=True, _nrt=False)
def _request(fns, fds, S, hi, lo, first, count, reqbuf):
    while count > 0:
        n = min(count, S[S_MAX_REQUEST])
        for k in range(8):
            reqbuf[k] = (hi >> (8 * (7 - k))) & 0xFF
            reqbuf[10 + k] = (first >> (8 * (7 - k))) & 0xFF
        reqbuf[8] = (lo >> 8) & 0xFF
        reqbuf[9] = lo & 0xFF
        reqbuf[18] = (n >> 8) & 0xFF
        reqbuf[19] = n & 0xFF
        if ccall(fns[F_SEND], fds[LINE_REQUEST], reqbuf.ctypes.data, 20, MSG_DONTWAIT | MSG_NOSIGNAL, 0) == 20:
            S[S_REQUESTS] += 1
        else:
            S[S_SEND_ERRORS] += 1
        first += n
        count -= n


@njit(cache=True, nogil=True, _nrt=False)
def _probe(fns, fds, S, t, cand, reqbuf):
    """No session chosen yet: ask the re-request server for the numbers below those the
    heartbeats of each session name (every data packet lost); its answer chooses one."""
    if fds[LINE_REQUEST] < 0 or S[S_HAVE_REQUEST] == 0 or t - S[S_PROBE_LAST] < S[S_REQ_TIMEOUT]:
        return
    for j in range(S[S_CANDIDATES]):
        if cand[j, C_PROBE_SEQ] > 1:
            cand[j, C_PROBED] = 1
            _request(fns, fds, S, cand[j, C_HI], cand[j, C_LO], 1, min(cand[j, C_PROBE_SEQ] - 1, S[S_MAX_REQUEST]),
                     reqbuf)
            S[S_PROBES] += 1
            S[S_PROBE_LAST] = t


@njit(cache=True, nogil=True, _nrt=False)
def gaps(fns, fds, S, t, arb, misc):
    """Re-request what both lines lost (after S_GAP_WAIT, every S_REQ_TIMEOUT, S_RETRIES
    times), then give the first range up: RUN_GIVE_UP, or with S_ON_GAP_SKIP a gap row."""
    ring, recs, stats, line_gap, pend_seq, pend_meta, pend_data = arb[0], arb[1], arb[2], arb[4], arb[5], arb[6], arb[7]
    gaps_out, miss, reqbuf = misc[2], misc[3], misc[4]
    if S[S_SESSION_SET] == 0:
        _probe(fns, fds, S, t, arb[8], reqbuf)
        return RUN_SLICE
    nxt = S[S_NEXT]
    high = S[S_HIGH]
    if S[S_END] >= 0 and S[S_END] < high:
        high = S[S_END]
    if nxt >= high:
        S[S_GAP_AT] = -1
        return RUN_SLICE
    if S[S_GAP_AT] != nxt:
        S[S_GAP_AT] = nxt
        S[S_GAP_SINCE] = t
        S[S_GAP_HIGH] = high
        S[S_GAP_TRIES] = 0
        return RUN_SLICE
    if t - S[S_GAP_SINCE] < S[S_GAP_WAIT] or (S[S_GAP_TRIES] > 0 and t - S[S_GAP_LAST] < S[S_REQ_TIMEOUT]):
        return RUN_SLICE
    k = missing(S, pend_seq, miss)
    if k == 0:
        return RUN_SLICE
    if S[S_GAP_TRIES] > S[S_RETRIES] or fds[LINE_REQUEST] < 0 or S[S_HAVE_REQUEST] == 0:
        first, count = miss[0, 0], miss[0, 1]
        if S[S_ON_GAP_SKIP] == 0:
            S[S_GIVEUP_FIRST] = first
            S[S_GIVEUP_COUNT] = count
            return RUN_GIVE_UP
        g = S[S_N_GAPS]
        if g < gaps_out.shape[0]:
            gaps_out[g, 0] = first
            gaps_out[g, 1] = count
            gaps_out[g, 2] = recs[2, S[S_W_REC] & (recs.shape[1] - 1)] if S[S_W_REC] > 0 else -1
            gaps_out[g, 3] = t
        S[S_N_GAPS] = g + 1
        skip(S, first, count, t, ring, recs, stats, line_gap, pend_seq, pend_meta, pend_data)
        S[S_GAP_AT] = -1
        return RUN_SLICE
    for j in range(k):
        if miss[j, 0] < S[S_GAP_HIGH]:      # what was missing when the wait began
            _request(fns, fds, S, S[S_SESSION_HI], S[S_SESSION_LO], miss[j, 0],
                     min(miss[j, 1], S[S_GAP_HIGH] - miss[j, 0]), reqbuf)
    S[S_GAP_TRIES] += 1
    S[S_GAP_LAST] = t
    S[S_GAP_HIGH] = high
    return RUN_SLICE


@njit(cache=True, nogil=True, _nrt=False)
def _venue(fns, fds, S, t, ords, misc, readable):
    """The venue's answers (when poll() found them there, every 0.1 ms while an order waits
    for one, every 10 ms regardless); a heartbeat when quiet. A read that finds the connection
    closed (end of file) or broken (ECONNRESET: any error but "nothing yet") sets S_VENUE_ENDED."""
    vbuf, refs = ords[6], ords[5]
    waiting = S[S_ORDERS] > S[S_ANSWERS] and t - S[S_VENUE_READ] > 100_000
    if S[S_VENUE_ENDED] == 0 and (readable or waiting or t - S[S_VENUE_READ] > 10_000_000):
        S[S_VENUE_READ] = t
        n = ccall(fns[F_RECV], fds[3], vbuf.ctypes.data + S[S_VBUF_N], vbuf.shape[0] - S[S_VBUF_N],
                  MSG_DONTWAIT, 0)
        if n > 0:
            S[S_VBUF_N] += n
            answers(S, vbuf, refs, misc[0])
        elif n == 0 or not _failed_for_now(fns, n)[0]:     # end of file, or a reset connection
            S[S_VENUE_ENDED] = 1
    if S[S_VENUE_ENDED] == 0 and t - S[S_LAST_VENUE] > S[S_HEARTBEAT]:
        obuf = ords[3]
        obuf[0] = 0
        obuf[1] = 1
        obuf[2] = 82          # 'R' client heartbeat
        S[S_LAST_VENUE] = t
        _send_all(fns, fds[3], obuf, 3, S)


@njit(cache=True, nogil=True, _nrt=False)
def _ready(fds, pollfds):
    """The lines (bits 0-2) and the venue (bit 3) poll found readable."""
    mask = 0
    for k in range(pollfds.shape[0]):
        if (pollfds[k, 1] >> 16) & 0xFFFF:
            for j in range(4):
                if fds[j] == pollfds[k, 0]:
                    mask |= 1 << j
    return mask


@njit(cache=True, nogil=True, _nrt=False)
def _rest(fns, fds, S, pollfds, ts):
    """A spinning loop's rest: ppoll() for up to S_REST_NS (a datagram ends it; what a rest
    cut short did not take is owed and added to the next ones, at most ten rests' worth).
    A real-time thread that never sleeps is stopped by the kernel for tens of ms each second
    (RT throttling, the fair server); resting S_REST_NS every S_REST_EVERY gives the other
    threads of its core their share in small pieces instead. When more than a rest is owed
    (datagrams every few µs end each rest at once), the rest is a sleep no datagram ends.
    Returns what poll found ready."""
    want = min(S[S_REST_NS] + S[S_REST_OWED], 10 * S[S_REST_NS])
    ts[0] = 0
    ts[1] = want
    S[S_RESTS] += 1
    t0 = _now(S)
    # owing more than a rest (datagrams kept cutting the rests short): a rest no datagram ends
    nfds = 0 if S[S_REST_OWED] > S[S_REST_NS] else pollfds.shape[0]
    k = ccall_int(fns[F_PPOLL], pollfds.ctypes.data, nfds, ts.ctypes.data, 0, 0)
    t1 = _now(S)
    S[S_REST_LAST] = t1
    S[S_REST_OWED] = max(0, want - (t1 - t0))
    return _ready(fds, pollfds) if k > 0 else 0


@njit(cache=True, nogil=True, _nrt=False)
def run(fns, fds, S, net, arb, itch, bk, outs, ords, misc):
    """Run until the time slice ends or something needs the caller (RUN_*).

    Waiting: S_SPIN busy-polls every line (resting S_REST_NS every S_REST_EVERY when set); else, after a turn that received something,
    every line is read again; after one that received nothing, poll(): at once for S_SPIN_NS
    after the last datagram (a busy poll of every socket), else sleeping (at most 10 ms);
    the turn after a poll() reads the lines it found readable only."""
    ts = misc[5]
    anchor(S, fns, ts)
    end = _now(S) + S[S_SLICE_NS]
    status = consume(fns, fds, S, arb, itch, bk, outs, ords, misc)
    if status != RUN_SLICE:
        return status
    pollfds = net[3]
    hists = misc[0]
    ready = 15
    venue_ready = True
    while True:
        if S[S_STOP] != 0:
            return RUN_STOPPED
        S[S_LOOPS] += 1
        got = 0
        for line in range(N_LINES):
            if fds[line] >= 0 and ready & (1 << line):
                k = _receive(fns, fds, S, net, arb, hists, line)
                got += k
                if k and S[S_H_REC] < S[S_W_REC]:     # through the books before the next line's read
                    status = consume(fns, fds, S, arb, itch, bk, outs, ords, misc)
                    if status != RUN_SLICE:
                        return status
        t = _now(S)
        if t - S[S_BASE_NS] > ANCHOR_EVERY_NS:
            anchor(S, fns, ts)
        if S[S_HAS_VENUE] != 0:
            _venue(fns, fds, S, t, ords, misc, venue_ready)
            venue_ready = False
            if S[S_VENUE_BAD] != 0:
                return RUN_VENUE_LOST
            if S[S_VENUE_ENDED] != 0:   # no order goes to it from here on; the caller says so now
                S[S_HAS_VENUE] = 0
                return RUN_SLICE
        status = gaps(fns, fds, S, t, arb, misc)
        if status != RUN_SLICE:
            return status
        if S[S_END] >= 0 and S[S_NEXT] >= S[S_END] and S[S_H_REC] == S[S_W_REC]:
            return RUN_END
        if t >= end:
            return RUN_SLICE
        if S[S_SPIN] != 0 and S[S_REST_NS] > 0 and t - S[S_REST_LAST] >= S[S_REST_EVERY]:
            ready = _rest(fns, fds, S, pollfds, ts)
            venue_ready = (ready & 8) != 0
            continue
        if S[S_SPIN] != 0 or got:
            ready = 15
            continue
        S[S_POLLS] += 1
        wait = 0 if t - S[S_LAST_PACKET] < S[S_SPIN_NS] else min(10, 1 + (end - t) // 1_000_000)
        if ccall_int(fns[F_POLL], pollfds.ctypes.data, pollfds.shape[0], wait, 0, 0) > 0:
            ready = _ready(fds, pollfds)
            venue_ready = (ready & 8) != 0
        else:
            ready = 0
