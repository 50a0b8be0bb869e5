"""obook._kernels.cached_load: obook's cached kernels load without numba's registries."""

import json
import subprocess
import sys
import textwrap

REPLAY = """
import json, sys
{before}
import obook
t = obook.bbo({path!r}).read_all()
rows = [list(r.values()) for r in t.to_pylist()]
print(json.dumps({{"rows": rows, "registries": "numba.np.arraymath" in sys.modules}}, default=str))
"""

FULL_REFRESH = """
import numba
numba.njit(lambda x: x + 1)(1)   # compiles: numba's full registries are loaded first
"""


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cached_load_replay_skips_numba_registries_same_rows(small):
    # warm the cache (a first run may compile), then compare a fast load with a full one
    _run(REPLAY.format(before="", path=str(small)))
    fast = _run(REPLAY.format(before="", path=str(small)))
    full = _run(REPLAY.format(before=FULL_REFRESH, path=str(small)))
    assert fast["registries"] is False
    assert full["registries"] is True
    assert fast["rows"] and fast["rows"] == full["rows"]


def test_cached_load_other_packages_functions_keep_numbas_loading(tmp_path):
    (tmp_path / "userkernel.py").write_text(textwrap.dedent("""
        from numba import njit

        @njit(cache=True)
        def twice(x):
            return 2 * x
    """))
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import obook._kernels  # installs obook's loader
        import userkernel
        value = userkernel.twice(21)
        print(json.dumps({{"value": value, "hits": sum(userkernel.twice.stats.cache_hits.values()),
                           "registries": "numba.np.arraymath" in sys.modules}}))
    """)
    first = _run(code)   # compiles and saves the cache
    second = _run(code)  # loads from the cache through numba's own path
    assert first["value"] == second["value"] == 42
    assert second["hits"] == 1
    assert second["registries"] is True


def test_cached_load_kernel_with_numpy_random_same_rows_as_full_load():
    # the order generator's kernel draws with np.random (numba's own random state)
    code = ("{before}\nimport json, sys\nfrom obook.gen.orders import seed_rows\n"
            "m = seed_rows(5000)[0]\n"
            "print(json.dumps({{'rows': [int(m.rows[f].sum()) for f in m.rows.dtype.names],"
            " 'registries': 'numba.np.arraymath' in sys.modules}}))")
    _run(code.format(before=""))
    fast = _run(code.format(before=""))
    full = _run(code.format(before=FULL_REFRESH))
    assert (fast["registries"], full["registries"]) == (False, True)
    assert fast["rows"] == full["rows"]


NRT_CHECK = """
import json
import numpy as np
import obook
from numba.core.runtime import rtsys
from obook._kernels import mold
rows = obook.bbo({path!r}, workers=1).read_all().num_rows
before = bool(rtsys._init)
pend = (np.zeros((mold.F_TS + 1, 3), np.int64), np.zeros((mold.F_TS + 1, 2), np.int64))
pend[0][mold.F_TS] = [1, 5, 9]
pend[1][mold.F_TS] = [2, 5]
order = np.zeros(5, np.int64)
n = mold.round_order(pend, np.array([3, 2], np.int64), order)   # allocates: needs NRT
print(json.dumps({{"rows": rows, "before": before, "after": bool(rtsys._init), "n": n,
                   "order": [int(x) for x in order]}}))
"""


def test_cached_load_nrt_free_kernels_do_not_start_nrt_allocating_kernel_does(small):
    _run(NRT_CHECK.format(path=str(small)))    # fills the caches
    got = _run(NRT_CHECK.format(path=str(small)))
    assert got["rows"] > 0
    assert got["before"] is False        # the replay's kernels are all _nrt=False
    assert got["after"] is True and got["n"] == 5
    shift = 40
    assert got["order"] == [0, 1 << shift, 1, (1 << shift) | 1, 2]   # by time, line 0 first on ties


CALLEE = """
from .jit import njit


@njit(cache=True)
def base():
    return {value}
"""

CALLER = """
from .jit import njit
from .probe_callee import base


@njit(cache=True)
def plus_ten():
    return base() + 10
"""

PROBE = """
import json, logging
logging.basicConfig(format="obook: %(message)s")
import obook
from obook._kernels.probe_caller import plus_ten
value = plus_ten()
print(json.dumps({"file": obook.__file__, "value": int(value),
                  "hits": sum(plus_ten.stats.cache_hits.values())}))
"""


def _copy_package(tmp_path):
    import shutil
    from pathlib import Path

    import obook

    source = Path(obook.__file__).parent
    shutil.copytree(source, tmp_path / "obook", ignore=shutil.ignore_patterns("__pycache__"))
    kernels = tmp_path / "obook" / "_kernels"
    (kernels / "probe_caller.py").write_text(CALLER)
    return kernels


def _probe(tmp_path, code: str = PROBE, **more_env) -> dict:
    import os

    env = {**os.environ, "PYTHONPATH": str(tmp_path), **more_env}
    env.pop("OBOOK_KERNELS", None)
    env.pop("NUMBA_CACHE_DIR", None)
    # no .pyc: an edit within the second of the file's first version, of the same size,
    # would otherwise run the old bytecode (the .pyc is checked by whole-second mtime and size)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path, env=env)
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "stderr": out.stderr}


def test_kernel_cache_edited_callee_file_recompiles_caller(tmp_path):
    kernels = _copy_package(tmp_path)
    (kernels / "probe_callee.py").write_text(CALLEE.format(value=1))
    first = _probe(tmp_path)
    assert first["file"].startswith(str(tmp_path))
    assert (first["value"], first["hits"]) == (11, 0)          # compiled and saved
    assert _probe(tmp_path)["hits"] == 1                      # unchanged sources: loaded from the cache
    (kernels / "probe_callee.py").write_text(CALLEE.format(value=2))    # only the callee's file changes
    edited = _probe(tmp_path)
    assert (edited["value"], edited["hits"]) == (12, 0)        # the caller compiled again against it
    assert _probe(tmp_path)["hits"] == 1


def test_kernel_cache_directory_named_by_hash_of_kernel_sources(tmp_path):
    from obook._kernels.cached_load import kernels_hash

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("not a source\n")
    before = kernels_hash(str(tmp_path))
    (tmp_path / "notes.txt").write_text("edited\n")
    assert kernels_hash(str(tmp_path)) == before
    (tmp_path / "a.py").write_text("x = 2\n")
    assert kernels_hash(str(tmp_path)) != before


def test_kernel_cache_miss_warns_once_per_module_hit_silent(tmp_path):
    kernels = _copy_package(tmp_path)
    (kernels / "probe_callee.py").write_text(CALLEE.format(value=1))
    first = _probe(tmp_path)["stderr"].splitlines()
    compiling = [line for line in first if line.startswith("obook: compiling the kernels of probe_caller")]
    assert len(compiling) == 1 and "about" in compiling[0]
    assert "compiling" not in _probe(tmp_path)["stderr"]


def test_kernel_cache_install_and_home_unwritable_caches_in_private_temp_dir(tmp_path):
    import os

    kernels = _copy_package(tmp_path)
    (kernels / "probe_callee.py").write_text(CALLEE.format(value=1))
    (kernels / "__pycache__").write_text("")        # nothing can be written beside the sources
    (tmp_path / "home").write_text("")              # nor under the home directory
    (tmp_path / "tmp").mkdir()
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "home" / "cache"),
           "TMPDIR": str(tmp_path / "tmp")}
    first = _probe(tmp_path, **env)
    assert (first["value"], first["hits"]) == (11, 0)
    second = _probe(tmp_path, **env)
    assert (second["value"], second["hits"]) == (11, 1)       # loaded, not compiled again
    private = tmp_path / "tmp" / f"obook-kernels-{os.getuid()}"
    assert any(private.rglob("probe_caller.plus_ten-*.nbi"))
    assert private.stat().st_mode & 0o777 == 0o700


READ_ONLY = """
import errno, tempfile
_made = tempfile.TemporaryFile
def _refuse(*args, dir=None, **kwargs):    # numba's write test of a cache directory; root too
    if dir is not None and str(dir).startswith({path!r}):
        raise PermissionError(errno.EACCES, "read-only", dir)
    return _made(*args, dir=dir, **kwargs)
tempfile.TemporaryFile = _refuse
"""


def test_kernel_cache_read_only_install_compiled_loads_from_copy_in_user_cache(tmp_path):
    kernels = _copy_package(tmp_path)
    (kernels / "probe_callee.py").write_text(CALLEE.format(value=1))
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "home" / ".cache")}
    assert _probe(tmp_path, **env)["hits"] == 0           # compiled beside the sources
    read_only = READ_ONLY.format(path=str(kernels / "__pycache__")) + PROBE
    user = _probe(tmp_path, read_only, **env)
    assert (user["value"], user["hits"]) == (11, 1)       # loaded, not compiled again
    assert "compiling" not in user["stderr"]
    assert any((tmp_path / "home" / ".cache" / "numba").rglob("probe_caller.plus_ten-*.nbi"))


def test_what_compiles_every_kernel_module_named():
    import re
    from pathlib import Path

    from obook._kernels import cached_load

    kernels = Path(cached_load.__file__).parent
    modules = [f.stem for f in kernels.glob("*.py") if re.search(r"^@njit", f.read_text(), re.M)]
    assert "book" in modules and "hashtab" in modules
    unnamed = [m for m in modules if cached_load.what_compiles(f"obook._kernels.{m}")[0] == m]
    assert unnamed == []
    assert cached_load.what_compiles("obook.gen.itch")[0] == "the feed generators"


def test_announce_compile_in_obook_compile_leaves_out_the_hint_to_run_it(monkeypatch, caplog):
    from types import SimpleNamespace

    from obook._kernels import cached_load

    kernel = SimpleNamespace(__module__="obook._kernels.itch")
    monkeypatch.setattr(cached_load, "_announced", set())
    monkeypatch.setattr(cached_load, "AHEAD", False)
    with caplog.at_level("WARNING", logger="obook"):
        cached_load._announce_compile(kernel)
    assert "'obook compile' compiles them all ahead" in caplog.text
    caplog.clear()
    monkeypatch.setattr(cached_load, "_announced", set())
    monkeypatch.setattr(cached_load, "AHEAD", True)
    with caplog.at_level("WARNING", logger="obook"):
        cached_load._announce_compile(kernel)
    assert "compiling the kernels of Nasdaq ITCH (about" in caplog.text and "obook compile" not in caplog.text
