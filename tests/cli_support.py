"""Running ``obook`` in the test's process: the exit code and the one ``error:`` line."""

from __future__ import annotations

import sys

import pytest


def cli_error(capsys, *args) -> str:
    """``obook ARGS`` run in this process: exit 1 and one ``error:`` line; the line."""
    from obook.cli import main

    old, sys.argv = sys.argv, ["obook", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        sys.argv = old
    err = capsys.readouterr().err
    assert exit_info.value.code == 1, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err
