"""obook/cli/sql_units.py: ``obook sql --output`` records obook's units when the result is one
obook table's columns as the table gives them, and none otherwise; obook's analytics then
refuse the file (or take the format given) rather than assume a format's units."""

from __future__ import annotations

import datetime as dt

import duckdb
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import obook
from obook.duckdb import connect

from cli_support import cli_run


@pytest.fixture()
def csv(tmp_path):
    """A generated CSV day: ms times (its first BBO row at 34200003 ms, 09:30:00.003)."""
    from obook.gen.csv import write_csv

    path = tmp_path / "2026-01-02.csv"
    write_csv(path, 500, 2, seed=5)
    return path


def _units(path) -> dict:
    schema = pq.read_schema(path) if str(path).endswith(".parquet") else ipc.open_file(path).schema
    return {k: v for k, v in (schema.metadata or {}).items() if k.startswith(b"obook.")}


def _sql(capsys, query, out):
    code, err = cli_run(capsys, "sql", query, "-o", out)
    assert code == 0, err


def _first_time_of_day(path, fmt=None):
    con = connect()
    try:
        given = f", format := '{fmt}'" if fmt else ""
        return con.execute(f"SELECT obook_time_of_day(time, '{path}'{given}) FROM '{path}' "
                           "ORDER BY time LIMIT 1").fetchall()[0][0]
    finally:
        con.close()


def test_sql_units_output_of_an_obook_tables_rows_records_its_units(tmp_path, capsys, csv):
    out = tmp_path / "bbo.parquet"
    _sql(capsys, f"FROM obook_bbo('{csv}') WHERE ticker IS NOT NULL ORDER BY seq LIMIT 20", out)
    assert _units(out) == obook.bbo(csv, workers=1).schema.metadata
    assert _first_time_of_day(out) == dt.time(9, 30, 0, 3000)


def test_sql_units_output_of_some_columns_records_theirs(tmp_path, capsys, csv):
    out = tmp_path / "bbo.arrow"
    _sql(capsys, f"SELECT DISTINCT b.time, bid_px FROM obook_bbo(['{csv}'], format := 'CSV', prices := 'decimal') b", out)
    units = _units(out)
    assert units[b"obook.time_unit"] == b"ms" and units[b"obook.prices"] == b"decimal"
    assert units[b"obook.price_columns"] == b"bid_px" and units[b"obook.time_columns"] == b"time"


@pytest.mark.parametrize("select", [
    "SELECT time // 1000 AS time FROM obook_bbo('{csv}')",
    "SELECT bid_px AS time FROM obook_bbo('{csv}')",
    "SELECT max(time) AS time FROM obook_bbo('{csv}')",
    "SELECT a.time FROM obook_bbo('{csv}') a JOIN obook_trades('{csv}') t USING (time)",
    "WITH b AS (FROM obook_bbo('{csv}')) SELECT time FROM b",
    "SELECT * REPLACE (time * 2 AS time) FROM obook_bbo('{csv}')",
])
def test_sql_units_output_of_a_computed_result_records_none_and_analytics_refuse_it(tmp_path, capsys, csv, select):
    out = tmp_path / "x.parquet"
    _sql(capsys, select.format(csv=csv), out)
    assert _units(out) == {}
    with pytest.raises(duckdb.Error, match=rf"{out}: a Parquet file without obook's units"):
        _first_time_of_day(out)


def test_sql_units_output_without_units_takes_the_format_given(tmp_path, capsys, csv):
    out = tmp_path / "x.parquet"
    _sql(capsys, f"SELECT time + 0 AS time FROM obook_bbo('{csv}')", out)
    assert _units(out) == {} and _first_time_of_day(out, "csv") == dt.time(9, 30, 0, 3000)


def test_sql_units_help_says_what_output_records():
    import typer
    from typer.main import get_command

    from obook.cli.sql import sql

    app = typer.Typer()
    app.command("sql")(sql)
    app.command("noop")(lambda: None)    # two commands: "sql" stays a sub-command
    command = get_command(app).commands["sql"]
    output = next(p.help for p in command.params if p.name == "output")
    assert "A .parquet or .arrow file records obook's units" in output and "any other result records none" in output
    assert "recorded only for a result of one obook table's columns" in " ".join(command.help.split())
