"""The layering as import-linter contracts (pyproject.toml [tool.importlinter]): they hold,
and a forbidden import added to a scratch copy of the package breaks them."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# `lint-imports --no-cache` of the installed import-linter, in this interpreter (the
# console script may live outside the venv's bin); it reads ./pyproject.toml and puts the
# working directory first on sys.path, so a scratch copy's obook is the one analysed
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(no_cache=True, no_logo=True))")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", LINT], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


def test_layers_contracts_kept_in_repo():
    run = _lint(REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def _scratch_copy(tmp_path: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for name in ("obook", "pipelines", "udfs", "sql", "tools"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.parametrize("module, line, contract", [
    ("obook/engine/replay.py", "import obook.duckdb", "the engine imports no adapter"),
    ("obook/_kernels/merge.py", "import pyarrow", "kernels import only numpy, numba, llvmlite and a few stdlib modules"),
    ("obook/feeds/sources.py", "from ..engine import replay", "feeds import neither the engine nor an adapter"),
    ("obook/duckdb.py", "from . import polars", "the DuckDB and polars adapters are independent"),
    ("obook/polars.py", "from ._kernels import layout", "adapters do not import the kernels"),
    ("pipelines/run.py", "import obook.engine.replay", "pipelines use only the public API"),
    ("udfs/prices.py", "import obook.engine.replay",
     "the scalar functions use only the errors, the schemas and the table registry"),
    ("sql/__init__.py", "import obook.errors", "the SQL macros are text: their package imports nothing of obook"),
])
def test_layers_forbidden_import_in_scratch_copy_breaks_contract(tmp_path, module, line, contract):
    root = _scratch_copy(tmp_path)
    assert _lint(root).returncode == 0          # the copy itself is clean
    path = root / module
    path.write_text(path.read_text() + f"\n{line}  # a forbidden import\n")
    run = _lint(root)
    assert run.returncode != 0
    assert f"{contract} BROKEN" in run.stdout, run.stdout


def test_layers_every_package_is_the_source_of_a_contract():
    """Each package of obook (and the shipped udfs, sql and pipelines, and the Parquet
    writers) is checked by at least one contract."""
    try:
        import tomllib
    except ModuleNotFoundError:     # Python 3.10
        import tomli as tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    sources = set()
    for contract in config["contracts"]:
        sources.update(contract.get("source_modules", []) + contract.get("modules", []))
    packages = {f"obook.{p.name}" for p in (REPO / "obook").iterdir() if (p / "__init__.py").exists()}
    wanted = packages | {"udfs", "sql", "pipelines", "obook.parquet", "obook.parquet_levels", "obook.parquet_footer"}
    assert {"obook.matching", "obook.simulation", "obook.live", "obook.gen", "obook.backtest",
            "obook.tables"} <= wanted
    assert sorted(wanted - sources) == []
    assert set(config["root_packages"]) == {"obook", "pipelines", "udfs", "sql"}
