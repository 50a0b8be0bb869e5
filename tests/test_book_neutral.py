"""The order book kernel (obook/_kernels/book.py) is venue-neutral: its source names no feed
format, exchange or venue rule, and it imports nothing of the event layout the feeds
write; the rules live in the driver's modules."""

import ast
import re
from pathlib import Path

import obook
from obook.feeds import formats, packages

KERNELS = Path(obook.__file__).parent / "_kernels"
BOOK = KERNELS / "book.py"

#: exchanges, vendors and formats (besides the registered formats and their packages) and
#: the venue rules' names: the price cage, own-best pricing, deferred publication, a
#: vendor's clear, the replace and modify actions and their bits
VENUE_WORDS = ("nasdaq", "itch", "ouch", "mold", "databento", "dbn", "mbo", "mbp", "szse", "shenzhen",
               "chinext", "sse", "shanghai", "csv", "pitch", "cboe", "bats", "lobster", "cage", "caged",
               "own_best", "own-best", "f_last", "defer", "deferred", "held", "act_clear",
               "act_replace", "act_modify", "to_back", "no_side", "not_printable", "type_shift")


def _names() -> set[str]:
    words = {w.lower() for w in VENUE_WORDS}
    words.update(name.lower() for name in formats())                 # itch, szse-bin, ...
    words.update(p.split(".")[2].lower() for p in packages())        # obook.feeds.<format>
    return words


def venue_words_in(text: str, words) -> list[str]:
    """The words of ``words`` found in ``text`` as whole words (letters and digits around
    them end it; ``_`` and ``-`` do not, so ``l2_sse`` and ``CAGE_ADD`` count)."""
    found = set()
    for w in words:
        parts = [re.escape(p) for p in re.split(r"[-_]", w)]
        pattern = r"(?<![a-z0-9])" + r"[-_ ]?".join(parts) + r"(?![a-z0-9])"
        if re.search(pattern, text, re.IGNORECASE):
            found.add(w)
    return sorted(found)


HASH_TABLE = KERNELS / "hashtab.py"


def _imports(path: Path) -> set[str]:
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    return imported


def test_book_source_names_no_format_venue_or_rule():
    assert venue_words_in(BOOK.read_text(), _names()) == []
    assert venue_words_in(HASH_TABLE.read_text(), _names()) == []


def test_book_imports_only_numpy_namedtuple_the_jit_switch_and_the_hash_table():
    # not .layout: the events' bits are the driver's; the hash table is as neutral as the book
    assert _imports(BOOK) == {"collections", "numpy", ".jit", ".hashtab"}
    assert _imports(HASH_TABLE) == {"collections", "numpy", ".jit"}


def test_venue_words_in_finds_each_form_and_spares_plain_words():
    words = _names()
    assert {"itch", "databento", "szse", "sse", "pitch", "csv"} <= words
    assert venue_words_in("ITCH's replace", words) == ["itch"]
    assert venue_words_in("if word & CAGE_ADD:", words) == ["cage"]
    assert venue_words_in("from .l2_sse import x", words) == ["sse"]
    assert venue_words_in("a Databento clear (ACT_CLEAR)", words) == ["act_clear", "databento"]
    assert venue_words_in("rows at F_LAST; OWN_BEST; own best", words) == ["f_last", "own-best", "own_best"]
    assert venue_words_in("the address of a level; class; threshold; shareholder", words) == []


def test_rules_live_in_the_driver_modules_not_the_book():
    """The rules the book no longer holds are where the driver composes them."""
    rules = {"price_cage.py": ("cage", "own_best"), "book_rows.py": ("defer",), "book_clear.py": ("act_clear",),
             "replay.py": ("act_replace", "act_modify", "cage", "defer")}
    for name, expected in rules.items():
        assert set(expected) <= set(venue_words_in((KERNELS / name).read_text(), _names())), name
