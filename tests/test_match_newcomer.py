"""The matching engine as a newcomer and a hostile user meet it: options out of range,
empty choices, interrupted writes."""

from __future__ import annotations

import re

import pytest

import obook
import obook.output
from cli_support import cli_error, cli_run
from obook.errors import ObookError

ENTRY = ("time,instrument,order_id,action,side,type,tif,price,quantity,owner\n"
         "1,XYZ,,new,sell,limit,GTC,10010,300,1\n"
         "2,XYZ,,new,buy,limit,IOC,10020,400,3\n")


@pytest.fixture
def entry(tmp_path):
    path = tmp_path / "entry.csv"
    path.write_text(ENTRY)
    return path


@pytest.mark.parametrize("tick", [2**63, 2**70])
def test_match_tick_beyond_int64_raises_obook_error(entry, tick):
    with pytest.raises(ObookError, match="tick must be at most 2\\*\\*63 - 1"):
        obook.match(entry, tick=tick)


def test_match_reader_tick_beyond_int64_raises_obook_error(entry):
    with pytest.raises(ObookError, match="tick must be at most"):
        obook.matching.match_reader(entry, tick=2**64)


def test_match_tick_int64_max_rejects_off_tick_rows(entry):
    r = obook.match(entry, tick=2**63 - 1)
    assert r.fills.num_rows == 0
    assert set(r.events.column("reason").to_pylist()) == {"price is not a multiple of the tick"}


def test_cli_match_tick_beyond_int64_one_error_line(capsys, entry):
    err = cli_error(capsys, "match", entry, "--tick", str(2**70))
    assert "tick must be at most" in err


@pytest.mark.parametrize("instruments", [[], (), "", " , "])
def test_match_instruments_naming_none_raises_obook_error(entry, instruments):
    with pytest.raises(ObookError, match="names no instrument"):
        obook.match(entry, instruments=instruments)


def test_match_instruments_one_name_matches_it(entry):
    assert obook.match(entry, instruments="XYZ").fills.num_rows == 1
    assert obook.match(entry, instruments=["ABC"]).fills.num_rows == 0


def test_cli_match_interrupted_write_leaves_no_made_parents(capsys, tmp_path, entry, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(obook.output, "write_files", interrupted)
    code, _ = cli_run(capsys, "match", entry, "-o", tmp_path / "a" / "b" / "out")
    assert code != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry.csv"]


def test_cli_match_interrupted_write_keeps_existing_parents(capsys, tmp_path, entry, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "mine.txt").write_text("kept")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(obook.output, "write_files", interrupted)
    code, _ = cli_run(capsys, "match", entry, "-o", tmp_path / "a" / "b" / "c")
    assert code != 0
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["mine.txt"]


@pytest.mark.parametrize("flags,says", [(["--depth", "3"], "--depth only applies"),
                                        (["--type", "parquet"], "--type only applies"),
                                        (["--type", "csv", "--depth", "1"], "--depth and --type only apply")])
def test_cli_match_output_options_without_output_one_error_line(capsys, entry, flags, says):
    assert says in cli_error(capsys, "match", entry, *flags)


def test_cli_match_without_output_and_depth_0_writes_fills_csv(entry):
    from typer.testing import CliRunner

    from obook.cli import app

    res = CliRunner().invoke(app, ["match", str(entry), "--depth", "0"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[1] == '2,2,"XYZ",10010,300,2,1,"buy"'


def test_cli_match_output_again_keeps_only_this_runs_tables(capsys, tmp_path, entry):
    out = tmp_path / "out"
    assert cli_run(capsys, "match", entry, "-o", out, "--depth", "5")[0] == 0
    assert cli_run(capsys, "match", entry, "-o", out, "--type", "csv")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["bbo.csv", "events.csv", "fills.csv"]
    (out / "notes.txt").write_text("mine")
    (out / "depth.arrow").write_bytes(b"not obook's")            # a name of a table, not a table
    (out / "depth.csv").write_text("my precious\n")
    assert cli_run(capsys, "match", entry, "-o", out, "--depth", "2")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["bbo.parquet", "depth.arrow", "depth.csv", "depth.parquet",
                                                     "events.parquet", "fills.parquet", "notes.txt"]
    assert (out / "depth.csv").read_text() == "my precious\n"
    assert cli_run(capsys, "match", entry, "-o", out, "--type", "arrow")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["bbo.arrow", "depth.arrow", "depth.csv", "events.arrow",
                                                     "fills.arrow", "notes.txt"]


def test_cli_match_date_in_the_name_out_of_range_error_names_the_file(capsys, tmp_path):
    path = tmp_path / "1500-01-01.csv"
    path.write_text(ENTRY)
    assert cli_error(capsys, "match", path) == (f"error: {path}: the date in its name: 1500-01-01 is outside the "
                                                "days ns timestamps hold (1678-01-01 to 2261-12-31)\n")
    assert cli_run(capsys, "match", path, "--date", "2020-01-02")[0] == 0


@pytest.mark.parametrize("column", ["price", "quantity"])
def test_match_float_column_nan_is_an_error_naming_the_row_null_is_empty(column):
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = {"time": [1, 2, 3], "instrument": ["A"] * 3, "action": ["new"] * 3, "side": ["buy", "sell", "buy"],
            "price": pa.array([100.0, 101.0, 102.0]), "quantity": pa.array([5.0, 6.0, 7.0])}
    rows[column] = pa.array([100.0, float("nan"), 7.0])
    with pytest.raises(obook.FeedError, match=f"row 2: {column} is NaN, not an integer"):
        obook.match(pa.table(rows))
    rows[column] = pa.array([100.0, None, 7.0])          # an empty cell
    if column == "quantity":
        with pytest.raises(obook.FeedError, match="row 2: a new order needs a quantity"):
            obook.match(pa.table(rows))
        return
    events = obook.match(pa.table(rows)).events
    assert events.filter(pc.equal(events["seq"], 2))["reason"].to_pylist() == ["limit order without a price"]


def test_match_tables_naming_none_raises_obook_error(tmp_path):
    path = tmp_path / "o.csv"
    path.write_text("time,instrument,action,side,price,quantity\n1,A,new,buy,100,5\n")
    with pytest.raises(ObookError, match="tables names no table"):
        obook.match(str(path), tables=[])


def test_cli_match_stdin_says_order_files_are_files_and_rows_counted_in_words(tmp_path, capsys):
    assert "order files are read from a file, not from stdin" in cli_error(capsys, "match", "-")
    path = tmp_path / "o.csv"
    path.write_text("time,instrument,action,side,price,quantity\n1,A,new,buy,100,5\n")
    code, err = cli_run(capsys, "match", path, "-o", tmp_path / "out")
    assert code in (0, None) and "events: 2 rows, bbo: 1 row ->" in err, err


REJECTS = ("time,instrument,order_id,action,side,type,tif,price,quantity\n"
           "1,XYZ,1,new,buy,limit,GTC,100,10\n"
           "2,XYZ,2,new,buy,limit,GTC,103,10\n"
           "3,ABC,3,new,sell,limit,GTC,205,10\n"
           "4,XYZ,4,new,sell,market,IOC,,0\n")
REJECTED = [(2, 103, "price is not a multiple of the tick"), (3, 205, "unknown instrument"),
            (4, None, "quantity must be positive")]


def test_cli_match_rejected_events_show_price_sent(capsys, tmp_path):
    import pyarrow.csv as pacsv

    path = tmp_path / "rejects.csv"
    path.write_text(REJECTS)
    code, err = cli_run(capsys, "match", path, "-o", tmp_path / "out", "--type", "csv", "--tick", "5",
                        "--instruments", "XYZ", "--workers", "2")
    assert code in (0, None), err
    events = pacsv.read_csv(tmp_path / "out" / "events.csv").to_pylist()
    assert [(e["seq"], e["price"], e["reason"]) for e in events if e["event"] == "rejected"] == REJECTED


def test_duckdb_match_events_rejected_show_price_sent(tmp_path):
    path = tmp_path / "rejects.csv"
    path.write_text(REJECTS)      # every instrument known: ABC's order rests
    con = obook.connect()
    try:
        got = con.sql(f"SELECT seq, event, price FROM obook_match_events('{path}', tick := 5) "
                      "WHERE seq > 1 AND event IN ('rejected', 'rested') ORDER BY seq").fetchall()
    finally:
        con.close()
    assert got == [(2, "rejected", 103), (3, "rested", 205), (4, "rejected", None)]


BEYOND = ("time,instrument,action,side,price,quantity\n"
          "1,XYZ,new,sell,100,5\n"
          "9223372036854775807,XYZ,new,buy,100,5\n")


@pytest.mark.parametrize("run", [lambda p: obook.match(p, date="2024-03-01", tables=("fills",)),
                                 lambda p: obook.matching.match_reader(p, "bbo", date="2024-03-01").read_all(),
                                 lambda p: obook.scan_match(p, table="events", workers=2, date="2024-03-01").collect()])
def test_match_date_time_beyond_timestamps_error_names_file_and_row_before_any_rows(tmp_path, run):
    path = tmp_path / "beyond.csv"
    path.write_text(BEYOND)
    with pytest.raises(ObookError, match="^" + re.escape(f"{path}: row 2: time 9223372036854775807 gives an instant "
                                                         "beyond 1677-2262 with the session date 2024-03-01")):
        run(str(path))


def test_cli_match_date_time_beyond_timestamps_one_error_line_naming_the_row(capsys, tmp_path):
    path = tmp_path / "beyond.csv"
    path.write_text(BEYOND)
    assert cli_error(capsys, "match", path, "--date", "2024-03-01").startswith(f"error: {path}: row 2: time ")


@pytest.mark.parametrize("decimal_type", ["decimal128", "decimal256"])
def test_match_decimal_columns_of_whole_values_read_as_integers_fraction_names_the_row(decimal_type):
    import decimal

    import pyarrow as pa

    make = getattr(pa, decimal_type)
    rows = {"time": [1, 2, 3], "instrument": ["A"] * 3, "action": ["new"] * 3, "side": ["sell", "buy", "buy"],
            "price": pa.array([decimal.Decimal("100.00"), decimal.Decimal("100.00"), None], make(12, 2)),
            "quantity": pa.array([decimal.Decimal(5), decimal.Decimal(3), decimal.Decimal(2)], make(20, 0)),
            "type": ["limit", "limit", "market"]}
    as_ints = {**rows, "price": pa.array([100, 100, None], pa.int64()), "quantity": pa.array([5, 3, 2], pa.int64())}
    assert obook.match(pa.table(rows)).events.equals(obook.match(pa.table(as_ints)).events)
    rows["price"] = pa.array([decimal.Decimal("100.00"), decimal.Decimal("100.50"), None], make(12, 2))
    with pytest.raises(obook.FeedError, match="row 2: price is not an integer"):
        obook.match(pa.table(rows))
    rows["price"] = pa.array([decimal.Decimal(100), decimal.Decimal(2 ** 63), None], make(30, 0))
    with pytest.raises(obook.FeedError, match=r"row 2: price is out of range \(64-bit integers\)"):
        obook.match(pa.table(rows))


@pytest.mark.parametrize("source, says", [(5, "cannot read orders from an int: give a path, an Arrow, polars or DuckDB table"),
                                          ([1, 2], "cannot read orders from a list: give a path")])
def test_match_source_of_no_kind_of_table_names_its_type(source, says):
    with pytest.raises(ObookError, match=says):
        obook.match(source)


def test_cli_match_output_folder_of_replay_tables_keeps_those_it_does_not_write(capsys, tmp_path, entry):
    from obook.gen.itch import write_itch

    day = tmp_path / "day.itch"
    write_itch(day, 3000, 4, seed=1)
    out = tmp_path / "out"
    assert cli_run(capsys, "convert", day, out, "-t", "depth")[0] == 0
    assert cli_run(capsys, "table", "bbo", day, "-o", out / "bbo.arrow")[0] == 0
    assert cli_run(capsys, "match", entry, "-o", out)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["bbo.arrow", "bbo.parquet", "depth.parquet",
                                                     "events.parquet", "fills.parquet"]


@pytest.mark.parametrize("link", ["copy", "hard", "symbolic"])
def test_cli_match_orders_named_like_a_table_in_the_output_folder_one_error_line(capsys, tmp_path, entry, link):
    import os

    out = tmp_path / "out"
    out.mkdir()
    orders = out / "fills.csv"
    if link == "copy":
        orders.write_text(ENTRY)
    else:
        (os.link if link == "hard" else os.symlink)(entry, orders)
    err = cli_error(capsys, "match", orders, "-o", out, "--type", "csv")
    assert err == f"error: {orders}: is an input of this command; write the tables elsewhere\n"
    assert orders.read_text() == ENTRY and entry.read_text() == ENTRY
    assert sorted(p.name for p in out.iterdir()) == ["fills.csv"]


def test_cli_match_output_folder_another_run_holds_one_error_line_nothing_written(capsys, tmp_path, entry):
    from cli_support import cli_error_while_held

    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    err = cli_error_while_held(capsys, out, "match", entry, "-o", out)
    assert err == (f"error: {out}: another run is writing its tables into this folder now; wait for it to end, "
                   "or give another folder\n")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert cli_run(capsys, "match", entry, "-o", out)[0] == 0


def test_cli_match_ctrl_c_as_partial_tables_are_named_leaves_none_under_a_final_name(capsys, tmp_path,
                                                                                     monkeypatch, python_sigint):
    from pathlib import Path

    from interrupt_support import ctrl_c

    entry = tmp_path / "entry.csv"
    entry.write_text(ENTRY + "3,XYZ,,new,buy,limit,GTC,10020,400,3,extra,fields\n")
    real_replace, renamed = Path.replace, []

    def replace(self, target):
        moved = real_replace(self, target)
        if not renamed:         # Ctrl-C once the first table is named .partial
            renamed.append(target)
            ctrl_c()
        return moved

    monkeypatch.setattr(Path, "replace", replace)
    out = tmp_path / "out"
    code, _ = cli_run(capsys, "match", entry, "-o", out)
    assert code == 130 and renamed
    assert sorted(p.name for p in out.iterdir()) == ["bbo.parquet.partial", "events.parquet.partial",
                                                     "fills.parquet.partial"]
