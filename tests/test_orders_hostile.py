"""Hostile order-entry files and options for ``match`` and ``simulate``: a clear error (or
the right answer), never a traceback or a silent wrong one."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import obook
from obook.errors import ObookError

from cli_support import cli_error

HEADER = "time,instrument,order_id,action,side,type,tif,price,quantity,owner\n"
FEED_HEAD = "Time,Ticker,Order,T,Shares,Price\n"


def _write(tmp_path, name, text) -> str:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(p)


def test_match_header_only_csv_gives_empty_tables(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv", HEADER)
    r = obook.match(orders)
    assert r.fills.num_rows == r.events.num_rows == 0
    from obook.cli import main

    sys.argv, old = ["obook", "match", orders, "-o", str(tmp_path / "out")], sys.argv
    try:
        main()
    except SystemExit as e:
        assert e.code in (0, None)
    finally:
        sys.argv = old
    assert pq.read_table(tmp_path / "out" / "fills.parquet").num_rows == 0


def test_match_31_digit_price_names_row_and_column(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv", HEADER + "1,AAA,1,new,buy,limit,gtc,100,10,1\n"
                    "2,AAA,2,new,sell,limit,gtc,1234567890123456789012345678901,10,2\n")
    with pytest.raises(obook.FeedError, match=r"row 2: price is out of range"):
        obook.match(orders)
    assert "row 2: price is out of range" in cli_error(capsys, "match", orders)


def test_match_non_utf8_header_one_line_error(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv", b"ti\xffme" + HEADER[4:].encode() + b"1,AAA,1,new,buy,limit,gtc,100,10,1\n")
    assert "not UTF-8" in cli_error(capsys, "match", orders)


def test_match_instruments_named_na_nan_null_stay_names(tmp_path):
    rows = "".join(f"{i * 2 + 1},{name},{i * 2 + 1},new,buy,limit,gtc,100,10,1\n"
                   f"{i * 2 + 2},{name},{i * 2 + 2},new,sell,limit,gtc,100,10,2\n"
                   for i, name in enumerate(["NA", "nan", "null", "N/A"]))
    r = obook.match(_write(tmp_path, "orders.csv", HEADER + rows))
    assert sorted(r.fills.column("instrument").to_pylist()) == ["N/A", "NA", "nan", "null"]
    empty = _write(tmp_path, "empty.csv", HEADER + "1,,1,new,buy,limit,gtc,100,10,1\n")
    with pytest.raises(obook.FeedError, match="row 1: no instrument"):
        obook.match(empty)


def test_cli_match_stdout_on_full_disk_exits_1(tmp_path):
    orders = _write(tmp_path, "orders.csv", HEADER + "1,AAA,1,new,buy,limit,gtc,100,10,1\n"
                    "2,AAA,2,new,sell,limit,gtc,100,10,2\n")
    with open("/dev/full", "wb") as full:
        p = subprocess.run([sys.executable, "-m", "obook", "match", orders], stdout=full, stderr=subprocess.PIPE,
                           timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 1 and "error: <stdout>: write failed" in err and "Traceback" not in err


@pytest.fixture
def sim_files(tmp_path):
    feed = _write(tmp_path, "feed.csv", FEED_HEAD + "1,AAA,a,S,100,1000\n2,AAA,b,B,100,990\n10,AAA,a,E,50,1000\n")
    orders = _write(tmp_path, "orders.csv", HEADER.replace(",owner", ",lat")
                    + "3,AAA,1,new,buy,limit,fok,1000,500,9223372036854775807\n")
    return feed, orders


@pytest.mark.parametrize("latency,reason", [
    ("uniform:5:1", "0 <= LO <= HI"), ("exponential:-5", "mean must be >= 0"),
    ("12345678901234567890", "between 0 and"), ("exponential:1e30", "draws beyond"),
    ("normal:nan:1", "finite"), ("exponential:inf", "finite"), ("lognormal:1:-1", "sigma must be >= 0"),
    ("lat", "row 1 is not between 0 and"),
])
def test_simulate_latency_out_of_range_one_line_error(sim_files, capsys, latency, reason):
    feed, orders = sim_files
    assert reason in cli_error(capsys, "simulate", feed, orders, "--format", "csv", "--latency", latency)


def test_simulate_latency_python_values_out_of_range_raise(sim_files):
    feed, orders = sim_files
    for latency in (2**62, [2**62], ("exponential", float("inf"))):
        with pytest.raises(ObookError, match="latency"):
            obook.simulate(feed, orders, format="csv", workers=1, latency=latency)
    with pytest.raises(ObookError, match="horizon"):
        obook.simulate(feed, orders, format="csv", workers=1, horizon=float("inf"))


def test_simulate_fok_rejected_on_arrival_summary_says_rejected_as_match(sim_files, tmp_path):
    feed, orders = sim_files
    r = obook.simulate(feed, orders, format="csv", workers=1)
    assert [e["event"] for e in r.events.to_pylist()] == ["accepted", "rejected"]
    assert r.summary.column("status").to_pylist() == ["rejected"]
    alone = obook.match(orders)
    assert [e["event"] for e in alone.events.to_pylist()][-1] == "rejected"


def test_match_column_given_twice_one_line_error(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv", HEADER.replace("owner", "price") + "1,AAA,1,new,buy,limit,gtc,100,10,5\n")
    with pytest.raises(ObookError, match="the column 'price' given more than once"):
        obook.match(orders)
    assert "given more than once" in cli_error(capsys, "match", orders)


@pytest.mark.parametrize("latency", ["-3", "1.5"])
def test_simulate_latency_that_is_no_whole_ns_says_so(tmp_path, latency):
    feed = _write(tmp_path, "feed.csv", FEED_HEAD + "1,AAA,a,S,100,1000\n")
    orders = _write(tmp_path, "orders.csv", HEADER + "2,AAA,1,new,buy,limit,gtc,1000,10,1\n")
    from obook.simulation.prepare import parse_latency

    with pytest.raises(ObookError, match="whole number of ns"):
        obook.simulate(feed, orders, format="csv", latency=parse_latency(latency))


@pytest.mark.parametrize("where, says", [(".", "a directory, not an order file"), ("/dev/null", "not a regular file"),
                                         ("missing.csv", "no such order file")])
def test_match_orders_path_that_is_no_file_says_what_it_is(tmp_path, where, says):
    path = str(tmp_path) if where == "." else where if where.startswith("/") else str(tmp_path / where)
    with pytest.raises(ObookError, match=says):
        obook.match(path)


def test_match_parquet_unsigned_price_past_64_bits_names_row_and_column(tmp_path, capsys):
    import pyarrow as pa

    table = pa.table({"time": pa.array([1, 2], pa.uint64()), "instrument": ["AAA", "AAA"], "order_id": [1, 2],
                      "action": ["new", "new"], "side": ["buy", "sell"], "type": ["limit", "limit"],
                      "tif": ["GTC", "GTC"], "price": pa.array([100, 1 << 63], pa.uint64()), "quantity": [5, 5]})
    path = tmp_path / "orders.parquet"
    pq.write_table(table, path)
    with pytest.raises(ObookError, match="row 2: price is out of range"):
        obook.match(str(path))
    assert "row 2: price is out of range" in cli_error(capsys, "match", path)
