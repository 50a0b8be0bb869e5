"""One feed, identical BBO rows through every front end: obook.bbo, DuckDB, polars,
``obook bbo --output x.parquet`` and ``obook sql ... --output``."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import obook
from obook.duckdb import connect
from obook.polars import scan_bbo
from frontend_feeds import write_generated_feed

CLI = [sys.executable, "-c", "from obook.cli import main; main()"]


@pytest.fixture(scope="module")
def feed(tmp_path_factory):
    return write_generated_feed(tmp_path_factory.mktemp("parity") / "day.itch", 300_000, stocks=25, seed=3)


@pytest.fixture(scope="module")
def expected(feed) -> pa.Table:
    table = obook.bbo(str(feed), workers=1).read_all()
    assert table.num_rows > 1000
    return table


def _types(table: pa.Table) -> list[pa.DataType]:
    # polars strings come back as large_string: same values, same logical type
    return [pa.string() if pa.types.is_large_string(f.type) else f.type for f in table.schema]


def _same(table: pa.Table, expected: pa.Table) -> None:
    assert table.schema.names == expected.schema.names
    assert _types(table) == _types(expected)
    assert table.to_pylist() == expected.to_pylist()


@pytest.mark.parametrize("workers", [1, 3])
def test_parity_duckdb_rows_equal_engine_rows(feed, expected, workers):
    con = connect()
    table = con.sql(f"SELECT * FROM obook_bbo('{feed}', workers := {workers}) ORDER BY seq").arrow()
    if isinstance(table, pa.RecordBatchReader):
        table = table.read_all()
    _same(table, expected)
    con.close()


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_parity_polars_rows_equal_engine_rows(feed, expected, engine):
    df = scan_bbo(feed, workers=2).collect(engine=engine)
    _same(df.to_arrow(), expected)


def test_parity_cli_bbo_parquet_equals_engine_rows(feed, expected, tmp_path):
    out = tmp_path / "x.parquet"
    run = subprocess.run(CLI + ["bbo", str(feed), "--workers", "2", "--output", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    _same(pq.read_table(out), expected)


def test_parity_cli_sql_parquet_equals_engine_rows(feed, expected, tmp_path):
    from obook.cli import app

    if "sql" not in {c.name for c in app.registered_commands}:
        pytest.skip("obook sql is not registered in obook/cli/__init__.py yet")
    out = tmp_path / "q.parquet"
    run = subprocess.run(CLI + ["sql", f"SELECT * FROM obook_bbo('{feed}', workers := 2) ORDER BY seq",
                                "--output", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    _same(pq.read_table(out), expected)
