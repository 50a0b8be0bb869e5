"""Hand-built ITCH 5.0 feeds and process helpers for the DuckDB / polars / SQL tests.

``write_small_feed(path)`` writes the feed whose BBO rows are listed in ``SMALL_BBO``
(computed by hand from the messages below, the BBO rules); the macro tests check their
numbers against it.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

import psutil

from obook._kernels.itch_layout import pack


def _frame(body: bytes) -> bytes:
    return struct.pack(">H", len(body)) + body


# the messages, laid out by the one ITCH layout (obook._kernels.itch_layout.pack)
def system_event(ts: int, code: str) -> bytes:
    return _frame(pack("S", 0, 0, ts, event_code=code))


def directory(ts: int, locate: int, stock: str) -> bytes:
    return _frame(pack("R", locate, 0, ts, stock=stock, market_category="Q", financial_status="N",
                       round_lot_size=100, round_lots_only="N", issue_classification="C", issue_subtype="Z",
                       authenticity="P", short_sale_threshold="N", ipo_flag=" ", luld_tier="1", etp_flag="N",
                       etp_leverage_factor=0, inverse="N"))


def add(ts: int, locate: int, ref: int, side: str, shares: int, stock: str, price: int) -> bytes:
    return _frame(pack("A", locate, 0, ts, ref=ref, side=side, shares=shares, stock=stock, price=price))


def execute(ts: int, locate: int, ref: int, shares: int, match: int = 1) -> bytes:
    return _frame(pack("E", locate, 0, ts, ref=ref, shares=shares, match=match))


def cancel(ts: int, locate: int, ref: int, shares: int) -> bytes:
    return _frame(pack("X", locate, 0, ts, ref=ref, shares=shares))


def delete(ts: int, locate: int, ref: int) -> bytes:
    return _frame(pack("D", locate, 0, ts, ref=ref))


def replace(ts: int, locate: int, ref: int, new_ref: int, shares: int, price: int) -> bytes:
    return _frame(pack("U", locate, 0, ts, ref=ref, new_ref=new_ref, shares=shares, price=price))


# message number (1-based) -> message; the comments give the BBO row each one causes
SMALL_MESSAGES = [
    system_event(1_000, "O"),                                  # 1
    directory(1_000, 1, "AAA"),                                # 2
    directory(1_000, 2, "BBB"),                                # 3
    add(10_000, 1, 1, "B", 100, "AAA", 1_000_000),             # 4  AAA bid 100.0000 x100
    add(20_000, 1, 2, "S", 200, "AAA", 1_000_500),             # 5  AAA ask 100.0500 x200
    add(25_000, 2, 3, "B", 50, "BBB", 500_000),                # 6  BBB bid 50.0000 x50
    add(30_000, 1, 4, "B", 300, "AAA", 999_900),               # 7  (below the best bid: no row)
    add(40_000, 1, 5, "B", 100, "AAA", 1_000_100),             # 8  AAA bid 100.0100
    add(45_000, 2, 6, "S", 70, "BBB", 500_301),                # 9  BBB ask 50.0301 x70
    execute(50_000, 1, 2, 50),                                 # 10 AAA ask x150
    delete(60_000, 1, 5),                                      # 11 AAA bid back to 100.0000
    cancel(70_000, 2, 3, 50),                                  # 12 BBB bid empty
    add(80_000, 1, 7, "S", 100, "AAA", 1_000_500),             # 13 AAA ask x250, 2 orders
    replace(90_000, 1, 1, 8, 100, 1_000_200),                  # 14 AAA bid 100.0200
    system_event(100_000, "C"),                                # 15
]

# (seq, time, ticker, locate, bid_px, bid_qty, bid_orders, ask_px, ask_qty, ask_orders)
SMALL_BBO = [
    (4, 10_000, "AAA", 1, 1_000_000, 100, 1, None, None, None),
    (5, 20_000, "AAA", 1, 1_000_000, 100, 1, 1_000_500, 200, 1),
    (6, 25_000, "BBB", 2, 500_000, 50, 1, None, None, None),
    (8, 40_000, "AAA", 1, 1_000_100, 100, 1, 1_000_500, 200, 1),
    (9, 45_000, "BBB", 2, 500_000, 50, 1, 500_301, 70, 1),
    (10, 50_000, "AAA", 1, 1_000_100, 100, 1, 1_000_500, 150, 1),
    (11, 60_000, "AAA", 1, 1_000_000, 100, 1, 1_000_500, 150, 1),
    (12, 70_000, "BBB", 2, None, None, None, 500_301, 70, 1),
    (13, 80_000, "AAA", 1, 1_000_000, 100, 1, 1_000_500, 250, 2),
    (14, 90_000, "AAA", 1, 1_000_200, 100, 1, 1_000_500, 250, 2),
]

BBO_COLUMNS = ["seq", "time", "ticker", "locate", "bid_px", "bid_qty", "bid_orders",
               "ask_px", "ask_qty", "ask_orders"]


def write_feed(path: Path, messages: list[bytes]) -> Path:
    Path(path).write_bytes(b"".join(messages))
    return Path(path)


def write_small_feed(path: Path) -> Path:
    return write_feed(path, SMALL_MESSAGES)


def write_failing_feed(path: Path) -> Path:
    """The small feed with message 7 deleting an order that does not exist."""
    msgs = list(SMALL_MESSAGES)
    msgs[6] = delete(30_000, 1, 999)
    return write_feed(path, msgs)


def write_generated_feed(path: Path, messages: int, stocks: int = 20, seed: int = 7) -> Path:
    from obook.gen.itch import write_itch

    write_itch(str(path), messages, stocks, seed)
    return Path(path)


# ----------------------------------------------------------------------- worker processes

_HELPERS = ("multiprocessing.forkserver", "multiprocessing.resource_tracker")


def _cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return ""


def worker_processes() -> list[psutil.Process]:
    """Live descendants of this process other than multiprocessing's long-lived helpers.

    The forkserver and the resource tracker live as long as the interpreter; workers
    forked by the forkserver are its children and do count.
    """
    found = []
    for child in psutil.Process().children():
        if any(h in _cmdline(child) for h in _HELPERS):
            try:
                found.extend(child.children(recursive=True))
            except psutil.NoSuchProcess:
                pass
        else:
            found.append(child)
    alive = []
    for p in found:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.NoSuchProcess:
            pass
    return alive


def wait_no_workers(timeout: float = 5.0) -> list[psutil.Process]:
    """Poll until no worker process is left (or ``timeout``); returns what is left."""
    deadline = time.monotonic() + timeout
    while True:
        left = worker_processes()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)
