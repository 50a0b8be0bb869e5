"""Every format's compiled kernels against seeded mutations of a small valid feed (numbers
replaced by hostile values in the text formats: channels past the tables, -1, 11 nines,
sNaN ...): each case ends in rows, a clear ObookError or tolerant-mode skips; never a
crash, a hang or another exception. The cases run in a subprocess (tests/fuzz_formats.py):
a segfault fails the test, not the session, and names the case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).with_name("fuzz_formats.py")
CASES = 30
TIMEOUT = 300          # the first run of a session may compile the kernels


def _fuzz(tmp_path, fmt, python_kernels: bool):
    env = {k: v for k, v in os.environ.items() if k != "OBOOK_KERNELS"}      # the compiled kernels
    if python_kernels:
        env["OBOOK_KERNELS"] = "python"
    env["PYTHONPATH"] = os.pathsep.join([str(RUNNER.parent), env.get("PYTHONPATH", "")])
    try:
        r = subprocess.run([sys.executable, str(RUNNER), fmt, str(CASES), "7", str(tmp_path)], capture_output=True,
                           timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{fmt}: case {(tmp_path / 'current').read_text()} still running after {TIMEOUT} s")
    err = r.stderr.decode("utf-8", "replace")[-3000:]
    assert r.returncode == 0, f"{fmt}: case {(tmp_path / 'current').read_text()} ended the process " \
                              f"(exit {r.returncode}): {err}"
    summary = json.loads(r.stdout.decode().strip().splitlines()[-1])
    assert summary["cases"] == CASES and not summary["failures"], json.dumps(summary["failures"], indent=1)
    assert summary["obook_errors"] > 0, summary          # the mutations do reach the checks


@pytest.mark.parametrize("fmt", ["itch", "pitch", "csv", "databento", "sse", "sse-zip", "szse", "szse-bin",
                                 "szse-csv", "pcap", "pcapng"])
def test_fuzz_compiled_kernels_mutated_feed_clear_error_or_rows_never_crash(tmp_path, fmt):
    _fuzz(tmp_path, fmt, python_kernels=False)


@pytest.mark.parametrize("fmt", ["szse", "szse-bin", "szse-csv"])
def test_fuzz_python_kernels_mutated_feed_no_index_out_of_range(tmp_path, fmt):
    """The same cases on the kernels run as Python, where an index out of range raises
    (compiled, it writes past the array unseen): the values used as indexes are checked."""
    _fuzz(tmp_path, fmt, python_kernels=True)
