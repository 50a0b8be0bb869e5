"""Each script of examples/ runs as a subprocess and exits 0."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import obook
from frontend_feeds import write_generated_feed

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

@pytest.fixture(scope="module")
def feed(tmp_path_factory):
    return write_generated_feed(tmp_path_factory.mktemp("examples") / "day.itch", 100_000, stocks=10)


def _run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run


def test_example_query_duckdb_with_feed_argument_prints_results(feed, tmp_path):
    run = _run("query_duckdb.py", str(feed), cwd=tmp_path)
    assert "BBO updates per ticker" in run.stdout
    assert "first 3 rows" in run.stdout


def test_example_query_duckdb_without_argument_reads_bundled_sample(tmp_path):
    run = _run("query_duckdb.py", cwd=tmp_path)
    assert "bundled sample day 01022026.NASDAQ_ITCH50.gz" in run.stderr
    assert "time-weighted average spread" in run.stdout


def test_example_bundled_sample_is_what_gen_itch_writes(tmp_path):
    """The sample the README replays is the generator's day, byte for byte once unzipped."""
    out = tmp_path / "01022026.NASDAQ_ITCH50.gz"
    run = subprocess.run([sys.executable, "-m", "obook", "gen", "itch", str(out), "-n", "50000", "-k", "20",
                          "-d", "2026-01-02"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    bundled = EXAMPLES / "data" / out.name
    assert gzip.decompress(bundled.read_bytes()) == gzip.decompress(out.read_bytes())


def test_example_scan_polars_with_feed_argument_prints_frames(feed, tmp_path):
    run = _run("scan_polars.py", str(feed), cwd=tmp_path)
    assert "median_spread_ticks" in run.stdout


def test_example_write_parquet_writes_three_equal_files(feed, tmp_path):
    out = tmp_path / "out"
    _run("write_parquet.py", str(feed), str(out), cwd=tmp_path)
    rows = {name: pq.read_metadata(out / name).num_rows
            for name in ("bbo.parquet", "spread.parquet", "bbo_polars.parquet")}
    n = obook.bbo(str(feed), workers=1).read_all().num_rows
    assert rows == {"bbo.parquet": n, "spread.parquet": n, "bbo_polars.parquet": n}


def test_example_trades_and_depth_vwap_imbalance_and_files(feed, tmp_path):
    out = tmp_path / "out"
    run = _run("trades_and_depth.py", str(feed), str(out), cwd=tmp_path)
    assert "VWAP" in run.stdout and "imbalance" in run.stdout and "footer" in run.stdout
    trades = pq.read_table(out / "trades.parquet")
    assert trades.num_rows == obook.trades(str(feed), workers=1).read_all().num_rows > 0
    assert {"bbo.parquet", "trades.parquet", "depth.parquet"} <= {p.name for p in out.iterdir()}


def test_example_strategy_quote_without_argument_reads_bundled_sample(tmp_path):
    run = _run("strategy_quote.py", cwd=tmp_path)
    assert "bundled sample day 01022026.NASDAQ_ITCH50.gz" in run.stderr
    sent = int(run.stdout.split("orders sent: ")[1].split()[0])
    assert sent > 0 and f"venue received: {sent}\n" in run.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", ["query_duckdb.py", "scan_polars.py", "write_parquet.py", "trades_and_depth.py",
                                    "strategy_quote.py"])
def test_example_missing_feed_one_line_message_no_traceback(tmp_path, script):
    run = subprocess.run([sys.executable, str(EXAMPLES / script), "missing.itch"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and run.stderr == "missing.itch: no such feed file\n", run.stderr


@pytest.mark.parametrize("script", ["query_duckdb.py", "scan_polars.py", "write_parquet.py", "trades_and_depth.py",
                                    "strategy_quote.py"])
def test_example_folder_or_cut_feed_one_line_message_no_traceback(tmp_path, script, feed):
    cut = tmp_path / "cut.itch"
    cut.write_bytes(feed.read_bytes()[:100_000] + b"\x00\x30A")
    for given, reason in ((tmp_path, "not a"), (cut, "truncated record")):
        run = subprocess.run([sys.executable, str(EXAMPLES / script), str(given)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
        line = run.stderr.splitlines()[-1]
        assert line.startswith(f"{given}: ") and reason in line, run.stderr


@pytest.mark.parametrize("script", ["write_parquet.py", "trades_and_depth.py"])
def test_example_output_folder_a_file_one_line_message_no_traceback(tmp_path, script, feed):
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    run = subprocess.run([sys.executable, str(EXAMPLES / script), str(feed), str(taken)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.splitlines()[-1] == f"{taken}: exists and is not a directory", run.stderr
