"""obook._compile_notes: a kernel compiling on first use is said on stderr when the
application configures no logging."""

from __future__ import annotations

import os
import subprocess
import sys

#: a first compile of the ITCH kernels announced, after ``SETUP``
ANNOUNCE = """
import obook
{setup}
from types import SimpleNamespace
from obook._kernels import cached_load
cached_load._announce_compile(SimpleNamespace(__module__="obook._kernels.itch"))
"""


def _stderr(tmp_path, setup: str = "") -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("OBOOK_KERNELS", "NUMBA_DISABLE_JIT")}
    out = subprocess.run([sys.executable, "-c", ANNOUNCE.format(setup=setup)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=True)
    return out.stderr


def test_compile_notes_logging_not_configured_first_compile_said_on_stderr(tmp_path):
    err = _stderr(tmp_path)
    assert err.startswith("obook: compiling the kernels of Nasdaq ITCH (once after installing"), err
    assert err.count("compiling") == 1


def test_compile_notes_logging_configured_said_once_by_it(tmp_path):
    err = _stderr(tmp_path, "import logging; logging.basicConfig(format='app| %(name)s: %(message)s')")
    assert err.startswith("app| obook: compiling the kernels of Nasdaq ITCH"), err
    assert err.count("compiling") == 1


def test_compile_notes_obook_logger_silenced_says_nothing(tmp_path):
    assert _stderr(tmp_path, "import logging; logging.getLogger('obook').setLevel(logging.ERROR)") == ""


def test_compile_notes_other_obook_warnings_stay_on_the_logger(tmp_path):
    code = "import logging, obook; logging.getLogger('obook').warning('day.itch: no records in the feed')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stderr == ""
