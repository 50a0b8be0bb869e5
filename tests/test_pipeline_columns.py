"""Pipelines: a table whose partitions have other columns (the depth levels changed while
an earlier day's file is gone): the run and status say so, the readers read the union."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import polars as pl
import pytest

import obook.dataset
from obook.dataset import attach, scan_dataset
from obook.pipelines import load, manifest, run, status
from pipeline_support import obook_cli, write_days

GONE, KEPT = "2019-12-30", ["2019-12-31", "2020-01-02"]


def _toml(path, days, dataset, levels: int):
    path.write_text(f"""
[source]
directory = "{days}"
glob = "*.NASDAQ_ITCH50*"

[convert]
tables = ["depth"]
workers = 1
levels = {levels}

[dataset]
path = "{dataset}"
""")
    return path


@pytest.fixture()
def levels_changed(tmp_path, caplog):
    """Days converted with 3 levels; one day's file removed; the others converted with 2."""
    files = write_days(tmp_path / "days")
    toml = _toml(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds", 3)
    run(load(toml))
    files[GONE].unlink()
    _toml(toml, tmp_path / "days", tmp_path / "ds", 2)
    with caplog.at_level("WARNING", logger="obook"):
        summary = run(load(toml))
    assert summary["converted"] == KEPT
    return toml, tmp_path / "ds", summary, [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]


_LEVEL_3 = ["bid_px_3", "bid_qty_3", "bid_orders_3", "ask_px_3", "ask_qty_3", "ask_orders_3"]


def test_pipeline_run_and_status_partitions_of_other_columns_named(levels_changed):
    toml, ds, summary, warned = levels_changed
    want = {"depth": [{"partitions": [f"date={d}" for d in KEPT], "lacks": _LEVEL_3}]}
    assert summary["mixed_columns"] == want
    assert status(load(toml))["mixed_columns"] == want
    line = next(m for m in warned if "table=depth" in m)
    assert f"date={KEPT[0]}, date={KEPT[1]} lack bid_px_3, bid_qty_3" in line, line
    assert str(ds / "table=depth") in line and "NULL" in line
    text = obook_cli("pipeline", "status", toml)
    assert text.returncode == 0 and f"date={KEPT[0]}, date={KEPT[1]} lack bid_px_3" in text.stdout, text.stdout
    st = json.loads(obook_cli("pipeline", "status", toml, "--json").stdout)
    assert st["mixed_columns"] == want


def test_pipeline_levels_changed_readers_see_union_null_where_missing(levels_changed):
    _, ds, _, _ = levels_changed
    lf = scan_dataset(ds, "depth")
    assert set(_LEVEL_3) <= set(lf.collect_schema().names())
    per_day = (lf.group_by("date").agg(pl.col("bid_px_3").is_not_null().sum().alias("n"), pl.len())
               .sort("date").collect())
    assert per_day["n"][0] > 0 and per_day["n"][1:].to_list() == [0, 0]
    one_day = lf.filter(pl.col("date") == dt.date(2020, 1, 2)).select(pl.len()).collect().item()
    con = duckdb.connect()
    try:
        attach(con, ds)
        rows = con.execute("SELECT date::VARCHAR, count(bid_px_3) > 0 FROM depth GROUP BY ALL ORDER BY 1").fetchall()
        assert rows == [(GONE, True), (KEPT[0], False), (KEPT[1], False)]
        plan = "\n".join(r[-1] for r in con.execute("EXPLAIN ANALYZE SELECT sum(bid_qty_1) FROM depth "
                                                    f"WHERE date = DATE '{KEPT[1]}'").fetchall())
        assert "Total Files Read: 1" in plan
    finally:
        con.close()
    for date in (GONE, KEPT[0]):    # the other dates' data made unreadable: a pruned scan still works
        path = ds / "table=depth" / f"date={date}" / "part-0.parquet"
        path.write_bytes(path.read_bytes()[:4] + b"\0" * (path.stat().st_size - 4))
    assert lf.filter(pl.col("date") == dt.date(2020, 1, 2)).select(pl.len()).collect().item() == one_day > 0


def test_pipeline_manifest_records_columns_readers_read_no_footer_of_a_uniform_table(tmp_path, monkeypatch):
    write_days(tmp_path / "days")
    toml = _toml(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds", 2)
    run(load(toml))
    days = manifest.read(tmp_path / "ds")["days"]
    assert len({rec["layouts"]["depth"]["columns"] for rec in days.values()}) == 1
    monkeypatch.setattr(obook.dataset, "_footer", lambda path: pytest.fail(f"read the footer of {path}"))
    lf = scan_dataset(tmp_path / "ds", "depth")
    assert lf.filter(pl.col("date") == dt.date(2020, 1, 2)).select(pl.len()).collect().item() > 0
    con = duckdb.connect()
    try:
        attach(con, tmp_path / "ds")
    finally:
        con.close()


def test_pipeline_run_days_recorded_without_columns_get_them_recorded(tmp_path, monkeypatch):
    write_days(tmp_path / "days")
    toml = _toml(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds", 2)
    run(load(toml))
    doc = manifest.read(tmp_path / "ds")
    want = {date: rec.pop("layouts") for date, rec in doc["days"].items()}   # as an earlier obook recorded them
    manifest.write(tmp_path / "ds", doc)
    assert run(load(toml))["converted"] == []
    assert {date: rec["layouts"] for date, rec in manifest.read(tmp_path / "ds")["days"].items()} == want
    monkeypatch.setattr(obook.dataset, "_footer", lambda path: pytest.fail(f"read the footer of {path}"))
    assert scan_dataset(tmp_path / "ds", "depth").select(pl.len()).collect().item() > 0
