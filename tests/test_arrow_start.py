"""The console command's pyarrow start-up: no import of pandas for a numpy conversion, and
pandas still there for whoever asks for it."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import sys
from obook._arrow_start import install
install()
import numpy as np, pyarrow as pa
a = pa.array(np.arange(3))
s = pa.array(np.array(["buy", None, "sell"], object), pa.string())
print("after numpy conversions:", "pandas" in sys.modules)
df = pa.table({"a": a, "s": s}).to_pandas()
print("to_pandas:", type(df).__name__, list(df["a"]))
"""


def test_arrow_start_numpy_conversions_import_no_pandas_and_to_pandas_still_works():
    pytest.importorskip("pandas")
    run = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "after numpy conversions: False" in run.stdout
    assert "to_pandas: DataFrame [0, 1, 2]" in run.stdout


def test_match_command_imports_no_pandas(tmp_path):
    pytest.importorskip("pandas")
    orders = tmp_path / "orders.parquet"
    code = (f"import sys; sys.argv = ['obook', 'gen', 'orders', {str(orders)!r}, '-n', '2000', '-k', '3']\n"
            "from obook._entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300).returncode == 0
    probe = ("import sys, atexit\n"
             "atexit.register(lambda: sys.stderr.write('pandas loaded: %s\\n' % ('pandas' in sys.modules)))\n"
             f"sys.argv = ['obook', 'match', {str(orders)!r}, '-o', {str(tmp_path / 'm')!r}, '-w', '2']\n"
             "from obook._entry import main\nmain()\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "pandas loaded: False" in run.stderr
