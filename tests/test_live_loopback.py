"""Live on loopback: ``send`` with drops on both lines and ``listen`` deliver the tables of
the file replay of the same day; gaps nobody answers are an error or a reported gap; Ctrl-C
leaves complete files."""

from __future__ import annotations

import ast
import re
import signal
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import obook
from live_support import addresses, free_port, hostport, process, sending, wait_accepting
from obook.errors import ObookError
from obook.gen.itch import write_itch
from obook.live.listener import Listener


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("live") / "day.itch"
    write_itch(str(path), 20_000, 10, 5)
    return path


LIVE_COLUMNS = ["mold_seq", "line", "ts_recv"]


def _plain(table: pa.Table) -> pa.Table:
    """A live table without the columns a file replay has not (mold_seq, line, ts_recv)."""
    return table.drop_columns(LIVE_COLUMNS)


def _file_tables(day, tables):
    from obook.engine.replay import Replay

    r = Replay(day, workers=1, tables=tables, breaks=False)   # live: a break is not known ahead
    out = {t: [] for t in tables}
    for t, b in r.table_batches():
        out[t].append(b)
    return {t: pa.Table.from_batches(v, schema=r.schema(t)) for t, v in out.items()}


def test_listen_send_drops_on_both_lines_tables_equal_file_replay(day, caplog):
    a, b, r = addresses()
    lst = Listener(a, b, r, tables=("bbo", "trades"), idle_timeout=10, retries=20)
    got = {"bbo": [], "trades": []}
    with sending(day, a, b, r, rate=20_000, delay_b=0.002, drop_a=0.1, drop_b=0.1, reorder=0.05, seed=3) as sent:
        for t, batch in lst.table_batches():
            got[t].append(batch)
    st = lst.stats()
    assert sent["dropped_a"] > 0 and sent["dropped_b"] > 0
    assert st["lines"]["request"]["recovered_request"] > 0      # lost on both: re-requested
    stats = {row["line"]: row for row in lst.line_stats_table().to_pylist()}
    assert stats["A"]["address"] == a[0] and stats["A"]["port"] == a[1] and stats["request"]["port"] == r[1]
    for line in ("A", "B", "request"):
        assert {k: stats[line][k] for k in st["lines"][line]} == st["lines"][line], line
    assert st["lines"]["A"]["recovered_other_line"] > 0
    assert st["gaps"] == [] and st["ended"]
    ref = _file_tables(day, ("bbo", "trades"))
    for t in ("bbo", "trades"):
        table = pa.Table.from_batches(got[t], schema=lst.schema(t))
        assert _plain(table).equals(ref[t]), t
        assert table["mold_seq"].to_pylist() == table["seq"].to_pylist()
        assert set(table["line"].to_pylist()) == {"A", "B", "R"}     # some first on B, some re-requested
        assert table["ts_recv"].null_count == 0
    # live trades have broken false by design: no warning about the stream's breaks
    assert not [m for m in caplog.messages if "stream is read once" in m]


def test_listen_warm_up_of_the_trades_replay_warns_nothing(caplog):
    from obook.live.listener import warm_up

    with caplog.at_level("WARNING", logger="obook"):
        warm_up(("bbo", "trades"), 3)
    assert caplog.messages == []


def test_listen_iterator_yields_bbo_batches_of_file_replay(day):
    a, b, r = addresses()
    batches = obook.listen(hostport(a), hostport(b), hostport(r), idle_timeout=10, retries=20)
    with sending(day, a, b, r, rate=20_000, drop_a=0.05, seed=1):
        table = pa.Table.from_batches(list(batches))
    assert _plain(table).equals(obook.bbo(day, workers=1).read_all())


def test_listen_gap_unanswered_strict_raises_naming_range(day):
    a, b, r, silent = addresses(4)
    lst = Listener(a, b, silent, idle_timeout=10, request_timeout=0.05, retries=1)
    rows = 0
    with sending(day, a, b, None, rate=20_000, drop_a=0.2, drop_b=0.2, seed=2):
        with pytest.raises(ObookError, match=r"sequence numbers \d+\.\.\d+ lost on both lines \(re-requests "
                                             r"unanswered after 1 retries\)"):
            for _t, batch in lst.table_batches():
                rows += batch.num_rows
    assert lst.feed.socks == []      # closed


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_listen_gap_without_request_server_strict_error_says_none_was_asked(day, loop):
    a, b = addresses(2)
    lst = Listener(a, b, None, idle_timeout=10, loop=loop)
    with sending(day, a, b, None, rate=20_000, drop_a=0.2, drop_b=0.2, seed=2):
        with pytest.raises(ObookError, match=r"sequence numbers \d+\.\.\d+ lost on both lines \(no re-request server "
                                             r"to ask\)$"):
            for _ in lst.table_batches():
                pass
    assert lst.stats()["requests"] == 0


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
    gaps = lst.gaps_table()
    assert sum(gaps["count"].to_pylist()) == lost and gaps["ts_after"].null_count == 0
    assert gaps["first_seq"].to_pylist() == [g["first_seq"] for g in st["gaps"]]


def _wait_for(*paths, timeout=60.0):
    end = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < end, f"not created: {paths}"
        time.sleep(0.05)


def test_cli_send_listen_parquet_rolls_files_equal_file_replay(day, tmp_path):
    a, b, r = addresses()
    out = tmp_path / "bbo"
    with process("listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                 "--to", "parquet", "-o", out, "--interval", "0.1", "--idle-timeout", "20",
                 "--retries", "20") as lp:
        _wait_for(out)    # listening (its kernels loaded, the sinks open) before the day starts
        with process("send", day, "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                     "--rate", "250", "--drop-a", "0.05", "--drop-b", "0.05", "--linger", "2") as sp:
            assert sp.wait(timeout=60) == 0
        assert lp.wait(timeout=60) == 0, lp.stderr.read()
    files = sorted(out.glob("bbo-*.parquet"))
    assert len(files) > 1 and not list(out.glob("*.part"))
    stats = pq.read_table(out / "line_stats.parquet").to_pylist()
    assert [s["line"] for s in stats] == ["A", "B", "request"]
    assert stats[0]["messages"] > 0 and stats[0]["packets"] > 0 and stats[1]["messages"] > 0
    table = pa.concat_tables(pq.read_table(f) for f in files)
    ref = obook.bbo(day, workers=1).read_all()
    assert table.select(ref.column_names).cast(ref.schema).equals(ref)


def test_cli_listen_multicast_sigint_exits_130_with_complete_files(day, tmp_path):
    """Two listeners joined to the same multicast lines, stopped by Ctrl-C mid-day."""
    (_, port_a), (_, port_b) = addresses(2)
    a, b = ("239.255.11.1", port_a), ("239.255.11.2", port_b)
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
        said = [p.stderr.read().decode() for p in (lp, lq)]
    ref = obook.bbo(day, workers=1).read_all()
    # every message received before the Ctrl-C is in the tables, each row once, as counted
    received = [int(re.search(r"records (\d+)", e).group(1)) for e in said]
    rows = [ast.literal_eval(re.search(r"rows (\{.*?\})", e).group(1))["bbo"] for e in said]
    with pa.ipc.open_stream(out) as f:
        got = f.read_all()
    assert 0 < got.num_rows < ref.num_rows
    assert _plain(got).equals(ref.slice(0, got.num_rows))
    assert got.num_rows == rows[0] == pc.sum(pc.less_equal(ref["seq"], received[0])).as_py()
    files = list(pq_dir.glob("bbo-*.parquet"))
    assert len(files) == 1 and not list(pq_dir.glob("*.part"))
    stats = pq.read_table(pq_dir / "line_stats.parquet").to_pylist()   # written on Ctrl-C too
    assert [s["line"] for s in stats] == ["A", "B", "request"] and stats[0]["messages"] > 0
    t = pq.read_table(files[0])
    assert 0 < t.num_rows and t.select(ref.column_names).cast(ref.schema).equals(ref.slice(0, t.num_rows))
    assert t.num_rows == rows[1] == pc.sum(pc.less_equal(ref["seq"], received[1])).as_py()


def test_cli_listen_sigint_mid_day_tables_hold_every_message_received(day, tmp_path):
    """Ctrl-C while messages arrive faster than the tables are written: the session ends
    there, and every message received before it is in the tables once (as many rows as the
    listener reports)."""
    a, b, r = addresses()
    out = tmp_path / "pq"
    tables = ("bbo", "orders", "depth")
    ref = _file_tables(day, tables)
    with process("listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                 "--to", "parquet", "-o", out, "--tables", ",".join(tables), "--interval", "0.3") as lp:
        _wait_for(out)
        with process("send", day, "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                     "--message-rate", "4000", "--linger", "0.5") as sp:
            _wait_for(out / "bbo-00002.parquet")
            lp.send_signal(signal.SIGINT)
            assert lp.wait(timeout=30) == 130
            sp.kill()
        said = lp.stderr.read().decode()
    received = int(re.search(r"records (\d+)", said).group(1))
    rows = ast.literal_eval(re.search(r"rows (\{.*?\})", said).group(1))
    assert 0 < received < 20_000 and not list(out.glob("*.part"))
    for t in tables:
        got = pa.concat_tables(pq.read_table(f) for f in sorted(out.glob(f"{t}-*.parquet")))
        want = ref[t].filter(pc.less_equal(ref[t]["seq"], received))
        assert got.num_rows == rows[t] == want.num_rows, (t, said)
        assert _plain(got).cast(want.schema).equals(want), t


def test_listen_bad_packets_and_wrong_session_counted_tables_equal(day):
    import socket

    a, b, r = addresses()
    lst = Listener(a, b, r, idle_timeout=10, retries=20, session="OBOOK")
    junk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    got = []
    try:
        with sending(day, a, b, r, rate=20_000, drop_a=0.05, seed=6):
            from obook.feeds.mold.packets import encode_packet

            junk.sendto(b"short", a)                                          # truncated header
            junk.sendto(encode_packet("OBOOK", 5, [b"x" * 30])[:-3], b)       # cut inside a message
            junk.sendto(encode_packet("OTHER", 1, [b"S" + bytes(11)]), a)     # another session
            for _t, batch in lst.table_batches():
                got.append(batch)
    finally:
        junk.close()
    dropped = sum(lst.stats()["kernel_drops"].values())         # the lines' socket filter's
    st = lst.stats()["lines"]
    assert st["A"]["bad_packets"] + st["B"]["bad_packets"] + dropped == 2
    assert st["A"]["wrong_session"] == 1
    assert _plain(pa.Table.from_batches(got)).equals(obook.bbo(day, workers=1).read_all())


def test_listen_duckdb_sink_appends_rows_of_file_replay(day, tmp_path):
    import duckdb

    from obook.live.sinks import close_sinks, open_sinks

    a, b, r = addresses()
    lst = Listener(a, b, r, idle_timeout=10, retries=20)
    db = tmp_path / "live.duckdb"
    sinks = open_sinks("duckdb", db, ("bbo",), lst.schema)
    with sending(day, a, b, r, rate=20_000, drop_b=0.1, seed=8):
        try:
            for t, batch in lst.table_batches():
                sinks[t].write(batch)
        finally:
            close_sinks(sinks)
    with duckdb.connect(str(db)) as con:
        got = con.sql("SELECT * FROM bbo ORDER BY seq").to_arrow_table()
    ref = obook.bbo(day, workers=1).read_all()
    assert got.num_rows == ref.num_rows
    assert got.column("seq").to_pylist() == ref.column("seq").to_pylist()
    assert got.column("bid_px").to_pylist() == ref.column("bid_px").to_pylist()


def test_cli_tick_to_trade_venue_gets_offline_orders(day, tmp_path):
    """obook venue + obook listen --strategy --venue + obook send: the orders' hash equals the
    offline replay's, and the venue logged every one of them."""
    import re
    import socket as _socket

    from obook.live.risk import RiskGate
    from obook.live.strategy import replay_orders
    from obook.live.venue import read_log

    example = Path(__file__).resolve().parent.parent / "examples" / "strategy_quote.py"
    spec = __import__("importlib.util").util.spec_from_file_location("strategy_quote", example)
    mod = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    offline = replay_orders(day, mod.JoinBid(), ["AAA", "AAB"], RiskGate())
    a, b, r = addresses()
    v = free_port(_socket.SOCK_STREAM)
    log = tmp_path / "venue.log"
    with process("venue", "--listen", f"127.0.0.1:{v}", "--log", log, "--sessions", "1") as vp:
        wait_accepting(v)
        with process("listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                     "--to", "parquet", "-o", tmp_path / "pq", "--strategy", f"{example}:JoinBid",
                     "--tickers", "AAA,AAB", "--venue", f"127.0.0.1:{v}", "--latency",
                     "--latency-output", tmp_path / "latency.parquet", "--retries", "20",
                     "--idle-timeout", "20") as lp:
            _wait_for(tmp_path / "pq")
            with process("send", day, "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                         "--rate", "3000", "--drop-a", "0.05", "--drop-b", "0.05", "--linger", "2") as sp:
                assert sp.wait(timeout=60) == 0
            assert lp.wait(timeout=60) == 0
            err = lp.stderr.read().decode()
        assert vp.wait(timeout=30) == 0
    assert f"orders: {len(offline.orders)}, sha256 {offline.digest()}" in err
    assert re.search(r"tick-to-trade\s+\d+", err)
    assert len(read_log(log)) == len(offline.orders)
    lat = pq.read_table(tmp_path / "latency.parquet").to_pydict()
    assert {"recv", "book", "strategy", "gateway", "venue", "tick-to-trade"} <= set(lat["stage"])


def test_listen_everything_lost_on_both_lines_recovered_by_rerequest(tmp_path):
    """Both lines drop every packet: the end of session names the last number, and the
    whole day comes back by re-request (in requests of at most ``max_request`` messages)."""
    small = tmp_path / "small.itch"
    write_itch(str(small), 3_000, 5, 4)
    a, b, r = addresses()
    lst = Listener(a, b, r, idle_timeout=10, retries=20, max_request=700)
    with sending(small, a, b, r, rate=20_000, drop_a=1.0, drop_b=1.0):
        table = pa.Table.from_batches([bt for _t, bt in lst.table_batches()])
    st = lst.stats()
    assert st["lines"]["A"]["messages"] == st["lines"]["B"]["messages"] == 0
    assert st["lines"]["request"]["recovered_request"] == 3_000 and st["requests"] >= 5
    assert _plain(table).equals(obook.bbo(small, workers=1).read_all())
    assert set(table["line"].to_pylist()) == {"R"}
    assert table["mold_seq"].to_pylist() == table["seq"].to_pylist()


def test_live_feed_rings_grow_past_a_burst_keep_record_columns():
    """A burst larger than the rings (a day delivered at once after re-requests) keeps
    every record's MoldUDP64 number and line until its rows are made."""
    from obook.live.feed import RING, LiveFeed

    feed = LiveFeed(*addresses(2), None)
    try:
        n = RING + 1000
        msgs = [(s, s % 3, 1000 + s, b"S" + bytes(11)) for s in range(1, n + 1)]
        feed._deliver(msgs[:10])
        feed._deliver(msgs[10:])
        assert feed.mask + 1 >= 2 * n
        cols = feed.record_columns(list(range(1, n + 1)))
        assert cols[0].to_pylist() == list(range(1, n + 1))
        assert cols[1].to_pylist() == [("A", "B", "R")[s % 3] for s in range(1, n + 1)]
    finally:
        feed.close()


def test_cli_listen_text_equals_bbo_text(day):
    import subprocess
    import sys

    a, b, r = addresses()
    want = subprocess.run([sys.executable, "-m", "obook", "bbo", str(day), "-w", "1"], capture_output=True,
                          timeout=120, check=True).stdout
    with process("listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                 "--retries", "20", "--idle-timeout", "20") as lp:
        line = b""
        while not line.startswith(b"listening:"):      # the lines are bound
            line = lp.stderr.readline()
            assert line, "listen ended before listening"
        with process("send", day, "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                     "--rate", "3000", "--drop-a", "0.05", "--drop-b", "0.05", "--linger", "2") as sp:
            assert sp.wait(timeout=60) == 0
        out, err = lp.communicate(timeout=60)
        assert lp.returncode == 0, err
    assert out == want


def test_cli_venue_cpu_that_does_not_exist_one_line_error():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "obook", "venue", "--listen", "127.0.0.1:0", "--cpu", "4096"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1].startswith("error: --cpu 4096: cannot pin")


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_listen_strategy_raises_tables_hold_the_rows_up_to_its_message(day, loop):
    from obook.errors import StrategyError
    from obook.live.strategy import TickToTrade

    calls = []

    def strategy(top):
        calls.append(top.seq)
        if len(calls) == 3:
            raise RuntimeError("boom")

    a, b, r = addresses()
    lst = Listener(a, b, None, loop=loop, tick_to_trade=TickToTrade(strategy), idle_timeout=10)
    seqs = []
    with sending(day, a, b, None, rate=20_000, linger=0), pytest.raises(StrategyError, match="boom"):
        for _t, batch in lst.table_batches():
            seqs += batch.column("seq").to_pylist()
    assert calls[-1] in seqs and set(calls) <= set(seqs)
