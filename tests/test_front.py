"""The package front stays thin: ``import obook`` loads no DuckDB, polars, numba or kernels;
the adapters are attributes right after it; DuckDB's and polars' adapters load apart."""

import subprocess
import sys

HEAVY = ("duckdb", "polars", "numba", "obook._kernels", "obook.engine", "obook.duckdb",
         "obook.polars", "obook.to_parquet")


def _run(code: str) -> str:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_front_import_loads_no_heavy_module():
    out = _run("import sys, obook; print(sorted(m for m in %r if m in sys.modules))" % (HEAVY,))
    assert out == "[]"


def test_front_duckdb_and_polars_are_attributes_after_import():
    out = _run("import obook, duckdb\n"
               "con = duckdb.connect()\n"
               "obook.duckdb.install(con)\n"
               "print(callable(obook.polars.scan_bbo), callable(obook.scan_bbo), callable(obook.connect))")
    assert out == "True True True"


def test_front_duckdb_adapter_does_not_load_polars_adapter():
    out = _run("import sys, obook, duckdb\nobook.duckdb.install(duckdb.connect())\n"
               "print('obook.polars' in sys.modules, 'polars' in sys.modules)")
    assert out == "False False"


def test_front_polars_adapter_does_not_load_duckdb_adapter():
    out = _run("import sys, obook\nobook.polars.scan_bbo\nprint('obook.duckdb' in sys.modules)")
    assert out == "False"


def test_front_no_module_is_faked_into_sys_modules():
    out = _run("import sys, obook, obook.tables, obook.to_parquet, obook.pipelines, obook.udfs, obook.sql\n"
               "fake = [n for n, m in sys.modules.items() if n.split('.')[0] == 'obook' and\n"
               "        (getattr(m, '__spec__', None) is None or not getattr(m, '__file__', None))]\n"
               "print(fake, obook.convert is obook.to_parquet.convert)")
    assert out == "[] True"


def test_front_every_table_reader_and_scan_in_all_and_dir():
    """``from obook import *`` and ``dir(obook)`` (a notebook's completion) offer every table's
    reader and scan, ``obook.spread`` and ``obook.scan_bars`` as ``obook.bbo``."""
    out = _run("import obook, obook.polars\n"
               "from obook.tables import tables\n"
               "want = set(tables()) | {'scan_' + t for t in tables()}\n"
               "star = {}\n"
               "exec('from obook import *', star)\n"
               "polars_star = {}\n"
               "exec('from obook.polars import *', polars_star)\n"
               "print(sorted(want - set(obook.__all__)), sorted(want - set(dir(obook))), sorted(want - set(star)),\n"
               "      sorted({'scan_' + t for t in tables()} - set(polars_star)))")
    assert out == "[] [] [] []"
