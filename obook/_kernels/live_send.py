"""``obook send``'s compiled loop: a day's packets, already encoded, sent on their schedule
with ``sendmmsg`` (batches of every packet due), spinning on the clock for the last stretch
before a packet's time; its lateness (the time its batch is handed to ``sendmmsg`` - its due
time; on loopback the call itself then delivers it to the receivers, ~5 µs) counted in a
histogram.

The kernel's state is three named tuples, the sending threads' shared words ``T`` and each
thread's counters ``Q``: the day's packets
(``Packets``: their bytes ``buf``, each one's offset, length, first sequence number and
message count), the schedule (``Schedule``: one array per field, sorted by due time: the
packet, or -1 - n for a packet dropped on the way, the line's next number moving to n; the
line, 0 A and 1 B; the due time, monotonic ns) and the socket side (``Out``: the libc
functions, the socket, each line's ``sockaddr_in``, one ``mmsghdr``, ``iovec`` and schedule
entry per batch slot, and a ``timespec``).

Two threads (``obook send --spare-cpu``) may run the loop on the same schedule, each on its
own core: a packet goes out from whichever reaches its time first, so it is late only when
both cores are away at once (a virtual machine's host takes a core for microseconds at a
time). A thread claims a batch of entries by a compare-and-swap on ``T[T_AT]`` and hands
them to the kernel only after the batches before them (``T[T_HANDED]``), so the lines keep
the schedule's order.
"""

from collections import namedtuple

from .atomic import atomic_cas, atomic_load, atomic_store
from .ccall import ccall_int
from .jit import njit
from .latency import record

F_SENDMMSG, F_CLOCK, F_SLEEP = 0, 1, 2
SLEEP_MAX_NS = 2_000_000    # a wait up to this long is slept in the loop (clock_nanosleep), not in Python
# a thread's counters
Q_SENT_A, Q_SENT_B, Q_NEXT_A, Q_NEXT_B, Q_LAST_A, Q_LAST_B, Q_CALLS, Q_ERRORS, Q_NEXT_DUE = range(9)
Q_WIDTH = 9
# the words the sending threads share: schedule entries claimed, entries handed to the kernel
T_AT, T_HANDED = 0, 1
T_WIDTH = 2
SEND_DONE, SEND_WAIT, SEND_SLICE = 0, 1, 2
BATCH = 64

Packets = namedtuple("Packets", ("buf", "off", "length", "seq", "count"))
Schedule = namedtuple("Schedule", ("pkt", "line", "due"))
Out = namedtuple("Out", ("fns", "fd", "addrs", "hdr", "iov", "slot", "ts"))


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _clock(fns, ts):
    ccall_int(fns[F_CLOCK], 1, ts.ctypes.data, 0, 0, 0)
    return ts[0] * 1_000_000_000 + ts[1]


@njit(cache=True, nogil=True, _nrt=False)
def send_due(out, T, Q, P, S, late, spin_ns, slice_ns):
    """Send the schedule from T[T_AT]: returns SEND_DONE at its end (every entry handed to
    the kernel), SEND_WAIT when the next packet is due more than spin_ns + SLEEP_MAX_NS away,
    or more than spin_ns away once slice_ns have passed (Q[Q_NEXT_DUE]), SEND_SLICE when
    slice_ns have passed and packets are already due. A shorter wait is slept here
    (``clock_nanosleep`` to spin_ns before the packet's time, when fns holds it), then spun,
    and the packet goes out at once: the core is free for others between packets, and no
    packet waited for is handed back to Python."""
    fns, fd, addrs, hdr, iov, slot, ts = out.fns, out.fd, out.addrs, out.hdr, out.iov, out.slot, out.ts
    buf, p_off, p_len, p_seq, p_count = P.buf, P.off, P.length, P.seq, P.count
    s_pkt, s_line, s_due = S.pkt, S.line, S.due
    at, handed = T.ctypes.data + 8 * T_AT, T.ctypes.data + 8 * T_HANDED
    n = s_pkt.shape[0]
    start = _clock(fns, ts)
    while True:
        k = atomic_load(at)
        if k >= n:
            break
        t = _clock(fns, ts)
        due = s_due[k]
        if due > t:
            if due - t > spin_ns:
                if fns[F_SLEEP] == 0 or due - t > spin_ns + SLEEP_MAX_NS or t - start > slice_ns:
                    Q[Q_NEXT_DUE] = due
                    return SEND_WAIT
                wake = due - spin_ns
                ts[0] = wake // 1_000_000_000
                ts[1] = wake % 1_000_000_000
                ccall_int(fns[F_SLEEP], 1, 1, ts.ctypes.data, 0, 0)     # CLOCK_MONOTONIC, TIMER_ABSTIME
            while _clock(fns, ts) < due:
                if atomic_load(at) != k:        # the other thread sent it
                    break
            t = _clock(fns, ts)
        elif t - start > slice_ns:      # only a packet already due goes back: one waited for goes now
            return SEND_SLICE
        end = k
        while end < n and end - k < BATCH and s_due[end] <= t:
            end += 1
        if end == k or atomic_cas(at, k, end) != k:     # not yet due, or the other thread took it
            continue
        m = 0
        for e in range(k, end):
            p = s_pkt[e]
            line = s_line[e]
            if p < 0:
                nxt = -1 - p
                if nxt > Q[Q_NEXT_A + line]:
                    Q[Q_NEXT_A + line] = nxt
            else:
                iov[m, 0] = buf.ctypes.data + p_off[p]
                iov[m, 1] = p_len[p]
                hdr[m, 0] = addrs[line].ctypes.data
                hdr[m, 1] = 16
                hdr[m, 2] = iov[m:].ctypes.data
                hdr[m, 3] = 1
                hdr[m, 4] = 0
                hdr[m, 5] = 0
                hdr[m, 6] = 0
                hdr[m, 7] = 0
                slot[m] = e
                m += 1
        while atomic_load(handed) != k:         # the batches claimed before this one go first
            pass
        t_hand = _clock(fns, ts)
        sent = 0
        while sent < m:
            r = ccall_int(fns[F_SENDMMSG], fd, hdr[sent:].ctypes.data, m - sent, 0, 0)
            Q[Q_CALLS] += 1
            if r <= 0:
                Q[Q_ERRORS] += 1
                break
            sent += r
        atomic_store(handed, end)
        t_sent = _clock(fns, ts)
        for j in range(m):
            e = slot[j]
            line = s_line[e]
            p = s_pkt[e]
            Q[Q_SENT_A + line] += 1
            Q[Q_LAST_A + line] = t_sent
            nxt = p_seq[p] + p_count[p]
            if nxt > Q[Q_NEXT_A + line]:
                Q[Q_NEXT_A + line] = nxt
            record(late, t_hand - s_due[e])
    while atomic_load(handed) < n:              # the other thread's last batch is out
        pass
    return SEND_DONE
