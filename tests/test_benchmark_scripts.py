"""The benchmark scripts' command lines: each script that reads its arguments by place
answers -h / --help with its usage (its docstring), not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

#: the scripts that read sys.argv themselves (no argparse / typer parser of their own)
BY_PLACE = sorted(p.name for p in BENCHMARKS.glob("*.py")
                  if p.name != "script_usage.py" and "sys.argv" in p.read_text()
                  and not any(w in p.read_text() for w in ("argparse", "typer")))


def test_benchmark_scripts_by_place_found():
    assert "bench_backtest.py" in BY_PLACE and "script_usage.py" not in BY_PLACE


@pytest.mark.parametrize("script", BY_PLACE)
def test_benchmark_script_help_prints_its_usage_and_exits_0(script):
    r = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-500:]
    assert "python benchmarks/" in r.stdout, r.stdout[:500]
