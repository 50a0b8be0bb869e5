"""Every code block of docs/backtesting.md runs (in order, one namespace, from the repo's root)."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_backtest_docs_code_blocks_run():
    text = (ROOT / "docs" / "backtesting.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 6
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        ns: dict = {}
        for i, block in enumerate(blocks):
            exec(compile(block, f"docs/backtesting.md block {i + 1}", "exec"), ns)
    finally:
        os.chdir(here)
