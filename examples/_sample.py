"""Shared by the examples: the feed path from argv, or the bundled sample day."""

from __future__ import annotations

import sys
from pathlib import Path

#: a synthetic Nasdaq ITCH 5.0 day (50,000 messages, 20 stocks) written by
#: ``obook gen itch examples/data/01022026.NASDAQ_ITCH50.gz -n 50000 -k 20 -d 2026-01-02``
SAMPLE = Path(__file__).resolve().parent / "data" / "01022026.NASDAQ_ITCH50.gz"


def feed_path() -> Path:
    """``sys.argv[1]`` if given, else the bundled sample day; a feed that is not there ends
    the script with a one-line message."""
    if len(sys.argv) > 1:
        path = Path(sys.argv[1])
        if not path.exists():
            sys.exit(f"{path}: no such feed file")
        return path
    print(f"reading the bundled sample day {SAMPLE.name}", file=sys.stderr)
    return SAMPLE
