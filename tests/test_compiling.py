"""``obook compile``'s parts: the own-order simulation and the backtest compile in a second
process beside the others on a machine with two cores, and a failure there is an error."""

from __future__ import annotations

import logging

import pytest

import obook.compiling as compiling
from obook.errors import ObookError

pytestmark = pytest.mark.skipif(__import__("obook._kernels.jit", fromlist=["x"]).INTERPRETED,
                                reason="compiling needs numba's kernels")


def test_split_two_cores_sends_simulate_and_backtest_beside(monkeypatch):
    monkeypatch.setattr(compiling, "_cores", lambda: 2)
    here, beside = compiling._split(list(compiling.PARTS))
    assert beside == ["simulate", "backtest"]
    assert here[0] == "itch" and "simulate" not in here and "backtest" not in here


@pytest.mark.parametrize("cores,parts", [(1, None), (2, ["backtest", "match"]), (2, ["itch", "backtest"]),
                                         (2, ["itch", "match"])])
def test_split_one_core_or_no_itch_or_nothing_to_share_stays_in_one_process(monkeypatch, cores, parts):
    monkeypatch.setattr(compiling, "_cores", lambda: cores)
    names = list(parts or compiling.PARTS)
    assert compiling._split(names) == (names, [])


def test_compile_kernels_two_cores_reports_every_part_from_both_processes(monkeypatch, caplog):
    from obook._kernels import cached_load

    monkeypatch.setattr(compiling, "_cores", lambda: 2)
    monkeypatch.setattr(cached_load, "AHEAD", False)
    said = []
    with caplog.at_level(logging.INFO, logger="obook"):
        took = compiling.compile_kernels(["itch", "latency", "simulate"], progress=lambda n, s: said.append(n))
    assert list(took) == ["itch", "latency", "simulate"] and all(s > 0 for s in took.values())
    assert sorted(said) == ["itch", "latency", "simulate"]
    assert "compiling simulate in a second process" in caplog.text
    assert cached_load.AHEAD is False       # a later first use in this process still gives the hint


def test_compile_kernels_second_process_fails_raises_with_its_message(monkeypatch, tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'boom: no such kernel' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(compiling, "_cores", lambda: 2)
    monkeypatch.setattr(compiling.sys, "executable", str(fake))
    with pytest.raises(ObookError, match=r"compiling simulate failed \(exit status 3\): boom: no such kernel"):
        compiling.compile_kernels(["itch", "latency", "simulate"])


def test_cli_compile_part_named_twice_compiled_once(monkeypatch, capsys):
    import sys

    from obook.cli import main

    asked = []
    monkeypatch.setattr(compiling, "compile_kernels", lambda parts, progress=None: asked.append(list(parts)) or {})
    monkeypatch.setattr(sys, "argv", ["obook", "compile", "itch", "csv", "itch"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    assert asked == [["itch", "csv"]]
    assert "compiled 2 parts" in capsys.readouterr().err


def test_compile_second_process_stopped_unwinds_its_temporary_folder_goes(monkeypatch, tmp_path):
    """Stopping the second process (its parent interrupted) ends it by SIGTERM, which it
    turns into an unwinding exit: its temporary folder does not outlive it."""
    import sys
    import time

    child = tmp_path / "child.py"
    child.write_text("import tempfile, time\n"
                     "from obook.interrupts import unwind_on_signals\n"
                     "unwind_on_signals()\n"
                     "with tempfile.TemporaryDirectory(prefix='obook-compile-'):\n"
                     "    time.sleep(60)\n")
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} {child}\n")
    fake.chmod(0o755)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(compiling.sys, "executable", str(fake))
    beside = compiling._Beside(["simulate"], None)
    deadline = time.monotonic() + 60
    while not list(temp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(temp.iterdir()), "the second process made no temporary folder"
    beside.stop()
    assert beside.proc.returncode == 143 and list(temp.iterdir()) == []


def test_cli_compile_all_with_parts_refused_before_compiling(monkeypatch, capsys):
    from tests.cli_support import cli_error

    asked = []
    monkeypatch.setattr(compiling, "compile_kernels", lambda parts, progress=None: asked.append(list(parts)) or {})
    err = cli_error(capsys, "compile", "--all", "itch")
    assert "--all compiles every part; give it or the parts (itch), not both" in err
    assert asked == []


def test_cli_compile_ends_naming_the_kernels_cache_folder(monkeypatch, capsys):
    import os
    import sys

    from obook._kernels.cached_load import cache_dir_name
    from obook.cli import main

    monkeypatch.setattr(compiling, "compile_kernels", lambda parts, progress=None: {})
    monkeypatch.setattr(sys, "argv", ["obook", "compile", "latency"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    last = capsys.readouterr().err.splitlines()[-1]
    folder = compiling.cache_folder()
    assert last.startswith("compiled 1 part in ") and last.endswith(f"; the kernels are cached in {folder}")
    assert os.path.basename(folder) == cache_dir_name() and os.path.isdir(folder)


def test_cache_folder_numba_cache_dir_set_is_under_it(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", "from obook.compiling import cache_folder; print(cache_folder())"],
                         capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip().startswith(str(tmp_path / "cache") + os.sep), out.stdout
