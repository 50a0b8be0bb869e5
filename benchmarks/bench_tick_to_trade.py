"""Loopback tick to trade of the compiled live loop: ``obook send`` (a child process) sends a
generated ITCH day on lines A and B at a message rate; the listener (this process, the
compiled loop, no tables) runs join-the-bid (``examples/strategy_quote.py``: ``JoinBidFast``
in the loop, or ``JoinBid`` in Python: the slow path) on a few instruments, behind the risk
gate, sending OUCH to ``obook venue`` (a child process; its receive stamp is the kernel's).

    python benchmarks/bench_tick_to_trade.py [--messages 400000] [--rates 100000,1500000]
        [--python] [--garbage] [--spin] [--spin-us 0,50] [--send-spin-us 1000] [--cpu 1] [--repeats 1]

Per run: the message rate asked and the sender's (messages / its sending time), tick to
trade (the kernel's receive stamp of the message that caused an order -> the venue's kernel
receive stamp of the order) and recv-to-book (kernel stamp -> book applied) p50/p99/p99.9/max,
what each line lost (its own gaps) and the re-requests, and the machine's load (1-minute
average before and after). ``--garbage``: a third process floods both lines with datagrams
that are not MoldUDP64 at its full rate during the run. ``--rates`` may contain 0: unpaced.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
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
import socket, sys, time
a, b, until = int(sys.argv[1]), int(sys.argv[2]), time.monotonic() + float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
junk = [bytes([i % 251]) * (20 + i % 200) for i in range(64)]
n = 0
while time.monotonic() < until:
    for j in junk:
        s.sendto(j, ("127.0.0.1", a)); s.sendto(j, ("127.0.0.1", b))
    n += 128
print(n)
"""


def _example():
    spec = importlib.util.spec_from_file_location("strategy_quote", ROOT / "examples" / "strategy_quote.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _obook(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "obook", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def run_once(day: Path, rate: float, per_packet: float, python: bool, garbage: bool, spin: bool, cpu,
             tickers: str, spin_us: float = 0.0, send_spin_us: float = 1000.0) -> dict:
    from obook.live.gateway import Gateway
    from obook.live.hot_listener import HotListener
    from obook.live.risk import RiskGate

    mod = _example()
    a, b, r, v = _port(), _port(), _port(), _port(socket.SOCK_STREAM)
    load0 = os.getloadavg()[0]
    venue = _obook("venue", "--listen", f"127.0.0.1:{v}", "--sessions", "1")
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
                          strategy=mod.JoinBid() if python else mod.JoinBidFast, tickers=tickers,
                          risk=RiskGate(max_orders_per_second=1_000_000), gateway=gw, idle_timeout=30,
                          retries=20, spin=spin, cpu=cpu, session="OBOOK", **_spin_us(spin_us))
        err, cpu_s = [], []

        def loop():
            t = time.thread_time()
            _guard(lst.run, err)
            cpu_s.append(time.thread_time() - t)

        th = threading.Thread(target=loop, daemon=True)
        th.start()
        pkt_rate = 0 if rate == 0 else rate / per_packet
        send = _obook("send", day, "--line-a", f"127.0.0.1:{a}", "--line-b", f"127.0.0.1:{b}",
                      "--request", f"127.0.0.1:{r}", "--rate", pkt_rate, "--linger", "1", "--heartbeat", "0.2",
                      "--spin-us", send_spin_us)
        procs.append(send)
        if garbage:
            procs.append(subprocess.Popen([sys.executable, "-c", GARBAGE, str(a), str(b), "30"],
                                          stdout=subprocess.PIPE, text=True))
        _, send_err = send.communicate(timeout=600)
        th.join(timeout=120)
        if err:
            raise err[0]
        sent = dict(kv.split(" ", 1) for kv in send_err.split("sent: ", 1)[1].splitlines()[0].split(", "))
        st = lst.stats()
        hist = {h.name: h.summary() for h in lst.latency()}
        messages = st["records"]
        return {
            "path": "python" if python else "numba", "rate_asked": rate, "garbage": garbage, "spin": spin,
            "spin_us": spin_us, "send_spin_us": send_spin_us,
            "sender_msgs_per_s": round(messages / float(sent["seconds"])),
            "t2t": _q(hist["tick-to-trade"]), "r2b": _q(hist["recv-to-book"]), "recv": _q(hist["recv"]),
            "book": _q(hist["book"]), "strategy": _q(hist["strategy"]), "venue": _q(hist["venue"]),
            "gateway": _q(hist["gateway"]), "orders": st["orders"],
            "loop_cpu_ns_per_msg": round(cpu_s[0] * 1e9 / max(1, messages), 1) if cpu_s else None,
            "lost_a": st["lines"]["A"]["gap_messages"], "lost_b": st["lines"]["B"]["gap_messages"],
            "requests": st["requests"], "bad_packets": sum(st["lines"][x]["bad_packets"] + st["lines"][x]["implausible"] for x in "AB"),
            "messages": messages, "load": [round(load0, 2), round(os.getloadavg()[0], 2)],
        }
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=30)


def _spin_us(spin_us: float) -> dict:
    """The listener's spin_us option (none for a tree without it, the baseline's)."""
    import inspect

    from obook.live.hot_listener import HotListener

    return {"spin_us": spin_us} if "spin_us" in inspect.signature(HotListener).parameters else {}


def _guard(fn, err):
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - reported by the caller
        err.append(e)


def _q(s: dict) -> dict:
    return {k: (round(s[k] / 1000, 1) if s["count"] else None) for k in ("p50", "p99", "p99.9", "max")} | {"n": s["count"]}


def send_only(msgs: list, speed: float, label: str, spin_us: float = 1000.0) -> dict:
    """The sender alone (this process) to two bound, unread sockets: messages a second of
    its sending loop and how late each packet went (send time - its schedule)."""
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
        sender = Sender(msgs, SendOptions(sinks[0].getsockname(), sinks[1].getsockname(), None, speed=speed,
                                          linger=0, heartbeat=0.5, spin_us=spin_us))
        st = sender.run()
    finally:
        for s in sinks:
            s.close()
    late = sender.lateness.summary()
    return {"send": label, "speed": speed, "spin_us": spin_us, "messages": len(msgs), "seconds": st["seconds"],
            "msgs_per_s": round(len(msgs) / st["seconds"]), "packets": st["packets_a"] + st["packets_b"],
            "prepare_s": round(prep, 2), "late_us": _q(late), "send_errors": st["send_errors"],
            "load": [round(load0, 2), round(os.getloadavg()[0], 2)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=400_000)
    ap.add_argument("--stocks", type=int, default=200)
    ap.add_argument("--rates", default="100000")
    ap.add_argument("--python", action="store_true", help="also the Python strategy (slow path)")
    ap.add_argument("--garbage", action="store_true", help="also each rate with a garbage flood")
    ap.add_argument("--spin", action="store_true")
    ap.add_argument("--cpu", type=int, default=None)
    ap.add_argument("--spin-us", default="0", help="the listener's spin after a datagram, µs; a list alternates")
    ap.add_argument("--send-spin-us", default="1000", help="the sender's spin before a packet's time, µs; a list alternates")
    ap.add_argument("--tickers", default="AAA,AAB,AAC,AAD,AAE,AAF,AAG,AAH")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--send-only", action="store_true",
                    help="the sender alone: unpaced, and --speed 1 on the day's first --window seconds")
    ap.add_argument("--window", type=float, default=10.0)
    args = ap.parse_args()
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
            print(json.dumps(send_only(msgs, 0, "unpaced")), flush=True)
            for spin in (200.0, 1000.0, 2000.0):
                print(json.dumps(send_only(first, 1, f"speed 1, first {args.window:g} s", spin)), flush=True)
        return
    for _ in range(args.repeats):
        for rate in (float(x) for x in args.rates.split(",")):
            configs = [(False, False)] + ([(True, False)] if args.python else []) + ([(False, True)] if args.garbage else [])
            for python, garbage in configs:
                for spin_us in (float(x) for x in args.spin_us.split(",")):
                    for send_spin in (float(x) for x in args.send_spin_us.split(",")):
                        res = run_once(day, rate, per_packet, python, garbage, args.spin, args.cpu, args.tickers,
                                       spin_us, send_spin)
                        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
