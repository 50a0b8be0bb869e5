"""Loopback tick to trade of the compiled live loop: ``obook send`` (a child process) sends a
generated ITCH day on lines A and B at a message rate; the listener (this process, the
compiled loop, no tables) runs join-the-bid (``examples/strategy_quote.py``: ``JoinBidFast``
in the loop, or ``JoinBid`` in Python: the slow path) on a few instruments, behind the risk
gate, sending OUCH to ``obook venue`` (a child process; its receive stamp is the kernel's).

    python benchmarks/bench_tick_to_trade.py [--messages 400000] [--rates 100000,1500000]
        [--python] [--garbage] [--spin] [--spin-us 0,50] [--send-spin-us 20] [--cpu 1]
        [--placements none,split] [--tickers all] [--packing due,full] [--burst-us 20]
        [--orders first,each,batch] [--kernel-filter 1,0] [--venue-fifo 0,10] [--repeats 1]

``--packing due`` (the default) paces messages as a feed sends them (``obook send
--message-rate``: a few messages a packet at 100,000 a second); ``full`` paces packets filled
to 1,400 bytes (``--rate``: ~43 messages each, so recv-to-book of a packet's later messages
includes the books' time for the earlier ones).

Per run: the message rate asked and the sender's (messages / its sending time), tick to
trade (the kernel's receive stamp of the message that caused an order -> the venue's kernel
receive stamp of the order) and recv-to-book (kernel stamp -> book applied) p50/p99/p99.9/max,
what each line lost (its own gaps) and the re-requests, and the machine's load (1-minute
average before and after). ``--garbage``: a third process floods both lines with datagrams
that are not MoldUDP64 at its full rate during the run (its datagrams and rate reported).
``--placements split``: the listener's loop alone on the last core, the other processes on core 0. ``--rates`` may contain 0: unpaced.
``--venue-fifo 10``: the venue alone under SCHED_FIFO (it stands for the exchange's own
machine, which answers an order without waiting for a core), the listener and the sender
at normal priority.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_live import _port  # noqa: E402  (a free loopback port)

GARBAGE = """
import os, signal, socket, sys, time
a, b, until, cpu = int(sys.argv[1]), int(sys.argv[2]), time.monotonic() + float(sys.argv[3]), int(sys.argv[4])
os.nice(int(sys.argv[5]))
if cpu >= 0:
    os.sched_setaffinity(0, {cpu})
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
junk = [bytes([i % 251]) * (20 + i % 200) for i in range(64)]
n, t0 = 0, time.monotonic()
while not stop and time.monotonic() < until:
    for j in junk:
        s.sendto(j, ("127.0.0.1", a)); s.sendto(j, ("127.0.0.1", b))
    n += 128
print(n, time.monotonic() - t0, flush=True)
"""


ORDERS = {"first": 0, "batch": 1, "each": 2}    # how orders leave: see obook._kernels.live_layout OUT_*
VENUE_ABOVE = 0      # the venue's real-time priority above the sender's (--venue-above)
BURST_US = 20.0      # packing due: the longest a message waits for its packet (µs)
LAST: dict = {}      # the last run's listener (for a look at its arrays after a run)


def _example():
    spec = importlib.util.spec_from_file_location("strategy_quote", ROOT / "examples" / "strategy_quote.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _obook(*args, fifo: int = 0, **kw):
    pre = (lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(fifo))) if fifo else None
    return subprocess.Popen([sys.executable, "-m", "obook", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=pre, **kw)


def run_once(day: Path, rate: float, per_packet: float, python: bool, garbage: bool, spin: bool, cpu,
             tickers: str, spin_us: float | None = None, send_spin_us: float = 20.0,
             placement: str = "none", fifo: int = 0, rest_us: float | None = None, slice_s: float | None = None,
             packing: str = "full", burst_us: float = 50.0, kernel_filter: bool = True, orders: str = "first",
             venue_spin_us: float = 0.0, flood_nice: int = 0, venue_fifo: int = 0) -> dict:
    """One run. ``placement`` split: the listener's loop alone on the last core, the sender, the
    venue and the flooder on core 0; split-venue: the same but the venue (normal priority) on
    the loop's core, so that the kernel's loopback TCP work for an order runs in the loop's own
    send call instead of waiting for core 0; none: ``cpu`` pins the listener only, the others
    go where the scheduler puts them."""
    split = placement != "none"
    from obook.live.gateway import Gateway
    from obook.live.hot_listener import HotListener
    from obook.errors import ObookError
    from obook.live.risk import RiskGate
    from obook._kernels import live_layout as L

    mod = _example()
    a, b, r, v = _port(), _port(), _port(), _port(socket.SOCK_STREAM)
    load0 = os.getloadavg()[0]
    others = ["--cpu", 0] if split else []
    if split:
        cpu = (os.cpu_count() or 2) - 1
    venue_prio = venue_fifo or (0 if placement == "split-venue" else (fifo + VENUE_ABOVE if fifo else 0))
    venue = _obook("venue", "--listen", f"127.0.0.1:{v}", "--sessions", "1", "--spin-us", venue_spin_us,
                   *(["--cpu", cpu] if placement == "split-venue" else others),
                   fifo=venue_prio)
    procs = [venue]
    try:
        for _ in range(400):
            try:
                socket.create_connection(("127.0.0.1", v), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        gw = Gateway("127.0.0.1", v)
        lst = HotListener(("127.0.0.1", a), ("127.0.0.1", b), ("127.0.0.1", r), tables=(),
                          strategy=mod.JoinBid() if python else mod.JoinBidFast,
                          tickers=None if tickers == "all" else tickers,
                          risk=RiskGate(max_orders_per_second=1_000_000), gateway=gw, idle_timeout=30,
                          retries=20, spin=spin, cpu=cpu, session="OBOOK", **_spin_us(spin_us),
                          **_option("kernel_filter", kernel_filter),
                          **({"realtime": fifo, "rest_us": rest_us} if fifo else {}),
                          **({"slice_s": slice_s} if slice_s else {}))
        if hasattr(L, "S_OUT_HOLD"):
            lst.loop.S[L.S_OUT_HOLD] = ORDERS[orders]
        err, cpu_s, faults = [], [], []

        def loop():
            t, r = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD)
            _guard(lst.run, err)
            cpu_s.append(time.thread_time() - t)
            r2 = resource.getrusage(resource.RUSAGE_THREAD)
            faults.extend((r2.ru_minflt - r.ru_minflt, r2.ru_nivcsw - r.ru_nivcsw, r2.ru_nvcsw - r.ru_nvcsw))

        th = threading.Thread(target=loop, daemon=True)
        th.start()
        pkt_rate = 0 if rate == 0 else rate / per_packet
        pace = ["--rate", pkt_rate] if packing == "full" or rate == 0 else ["--message-rate", rate, "--burst-us", burst_us]
        send = _obook("send", day, "--line-a", f"127.0.0.1:{a}", "--line-b", f"127.0.0.1:{b}",
                      "--request", f"127.0.0.1:{r}", *pace, "--linger", "1", "--heartbeat", "0.2",
                      "--spin-us", send_spin_us, *others, fifo=fifo)
        procs.append(send)
        if garbage:
            flood = subprocess.Popen([sys.executable, "-c", GARBAGE, str(a), str(b), "600", "0" if split else "-1",
                                      str(flood_nice)],
                                     stdout=subprocess.PIPE, text=True)
            procs.append(flood)
        _, send_err = send.communicate(timeout=600)
        junk = None
        if garbage:
            flood.terminate()
            n, secs = flood.communicate(timeout=30)[0].split()
            junk = {"datagrams": int(n), "per_s": round(int(n) / float(secs))}
        th.join(timeout=120)
        if err and not isinstance(err[0], ObookError):
            raise err[0]
        sent = dict(kv.split(" ", 1) for kv in send_err.split("sent: ", 1)[1].splitlines()[0].split(", "))
        st = lst.stats()
        hist = {h.name: h.summary() for h in lst.latency()}
        messages = st["records"]
        stalls = _stalls(lst.loop.arb[1], messages)
        opening = _after_opening(lst.loop.refs)
        LAST["listener"] = lst
        return {
            "path": "python" if python else "numba", "rate_asked": rate, "garbage": junk, "spin": spin,
            "placement": placement if split else ("listener on %s" % cpu if cpu is not None else "none"),
            "fifo": fifo, "venue_spin_us": venue_spin_us, "flood_nice": flood_nice if garbage else None, "venue_fifo": venue_prio, "slice_ms": lst.loop.S[L.S_SLICE_NS] / 1e6, "rest_us": lst.loop.S[L.S_REST_NS] / 1000 if fifo else None, "rests": int(lst.loop.S[L.S_RESTS]),
            "spin_us": spin_us, "send_spin_us": send_spin_us,
            "packing": "full" if packing == "full" or rate == 0 else f"due, burst {burst_us:g} us",
            "packets_a": int(sent.get("packets_a", 0)), "order_sends": st.get("order_sends"),
            "sender_msgs_per_s": round(messages / float(sent["seconds"])),
            "t2t": _q(hist["tick-to-trade"]), "r2b": _q(hist["recv-to-book"]), "recv": _q(hist["recv"]),
            "book": _q(hist["book"]), "strategy": _q(hist["strategy"]), "venue": _q(hist["venue"]),
            "gateway": _q(hist["gateway"]), "orders": st["orders"],
            "loop_cpu_ns_per_msg": round(cpu_s[0] * 1e9 / max(1, messages), 1) if cpu_s else None,
            "lost_a": st["lines"]["A"]["gap_messages"], "lost_b": st["lines"]["B"]["gap_messages"],
            "requests": st["requests"], "loop_page_faults": faults[0] if faults else None,
            "loop_preempted": faults[1] if faults else None, "loop_sleeps": faults[2] if faults else None, "bad_packets": sum(st["lines"][x]["bad_packets"] + st["lines"][x]["implausible"] for x in "AB"),
            "kernel_filter": kernel_filter, "orders_sent": orders, "kernel_drops": st.get("kernel_drops"),
            "error": str(err[0]) if err else None, "stalls": stalls, "t2t_after_opening": opening, "grown": lst.loop.grown, "messages": messages, "load": [round(load0, 2), round(os.getloadavg()[0], 2)],
        }
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=30)


def _after_opening(refs, opening_ns: int = 10_000_000) -> dict:
    """Tick to trade of the orders whose tick came 10 ms or more after the first order's
    (join-the-bid on every instrument opens with a burst, one order an instrument within
    ~1 ms, which queues behind TCP's first congestion window), and how many came before."""
    import numpy as np

    m = (refs[1] != 0) & (refs[3] != 0)
    kern, venue = refs[2][m], refs[3][m]
    if not len(kern):
        return {}
    late = kern >= kern.min() + opening_ns

    def q(t, p):
        t = np.sort(t) / 1000
        return round(float(t[min(len(t) - 1, int(p / 100 * len(t)))]), 1) if len(t) else None

    after, opening = venue[late] - kern[late], venue[~late] - kern[~late]
    return {"p50": q(after, 50), "p99": q(after, 99), "max": q(after, 100), "n": int(late.sum()),
            "opening_orders": int((~late).sum()), "opening_p50": q(opening, 50), "opening_max": q(opening, 100)}


def _stalls(recs, n: int, over_ns: int = 1_000_000) -> dict:
    """Episodes where messages waited more than 1 ms from the kernel's stamp to delivery
    (arbitration): how many, when (ms after the first message), how long the worst wait."""
    import numpy as np

    n = min(n, recs.shape[1] - 1)
    kern, dlv = recs[2, 1:n + 1], recs[3, 1:n + 1]
    wait = dlv - kern
    late = np.flatnonzero(wait > over_ns)
    if not len(late):
        return {"episodes": 0}
    starts = late[np.r_[True, np.diff(kern[late]) > over_ns]]
    at = ((kern[starts] - kern[0]) / 1e6).round(1)
    return {"episodes": len(starts), "late_msgs": len(late), "at_ms": at[:12].tolist(),
            "worst_ms": round(float(wait.max()) / 1e6, 2)}


def _spin_us(spin_us: float | None) -> dict:
    """The listener's spin_us option (none for a tree without it, the baseline's)."""
    import inspect

    from obook.live.hot_listener import HotListener

    return {"spin_us": spin_us} if "spin_us" in inspect.signature(HotListener).parameters and spin_us is not None else {}


def _option(name: str, value) -> dict:
    """A listener option, left out for a tree without it (a baseline's)."""
    import inspect

    from obook.live.hot_listener import HotListener

    return {name: value} if name in inspect.signature(HotListener).parameters else {}


def _guard(fn, err):
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - reported by the caller
        err.append(e)


def _q(s: dict) -> dict:
    return {k: (round(s[k] / 1000, 1) if s["count"] else None) for k in ("p50", "p99", "p99.9", "max")} | {"n": s["count"]}


def send_only(msgs: list, speed: float, label: str, spin_us: float = 1000.0, cpus: str = "-") -> dict:
    """The sender alone (this process) to two bound, unread sockets: messages a second of
    its sending loop and how late each packet went (send time - its schedule). ``cpus``:
    - (unpinned), N (pinned to core N), N+M (pinned to N, a spare sending thread on M)."""
    from obook.live.send import Sender, SendOptions

    sinks = []
    for _ in range(2):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        sinks.append(s)
    load0 = os.getloadavg()[0]
    try:
        sender = Sender(msgs, SendOptions(sinks[0].getsockname(), sinks[1].getsockname(), None, speed=speed,
                                          linger=0, heartbeat=0.5))
        t = time.perf_counter()
        sender.schedule()
        prep = time.perf_counter() - t
        cores = [None] if cpus == "-" else [int(c) for c in cpus.split("+")]
        sender = Sender(msgs, SendOptions(sinks[0].getsockname(), sinks[1].getsockname(), None, speed=speed,
                                          linger=0, heartbeat=0.5, spin_us=spin_us, cpu=cores[0],
                                          spare_cpu=cores[1] if len(cores) > 1 else None))
        st = sender.run()
    finally:
        for s in sinks:
            s.close()
    late = sender.lateness.summary()
    return {"send": label, "speed": speed, "spin_us": spin_us, "cpus": cpus, "messages": len(msgs), "seconds": st["seconds"],
            "msgs_per_s": round(len(msgs) / st["seconds"]), "packets": st["packets_a"] + st["packets_b"],
            "prepare_s": round(prep, 2), "late_us": _q(late), "send_errors": st["send_errors"],
            "load": [round(load0, 2), round(os.getloadavg()[0], 2)]}


def _gap_walk():
    """A compiled loop that reads the clock for ``span`` ns and keeps each gap over 2 µs between
    two reads as (before, after) in ``out``; returns how many."""
    from obook._kernels import live_send as K
    from obook._kernels.jit import njit

    @njit(nogil=True)
    def walk(fns, ts, span, out):
        k, start = 0, K._clock(fns, ts)
        last = start
        while last - start < span:
            t = K._clock(fns, ts)
            if t - last > 2_000 and k < out.shape[0]:
                out[k, 0] = last
                out[k, 1] = t
                k += 1
            last = t
        return k

    import numpy as np

    from obook.live.send import _libc_address

    fns = np.array([0, _libc_address("clock_gettime"), 0], np.int64)
    walk(fns, np.zeros(2, np.int64), 1_000, np.zeros((1, 2), np.int64))
    return lambda span, out: walk(fns, np.zeros(2, np.int64), span, out)


def cpu_gaps(seconds: float = 2.0) -> dict:
    """How long this process's core was away while it did nothing but read the clock: the
    gaps over 2 µs between two reads (a virtual machine's exits and preemptions, the
    kernel's interrupts). A packet due inside a gap is late by what is left of it, so the
    share of time in gaps bounds how few packets can be late."""
    import numpy as np

    out = np.zeros((1_000_000, 2), np.int64)
    k = _gap_walk()(int(seconds * 1e9), out)
    g = (out[:k, 1] - out[:k, 0]) / 1000
    return {"cpu_gaps_s": seconds, "gaps": k, "gaps_per_s": round(k / seconds), "share_pct": round(g.sum() / seconds / 1e4, 3),
            "gap_us": {q: round(float(np.percentile(g, v)), 1) if k else None
                       for q, v in (("p50", 50), ("p99", 99))} | {"max": round(float(g.max()), 1) if k else None}}


def cpu_gaps_both(seconds: float = 2.0) -> dict:
    """``cpu_gaps`` on every core of the process at once (a thread pinned to each), and what
    a packet due at a random time meets: on one core, the rest of a gap it falls in; with a
    spare sending loop (``--spare-cpu``), the shorter of the two cores' rests (p99 and share of
    times in a gap, µs and percent, from 200,000 random times)."""
    import threading

    import numpy as np

    walk = _gap_walk()
    cores = sorted(os.sched_getaffinity(0))[:2]
    gaps = {}

    def run(cpu):
        os.sched_setaffinity(0, {cpu})
        out = np.zeros((2_000_000, 2), np.int64)
        gaps[cpu] = out[:walk(int(seconds * 1e9), out)]

    threads = [threading.Thread(target=run, args=(c,)) for c in cores]
    lo = time.monotonic_ns() + 50_000_000           # (the threads' walks have all started)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    due = np.sort(np.random.default_rng(1).integers(lo, lo + int(seconds * 1e9) - 100_000_000, 200_000))

    def rest(g):
        i = np.searchsorted(g[:, 0], due, side="right") - 1
        r = np.zeros(len(due))
        inside = (i >= 0) & (g[np.maximum(i, 0), 1] > due)
        r[inside] = (g[i[inside], 1] - due[inside]) / 1000
        return r

    rests = {c: rest(g) for c, g in gaps.items()}
    both = np.minimum(*rests.values()) if len(rests) == 2 else next(iter(rests.values()))

    def q(r):
        return {"in_gap_pct": round(100 * float((r > 0).mean()), 3), "p99_us": round(float(np.percentile(r, 99)), 1),
                "p99.9_us": round(float(np.percentile(r, 99.9)), 1)}

    return {"cpu_gaps_both_s": seconds, "gaps_per_s": {c: round(len(g) / seconds) for c, g in gaps.items()},
            **{f"core {c}": q(r) for c, r in rests.items()}, "sooner of the two": q(both)}

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=400_000)
    ap.add_argument("--stocks", type=int, default=200)
    ap.add_argument("--rates", default="100000")
    ap.add_argument("--python", action="store_true", help="also the Python strategy (slow path)")
    ap.add_argument("--garbage", action="store_true", help="also each rate with a garbage flood")
    ap.add_argument("--no-clean", action="store_true", help="only the --python and --garbage runs")
    ap.add_argument("--spin", action="store_true")
    ap.add_argument("--cpu", type=int, default=None, help="pin the listener's loop to this core (placement none)")
    ap.add_argument("--placements", default="none",
                    help="none (the scheduler places; --cpu pins the listener), split (listener alone on the last "
                         "core, sender, venue and flooder on core 0), split-venue (the same, the venue on the "
                         "listener's core at normal priority); a list alternates")
    ap.add_argument("--spin-us", default="0", help="the listener's spin after a datagram, µs; a list alternates")
    ap.add_argument("--send-spin-us", default="2", help="the sender's spin before a packet's time (it sleeps until then), µs; a list alternates")
    ap.add_argument("--fifo", default="0", help="the listener's loop, the sender and the venue at this SCHED_FIFO priority (0: normal; the "
                                            "flooder stays normal); a list alternates")
    ap.add_argument("--rest-us", type=float, default=None,
                    help="with --fifo and --spin: the loop's rest in each millisecond (default the listener's, 100)")
    ap.add_argument("--slice-s", type=float, default=None, help="the listener's time slice between visits to Python")
    ap.add_argument("--tickers", default="AAA,AAB,AAC,AAD,AAE,AAF,AAG,AAH",
                    help="the strategy's instruments, or all (every instrument: more orders, a meaningful p99)")
    ap.add_argument("--packing", default="due",
                    help="due (the sender paces messages: a packet goes out when its last message falls due, holding "
                         "those within --burst-us of its first), full (packets filled to 1400 bytes, paced); a list alternates")
    ap.add_argument("--burst-us", type=float, default=BURST_US, help="with --packing due: the longest a message waits for its packet")
    ap.add_argument("--kernel-filter", default="1", help="1: the lines' socket filter drops malformed datagrams in the "
                                                         "kernel (the listener's default), 0: the loop screens all; a list alternates")
    ap.add_argument("--orders", default="first", help="how the orders one batch of datagrams causes leave: first (the "
                    "first at once, the rest in one send after the batch: the listener's default), batch (all in one send "
                    "after the batch), each (one send an order); a list alternates")
    ap.add_argument("--venue-above", type=int, default=0, help="with --fifo: the venue's priority this much above the "
                    "sender's (so a sender waking for every packet never keeps it from the orders)")
    ap.add_argument("--venue-spin-us", default="0", help="the venue's busy-poll after each packet before it sleeps, µs "
                    "(0: it sleeps at once; a woken venue waits for its core); a list alternates")
    ap.add_argument("--venue-fifo", default="0", help="the venue alone at this SCHED_FIFO priority (0: as --fifo "
                    "and --venue-above say); a list alternates")
    ap.add_argument("--flood-nice", default="0", help="with --garbage: the flooder's nice value (19: it takes a core only "
                    "when nothing else wants it, as a flood from another machine would); a list alternates")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--send-only", action="store_true",
                    help="the sender alone: unpaced, and --speed 1 on the day's first --window seconds")
    ap.add_argument("--window", type=float, default=10.0)
    ap.add_argument("--send-cpus", default="-", help="with --send-only: the --speed 1 runs' placement, a list "
                    "alternates: - (unpinned), N (the loop on core N), N+M (on N, with --spare-cpu M)")
    ap.add_argument("--send-spins", default="200,1000,2000",
                    help="with --send-only: the sender's --spin-us values for the --speed 1 runs")
    args = ap.parse_args()
    global VENUE_ABOVE
    VENUE_ABOVE = args.venue_above
    from common import itch_day
    from obook.live.send import make_packets, read_messages

    day = itch_day(args.messages, args.stocks)
    msgs = read_messages(day)
    per_packet = len(msgs) / len(make_packets(msgs))
    print(f"day {day.name}: {len(msgs)} messages, {per_packet:.1f} a packet; cpus {os.cpu_count()}", flush=True)
    if args.send_only:
        from obook.live.send import timestamp

        t0 = timestamp(msgs[args.stocks + 2])                  # after the directory: the trading
        first = [m for m in msgs[args.stocks + 2:] if timestamp(m) - t0 < args.window * 1e9]
        for _ in range(args.repeats):
            print(json.dumps(cpu_gaps()), flush=True)
            if len(os.sched_getaffinity(0)) > 1:
                print(json.dumps(cpu_gaps_both()), flush=True)
            print(json.dumps(send_only(msgs, 0, "unpaced")), flush=True)
            for spin in map(float, args.send_spins.split(",")):
                for cpus in args.send_cpus.split(","):
                    print(json.dumps(send_only(first, 1, f"speed 1, first {args.window:g} s", spin, cpus)), flush=True)
        return
    lists = [args.spin_us.split(","), args.send_spin_us.split(","), args.placements.split(","), args.fifo.split(","),
             args.packing.split(","), args.kernel_filter.split(","), args.orders.split(","), args.venue_spin_us.split(","),
             args.venue_fifo.split(","), args.flood_nice.split(",")]
    for _ in range(args.repeats):
        for rate in (float(x) for x in args.rates.split(",")):
            configs = ([] if args.no_clean else [(False, False)]) + ([(True, False)] if args.python else []) + ([(False, True)] if args.garbage else [])
            for python, garbage in configs:
                for spin_us, send_spin, placement, fifo, packing, kf, orders, venue_spin, vfifo, nice in itertools.product(*lists):
                    if not garbage and nice != lists[-1][0]:
                        continue                    # the flooder's nice value: flood runs only
                    res = run_once(day, rate, per_packet, python, garbage, args.spin, args.cpu, args.tickers,
                                   float(spin_us), float(send_spin), placement, int(fifo), args.rest_us, args.slice_s,
                                   packing, args.burst_us, kf == "1", orders, float(venue_spin), int(nice),
                                   int(vfifo))
                    print(json.dumps(res), flush=True)

if __name__ == "__main__":
    main()
