"""Every code block of README.md and docs/ runs (conventions: tests/docs_blocks.py).

Each page runs in a temporary directory of its own, its blocks in page order: bash blocks
in ``bash -e -o pipefail`` (this interpreter's ``bin`` first on PATH, so ``obook`` and
``python`` are this install's), consecutive Python and SQL blocks in one process of
tests/docs_runner.py. The README's two set-up commands are not run here: ``.ci/run`` runs
them, word for word (checked below)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from docs_blocks import NOT_RUN_PREFIX, ROOT, RUN, SHOWN, all_blocks, blocks, pages

RUNNER = Path(__file__).resolve().parent / "docs_runner.py"
TIMEOUT = 300


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = ""          # the blocks import the installed obook, as a reader's would
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def readme_setup_commands() -> list[str]:
    """The README's first two bash blocks: install-and-run, and the test suite."""
    first = [b for b in blocks(ROOT / "README.md") if b.lang == "bash"][:2]
    return [b.code.strip() for b in first]


def _run_bash(block, cwd: Path) -> str:
    proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=cwd, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        logs = {p.name: p.read_text(errors="replace")[-1500:] for p in sorted(cwd.glob("*.log"))}
        raise AssertionError(f"{block.where}: still running after {TIMEOUT} s\n{block.code}\n"
                             + "\n".join(f"--- {name}\n{text}" for name, text in logs.items())) from None
    finally:
        try:                                   # whatever the block left in the background
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, f"{block.where}: exit {proc.returncode}\n{block.code}\n{out[-3000:]}\n{err[-3000:]}"
    return out


def _run_python(run: list, cwd: Path) -> None:
    todo = cwd / ".docs-blocks.json"
    todo.write_text(json.dumps([{"where": b.where, "lang": b.lang, "code": b.code} for b in run]))
    proc = subprocess.run([sys.executable, str(RUNNER), str(todo)], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=TIMEOUT)
    todo.unlink()
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"


def run_page(page: Path, cwd: Path) -> int:
    """Runs the page's blocks; returns how many ran."""
    skip = set(readme_setup_commands()) if page.name == "README.md" and page.parent == ROOT else set()
    ran, pending, printed = 0, [], None
    for b in blocks(page):
        if b.shows_output:
            assert printed is not None, f"{b.where}: an output block follows no bash block"
            assert printed.rstrip() == b.code.rstrip(), f"{b.where}: the command printed\n{printed}"
            continue
        printed = None
        if b.file_name:
            if pending:
                _run_python(pending, cwd)
                pending = []
            (cwd / b.file_name).write_text(b.code)
            continue
        if b.not_run or b.lang not in RUN or b.code.strip() in skip:
            continue
        ran += 1
        if b.lang == "bash":
            if pending:
                _run_python(pending, cwd)
                pending = []
            printed = _run_bash(b, cwd)
        else:
            pending.append(b)
    if pending:
        _run_python(pending, cwd)
    return ran


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_page_examples_run_in_a_fresh_directory(page, tmp_path):
    run_page(page, tmp_path)


def test_docs_code_blocks_use_known_languages_and_titles():
    bad = [f"{b.where}: ```{b.lang}" for b in all_blocks()
           if not (b.lang in RUN or b.lang in SHOWN or b.file_name)]
    assert not bad, "blocks that neither run, nor write a file, nor show output:\n" + "\n".join(bad)


def test_docs_blocks_not_run_say_why_and_are_few(capsys):
    """Blocks that need real data or a network are marked ``title="Needs ..."``; they are
    listed here (pytest -s shows them) and kept few."""
    marked = [b for b in all_blocks() if b.not_run]
    runnable = [b for b in all_blocks() if b.lang in RUN and not b.file_name]
    with capsys.disabled():
        for b in marked:
            print(f"\nnot run: {b.where}: {b.title}")
    assert all(len(b.title) > len(NOT_RUN_PREFIX) + 5 for b in marked)
    assert len(marked) * 5 <= len(runnable), f"{len(marked)} of {len(runnable)} blocks are not run"


def test_readme_starts_with_setup_and_test_commands_that_ci_runs():
    setup, tests = readme_setup_commands()
    assert setup.startswith("pip install -e '.[dev]' && obook compile && ")
    assert "pytest" in tests
    ci = (ROOT / ".ci" / "run").read_text()
    for command in (setup, tests):
        assert command in ci, f".ci/run does not run the README's command word for word: {command}"


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 210
