"""The command line's conventions and start-up behaviour (issue 13)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from typer.testing import CliRunner

import obook
from obook.cli import app
from obook.cli.kernels import kernels_cached
from obook.engine.replay import SMALL_FEED, default_workers
from obook.gen.itch import write_itch

runner = CliRunner()


def test_cli_version_prints_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"obook {obook.__version__}"


def test_cli_short_help_same_as_long_help():
    assert runner.invoke(app, ["-h"]).output == runner.invoke(app, ["--help"]).output
    sub = runner.invoke(app, ["bbo", "-h"])
    assert sub.exit_code == 0 and "--output" in sub.output


def test_cli_help_loads_no_pyarrow_numba_duckdb_polars():
    code = ("import sys\nfrom obook.cli import app\nsys.argv=['obook','--help']\n"
            "try:\n    app()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numba', 'duckdb', 'polars', 'rich', 'obook.engine.replay', "
            "'obook._kernels.book') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_kernels_cached_missing_or_stale_index_false(tmp_path):
    for name in ("book", "itch", "merge"):
        (tmp_path / f"{name}.py").write_text("")
    assert not kernels_cached(tmp_path)
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    for name in ("book", "itch", "merge"):
        (cache / f"{name}.f-1.{tag}.nbi").write_text("")
    assert kernels_cached(tmp_path)
    later = time.time() + 10
    os.utime(tmp_path / "itch.py", (later, later))      # an edited kernel: compiled again
    assert not kernels_cached(tmp_path)


def test_default_workers_small_feed_one_worker(tmp_path):
    small = tmp_path / "small.itch"
    write_itch(small, 1000, 5, seed=1)
    assert small.stat().st_size < SMALL_FEED
    assert default_workers(str(small)) == 1
    big = tmp_path / "big.itch"
    with open(big, "wb") as f:
        f.truncate(SMALL_FEED)
    assert default_workers(str(big)) == default_workers()
