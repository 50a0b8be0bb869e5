"""Rows that do not fit a worker's output slot travel with the batch result and are
merged in place (an event may write any number of rows)."""

import pyarrow as pa
import pytest

import obook.engine.replay as replay_mod
from obook.engine.replay import Replay
from obook.engine.workers import WorkerPool
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch

TABLES = ("bbo", "trades", "orders", "depth")


def tables(path, workers, **kw):
    r = Replay(path, workers=workers, tables=TABLES, levels=3, **kw)
    got = {t: [] for t in TABLES}
    for t, b in r.table_batches():
        got[t].append(b)
    return {t: pa.Table.from_batches(bs, r.schema(t)) for t, bs in got.items()}


@pytest.fixture(params=["itch", "csv"])
def feed(request, tmp_path):
    if request.param == "itch":
        path = tmp_path / "day.itch"
        write_itch(path, 12_000, 5, seed=3)
    else:
        path = tmp_path / "day.csv"
        write_csv(path, 12_000, 5, seed=3, depth=20)
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_rows_overflow_tiny_slots_same_tables(feed, workers, monkeypatch):
    expected = tables(feed, workers, block_size=1 << 15)
    merged = []
    real = replay_mod.with_overflow

    def spy(rows, counts, extra):
        merged.append(sum(e is not None for e in extra))
        return real(rows, counts, extra)

    monkeypatch.setattr(WorkerPool, "rows_per_slot", 3)
    monkeypatch.setattr(replay_mod, "with_overflow", spy)
    got = tables(feed, workers, block_size=1 << 15)
    assert sum(merged) >= 4 * 2                       # every table of several batches overflowed
    for t in TABLES:
        assert got[t].num_rows > 100 and got[t].equals(expected[t]), t
