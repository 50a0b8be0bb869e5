"""``obook compile live`` leaves nothing for the live commands to compile: after it (on the
kernel cache it leaves), ``obook venue``, ``obook listen`` (the compiled loop, a Python
strategy's orders to the venue, tables to Parquet) and ``obook send`` print no compile notice."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from live_support import addresses, free_port, hostport, process, wait_accepting
from obook.gen.itch import write_itch

pytestmark = pytest.mark.skipif(__import__("obook._kernels.jit", fromlist=["x"]).INTERPRETED,
                                reason="compiling needs numba's kernels")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "strategy_quote.py"
NOTICE = "compiling the kernels"


def test_compile_live_then_venue_listen_send_compile_nothing(tmp_path):
    done = subprocess.run([sys.executable, "-m", "obook", "compile", "live"], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    assert "live: ready" in done.stderr
    day = tmp_path / "day.itch"
    write_itch(str(day), 3_000, 5, 9)
    a, b, r = addresses()
    v = free_port(socket.SOCK_STREAM)
    out = tmp_path / "pq"
    with process("venue", "--listen", f"127.0.0.1:{v}", "--sessions", "1") as vp:
        wait_accepting(v)
        with process("listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                     "--to", "parquet", "-o", out, "--strategy", f"{EXAMPLE}:JoinBid", "--venue", f"127.0.0.1:{v}",
                     "--retries", "20", "--idle-timeout", "60") as lp:
            for _ in range(1200):
                if out.exists():
                    break
                time.sleep(0.05)
            with process("send", day, "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                         "--rate", "3000", "--drop-a", "0.05", "--linger", "1") as sp:
                assert sp.wait(timeout=120) == 0
                send_err = sp.stderr.read().decode()
            assert lp.wait(timeout=120) == 0
            listen_err = lp.stderr.read().decode()
        assert vp.wait(timeout=60) == 0
        venue_err = vp.stderr.read().decode()
    assert "orders: " in listen_err and "sent: " in send_err and "orders, sha256" in venue_err
    for name, err in (("venue", venue_err), ("listen", listen_err), ("send", send_err)):
        assert NOTICE not in err, f"obook {name} compiled on its first run after obook compile live:\n{err}"
