"""obook.simulate through the CLI, DuckDB (obook_simulate) and polars (scan_simulate)."""

from __future__ import annotations

import re

import polars as pl
import pyarrow as pa
import pytest
import pyarrow.parquet as pq
from typer.testing import CliRunner

import obook
from obook.cli import app
from obook.errors import ObookError

FEED = """Time,Ticker,Order,T,Shares,Price
1,AAA,a,S,100,1000
2,AAA,b,S,200,1000
10,AAA,a,E,100,1000
11,AAA,b,E,200,1000
12,AAA,c,S,300,1000
13,AAA,c,E,150,1000
"""
ORDERS = """time,instrument,order_id,action,side,type,tif,price,quantity,lat
5,AAA,1,new,sell,limit,GTC,1000,120,0
5,AAA,2,new,buy,limit,IOC,1000,50,4000000
"""


def _files(tmp_path):
    (tmp_path / "feed.csv").write_text(FEED)
    (tmp_path / "orders.csv").write_text(ORDERS)
    return str(tmp_path / "feed.csv"), str(tmp_path / "orders.csv")


def test_simulate_cli_writes_tables_and_fills_csv(tmp_path):
    feed, orders = _files(tmp_path)
    want = obook.simulate(feed, orders, format="csv", latency="lat", workers=1)
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "lat", "-w", "1", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    for t in ("fills", "events", "summary", "bbo_with_own", "bbo"):
        assert pq.read_table(tmp_path / "out" / f"{t}.parquet").equals(want.table(t)), t
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "lat", "-w", "1"])
    assert res.exit_code == 0
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1 + want.fills.num_rows == 3     # the buy IOC at 9 takes 50 of b ahead


ALL_TABLES = "fills,events,summary,bbo_with_own,depth_with_own,bbo,trades,orders,depth"


def test_simulate_cli_output_again_keeps_only_this_runs_tables(tmp_path):
    feed, orders = _files(tmp_path)
    out = tmp_path / "out"

    def run(*flags):
        res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "lat", "-w", "1", "-o", str(out),
                                       *flags])
        assert res.exit_code == 0, res.output
        return sorted(p.name for p in out.iterdir())

    every = ALL_TABLES.split(",")
    assert run("-t", ALL_TABLES) == sorted(f"{t}.parquet" for t in every)
    assert run("-t", ALL_TABLES, "--type", "csv") == sorted(f"{t}.csv" for t in every)
    assert run("-t", ALL_TABLES, "--type", "arrow") == sorted(f"{t}.arrow" for t in every)
    (out / "notes.txt").write_text("mine")
    (out / "depth.csv").write_text("my precious\n")                # a name of a table, not a table
    (out / "summary.parquet").write_bytes(b"not obook's")
    assert run() == ["bbo.parquet", "bbo_with_own.parquet", "depth.csv", "events.parquet", "fills.parquet",
                     "notes.txt", "summary.parquet"]
    assert (out / "depth.csv").read_text() == "my precious\n"
    assert run("-t", "fills", "--type", "csv") == ["depth.csv", "fills.csv", "notes.txt"]


def test_simulate_cli_write_interrupted_leaves_no_output_folder(tmp_path, monkeypatch):
    import obook.output

    def interrupted(tables, threads=1):
        raise KeyboardInterrupt

    monkeypatch.setattr(obook.output, "write_files", interrupted)
    feed, orders = _files(tmp_path)
    res = CliRunner().invoke(app, ["simulate", feed, orders, "-w", "1", "-o", str(tmp_path / "out")])
    assert res.exit_code != 0 and not (tmp_path / "out").exists()


def test_simulate_cli_bad_latency_is_an_error(tmp_path):
    feed, orders = _files(tmp_path)
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "uniform:a:b"])
    assert res.exit_code != 0


@pytest.mark.parametrize("seed", ["-1", str(1 << 63)])
def test_simulate_cli_bad_seed_error_names_the_option_as_typed(tmp_path, seed):
    feed, orders = _files(tmp_path)
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--seed", seed])
    assert isinstance(res.exception, ObookError) and str(res.exception).startswith("--seed must be"), res.output


def test_simulate_duckdb_and_polars_match_python(tmp_path):
    feed, orders = _files(tmp_path)
    want = obook.simulate(feed, orders, latency="lat", workers=1)
    con = obook.connect()
    got = con.sql(f"SELECT * FROM obook_simulate('{feed}', '{orders}', latency := 'lat', workers := 1)").arrow()
    got = got.read_all() if hasattr(got, "read_all") else got
    assert got.to_pylist() == want.fills.to_pylist()
    n = con.sql(f"SELECT count(*) FROM obook_simulate_events('{feed}', '{orders}', latency := 'lat')").fetchall()[0][0]
    assert n == want.events.num_rows
    lf = obook.scan_simulate(feed, orders, table="summary", latency="lat", workers=1)
    assert lf.collect().equals(pl.from_arrow(want.summary))


def test_simulate_depth_with_own_every_front_end_same_table(tmp_path):
    """depth_with_own (and the feed's depth) through --tables, obook_simulate_depth and
    scan_simulate(table="depth_with_own") is obook.simulate's."""
    feed, orders = _files(tmp_path)
    want = obook.simulate(feed, orders, latency="lat", workers=1, feed_tables=("depth",),
                          own_tables=("depth_with_own",), levels=3)
    dwo = want.depth_with_own
    assert dwo.num_rows > 0 and dwo.schema.names[-1] == "ask_orders_3"
    # our 120 resting at 1000 behind a and b: 420 shares, 3 orders at the best ask
    at5 = [(d["ask_px_1"], d["ask_qty_1"], d["ask_orders_1"]) for d in dwo.to_pylist() if d["time"] == 5]
    assert at5 == [(1000, 420, 3)]
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "lat", "-w", "1", "-o", str(out),
                                   "--tables", "depth_with_own,depth,fills", "--levels", "3"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["depth.parquet", "depth_with_own.parquet", "fills.parquet"]
    for t in ("depth_with_own", "depth", "fills"):
        assert pq.read_table(out / f"{t}.parquet").equals(want.table(t)), t
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "lat", "-w", "1", "-t", "depth_with_own",
                                   "--levels", "3"])
    assert res.exit_code == 0 and len(res.stdout.strip().splitlines()) == 1 + dwo.num_rows
    res = CliRunner().invoke(app, ["simulate", feed, orders, "-t", "fills,events"])
    assert res.exit_code != 0 and "stdout takes one table" in str(res.exception)
    res = CliRunner().invoke(app, ["simulate", feed, orders, "-t", "nope"])
    assert res.exit_code != 0 and "unknown table" in str(res.exception)
    con = obook.connect()
    got = con.sql(f"SELECT * FROM obook_simulate_depth('{feed}', '{orders}', latency := 'lat', workers := 1, "
                  f"levels := 3)").arrow()
    got = got.read_all() if hasattr(got, "read_all") else got
    assert got.column_names == dwo.column_names and got.to_pylist() == dwo.to_pylist()
    lf = obook.scan_simulate(feed, orders, table="depth_with_own", latency="lat", workers=1, levels=3)
    assert lf.collect().equals(pl.from_arrow(dwo))


def _orders_from_bbo(bbo, n, seed):
    """Own orders at the feed's touch (either side, GTC / IOC), from its bbo rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    both = bbo.filter(pc.and_(pc.is_valid(bbo["bid_px"]), pc.is_valid(bbo["ask_px"])))
    rng = np.random.default_rng(seed)
    take = both.take(pa.array(np.sort(rng.choice(both.num_rows, n))))
    side = rng.integers(0, 2, n)
    return pa.table({"time": take["time"].cast(pa.int64()), "instrument": take["ticker"],
                     "order_id": np.arange(1, n + 1), "action": ["new"] * n,
                     "side": np.where(side == 0, "buy", "sell"),
                     "tif": np.where(rng.random(n) < 0.7, "GTC", "IOC"),
                     "price": np.where(side == 0, take["bid_px"].to_numpy(), take["ask_px"].to_numpy()),
                     "quantity": rng.integers(1, 300, n)})


@pytest.mark.parametrize("fmt", ["szse", "sse"])
def test_simulate_china_level2_formats_workers_identical(tmp_path, fmt):
    """The simulation reads only normalized events: the Level-2 plug-ins work unchanged."""
    from obook.gen.sse import write_sse
    from obook.gen.szse import write_szse

    feed = tmp_path / f"day.{fmt}.log"
    (write_szse if fmt == "szse" else write_sse)(feed, 6_000, 3, 1)
    bbo = obook.simulate(str(feed), pa.table({"instrument": pa.array([], pa.string()),
                                               "action": pa.array([], pa.string())}), format=fmt, workers=1).bbo
    orders = _orders_from_bbo(bbo, 80, 2)
    one = obook.simulate(str(feed), orders, format=fmt, workers=1, latency=1000)
    two = obook.simulate(str(feed), orders, format=fmt, workers=2, latency=1000)
    assert one.events.column("event").to_pylist().count("accepted") == 80
    assert one.fills.num_rows > 0
    for t in ("fills", "events", "summary", "bbo_with_own", "bbo"):
        assert one.table(t).equals(two.table(t)), t


def test_simulate_cli_feed_of_several_files_as_a_glob_pattern_equals_python(tmp_path):
    """A Shenzhen vendor CSV day is several files: the command takes them as a quoted pattern."""
    import glob

    res = CliRunner().invoke(app, ["gen", "szse-csv", str(tmp_path / "day"), "-n", "3000"])
    assert res.exit_code == 0, res.output
    files = sorted(glob.glob(str(tmp_path / "day" / "*.csv")))
    bbo = obook.bbo(files).read_all()
    orders = _orders_from_bbo(bbo, 30, 4)
    pq.write_table(orders, tmp_path / "own.parquet")
    want = obook.simulate(files, orders, workers=1).events
    res = CliRunner().invoke(app, ["simulate", str(tmp_path / "day" / "*.csv"), str(tmp_path / "own.parquet"),
                                   "-w", "1", "-o", str(tmp_path / "out"), "-t", "events"])
    assert res.exit_code == 0, res.output
    got = pq.read_table(tmp_path / "out" / "events.parquet")
    assert got.num_rows > 30 and got.select(want.column_names).cast(want.schema).equals(want)
    res = CliRunner().invoke(app, ["simulate", str(tmp_path / "none" / "*.csv"), str(tmp_path / "own.parquet")])
    assert "no feed file matches" in str(res.exception)


def test_simulate_databento_day_passive_fills_workers_identical(tmp_path):
    """Databento MBO: fills (F) then cancels (C) fill resting own orders; 1 and 2 workers agree."""
    from obook.gen.databento import mbo_flow, write_dbn

    feed = tmp_path / "day.mbo.dbn"
    write_dbn(feed, mbo_flow(8_000, 3, 1))
    bbo = obook.simulate(str(feed), pa.table({"instrument": pa.array([], pa.string()),
                                               "action": pa.array([], pa.string())}), workers=1).bbo
    orders = _orders_from_bbo(bbo, 120, 3)
    one = obook.simulate(str(feed), orders, workers=1, latency=1000)
    two = obook.simulate(str(feed), orders, workers=2, latency=1000)
    assert "maker" in one.fills.column("liquidity").to_pylist()
    for t in ("fills", "events", "summary", "bbo_with_own", "bbo"):
        assert one.table(t).equals(two.table(t)), t


def test_simulate_tables_schemas_and_kernel_rows_follow_one_declaration():
    """The simulation's fills, events and bbo_with_own schemas are their declared columns in
    order; the kernels' rows are the sort key, then the declared row columns, and the row
    constants are those positions."""
    from obook._kernels import simulate_layout as S
    from obook.simulation.tables import schema_of

    for table, columns, row in (("fills", S.SIM_FILL_COLUMNS, S.FILL_ROW), ("events", S.SIM_EVENT_COLUMNS, S.EVENT_ROW),
                                ("bbo_with_own", S.SIM_BBO_COLUMNS, S.QUOTE_ROW)):
        assert [(f.name, str(f.type), f.nullable) for f in schema_of(table)] == [
            (n, str(pa.type_for_alias(t)), null) for n, t, null, _ in columns]
        assert row[:len(S.SORT_KEY)] == S.SORT_KEY and set(row) == set(S.SORT_KEY) | {c[3] for c in columns}
    assert (S.K_SEQ, S.K_PHASE, S.K_TIME, S.K_TB, S.K_COUNT, S.D_HEAD) == (0, 1, 2, 3, 4, 5)
    assert [S.FILL_ROW[i] for i in (S.F_KEY, S.F_SIDE, S.F_PRICE, S.F_QTY, S.F_TAKER, S.F_PRIO)] == [
        "key", "side", "price", "qty", "taker", "prio"] and S.F_WIDTH == len(S.FILL_ROW) == 11
    assert [S.EVENT_ROW[i] for i in (S.E_KEY, S.E_KIND, S.E_SIDE, S.E_PRICE, S.E_QTY, S.E_REM, S.E_AHEAD,
                                     S.E_REASON, S.E_ROW)] == [
        "key", "kind", "side", "price", "qty", "rem", "ahead", "reason", "row"] and S.E_WIDTH == len(S.EVENT_ROW) == 14
    assert [S.QUOTE_ROW[i] for i in (S.Q_BID, S.Q_BIDQ, S.Q_ASK, S.Q_ASKQ)] == ["bid", "bidq", "ask", "askq"]
    depth = schema_of("depth_with_own", 2)
    assert [f.name for f in depth][:4] == ["seq", "time", "instrument", "bid_px_1"] and len(depth) == 3 + 2 * 2 * 3


@pytest.mark.parametrize("bad", ["feed", "orders"])
def test_simulate_cli_bad_line_error_names_its_file(tmp_path, bad):
    from hostile_support import cli_error

    feed, orders = _files(tmp_path)
    path = feed if bad == "feed" else orders
    with open(path, "a") as f:
        f.write("20,AAA,d,S,x,1000\n" if bad == "feed" else "6,AAA,3,new,sell,limit,GTC,1000,x,0\n")
    line = cli_error("simulate", feed, orders, "-w", "1")
    assert line.startswith(f"error: {path}: ") and ("line 8" if bad == "feed" else "row 3") in line, line


def _two_books(tmp_path, bad_line: int):
    """A CSV day of two instruments, own orders in both; the same day with an unknown order
    (a record only one worker's books meet) before line ``bad_line``, and the day cut there."""
    import random

    rnd = random.Random(3)
    lines, live, n = ["Time,Ticker,Order,T,Shares,Price"], {"AAA": [], "BBB": []}, 0
    for t in range(1, 400):
        k = rnd.choice(["AAA", "BBB"])
        if live[k] and rnd.random() < 0.4:
            lines.append(f"{t},{k},{live[k].pop(rnd.randrange(len(live[k])))},D,0,0")
        else:
            n += 1
            side = rnd.choice("BS")
            lines.append(f"{t},{k},o{n},{side},100,{990 + rnd.randrange(10) if side == 'B' else 1000 + rnd.randrange(10)}")
            live[k].append(f"o{n}")
    cut = bad_line - 1
    files = {"bad": lines[:cut] + [f"{cut},AAA,nosuch,D,0,0"] + lines[cut:], "cut": lines[:cut],
             "orders": ["time,instrument,order_id,action,side,type,tif,price,quantity"] + [
                 f"{2 + i * 4},{'AAA' if i % 2 else 'BBB'},{i},new,{'buy' if i % 3 else 'sell'},limit,GTC,"
                 f"{995 + i % 7 if i % 3 else 1000 + i % 7},{30 + i}" for i in range(40)]}
    for name, rows in files.items():
        (tmp_path / f"{name}.csv").write_text("\n".join(rows) + "\n")
    return [str(tmp_path / f"{name}.csv") for name in files]


@pytest.mark.parametrize("workers", [1, 2])
def test_simulate_bad_feed_record_partial_equals_the_day_cut_before_it(tmp_path, workers):
    bad, cut, orders = _two_books(tmp_path, 201)
    with pytest.raises(obook.FeedError, match="line 201: unknown order") as e:
        obook.simulate(bad, orders, workers=workers, format="csv", day_end=False, feed_tables=("bbo", "trades"))
    want = obook.simulate(cut, orders, workers=workers, format="csv", day_end=False, feed_tables=("bbo", "trades"))
    got = e.value.partial
    assert want.fills.num_rows > 0 and want.events.num_rows > 40
    for t in ("fills", "events", "bbo_with_own", "bbo", "trades"):
        assert got.table(t).equals(want.table(t)), t
    # the mid a horizon after arrival lies past the stop: unknown, not the cut day's last mid
    later = ("mid_later", "vs_mid_later")
    assert got.summary.drop_columns(later).equals(want.summary.drop_columns(later))
    assert got.summary["mid_later"].null_count == got.summary.num_rows


def test_simulate_cli_bad_feed_record_writes_partial_tables(tmp_path):
    from hostile_support import cli_error

    bad, cut, orders = _two_books(tmp_path, 201)
    out = tmp_path / "out"
    line = cli_error("simulate", bad, orders, "-w", "2", "--no-day-end", "-o", str(out))
    assert "line 201: unknown order" in line and f"(the rows before it are in {out}/TABLE.parquet.partial)" in line
    want = obook.simulate(cut, orders, workers=2, format="csv", day_end=False)
    for t in ("fills", "events", "summary", "bbo_with_own", "bbo"):
        assert not (out / f"{t}.parquet").exists()
        got = pq.read_table(out / f"{t}.parquet.partial")
        assert got.num_rows == want.table(t).num_rows, t
    assert pq.read_table(out / "fills.parquet.partial").equals(want.fills)


def test_simulate_progress_reports_bytes_read_up_to_the_file_size(tmp_path):
    import os

    feed, orders = _files(tmp_path)
    seen = []
    obook.simulate(feed, orders, format="csv", workers=1, progress=seen.append)
    assert seen and seen == sorted(seen) and seen[-1] == os.path.getsize(feed)


def test_simulate_rejections_report_the_quantity_the_matching_engine_reports(tmp_path):
    feed, _ = _files(tmp_path)
    (tmp_path / "bad.csv").write_text(
        "time,instrument,order_id,action,side,type,tif,price,quantity\n"
        "5,AAA,1,new,buy,limit,GTC,995,-3\n"          # a new order's own quantity, as given
        "6,AAA,2,new,buy,limit,GTC,995,0\n"
        "7,AAA,3,cancel,,,,,7\n"                       # a cancel has none
        "8,AAA,4,modify,,,,996,5\n"                    # a modify its new one
        "9,AAA,5,modify,,,,996,\n")
    orders = str(tmp_path / "bad.csv")

    def rejected(events):
        return [(r["order_id"], r["reason"], r["quantity"]) for r in events.to_pylist() if r["event"] == "rejected"]

    want = rejected(obook.match(orders, workers=1).events)
    assert [q for _, _, q in want] == [-3, 0, 0, 5, 0]
    assert rejected(obook.simulate(feed, orders, format="csv", workers=1).events) == want


def _pieces(tmp_path):
    """FEED cut in two files (only the first has the header) under day/, and the orders."""
    lines = FEED.splitlines(keepends=True)
    (tmp_path / "day").mkdir()
    (tmp_path / "day" / "p1.csv").write_text("".join(lines[:4]))
    (tmp_path / "day" / "p2.csv").write_text("".join(lines[4:]))
    (tmp_path / "orders.csv").write_text(ORDERS)
    files = [str(tmp_path / "day" / "p1.csv"), str(tmp_path / "day" / "p2.csv")]
    return files, str(tmp_path / "day" / "*.csv"), str(tmp_path / "orders.csv")


def test_simulate_feed_glob_pattern_is_one_feed_of_its_files(tmp_path):
    files, pattern, orders = _pieces(tmp_path)
    want = obook.simulate(files, orders, latency="lat", workers=1)
    assert want.fills.num_rows == 2
    got = obook.simulate(pattern, orders, latency="lat", workers=1)
    for t in ("fills", "events", "summary", "bbo"):
        assert got.table(t).equals(want.table(t)), t
    with pytest.raises(obook.ObookError, match="no feed file matches"):
        obook.simulate(str(tmp_path / "none" / "*.csv"), orders)


def test_scan_simulate_feed_list_tuple_or_pattern_is_one_feed(tmp_path):
    files, pattern, orders = _pieces(tmp_path)
    want = pl.from_arrow(obook.simulate(files, orders, latency="lat", workers=1).summary)
    for feed in (files, tuple(files), pattern):
        got = obook.scan_simulate(feed, orders, table="summary", latency="lat", workers=1).collect()
        assert got.equals(want), feed
    with pytest.raises(obook.ObookError, match="no feed file matches"):
        obook.scan_simulate(str(tmp_path / "none" / "*.csv"), orders)
    with pytest.raises(obook.ObookError, match="nope.csv"):
        obook.scan_simulate([files[0], str(tmp_path / "nope.csv")], orders)


def test_duckdb_obook_simulate_feed_list_or_pattern_is_one_feed(tmp_path):
    files, pattern, orders = _pieces(tmp_path)
    want = obook.simulate(files, orders, latency="lat", workers=1)
    con = obook.connect()
    listed = "[" + ", ".join(f"'{f}'" for f in files) + "]"
    for feed in (listed, f"'{pattern}'"):
        got = con.sql(f"SELECT * FROM obook_simulate({feed}, '{orders}', latency := 'lat', workers := 1)").arrow()
        got = got.read_all() if hasattr(got, "read_all") else got
        assert got.to_pylist() == want.fills.to_pylist(), feed
        n = con.sql(f"SELECT count(*) FROM obook_simulate_events({feed}, '{orders}', latency := 'lat')").fetchall()
        assert n[0][0] == want.events.num_rows, feed
    with pytest.raises(Exception, match="no feed file matches"):
        con.sql(f"SELECT * FROM obook_simulate('{tmp_path}/none/*.csv', '{orders}')").fetchall()
    with pytest.raises(Exception, match="NULL"):
        con.sql(f"SELECT * FROM obook_simulate(['{files[0]}', NULL], '{orders}')").fetchall()


@pytest.mark.parametrize(("orders", "says"), [
    ("5", "the order path must be text (one file), not 5"),
    ("['{orders}']", "the order path must be text (one file), not ['"),
    ("NULL", "orders is NULL"),
])
def test_duckdb_obook_simulate_orders_not_text_is_an_error_naming_it(tmp_path, orders, says):
    feed, path = _files(tmp_path)
    with pytest.raises(Exception, match=re.escape(says)):
        obook.connect().sql(f"SELECT * FROM obook_simulate('{feed}', {orders.format(orders=path)})").fetchall()


DAY_ORDERS = """time,instrument,order_id,action,side,type,tif,price,quantity
5,AAA,1,new,buy,limit,DAY,990,10
"""
BAD_FEED = FEED.replace("2,AAA,b,S,200,1000", "2,AAA,b,S,xx,1000")


def _arrow(rel) -> pa.Table:
    got = rel.arrow()
    return got.read_all() if hasattr(got, "read_all") else got


def test_simulate_duckdb_day_end_false_gives_the_api_rows(tmp_path):
    feed, _ = _files(tmp_path)
    (tmp_path / "day.csv").write_text(DAY_ORDERS)
    orders = str(tmp_path / "day.csv")
    want = obook.simulate(feed, orders, workers=1, day_end=False)
    assert want.events["event"].to_pylist() == ["accepted", "rested"]        # no expiry at the end
    con = obook.connect()
    for macro, table in (("obook_simulate_events", "events"), ("obook_simulate_summary", "summary")):
        got = _arrow(con.sql(f"SELECT * FROM {macro}('{feed}', '{orders}', day_end := false, workers := 1)"))
        assert got.to_pylist() == want.table(table).to_pylist(), macro


def test_simulate_duckdb_on_error_skip_gives_the_api_rows(tmp_path):
    import duckdb

    _, orders = _files(tmp_path)
    (tmp_path / "bad.csv").write_text(BAD_FEED)
    feed = str(tmp_path / "bad.csv")
    want = obook.simulate(feed, orders, latency="lat", workers=1, on_error="skip")
    con = obook.connect()
    got = _arrow(con.sql(f"SELECT * FROM obook_simulate_events('{feed}', '{orders}', latency := 'lat', "
                         "on_error := 'skip', workers := 1)"))
    assert got.to_pylist() == want.events.to_pylist()
    with pytest.raises(duckdb.Error, match="shares is not an unsigned integer"):
        con.sql(f"SELECT * FROM obook_simulate_events('{feed}', '{orders}', latency := 'lat')").fetchall()
    with pytest.raises(duckdb.Error, match="on_error must be one of raise, skip, not 'x'"):
        con.sql(f"SELECT * FROM obook_simulate('{feed}', '{orders}', on_error := 'x')").fetchall()
    with pytest.raises(duckdb.Error, match="day_end must be true or false, not 2"):
        con.sql(f"SELECT * FROM obook_simulate('{feed}', '{orders}', day_end := 2)").fetchall()


def test_simulate_polars_day_end_and_on_error_give_the_api_rows(tmp_path):
    feed, orders = _files(tmp_path)
    (tmp_path / "day.csv").write_text(DAY_ORDERS)
    (tmp_path / "bad.csv").write_text(BAD_FEED)
    day = str(tmp_path / "day.csv")
    got = obook.scan_simulate(feed, day, table="events", day_end=False, workers=1).collect()
    assert got.equals(pl.from_arrow(obook.simulate(feed, day, workers=1, day_end=False).events))
    bad = str(tmp_path / "bad.csv")
    got = obook.scan_simulate(bad, orders, table="events", latency="lat", on_error="skip").collect()
    assert got.equals(pl.from_arrow(obook.simulate(bad, orders, latency="lat", on_error="skip").events))
    with pytest.raises(obook.ObookError, match="on_error must be one of raise, skip, not 'x'"):
        obook.scan_simulate(feed, orders, on_error="x")


def test_simulate_cli_on_error_skip_and_date_reach_the_run(tmp_path):
    _, orders = _files(tmp_path)
    (tmp_path / "bad.csv").write_text(BAD_FEED)
    feed = str(tmp_path / "bad.csv")
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "lat", "-w", "1", "--on-error", "skip",
                                   "--date", "2024-03-01", "--tables", "events,bbo", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    want = obook.simulate(feed, orders, latency="lat", workers=1, on_error="skip", date="2024-03-01",
                          feed_tables=("bbo",))
    for t in ("events", "bbo"):
        assert pq.read_table(tmp_path / "out" / f"{t}.parquet").equals(want.table(t)), t
    assert "timestamp" in want.bbo.schema.names


def test_simulate_without_feed_tables_replays_only_the_books_of_its_instruments(tmp_path):
    from itch_builder import ItchBuilder

    def day(name, fault):
        b = ItchBuilder()
        b.directory(1, "AAA")
        b.directory(2, "BBB")
        b.add(1, 1, "S", 100, 10_000)
        bad = b.delete(2, 99, ts=b.ts) if fault else None      # BBB: an order ref that never rested
        b.execute(1, 1, 100)
        b.add(1, 2, "S", 300, 10_000)
        b.execute(1, 2, 200)
        return str(b.write(tmp_path / name)), bad

    (feed, bad), (clean, _) = day("bad.itch", True), day("clean.itch", False)
    orders = tmp_path / "orders.csv"
    orders.write_text("time,instrument,order_id,action,side,type,tif,price,quantity\n"
                      "34200000003500,AAA,1,new,sell,limit,GTC,10000,50\n")
    want = obook.simulate(clean, str(orders), workers=1, feed_tables=())
    got = obook.simulate(feed, str(orders), workers=1, feed_tables=())
    assert want.fills.num_rows > 0 and got.fills.drop_columns("seq").equals(want.fills.drop_columns("seq"))
    with pytest.raises(obook.FeedError, match=f"message {bad}: unknown order ref 99"):
        obook.simulate(feed, str(orders), workers=1, feed_tables=("trades",))


def test_simulate_cli_output_folder_of_other_commands_tables_keeps_them(tmp_path):
    feed, orders = _files(tmp_path)
    out = tmp_path / "out"
    for command in (["convert", feed, str(out), "-t", "bbo,trades,orders,depth"],
                    ["table", "bbo", feed, "-o", str(out / "bbo.arrow")]):
        res = CliRunner().invoke(app, command)
        assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["simulate", feed, orders, "-w", "1", "-o", str(out), "-t", "fills"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["bbo.arrow", "bbo.parquet", "depth.parquet", "fills.parquet",
                                                     "orders.parquet", "trades.parquet"]


def test_simulate_cli_bad_feed_record_partial_tables_replace_an_earlier_runs(tmp_path):
    from hostile_support import cli_error, obook_cli

    bad, cut, orders = _two_books(tmp_path, 201)
    out = tmp_path / "out"
    assert obook_cli("simulate", cut, orders, "-w", "1", "--no-day-end", "-o", str(out)).returncode == 0
    assert "fills.parquet" in {p.name for p in out.iterdir()}
    cli_error("simulate", bad, orders, "-w", "1", "--no-day-end", "-o", str(out))
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{t}.parquet.partial" for t in ("fills", "events", "summary", "bbo_with_own", "bbo"))


def test_simulate_own_tables_carry_the_feeds_units_into_parquet(tmp_path):
    """fills, events, summary, bbo_with_own and depth_with_own are in the feed's units (a CSV
    day: ms, prices in 1/10000): their schemas say so, as a replay table's and a backtest's, so
    the unit functions read them from the files the command writes."""
    import datetime as dt
    from decimal import Decimal

    feed, orders = _files(tmp_path)
    r = obook.simulate(feed, orders, latency="lat", workers=1, own_tables=("bbo_with_own", "depth_with_own"),
                       levels=2)
    want = {"fills": ("price", "quantity", "time", ""), "events": ("price", "quantity,remaining,shares_ahead", "time", ""),
            "summary": ("price,avg_price,mid_at_arrival,mid_later,vs_mid_at_arrival,vs_mid_later", "quantity,filled",
                        "arrival,first_fill_time", "time_to_fill"),
            "bbo_with_own": ("bid_px,ask_px", "bid_qty,ask_qty", "time", ""),
            "depth_with_own": ("bid_px_1,bid_px_2,ask_px_1,ask_px_2", "bid_qty_1,bid_qty_2,ask_qty_1,ask_qty_2",
                               "time", "")}
    for name, (prices, quantities, times, durations) in want.items():
        md = r.table(name).schema.metadata
        assert (md[b"obook.format"], md[b"obook.price_scale"], md[b"obook.time_unit"]) == (b"csv", b"10000", b"ms"), name
        got = tuple(md[b"obook." + k].decode() for k in (b"price_columns", b"quantity_columns", b"time_columns",
                                                           b"duration_columns"))
        assert got == (prices, quantities, times, durations), name
    assert r.summary.schema.metadata[b"obook.table"] == b"sim_summary"
    assert r.table("depth_with_own").schema.metadata[b"obook.levels"] == b"2"
    res = CliRunner().invoke(app, ["simulate", feed, orders, "--latency", "lat", "-w", "1", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    fills = tmp_path / "out" / "fills.parquet"
    con = obook.connect()
    try:
        got = con.execute(f"SELECT time, obook_time_of_day(time, '{fills}'), price, obook_price(price, '{fills}') "
                          f"FROM '{fills}' ORDER BY time LIMIT 1").fetchall()
    finally:
        con.close()
    assert got == [(9, dt.time(0, 0, 0, 9000), 1000, Decimal("0.1"))]
