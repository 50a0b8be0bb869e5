"""Compile every numba kernel ahead of use (``obook compile``): run each part of obook once
on a tiny generated input, compiled, so the kernels' caches hold every signature a real
run needs. A later first run loads machine code instead of compiling it.

The parts: each feed format's replay (every table, to Arrow and to Parquet, in this
process and in worker processes, and its side tables), the matching engine, the own-order
simulation, the backtest, the feed generators, the book kernel's
latency timer and the live path (sender, venue, compiled listener).

On a machine with two cores or more, the own-order simulation and the backtest (the
longest part by far) compile in a second process beside the others, once the ITCH replay
they run on is compiled: the two groups share no other kernel, so neither waits for or
overwrites the other's cache entries.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from .errors import ObookError

log = logging.getLogger("obook")

TABLES = ("bbo", "trades", "orders", "depth")
#: the feeds are generated larger than one read block (1 MiB): batches then end mid-block
#: and records straddle blocks, the framers' paths a bigger file takes


def _replay(feed, fmt: str | None = None, tables=TABLES) -> None:
    """Every table of ``feed`` with one worker and with two, as text, and to Parquet."""
    import io

    import obook

    from .output import write_text

    for workers in (1, 2):
        for table in tables:
            getattr(obook, table)(feed, workers=workers, format=fmt).read_all()
    write_text(obook.bbo(feed, workers=1, format=fmt), io.BytesIO())
    obook.bars(feed, format=fmt).read_all()
    if isinstance(feed, (str, os.PathLike)):        # convert reads one file
        _side_tables(feed, fmt)
        with tempfile.TemporaryDirectory(prefix="obook-compile-") as tmp:
            obook.convert(feed, tmp, tables=tables, workers=1, format=fmt)


def _side_tables(feed, fmt: str | None) -> None:
    """Every side table of the feed's format (``obook lobster`` reads ITCH's trading actions)."""
    from .feeds import read_side_table, resolve_format

    for name in resolve_format(fmt, feed).side_tables:
        read_side_table(feed, name, format=fmt)


def _far_levels() -> None:
    """The book's far-level hash table growing (a busy day's books outgrow its first size;
    the small generated days do not)."""
    import numpy as np

    from .engine.books import K

    K.fh_rehash(np.zeros((64, 4), dtype=np.int64), np.zeros((128, 4), dtype=np.int64))


def _itch(tmp: Path) -> None:
    from .gen.itch import write_itch

    write_itch(tmp / "day.itch", 60_000, 20, seed=1)
    _replay(tmp / "day.itch")
    _far_levels()


def _pitch(tmp: Path) -> None:
    from .gen.pitch import write_pitch

    write_pitch(tmp / "day.pitch", 60_000, 20, seed=1)
    _replay(tmp / "day.pitch")


def _csv(tmp: Path) -> None:
    from .gen.csv import write_csv

    write_csv(tmp / "day.csv", 40_000, 5, seed=1)
    _replay(tmp / "day.csv")


def _databento(tmp: Path) -> None:
    from .gen.databento import mbo_flow, write_dbn

    write_dbn(tmp / "day.mbo.dbn", mbo_flow(30_000, 3, seed=1))
    _replay(tmp / "day.mbo.dbn")
    import obook

    obook.mbp10(tmp / "day.mbo.dbn").read_all()
    obook.mbp1(tmp / "day.mbo.dbn").read_all()


def _szse(tmp: Path) -> None:
    from .gen.szse import generate, write_szse, write_vendor

    write_szse(tmp / "sz.log", 12_000, 4, seed=1)
    _replay(tmp / "sz.log", "szse")
    write_szse(tmp / "sz.bin", 30_000, 4, seed=1, binary=True)
    _replay(tmp / "sz.bin", "szse-bin", ("bbo", "trades", "depth"))
    files = write_vendor(tmp / "vendor", generate(3_000, 1, seed=1))
    _replay([str(p) for p in files], "szse-csv")


def _sse(tmp: Path) -> None:
    import obook

    from .gen.sse import write_sse

    write_sse(tmp / "sh.log", 12_000, 3, seed=1)
    _replay(tmp / "sh.log", "sse")
    obook.audit(tmp / "sh.log", format="sse").read_all()


def _captures(tmp: Path) -> None:
    import obook

    from .gen.itch import write_itch
    from .gen.pcap import write_pcap

    write_itch(tmp / "cap.itch", 5_000, 5, seed=2)
    write_pcap(tmp / "cap.itch", tmp / "a.pcap", tmp / "b.pcap", seed=1)
    lines = obook.lines(f"{tmp / 'a.pcap'}:233.54.12.111:26477", f"{tmp / 'b.pcap'}:233.54.12.112:26477")
    _replay(lines, None, ("bbo",))
    obook.gaps(lines).read_all()
    obook.line_stats(lines).read_all()


def _match(tmp: Path) -> None:
    import obook

    from .gen.orders import write_orders

    write_orders(tmp / "orders.parquet", 20_000, 3, seed=1)
    write_orders(tmp / "orders.csv", 2_000, 2, seed=1)
    for workers in (1, 2):
        obook.match(tmp / "orders.parquet", workers=workers, tables=("fills", "events", "bbo", "depth"), levels=5)
    obook.match(tmp / "orders.csv", workers=1)


def _simulate(tmp: Path) -> None:
    import obook

    from .gen.itch import write_itch

    write_itch(tmp / "sim.itch", 20_000, 3, seed=3)
    head = obook.bbo(tmp / "sim.itch", workers=1).read_all().slice(0, 200).to_pylist()
    rows = ["time,instrument,order_id,action,side,type,tif,price,quantity"]
    for i, r in enumerate(row for row in head if row["bid_px"] is not None):
        rows.append(f"{r['time'] + 1},{r['ticker']},{i + 1},new,buy,limit,day,{r['bid_px']},100")
    (tmp / "own.csv").write_text("\n".join(rows) + "\n")
    for workers in (1, 2):
        obook.simulate(tmp / "sim.itch", tmp / "own.csv", latency=1000, workers=workers,
                       feed_tables=("bbo", "trades", "orders", "depth"),
                       own_tables=("bbo_with_own", "depth_with_own"), levels=5)


def _latency(tmp: Path) -> None:
    from .engine.replay import Replay
    from .gen.itch import write_itch
    from .live.latency import BookTimer

    write_itch(tmp / "lat.itch", 5_000, 5, seed=4)
    timer = BookTimer()
    Replay(str(tmp / "lat.itch"), workers=1, book_kernel=timer.kernel).reader().read_all()
    timer.histogram()


def _live(tmp: Path) -> None:
    """``obook send``'s loop, ``obook venue`` and the compiled listener (``obook listen``:
    books, a strategy's orders through the risk gate to the venue, its answers, the tables)
    over loopback on a small day."""
    import socket
    import threading

    from .gen.itch import write_itch
    from .live.gateway import Gateway
    from .live.hot_listener import HotListener
    from .live.ouch import Order
    from .live.send import Sender, SendOptions, read_messages
    from .live.venue import Venue

    def port() -> tuple[str, int]:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()

    sent: list[str] = []

    def bid_once(top):                # one order per instrument, the first time it has a bid
        if top.bid_px is None or top.ticker in sent:
            return None
        sent.append(top.ticker)
        return [Order("enter", top.ticker, "B", 100, top.bid_px, len(sent))]

    write_itch(tmp / "live.itch", 5_000, 5, seed=5)
    venue = Venue(sessions=1, idle_timeout=600)     # (the listener's first load sends no heartbeat)
    serving = threading.Thread(target=venue.serve, kwargs={"timeout": 600}, daemon=True)
    serving.start()
    try:
        lines = [port() for _ in range(3)]
        listener = HotListener(*lines, tables=("bbo", "trades"), strategy=bid_once, gateway=Gateway(*venue.address),
                               idle_timeout=600, retries=20)
        sender = Sender(read_messages(tmp / "live.itch"), SendOptions(*lines, rate=20_000, drop_a=0.1, linger=0.5,
                                                                      heartbeat=0.1))
        sending = threading.Thread(target=sender.run, daemon=True)
        sending.start()
        for _ in listener.table_batches():
            pass
        sending.join(timeout=60)
    finally:
        venue.stop()
        serving.join(timeout=10)


class _Quoter:
    """A backtest strategy with every callback: joins the best bid, hears its orders."""

    timer = 600_000_000_000      # ns: every 10 minutes, a few dozen calls in the day

    def __init__(self):
        self.ref = 0

    def on_book(self, ctx):
        from .backtest.orders import Order

        bid, _bid_qty, _ask, _ask_qty = ctx.top()
        if bid is None or self.ref >= 50:
            return None
        self.ref += 1
        return [Order("enter", ctx.instrument, "B", 100, bid, ref=self.ref, tif="DAY")]

    def on_order(self, ctx, update):
        ctx.position()

    def on_timer(self, ctx):
        ctx.depth(5)


def _backtest(tmp: Path) -> None:
    """The backtest's kernels (Python and compiled strategies share them: a compiled
    strategy compiles only itself and its small C entry, obook.backtest.entry)."""
    from .backtest import Fees, backtest
    from .gen.itch import write_itch

    write_itch(tmp / "bt.itch", 20_000, 3, seed=5)
    backtest(str(tmp / "bt.itch"), _Quoter(), order_latency=50_000, response_latency=20_000, feed_latency=1_000,
             fees=Fees(maker="-0.2", taker="0.3"))
    backtest(str(tmp / "bt.itch"), lambda top: None, order_latency=("exponential", 50_000))
    backtest(_l2_day(), _Quoter(), queue="power:2", order_latency=50_000, response_latency=20_000)
    from .engine.buffers import Prefaulter

    Prefaulter.compile()        # a large day's output buffers: its thread's loop


def _l2_day():
    """A few rows of an L2 (mbp-1) day: the L2 queue model's kernels."""
    import pyarrow as pa

    n = 64
    t = [1_000 * (i + 1) for i in range(n)]
    trade = [i % 4 == 3 for i in range(n)]
    return pa.table({"ts_recv": t, "action": ["T" if x else "A" for x in trade],
                     "side": ["A" if x else "B" for x in trade], "price": [1000] * n, "size": [10] * n,
                     "symbol": ["AAA"] * n, "bid_px_00": [1000] * n, "bid_sz_00": [300 - 2 * i for i in range(n)],
                     "ask_px_00": [1010] * n, "ask_sz_00": [100] * n})


#: what ``obook compile`` can compile, in order
PARTS: dict[str, Callable[[Path], None]] = dict((
    ("itch", _itch), ("pitch", _pitch), ("csv", _csv), ("databento", _databento), ("szse", _szse), ("sse", _sse),
    ("captures", _captures), ("match", _match), ("simulate", _simulate), ("latency", _latency),
    ("live", _live),
    ("backtest", _backtest),
))


#: parts compiled in a second process (``BESIDE``) once ``FIRST`` is compiled: they share no
#: kernel with the other parts but the ITCH replay's
FIRST = "itch"
BESIDE = ("simulate", "backtest")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _split(names: list[str]) -> tuple[list[str], list[str]]:
    """(the parts this process compiles, the parts a second process compiles beside them)."""
    beside = [n for n in names if n in BESIDE]
    if _cores() < 2 or FIRST not in names or not beside or len(beside) == len(names) - 1:
        return names, []
    return [n for n in names if n not in BESIDE], beside


class _Beside:
    """The second process: ``python -m obook.compiling PART...``, its lines ``PART SECONDS``
    passed on to ``progress`` as they come."""

    def __init__(self, parts: list[str], progress):
        self.parts = parts
        self.took: dict[str, float] = {}
        self.proc = subprocess.Popen([sys.executable, "-m", "obook.compiling", *parts], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.err: list[str] = []
        self._threads = [threading.Thread(target=self._read_out, args=(progress,), daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for t in self._threads:
            t.start()

    def _read_out(self, progress) -> None:
        for line in self.proc.stdout:
            name, _, seconds = line.strip().partition(" ")
            if name in self.parts:
                self.took[name] = float(seconds)
                if progress:
                    progress(name, self.took[name])

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line)

    def wait(self) -> dict[str, float]:
        code = self.proc.wait()
        for t in self._threads:
            t.join()
        if code != 0:
            tail = "".join(self.err[-20:]).strip()
            raise ObookError(f"compiling {', '.join(self.parts)} failed (exit status {code}): {tail}")
        return self.took

    def stop(self) -> None:
        """End the second process: SIGTERM (it unwinds, its temporary folder goes), SIGKILL
        after 10 s."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait()


def compile_kernels(parts=None, progress: Callable[[str, float], None] | None = None) -> dict[str, float]:
    """Compile the kernels of ``parts`` (names of ``PARTS``; None: all); returns the seconds
    each part took (a part already compiled takes a few tenths: its kernels load)."""
    from ._kernels.jit import INTERPRETED

    if INTERPRETED or os.environ.get("OBOOK_KERNELS", "").strip().lower() == "python":
        raise ObookError("the kernels run as Python (OBOOK_KERNELS=python or NUMBA_DISABLE_JIT is set) "
                         "and are not compiled")
    from ._kernels import cached_load

    names = list(PARTS) if not parts else list(parts)
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        raise ObookError(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    here, beside = _split(names)
    took: dict[str, float] = {}
    second = None
    before, cached_load.AHEAD = cached_load.AHEAD, True    # (here, the hint to run obook compile is moot)
    try:
        with tempfile.TemporaryDirectory(prefix="obook-compile-") as tmp:
            for name in here:
                _run_part(name, Path(tmp), took, progress)
                if name == FIRST and beside:
                    log.info("compiling %s in a second process", ", ".join(beside))
                    second = _Beside(beside, progress)
        if second is not None:
            took.update(second.wait())
            second = None
    finally:
        cached_load.AHEAD = before
        if second is not None:
            second.stop()
    return {name: took[name] for name in names}


def cache_folder() -> str | None:
    """The folder holding the machine code of the kernels of ``obook/_kernels``: beside the
    sources, under ``NUMBA_CACHE_DIR``, or where a read-only install's cache went
    (``obook/_kernels/cache_dirs.py``); None when numba caches them its own way."""
    from .engine.books import K

    return getattr(getattr(K.crossed_books, "_cache", None), "_cache_path", None)


def _run_part(name: str, tmp: Path, took: dict, progress) -> None:
    start = time.perf_counter()
    part = tmp / name
    part.mkdir()
    PARTS[name](part)
    took[name] = time.perf_counter() - start
    if progress:
        progress(name, took[name])


if __name__ == "__main__":      # the second process of compile_kernels: PART... in, "PART SECONDS" lines out
    from .interrupts import unwind_on_signals

    unwind_on_signals()
    compile_kernels(sys.argv[1:], progress=lambda name, seconds: sys.stdout.write(f"{name} {seconds}\n")
                    or sys.stdout.flush())
