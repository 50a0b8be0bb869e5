"""obook's own writer of the depth table's level columns (obook/parquet_levels.py): the
sink's files are byte for byte those of Arrow's writer alone, across pages, row groups,
chunk offsets, null and dense columns; a dictionary too large is PLAIN; other columns after
the levels are still in their place; DuckDB and polars read the same rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import obook.parquet as obook_parquet
import obook.parquet_levels as levels_mod
from obook import parquet_footer as pf
from obook.schema import depth_schema


def depth_table(n: int, levels: int = 2, seed: int = 4, null_share: float = 0.3, extra: bool = False) -> pa.Table:
    """A depth table whose three columns of a level share one validity bitmap (as the
    replay's batches do); level 1 dense, the last level all null; ``extra``: a trailing
    non-level column (as a capture format's per-record columns)."""
    rng = np.random.default_rng(seed)
    cols = [pa.array(np.arange(n, dtype=np.int64)), pa.array(rng.integers(0, 10**9, n).astype(np.uint64)),
            pa.array(np.array(["A", "BB", "CCC"])[rng.integers(0, 3, n)]),
            pa.array(rng.integers(1, 50, n).astype(np.uint16))]
    for k in range(2 * levels):
        share = 0.0 if k == 0 else 1.0 if k == 2 * levels - 1 else null_share
        valid = rng.random(n) >= share
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
        px = rng.integers(1, 3000, n).astype(np.int64) * 100
        qty = rng.integers(1, 80, n).astype(np.int64) * 100
        orders = rng.integers(1, 30, n).astype(np.int32)
        nulls = int((~valid).sum())
        cols += [pa.Array.from_buffers(pa.int64(), n, [bitmap, pa.py_buffer(px)], nulls),
                 pa.Array.from_buffers(pa.int64(), n, [bitmap, pa.py_buffer(qty)], nulls),
                 pa.Array.from_buffers(pa.int32(), n, [bitmap, pa.py_buffer(orders)], nulls)]
    schema = depth_schema(levels)
    if extra:
        cols.append(pa.array(rng.integers(0, 9, n)))
        schema = schema.append(pa.field("packet", pa.int64()))
    return pa.Table.from_arrays(cols, schema=schema)


def sink_write(path, table, batch_rows=3000, **kw) -> obook_parquet.ParquetSink:
    sink = obook_parquet.ParquetSink(path, table.schema, **kw)
    for b in table.to_batches(max_chunksize=batch_rows):
        sink.write(b)
    sink.close()
    return sink


def arrow_write(path, table, group_rows: list[int], compression="fast"):
    options = obook_parquet.parquet_options("depth", table.schema, compression)
    with pq.ParquetWriter(path, table.schema, **options) as w:
        start = 0
        for n in group_rows:
            w.write_table(table.slice(start, n), row_group_size=n)
            start += n


def group_rows(path) -> list[int]:
    meta = pq.ParquetFile(path).metadata
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def body(path) -> bytes:
    data = path.read_bytes()
    return data[:len(data) - 8 - int.from_bytes(data[-8:-4], "little")]


@pytest.mark.parametrize("compression,threads,page_rows", [
    ("fast", 1, 7_000), ("fast", 2, 7_000), ("small", 2, 7_000), ("fast", 2, None)])
def test_level_pages_file_equals_arrow_writer_bytes(tmp_path, monkeypatch, compression, threads, page_rows):
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 1_500_000 if page_rows else 4_000_000)
    monkeypatch.setattr(obook_parquet, "ENCODE_THREADS", threads)
    monkeypatch.setattr(obook_parquet.SpareCores, "__call__", lambda self: True)
    if page_rows:      # several pages a row group (None: Arrow's default and the writer's)
        monkeypatch.setattr(levels_mod, "PAGE_ROWS", page_rows)
        monkeypatch.setattr(obook_parquet.pq, "ParquetWriter", _pages_of(page_rows))
    table = depth_table(40_000 if page_rows else 90_000, levels=3)
    sink = sink_write(tmp_path / "new.parquet", table, compression=compression)
    assert sink._levels is not None and len(sink._levels.names) == 18
    rows = group_rows(tmp_path / "new.parquet")
    assert len(rows) >= 3
    arrow_write(tmp_path / "old.parquet", table, rows, compression)
    assert body(tmp_path / "new.parquet") == body(tmp_path / "old.parquet")
    back = pq.read_table(tmp_path / "new.parquet")
    assert back.equals(table)
    meta = pq.ParquetFile(tmp_path / "new.parquet").metadata
    col = meta.row_group(0).column(table.schema.get_field_index("bid_px_2"))
    assert set(col.encodings) == {"PLAIN", "RLE", "RLE_DICTIONARY"} and not col.is_stats_set
    col = meta.row_group(0).column(table.schema.get_field_index("ask_orders_1"))
    assert set(col.encodings) == {"RLE", "BYTE_STREAM_SPLIT"}


def _pages_of(rows: int):
    """pq.ParquetWriter with ``rows`` rows a data page (the level writer's PAGE_ROWS)."""
    real = pq.ParquetWriter

    def writer(*args, **kw):
        return real(*args, max_rows_per_page=rows, **kw)
    return writer


def test_level_pages_dictionary_too_large_is_plain_same_values(tmp_path, monkeypatch):
    monkeypatch.setattr(levels_mod, "DICT_ENTRIES", 500)
    table = depth_table(6_000, levels=1)
    sink_write(tmp_path / "x.parquet", table)
    back = pq.read_table(tmp_path / "x.parquet")
    assert back.equals(table)
    meta = pq.ParquetFile(tmp_path / "x.parquet").metadata.row_group(0)
    px = meta.column(table.schema.get_field_index("bid_px_1"))
    assert set(px.encodings) == {"PLAIN", "RLE"} and not px.has_dictionary_page


def test_level_pages_column_after_levels_read_by_duckdb_and_polars(tmp_path, monkeypatch):
    import duckdb
    import polars as pl

    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 300_000)
    table = depth_table(12_000, levels=2, extra=True)
    path = tmp_path / "x.parquet"
    sink_write(path, table, batch_rows=1_000)
    assert len(group_rows(path)) > 2
    assert pq.read_table(path).equals(table)
    frame = pl.read_parquet(path)
    for name in ("packet", "bid_px_1", "ask_qty_1", "ask_orders_2", "ticker"):
        assert frame[name].to_list() == table[name].to_pylist()
    got = duckdb.sql(f"select sum(packet), sum(bid_px_1), count(ask_px_1), sum(bid_orders_2) from '{path}'").fetchall()
    want = [(sum(table["packet"].to_pylist()), sum(table["bid_px_1"].to_pylist()),
             table.num_rows - table["ask_px_1"].null_count,
             sum(x for x in table["bid_orders_2"].to_pylist() if x is not None))]
    assert got == want


def test_level_columns_only_levels_without_statistics_under_zstd():
    schema = depth_schema(2)
    options = obook_parquet.parquet_options("depth", schema)
    names = levels_mod.level_columns(schema, options)
    assert names == [f.name for f in schema if f.name.split("_")[0] in ("bid", "ask")]
    assert levels_mod.level_columns(schema, {**options, "compression": "snappy"}) == []
    assert levels_mod.level_columns(schema, {**options, "write_statistics": True}) == []
    bbo = obook_parquet.parquet_options("bbo", schema)   # a table whose columns keep statistics
    assert levels_mod.level_columns(schema, {**bbo, "write_statistics": True}) == []


def test_data_page_header_equals_generic_encoder():
    for size, packed, rows, encoding in ((25514, 24686, 20000, 8), (1, 1, 1, 9), (10**6, 5, 12303, 0)):
        want = pf.encode_struct(pf.Struct([
            [1, pf.T_I32, 0], [2, pf.T_I32, size], [3, pf.T_I32, packed],
            [5, pf.T_STRUCT, pf.Struct([[1, pf.T_I32, rows], [2, pf.T_I32, encoding], [3, pf.T_I32, 3],
                                        [4, pf.T_I32, 3], [5, pf.T_STRUCT, pf.Struct()]])]]))
        assert levels_mod._data_page_header(size, packed, rows, encoding) == want


def test_level_pages_real_shanghai_day_depth_file_equals_arrow_writer(tmp_path, monkeypatch):
    from conftest import SHARED_DATA

    import obook

    day = SHARED_DATA / "AX_sbe_sse_600519.zip"
    if not day.exists():
        pytest.skip(f"{day} not here (the project's shared data)")
    monkeypatch.setattr(obook_parquet, "ROW_GROUP_BYTES", 8_000_000)     # a few row groups
    table = pa.Table.from_batches(list(obook.depth(str(day), levels=10)))
    assert table.num_rows > 50_000
    paths = []
    for own in (True, False):
        path = tmp_path / f"{own}.parquet"
        sink = obook_parquet.ParquetSink(path, table.schema)
        if not own:         # Arrow writes every column
            sink._levels, sink._head_schema, sink._head_options = None, table.schema, sink.options
        for b in table.to_batches(max_chunksize=20_000):
            sink.write(b)
        sink.close()
        paths.append(path)
    assert len(group_rows(paths[0])) > 2
    assert paths[0].read_bytes() == paths[1].read_bytes()
