"""Running ``obook`` in the test's process: the exit code and the one ``error:`` line."""

from __future__ import annotations

import sys

import pytest


def cli_run(capsys, *args) -> tuple:
    """``obook ARGS`` run in this process, which ends by SystemExit: (exit code, stderr)."""
    code, _out, err = cli_outputs(capsys, *args)
    return code, err


def cli_outputs(capsys, *args) -> tuple:
    """``obook ARGS`` run in this process, which ends by SystemExit: (exit code, stdout, stderr)."""
    from obook.cli import main

    old, sys.argv = sys.argv, ["obook", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        sys.argv = old
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def cli_error(capsys, *args) -> str:
    """``obook ARGS`` run in this process: exit 1 and one ``error:`` line; the line."""
    code, err = cli_run(capsys, *args)
    assert code == 1, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def cli_error_while_held(capsys, folder, *args) -> str:
    """:func:`cli_error` of ``obook ARGS`` while another run (a convert) holds ``folder``."""
    from obook.output import hold_output_dir, release_output_dir

    held = hold_output_dir(folder)
    try:
        return cli_error(capsys, *args)
    finally:
        release_output_dir(held)
