"""Helpers of the live tests: free loopback ports, a sender run in a thread, subprocesses
that never outlive a test."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading

from obook.live.send import Sender, SendOptions, read_messages


def free_port(kind=socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def addresses(n: int = 3) -> list[tuple[str, int]]:
    """``n`` distinct free loopback UDP ports (each held until all are chosen: a port closed
    at once may be handed out again to the next)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [("127.0.0.1", s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


@contextlib.contextmanager
def sending(day, a, b, r, **options):
    """A Sender of ``day`` running in a thread; stopped and joined on exit."""
    opts = SendOptions(a, b, r, **{"linger": 2.0, "heartbeat": 0.2, **options})
    sender = Sender(read_messages(day), opts)
    result = {}
    th = threading.Thread(target=lambda: result.update(sender.run()), daemon=True)
    th.start()
    try:
        yield result
    finally:
        sender.stop()
        th.join(timeout=20)
        assert not th.is_alive()


@contextlib.contextmanager
def process(*args, **kw):
    """``python -m obook ARGS`` as a subprocess, killed (by its pid) if still running."""
    p = subprocess.Popen([sys.executable, "-m", "obook", *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, **kw)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=20)


def wait_accepting(port: int, tries: int = 600) -> None:
    """Until something accepts TCP connections on 127.0.0.1:``port`` (a venue starting)."""
    import time

    for _ in range(tries):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)


def hostport(addr) -> str:
    return f"{addr[0]}:{addr[1]}"


def line_options(n: int = 3) -> list[str]:
    """``--line-a``, ``--line-b`` (and ``--request``, n=3) on free loopback ports."""
    return [x for flag, addr in zip(("--line-a", "--line-b", "--request"), addresses(n)) for x in (flag, hostport(addr))]


def allocation_stats():
    """numba's runtime allocation statistics, turned on and shown to count (an allocating
    function moves them); returns ``rtsys.get_allocation_stats``."""
    import numpy as np
    from numba import njit
    from numba.core.runtime import _nrt_python as nrt
    from numba.core.runtime import rtsys

    nrt.memsys_enable_stats()

    @njit
    def allocates(n):
        return np.empty(n).sum()

    base = rtsys.get_allocation_stats()
    allocates(10)
    assert rtsys.get_allocation_stats().alloc > base.alloc        # the statistics do count
    return rtsys.get_allocation_stats


def warm_loop() -> None:
    """Compile (or load) the compiled live loop before a test starts timers (a venue's
    serving time, a sender's linger): the first compile takes a minute on a busy machine."""
    from obook._kernels.jit import INTERPRETED

    if INTERPRETED:
        return
    from obook.live.hot_listener import HotListener

    HotListener(*addresses(3), tables=()).close()
