"""The distribution ships every package of the source tree (pyproject lists them by hand)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_packaging_every_obook_package_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "obook").rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert on_disk - listed == set(), "packages missing from pyproject.toml [tool.setuptools] packages"
    for name, folder in config["package-dir"].items():
        assert name in listed and (ROOT / folder / "__init__.py").is_file()
