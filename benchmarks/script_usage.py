"""The command line of the benchmark scripts that take their arguments by place: ``-h`` /
``--help`` prints the script's docstring (its usage), and too few arguments print it too,
instead of a traceback."""

from __future__ import annotations

import sys


def answer_help(doc: str | None, least: int = 0) -> None:
    """Print ``doc`` and exit 0 when the command line asks for help; print it to stderr and
    exit 2 when it has fewer than ``least`` arguments."""
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):
        print((doc or "").strip())
        raise SystemExit(0)
    if len(args) < least:
        print(f"{sys.argv[0]}: {least} argument{'s' if least > 1 else ''} needed, {len(args)} given\n\n"
              f"{(doc or '').strip()}", file=sys.stderr)
        raise SystemExit(2)
