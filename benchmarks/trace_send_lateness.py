"""Where a paced packet's lateness comes from: ``obook send --speed 1``'s loop, traced.

A diagnostic, not a benchmark. It builds a copy of ``obook._kernels.live_send.send_due``
with clock reads added at each step between a packet's due time and its hand-over to
``sendmmsg`` (the copy is made from the kernel's source, so it follows the kernel; an edit
that moves an anchor makes this script stop with the anchor's name), runs a day's first
``--window`` seconds at speed 1 through ``Sender`` with the copy in place of the kernel, and
prints, for every schedule entry over ``--over`` µs late:

- ``spin_end``: when the busy wait saw the due time (µs after it; > 0 means a gap in the
  clock reads straddled the due time: the core was away);
- ``t``: the first clock read after the wait; ``claimed``: the read after the
  compare-and-swap that claims the batch; ``late``: the hand-over (all µs after the due time);
- each thread's largest gap between clock reads while it waited, and where it began;
- where each thread was at the due time (inside the loop, or in Python and since when).

Then the stalls over 20 µs per 100 µs of waiting, by how long the wait had run: flat when
the host takes the core away at random times; and the stalls and late entries by their
phase in the kernel's scheduler tick (``CONFIG_HZ``; a running core takes a tick interrupt
at every multiple of the tick period of ``CLOCK_MONOTONIC``, all cores at once unless the
kernel was booted with ``skew_tick=1``). Options probe two guesses:
``--touch`` writes (an atomic no-op) to every page the loop writes after the claim on each
turn of the wait; ``--one-loop`` waits by turning the loop's outer body (the claim's own
code) instead of its inner wait loop.

    python benchmarks/trace_send_lateness.py --cpus 0+1 --window 30 --spin-us 1000
"""

import argparse
import importlib.util
import inspect
import json
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

T_HAND, T_SENT, TID, CLAIM, T_AFTER_WAIT, T_CLAIMED, WAIT_START = range(7)
GAP, GAP_AT, SPIN_END = 0, 2, 4           # per thread: columns GAP + tid, GAP_AT + tid, SPIN_END + tid


def _patch(src: str, anchor: str, new: str) -> str:
    if anchor not in src:
        raise SystemExit(f"trace_send_lateness: the kernel no longer has {anchor.strip()!r}; update the patch")
    return src.replace(anchor, new, 1)


def traced_kernel(touch: bool, one_loop: bool):
    """The kernel module's source with the trace added, imported from a temporary file."""
    from obook._kernels import live_send

    src = inspect.getsource(live_send)
    for mod in ("atomic", "ccall", "jit", "latency"):
        src = src.replace(f"from .{mod} ", f"from obook._kernels.{mod} ")
    src = src.replace("cache=True", "cache=False")
    src = _patch(src, "def send_due(out, T, Q, P, S, late, spin_ns, slice_ns):",
                 "def send_due(out, T, Q, P, S, late, spin_ns, slice_ns, tr, gp, tid):")
    src = _patch(src, "            while _clock(fns, ts) < due:\n"
                      "                if atomic_load(at) != k:        # the other thread sent it\n"
                      "                    break\n",
                 ("            continue\n" if one_loop else "")
                 + "            prev = _clock(fns, ts)\n"
                 "            tr[k, 6] = prev - due\n"
                 "            while prev < due:\n"
                 "                if atomic_load(at) != k:\n"
                 "                    break\n"
                 + ("                atomic_cas(at, -12345, -12345)\n"
                    "                atomic_cas(handed, -12345, -12345)\n"
                    "                atomic_cas(Q.ctypes.data, -12345, -12345)\n"
                    "                atomic_cas(hdr.ctypes.data, -12345, -12345)\n"
                    "                atomic_cas(iov.ctypes.data, -12345, -12345)\n"
                    "                atomic_cas(slot.ctypes.data, -12345, -12345)\n"
                    "                atomic_cas(late.ctypes.data, -12345, -12345)\n"
                    "                atomic_cas(tr.ctypes.data + 56 * k, -12345, -12345)\n" if touch else "")
                 + "                now = _clock(fns, ts)\n"
                 "                if now - prev > gp[k, tid]:\n"
                 "                    gp[k, tid] = now - prev\n"
                 "                    gp[k, 2 + tid] = prev - due\n"
                 "                prev = now\n"
                 "            gp[k, 4 + tid] = _clock(fns, ts) - due\n")
    src = _patch(src, "        while atomic_load(handed) != k:",
                 "        t_claimed = _clock(fns, ts)\n        while atomic_load(handed) != k:")
    src = _patch(src, "            record(late, t_hand - s_due[e])\n",
                 "            record(late, t_hand - s_due[e])\n"
                 "            tr[e, 0] = t_hand\n            tr[e, 1] = t_sent\n            tr[e, 2] = tid\n"
                 "            tr[e, 3] = k\n            tr[e, 4] = t\n            tr[e, 5] = t_claimed\n")
    path = Path(tempfile.mkdtemp(prefix="obook-trace-")) / "live_send_traced.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("live_send_traced", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpus", default="0", help="N (the loop on core N) or N+M (with a spare loop on core M)")
    ap.add_argument("--window", type=float, default=30.0, help="seconds of the day to send at speed 1")
    ap.add_argument("--spin-us", type=float, default=1000.0)
    ap.add_argument("--messages", type=int, default=2_000_000, help="the generated day's size")
    ap.add_argument("--over", type=float, default=20.0, help="list the entries later than this, µs")
    ap.add_argument("--touch", action="store_true")
    ap.add_argument("--one-loop", action="store_true")
    args = ap.parse_args()

    from common import itch_day
    from obook._kernels import live_send as K
    from obook.live.send import Sender, SendOptions, read_messages, timestamp

    KT = traced_kernel(args.touch, args.one_loop)
    msgs = read_messages(itch_day(args.messages, 200))
    t0 = timestamp(msgs[202])
    first = [m for m in msgs[202:] if timestamp(m) - t0 < args.window * 1e9]
    plain, state, calls, tids = K.send_due, {}, [], {}

    def traced(out, T, Q, P, S, late, spin_ns, slice_ns):
        n = S.pkt.shape[0]
        if n == 0:                              # Sender's warm-up call
            return plain(out, T, Q, P, S, late, spin_ns, slice_ns)
        if state.get("n") != n:
            state.update(n=n, tr=np.full((n, 7), -1, np.int64), gp=np.zeros((n, 6), np.int64))
        tid = tids.setdefault(threading.get_ident(), len(tids))
        a = time.monotonic_ns()
        status = KT.send_due(out, T, Q, P, S, late, spin_ns, slice_ns, state["tr"], state["gp"], tid)
        calls.append((tid, a, time.monotonic_ns(), status))
        return status

    sinks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for s in sinks:
        s.bind(("127.0.0.1", 0))
    cores = [int(c) for c in args.cpus.split("+")]
    K.send_due = traced
    try:
        def sender(msgs, speed, **kw):
            return Sender(msgs, SendOptions(sinks[0].getsockname(), sinks[1].getsockname(), None, speed=speed,
                                            linger=0, heartbeat=0.5, **kw))
        sender(first[:50], 0).run()             # compiles the traced copy
        state.clear(), calls.clear(), tids.clear()
        s = sender(first, 1, spin_us=args.spin_us, cpu=cores[0], spare_cpu=cores[1] if len(cores) > 1 else None)
        s.run()
    finally:
        K.send_due = plain
        for x in sinks:
            x.close()
    report(s, state["tr"], state["gp"], np.array(calls), len(tids), args.over * 1000)
    by_tick(np.asarray(s._sched.due), state["tr"], state["gp"], len(tids), args.over * 1000, tick_ns())


def tick_ns() -> int:
    """The scheduler tick's period: CONFIG_HZ from the kernel's configuration, 250 Hz when it
    cannot be read."""
    import gzip
    import os
    import re

    for path in ("/proc/config.gz", f"/boot/config-{os.uname().release}"):
        try:
            text = (gzip.open if path.endswith(".gz") else open)(path, "rt").read()
        except OSError:
            continue
        hz = re.search(r"^CONFIG_HZ=(\d+)$", text, re.M)
        if hz:
            return 1_000_000_000 // int(hz.group(1))
    return 4_000_000


def by_tick(due, tr, gp, threads: int, over_ns: float, tick: int) -> None:
    """How the stalls and the late entries sit in the tick: the share of stalls over 20 µs
    that began from 100 µs before a tick to 50 µs after it (3.75% of a 4 ms tick's time), the
    share of late entries due 0-150 µs after a tick against the share of all entries, and the
    p99 lateness of the entries due near a tick and of the others."""
    phase = lambda x: (x + tick // 2) % tick - tick // 2       # noqa: E731 - ns from the nearest tick
    late = tr[:, T_HAND] - due
    after = (phase(due) >= 0) & (phase(due) < 150_000)
    bad = late > over_ns
    away = (phase(due) < -50_000) | (phase(due) >= 150_000)
    row = {"tick_us": tick / 1000, "due 0-150 µs after a tick, % of entries": round(100 * after.mean(), 1),
           "% of late entries": round(100 * after[bad].mean(), 1) if bad.any() else None,
           "late p99 µs of entries due -50..+150 µs of a tick / of the rest": [
               round(float(np.percentile(late[~away], 99)) / 1000, 1), round(float(np.percentile(late[away], 99)) / 1000, 1)]}
    starts = tr[::2, WAIT_START]
    for t in range(threads):
        gaps, at = gp[::2, GAP + t], gp[::2, GAP_AT + t] + due[::2]
        sel = (starts < 0) & (gaps > 20_000)
        ph = phase(at[sel])
        row[f"thread {t}: stalls over 20 µs"] = int(sel.sum())
        row[f"thread {t}: % begun -100..+50 µs of a tick"] = (
            round(100 * ((ph >= -100_000) & (ph < 50_000)).mean(), 1) if sel.any() else None)
        row[f"thread {t}: their length p50/p90 µs"] = (
            np.percentile(gaps[sel], [50, 90]).round(-2).astype(int).tolist() if sel.any() else None)
    print(json.dumps(row))


def report(s, tr, gp, calls, threads: int, over_ns: float) -> None:
    due = np.asarray(s._sched.due)
    late = tr[:, T_HAND] - due
    us = lambda x: round(float(x) / 1000, 1)        # noqa: E731
    bad = np.where(late > over_ns)[0]
    head = tr[bad, CLAIM]
    print(json.dumps({
        "entries": len(due), "late_us": {q: us(np.percentile(late, float(q[1:]))) for q in ("p50", "p99", "p99.9")},
        "over": len(bad),
        "over_after_the_wait": int(((tr[bad, T_AFTER_WAIT] - due[bad] < 1000)
                                    & (tr[bad, T_CLAIMED] - tr[bad, T_AFTER_WAIT] > over_ns)).sum()),
        "over_in_the_wait": int((gp[head, SPIN_END] > over_ns).sum() + (gp[head, SPIN_END + 1] > over_ns).sum())}))
    for e in bad[::2]:                          # the two lines' copies of a packet share a batch
        k, d = tr[e, CLAIM], due[e]
        row = {"entry": int(e), "late": us(late[e]), "thread": int(tr[e, TID]),
               "spin_end": [us(gp[k, SPIN_END + t]) for t in range(threads)],
               "t": us(tr[e, T_AFTER_WAIT] - d), "claimed": us(tr[e, T_CLAIMED] - d),
               "sendmmsg": us(tr[e, T_SENT] - tr[e, T_HAND]),
               "gap": [[us(gp[k, GAP + t]), us(gp[k, GAP_AT + t])] for t in range(threads)]}
        for t in range(threads):
            c = calls[calls[:, 0] == t]
            inside = c[(c[:, 1] <= d) & (c[:, 2] >= d)]
            before = c[c[:, 1] <= d]
            row[f"thread {t}"] = (f"in the loop since {us(d - inside[-1][1])} µs" if len(inside) else
                                  f"in Python since {us(d - before[-1][2])} µs" if len(before) else "not started")
        print(json.dumps(row))
    starts = tr[::2, WAIT_START]
    for t in range(threads):
        waited, gaps, at = -starts, gp[::2, GAP + t], gp[::2, GAP_AT + t] - starts
        sel = (starts < 0) & (gaps > 20_000)
        bins = np.arange(0, 2_100_000, 100_000)
        hist, _ = np.histogram(at[sel], bins)
        alive = [(waited > b).sum() for b in bins[:-1]]
        print(json.dumps({"thread": t, "stalls over 20 µs per 100 µs waited, by µs into the wait":
                          {int(b // 1000): round(100 * h / a, 1) for b, h, a in zip(bins[:-1], hist, alive) if a}}))


if __name__ == "__main__":
    main()
