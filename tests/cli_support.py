"""Running ``obook`` in the test's process: the exit code and the one ``error:`` line."""

from __future__ import annotations

import sys

import pytest


def cli_run(capsys, *args) -> tuple:
    """``obook ARGS`` run in this process, which ends by SystemExit: (exit code, stderr)."""
    from obook.cli import main

    old, sys.argv = sys.argv, ["obook", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        sys.argv = old
    return exit_info.value.code, capsys.readouterr().err


def cli_error(capsys, *args) -> str:
    """``obook ARGS`` run in this process: exit 1 and one ``error:`` line; the line."""
    code, err = cli_run(capsys, *args)
    assert code == 1, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err
