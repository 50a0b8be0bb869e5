"""obook/dataset.py: attach's views never take the place of the user's own objects."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from obook.dataset import attach
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
