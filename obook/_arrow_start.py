"""pyarrow without an import of pandas, in the ``obook`` command.

pyarrow's first conversion of an array (``pa.array``, also of a numpy array) asks whether
pandas can be imported, to recognise pandas objects, by importing it: 0.2-0.5 s of a
command that never sees a pandas object. It asks once and remembers the answer.
``install()`` answers that first question "no" as pyarrow's core module loads (when, and
only if, a command imports pyarrow). Whatever really needs pandas later still gets it:
``Table.to_pandas()`` and pyarrow's other pandas paths try the import again, and any
other ``import pandas`` is untouched. Only the console command installs it; ``import
obook`` leaves pyarrow as it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

_ARROW_CORE = "pyarrow.lib"


class _NoPandas(importlib.abc.MetaPathFinder):
    """Refuses ``import pandas`` while pyarrow asks its question."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not needed here")
        return None


class _AnswerOnLoad(importlib.abc.MetaPathFinder):
    """Finds pyarrow's core module as usual and, once it has run, asks its pandas
    question with pandas refused."""

    def find_spec(self, name, path=None, target=None):
        if name != _ARROW_CORE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            answer(module)

        spec.loader.exec_module = exec_module
        return spec


def answer(arrow_core) -> None:
    """Let pyarrow (its ``pyarrow.lib``) know "no pandas" unless pandas is loaded already."""
    shim = getattr(arrow_core, "_pandas_api", None)
    if shim is None or "pandas" in sys.modules:
        return
    refuse = _NoPandas()
    sys.meta_path.insert(0, refuse)
    try:
        shim.have_pandas
    except Exception:  # noqa: BLE001 - a pyarrow whose shim differs: leave it as it is
        pass
    finally:
        sys.meta_path.remove(refuse)


def install() -> None:
    """Answer pyarrow's pandas question when pyarrow loads (now, if it has)."""
    if _ARROW_CORE in sys.modules:
        answer(sys.modules[_ARROW_CORE])
    elif not any(isinstance(f, _AnswerOnLoad) for f in sys.meta_path):
        sys.meta_path.insert(0, _AnswerOnLoad())
