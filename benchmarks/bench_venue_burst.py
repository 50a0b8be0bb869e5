"""A burst of orders into ``obook venue`` on loopback: what an order's ``send()`` costs the
sender and how long after it the venue's kernel stamps the order, with the venue sleeping
between packets or polling (``--spin-us``).

    python benchmarks/bench_venue_burst.py [--orders 257] [--gaps-us 40,10] [--venue-spin-us 0,1000000] [--repeats 2]

A client (this process, busy-waiting between orders) logs in and sends ``--orders`` OUCH
Enter Orders, one TCP segment each, ``--gap-us`` apart, stamping each just before its
``send()``; the venue's answers carry its kernel receive stamp of each order (the same clock).
Per run: stamp - send p50/p99/max (µs), the ``send()`` call's own time p50/p99. Configurations alternate within each
repeat. The burst is join-the-bid's opening on every instrument (~250 orders in ~10 ms).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_live import _port  # noqa: E402  (a free loopback port)


def _venue(spin_us: float):
    port = _port(socket.SOCK_STREAM)
    p = subprocess.Popen([sys.executable, "-m", "obook", "venue", "--listen", f"127.0.0.1:{port}", "--sessions", "1",
                          "--spin-us", str(spin_us)], stderr=subprocess.PIPE, text=True)
    for _ in range(400):
        try:
            return p, socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise SystemExit("the venue did not start")


def run_once(n: int, gap_us: float, spin_us: float) -> dict:
    from obook.live import ouch, soupbin

    venue, s = _venue(spin_us)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(soupbin.login("bench", ""))
        time.sleep(0.3)
        s.setblocking(False)
        packets = [soupbin.packet(soupbin.UNSEQUENCED, ouch.encode(ouch.Order("enter", "AAA", "B", 100, 10_000 + i, i + 1)))
                   for i in range(n)]
        sent, took, answers = np.zeros(n, np.int64), np.zeros(n, np.int64), bytearray()
        due = time.monotonic_ns()
        for i, pk in enumerate(packets):
            while time.monotonic_ns() < due:
                pass
            sent[i] = time.monotonic_ns()
            s.send(pk)
            took[i] = time.monotonic_ns() - sent[i]
            due += int(gap_us * 1000)
            try:
                while chunk := s.recv(1 << 16):
                    answers += chunk
            except BlockingIOError:
                pass
        s.settimeout(2)
        framer, stamps = soupbin.Framer(1 << 16), []
        end = time.monotonic() + 10
        while len(stamps) < n and time.monotonic() < end:
            stamps += [ouch.response_stamp(p)[0] for k, p in framer.feed(bytes(answers))
                       if k == soupbin.SEQUENCED and p[:1] == b"A"]
            answers = bytearray(s.recv(1 << 16)) if len(stamps) < n else answers
        s.sendall(soupbin.packet(soupbin.LOGOUT))
    finally:
        s.close()
        try:
            venue.wait(timeout=10)
        except subprocess.TimeoutExpired:
            venue.kill()
    wait = (np.array(stamps[:n]) - sent) / 1000
    q = lambda a, p: round(float(np.percentile(a, p)), 1)        # noqa: E731
    return {"orders": n, "gap_us": gap_us, "venue_spin_us": spin_us, "answered": len(stamps),
            "stamp_minus_send_us": {"p50": q(wait, 50), "p99": q(wait, 99), "max": q(wait, 100)},
            "send_call_us": {"p50": q(took / 1000, 50), "p99": q(took / 1000, 99)},
            "load": round(os.getloadavg()[0], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--orders", type=int, default=257)
    ap.add_argument("--gaps-us", default="40,10", help="the spacing of the orders, µs; a list alternates")
    ap.add_argument("--venue-spin-us", default="0,1000000", help="the venue's --spin-us; a list alternates")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    for _ in range(args.repeats):
        for gap, spin in itertools.product(args.gaps_us.split(","), args.venue_spin_us.split(",")):
            print(json.dumps(run_once(args.orders, float(gap), float(spin))), flush=True)


if __name__ == "__main__":
    main()
