"""No format name is tested outside ``obook/feeds``: the engine, the tables and the adapters
read the format's attributes (FORMAT.book_key, .order_ids, .prepass ...)."""

import ast
from pathlib import Path

import obook
from obook.feeds import formats

PACKAGE = Path(obook.__file__).parent


_FORMAT_WORDS = ("format", "fmt", "name")


def _mentions_format(node: ast.AST) -> bool:
    """An expression naming a format: ``fmt``, ``self.format.name``, ``format_name`` ..."""
    for sub in ast.walk(node):
        word = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else ""
        if any(w in word.lower() for w in _FORMAT_WORDS):
            return True
    return False


def _compared_strings(tree: ast.AST):
    """(line, text) of every string constant compared (== / != / in / not in) with an
    expression naming a format, or used as a dict key (``TIME_NS = {"itch": ...}``-style
    tables keyed by format name)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if not any(_mentions_format(o) for o in operands):
                continue
            for operand in operands:
                for sub in ast.walk(operand):
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                        yield node.lineno, sub.value
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    yield node.lineno, key.value


def _format_name_tests(root: Path, names) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "feeds":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for line, text in _compared_strings(tree):
            if text.lower() in names:
                found.append(f"{rel}:{line}: {text!r}")
    return found


def test_format_names_outside_feeds_never_compared():
    names = set(formats())
    assert {"itch", "csv"} <= names
    assert _format_name_tests(PACKAGE, names) == []


def test_format_names_scanner_finds_a_comparison(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "replay.py").write_text(
        'def f(fmt):\n    has_locate = fmt.name == "itch"\n    return has_locate\n')
    (tmp_path / "session.py").write_text('TIME_NS = {"itch": 1, "csv": 1_000_000}\n')
    (tmp_path / "output.py").write_text('def g(kind):\n    return kind == "csv"\n')   # not a format
    (tmp_path / "feeds").mkdir()
    (tmp_path / "feeds" / "x.py").write_text('ok = "itch" == "itch"\n')
    found = _format_name_tests(tmp_path, {"itch", "csv"})
    assert found == ["engine/replay.py:2: 'itch'", "session.py:1: 'itch'", "session.py:1: 'csv'"]
