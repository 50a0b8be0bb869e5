"""The one Parquet writer's parallel row groups (obook/parquet.py): each row group is encoded
into a Parquet file of its own in memory and stitched into one file by rewriting the footer
(obook/parquet_footer.py). The file must be the one a single ``pq.ParquetWriter`` writes."""

from __future__ import annotations

import datetime as dt
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import obook.parquet as obook_parquet
from obook import parquet_footer as pf
from obook.schema import depth_schema


def _depth_table(n: int, levels: int = 2, seed: int = 1) -> pa.Table:
    """A depth table (the timestamp too) with nulls, repeated prices and a few tickers."""
    rng = np.random.default_rng(seed)
    seq = np.arange(n, dtype=np.int64) * 3
    time = np.cumsum(rng.integers(0, 1000, n)).astype(np.uint64)
    ticker = pa.array(np.array(["AAPL", "MSFT", "X", "ZVZZT"])[rng.integers(0, 4, n)])
    cols = [pa.array(seq), pa.array(time, pa.uint64()),
            pa.array(time.astype(np.int64) + 1_577_682_000_000_000_000, pa.timestamp("ns", "America/New_York")),
            ticker, pa.array(rng.integers(1, 9000, n).astype(np.uint16))]
    for _ in range(2 * levels):
        missing = rng.random(n) < 0.2
        cols += [pa.array(rng.integers(1, 500, n) * 100, pa.int64(), mask=missing),
                 pa.array(rng.integers(1, 50, n) * 100, pa.int64(), mask=missing),
                 pa.array(rng.integers(1, 9, n).astype(np.int32), pa.int32(), mask=missing)]
    schema = depth_schema(levels)
    schema = schema.insert(2, pa.field("timestamp", pa.timestamp("ns", "America/New_York"), nullable=False))
    return pa.Table.from_arrays(cols, schema=schema)


def _sink_write(path, table, batch_rows=700, metadata=None, **kw):
    sink = obook_parquet.ParquetSink(path, table.schema, **kw)
    for b in table.to_batches(max_chunksize=batch_rows):
        sink.write(b)
    sink.close(metadata)
    return sink


def _one_writer(path, table, group_rows: list[int], metadata=None, table_name=None):
    """What a single pq.ParquetWriter writes for the same row groups (the writer before)."""
    options = obook_parquet.parquet_options(table_name or obook_parquet.table_name(table.schema), table.schema)
    with pq.ParquetWriter(path, table.schema, **options) as w:
        start = 0
        for n in group_rows:
            w.write_table(table.slice(start, n), row_group_size=n)
            start += n
        if metadata:
            w.add_key_value_metadata(metadata)


def _footer_start(path) -> int:
    data = path.read_bytes()
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


_CHUNK = ("path_in_schema", "file_offset", "data_page_offset", "dictionary_page_offset",
          "encodings", "compression", "num_values", "total_compressed_size", "total_uncompressed_size",
          "has_dictionary_page", "is_stats_set")
_STATS = ("has_min_max", "min_raw", "max_raw", "null_count", "num_values")


def _groups(meta):
    """Every row group's fields and its columns' (offsets, encodings, sizes, statistics)."""
    out = []
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        cols = []
        for c in range(rg.num_columns):
            col = rg.column(c)
            stats = col.statistics
            cols.append([getattr(col, k) for k in _CHUNK]
                        + ([getattr(stats, k) for k in _STATS] if col.is_stats_set else []))
        out.append({"num_rows": rg.num_rows, "total_byte_size": rg.total_byte_size, "columns": cols})
    return out


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_sink_parallel_row_groups_equal_single_writer_file(tmp_path, monkeypatch, threads):
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 60_000)
    monkeypatch.setattr(obook_parquet, "ENCODE_THREADS", threads)
    monkeypatch.setattr(obook_parquet.SpareCores, "__call__", lambda self: True)
    table = _depth_table(12_000)
    meta = {"obook": '{"table": "depth"}'}
    _sink_write(tmp_path / "new.parquet", table, metadata=meta)
    got = pq.ParquetFile(tmp_path / "new.parquet").metadata
    assert got.num_row_groups > 3
    _one_writer(tmp_path / "old.parquet", table, [g["num_rows"] for g in _groups(got)], meta)
    old = pq.ParquetFile(tmp_path / "old.parquet").metadata
    # the same bytes up to the footer: every page at the same offset
    start = _footer_start(tmp_path / "old.parquet")
    assert start == _footer_start(tmp_path / "new.parquet")
    assert (tmp_path / "new.parquet").read_bytes()[:start] == (tmp_path / "old.parquet").read_bytes()[:start]
    # the same footer (row groups with their offsets, statistics, encodings; the key-value
    # metadata as a mapping: Arrow's own merge orders it by a hash)
    assert _groups(got) == _groups(old)
    assert got.metadata == old.metadata and got.schema == old.schema and got.num_rows == table.num_rows
    back = pq.read_table(tmp_path / "new.parquet")
    assert back.equals(table) and back.schema.metadata == table.schema.metadata


def test_sink_parallel_file_read_by_duckdb_and_polars_same_rows(tmp_path, monkeypatch):
    import duckdb
    import polars as pl

    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 40_000)
    table = _depth_table(9_000, levels=1)
    path = tmp_path / "x.parquet"
    _sink_write(path, table)
    assert pq.ParquetFile(path).metadata.num_row_groups > 3
    want = table.drop_columns(["timestamp"])
    seen = duckdb.sql(f"select * exclude (timestamp) from '{path}'").arrow()
    seen = seen.read_all() if hasattr(seen, "read_all") else seen
    assert seen.cast(want.schema).equals(want.replace_schema_metadata(None).cast(want.schema))
    frame = pl.read_parquet(path)
    assert frame.height == table.num_rows
    assert frame["seq"].to_list() == table["seq"].to_pylist()
    assert frame["bid_px_1"].to_list() == table["bid_px_1"].to_pylist()
    assert frame["ticker"].to_list() == table["ticker"].to_pylist()
    # a filter on seq (pushed down to the row groups by its statistics) gets the right rows
    mid = int(table["seq"][4500].as_py())
    assert duckdb.sql(f"select count(*) from '{path}' where seq >= {mid}").fetchall()[0][0] == 4500


def test_sink_no_rows_writes_schema_and_metadata_only(tmp_path):
    table = _depth_table(10).slice(0, 0)
    _sink_write(tmp_path / "x.parquet", table, metadata={"obook": "{}"})
    meta = pq.ParquetFile(tmp_path / "x.parquet").metadata
    assert meta.num_row_groups == 0 and meta.num_rows == 0
    assert meta.metadata[b"obook"] == b"{}"
    back = pq.read_table(tmp_path / "x.parquet")
    assert back.num_rows == 0 and back.schema == table.schema
    assert back.schema.metadata == table.schema.metadata


def test_sink_discard_while_groups_in_flight_leaves_no_file_no_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 20_000)
    table = _depth_table(6_000)
    sink = obook_parquet.ParquetSink(tmp_path / "x.parquet", table.schema)
    for b in table.to_batches(max_chunksize=500):
        sink.write(b)
    assert sink._groups or sink._in_flight
    sink.discard()
    assert not (tmp_path / "x.parquet").exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("obook-parquet")]


def test_footer_decoded_and_encoded_same_bytes(tmp_path):
    table = pa.table({"b": [True, None, False], "d": [1.5, 2.0, None], "s": ["x", "yy", None],
                      "day": [dt.date(2020, 1, 1)] * 3, "i8": pa.array([1, -2, 3], pa.int8()),
                      "l": [[1, 2], [], None], "m": pa.array([{"k": 1}, None, {"k": -5}]),
                      "big": pa.array([2**63 - 1, -2**63, 0], pa.int64())})
    path = tmp_path / "x.parquet"
    pq.write_table(table, path, row_group_size=2, write_page_index=True)
    data = path.read_bytes()
    start = _footer_start(path)
    body, meta = pf.split(data)
    assert bytes(body) == data[4:start]
    assert pf.footer(meta, meta.get(pf.FILE_ROW_GROUPS)[1]) == data[start:]


def test_footer_shifted_moves_every_offset(tmp_path):
    table = _depth_table(3_000, levels=1)
    path = tmp_path / "x.parquet"
    pq.write_table(table, path, row_group_size=1000)
    before = pq.ParquetFile(path).metadata
    _, meta = pf.split(path.read_bytes())
    groups = [pf.shifted(g, 1000, i + 5) for i, g in enumerate(meta.get(pf.FILE_ROW_GROUPS)[1])]
    (tmp_path / "y.parquet").write_bytes(b"PAR1" + bytes(1000) + path.read_bytes()[4:_footer_start(path)]
                                         + pf.footer(meta, groups))
    after = pq.ParquetFile(tmp_path / "y.parquet").metadata
    for g in range(before.num_row_groups):
        for c in range(before.num_columns):
            a, b = before.row_group(g).column(c), after.row_group(g).column(c)
            assert b.data_page_offset == a.data_page_offset + 1000
            assert (b.dictionary_page_offset or 0) == ((a.dictionary_page_offset or -1000) + 1000)
    assert pq.read_table(tmp_path / "y.parquet").equals(pq.read_table(path))


def test_footer_split_not_parquet_raises():
    with pytest.raises(ValueError, match="not a Parquet file"):
        pf.split(b"PAR1 not really")


def _in_flight_peak(tmp_path, monkeypatch, spare: bool, rows: int = 12_000,
                    group_bytes: int = 60_000) -> tuple[int, int]:
    """The most row groups being encoded at once while a sink writes ``rows`` depth rows:
    (before ``close``, in ``close``)."""
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", group_bytes)
    monkeypatch.setattr(obook_parquet, "ENCODE_THREADS", 2)
    monkeypatch.setattr(obook_parquet.SpareCores, "__call__", lambda self: spare)
    lock, now, peak, closing = threading.Lock(), [0], [0, 0], [0]
    real = obook_parquet._encode

    def counting(*args):
        with lock:
            now[0] += 1
            peak[closing[0]] = max(peak[closing[0]], now[0])
        try:
            import time
            time.sleep(0.02)        # long enough for the next row group to be handed over
            return real(*args)
        finally:
            with lock:
                now[0] -= 1

    monkeypatch.setattr(obook_parquet, "_encode", counting)
    table = _depth_table(rows)
    sink = obook_parquet.ParquetSink(tmp_path / "x.parquet", table.schema)
    for b in table.to_batches(max_chunksize=3000):
        sink.write(b)
    with lock:
        closing[0] = 1
    sink.close()
    assert pq.read_table(tmp_path / "x.parquet").equals(table)
    return peak[0], peak[1]


def test_sink_no_spare_core_one_row_group_in_flight(tmp_path, monkeypatch):
    assert _in_flight_peak(tmp_path, monkeypatch, spare=False)[0] == 1


def test_sink_spare_core_two_row_groups_in_flight(tmp_path, monkeypatch):
    assert _in_flight_peak(tmp_path, monkeypatch, spare=True)[0] == 2


@pytest.mark.parametrize("spare", [False, True])
def test_sink_close_large_rest_two_row_groups_encoded_at_once(tmp_path, monkeypatch, spare):
    """The rest a close finds (here all rows: a third of a row group's bytes) is cut in two row
    groups encoded at once, spare core or not: the replay is over."""
    group_bytes = 3 * _depth_table(4_001).nbytes     # (two slices may count a buffer twice)
    peak = _in_flight_peak(tmp_path, monkeypatch, spare=spare, rows=4_001, group_bytes=group_bytes)
    meta = pq.ParquetFile(tmp_path / "x.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [2001, 2000]
    assert peak[1] == 2


def test_sink_close_small_rest_one_row_group(tmp_path, monkeypatch):
    """A rest under a quarter of a row group's bytes stays one row group."""
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 64 << 20)
    monkeypatch.setattr(obook_parquet, "ENCODE_THREADS", 2)
    table = _depth_table(2_000)
    _sink_write(tmp_path / "x.parquet", table)
    assert pq.ParquetFile(tmp_path / "x.parquet").metadata.num_row_groups == 1


def test_spare_cores_busy_machine_says_no_quiet_machine_says_yes(monkeypatch):
    samples = iter([(100.0, 10.0, 0.0),      # (machine busy CPU s, this process's CPU s, clock s)
                    (102.1, 10.9, 1.0),      # 2.1 cores busy, 0.9 of them this process: 1.2 elsewhere
                    (103.1, 11.7, 2.0),      # 0.2 elsewhere
                    (103.1, 11.7, 2.01)])    # too short a window: the last answer stands
    monkeypatch.setattr(obook_parquet.SpareCores, "sample", staticmethod(lambda: next(samples)))
    spare = obook_parquet.SpareCores()
    spare.cpus = 2
    assert spare() is False
    assert spare() is True
    assert spare() is True


def test_spare_cores_without_proc_stat_says_yes(monkeypatch):
    monkeypatch.setattr(obook_parquet.SpareCores, "sample", staticmethod(lambda: None))
    assert obook_parquet.SpareCores()() is True


def test_parquet_options_bbo_split_columns_by_compression():
    from obook.schema import bbo_schema

    fast = obook_parquet.parquet_options("bbo", bbo_schema, "fast")
    small = obook_parquet.parquet_options("bbo", bbo_schema, "small")
    counts = ["bid_qty", "ask_qty", "bid_orders", "ask_orders"]
    assert all(fast["column_encoding"][c] == "BYTE_STREAM_SPLIT" for c in counts + ["locate"])
    assert all(small["column_encoding"][c] == "BYTE_STREAM_SPLIT" for c in counts)
    assert "locate" in small["use_dictionary"] and "locate" not in small["column_encoding"]
    assert "bid_px" in fast["use_dictionary"] and "ticker" in fast["use_dictionary"]
    assert not set(fast["use_dictionary"]) & set(fast["column_encoding"])
    assert fast["write_batch_size"] == small["write_batch_size"] == obook_parquet.WRITE_BATCH_ROWS


def test_bbo_file_split_columns_read_back_by_duckdb_and_polars(tmp_path):
    import duckdb
    import polars as pl

    import obook
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(feed, 30_000, 12, seed=2)
    want = obook.bbo(feed, workers=1).read_all()
    obook.convert(feed, tmp_path / "conv", tables="bbo", workers=1)
    out = tmp_path / "conv" / "bbo.parquet"
    meta = pq.ParquetFile(out).metadata.row_group(0)
    enc = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}
    assert "BYTE_STREAM_SPLIT" in enc["bid_qty"] and "BYTE_STREAM_SPLIT" in enc["locate"]
    assert "BYTE_STREAM_SPLIT" not in enc["bid_px"]
    cols = ["locate", "bid_qty", "ask_qty", "bid_orders", "ask_orders"]
    got = pq.read_table(out, columns=cols)
    assert got.equals(want.select(cols))
    sums = duckdb.sql(f"select {', '.join(f'sum({c}), count({c})' for c in cols)} from '{out}'").fetchall()[0]
    frame = pl.read_parquet(out)
    for i, c in enumerate(cols):
        assert sums[2 * i] == frame[c].sum() == sum(v for v in want[c].to_pylist() if v is not None)
        assert sums[2 * i + 1] == len(want[c]) - want[c].null_count
