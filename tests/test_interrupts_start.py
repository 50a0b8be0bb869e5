"""The start of a multi-worker replay: which way workers are started while an interrupt is
being sent again."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_fork_is_safe_with_an_interrupt_to_send_again_pending_true():
    """An interrupt that landed where it could not be raised (an import) is sent again from a
    short-lived timer thread; that thread does not make fork unsafe: a forkserver started
    then would outlive the interrupted command."""
    code = textwrap.dedent("""
        import os, signal
        from obook import interrupts
        from obook.engine import workers
        print(workers._fork_is_safe())
        os.kill = lambda pid, signum: None
        interrupts.send_again(signal.SIGINT)
        print(workers._fork_is_safe())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout == "True\nTrue\n", r.stderr
