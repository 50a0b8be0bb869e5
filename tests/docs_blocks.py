"""The fenced code blocks of README.md and docs/, as the docs tests run them.

The conventions (docs/contributing-docs.md explains them to writers):

* ```` ```bash ````, ```` ```python ```` and ```` ```sql ```` blocks run, in page order, in one
  temporary directory per page (a page's later blocks see the files its earlier ones wrote).
  Each Python block is a script of its own (its own imports); SQL blocks run on
  ``obook.connect()``.
* A block whose title names a file (```` ```csv title="orders.csv" ````) is written to that
  file, in that directory, before the next block runs.
* A block titled ``Needs ...`` (```` ```bash title="Needs a real Nasdaq day" ````) is shown, not
  run: the title says why, on the page and in the test report.
* ``text`` and ``console`` blocks are output shown to the reader; nothing else is allowed. A
  ``text`` block titled ``Output ...`` right after a bash block is what that block prints:
  the test compares them.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = {"bash", "python", "sql"}
SHOWN = {"text", "console"}
FILE_LANGUAGES = {"csv", "toml", "text", "python", "json"}
NOT_RUN_PREFIX = "Needs "

FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w+-]*)(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                   re.M | re.S)
TITLE = re.compile(r'title="([^"]*)"')


@dataclass(frozen=True)
class Block:
    page: str          # path relative to the repository
    line: int          # line of the opening fence
    lang: str
    title: str | None
    code: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def not_run(self) -> bool:
        return bool(self.title and self.title.startswith(NOT_RUN_PREFIX))

    @property
    def shows_output(self) -> bool:
        return self.lang == "text" and bool(self.title and self.title.startswith("Output"))

    @property
    def file_name(self) -> str | None:
        """The file this block is written to, when its title is a plain file name."""
        if self.title and re.fullmatch(r"[\w.-]+\.\w+", self.title) and self.lang in FILE_LANGUAGES:
            return self.title
        return None


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        title = TITLE.search(m["info"])
        out.append(Block(page=str(page.relative_to(ROOT)), line=text.count("\n", 0, m.start()) + 1,
                         lang=m["lang"], title=title[1] if title else None,
                         code=textwrap.dedent(m["body"])))
    return out


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]
