"""The loopback latency report of the live path, and the book kernel's time per
event of file replays (``obook bbo --latency``'s measurement) per format.

    python benchmarks/bench_live.py [--messages 50000] [--speed 2000] [--drop 0.01]

A generated ITCH day is sent by ``obook send`` (a child process: as recorded x SPEED, lines A
and B, B 0.2 ms later, DROP on each line, re-request server) to a listener in this process
running the example strategy (``examples/strategy_quote.py``) behind the risk gate and the
OUCH gateway, to ``obook venue`` (a child process). Every stage is stamped on
CLOCK_MONOTONIC; the report is per stage p50/p99/p99.9/max (ns), then end to end. The load
of the machine (``uptime``) is printed with it: the numbers are only comparable at equal load.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _port(kind=socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _strategy():
    spec = importlib.util.spec_from_file_location("strategy_quote", ROOT / "examples" / "strategy_quote.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.JoinBid()


def live(day: Path, speed: float, drop: float, tickers: list[str]):
    from obook.live.gateway import Gateway
    from obook.live.listener import Listener
    from obook.live.risk import RiskGate
    from obook.live.strategy import TickToTrade

    a, b, r = (("127.0.0.1", _port()) for _ in range(3))
    v = _port(socket.SOCK_STREAM)
    obook = [sys.executable, "-m", "obook"]
    venue = subprocess.Popen(obook + ["venue", "--listen", f"127.0.0.1:{v}", "--sessions", "1"],
                             stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", v), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        ttt = TickToTrade(_strategy(), tickers, RiskGate(max_orders_per_second=10_000), Gateway("127.0.0.1", v))
        lst = Listener(a, b, r, tick_to_trade=ttt, retries=20, idle_timeout=30)
        sender = subprocess.Popen(obook + ["send", str(day), "--line-a", f"{a[0]}:{a[1]}", "--line-b", f"{b[0]}:{b[1]}",
                                           "--request", f"{r[0]}:{r[1]}", "--speed", str(speed), "--delay-b", "0.0002",
                                           "--drop-a", str(drop), "--drop-b", str(drop), "--seed", "1", "--linger", "2"],
                                  stderr=subprocess.PIPE, text=True)
        try:
            t0 = time.monotonic()
            for _ in lst.table_batches():
                pass
            wall = time.monotonic() - t0
        finally:
            sender.wait(timeout=120)
        return lst, ttt, wall, sender.stderr.read().strip()
    finally:
        venue.wait(timeout=30)


def book_per_event(paths: dict) -> list:
    from obook.engine.replay import Replay
    from obook.live.latency import BookTimer

    out = []
    for fmt, path in paths.items():
        timer = BookTimer()
        for _ in Replay(path, workers=1, format=fmt, book_kernel=timer.kernel).table_batches():
            pass
        out.append(timer.histogram(f"book ({fmt})"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--stocks", type=int, default=20)
    ap.add_argument("--speed", type=float, default=2000.0, help="x as recorded")
    ap.add_argument("--drop", type=float, default=0.01)
    ap.add_argument("--tickers", default="AAA,AAB,AAC,AAD")
    args = ap.parse_args()
    from obook.gen.csv import write_csv
    from obook.gen.itch import write_itch
    from obook.live.latency import report_text
    from obook.live.listener import warm_up

    warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        day = Path(tmp) / "day.itch"
        write_itch(str(day), args.messages, args.stocks, 3)
        csv = Path(tmp) / "day.csv"
        write_csv(str(csv), args.messages, args.stocks, 3)
        book_per_event({"itch": day})   # compiles the timed kernel before anything is measured
        load_before = os.getloadavg()
        lst, ttt, wall, sent = live(day, args.speed, args.drop, args.tickers.split(","))
        load_after = os.getloadavg()
        per_event = book_per_event({"itch": day, "csv": csv})
    st = lst.stats()
    print(f"uptime load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          f"({os.cpu_count()} cores); kernel stamps: {st['kernel_stamps']}")
    print(f"{args.messages} messages in {wall:.1f} s (speed x{args.speed:g}), drops {args.drop} a line; {sent}")
    print("lines: " + "; ".join(f"{k}: " + ", ".join(f"{n} {v}" for n, v in s.items() if v) for k, s in st["lines"].items()))
    print(f"strategy calls {ttt.calls}, orders {len(ttt.orders)}, refused {dict(ttt.risk.refused)}, "
          f"venue answers {ttt.gateway.answers}")
    print(report_text(lst.latency(), "live loopback, ns (stage = from the previous stamp to this one)"))
    print(report_text(per_event, "file replay, book kernel ns per event (bbo --latency)"))


if __name__ == "__main__":
    main()
