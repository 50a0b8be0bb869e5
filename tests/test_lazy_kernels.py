"""Each front end loads (and, on a first run, compiles) only the kernels of the formats it reads."""

import json
import os
import subprocess
import sys

FOREIGN = ("obook._kernels.l2_szse", "obook._kernels.l2_sse", "obook._kernels.dbn", "obook._kernels.csv_decode",
           "obook._kernels.match", "obook._kernels.simulate")


def _loaded(code: str, env: dict | None = None) -> list:
    full = {**os.environ, **(env or {})}
    full.pop("OBOOK_KERNELS", None)
    code += "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('obook._kernels.'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=full)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_worker_warm_itch_loads_no_other_formats_kernels():
    loaded = _loaded("from obook.engine.worker_main import warm\nwarm('itch')")
    assert "obook._kernels.itch" in loaded and "obook._kernels.book" in loaded
    assert not set(FOREIGN) & set(loaded)


def test_forkserver_preload_named_format_loads_only_its_kernels():
    loaded = _loaded("import obook.engine.forkserver_preload", {"OBOOK_FORKSERVER_FORMATS": "csv"})
    assert "obook._kernels.csv_decode" in loaded
    assert not (set(FOREIGN) - {"obook._kernels.csv_decode"}) & set(loaded)


def test_mp_context_next_to_duckdb_forkserver_told_the_feeds_format():
    code = ("import duckdb, os\nfrom obook.engine.workers import mp_context, WARM_ENV\n"
            "ctx = mp_context('itch')\nprint(ctx.get_start_method(), os.environ[WARM_ENV])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["forkserver", "itch"]


def test_mp_context_without_format_loads_no_book_kernels():
    loaded = _loaded("from obook.engine.workers import mp_context\nassert mp_context().get_start_method() == 'fork'")
    assert "obook._kernels.book" not in loaded


#: a CSV replay in this process after ``warm("csv")``: how many compiled versions each
#: kernel every worker runs had before the replay and after it (JSON)
WARM_THEN_REPLAY = """
import json
import obook
from obook._kernels import book, csv_decode
from obook.engine.worker_main import warm
from obook.gen.csv import write_csv

write_csv("day.csv", 40_000, 5, seed=1)
warm("csv")
kernels = {"decode_lines": csv_decode.decode_lines, "release_pending": csv_decode.release_pending,
           "crossed_books": book.crossed_books}
before = {name: len(k.signatures) for name, k in kernels.items()}
obook.bbo("day.csv", workers=1).read_all()
print(json.dumps([before, {name: len(k.signatures) for name, k in kernels.items()}]))
"""


def test_worker_warm_csv_loads_every_kernel_a_worker_runs(tmp_path):
    """Workers forked after ``warm`` inherit the kernels every worker runs: none compiles one
    of its own (on a first run, each would compile the CSV decoder again and say so)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OBOOK_KERNELS", "NUMBA_DISABLE_JIT")}
    out = subprocess.run([sys.executable, "-c", WARM_THEN_REPLAY], capture_output=True, text=True, check=True,
                         env=env, cwd=tmp_path)
    before, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert after == before and all(before.values()), (before, after)
