"""The Python kernels (``OBOOK_KERNELS=python``, obook/_kernels/jit.py): the command line
runs tiny inputs on the kernels as plain Python instead of importing numba. Every table of
every format must come out byte for byte as the compiled kernels write it, errors included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from obook._kernels import jit
from obook.cli import kernels as cli_kernels
from test_fuzz_itch import small_feed


def _obook(*args, kernels: str | None, **more_env) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (jit.ENV, "NUMBA_DISABLE_JIT")}
    if kernels:
        env[jit.ENV] = kernels
    env.update(more_env)
    return subprocess.run([sys.executable, "-m", "obook", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


def _tables(out: Path) -> dict:
    return {f.name: pq.read_table(f).replace_schema_metadata(None) for f in sorted(out.glob("*.parquet"))}


def _both(feed: Path, tmp_path: Path, *options) -> tuple[dict, dict]:
    results = []
    for kernels in ("python", "compiled"):
        out = tmp_path / kernels
        done = _obook("convert", feed, out, "-w", "1", *options, kernels=kernels)
        assert done.returncode == 0, done.stderr
        results.append(_tables(out))
    return results[0], results[1]


GENERATED = {
    "itch": (["itch", "--messages", "3000", "--instruments", "7", "--seed", "3"],
             "bbo,trades,orders,depth,symbols,system_events,trading_actions"),
    "csv": (["csv", "-n", "3000", "-k", "5", "--seed", "3"], "bbo,trades,orders,depth"),
    "szse": (["szse", "-n", "2000", "-k", "4", "--seed", "3"], "bbo,trades,orders,depth"),
    "szse-bin": (["szse", "-n", "2000", "-k", "4", "--seed", "3", "--binary"], "bbo,trades,depth"),
    "sse": (["sse", "-n", "2000", "-k", "3", "--seed", "3"], "bbo,trades,orders,depth"),
    "pitch": (["pitch", "--messages", "3000", "--stocks", "7", "--seed", "3"], "bbo,trades,orders,depth"),
}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_python_kernels_generated_day_tables_equal_compiled(tmp_path, name):
    gen_args, tables = GENERATED[name]
    feed = tmp_path / f"day.{'bin' if '--binary' in gen_args else 'feed'}"
    done = _obook("gen", gen_args[0], feed, *gen_args[1:], kernels="compiled")
    assert done.returncode == 0, done.stderr
    python, compiled = _both(feed, tmp_path, "--tables", tables, "--date", "2024-03-01")
    assert set(python) == {f"{t}.parquet" for t in tables.split(",")}
    for name_, table in compiled.items():
        assert table.num_rows > 0, name_
        assert python[name_].equals(table), name_


def test_python_kernels_edge_case_itch_feed_equals_compiled(tmp_path):
    feed = tmp_path / "edge.itch"
    feed.write_bytes(small_feed().bytes())
    python, compiled = _both(feed, tmp_path, "--tables", "bbo,trades,orders,depth", "--levels", "3")
    assert python.keys() == compiled.keys()
    for name, table in compiled.items():
        assert python[name].equals(table), name


def _generated_itch(tmp_path: Path) -> Path:
    feed = tmp_path / "day.itch"
    done = _obook("gen", "itch", feed, "-n", "3000", "-k", "5", "--seed", "5", kernels="compiled")
    assert done.returncode == 0, done.stderr
    return feed


def test_python_kernels_capture_and_databento_tables_equal_compiled(tmp_path):
    from obook.gen.databento import mbo_flow, write_dbn

    capture = tmp_path / "lines.pcap"
    done = _obook("gen", "pcap", _generated_itch(tmp_path), capture, kernels="compiled")
    assert done.returncode == 0, done.stderr
    dbn = tmp_path / "mbo.dbn"
    write_dbn(dbn, mbo_flow(3000, 4, 3), version=3)
    for feed in (capture, dbn):
        python, compiled = _both(feed, tmp_path / feed.suffix[1:], "--tables", "bbo,trades,orders,depth")
        assert python.keys() == compiled.keys() and compiled
        for name, table in compiled.items():
            assert table.num_rows > 0 and python[name].equals(table), (feed.name, name)


def test_python_kernels_lobster_and_simulate_equal_compiled(tmp_path):
    from test_simulate_frontends import FEED, ORDERS

    feed = _generated_itch(tmp_path)
    done = _obook("bbo", feed, kernels="compiled")
    tickers = sorted({line.split(",")[1] for line in done.stdout.splitlines()})[:2]
    outs = {}
    for kernels in ("python", "compiled"):
        done = _obook("lobster", feed, tmp_path / f"lob_{kernels}", "--date", "2024-03-01", "--levels", "5",
                      "--tickers", ",".join(tickers), kernels=kernels)
        assert done.returncode == 0, done.stderr
        outs[kernels] = {f.name: f.read_bytes() for f in sorted((tmp_path / f"lob_{kernels}").iterdir())}
    assert outs["python"] == outs["compiled"] and outs["compiled"]
    (tmp_path / "feed.csv").write_text(FEED)
    (tmp_path / "orders.csv").write_text(ORDERS)
    for kernels in ("python", "compiled"):
        done = _obook("simulate", tmp_path / "feed.csv", tmp_path / "orders.csv", "--latency", "lat", "-w", "1",
                      "-o", tmp_path / f"sim_{kernels}", kernels=kernels)
        assert done.returncode == 0, done.stderr
    python, compiled = _tables(tmp_path / "sim_python"), _tables(tmp_path / "sim_compiled")
    assert python.keys() == compiled.keys() and len(compiled) >= 5
    for name, table in compiled.items():
        assert python[name].equals(table), name


def test_python_kernels_bad_record_same_error_and_rows_as_compiled(tmp_path):
    feed = tmp_path / "cut.itch"
    data = small_feed().bytes()
    feed.write_bytes(data[:-5])                      # the last message cut short
    runs = [_obook("bbo", feed, kernels=k) for k in ("python", "compiled")]
    assert runs[0].returncode == runs[1].returncode == 1
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout
    assert runs[0].stderr == runs[1].stderr and "error:" in runs[0].stderr


def test_python_kernels_numba_disable_jit_runs_them_same_rows(tmp_path):
    feed = tmp_path / "day.itch"
    feed.write_bytes(small_feed().bytes())
    compiled = _obook("bbo", feed, "-w", "1", kernels="compiled")
    disabled = _obook("bbo", feed, "-w", "1", kernels="compiled", NUMBA_DISABLE_JIT="1")
    assert compiled.returncode == disabled.returncode == 0, disabled.stderr
    assert disabled.stdout == compiled.stdout and compiled.stdout
    refused = _obook("compile", "itch", kernels=None, NUMBA_DISABLE_JIT="1")
    assert refused.returncode == 1 and "NUMBA_DISABLE_JIT" in refused.stderr


def test_python_kernels_tiny_command_never_imports_numba(tmp_path):
    feed = tmp_path / "tiny.itch"
    feed.write_bytes(small_feed().bytes())
    code = ("import sys, atexit\n"
            "atexit.register(lambda: sys.stderr.write('NUMBA=%d\\n' % ('numba' in sys.modules)))\n"
            f"sys.argv = ['obook', 'bbo', {str(feed)!r}]\n"
            "from obook._entry import main\nmain()\n")
    env = {k: v for k, v in os.environ.items() if k != jit.ENV}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "NUMBA=0" in done.stderr and done.stdout


def test_python_kernels_depth_parquet_of_a_tiny_feed_prints_no_overflow_warning(tmp_path):
    feed, out = tmp_path / "tiny.itch", tmp_path / "depth.parquet"
    assert _obook("gen", "itch", feed, "-n", "1500", kernels="compiled").returncode == 0
    assert feed.stat().st_size <= cli_kernels.PYTHON_KERNELS_BYTES      # the command picks the Python kernels
    done = _obook("table", "depth", feed, "-o", out, kernels=None)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"wrote {out} ({pq.read_metadata(out).num_rows} rows)"]


def _choose(args, monkeypatch, preset=None) -> str | None:
    monkeypatch.setenv(jit.ENV, "")      # recorded, so that teardown removes what choose_kernels sets
    monkeypatch.delenv(jit.ENV)
    if preset:
        monkeypatch.setenv(jit.ENV, preset)
    monkeypatch.setattr(cli_kernels, "sys", type("S", (), {"modules": {}})())   # kernels not imported yet
    cli_kernels.choose_kernels([str(a) for a in args])
    return os.environ.get(jit.ENV)


def test_choose_kernels_tiny_file_python(tmp_path, monkeypatch):
    feed = tmp_path / "f.itch"
    feed.write_bytes(b"\0" * 1000)
    assert _choose([feed, "-w", "1", tmp_path / "out"], monkeypatch) == "python"


def test_choose_kernels_large_or_compressed_or_unknown_input_compiled(tmp_path, monkeypatch):
    big = tmp_path / "big.itch"
    big.write_bytes(b"\0" * (cli_kernels.PYTHON_KERNELS_BYTES + 1))
    gz = tmp_path / "f.gz"                          # 10 KB of gzip: taken as 80 KB
    gz.write_bytes(b"\x1f\x8b" + b"\0" * (10 * 1024))
    tiny = tmp_path / "tiny.itch"
    tiny.write_bytes(b"\0" * 100)
    assert _choose([big], monkeypatch) is None
    assert _choose([gz], monkeypatch) is None
    assert _choose(["-"], monkeypatch) is None                        # stdin: size unknown
    assert _choose(["a.pcap:233.54.12.111:26477"], monkeypatch) is None
    assert _choose([tiny, "--latency"], monkeypatch) is None
    assert _choose(["SELECT 1"], monkeypatch) is None                 # no file: compiled
    assert _choose([tiny], monkeypatch, preset="compiled") == "compiled"   # the user's choice stands


def test_choose_kernels_switch_names_match_jit():
    assert (cli_kernels.ENV, cli_kernels.PYTHON) == (jit.ENV, jit.PYTHON)


def test_intrinsic_stand_ins_python_equal_compiled():
    """The Python stand-ins of the numba intrinsics (copy, unaligned load, trailing zeros),
    run beside what they replace, and against values worked out here."""
    code = ("import numpy as np\n"
            "from obook._kernels.memcopy import copy_bytes\n"
            "from obook._kernels.csv_decode import SC_C0, find_commas\n"
            "d = np.zeros(8, np.uint8); copy_bytes(d, 2, np.arange(10, dtype=np.uint8), 3, 4)\n"
            "sc = np.zeros((1, SC_C0 + 6), np.int64)\n"
            "buf = np.frombuffer(b'ab,cde,f,,ghijklmnop,q\\nr,e,s,t', np.uint8).copy()\n"
            "end, nc = find_commas(buf, 0, sc, 0)\n"
            "print([int(x) for x in d], int(end), [int(x) for x in sc[0, SC_C0:SC_C0 + nc]])\n")
    outs = []
    for kernels in ("python", "compiled"):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, jit.ENV: kernels})
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    line = b"ab,cde,f,,ghijklmnop,q"
    assert outs[0] == outs[1] == f"{[0, 0, 3, 4, 5, 6, 0, 0]} {len(line)} {[i for i, c in enumerate(line) if c == 44]}\n"


def test_python_kernels_plot_png_equals_compiled(tmp_path):
    pytest.importorskip("matplotlib")
    feed = _generated_itch(tmp_path)
    pictures = []
    for kernels in ("python", "compiled"):
        out = tmp_path / f"{kernels}.png"
        done = _obook("plot", feed, out, "--interval", "5s", kernels=kernels)
        assert done.returncode == 0, done.stderr
        pictures.append(out.read_bytes())
    assert pictures[0] == pictures[1] and len(pictures[0]) > 10_000
