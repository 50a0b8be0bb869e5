"""Product text speaks about the code as it is: README, docs, help texts, code comments,
test names and examples name no development stops, issue numbers, results-log sections or
the private brief's sections. History lives in commit messages and in the benchmarks'
results file (benchmarks/LEDGER.md), the one file exempt here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve()
TREES = ("obook", "udfs", "pipelines", "sql", "tests", "examples", "benchmarks", "docs", "tools", ".ci")
FILES = ("README.md", "pyproject.toml", "mkdocs.yml")
SUFFIXES = {".py", ".md", ".toml", ".sql", ".yml", ".yaml", ".txt", ""}
EXEMPT = {ROOT / "benchmarks" / "LEDGER.md", THIS}

# each pattern is written so that it does not match itself
HISTORY = {
    "a development stop": re.compile(r"(?<![A-Za-z])[Ss]tops? ?\d+(?!\s*(?:ms|s|seconds|%|x|×))\b"),
    "an issue number": re.compile(r"(?<![A-Za-z])[Ii]ssues? ?#?\d+"),
    "a numbered section": re.compile(r"(?<![\w&/])#\d{1,3}\b(?![\w-])"),
    "a results-log reference": re.compile(r"(?i)(?<![a-z])ledger"),
    "the brief": re.compile(r"\bSPEC\b|SPEC\.md|§"),
    "a stop's row label": re.compile(r"\bS\d{2}-[A-Z]?\d+\b"),
}


def product_files() -> list[Path]:
    out = [ROOT / f for f in FILES if (ROOT / f).exists()]
    for tree in TREES:
        base = ROOT / tree
        if not base.exists():
            continue
        for p in sorted(base.rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts and p not in EXEMPT:
                out.append(p)
    return out


def history_mentions(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, the line) of each mention of development history."""
    hits = []
    for n, line in enumerate(text.splitlines(), 1):
        for what, pattern in HISTORY.items():
            if pattern.search(line):
                hits.append((n, what, line.strip()))
    return hits


def test_product_text_names_no_stops_issues_results_log_or_brief():
    hits = []
    for path in product_files():
        for n, what, line in history_mentions(path.read_text(encoding="utf-8", errors="replace")):
            hits.append(f"{path.relative_to(ROOT)}:{n}: {what}: {line[:120]}")
    assert not hits, f"{len(hits)} mentions of development history:\n" + "\n".join(hits)


def test_product_file_names_say_what_they_test_not_when():
    names = [p.relative_to(ROOT).as_posix() for p in product_files()]
    bad = [n for n in names if re.search(r"(?i)(stop|issue)_?\d", n)]
    assert not bad


def test_history_patterns_catch_each_form_and_spare_plain_words():
    caught = ["see the 'stop 22' row", "(issue 13)", "issue #17", "section \"#15 live\"", "the Ledger",
              "(SPEC §8)", "S27-9 re-measured", "S22-P3", "LEDGER.md"]
    spared = ["stop the replay", "stops 5 s later", "a stopped worker", "tissue 3", "#1f77b4",
              "SPECIAL", "_TIMESPEC", "issue a re-request"]
    assert all(history_mentions(t) for t in caught)
    assert not [t for t in spared if history_mentions(t)]


def _command_paths(command, prefix=()):
    """Every command path of a click group, the group's own first."""
    yield prefix
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _command_paths(sub, prefix + (name,))


def test_help_texts_of_every_command_name_no_history():
    import typer
    from typer.testing import CliRunner

    from obook.cli import app

    runner = CliRunner()
    paths = list(_command_paths(typer.main.get_command(app)))
    assert len(paths) > 15
    hits = []
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], terminal_width=100)
        assert result.exit_code == 0, (path, result.output)
        hits += [f"obook {' '.join(path)} --help: {what}: {line}" for _, what, line in history_mentions(result.output)]
    assert not hits, "\n".join(hits)
