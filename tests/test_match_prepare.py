"""obook.matching.prepare: the instructions made a chunk at a time as the book gets to them
equal those made whole, for any chunk size; a reader let go early prepares no more."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import obook
from obook.matching import books as books_mod
from obook.matching import prepare as prepare_mod
from match_flows import random_flow, to_table, whole_instructions

KNOWN = ("AAA", "BBB", "CCC", "DDD")     # the flow's ZZZ rows name an unknown instrument
TABLES = ("fills", "events", "bbo", "depth")


def _edge_rows(t0: int) -> list[dict]:
    """A modify and a cancel of an id no order has yet, two new orders without an id (the
    book gives them the next ids) that later rows modify and cancel, and an id used again
    after its order is gone."""
    def row(action, oid=None, **kw):
        return {"time": t0, "instrument": kw.pop("inst", "BBB"), "order_id": oid, "action": action,
                "side": None, "type": None, "tif": None, "price": None, "quantity": None, "owner": None, **kw}

    return [row("cancel", 901), row("modify", 901, quantity=3),
            row("new", side="buy", price=990, quantity=4), row("new", side="sell", price=1020, quantity=6),
            row("new", 7, inst="DDD", side="sell", price=1010, quantity=2),
            row("cancel", 7, inst="DDD"), row("new", 7, inst="DDD", side="buy", price=1012, quantity=5)]


def _flow(sparse: bool) -> pa.Table:
    """Four instruments (and an unknown one) over 2,000 rows, the edge rows at the start, in
    the middle and at the end; ``sparse``: ids a billion apart (keyed by a sort)."""
    rows = random_flow(11, 2000, instruments=KNOWN, tick=2)
    rows = _edge_rows(1) + rows[:1000] + _edge_rows(4000) + rows[1000:] + _edge_rows(9000)
    for r in rows:
        if r["order_id"] == 99_999:        # the flow's unknown id: near the others (dense) or not
            r["order_id"] = 950
        if sparse and r["order_id"] is not None:
            r["order_id"] *= 1_000_000_007
    top = max(r["order_id"] for r in rows if r["instrument"] == "BBB" and r["action"] == "new" and r["order_id"])
    rows.append({**rows[2], "action": "modify", "order_id": top + 1, "side": None, "quantity": 1})  # given by the book
    rows.append({**rows[2], "action": "cancel", "order_id": top + 2, "side": None, "price": None, "quantity": None})
    for t, r in enumerate(rows):
        r["time"] = 1000 + t
    return to_table(rows)


@pytest.fixture(params=[False, True], ids=["dense_ids", "sparse_ids"])
def flow(request, tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "orders.parquet"
    pq.write_table(_flow(request.param), path)
    return path, request.param


@pytest.mark.parametrize("size", [1, 2, 7, 64, 1 << 20])
def test_prepare_chunks_of_any_size_equal_the_whole_instructions(flow, size, monkeypatch):
    from obook.feeds.orders import read_orders

    path, sparse = flow
    o = read_orders(path)
    _, whole = whole_instructions(o, 2, KNOWN)          # one chunk of every row, one pass over the input
    monkeypatch.setattr(prepare_mod, "SCAN", 5)      # the pass over the input in many blocks too
    plan = prepare_mod.plan(o, 2, KNOWN)
    assert (plan.keys is not None) == sparse
    parts = list(plan.chunks(size))
    assert [len(p) for p in parts[:-1]] == [size] * (len(parts) - 1)
    for field in ("rows", "owner", "clock"):
        got = np.concatenate([getattr(p, field) for p in parts])
        assert np.array_equal(got, getattr(whole, field)), field
    assert list(plan.chunks(size))[-1].rows.tobytes() == parts[-1].rows.tobytes()    # each pass starts afresh


@pytest.mark.parametrize("lazy", [False, True], ids=["taken_out", "lazy"])
@pytest.mark.parametrize("workers", [2, 3])
def test_prepare_shard_chunks_equal_the_whole_instructions_of_its_books(flow, workers, lazy):
    from obook.feeds.orders import read_orders

    path, _ = flow
    o = read_orders(path)
    _, whole = whole_instructions(o, 2, KNOWN)
    plan = prepare_mod.plan(o, 2, KNOWN)
    for w in range(workers):
        mine = whole[whole.rows["book"] % workers == w]
        shard = plan.shard(workers, w, lazy=lazy)
        assert (shard.orders.n == o.n) == lazy, w          # a lazy shard keeps the whole input
        parts = list(shard.chunks(5))
        assert len(parts) > 1, w
        for field in ("rows", "owner", "clock"):
            assert np.array_equal(np.concatenate([getattr(p, field) for p in parts]), getattr(mine, field)), (w, field)


@pytest.mark.parametrize("options", [dict(), dict(stp="cancel_resting", levels=3, date="2024-03-01")])
def test_match_reader_tiny_prepare_chunks_give_the_tables_of_match(flow, options, monkeypatch):
    from obook.matching import table_reader

    path, _ = flow
    whole = obook.match(path, tick=2, instruments=KNOWN, workers=2, **options)     # one chunk
    monkeypatch.setattr(prepare_mod, "CHUNK", 3)
    monkeypatch.setattr(books_mod, "CHUNK", 64)       # and the kernels flush many times
    for t in TABLES:
        got = obook.matching.match_reader(path, t, tick=2, instruments=KNOWN, **options).read_all()
        assert got.equals(whole.table(t)), t
        got = table_reader(path, t, workers=3, tick=2, instruments=KNOWN, **options).read_all()
        assert got.equals(whole.table(t)), t
    assert obook.match(path, tick=2, instruments=KNOWN, workers=2, **options).events.equals(whole.events)


@pytest.fixture
def made(monkeypatch):
    """The count of instruction rows prepared (ids assigned, keys, the kernels' rows), with
    500 rows prepared at a time."""
    seen = {"rows": 0}
    zeros = prepare_mod.Instructions.zeros

    def counted(cls, n):
        seen["rows"] += n
        return zeros(n)

    monkeypatch.setattr(prepare_mod.Instructions, "zeros", classmethod(counted))
    monkeypatch.setattr(prepare_mod, "CHUNK", 500, raising=False)
    monkeypatch.setattr(books_mod, "CHUNK", 64)
    return seen


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    p = tmp_path_factory.mktemp("match_prepare") / "orders.csv"
    import pyarrow.csv as pcsv

    pcsv.write_csv(to_table(random_flow(3, 20_000, tick=1)), p)
    return p


def _reader_first_batch(path):
    reader = obook.matching.match_reader(path, "events")
    assert reader.read_next_batch().num_rows > 0
    reader.close()


def _duckdb_limit(path):
    assert len(obook.connect().sql(f"SELECT * FROM obook_match_events('{path}') LIMIT 10").fetchall()) == 10


def _polars_head(path):
    assert obook.scan_match(path, table="events").head(10).collect().height == 10


@pytest.mark.parametrize("stop", [_reader_first_batch, _duckdb_limit, _polars_head],
                         ids=["reader_closed", "duckdb_limit", "polars_head"])
def test_match_reader_stopped_early_prepares_only_the_first_chunks(big, made, stop):
    stop(big)
    assert 0 < made["rows"] <= 5 * 500, made


def test_table_reader_workers_leave_the_instructions_to_the_workers(big, made):
    """The parent makes none: each worker makes its books' a chunk at a time (and stops
    with the reader, as tests/test_match_stream.py shows)."""
    from obook.matching import table_reader

    reader = table_reader(big, "events", workers=2)
    assert reader.read_next_batch().num_rows > 0
    reader.close()
    assert made["rows"] == 0, made


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "forkserver"])
def test_table_reader_workers_fork_or_forkserver_take_their_rows_out_themselves(big, fork, monkeypatch):
    """Forked workers share the whole input and each takes its books' rows out of it; those
    the forkserver starts map one shared copy of it and do the same: the same tables."""
    from obook.engine import workers as pool
    from obook.matching import table_reader

    sent = []
    shard = prepare_mod.Prepared.shard

    def seen(self, *args, **kwargs):
        got = shard(self, *args, **kwargs)
        sent.append(got.orders.n == self.orders.n)
        return got

    whole = obook.match(big, workers=1, tables=("events",)).events
    monkeypatch.setattr(pool, "_fork_is_safe", lambda: fork)
    monkeypatch.setattr(prepare_mod.Prepared, "shard", seen)
    assert table_reader(big, "events", workers=2).read_all().equals(whole)
    assert obook.match(big, workers=3, tables=("events",)).events.equals(whole)
    assert sent == [True] * 5


def test_table_reader_workers_forkserver_stopped_early_prepare_only_the_first_chunks(big, tmp_path, monkeypatch,
                                                                                      no_leaks):
    """Workers the forkserver starts, a reader closed after its first batch: the parent
    takes no rows out of the input for them, they make only their first chunks' rows, and
    neither this process nor the forkserver holds the input's shared copy afterwards."""
    import os
    from multiprocessing import forkserver

    from counted_plan import CountedPlan, made_by, shared_held
    from obook.engine import workers as pool
    from obook.feeds.orders import read_orders
    from obook.matching import stream as stream_mod
    from obook.matching import table_reader

    n = read_orders(big).n
    log = tmp_path / "made.log"
    plan = prepare_mod.plan
    taken = []
    part = prepare_mod._part

    def counted_part(o, rows):
        if not isinstance(rows, slice):
            taken.append(len(rows))
        return part(o, rows)

    monkeypatch.setattr(pool, "_fork_is_safe", lambda: False)
    monkeypatch.setattr(prepare_mod, "plan", lambda *a: CountedPlan.of(plan(*a), log))
    monkeypatch.setattr(prepare_mod, "_part", counted_part)
    monkeypatch.setattr(books_mod, "CHUNK", 64)
    monkeypatch.setattr(stream_mod, "AHEAD", 256)     # the parent reads a worker ahead of the other little
    reader = table_reader(big, "events", workers=2)
    assert reader.read_next_batch().num_rows > 0
    reader.close()
    del reader
    assert sum(taken) == 0, taken
    made = made_by(log)
    assert os.getpid() not in made and len(made) == 2, made
    assert 0 < sum(made.values()) < n // 2, (made, n)
    assert shared_held(os.getpid()) == []
    assert shared_held(forkserver._forkserver._forkserver_pid) == []
