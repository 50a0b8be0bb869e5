"""The matching engine's front ends: obook.match, `obook match`, `obook gen orders`,
the DuckDB macros and the polars scan; and the seed workload generator."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import obook
from obook.cli import app
from obook.gen.orders import orders_table, seed_rows, write_orders
from match_flows import random_flow, to_table, tuples
from reference_match import Reference


@pytest.fixture(scope="module")
def flow_csv(tmp_path_factory):
    import pyarrow.csv as pcsv

    p = tmp_path_factory.mktemp("match") / "orders.csv"
    pcsv.write_csv(to_table(random_flow(31, 1200, tick=1, bad=False)), p)
    return p


def test_obook_match_is_a_lazy_attribute_returning_tables(flow_csv):
    r = obook.match(flow_csv, workers=2, tables=("fills", "events"))
    assert r.fills.num_rows > 0 and r.events.num_rows > r.fills.num_rows
    assert r.reader("fills").read_all().equals(r.fills)
    with pytest.raises(obook.ObookError):
        r.bbo


def test_cli_match_writes_tables_equal_to_the_api(flow_csv, tmp_path):
    res = CliRunner().invoke(app, ["match", str(flow_csv), "-o", str(tmp_path / "out"), "-w", "2", "--depth", "3"])
    assert res.exit_code == 0, res.output
    r = obook.match(flow_csv, levels=3)
    for t in ("fills", "events", "bbo", "depth"):
        assert pq.read_table(tmp_path / "out" / f"{t}.parquet").equals(r.table(t), check_metadata=False), t


def test_cli_match_stdout_csv_is_the_csv_file_byte_for_byte(flow_csv, tmp_path):
    res = CliRunner().invoke(app, ["match", str(flow_csv), "-w", "1"])
    assert res.exit_code == 0, res.output
    wrote = CliRunner().invoke(app, ["match", str(flow_csv), "-w", "1", "-o", str(tmp_path / "out"), "--type", "csv"])
    assert wrote.exit_code == 0, wrote.output
    text = (tmp_path / "out" / "fills.csv").read_text()
    assert text.startswith("seq,time,instrument,price,")       # names unquoted, as every obook CSV
    assert res.stdout == text


@pytest.mark.parametrize("stop", [KeyboardInterrupt, obook.OutputError])
def test_cli_match_write_stopped_leaves_no_output_folder(flow_csv, tmp_path, monkeypatch, stop):
    import obook.output

    def stopped(tables, threads=1):
        raise stop("stopped while writing")

    monkeypatch.setattr(obook.output, "write_files", stopped)
    (tmp_path / "kept").mkdir()
    for name in ("out", "kept"):
        res = CliRunner().invoke(app, ["match", str(flow_csv), "-o", str(tmp_path / name), "-w", "1"])
        assert res.exit_code != 0
    assert not (tmp_path / "out").exists()         # made by the run, empty: gone
    assert (tmp_path / "kept").is_dir()            # the user's folder stays


def test_cli_match_malformed_row_exits_with_error(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("instrument,order_id,action,side,price,quantity\nAAA,1,new,buy,100,5\nAAA,2,new,buy,1x0,5\n")
    res = CliRunner().invoke(app, ["match", str(p)])
    assert res.exit_code != 0
    assert "row 2" in str(res.exception) and "price is not an integer" in str(res.exception)


def test_duckdb_match_macros_equal_the_api(flow_csv):
    con = obook.connect()
    r = obook.match(flow_csv, stp="cancel_resting")
    fills = con.execute(f"SELECT * FROM obook_match('{flow_csv}', stp := 'cancel_resting') ORDER BY ALL").fetchall()
    assert fills == sorted(tuples(r.fills))
    n = con.execute(f"SELECT count(*) FROM obook_match_events('{flow_csv}', workers := 2, stp := 'cancel_resting')")
    assert n.fetchone()[0] == r.events.num_rows
    assert con.execute(f"SELECT count(*) FROM obook_match_bbo('{flow_csv}')").fetchone()[0] == \
        obook.match(flow_csv).bbo.num_rows


def test_duckdb_match_macro_missing_file_is_an_error(tmp_path):
    import duckdb

    with pytest.raises(duckdb.Error, match="no such order file"):
        obook.connect().sql(f"SELECT * FROM obook_match('{tmp_path / 'none.csv'}')").fetchall()


def test_polars_scan_match_equals_the_api(flow_csv):
    import polars as pl

    r = obook.match(flow_csv)
    got = obook.scan_match(flow_csv, table="events").collect()
    assert got.equals(pl.from_arrow(r.events))
    assert obook.scan_match(flow_csv).head(5).collect().height == 5


def test_gen_orders_seed_workload_mix_and_book_size():
    msg, _, levels = seed_rows(700_000)
    op = msg.rows["op"]
    action = op & 3
    ioc = (action == 0) & (((op >> 3) & 3) == 2)
    share = lambda m: m.mean()  # noqa: E731
    assert abs(share((action == 0) & ~ioc) - 0.48) < 0.02
    assert abs(share(action == 2) - 0.37) < 0.02
    assert abs(share(ioc) - 0.10) < 0.01 and abs(share(action == 1) - 0.05) < 0.01
    from obook.matching.books import MatchBooks

    mb = MatchBooks(levels, [0], [levels - 1], len(msg), want=0)
    mb.run(msg)
    assert 9_000 <= mb.st[6] <= 10_000                  # ST_LIVE: the book holds close to 10,000 orders
    r = obook.match(orders_table(50_000, 1), tables=("events",))
    assert "rejected" not in r.events["event"].to_pylist()   # the generator knows what is live


def test_gen_orders_same_seed_same_rows_and_cli(tmp_path):
    a, b = orders_table(5000, 3), orders_table(5000, 3)
    assert a.equals(b) and not a.equals(orders_table(5000, 3, seed=7))
    res = CliRunner().invoke(app, ["gen", "orders", str(tmp_path / "o.parquet"), "-n", "5000", "-k", "3"])
    assert res.exit_code == 0, res.output
    assert pq.read_table(tmp_path / "o.parquet").equals(a)
    write_orders(tmp_path / "o.csv", 100, 2)
    assert (tmp_path / "o.csv").read_text().startswith('"time","instrument"')


def test_gen_orders_flow_matches_reference_on_three_instruments():
    t = orders_table(4000, 3)
    rows = t.to_pylist()
    ref = Reference(levels=10).run([dict(r) for r in rows])
    r = obook.match(t, workers=3)
    for name in ("fills", "events", "bbo", "depth"):
        assert tuples(r.table(name)) == getattr(ref, name), name
    assert np.all(np.diff([f[0] for f in ref.fills]) >= 0)


def test_match_reader_streams_batches_equal_to_the_tables(flow_csv, monkeypatch):
    import pyarrow as pa

    from obook.matching import books as books_mod
    from obook.matching import match_reader

    whole = obook.match(flow_csv, levels=3, stp="cancel_resting")
    monkeypatch.setattr(books_mod, "CHUNK", 64)          # the kernels flush many times
    for t in ("fills", "events", "bbo", "depth"):
        reader = match_reader(flow_csv, t, levels=3, stp="cancel_resting")
        first = reader.read_next_batch()
        assert first.num_rows < whole.table(t).num_rows, t   # handed over before the run ends
        got = pa.Table.from_batches([first] + list(reader), reader.schema)
        assert got.equals(whole.table(t)), t
    with pytest.raises(obook.ObookError):
        match_reader(flow_csv, "trades")


def test_match_tables_schemas_and_kernel_rows_follow_one_declaration():
    """Each matching table's Arrow schema is its declared columns in order, and the kernels'
    row constants are the positions of the declared row columns."""
    from obook._kernels import match_layout as M
    from obook.matching.tables import BBO_COLUMNS, schema_of

    for table, columns in (("fills", M.FILL_COLUMNS), ("events", M.EVENT_COLUMNS), ("bbo", BBO_COLUMNS)):
        s = schema_of(table)
        assert [(f.name, str(f.type), f.nullable) for f in s] == [
            (n, str(pa.type_for_alias(t)), null) for n, t, null, _ in columns]
    assert M.FILL_ROW.index("taker") == M.F_TAKER and M.FILL_ROW.index("side") == M.F_SIDE
    assert M.EVENT_ROW.index("qpos") == M.E_QPOS and M.F_WIDTH == len(M.FILL_ROW) == 8
    assert M.E_WIDTH == len(M.EVENT_ROW) == 10 and M.Q_WIDTH == M.D_HEAD + 2 * len(M.LEVEL_ROW) == 9
    depth = schema_of("depth", 3)
    assert len(depth) == M.D_HEAD + 2 * 3 * len(M.LEVEL_COLUMNS)
    assert [f.name for f in depth][M.D_HEAD:M.D_HEAD + 4] == ["bid_px_1", "bid_qty_1", "bid_orders_1", "bid_px_2"]


def test_cli_match_instruments_with_spaces_are_known(tmp_path):
    p = tmp_path / "orders.csv"
    p.write_text("time,instrument,order_id,action,side,price,quantity\n"
                 "1,AAA,1,new,sell,100,5\n2,BBB,1,new,sell,100,5\n3,BBB,2,new,buy,100,5\n")
    res = CliRunner().invoke(app, ["match", str(p), "--instruments", "AAA, BBB"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[1:] == ['3,3,"BBB",100,5,2,1,"buy"']
    r = obook.match(p, instruments=[" BBB "])
    assert [e["event"] for e in r.events.to_pylist() if e["instrument"] == "BBB"][-1] == "filled"


def test_cli_match_instruments_naming_none_is_an_error(tmp_path, capsys):
    from cli_support import cli_error

    p = tmp_path / "orders.csv"
    p.write_text("time,instrument,order_id,action,side,price,quantity\n1,AAA,1,new,sell,100,5\n")
    assert "--instruments ',,' names no instrument" in cli_error(capsys, "match", p, "--instruments", ",,")


@pytest.mark.parametrize("given", [[""], ["  ", ""], ("",)])
def test_match_instruments_of_blank_names_only_is_an_error(tmp_path, given):
    """A blank name is no instrument (a row without one cannot be read): a list of only
    blank names names none, as the text ',,' does, in Python and in SQL."""
    p = tmp_path / "orders.csv"
    p.write_text("time,instrument,order_id,action,side,price,quantity\n1,AAA,1,new,sell,100,5\n")
    with pytest.raises(obook.ObookError, match="names no instrument"):
        obook.match(p, instruments=given)
    with pytest.raises(duckdb.Error, match="names no instrument"):
        obook.connect().sql(f"SELECT * FROM obook_match('{p}', instruments := {list(given)!r})").fetchall()


def _rows(con, sql: str) -> pa.Table:
    got = con.sql(sql).arrow()
    return got.read_all() if isinstance(got, pa.RecordBatchReader) else got


def test_duckdb_match_depth_equals_the_api_depth(flow_csv):
    con = obook.connect()
    got = _rows(con, f"SELECT * FROM obook_match_depth('{flow_csv}', levels := 3, workers := 2)")
    want = obook.match(flow_csv, levels=3).depth
    assert got.schema.names == want.schema.names
    assert sorted(tuples(got)) == sorted(tuples(want))
    ten = _rows(con, f"SELECT * FROM obook_match_depth('{flow_csv}') LIMIT 1")
    assert "bid_px_10" in ten.schema.names and "bid_px_11" not in ten.schema.names


@pytest.mark.parametrize(("sql", "kwargs"), [
    ("instruments := ['BBB', 'CCC']", dict(instruments=["BBB", "CCC"])),
    ("instruments := 'AAA, CCC'", dict(instruments="AAA, CCC")),
    ("day_end := false", dict(day_end=False)),
    ("date := '2024-03-01', stp := 'cancel_incoming'", dict(date="2024-03-01", stp="cancel_incoming")),
    ("date := DATE '2024-03-01', tick := 1", dict(date="2024-03-01", tick=1)),
])
def test_duckdb_match_options_give_the_api_rows(flow_csv, sql, kwargs):
    con = obook.connect()
    r, plain = obook.match(flow_csv, **kwargs), obook.match(flow_csv)
    for macro, table in (("obook_match", "fills"), ("obook_match_events", "events"), ("obook_match_bbo", "bbo"),
                         ("obook_match_depth", "depth")):
        got = _rows(con, f"SELECT * FROM {macro}('{flow_csv}', {sql})")
        assert got.schema.names == r.table(table).schema.names, macro
        assert sorted(tuples(got)) == sorted(tuples(r.table(table))), macro
    assert any(not r.table(t).equals(plain.table(t)) for t in ("fills", "events", "bbo", "depth"))   # it did something


@pytest.mark.parametrize(("sql", "says"), [
    ("instruments := 5", "instruments must be a name or a list of names, not 5"),
    ("instruments := ['AAA', NULL]", "instruments"),
    ("instruments := ''", "instruments '' names no instrument"),
    ("instruments := []", r"instruments \[\] names no instrument"),
    ("date := '2024-13-01'", "'2024-13-01': not a day YYYY-MM-DD"),
    ("date := 20240301", "20240301"),
    ("tick := 0", "tick must be a positive integer, not 0"),
])
def test_duckdb_match_wrong_option_is_an_error_naming_it(flow_csv, sql, says):
    import duckdb

    with pytest.raises(duckdb.Error, match=says):
        obook.connect().sql(f"SELECT * FROM obook_match('{flow_csv}', {sql})").fetchall()


@pytest.mark.parametrize(("path", "says"), [
    ("5", "the order path must be text (one file), not 5"),
    ("['{csv}']", "the order path must be text (one file), not ['"),
    ("NULL", "the order path is NULL"),
])
def test_duckdb_match_order_path_not_text_is_an_error_naming_it(flow_csv, path, says):
    import duckdb

    with pytest.raises(duckdb.Error, match=re.escape(says)):
        obook.connect().sql(f"SELECT * FROM obook_match({path.format(csv=flow_csv)})").fetchall()


@pytest.mark.parametrize("kwargs", [dict(instruments=["AAA"]), dict(day_end=False), dict(date="2024-03-01"),
                                    dict(levels=3, stp="cancel_resting")])
def test_polars_scan_match_options_give_the_api_rows(flow_csv, kwargs):
    import polars as pl

    for table in ("fills", "events", "bbo", "depth"):
        got = obook.scan_match(flow_csv, table=table, **kwargs).collect()
        assert got.equals(pl.from_arrow(obook.match(flow_csv, **kwargs).table(table))), table


def test_polars_scan_match_wrong_option_is_an_error_before_collect(flow_csv):
    with pytest.raises(obook.ObookError, match="day_end must be True or False, not 1"):
        obook.scan_match(flow_csv, day_end=1)
    with pytest.raises(obook.ObookError, match="instruments"):
        obook.scan_match(flow_csv, instruments=5)
    with pytest.raises(TypeError, match="scan_match.. got an unexpected keyword argument 'tables'"):
        obook.scan_match(flow_csv, tables=("fills",))
