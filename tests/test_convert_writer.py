"""``obook.convert``'s Parquet writer: the depth table's encodings and statistics."""

from __future__ import annotations

import importlib
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import obook
from obook.to_parquet import convert
from obook.gen.itch import write_itch
from obook.schema import depth_schema

import obook.parquet as obook_parquet

oc = importlib.import_module("obook.to_parquet")     # the module of the function obook.convert
DAY = "12302019.NASDAQ_ITCH50"


@pytest.fixture(scope="module")
def itch_day(tmp_path_factory):
    path = tmp_path_factory.mktemp("feeds") / DAY
    write_itch(path, 4000, 12, seed=3)
    return path


def _parquet_threads():
    return [t for t in threading.enumerate() if t.name.startswith("obook-parquet")]


def _depth_batch(seq, time, levels=1):
    n = len(seq)
    cols = [pa.array(seq, pa.int64()), pa.array(time, pa.uint64()), pa.array(["AAA"] * n),
            pa.array(np.arange(n, dtype=np.uint16))]
    for _ in range(2 * levels):
        cols += [pa.array([None, 10] * (n // 2), pa.int64()), pa.array([None, 5] * (n // 2), pa.int64()),
                 pa.array([None, 1] * (n // 2), pa.int32())]
    return pa.RecordBatch.from_arrays(cols, schema=depth_schema(levels))


def test_convert_depth_small_row_groups_equals_replay_rows(itch_day, tmp_path, monkeypatch):
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 20_000)
    convert(itch_day, tmp_path, tables="bbo,depth", levels=3, workers=2)
    for name, reader in (("bbo", obook.bbo(itch_day, workers=1)), ("depth", obook.depth(itch_day, levels=3))):
        got = pq.read_table(tmp_path / f"{name}.parquet")
        assert got.equals(reader.read_all().replace_schema_metadata(got.schema.metadata)), name
        assert pq.ParquetFile(tmp_path / f"{name}.parquet").metadata.num_row_groups > 2
        seq = got["seq"].to_numpy()
        assert (np.diff(seq) > 0).all()
    assert oc.read_metadata(tmp_path / "depth.parquet")["table"] == "depth"
    assert not _parquet_threads()


def test_convert_depth_encodings_per_column_statistics_on_head_only(itch_day, tmp_path):
    convert(itch_day, tmp_path, tables="bbo,depth", levels=2, workers=1)
    group = pq.ParquetFile(tmp_path / "depth.parquet").metadata.row_group(0)
    cols = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    for name in ("seq", "time", "timestamp"):
        assert "DELTA_BINARY_PACKED" in cols[name].encodings, name
        assert not cols[name].has_dictionary_page
    for name in ("seq", "time", "timestamp", "ticker", "locate"):
        assert cols[name].is_stats_set, name
    for name in ("bid_px_1", "bid_qty_2", "ask_px_2", "ask_qty_1"):
        assert cols[name].has_dictionary_page and not cols[name].is_stats_set, name
    for name in ("bid_orders_1", "ask_orders_2"):
        assert "BYTE_STREAM_SPLIT" in cols[name].encodings and not cols[name].has_dictionary_page, name
        assert not cols[name].is_stats_set, name
    group = pq.ParquetFile(tmp_path / "bbo.parquet").metadata.row_group(0)   # the BBO: delta seq/time
    bbo = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    assert "DELTA_BINARY_PACKED" in bbo["seq"].encodings and not bbo["seq"].has_dictionary_page
    for name in ("seq", "time", "timestamp", "ticker", "locate"):
        assert bbo[name].is_stats_set, name
    for name in ("bid_px", "ask_px"):
        assert bbo[name].has_dictionary_page and not bbo[name].is_stats_set, name
    for name in ("bid_qty", "ask_orders"):
        assert "BYTE_STREAM_SPLIT" in bbo[name].encodings and not bbo[name].is_stats_set, name


def test_table_writer_depth_extreme_seq_time_round_trip(tmp_path):
    seq = [0, 2**63 - 1, 1, -2**63, 5, 4]
    time = [0, 2**64 - 1, 1, 2**63, 2**63 - 1, 7]
    w = oc._TableWriter(tmp_path, "depth")
    batch = _depth_batch(seq, time)
    w.write(batch)
    w.close({"x": 1})
    w.tmp.replace(w.final)
    got = pq.read_table(w.final)
    assert got["seq"].to_pylist() == seq and got["time"].to_pylist() == time
    assert got.equals(pa.Table.from_batches([batch]).replace_schema_metadata(got.schema.metadata))


def test_convert_depth_50_levels_row_groups_bounded_in_bytes(tmp_path, monkeypatch):
    """Row groups are cut by size as well as rows: 1 M rows of 50-level depth would be ~3.4 GB
    buffered; with a 1 MiB bound every engine batch (the smallest unit) is a row
    group of its own, far below 1 M rows, and the rows are the same."""
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(feed, 150_000, 20, seed=3)
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 1 << 20)
    convert(feed, tmp_path / "out", tables="depth", levels=50, workers=1)
    meta = pq.ParquetFile(tmp_path / "out" / "depth.parquet").metadata
    got = pq.read_table(tmp_path / "out" / "depth.parquet")
    assert meta.num_row_groups >= 2 and got.num_rows < 1 << 20
    want = obook.depth(feed, levels=50, workers=1).read_all()
    assert got.equals(want.replace_schema_metadata(got.schema.metadata))


def _layout(path):
    """Row groups (rows, and each column's encodings, compression, dictionary, statistics)."""
    meta = pq.ParquetFile(path).metadata
    groups = []
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        groups.append((rg.num_rows, [(rg.column(i).path_in_schema, rg.column(i).encodings,
                                      rg.column(i).compression, rg.column(i).has_dictionary_page,
                                      rg.column(i).is_stats_set) for i in range(rg.num_columns)]))
    return groups


def test_cli_bbo_output_parquet_equals_convert_content_and_layout(itch_day, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from obook.cli import app

    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 30_000)   # several row groups
    out = tmp_path / "bbo.parquet"
    r = CliRunner().invoke(app, ["bbo", str(itch_day), "--workers", "2", "--output", str(out)])
    assert r.exit_code == 0, r.output
    assert f"({pq.ParquetFile(out).metadata.num_rows} rows)" in r.output
    convert(itch_day, tmp_path / "conv", tables="bbo", workers=1)
    conv = tmp_path / "conv" / "bbo.parquet"
    assert pq.read_table(out).equals(pq.read_table(conv))
    assert _layout(out) == _layout(conv)
    assert len(_layout(out)) > 2


def test_sink_sql_result_time_as_text_no_delta_round_trips(tmp_path):
    # a stream that is not one of obook's tables: DELTA only where the column is an integer
    t = pa.table({"seq": pa.array(["a", "b"]), "time": pa.array([3, 1], pa.int64()), "x": [1.5, None]})
    sink = obook_parquet.ParquetSink(tmp_path / "x.parquet", t.schema, compression="small")
    for b in t.to_batches():
        sink.write(b)
    sink.close()
    assert pq.read_table(tmp_path / "x.parquet").equals(t)
    cols = pq.ParquetFile(tmp_path / "x.parquet").metadata.row_group(0)
    assert "DELTA_BINARY_PACKED" in cols.column(1).encodings and cols.column(0).has_dictionary_page


def test_convert_compression_unknown_raises(itch_day, tmp_path):
    with pytest.raises(obook.ObookError, match="compression"):
        convert(itch_day, tmp_path, compression="tiny")


def test_convert_row_group_write_fails_on_encoder_thread_raises_output_error(itch_day, tmp_path, monkeypatch):
    # row groups are encoded on the sink's threads: a write failing there (a full disk) reaches
    # the caller as OutputError, leaves no file and no thread behind
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 20_000)
    calls = []
    real = pq.ParquetWriter.write_table

    def failing(self, table, row_group_size=None):
        calls.append(threading.current_thread().name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(self, table, row_group_size=row_group_size)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    with pytest.raises(obook.OutputError, match="No space left on device"):
        convert(itch_day, tmp_path / "out", tables="bbo,depth", levels=3, workers=1)
    assert len(calls) >= 3 and all(name.startswith("obook-parquet") for name in calls)
    assert not (tmp_path / "out").exists()      # no file, nor the folder the call made
    assert not _parquet_threads()


def test_sink_many_row_groups_encoded_in_parallel_written_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 4_000)
    t = pa.table({"seq": pa.array(np.arange(20_000), pa.int64()), "x": pa.array(np.arange(20_000) % 7)})
    sink = obook_parquet.ParquetSink(tmp_path / "x.parquet", t.schema)
    for b in t.to_batches(max_chunksize=700):
        sink.write(b)
    sink.close()
    assert pq.read_table(tmp_path / "x.parquet").equals(t)
    assert pq.ParquetFile(tmp_path / "x.parquet").metadata.num_row_groups > 10
    assert not _parquet_threads()


def test_sink_interrupted_while_handing_over_row_groups_closes_with_each_row_once(tmp_path, monkeypatch):
    # a Ctrl-C between two row groups of one flush: closing the file writes what was not
    # handed over yet, and nothing twice
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 4_000)
    t = pa.table({"seq": pa.array(np.arange(20_000), pa.int64()), "x": pa.array(np.arange(20_000) % 7)})
    sink = obook_parquet.ParquetSink(tmp_path / "x.parquet", t.schema)
    real, calls = sink._write_group, []

    def interrupted_at_third(table, at_once=False):
        calls.append(table.num_rows)
        if len(calls) == 3:
            raise KeyboardInterrupt
        real(table, at_once=at_once)

    monkeypatch.setattr(sink, "_write_group", interrupted_at_third)
    with pytest.raises(KeyboardInterrupt):
        sink.write(pa.concat_tables([t]).combine_chunks().to_batches()[0])
    monkeypatch.setattr(sink, "_write_group", real)
    sink.close()
    assert len(calls) == 3
    assert pq.read_table(tmp_path / "x.parquet").equals(t)


def test_convert_two_workers_started_with_no_other_thread_alive(itch_day, tmp_path, monkeypatch):
    # the sha256 thread and the encoding threads start after the workers: a live thread at
    # their start makes the engine use the forkserver (~1 s slower start)
    from obook.engine import workers as engine_workers

    seen = []
    real = engine_workers.mp_context
    before = threading.active_count()   # threads another test left (a DuckDB or polars pool) are not convert's

    def spy(fmt=None):
        seen.append(threading.active_count() == before)
        return real(fmt)

    monkeypatch.setattr(engine_workers, "mp_context", spy)
    result = convert(itch_day, tmp_path, tables="bbo,depth", levels=2, workers=2)
    assert seen == [True]
    assert result["source"]["sha256"] and not _parquet_threads()
