"""obook.backtest.latency: the three latencies' forms, and the values it turns away (a clear
error, never an arrival time that wraps around 64 bits)."""

from __future__ import annotations

import pytest

from obook.backtest import backtest
from obook.errors import ObookError

HEAD = "Time,Ticker,Order,T,Shares,Price\n"


def _feed(tmp_path) -> str:
    p = tmp_path / "day.csv"
    p.write_text(HEAD + "1,AAA,a,S,100,1000\n3,AAA,x,B,100,990\n6,AAA,c,S,100,1000\n")
    return str(p)


class JoinOnce:
    def __init__(self):
        self.sent = False

    def __call__(self, top):
        from obook.backtest.orders import Order

        if self.sent or top.bid_px is None:
            return None
        self.sent = True
        return [Order("enter", "AAA", "B", 10, top.bid_px, ref=1, tif="GTC")]


@pytest.mark.parametrize("latency, says", [
    (2**63 - 1_000, "latency must be between 0 and 604800000000000 ns (a week)"),
    (("exponential", 1e30), "draws beyond 604800000000000 ns"),
    (("normal", 0, 1e30), "draws beyond 604800000000000 ns"),
    (("uniform", -5, 5), "give uniform:LO:HI with 0 <= LO <= HI"),
    (([1, 2], [5, 10**16]), "row 2: latency 10000000000000000 ns is not between 0 and"),
    (([1], [2**70]), "not 64-bit integers"),
    (([1, 2], [1_000_000, 1.5]), "order_latency: a latency table (times, values): latency must be whole numbers"),
    (([1.5, 2], [1_000_000, 0]), "order_latency: a latency table (times, values): time must be whole numbers"),
    ((["1", "2"], [1_000_000, 0]), "order_latency: a latency table (times, values): time must be whole numbers"),
])
def test_backtest_latency_beyond_a_week_or_unreadable_is_an_error(tmp_path, latency, says):
    with pytest.raises(ObookError) as e:
        backtest(_feed(tmp_path), JoinOnce(), format="csv", order_latency=latency)
    assert says in str(e.value)


@pytest.mark.parametrize("text, says", [
    ("", "lat.csv: cannot read it: Empty CSV file"),
    ("time,latency\n1,100\n2,abc\n", "lat.csv: latency must be whole numbers"),
    ("time,latency\n1,100\n2,1.5\n", "lat.csv: latency must be whole numbers"),
    ("time,latency\n1,100\n2,\n", "lat.csv: row 2: latency is empty"),
    ("time,latency\n1,100\n2,nan\n", "lat.csv: row 2: latency is empty or no number"),
    ("time,latency\n1,100\n2,-3\n", "lat.csv: row 2: latency -3 ns is not between 0 and"),
    ("ts,delay_ns\n1,100\n", "lat.csv: a latency table needs columns time and latency (it has ts, delay_ns)"),
])
def test_backtest_latency_table_file_bad_rows_are_errors_naming_the_file(tmp_path, text, says):
    lat = tmp_path / "lat.csv"
    lat.write_text(text)
    with pytest.raises(ObookError) as e:
        backtest(_feed(tmp_path), JoinOnce(), format="csv", order_latency=str(lat))
    assert says in str(e.value)


def test_backtest_latency_table_file_interpolates_the_order_latency(tmp_path):
    lat = tmp_path / "lat.csv"
    lat.write_text("time,latency\n0,2000000\n100,2000000\n")
    r = backtest(_feed(tmp_path), JoinOnce(), format="csv", order_latency=str(lat))
    assert [(o["sent"], o["arrival"]) for o in r.orders.to_pylist()] == [(3, 5)]


def test_backtest_latency_naming_a_folder_is_an_error_saying_so(tmp_path):
    with pytest.raises(ObookError) as e:
        backtest(_feed(tmp_path), JoinOnce(), format="csv", response_latency=str(tmp_path))
    assert str(e.value).startswith("response_latency ") and str(e.value).endswith(f"; {tmp_path} is a folder")
