"""The page kernels of obook's own Parquet level writer (obook/_kernels/parquet_pages.py),
compiled and as ``.py_func``: the runs decode back to their values, compact and dict_dense
give what numpy and a Python dict give, the page bodies hold what their ends say."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from obook._kernels import parquet_pages as K

MODES = ["compiled", "python"]


def kernel(name: str, mode: str):
    fn = getattr(K, name)
    return fn if mode == "compiled" else fn.py_func


def decode_runs(buf: bytes, pos: int, bit_width: int, count: int) -> tuple[list[int], int]:
    """Parquet's RLE / bit-packing hybrid, read the obvious way (the reference)."""
    out: list[int] = []
    while len(out) < count:
        shift = header = 0
        while True:
            b = buf[pos]
            pos += 1
            header |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        if header & 1:                          # bit-packed: header >> 1 groups of 8
            n = (header >> 1) * 8
            nbytes = (header >> 1) * bit_width
            bits = int.from_bytes(buf[pos:pos + nbytes], "little")
            pos += nbytes
            out += [(bits >> (bit_width * i)) & ((1 << bit_width) - 1) for i in range(n)]
        else:                                   # a run: header >> 1 copies of one value
            width = (bit_width + 7) // 8
            out += [int.from_bytes(buf[pos:pos + width], "little")] * (header >> 1)
            pos += width
    return out[:count], pos


def sequences(rng):
    """Values with long runs, short runs, runs across groups, a tail of one value."""
    yield np.zeros(0, np.int32)
    yield np.array([5], np.int32)
    yield np.array([3, 3, 3], np.int32)
    yield np.repeat(np.arange(10, dtype=np.int32), 8)
    yield np.concatenate([np.full(20, 1), np.arange(13) % 3, np.full(5, 2)]).astype(np.int32)
    for _ in range(20):
        n = int(rng.integers(1, 3000))
        runs = rng.integers(1, 30, n // 4 + 1)
        vals = np.repeat(rng.integers(0, 1000, len(runs)), runs)[:n]
        yield vals.astype(np.int32)


@pytest.mark.parametrize("mode", MODES)
def test_rle_runs_random_sequences_decode_back(mode):
    rle = kernel("rle_runs", mode)
    rng = np.random.default_rng(3)
    for vals in sequences(rng):
        for width in (10, 17, 32) if mode == "compiled" else (10,):
            out = np.zeros(len(vals) * 5 + 64, np.uint8)
            end = rle(vals, 0, len(vals), width, out, 7)
            got, pos = decode_runs(bytes(out), 7, width, len(vals))
            assert got == vals.tolist() and pos == end


@pytest.mark.parametrize("mode", MODES)
def test_rle_runs_bits_of_one_value_a_long_run_is_two_bytes(mode):
    rle = kernel("rle_runs", mode)
    defs = np.ones(5000, np.uint8)
    out = np.zeros(64, np.uint8)
    assert rle(defs, 0, 5000, 1, out, 0) == 3          # varint(10000) and the value byte
    defs[::7] = 0
    end = rle(defs, 0, 5000, 1, out := np.zeros(2000, np.uint8), 0)
    assert decode_runs(bytes(out), 0, 1, 5000) == (defs.tolist(), end)


@pytest.mark.parametrize("mode", MODES)
def test_compact_unaligned_bitmap_equals_numpy(mode):
    compact = kernel("compact", mode)
    rng = np.random.default_rng(5)
    for n, offset in ((0, 0), (1, 0), (7, 3), (8, 8), (1001, 5), (64, 0)):
        mask = rng.random(n + offset) < 0.4
        arr = pa.array(rng.integers(-5, 5, n + offset), pa.int64(), mask=mask).slice(offset)
        validity, data = arr.buffers()
        values = np.frombuffer(data, np.int64, n, arr.offset * 8)
        out, defs = np.zeros(n + 3, np.int64), np.zeros(n + 2, np.uint8)
        bitmap = np.zeros(0, np.uint8) if validity is None else np.frombuffer(validity, np.uint8)
        m = compact(values, bitmap, arr.offset, n, out, 3, defs, 2)
        valid = ~mask[offset:] if validity is not None else np.ones(n, bool)
        assert m == 3 + valid.sum()
        assert out[3:m].tolist() == values[valid].tolist()
        assert defs[2:].tolist() == valid.astype(np.uint8).tolist()
    # no bitmap: every row valid
    out, defs = np.zeros(9, np.int32), np.zeros(9, np.uint8)
    assert compact(np.arange(9, dtype=np.int32), np.zeros(0, np.uint8), 0, 9, out, 0, defs, 0) == 9
    assert out.tolist() == list(range(9)) and defs.tolist() == [1] * 9


@pytest.mark.parametrize("mode", MODES)
def test_dict_dense_first_appearance_order_and_limits(mode):
    dense = kernel("dict_dense", mode)
    rng = np.random.default_rng(8)
    vals = rng.choice(np.array([-(2**62), 0, 7, 2**63 - 1, 12345678901]), 400).astype(np.int64)
    keys, slots = np.zeros(16, np.int64), np.full(16, -1, np.int32)
    dictionary, indices = np.zeros(10, np.int64), np.zeros(400, np.int32)
    nd = dense(vals, 0, 400, keys, slots, dictionary, 0, indices)
    first = list(dict.fromkeys(vals.tolist()))
    assert dictionary[:nd].tolist() == first
    assert [first[i] for i in indices] == vals.tolist()
    # the table at most half full: a 6th value in 8 slots asks for a larger table
    many = np.arange(6, dtype=np.int64) * 1000
    assert dense(many, 0, 6, np.zeros(8, np.int64), np.full(8, -1, np.int32), dictionary, 0, indices) == -2
    # the dictionary full: -1
    assert dense(many, 0, 6, np.zeros(64, np.int64), np.full(64, -1, np.int32), np.zeros(5, np.int64), 0,
                 indices) == -1


@pytest.mark.parametrize("mode", MODES)
def test_page_bodies_levels_then_values_each_page(mode):
    sections, bodies = kernel("level_sections", mode), kernel("page_bodies", mode)
    rng = np.random.default_rng(2)
    n, rows = 2500, 1000
    defs = (rng.random(n) < 0.7).astype(np.uint8)
    m = int(defs.sum())
    idx = rng.integers(0, 300, m).astype(np.int32)
    raw = rng.integers(0, 2**31, m).astype(np.int32)
    levels, lends, counts = np.zeros(n * 2, np.uint8), np.zeros(3, np.int64), np.zeros(3, np.int64)
    pages = sections(defs, n, rows, levels, lends, counts)
    assert pages == 3 and counts.tolist() == [int(defs[a:a + rows].sum()) for a in range(0, n, rows)]
    for mode_k in (K.DICT_INDICES, K.BYTE_SPLIT, K.PLAIN):
        out, ends = np.zeros(n * 12, np.uint8), np.zeros(3, np.int64)
        bodies(levels, lends, counts, pages, idx, raw.view(np.uint8), 4, mode_k, out, ends)
        buf, start, v0 = bytes(out), 0, 0
        for p in range(pages):
            size = int.from_bytes(buf[start:start + 4], "little")
            got, pos = decode_runs(buf, start + 4, 1, min(rows, n - p * rows))
            assert got == defs[p * rows:(p + 1) * rows].tolist() and pos == start + 4 + size
            c = int(counts[p])
            if mode_k == K.DICT_INDICES:
                width = max(1, int(idx[:v0 + c].max()).bit_length())   # entries up to this page
                assert buf[pos] == width
                got, pos = decode_runs(buf, pos + 1, width, c)
                assert got == idx[v0:v0 + c].tolist()
            elif mode_k == K.BYTE_SPLIT:
                streams = np.frombuffer(buf[pos:pos + 4 * c], np.uint8).reshape(4, c)
                assert streams.T.copy().view(np.int32).ravel().tolist() == raw[v0:v0 + c].tolist()
                pos += 4 * c
            else:
                assert buf[pos:pos + 4 * c] == raw[v0:v0 + c].tobytes()
                pos += 4 * c
            assert pos == ends[p]
            start, v0 = pos, v0 + c
