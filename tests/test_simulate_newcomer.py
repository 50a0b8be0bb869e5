"""obook.simulate and ``obook simulate`` given what a newcomer or a hostile user gives them:
bad latencies and seeds, orders for instruments the feed lacks, a bad feed record with the
table on stdout, a folder that held a stopped run's tables."""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

import obook
from obook.errors import ObookError
from obook.simulation.prepare import latencies, parse_latency

from cli_support import cli_error, cli_run

# a CSV feed (time in ms): AAA's bid 100 x 300 (orders 1 and 2), then order 2 executed
FEED = """Time,Ticker,Order,T,Shares,Price
1000,AAA,1,B,100,100
1001,AAA,2,B,200,100
1002,AAA,3,S,100,105
3000,AAA,2,E,200,0
4000,AAA,1,E,100,0
"""
ORDERS = """time,instrument,order_id,action,side,type,tif,price,quantity
1500,AAA,1,new,buy,limit,GTC,100,50
"""


def _files(tmp_path, feed: str = FEED, orders: str = ORDERS) -> tuple[str, str]:
    (tmp_path / "feed.csv").write_text(feed)
    (tmp_path / "orders.csv").write_text(orders)
    return str(tmp_path / "feed.csv"), str(tmp_path / "orders.csv")


def test_latencies_sequence_with_fractions_is_an_error():
    with pytest.raises(ObookError, match="row 2: 1.5 is not a whole number of ns"):
        latencies([1, 1.5, 2], 3)


def test_latencies_column_with_fractions_is_an_error():
    table = pa.table({"lat": [0.0, 0.7]})
    with pytest.raises(ObookError, match="latency column 'lat': row 2: 0.7 is not a whole number of ns"):
        latencies("lat", 2, table)


def test_latencies_bool_is_no_latency():
    with pytest.raises(ObookError, match="a whole number of ns"):
        latencies(True, 3)


def test_latencies_column_of_bools_is_no_latency():
    with pytest.raises(ObookError, match="true/false"):
        latencies("lat", 2, pa.table({"lat": [True, False]}))


@pytest.mark.parametrize("text", ["true", "abc"])
def test_latencies_column_with_text_names_the_row(text):
    with pytest.raises(ObookError, match=f"latency column 'lat': row 2: '{text}' is no number"):
        latencies("lat", 3, pa.table({"lat": ["1000", text, "5"]}))


def test_latencies_two_dimensional_names_its_shape():
    with pytest.raises(ObookError, match=r"shape \(3, 1\)"):
        latencies(np.zeros((3, 1), np.int64), 3)


def test_latencies_duration_column_counts_its_unit():
    table = pa.table({"lat": pa.array([1, 2], pa.duration("ms"))})
    assert latencies("lat", 2, table).tolist() == [1_000_000, 2_000_000]


@pytest.mark.parametrize("values, row", [([5, 10**12], 2), ([-(10**12), 5], 1), ([-1, 5], 1), ([604_801, 1], 1)])
def test_latencies_duration_column_beyond_a_week_names_the_row(values, row):
    table = pa.table({"lat": pa.array(values, pa.duration("s"))})
    with pytest.raises(ObookError, match=f"latency column 'lat': row {row} is not between 0 and 604800000000000 ns"):
        latencies("lat", 2, table)


def test_latencies_duration_column_of_a_week_and_nulls():
    assert latencies("lat", 1, pa.table({"lat": pa.array([604_800], pa.duration("s"))})).tolist() == [604_800 * 10**9]
    with pytest.raises(ObookError, match="latency column 'lat' has empty values \\(row 2\\)"):
        latencies("lat", 2, pa.table({"lat": pa.array([1, None], pa.duration("us"))}))


@pytest.mark.parametrize("kind", [pa.timestamp("ns"), pa.timestamp("s", tz="UTC"), pa.date32()])
def test_latencies_column_of_instants_raises_naming_its_type(kind):
    with pytest.raises(ObookError, match="latency column 'lat' holds instants"):
        latencies("lat", 2, pa.table({"lat": pa.array([1, 2], kind)}))


@pytest.mark.parametrize("spec", [("uniform", "a", "b"), ("exponential", None)])
def test_latencies_distribution_parameters_not_numbers_raise_obook_error(spec):
    with pytest.raises(ObookError, match="parameters must be numbers"):
        latencies(spec, 3)


@pytest.mark.parametrize("spec", [("exponential", True), ("uniform", 0, np.True_), ("uniform", "0", "10")])
def test_latencies_distribution_parameters_true_false_or_text_raise_obook_error(spec):
    with pytest.raises(ObookError, match="parameters must be numbers"):
        latencies(spec, 3)


def test_latencies_distribution_as_text_is_the_distribution_a_column_of_that_name_first():
    drawn = latencies(("uniform", 0, 10), 3, seed=5)
    assert (latencies("uniform:0:10", 3, pa.table({"x": [1, 2, 3]}), seed=5) == drawn).all()
    assert latencies("uniform:0:10", 3, pa.table({"uniform:0:10": [1, 2, 3]})).tolist() == [1, 2, 3]
    with pytest.raises(ObookError, match=r"latency 'uniform:0:x': distribution parameters must be numbers"):
        latencies("uniform:0:x", 3, pa.table({"x": [1, 2, 3]}))
    for text in ("uniform:", "Exponential: "):
        with pytest.raises(ObookError, match=f"latency '{text.strip()}': give uniform:LO:HI, exponential:MEAN"):
            latencies(text, 3, pa.table({"x": [1, 2, 3]}))


@pytest.mark.parametrize("text", ["uniform:1", "gamma:1:2", "uniform:", "normal:"])
def test_parse_latency_wrong_distribution_names_command_line_forms(text):
    with pytest.raises(ObookError, match="uniform:LO:HI, exponential:MEAN") as e:
        parse_latency(text)
    assert "('uniform'" not in str(e.value)


@pytest.mark.parametrize("seed", [-1, 1.5, "x"])
def test_simulate_bad_seed_raises_obook_error(tmp_path, seed):
    feed, orders = _files(tmp_path)
    with pytest.raises(ObookError, match="seed"):
        obook.simulate(feed, orders, latency=("uniform", 0, 10), seed=seed, workers=1)


def test_simulate_cli_negative_seed_is_one_error_line(tmp_path, capsys):
    feed, orders = _files(tmp_path)
    assert "seed" in cli_error(capsys, "simulate", feed, orders, "--latency", "uniform:0:10", "--seed", "-1", "-w", "1")


def test_simulate_empty_orders_path_says_it_is_empty(tmp_path):
    feed, _ = _files(tmp_path)
    with pytest.raises(ObookError, match="path is empty"):
        obook.simulate(feed, "", workers=1)


def test_simulate_instrument_not_in_feed_warns_and_rejects(tmp_path, caplog):
    feed, orders = _files(tmp_path, orders=ORDERS + "1500,ZZZ,2,new,buy,limit,GTC,100,5\n")
    with caplog.at_level(logging.WARNING, logger="obook"):
        r = obook.simulate(feed, orders, workers=1)
    assert "no instrument ZZZ" in caplog.text and "AAA" not in caplog.text
    assert r.summary.column("status").to_pylist() == ["open", "rejected"]


def test_simulate_hand_made_feed_queue_moves_up_by_shares_ahead_executed(tmp_path):
    """Shares ahead 300 on arrival; the execution of order 2 (ahead) moves it up to 100;
    order 1's execution then leaves 0 ahead; nothing behind trades, so no fill."""
    feed, orders = _files(tmp_path)
    r = obook.simulate(feed, orders, workers=1)
    ev = r.events.to_pylist()
    assert [(e["event"], e["shares_ahead"]) for e in ev] == [("accepted", None), ("rested", 300), ("queue", 100),
                                                             ("queue", 0)]
    assert r.fills.num_rows == 0 and r.summary.column("status").to_pylist() == ["open"]


# AAA's bid 100 x 300, ask 105; then a sell rests at 99 (or 101) without trading with the bid
CROSSED_FEED = """Time,Ticker,Order,T,Shares,Price
1000,AAA,1,B,300,100
1001,AAA,2,S,100,105
3000,AAA,3,S,100,{price}
"""


@pytest.mark.parametrize("own", [100, 101])
def test_simulate_feed_order_resting_through_the_feeds_own_bid_fills_no_own_order(tmp_path, own):
    """The feed's bid at 100 did not trade with the sell resting at 99 (a crossed book, as in
    a call auction: the venue is not matching), so neither does an own buy at 100 (300 shares
    ahead) or at 101."""
    feed, orders = _files(tmp_path, feed=CROSSED_FEED.format(price=99), orders=ORDERS.replace(",100,50", f",{own},50"))
    r = obook.simulate(feed, orders, workers=1)
    assert r.fills.num_rows == 0, r.fills.to_pylist()
    assert r.summary.column("status").to_pylist() == ["open"]


def test_simulate_feed_order_resting_through_an_own_bid_above_the_feeds_fills_it(tmp_path):
    feed, orders = _files(tmp_path, feed=CROSSED_FEED.format(price=101), orders=ORDERS.replace(",100,50", ",102,50"))
    r = obook.simulate(feed, orders, workers=1)
    assert r.fills.select(["time", "price", "quantity", "liquidity"]).to_pylist() == [
        {"time": 3000, "price": 102, "quantity": 50, "liquidity": "maker"}]


def test_simulate_cli_bad_feed_record_stdout_has_rows_before_it(tmp_path, capsys):
    import sys

    from obook.cli import main

    feed, orders = _files(tmp_path, feed=FEED.replace("4000,AAA,1,E,100,0", "4000,AAA,1,Q,100,0"))
    old, sys.argv = sys.argv, ["obook", "simulate", feed, orders, "-t", "events", "-w", "1"]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        sys.argv = old
    out, err = capsys.readouterr()
    assert exit_info.value.code == 1 and "unknown message type" in err and "Traceback" not in err
    rows = pcsv.read_csv(pa.BufferReader(out.encode())).to_pylist()
    assert [(e["event"], e["shares_ahead"]) for e in rows] == [("accepted", None), ("rested", 300), ("queue", 100)]


def test_simulate_cli_good_run_removes_stale_partial_tables(tmp_path, capsys):
    feed, orders = _files(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "fills.csv.partial").write_text("stale")
    (out / "other.txt").write_text("keep")
    code, err = cli_run(capsys, "simulate", feed, orders, "-o", out, "--type", "csv", "-t", "fills,events", "-w", "1")
    assert code in (0, None), err
    assert sorted(p.name for p in out.iterdir()) == ["events.csv", "fills.csv", "other.txt"]


def test_simulate_cli_tables_naming_nothing_says_so(tmp_path, capsys):
    feed, orders = _files(tmp_path)
    err = cli_error(capsys, "simulate", feed, orders, "-t", ",", "-w", "1")
    assert "names no table" in err and "(none)" not in err


def test_simulate_cli_latency_column_with_fractions_is_one_error_line(tmp_path, capsys):
    feed, orders = _files(tmp_path, orders=ORDERS.replace("quantity\n", "quantity,lat\n").replace(",50\n", ",50,0.5\n"))
    err = cli_error(capsys, "simulate", feed, orders, "--latency", "lat", "-w", "1")
    assert "not a whole number of ns" in err


BAD_FEED = """Time,Ticker,Order,T,Shares,Price
1000,AAA,1,B,100,100
1000,BBB,1,B,100,200
1000,BBB,2,S,100,210
1000,CCC,1,B,100,300
1000,CCC,2,S,100,310
1001,BBB,5,B,100,201
1001,CCC,5,B,100,301
1001,AAA,x,Q,0,0
1005,BBB,3,B,100,205
1005,CCC,3,B,100,305
1006,BBB,4,B,100,206
1006,CCC,4,B,100,306
"""
BAD_ORDERS = """time,instrument,order_id,action,side,type,tif,price,quantity
1000,BBB,1,new,buy,limit,GTC,190,10
1000,CCC,2,new,buy,limit,GTC,290,10
1002,BBB,3,new,buy,limit,GTC,190,10
1002,CCC,4,new,buy,limit,GTC,290,10
"""


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_simulate_partial_summary_mids_after_bad_record_are_null_for_any_workers(tmp_path, workers):
    feed, orders = _files(tmp_path, feed=BAD_FEED, orders=BAD_ORDERS)
    with pytest.raises(obook.FeedError) as e:
        obook.simulate(feed, orders, horizon=0.001, workers=workers)
    rows = e.value.partial.summary.select(["order_id", "mid_at_arrival", "mid_later"]).to_pylist()
    mids = [(r["order_id"], r["mid_at_arrival"], r["mid_later"]) for r in rows]
    assert mids == [(1, 205, None), (2, 305, None), (3, None, None), (4, None, None)]


def test_duckdb_simulate_latency_as_a_number_reads_as_its_text(tmp_path):
    """latency := 250000 was a binder error naming an internal function; it means '250000'."""
    feed, orders = _files(tmp_path)
    con = obook.connect()
    q = "SELECT order_id, status, filled FROM obook_simulate_summary('{}', '{}', latency := {})"
    assert (con.sql(q.format(feed, orders, 250000)).fetchall()
            == con.sql(q.format(feed, orders, "'250000'")).fetchall())


def test_simulate_cli_type_without_output_one_error_line(tmp_path, capsys):
    feed, orders = _files(tmp_path)
    err = cli_error(capsys, "simulate", feed, orders, "--type", "arrow", "-w", "1")
    assert "--type only applies to the tables of --output" in err


@pytest.mark.parametrize("time", [2**62, 2**63 - 1])
def test_simulate_order_time_beyond_the_kernels_range_raises_naming_the_row(tmp_path, time):
    """An instruction whose arrival would reach the kernel's end-of-feed key (2**62) is an
    error naming its row, not an instruction that never arrives."""
    feed, orders = _files(tmp_path, orders=ORDERS + f"{time},AAA,2,new,buy,limit,GTC,100,5\n")
    with pytest.raises(ObookError, match=r"orders\.csv: row 2: time .* out of range"):
        obook.simulate(feed, orders, workers=1)


def test_simulate_partial_summary_orders_after_bad_record_are_pending(tmp_path):
    """Orders 3 and 4 are decided after the bad record: nothing answered them, so the
    partial summary says they are pending, not rejected."""
    feed, orders = _files(tmp_path, feed=BAD_FEED, orders=BAD_ORDERS)
    with pytest.raises(obook.FeedError) as e:
        obook.simulate(feed, orders, workers=1)
    rows = e.value.partial.summary.select(["order_id", "status"]).to_pylist()
    assert [(r["order_id"], r["status"]) for r in rows] == [(1, "open"), (2, "open"), (3, "pending"), (4, "pending")]


def test_latencies_column_of_lists_names_the_row_and_its_value_as_a_list():
    with pytest.raises(ObookError, match=r"row 1: \[1\] is no number"):
        latencies("lat", 2, pa.table({"lat": [[1], [2]]}))


def test_simulate_sql_interval_latency_says_to_give_ns(tmp_path):
    import duckdb

    feed, orders = _files(tmp_path)
    with pytest.raises(duckdb.Error, match=r"latency '00:00:01': give ns as a whole number \(1000000000 for a second\)"):
        obook.connect().sql(f"SELECT * FROM obook_simulate('{feed}', '{orders}', latency := INTERVAL 1 SECOND)").fetchall()


@pytest.mark.parametrize("which,name", [("orders", "fills.csv"), ("orders", "events.csv.partial"), ("feed", "bbo.csv")])
def test_simulate_cli_input_named_like_a_table_in_the_output_folder_one_error_line(tmp_path, capsys, which, name):
    feed, orders = _files(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    source = feed if which == "feed" else orders
    inside = out / name
    inside.symlink_to(source)
    args = [inside, orders] if which == "feed" else [feed, inside]
    err = cli_error(capsys, "simulate", *args, "-o", out, "--type", "csv", "-t", "fills,events,bbo", "-w", "1")
    assert err == f"error: {out / name}: is an input of this command; write the tables elsewhere\n"
    assert (tmp_path / "feed.csv").read_text() == FEED and (tmp_path / "orders.csv").read_text() == ORDERS
    assert sorted(p.name for p in out.iterdir()) == [name]


def test_simulate_cli_output_folder_another_run_holds_one_error_line_nothing_written(tmp_path, capsys):
    from cli_support import cli_error_while_held

    feed, orders = _files(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    err = cli_error_while_held(capsys, out, "simulate", feed, orders, "-o", out, "-w", "1")
    assert err == (f"error: {out}: another run is writing its tables into this folder now; wait for it to end, "
                   "or give another folder\n")
    assert list(out.iterdir()) == []
