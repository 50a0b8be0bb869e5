"""obook/cli/sql_types.py: a DuckDB result converted for each output of ``obook sql``."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from obook.cli.sql_types import csv_ready, for_output, printable, unique_names
from obook.errors import OutputError


@pytest.fixture()
def con():
    c = duckdb.connect()
    yield c
    c.close()


@pytest.mark.parametrize("style", ["table", "csv", "json", "parquet", "arrow"])
def test_for_output_plain_types_same_relation_nothing_converted(con, style):
    rel = con.sql("SELECT 1 AS a, 'x' AS b, 1.5::DECIMAL(4, 1) AS c, TIMESTAMP '2020-01-01' AS d, unhex('00') AS e")
    converted, json_columns = for_output(rel, style)
    assert converted is rel and json_columns == set()


def test_for_output_json_nested_columns_as_json_text(con):
    rel, json_columns = for_output(con.sql("SELECT 1 AS n, [INTERVAL 1 DAY] AS l, MAP {'k': 1} AS m"), "json")
    assert json_columns == {1, 2}
    assert rel.columns == ["n", "l", "m"] and rel.fetchall() == [(1, '["1 day"]', '{"k":1}')]


@pytest.mark.parametrize("style", ["parquet", "arrow"])
def test_for_output_file_keeps_nested_types(con, style):
    rel = con.sql("SELECT [1, 2] AS l, {'a': 1} AS s")
    assert for_output(rel, style)[0] is rel


def test_for_output_parquet_nested_union_raises_output_error_naming_column(con):
    rel = con.sql("SELECT {'u': union_value(k := 1)} AS \"my col\"")
    with pytest.raises(OutputError, match=r"^x\.parquet: column 'my col' is STRUCT\(u UNION\(k INTEGER\)\)"):
        for_output(rel, "parquet", "x.parquet")


def test_unique_names_repeated_name_numbered():
    assert unique_names(["a", "a", "a_1", "b", "a"]) == ["a", "a_1", "a_1_1", "b", "a_2"]


def _dates(values) -> pa.RecordBatch:
    return pa.record_batch([pa.array(values, pa.int32()).cast(pa.date32())], names=["d"])


def test_csv_ready_batch_without_infinity_unchanged():
    batch = _dates([0, 18262])
    assert csv_ready(batch) is batch


def test_csv_ready_infinite_date_as_text():
    batch = csv_ready(_dates([2 ** 31 - 1, 0, -(2 ** 31 - 1), None]))
    assert batch.column(0).to_pylist() == ["infinity", "1970-01-01", "-infinity", None]


def test_printable_infinite_timestamp_ns_as_text_not_a_wrapped_date():
    batch = pa.record_batch([pa.array([2 ** 63 - 1, 0], pa.timestamp("ns"))], names=["t"])
    assert printable(batch).column(0).to_pylist() == ["infinity", "1970-01-01 00:00:00.000000000"]


def _times(values, unit="us") -> pa.RecordBatch:
    return pa.record_batch([pa.array(values, pa.int64()).cast(pa.time64(unit))], names=["t"])


@pytest.mark.parametrize("unit, text", [("us", "24:00:00.000000"), ("ns", "24:00:00.000000000")])
def test_printable_time_of_24_hours_as_24_00_00_not_out_of_range(unit, text):
    day = 86_400 * (10 ** 6 if unit == "us" else 10 ** 9)
    batch = printable(_times([day, 0, None], unit))
    assert batch.column(0).to_pylist() == [text, text.replace("24", "00", 1), None]


def test_csv_ready_time_of_24_hours_as_24_00_00_not_out_of_range():
    batch = csv_ready(_times([86_400 * 10 ** 6, 3_600 * 10 ** 6]))
    assert batch.column(0).to_pylist() == ["24:00:00.000000", "01:00:00.000000"]


def test_csv_ready_times_within_the_day_unchanged():
    batch = _times([0, 3_600 * 10 ** 6])
    assert csv_ready(batch) is batch
