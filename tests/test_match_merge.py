"""The matching engine's merge of its workers' rows: placed by binary search, column by
column, equal to a stable sort by (seq, book) of the concatenation."""

from __future__ import annotations

import os

import numpy as np
import pytest

from obook._kernels.match_layout import E_BOOK, E_SEQ
from obook.matching.books import TABLES
from obook.matching.shards import Merged, merge, merge_table


def _reference(parts: list[dict], t: str) -> np.ndarray:
    rows = np.concatenate([np.concatenate(p[t]) for p in parts])
    return rows[np.lexsort((rows[:, E_BOOK], rows[:, E_SEQ]))]


def _part(rng, books: list[int], seqs: np.ndarray, width: int = 5) -> dict:
    """Rows of the instructions ``seqs`` (one book each, several rows some), then a day end."""
    rows = []
    for s in seqs:
        b = books[int(s) % len(books)]
        for _ in range(int(rng.integers(1, 4))):
            rows.append([s, s * 10, b] + list(rng.integers(0, 99, width - 3)))
    for b in books:                                 # day end: seq n + 1, books in order
        rows.append([10_001, 0, b] + [0] * (width - 3))
    a = np.array(rows, np.int64).reshape(-1, width)
    return {t: [a] for t in TABLES}


@pytest.mark.parametrize("workers", [2, 3])
def test_merge_table_equals_stable_sort_of_the_workers_rows(workers):
    rng = np.random.default_rng(workers)
    seqs = np.sort(rng.choice(10_000, 3000, replace=False)) + 1
    books = list(range(7))
    parts = []
    for w in range(workers):
        mine = [b for b in books if b % workers == w]
        parts.append(_part(rng, mine, np.array([s for s in seqs if books[s % 7] in mine])))
    (merged,) = merge_table(parts, "events")
    assert isinstance(merged, Merged)
    want = _reference(parts, "events")
    for col in range(want.shape[1]):
        assert np.array_equal(merged[:, col], want[:, col])
    assert np.array_equal(merged.rows(), want)
    assert np.array_equal(merge(parts)["fills"], want)


def test_merge_table_sorts_a_part_out_of_order_first():
    rng = np.random.default_rng(5)
    a = _part(rng, [0], np.arange(1, 200, 2))
    b = _part(rng, [1], np.arange(2, 200, 2))
    shuffled = {t: [c[0][::-1].copy()] for t, c in b.items()}
    (merged,) = merge_table([a, shuffled], "bbo")
    assert np.array_equal(merged.rows(), _reference([a, shuffled], "bbo"))


def test_merge_table_one_worker_keeps_its_chunks_without_copy():
    rng = np.random.default_rng(1)
    part = _part(rng, [0, 1], np.arange(1, 50))
    assert merge_table([part], "depth")[0] is part["depth"][0]


def test_merged_rows_refuse_anything_but_whole_columns():
    rng = np.random.default_rng(2)
    (merged,) = merge_table([_part(rng, [0], np.arange(1, 9, 2)), _part(rng, [1], np.arange(2, 9, 2))], "fills")
    with pytest.raises(TypeError):
        merged[:3, 0]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_match_workers_hand_rows_over_in_shared_memory_and_leave_no_descriptor():
    import obook

    rows = [{"time": i, "instrument": f"S{i % 3}", "order_id": i, "action": "new", "side": "buy" if i % 2 else "sell",
             "type": "limit", "tif": "gtc", "price": 100 + i % 5, "quantity": 10} for i in range(1, 400)]
    import pyarrow as pa

    table = pa.Table.from_pylist(rows)
    obook.match(table, workers=3, levels=3)    # the process's forkserver (if threads run) starts once, not per run
    before = _open_fds()
    one = obook.match(table, workers=1, levels=3)
    two = obook.match(table, workers=3, levels=3)
    for t in TABLES:
        assert two.table(t).equals(one.table(t))
    del two
    assert _open_fds() == before
