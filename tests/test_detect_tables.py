"""Format detection refuses table files (Parquet, Arrow IPC file and stream: obook's own
outputs among them) with one line naming the file and what it is, whatever the file's name,
plain, gzipped or zipped, alone or in a list of a feed's files; so does a format given for one
(``format=`` / ``format :=``), naming both; the units of Parquet files obook wrote are read
with ``format :=`` only when it is the format they record."""

from __future__ import annotations

import gzip
import re
import zipfile

import duckdb
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


@pytest.mark.parametrize("name", ["out.parquet", "day.itch", "t.parquet.gz"])
def test_resolve_format_given_for_a_table_file_refused_naming_format_and_file(tmp_path, name):
    import obook
    from obook.duckdb import connect

    path = tmp_path / name
    data = _parquet(tmp_path / "t.parquet").read_bytes()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    says = (f"{path}: format 'itch' was given, but the file is a Parquet file (a table, not a feed that format "
            "decodes): read it with DuckDB, polars or pyarrow, or give the feed it came from")
    with pytest.raises(ObookError) as e:
        obook.bbo(path, format="itch", workers=1).read_all()
    assert str(e.value) == says
    with pytest.raises(ObookError, match=re.escape(says)):
        obook.polars.scan_trades(str(path), format="itch", workers=1).collect()
    con = connect()
    try:
        for query in (f"FROM obook_bbo('{path}', format := 'itch')", f"FROM obook_twas(['{path}'], format := 'itch')"):
            with pytest.raises(duckdb.Error, match=re.escape(says)):
                con.execute(query).fetchall()
    finally:
        con.close()


def test_obook_unit_of_obook_parquet_takes_format_only_when_the_file_records_it(tmp_path):
    import obook
    from obook.duckdb import connect
    from obook.gen.csv import write_csv

    feed = tmp_path / "2026-01-02.csv"
    write_csv(feed, 300, 2, seed=5)
    obook.convert(feed, tmp_path / "out", tables=["bbo"], workers=1)
    path = tmp_path / "out" / "bbo.parquet"
    con = connect()
    try:
        unit = f"SELECT obook_unit(to_json('{path}'), %s, 'time_unit_ns')"
        assert con.execute(unit % "'CSV'").fetchall() == con.execute(unit % "NULL").fetchall() == [("1000000",)]
        with pytest.raises(duckdb.Error, match=re.escape(
                f"{path}: format := 'itch' was given, but the file records the units of format 'csv' (obook.format)")):
            con.execute(unit % "'itch'").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("head", [b"PAR1", b"PAR1" + bytes(20), b"ARROW1\0\0" + bytes(30), b"FEA1",
                                  b"\xff\xff\xff\xff\x08\0\0\0" + bytes(8)],
                         ids=["parquet-magic", "parquet-magic-no-footer", "arrow-magic", "feather-magic",
                              "arrow-stream-marker"])
def test_resolve_format_given_feed_starting_like_a_table_decoded_as_the_format(tmp_path, head):
    """A feed given with its format whose first bytes happen to be a table's magic (and is no
    such table) is decoded as that format: its error is the feed's, not 'a table'."""
    import obook
    from obook.errors import FeedError

    path = tmp_path / "day.itch"
    path.write_bytes(head)
    with pytest.raises(FeedError):
        obook.bbo(path, format="itch", workers=1).read_all()
