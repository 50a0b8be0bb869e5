"""The merge kernels (obook/_kernels/merge.py) on hand-made rows, compiled and as .py_func."""

import numpy as np
import pytest

from obook._kernels import merge as M


def both(kernel):
    return [pytest.param(kernel, id="compiled"), pytest.param(kernel.py_func, id="py_func")]


@pytest.mark.parametrize("kernel", both(M.level_counts))
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 16, 23])
def test_level_counts_any_length_equals_astype_and_packbits(kernel, n):
    rng = np.random.default_rng(n)
    cols = rng.integers(0, 3, size=(9, n + 5)).astype(np.int64)   # 2 head columns, 3 levels of 3
    counts = np.full((3, n), -1, np.int32)
    valid = np.full((3, (n + 7) // 8), 0xFF, np.uint8)
    assert kernel(cols, 2, 3, n, counts, valid) == n
    for k in range(3):
        col = cols[2 + 3 * k, :n]
        assert counts[k].tolist() == col.tolist()
        assert valid[k].tolist() == np.packbits(col != 0, bitorder="little").tolist()


@pytest.mark.parametrize("kernel", both(M.level_counts))
def test_level_counts_columns_past_n_leave_last_byte_bits_clear(kernel):
    cols = np.ones((6, 16), np.int64)        # every level has orders, also past n
    counts = np.zeros((2, 11), np.int32)
    valid = np.zeros((2, 2), np.uint8)
    kernel(cols, 2, 3, 11, counts, valid)
    assert valid.tolist() == [[0xFF, 0b111], [0xFF, 0b111]]
    assert counts.tolist() == [[1] * 11, [1] * 11]


@pytest.mark.parametrize("kernel", both(M.level_counts))
def test_level_counts_large_count_kept_and_valid(kernel):
    cols = np.array([[0, 2**31 - 1, 0, 5]], np.int64)
    counts = np.zeros((1, 4), np.int32)
    valid = np.zeros((1, 1), np.uint8)
    kernel(cols, 0, 3, 4, counts, valid)
    assert counts.tolist() == [[0, 2**31 - 1, 0, 5]] and valid.tolist() == [[0b1010]]


@pytest.mark.parametrize("kernel", both(M.merge_table))
def test_merge_table_two_workers_feed_order_global_books_below_limit(kernel):
    rows = np.zeros((2, 4, 4), np.int64)
    rows[0, :3] = [[1, 10, 0, 7], [4, 40, 1, 8], [9, 90, 0, 9]]
    rows[1, :2] = [[2, 20, 0, 5], [3, 30, 1, 6]]
    out = np.full((4, 5), -1, np.int64)
    n = kernel(rows, np.array([3, 2]), 9, np.array([2, 2]), np.array([0, 1]), np.zeros(2, np.int64),
               np.zeros((2, M.TABLE_BLOCK), np.int64), np.zeros((M.TABLE_BLOCK, 4), np.int64), out)
    assert n == 4                              # seq 9 is at the limit: left out
    assert out[:, :n].T.tolist() == [[1, 10, 0, 7], [2, 20, 1, 5], [3, 30, 3, 6], [4, 40, 2, 8]]


@pytest.mark.parametrize("kernel", both(M.merge_table))
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("block", [1, 3, 64])
def test_merge_table_wide_rows_many_blocks_equals_sorted_concatenation(kernel, workers, block):
    rng = np.random.default_rng(workers * 100 + block)
    width, n_rows = 63, 150
    seqs = rng.permutation(workers * n_rows)
    rows = rng.integers(-10**12, 10**12, size=(workers, n_rows + 5, width))
    counts = rng.integers(n_rows // 2, n_rows + 1, size=workers)
    for w in range(workers):
        rows[w, :n_rows, 0] = np.sort(seqs[w::workers])
    limit = int(np.median(seqs))
    want = [list(rows[w, h]) for w in range(workers) for h in range(counts[w]) if rows[w, h, 0] < limit]
    for r, w in zip(want, [w for w in range(workers) for h in range(counts[w]) if rows[w, h, 0] < limit]):
        r[2] = r[2] * workers + w
    want.sort(key=lambda r: r[0])
    out = np.full((width, int(counts.sum())), -1, np.int64)
    n = kernel(rows, counts, limit, np.full(workers, workers), np.arange(workers), np.zeros(workers, np.int64),
               np.zeros((2, block), np.int64), np.zeros((block, width), np.int64), out)
    assert n == len(want)
    assert out[:, :n].T.tolist() == [[int(x) for x in r] for r in want]


@pytest.mark.parametrize("count", both(M.names_nbytes))
@pytest.mark.parametrize("gather", both(M.gather_names))
def test_names_nbytes_unknown_and_out_of_range_books_equals_gathered_bytes(count, gather):
    names = [b"AAPL", b"", None, b"MSFT", b"Z"]           # None: a book without a name
    off = np.zeros(len(names), np.int64)
    ln = np.full(len(names), -1, np.int64)
    arena = bytearray()
    for k, raw in enumerate(names):
        if raw is not None:
            off[k], ln[k] = len(arena), len(raw)
            arena += raw
    book = np.array([0, 3, 2, 7, -1, 1, 4, 0, 3], np.int64)
    n = 8
    want = sum(len(names[k]) for k in book[:n] if 0 <= k < len(names) and names[k])
    assert count(book, n, ln) == want == 4 + 4 + 0 + 0 + 0 + 0 + 1 + 4
    offsets = np.empty(n + 1, np.int32)
    data = np.empty(max(1, want), np.uint8)
    valid = np.zeros((n + 7) // 8, np.uint8)
    assert gather(book, n, off, ln, np.frombuffer(bytes(arena), np.uint8), offsets, data, valid) == want


@pytest.mark.parametrize("kernel", both(M.merge_depth))
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("block", [1, 3, 8, 13, 64])
def test_merge_depth_equals_merge_table_then_level_counts(kernel, workers, block):
    rng = np.random.default_rng(workers * 1000 + block)
    levels, n_rows = 4, 120
    width = 3 + 3 * levels
    seqs = rng.permutation(workers * n_rows)
    rows = rng.integers(-10**12, 10**12, size=(workers, n_rows + 5, width))
    for k in range(levels):                       # orders counts: often 0 (an empty level)
        rows[:, :, 5 + 3 * k] = rng.integers(0, 2, size=(workers, n_rows + 5)) * rng.integers(1, 2**31 - 1, size=(workers, n_rows + 5))
    counts = rng.integers(n_rows // 2, n_rows + 1, size=workers)
    for w in range(workers):
        rows[w, :n_rows, 0] = np.sort(seqs[w::workers])
    limit = int(np.percentile(seqs, 80))
    mul, add = np.full(workers, workers), np.arange(workers)
    cap = int(counts.sum())
    want = np.full((width, cap), -1, np.int64)
    n_want = M.merge_table(rows, counts, limit, mul, add, np.zeros(workers, np.int64),
                           np.zeros((2, 16), np.int64), np.zeros((16, width), np.int64), want)
    want_counts = np.zeros((levels, n_want), np.int32)
    want_valid = np.zeros((levels, (n_want + 7) // 8), np.uint8)
    M.level_counts(want, 5, 3, n_want, want_counts, want_valid)
    out = np.full((3 + 2 * levels, cap), -1, np.int64)
    orders = np.full((levels, cap), -1, np.int32)
    valid = np.full((levels, (cap + 7) // 8), 0xAA, np.uint8)      # stale bytes: overwritten
    n = kernel(rows, counts, limit, mul, add, np.zeros(workers, np.int64), np.zeros((2, block), np.int64),
               np.zeros((block, width), np.int64), out, orders, valid)
    assert n == n_want
    assert out[:3, :n].tolist() == want[:3, :n].tolist()
    for k in range(levels):
        assert out[3 + 2 * k, :n].tolist() == want[3 + 3 * k, :n].tolist()
        assert out[4 + 2 * k, :n].tolist() == want[4 + 3 * k, :n].tolist()
    assert orders[:, :n].tolist() == want_counts.tolist()
    assert valid[:, :(n + 7) // 8].tolist() == want_valid.tolist()
