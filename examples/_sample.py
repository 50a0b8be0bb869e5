"""Shared by the examples: the feed path from argv, or the bundled sample day; a feed that
cannot be read ends the script with obook's one-line message."""

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


def run(main):
    """``main()``'s return value; an obook error (a folder, a table or a cut feed given as the
    feed), as obook raises it or as DuckDB hands it on, ends the script with its one-line
    message instead of a traceback."""
    import duckdb

    from obook.errors import ObookError

    try:
        return main()
    except ObookError as e:
        sys.exit(str(e))
    except duckdb.Error as e:       # "Invalid Input Error: ...: ObookError: <the message>"
        sys.exit(str(e).splitlines()[0].rsplit("Error: ", 1)[-1])
