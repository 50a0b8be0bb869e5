"""Live on loopback: ``send`` with drops on both lines and ``listen`` deliver the tables of
the file replay of the same day; gaps nobody answers are an error or a reported gap; Ctrl-C
leaves complete files."""

from __future__ import annotations

import os
import signal
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import obook
from live_support import addresses, free_port, hostport, process, sending
from obook.errors import ObookError
from obook.gen.itch import write_itch
from obook.live.listener import Listener


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("live") / "day.itch"
    write_itch(str(path), 20_000, 10, 5)
    return path


def _file_tables(day, tables):
    from obook.engine.replay import Replay

    r = Replay(day, workers=1, tables=tables, breaks=False)   # live: a break is not known ahead
    out = {t: [] for t in tables}
    for t, b in r.table_batches():
        out[t].append(b)
    return {t: pa.Table.from_batches(v, schema=r.schema(t)) for t, v in out.items()}


def test_listen_send_drops_on_both_lines_tables_equal_file_replay(day):
    a, b, r = addresses()
    lst = Listener(a, b, r, tables=("bbo", "trades"), idle_timeout=10, retries=20)
    got = {"bbo": [], "trades": []}
    with sending(day, a, b, r, rate=20_000, delay_b=0.002, drop_a=0.1, drop_b=0.1, reorder=0.05, seed=3) as sent:
        for t, batch in lst.table_batches():
            got[t].append(batch)
    st = lst.stats()
    assert sent["dropped_a"] > 0 and sent["dropped_b"] > 0
    assert st["lines"]["request"]["recovered_request"] > 0      # lost on both: re-requested
    assert st["lines"]["A"]["recovered_other_line"] > 0
    assert st["gaps"] == [] and st["ended"]
    ref = _file_tables(day, ("bbo", "trades"))
    for t in ("bbo", "trades"):
        assert pa.Table.from_batches(got[t], schema=lst.schema(t)).equals(ref[t]), t


def test_listen_iterator_yields_bbo_batches_of_file_replay(day):
    a, b, r = addresses()
    batches = obook.listen(hostport(a), hostport(b), hostport(r), idle_timeout=10, retries=20)
    with sending(day, a, b, r, rate=20_000, drop_a=0.05, seed=1):
        table = pa.Table.from_batches(list(batches))
    assert table.equals(obook.bbo(day, workers=1).read_all())


def test_listen_gap_unanswered_strict_raises_naming_range(day):
    a, b, r = addresses()
    lst = Listener(a, b, ("127.0.0.1", free_port()), idle_timeout=10, request_timeout=0.05, retries=1)
    rows = 0
    with sending(day, a, b, None, rate=20_000, drop_a=0.2, drop_b=0.2, seed=2):
        with pytest.raises(ObookError, match=r"sequence numbers \d+\.\.\d+ lost on both lines"):
            for _t, batch in lst.table_batches():
                rows += batch.num_rows
    assert lst.feed.socks == []      # closed


def test_listen_gap_unanswered_skip_reports_gaps(day):
    a, b, r = addresses()
    lst = Listener(a, b, None, on_gap="skip", idle_timeout=10, gap_wait=0.02)
    with sending(day, a, b, None, rate=20_000, drop_a=0.2, drop_b=0.2, seed=2):
        for _ in lst.table_batches():
            pass
    st = lst.stats()
    assert st["gaps"] and st["ended"]
    lost = sum(g["count"] for g in st["gaps"])
    assert st["records"] == 20_000 - lost


def test_cli_send_listen_parquet_rolls_files_equal_file_replay(day, tmp_path):
    a, b, r = addresses()
    out = tmp_path / "bbo"
    with process("listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                 "--to", "parquet", "-o", out, "--interval", "0.2", "--idle-timeout", "20",
                 "--retries", "20") as lp:
        time.sleep(1.5)   # listening (its kernels loaded) before the day starts
        with process("send", day, "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                     "--rate", "3000", "--drop-a", "0.05", "--drop-b", "0.05", "--linger", "2") as sp:
            assert sp.wait(timeout=60) == 0
        assert lp.wait(timeout=60) == 0, lp.stderr.read()
    files = sorted(out.glob("bbo-*.parquet"))
    assert len(files) > 1 and not list(out.glob("*.part"))
    table = pa.concat_tables(pq.read_table(f) for f in files)
    ref = obook.bbo(day, workers=1).read_all()
    assert table.select(ref.column_names).cast(ref.schema).equals(ref)


def _wait_for(*paths, timeout=60.0):
    end = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < end, f"not created: {paths}"
        time.sleep(0.05)


def test_cli_listen_multicast_sigint_exits_130_with_complete_files(day, tmp_path):
    """Two listeners joined to the same multicast lines, stopped by Ctrl-C mid-day."""
    a, b = ("239.255.11.1", free_port()), ("239.255.11.2", free_port())
    out = tmp_path / "bbo.arrow"
    pq_dir = tmp_path / "pq"
    common = ("--line-a", hostport(a), "--line-b", hostport(b), "--request", "", "--idle-timeout", "20")
    with process("listen", *common, "--to", "arrow", "-o", out) as lp, \
            process("listen", *common, "--to", "parquet", "-o", pq_dir, "--interval", "100") as lq:
        _wait_for(out, pq_dir)
        with process("send", day, "--line-a", hostport(a), "--line-b", hostport(b), "--rate", "100",
                     "--request", "") as sp:
            _wait_for(pq_dir / "bbo-00001.part")
            time.sleep(0.5)
            lp.send_signal(signal.SIGINT)
            lq.send_signal(signal.SIGINT)
            assert lp.wait(timeout=30) == 130
            assert lq.wait(timeout=30) == 130
            sp.send_signal(signal.SIGINT)
            assert sp.wait(timeout=30) == 130
    ref = obook.bbo(day, workers=1).read_all()
    with pa.ipc.open_stream(out) as f:
        got = f.read_all()
    assert 0 < got.num_rows < ref.num_rows
    assert got.equals(ref.slice(0, got.num_rows))
    files = list(pq_dir.glob("*.parquet"))
    assert len(files) == 1 and not list(pq_dir.glob("*.part"))
    t = pq.read_table(files[0])
    assert 0 < t.num_rows and t.select(ref.column_names).cast(ref.schema).equals(ref.slice(0, t.num_rows))
