"""obook/dataset.py: attach's views never take the place of the user's own objects."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from obook.dataset import attach, scan_dataset
from obook.errors import ObookError


@pytest.fixture()
def dataset(tmp_path):
    """A dataset of two tables, bbo and trades, one day each."""
    for table, value in (("bbo", 1), ("trades", 2)):
        part = tmp_path / "ds" / f"table={table}" / "date=2020-01-02"
        part.mkdir(parents=True)
        pq.write_table(pa.table({"seq": [value]}), part / "part-0.parquet")
    return tmp_path / "ds"


@pytest.fixture()
def con():
    c = duckdb.connect()
    yield c
    c.close()


def _views(con) -> list[str]:
    return [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal "
                                      "ORDER BY ALL").fetchall()]


@pytest.mark.parametrize("mine, kind", [("CREATE VIEW trades AS SELECT 'mine' AS x", "a view"),
                                        ("CREATE TABLE TRADES AS SELECT 'mine' AS x", "a table"),
                                        ("CREATE TEMP VIEW trades AS SELECT 'mine' AS x", "a temporary view"),
                                        ("CREATE TEMP TABLE trades AS SELECT 'mine' AS x", "a temporary table")])
def test_attach_name_of_users_object_raises_obook_error_nothing_created(con, dataset, mine, kind):
    con.execute(mine)
    with pytest.raises(ObookError) as err:
        attach(con, dataset)
    assert str(err.value) == (f"{dataset}: cannot attach, names taken on this connection: 'trades' ({kind}); "
                              "give prefix= for other view names, or replace=True to replace views "
                              "(never a table or a temporary object)")
    assert con.execute("SELECT x FROM trades").fetchall() == [("mine",)]
    assert "bbo" not in _views(con)


def test_attach_replace_true_replaces_users_view(con, dataset):
    con.execute("CREATE VIEW trades AS SELECT 'mine' AS x")
    assert attach(con, dataset, replace=True) == ["bbo", "trades"]
    assert con.execute("SELECT seq FROM trades").fetchall() == [(2,)]


@pytest.mark.parametrize("mine", ["CREATE TABLE trades AS SELECT 'mine' AS x",
                                  "CREATE TEMP VIEW trades AS SELECT 'mine' AS x"])
def test_attach_replace_true_table_or_temporary_still_refused(con, dataset, mine):
    con.execute(mine)
    with pytest.raises(ObookError, match="names taken on this connection: 'trades'"):
        attach(con, dataset, replace=True)
    assert con.execute("SELECT x FROM trades").fetchall() == [("mine",)]


def test_attach_prefix_leaves_users_object_alone(con, dataset):
    con.execute("CREATE TABLE trades AS SELECT 'mine' AS x")
    assert attach(con, dataset, prefix="ds_") == ["ds_bbo", "ds_trades"]
    assert con.execute("SELECT x FROM trades").fetchall() == [("mine",)]
    assert con.execute("SELECT seq FROM ds_trades").fetchall() == [(2,)]


def test_attach_same_dataset_again_replaces_its_own_views(con, dataset):
    assert attach(con, dataset) == attach(con, dataset) == ["bbo", "trades"]
    assert con.execute("SELECT seq FROM bbo").fetchall() == [(1,)]


def test_attach_other_dataset_onto_attached_names_refused(con, dataset, tmp_path):
    attach(con, dataset)
    other = tmp_path / "other" / "table=bbo" / "date=2020-01-03"
    other.mkdir(parents=True)
    pq.write_table(pa.table({"seq": [9]}), other / "part-0.parquet")
    with pytest.raises(ObookError, match="'bbo' \\(a view\\)"):
        attach(con, tmp_path / "other")
    assert con.execute("SELECT seq FROM bbo").fetchall() == [(1,)]


def test_attach_read_only_database_raises_obook_error_naming_view(dataset, tmp_path):
    db = tmp_path / "x.duckdb"
    duckdb.connect(str(db)).close()
    con = duckdb.connect(str(db), read_only=True)
    try:
        with pytest.raises(ObookError, match=r"cannot create the view 'bbo': .*read-only"):
            attach(con, dataset)
    finally:
        con.close()


# ---------------------------------------------------------------- partitions of other columns

def _partition(root, table, date, columns: dict) -> None:
    part = root / f"table={table}" / f"date={date}"
    part.mkdir(parents=True)
    pq.write_table(pa.table(columns), part / "part-0.parquet")


_TWO_LEVELS = {"seq": [1], "bid_px_1": [10], "bid_px_2": [9], "ask_px_1": [11], "ask_px_2": [12]}
_ONE_LEVEL = {"seq": [2], "bid_px_1": [20], "ask_px_1": [21]}


@pytest.fixture(params=["wide-first", "narrow-first"])
def mixed(tmp_path, request):
    """A depth table whose days have two levels a side, then one (or one, then two)."""
    first, second = (_TWO_LEVELS, _ONE_LEVEL) if request.param == "wide-first" else (_ONE_LEVEL, _TWO_LEVELS)
    _partition(tmp_path / "ds", "depth", "2020-01-02", first)
    _partition(tmp_path / "ds", "depth", "2020-01-03", second)
    return tmp_path / "ds"


def test_attach_view_made_before_a_day_of_other_columns_reads_them_once_attached_again(con, tmp_path):
    """A view keeps the way of reading it was made with (the docs say so): a day converted
    later with more levels is read without them, one with fewer is DuckDB's schema mismatch
    error; attaching again reads their union."""
    ds = tmp_path / "ds"
    _partition(ds, "depth", "2020-01-02", _ONE_LEVEL)
    attach(con, ds)
    _partition(ds, "depth", "2020-01-03", _TWO_LEVELS)
    assert con.sql("SELECT * FROM depth").columns == ["seq", "bid_px_1", "ask_px_1", "date"]
    attach(con, ds)
    rel = con.sql("SELECT * FROM depth ORDER BY seq")
    assert rel.columns == ["seq", "bid_px_1", "bid_px_2", "ask_px_1", "ask_px_2", "date"]
    assert [r[:5] for r in rel.fetchall()] == [(1, 10, 9, 11, 12), (2, 20, None, 21, None)]
    wide = tmp_path / "wide"
    _partition(wide, "depth", "2020-01-02", _TWO_LEVELS)
    attach(con, wide, prefix="w_")
    _partition(wide, "depth", "2020-01-03", _ONE_LEVEL)
    with pytest.raises(duckdb.Error, match="schema mismatch"):
        con.sql("SELECT * FROM w_depth").fetchall()
    attach(con, wide, prefix="w_")
    assert con.execute("SELECT count(bid_px_2) FROM w_depth").fetchone() == (1,)


def test_scan_dataset_partitions_of_other_columns_reads_their_union_null_where_missing(mixed):
    df = scan_dataset(mixed, "depth").sort("seq").collect()
    assert df.columns == ["seq", "bid_px_1", "bid_px_2", "ask_px_1", "ask_px_2", "date"]
    assert df["bid_px_1"].to_list() == [10, 20]
    assert df["bid_px_2"].to_list() == [9, None] and df["ask_px_2"].to_list() == [12, None]


def test_attach_partitions_of_other_columns_view_reads_their_union_null_where_missing(con, mixed):
    attach(con, mixed)
    rel = con.sql("SELECT * FROM depth ORDER BY seq")
    assert rel.columns == ["seq", "bid_px_1", "bid_px_2", "ask_px_1", "ask_px_2", "date"]
    rows = rel.fetchall()
    assert [r[:5] for r in rows] == [(1, 10, 9, 11, 12), (2, 20, None, 21, None)]


def test_scan_dataset_and_attach_column_of_two_types_raise_obook_error_naming_partitions(con, tmp_path):
    ds = tmp_path / "ds"
    _partition(ds, "bbo", "2020-01-02", {"seq": [1], "px": [1]})
    _partition(ds, "bbo", "2020-01-03", {"seq": [2], "px": [1.5]})
    _partition(ds, "bbo", "2020-01-06", {"seq": [3], "px": [2.5]})
    for call in (lambda: scan_dataset(ds, "bbo"), lambda: attach(con, ds)):
        with pytest.raises(ObookError) as err:
            call()
        msg = str(err.value)
        assert "\n" not in msg and msg.startswith(f"{ds}: table 'bbo': ")
        assert "px is double in date=2020-01-03, date=2020-01-06, int64 in date=2020-01-02" in msg, msg
    assert "bbo" not in _views(con)

