"""Format detection refuses table files (Parquet, Arrow IPC file and stream: obook's own
outputs among them) with one line naming the file and what it is, whatever the file's name,
plain, gzipped or zipped, alone or in a list of a feed's files."""

from __future__ import annotations

import gzip
import zipfile

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from obook.errors import ObookError
from obook.feeds import detect_format
from tests.cli_support import cli_error

TABLE = pa.table({"time": pa.array([1, 2], pa.int64()), "ticker": ["AAA", "BBB"]})


def _parquet(path):
    pq.write_table(TABLE, path)
    return path


def _arrow_file(path):
    with ipc.new_file(path, TABLE.schema) as w:
        w.write_table(TABLE)
    return path


def _arrow_stream(path):
    with ipc.new_stream(path, TABLE.schema) as w:
        w.write_table(TABLE)
    return path


@pytest.mark.parametrize("name, write, kind", [
    ("out.parquet", _parquet, "a Parquet file"),
    ("bbo.csv", _parquet, "a Parquet file"),             # a feed's name, a table's bytes
    ("day.itch", _parquet, "a Parquet file"),
    ("out.arrow", _arrow_file, "an Arrow IPC file"),
    ("out.arrows", _arrow_stream, "an Arrow IPC stream"),
])
def test_detect_format_table_file_refused_naming_file_and_kind(tmp_path, name, write, kind):
    path = write(tmp_path / name)
    with pytest.raises(ObookError) as e:
        detect_format(path)
    assert str(e.value) == (f"{path}: {kind} (a table, not a feed): read it with DuckDB, polars or pyarrow, "
                            "or give the feed it came from")


def test_detect_format_gzipped_or_zipped_parquet_refused_as_a_table(tmp_path):
    data = _parquet(tmp_path / "t.parquet").read_bytes()
    (tmp_path / "t.parquet.gz").write_bytes(gzip.compress(data))
    with zipfile.ZipFile(tmp_path / "t.zip", "w") as z:
        z.writestr("t.parquet", data)
    for name in ("t.parquet.gz", "t.zip"):
        with pytest.raises(ObookError, match=rf"{name}: a Parquet file \(a table, not a feed\)"):
            detect_format(tmp_path / name)


def test_detect_format_table_in_a_feed_list_refused_naming_it(tmp_path):
    feed = tmp_path / "day.csv"
    feed.write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,1,B,100,10000\n")
    table = _parquet(tmp_path / "more.csv")
    with pytest.raises(ObookError, match=rf"^{table}: a Parquet file \(a table, not a feed\)"):
        detect_format([feed, table])


def test_detect_format_obook_bbo_output_refused_by_the_cli_in_one_line(tmp_path, capsys):
    import obook
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(feed, 2000, 3, seed=1)
    pq.write_table(obook.bbo(str(feed), workers=1).read_all(), tmp_path / "b.parquet")
    for args in (("bbo", tmp_path / "b.parquet"), ("table", "trades", tmp_path / "b.parquet")):
        err = cli_error(capsys, *args)
        assert err == (f"error: {tmp_path / 'b.parquet'}: a Parquet file (a table, not a feed): read it with "
                       "DuckDB, polars or pyarrow, or give the feed it came from\n")
