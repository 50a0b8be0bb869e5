"""Hostile order-entry files and options for ``match`` and ``simulate``: a clear error (or
the right answer), never a traceback or a silent wrong one."""

from __future__ import annotations

import re
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


@pytest.mark.parametrize("rows, says", [
    ("2,AAA,,fly,buy,limit,gtc,100,10,\n3,,,new,buy,limit,gtc,100,10,\n", "row 2: unknown action value"),
    ("2,AAA,,new,buy,limit,gtc,abc,10,\n3,AAA,,new,buy,limit,gtc,100,5.5,\n4,AAA,,new,up,limit,gtc,100,10,\n",
     "row 2: price is not an integer"),
    ("2,AAA,,new,buy,limit,gtc,100,10,\n3,AAA,,new,buy,limit,gtc,100,,\n4,AAA,,new,buy,limit,xyz,100,10,\n",
     "row 3: a new order needs a quantity"),
], ids=["action-before-instrument", "price-before-quantity-and-side", "quantity-before-tif"])
def test_match_error_names_the_first_bad_row_whatever_its_column(tmp_path, capsys, rows, says):
    orders = _write(tmp_path, "orders.csv", HEADER + "1,AAA,,new,sell,limit,gtc,100,10,\n" + rows)
    with pytest.raises(obook.FeedError, match=says):
        obook.match(orders)
    assert says in cli_error(capsys, "match", orders)


_BEFORE = "1,AAA,,new,sell,limit,day,100,10,\n2,AAA,,new,buy,limit,gtc,100,4,\n"
_BAD = "3,AAA,,new,buy,limit,gtc,abc,5,\n4,AAA,,new,buy,limit,gtc,100,1,\n"


def test_match_bad_row_partial_holds_the_tables_of_the_rows_before_it(tmp_path):
    orders = _write(tmp_path, "orders.csv", HEADER + _BEFORE + _BAD)
    with pytest.raises(obook.FeedError, match="row 3: price is not an integer") as err:
        obook.match(orders, workers=2)
    want = obook.match(_write(tmp_path, "cut.csv", HEADER + _BEFORE), day_end=False)
    for t in ("fills", "events", "bbo"):
        assert err.value.partial.table(t).equals(want.table(t)), t
    assert err.value.partial.fills.num_rows == 1
    assert "expired" not in err.value.partial.events.column("event").to_pylist()     # no end of day


def test_match_cli_bad_row_delivers_the_rows_before_it(tmp_path, capsys):
    from cli_support import cli_run
    from typer.testing import CliRunner

    from obook.cli import app

    orders = _write(tmp_path, "orders.csv", HEADER + _BEFORE + _BAD)
    res = CliRunner().invoke(app, ["match", orders])
    assert res.exit_code == 1 and "row 3: price is not an integer" in str(res.exception)
    assert res.stdout.splitlines()[1:] == ['2,2,"AAA",100,4,2,1,"buy"']        # the fill of the rows before it
    out = tmp_path / "out"
    line = cli_error(capsys, "match", orders, "-o", out)
    assert f"(the rows before it are in {out}/TABLE.parquet.partial)" in line
    assert pq.read_table(out / "fills.parquet.partial").num_rows == 1
    assert not (out / "fills.parquet").exists()
    code, _ = cli_run(capsys, "match", _write(tmp_path, "good.csv", HEADER + _BEFORE), "-o", out)
    assert code in (0, None) and not list(out.glob("*.partial"))        # a complete run removes them


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


LATENCY_ERRORS = [
    ("-5", "'-5': a whole number of ns, 0 to 604800000000000 (a week), a distribution or a column"),
    ("1.5", "'1.5': a whole number of ns"),
    ("12345678901234567890", "must be between 0 and 604800000000000 ns (a week), not 12345678901234567890"),
    ("uniform:5", "'uniform:5': give uniform:LO:HI, exponential:MEAN, normal:MEAN:SD or lognormal:MU:SIGMA"),
    ("bogus:1", "'bogus:1': give ns as a whole number (1000000000 for a second), a column's name, or uniform:LO:HI"),
    ("normal:a:b", "'normal:a:b': distribution parameters must be numbers"),
    ("uniform:5:1", "uniform:5:1: give uniform:LO:HI with 0 <= LO <= HI"),
    ("exponential:-5", "exponential:-5: the mean must be >= 0"),
    ("normal:nan:1", "normal:nan:1: the parameters must be finite numbers"),
    ("exponential:1e30", "exponential:1e+30: draws beyond 604800000000000 ns (a week)"),
    ("250us", "'250us': a whole number of ns, 0 to 604800000000000 (a week), a distribution or a column of the "
              "orders (a number of ns, without a unit)"),
]


@pytest.mark.parametrize("latency, says", LATENCY_ERRORS)
def test_simulate_cli_bad_latency_error_names_the_option_as_typed(sim_files, capsys, latency, says):
    feed, orders = sim_files
    err = cli_error(capsys, "simulate", feed, orders, "--format", "csv", "--latency", latency)
    assert err.startswith(f"error: --latency {says}"), err


def test_simulate_cli_help_latency_states_the_range_its_errors_give():
    from typer.testing import CliRunner

    from obook.cli import app

    out = " ".join(CliRunner().invoke(app, ["simulate", "--help"], terminal_width=200).output.split())
    assert "--latency <str> ns from decision to book, 0 to a week (604800000000000): an integer" in out


@pytest.mark.parametrize("latency, says", LATENCY_ERRORS)
def test_simulate_bad_latency_error_in_python_and_sql_names_the_argument(sim_files, latency, says):
    import duckdb

    feed, orders = sim_files
    if latency not in ("bogus:1", "12345678901234567890"):     # (in Python: a column's name, a text of digits)
        with pytest.raises(ObookError) as e:
            obook.simulate(feed, orders, format="csv", workers=1, latency=latency)
        assert str(e.value).startswith(f"latency {says}"), e.value
    con = obook.connect()
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM obook_simulate(?, ?, format := 'csv', latency := ?)",
                    [feed, orders, latency]).fetchall()
    con.close()
    assert f"latency {says}" in str(e.value) and "--latency" not in str(e.value), e.value


@pytest.mark.parametrize("value, says", [("-5", "row 1 is not between 0 and"), ("", "has empty values (row 1)"),
                                         ("1.5", "row 1: 1.5 is not a whole number of ns")])
def test_simulate_latency_column_error_names_the_order_file(tmp_path, capsys, value, says):
    feed = _write(tmp_path, "feed.csv", FEED_HEAD + "1,AAA,a,S,100,1000\n")
    orders = _write(tmp_path, "mine.csv", HEADER.replace(",owner", ",lat")
                    + f"3,AAA,1,new,buy,limit,gtc,1000,5,{value}\n")
    with pytest.raises(ObookError, match=r"mine\.csv: latency column 'lat'"):
        obook.simulate(feed, orders, format="csv", workers=1, latency="lat")
    line = cli_error(capsys, "simulate", feed, orders, "--format", "csv", "--latency", "lat")
    assert "mine.csv: latency column 'lat'" in line and says in line
    assert "mine.csv: latency column 'nope' is not in the orders" in cli_error(
        capsys, "simulate", feed, orders, "--format", "csv", "--latency", "nope")


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
    assert [e["event"] for e in r.events.to_pylist()] == ["rejected"]
    assert r.summary.column("status").to_pylist() == ["rejected"]
    alone = obook.match(orders)
    assert [e["event"] for e in alone.events.to_pylist()] == ["rejected"]


def test_match_column_given_twice_one_line_error(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv", HEADER.replace("owner", "price") + "1,AAA,1,new,buy,limit,gtc,100,10,5\n")
    with pytest.raises(ObookError, match="the column 'price' given more than once"):
        obook.match(orders)
    assert "given more than once" in cli_error(capsys, "match", orders)


@pytest.mark.parametrize("header, extra", [(",,", ",,"), (",note,note", ",a,b")],
                         ids=["unnamed-columns", "unread-column-twice"])
def test_match_columns_not_read_given_twice_are_ignored(tmp_path, header, extra):
    # a spreadsheet's trailing empty columns, or a column of the user's own given twice
    text = HEADER.rstrip("\n") + header + "\n" + SPREAD.replace("\n", extra + "\n")
    _same_as_clean(tmp_path, text)


def test_match_csv_without_header_error_says_its_first_line_names_the_columns(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv", SPREAD)
    with pytest.raises(ObookError, match=r"orders.csv: no 'instrument' column .*a CSV file names them in its first line"):
        obook.match(orders)
    assert "a CSV file names them in its first line" in cli_error(capsys, "match", orders)


def test_match_parquet_of_other_columns_error_names_the_columns_not_a_first_line(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "bbo.parquet"
    pq.write_table(pa.table({"bid_px": [1], "ask_px": [2]}), path)
    with pytest.raises(ObookError) as e:
        obook.match(str(path))
    assert str(e.value).startswith(f"{path}: no 'instrument' column (columns: bid_px, ask_px); the order columns "
                                   "are time, instrument, order_id"), str(e.value)


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


# spreadsheet and hand-made order files: the rows of the clean file, or one line naming the row

SPREAD = ("1,XYZ,,new,sell,limit,GTC,10010,300,1\n2,XYZ,,new,sell,limit,GTC,10020,200,2\n"
          "3,XYZ,,new,buy,limit,IOC,10020,400,3\n4,XYZ,1,modify,,,,10015,,\n"
          "5,XYZ,,new,buy,market,IOC,,50,3\n6,XYZ,2,cancel,,,,,,\n")


def _same_as_clean(tmp_path, text, name="orders.csv"):
    want = obook.match(_write(tmp_path, "clean.csv", HEADER + SPREAD), workers=1)
    got = obook.match(_write(tmp_path, name, text), workers=1)
    assert got.events.to_pylist() == want.events.to_pylist() and got.fills.to_pylist() == want.fills.to_pylist()


@pytest.mark.parametrize("header", ["Time,Instrument,Order_ID,Action,Side,Type,TIF,Price,Quantity,Owner",
                                    "TIME, INSTRUMENT, ORDER_ID, ACTION, SIDE, TYPE, TIF, PRICE, QUANTITY, OWNER",
                                    "time,instrument,order_id,action,side, Type ,TIF,price,quantity,owner"])
def test_match_header_names_in_other_case_or_padded_read_as_named(tmp_path, header):
    # a TIF or Type column taken for an unknown one made the IOC a GTC and the market order a limit
    _same_as_clean(tmp_path, header + "\n" + SPREAD)


def test_match_column_given_twice_in_other_case_one_line_error(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv", HEADER.rstrip("\n") + ",Price\n" + SPREAD.replace("\n", ",1\n"))
    assert "'price' given more than once ('price', 'Price')" in cli_error(capsys, "match", orders)


@pytest.mark.parametrize("sep", [";", "\t"])
def test_match_semicolon_or_tab_separated_file_read_as_comma_separated(tmp_path, sep):
    _same_as_clean(tmp_path, (HEADER + SPREAD).replace(",", sep))


def test_match_bom_crlf_quotes_and_whitespace_only_lines_read_as_clean(tmp_path):
    quoted = "".join('"' + line.replace(",", '","') + '"\r\n' for line in (HEADER + SPREAD).splitlines())
    _same_as_clean(tmp_path, b"\xef\xbb\xbf" + quoted.encode() + b"  \r\n\t\r\n")


@pytest.mark.parametrize("sep", [",", ";"])
def test_match_separator_only_lines_skipped_as_blank_ones(tmp_path, capsys, sep):
    """Spreadsheets export ',,,,' lines below (or between) the data: skipped, and the rows
    after them counted without them."""
    lines = (HEADER + SPREAD).replace(",", sep).splitlines()
    width = lines[0].count(sep)
    text = "\n".join([lines[0], sep * width, *lines[1:], f" {sep} " * 2, sep * width, ""])
    _same_as_clean(tmp_path, text)
    bad = text.replace("IOC" + sep + "10020", "IOC" + sep + "x")
    assert "row 3: price is not an integer" in cli_error(capsys, "match", _write(tmp_path, "bad.csv", bad))


def test_match_plus_signed_integers_read_as_unsigned(tmp_path, capsys):
    text = HEADER + SPREAD.replace(",10010,300,1", ",+10010,+300,+1")
    _same_as_clean(tmp_path, text)


def test_match_header_only_without_line_end_gives_empty_tables(tmp_path):
    r = obook.match(_write(tmp_path, "orders.csv", HEADER.rstrip("\n")))
    assert r.fills.num_rows == r.events.num_rows == 0


@pytest.mark.parametrize("text, says", [
    (b"", "it is empty (no header line)"),
    (b"\n\n", "it is empty (no header line)"),
    ((HEADER + SPREAD).encode("utf-16"), "UTF-16 text; save it as UTF-8 CSV")])
def test_match_empty_or_utf16_file_one_line_error(tmp_path, capsys, text, says):
    assert says in cli_error(capsys, "match", _write(tmp_path, "orders.csv", text))


@pytest.mark.parametrize("text, says", [
    (HEADER + SPREAD.replace("4,XYZ,1,modify,,,,10015,,", "4,XYZ,1,modify,,,,10015,,,"),
     "row 4: 11 fields where the header has 10"),
    (HEADER + SPREAD.replace("3,XYZ,,new,buy,limit,IOC,10020,400,3", "\n   \n3,XYZ"),
     "row 3: 2 fields where the header has 10"),
    (HEADER + SPREAD.replace(",300,1", ",300," + "9" * 5000), "row 1: owner is out of range (64-bit integers)"),
    ((HEADER + SPREAD).encode().replace(b"2,XYZ", b"2,XY\xe9"), "row 2: instrument is not UTF-8 text: b'XY\\xe9'")])
def test_match_unreadable_row_one_line_error_names_row(tmp_path, capsys, text, says):
    assert says in cli_error(capsys, "match", _write(tmp_path, "orders.csv", text))


def test_match_line_longer_than_a_read_block_read_as_clean(tmp_path):
    lines = (HEADER + SPREAD).splitlines()
    text = "\n".join([lines[0] + ",note"] + [line + ",x" for line in lines[1:]]) + "\n"
    _same_as_clean(tmp_path, text.replace(",x\n", "," + "x" * (3 << 20) + "\n", 1))


@pytest.mark.parametrize("value, says", [(float("inf"), "row 2: quantity is not an integer"),
                                         (1e30, "row 2: quantity is out of range (64-bit integers)")])
def test_match_parquet_float_quantity_infinite_or_past_64_bits_names_row(tmp_path, capsys, value, says):
    import pyarrow as pa

    table = pa.table({"instrument": ["AAA", "AAA"], "action": ["new", "new"], "side": ["buy", "sell"],
                      "price": [100, 100], "quantity": pa.array([5.0, value])})
    path = tmp_path / "orders.parquet"
    pq.write_table(table, path)
    assert says in cli_error(capsys, "match", path)


def test_match_string_view_integer_column_read_as_integers(tmp_path):
    import pyarrow as pa
    import pyarrow.csv as pcsv

    clean = _write(tmp_path, "clean.csv", HEADER + SPREAD)
    table = pcsv.read_csv(clean, convert_options=pcsv.ConvertOptions(
        column_types={c: pa.string() for c in ("instrument", "quantity")}))
    table = table.set_column(8, "quantity", table["quantity"].cast(pa.string_view()))
    want = obook.match(clean, workers=1)
    assert obook.match(table, workers=1).fills.to_pylist() == want.fills.to_pylist()


def test_orders_column_close_to_a_known_one_warns_naming_it(tmp_path, caplog):
    from obook.feeds.orders import read_orders

    p = tmp_path / "typo.csv"
    p.write_text("time,instrument,order_id,action,side,type,tif,prce,quantity,note\n"
                 "1,AAA,1,new,buy,limit,GTC,100,5,mine\n")
    read_orders(str(p))
    assert "column 'prce' is not read (did you mean 'price'?)" in caplog.text
    assert "note" not in caplog.text            # a column of the user's own passes quietly


@pytest.mark.parametrize("bad, says", [
    (b"3,AAA,,new,bu", "row 3: 5 fields where the header has 10"),
    (b"3,AA\xe9,,new,buy,limit,gtc,100,5,\n", "row 3: instrument is not UTF-8 text"),
], ids=["cut-mid-line", "not-utf8"])
def test_match_csv_line_that_cannot_be_read_partial_holds_the_rows_before_it(tmp_path, capsys, bad, says):
    # a line of separators only is not counted, as in the errors of readable lines
    orders = _write(tmp_path, "orders.csv", HEADER.encode() + _BEFORE.replace("\n", "\n,,,,,,,,,\n", 1).encode() + bad)
    with pytest.raises(obook.FeedError, match=says) as err:
        obook.match(orders)
    want = obook.match(_write(tmp_path, "cut.csv", HEADER + _BEFORE), day_end=False)
    for t in ("fills", "events", "bbo"):
        assert err.value.partial.table(t).equals(want.table(t)), t
    from typer.testing import CliRunner

    from obook.cli import app

    res = CliRunner().invoke(app, ["match", orders])
    assert res.exit_code == 1 and says in str(res.exception)
    assert res.stdout.splitlines()[1:] == ['2,2,"AAA",100,4,2,1,"buy"']


def _parquet(tmp_path, **columns) -> str:
    import pyarrow as pa

    base = dict(time=[1, 2, 3], instrument=["X", "X", "X"], order_id=[1, 2, 3], action=["new"] * 3,
                side=["sell", "buy", "buy"], price=[100] * 3, quantity=[10, 5, 5])
    path = str(tmp_path / "orders.parquet")
    pq.write_table(pa.table({**base, **columns}), path)
    return path


def test_match_boolean_quantity_column_one_line_error(tmp_path, capsys):
    orders = _parquet(tmp_path, quantity=[True, True, True])
    with pytest.raises(ObookError, match="column quantity has type bool, not integers"):
        obook.match(orders)
    assert "column quantity has type bool, not integers" in cli_error(capsys, "match", orders)


def test_match_boolean_instrument_column_one_line_error(tmp_path, capsys):
    orders = _parquet(tmp_path, instrument=[True, True, False])
    with pytest.raises(ObookError, match="column instrument has type bool, not text or whole numbers"):
        obook.match(orders)
    assert "column instrument has type bool, not text or whole numbers" in cli_error(capsys, "match", orders)


def test_match_float_or_decimal_instrument_numbers_named_as_whole_numbers(tmp_path):
    import decimal

    import pyarrow as pa

    ints = obook.match(_parquet(tmp_path, instrument=[7, 7, 7]))
    for column in ([7.0, 7.0, 7.0], pa.array([decimal.Decimal("7.00")] * 3, pa.decimal128(5, 2))):
        got = obook.match(_parquet(tmp_path, instrument=column))
        assert got.fills.column("instrument").to_pylist() == ["7", "7"]
        assert got.fills.equals(ints.fills) and got.events.equals(ints.events)


@pytest.mark.parametrize("column, says", [
    ([7.0, 7.0, 7.5], "row 3: instrument is not an integer"),
    ([7.0, float("nan"), 7.0], "row 2: instrument is NaN, not an integer"),
])
def test_match_float_instrument_fraction_or_nan_names_row(tmp_path, column, says):
    with pytest.raises(obook.FeedError, match=says) as err:
        obook.match(_parquet(tmp_path, instrument=column))
    assert err.value.partial is not None


def test_match_binary_instrument_not_utf8_names_row_and_partial_holds_the_rows_before(tmp_path, capsys):
    import pyarrow as pa

    orders = _parquet(tmp_path, instrument=pa.array([b"X", b"X", b"\xff{"]))
    with pytest.raises(obook.FeedError, match=r"row 3: instrument is not UTF-8 text: b'\\xff\{'") as err:
        obook.match(orders)
    assert err.value.partial.fills.num_rows == 1
    assert obook.match(_parquet(tmp_path, instrument=pa.array([b"X"] * 3))).fills.num_rows == 2


def test_match_column_of_no_type_read_as_empty(tmp_path):
    import polars as pl
    import pyarrow as pa

    frame = pl.DataFrame(dict(time=[1, 2], instrument=["X", "X"], action=["new", "new"], side=["sell", "buy"],
                              price=[100, 100], quantity=[10, 5], owner=[None, None]))
    assert frame.schema["owner"] == pl.Null
    assert obook.match(frame).fills.column("quantity").to_pylist() == [5]
    empty = _parquet(tmp_path, **{c: pa.array([], pa.null()) for c in ("time", "instrument", "order_id", "action", "side",
                                                                        "price", "quantity")})
    assert obook.match(empty).events.num_rows == 0


def test_match_row_without_time_while_others_have_one_names_row(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv", HEADER + _BEFORE + ",AAA,,new,buy,limit,gtc,100,5,\n")
    with pytest.raises(obook.FeedError, match="row 3: no time") as err:
        obook.match(orders)
    assert err.value.partial.fills.num_rows == 1
    assert [r["time"] for r in obook.match(_write(tmp_path, "none.csv", HEADER + _BEFORE.replace("1,AAA", ",AAA")
                                                  .replace("2,AAA", ",AAA"))).fills.to_pylist()] == [2]


def test_simulate_order_without_time_while_others_have_one_names_row(sim_files, tmp_path, capsys):
    feed, _ = sim_files
    orders = _write(tmp_path, "late.csv", HEADER + ",AAA,1,new,buy,limit,day,990,10,\n3,AAA,2,new,sell,limit,ioc,990,5,\n")
    with pytest.raises(obook.FeedError, match="row 1: no time"):
        obook.simulate(feed, orders, format="csv")
    assert "row 1: no time" in cli_error(capsys, "simulate", feed, orders, "--format", "csv")


@pytest.mark.parametrize("compression, says", [("gzip", "gzip-compressed; name it ending in .gz"),
                                               ("zstd", "zstd-compressed; name it ending in .zst")])
def test_match_compressed_file_named_plain_csv_says_to_name_it(tmp_path, capsys, compression, says):
    import pyarrow as pa

    path = tmp_path / "orders.csv"
    with pa.output_stream(str(path), compression=compression) as f:
        f.write((HEADER + _BEFORE).encode())
    assert says in cli_error(capsys, "match", path)
    named = tmp_path / ("orders.csv" + {"gzip": ".gz", "zstd": ".zst"}[compression])
    path.rename(named)
    assert obook.match(str(named)).fills.num_rows == 1


@pytest.mark.parametrize("ext, says", [(".gz", "named .gz but not gzip-compressed; name it without .gz"),
                                       (".zst", "named .zst but not zstd-compressed; name it without .zst")])
def test_match_plain_file_named_compressed_says_it_is_not(tmp_path, capsys, ext, says):
    path = tmp_path / f"orders.csv{ext}"
    path.write_text(HEADER + _BEFORE)
    assert says in cli_error(capsys, "match", path)
    feed = _write(tmp_path, "feed.csv", FEED_HEAD + "1,AAA,a,S,100,1000\n")
    with pytest.raises(ObookError, match=says):
        obook.simulate(feed, str(path), format="csv")


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_match_compressed_file_cut_short_names_the_row_and_partial_holds_the_rows_before(tmp_path, capsys,
                                                                                         compression):
    """A compressed order file whose stream ends early: the rows of its whole lines are read
    (the cut line, whatever its fields, is not), the error names the row it cuts."""
    import pyarrow as pa

    rows = "".join(f"{t},AAA,{t},new,{'sell' if t % 2 else 'buy'},limit,GTC,100,10,\n" for t in range(1, 10_001))
    path = tmp_path / ("orders.csv" + {"gzip": ".gz", "zstd": ".zst"}[compression])
    with pa.output_stream(str(path), compression=compression) as f:
        f.write((HEADER + rows).encode())
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(obook.FeedError, match=r"row \d+: the file's compressed stream is cut short") as e:
        obook.match(str(path))
    cut = e.value.record            # (the last block is cut: the rows of those before are read)
    assert 1000 < cut <= 10_000
    assert e.value.partial.fills.num_rows == (cut - 1) // 2
    assert f"row {cut}: the file's compressed stream is cut short" in cli_error(capsys, "match", path)


@pytest.mark.parametrize("cell, says", [
    ("100.0", "row 2: price is not an integer: '100.0' (a whole number"),
    ('"1,000"', "row 2: price is not an integer: '1,000' (a whole number"),
    ("1e3", "row 2: price is not an integer: '1e3' (a whole number"),
])
def test_match_price_not_an_integer_error_quotes_the_value_and_the_form(tmp_path, capsys, cell, says):
    orders = _write(tmp_path, "orders.csv", HEADER + "1,AAA,,new,sell,limit,gtc,100,10,\n"
                    f"2,AAA,,new,buy,limit,gtc,{cell},10,\n")
    with pytest.raises(obook.FeedError, match=says.replace("(", r"\(")):
        obook.match(orders)
    assert says in cli_error(capsys, "match", orders)


def test_match_parquet_fraction_error_quotes_the_value(tmp_path):
    import pyarrow as pa

    path = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"instrument": ["AAA", "AAA"], "action": ["new", "new"], "side": ["buy", "sell"],
                             "price": [100.0, 100.25], "quantity": [1, 1]}), path)
    with pytest.raises(obook.FeedError, match=r"row 2: price is not an integer: 100\.25"):
        obook.match(str(path))


@pytest.mark.parametrize("column, cell, says", [
    ("action", "add", "row 2: unknown action value 'add' (one of new, modify, cancel)"),
    ("side", "byu", "row 2: unknown side value 'byu' (one of buy, bid, sell, ask)"),
    ("tif", "GTD", "row 2: unknown tif value 'GTD' (one of gtc, day, ioc, fok)"),
])
def test_match_unknown_word_error_quotes_the_word(tmp_path, capsys, column, cell, says):
    cells = {"action": "new", "side": "buy", "tif": "gtc", column: cell}
    orders = _write(tmp_path, "orders.csv", HEADER + "1,AAA,,new,sell,limit,gtc,100,10,\n"
                    f"2,AAA,,{cells['action']},{cells['side']},limit,{cells['tif']},100,10,\n")
    with pytest.raises(obook.FeedError, match=says.replace("(", r"\(").replace(")", r"\)")):
        obook.match(orders)
    assert says in cli_error(capsys, "match", orders)


@pytest.mark.parametrize("given, known", [("qty", "quantity"), ("size", "quantity"), ("px", "price"),
                                          ("id", "order_id")])
def test_orders_column_of_a_common_other_name_warns_naming_the_known_one(tmp_path, caplog, given, known):
    header = HEADER.replace(known, given)
    orders = _write(tmp_path, "orders.csv", header + "1,AAA,1,new,sell,limit,gtc,100,10,\n")
    with caplog.at_level("WARNING", logger="obook"):
        try:
            obook.match(orders)
        except obook.FeedError:
            pass
    assert f"column {given!r} is not read (did you mean {known!r}?)" in caplog.text


def test_match_no_quantity_column_error_says_the_column_is_missing(tmp_path, capsys):
    orders = _write(tmp_path, "orders.csv",
                    HEADER.replace("quantity", "qty") + "1,AAA,1,new,sell,limit,gtc,100,10,\n")
    says = "row 1: a new order needs a quantity (there is no 'quantity' column"
    with pytest.raises(obook.FeedError, match=says.replace("(", r"\(")):
        obook.match(orders)
    assert says in cli_error(capsys, "match", orders)


@pytest.mark.parametrize("given", ["ticker", "symbol"])
def test_match_no_instrument_column_error_names_the_likely_one(tmp_path, capsys, given):
    orders = _write(tmp_path, "orders.csv",
                    HEADER.replace("instrument", given) + "1,AAA,1,new,sell,limit,gtc,100,10,\n")
    says = f"no 'instrument' column (columns: time, {given},"
    line = cli_error(capsys, "match", orders)
    assert says in line and f"rename {given!r} to 'instrument'" in line


@pytest.mark.parametrize("ext", [".itch", ".bin"])
def test_match_feed_given_as_the_orders_error_says_it_is_a_feed(tmp_path, capsys, ext):
    from obook.gen.itch import write_itch

    feed = tmp_path / f"day{ext}"
    write_itch(str(feed), 200, 2, seed=1)
    says = f"{feed}: cannot read the order file: it is a feed (itch), not orders"
    with pytest.raises(ObookError, match=re.escape(says)):
        obook.match(str(feed))
    assert says in cli_error(capsys, "match", feed)


def test_simulate_cli_feed_and_orders_swapped_error_says_the_feed_comes_first(tmp_path, capsys):
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(str(feed), 200, 2, seed=1)
    orders = _write(tmp_path, "orders.csv", HEADER + "1,AAA,1,new,buy,limit,gtc,100,10,\n")
    line = cli_error(capsys, "simulate", orders, feed)
    assert "it is a feed (itch), not orders" in line and "the feed first, then the orders" in line
