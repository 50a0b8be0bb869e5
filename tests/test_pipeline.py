"""Pipelines (obook.pipelines, ``obook pipeline``): day files → a Hive-partitioned dataset."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

import obook
from obook.dataset import attach, scan_dataset
from obook.gen.itch import write_itch
from obook.pipelines import EXAMPLE, PipelineError, load, run, status
from obook.pipelines import manifest
from pipeline_support import DAYS, TABLES, MESSAGES, dataset_tables, obook_cli, write_days, write_pipeline

DATES = sorted(DAYS.values())


@pytest.fixture()
def setup(tmp_path):
    files = write_days(tmp_path / "days")
    toml = write_pipeline(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds")
    return load(toml), files, tmp_path / "ds"


def _mtimes(dataset):
    return {f: f.stat().st_mtime_ns for f in dataset.glob("table=*/date=*/*.parquet")}


def test_pipeline_run_three_days_all_converted(setup):
    p, files, ds = setup
    summary = run(p)
    assert summary["converted"] == DATES and summary["failed"] == {} and summary["unchanged"] == 0
    parts = dataset_tables(ds)
    assert sorted(parts) == sorted((t, d) for t in TABLES for d in DATES)
    for date, feed in files.items():
        bbo, meta = parts[("bbo", date)]
        want = obook.bbo(feed, workers=1).read_all()
        assert bbo.drop_columns(["timestamp"]).to_pylist() == want.drop_columns(["timestamp"]).to_pylist()
        assert json.loads(meta)["session_date"] == date
    doc = manifest.read(ds)
    assert sorted(doc["days"]) == DATES and doc["failed"] == {}
    assert doc["days"]["2019-12-30"]["stats"]["records"] == MESSAGES
    assert not (ds / ".tmp").exists()


def test_pipeline_run_days_done_counts_every_day_to_the_total(setup):
    p, files, _ = setup
    data = files["2019-12-31"].read_bytes()
    files["2019-12-31"].write_bytes(data[:len(data) // 2 + 3])     # a failed day counts as finished
    calls = []
    summary = run(p, days_done=lambda finished, total: calls.append((finished, total)))
    assert len(summary["converted"]) == 2 and len(summary["failed"]) == 1
    assert calls[0] == (0, 3) and calls[-1] == (3, 3)
    assert [f for f, _ in calls] == sorted(f for f, _ in calls) and {t for _, t in calls} == {3}
    calls.clear()
    run(p, days_done=lambda finished, total: calls.append((finished, total)))   # only the failed day is left
    assert calls[0] == (0, 1) and calls[-1] == (1, 1)


def test_pipeline_rerun_converts_nothing(setup):
    p, _, ds = setup
    run(p)
    before = _mtimes(ds)
    summary = run(p)
    assert summary["converted"] == [] and summary["unchanged"] == 3
    assert _mtimes(ds) == before
    assert status(p)["counts"] == {"done": 3, "pending": 0, "failed": 0, "invalid": 0}


def test_pipeline_changed_day_only_that_day_redone(setup):
    p, files, ds = setup
    run(p)
    before = _mtimes(ds)
    write_itch(files["2019-12-31"], MESSAGES, 10, seed=99)
    st = {d["date"]: d for d in status(p)["days"]}
    assert (st["2019-12-31"]["state"], st["2019-12-31"]["reason"]) == ("pending", "changed")
    assert run(p)["converted"] == ["2019-12-31"]
    after = _mtimes(ds)
    changed = {f.parent.name for f in after if after[f] != before[f]}
    assert changed == {"date=2019-12-31"}
    bbo = pq.read_table(ds / "table=bbo/date=2019-12-31/part-0.parquet")
    want = obook.bbo(files["2019-12-31"], workers=1).read_all()
    assert bbo.drop_columns(["timestamp"]).to_pylist() == want.drop_columns(["timestamp"]).to_pylist()


def test_pipeline_truncated_day_fails_others_complete_exit_1(setup, tmp_path):
    p, files, ds = setup
    data = files["2019-12-31"].read_bytes()
    files["2019-12-31"].write_bytes(data[:len(data) // 2 + 3])
    res = obook_cli("pipeline", "run", p.path, "--json")
    assert res.returncode == 1, res.stderr
    summary = json.loads(res.stdout)
    assert summary["converted"] == ["2019-12-30", "2020-01-02"]
    assert list(summary["failed"]) == ["2019-12-31"]
    assert "failed: 2019-12-31" in res.stderr and "12312019.NASDAQ_ITCH50" in res.stderr
    assert not list(ds.glob("table=*/date=2019-12-31"))
    st = obook_cli("pipeline", "status", p.path, "--json")
    assert st.returncode == 1                    # a failed day: status says so in its exit code too
    states = {d["date"]: d["state"] for d in json.loads(st.stdout)["days"]}
    assert states == {"2019-12-30": "done", "2019-12-31": "failed", "2020-01-02": "done"}
    # retries = 1, but a feed error is the file's, not the machine's: retrying gives it again
    assert manifest.read(ds)["failed"]["2019-12-31"]["attempts"] == 1
    text = obook_cli("pipeline", "status", p.path).stdout
    assert "2019-12-31  failed" in text and "2 done, 0 pending, 1 failed" in text


def test_pipeline_two_runs_at_once_each_day_once(setup):
    p, _, ds = setup
    procs = [subprocess.Popen([sys.executable, "-m", "obook", "pipeline", "run", str(p.path), "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [o[1] for o in outs]
    converted = [json.loads(o[0])["converted"] for o in outs]
    assert sorted(converted[0] + converted[1]) == DATES      # every day converted by exactly one run
    assert sorted(manifest.read(ds)["days"]) == DATES
    assert len(dataset_tables(ds)) == len(TABLES) * 3
    assert sorted(os.listdir(ds)) == [".lock", "_manifest.json"] + [f"table={t}" for t in sorted(TABLES)]


def test_pipeline_lock_held_times_out(setup):
    p, _, ds = setup
    with manifest.locked(ds):
        res = obook_cli("pipeline", "run", p.path, "--lock-timeout", "0.5")
    assert res.returncode == 1 and "another pipeline run holds" in res.stderr


def test_attach_query_one_date_reads_one_partition(setup):
    p, _, ds = setup
    run(p)
    con = duckdb.connect()
    assert attach(con, ds) == sorted(TABLES)
    q = "SELECT count(*) FROM bbo WHERE date = DATE '2019-12-30'"
    n = con.execute(q).fetchone()[0]
    assert n == pq.read_metadata(ds / "table=bbo/date=2019-12-30/part-0.parquet").num_rows
    plan = "\n".join(row[-1] for row in con.execute("EXPLAIN ANALYZE SELECT sum(bid_qty) FROM bbo "
                                                     "WHERE date = DATE '2019-12-30'").fetchall())
    assert "Total Files Read: 1" in plan and "date=2019-12-31" not in plan
    # the other dates' files made unreadable: only a pruned scan still works
    for date in DATES[1:]:
        (ds / f"table=bbo/date={date}/part-0.parquet").write_bytes(b"not parquet")
    assert con.execute(q).fetchone()[0] == n
    with pytest.raises(duckdb.Error):
        con.execute("SELECT count(*) FROM bbo").fetchall()
    assert con.execute("SELECT count(DISTINCT date) FROM symbols").fetchone()[0] == 3


def test_scan_dataset_date_filter_skips_other_partitions(setup):
    import datetime as dt

    p, _, ds = setup
    run(p)
    lf = scan_dataset(ds, "bbo")
    assert lf.collect_schema()["date"] == pl.Date and "table" not in lf.collect_schema()
    n = lf.filter(pl.col("date") == dt.date(2020, 1, 2)).select(pl.len()).collect().item()
    for date in DATES[:2]:
        (ds / f"table=bbo/date={date}/part-0.parquet").write_bytes(b"not parquet")
    assert lf.filter(pl.col("date") == dt.date(2020, 1, 2)).select(pl.len()).collect().item() == n > 0


def test_pipeline_load_example_and_bad_key(tmp_path):
    ex = load(EXAMPLE)
    assert ex.executor == "local" and ex.tables == tuple(TABLES)
    bad = tmp_path / "bad.toml"
    bad.write_text('[source]\ndirectory = "x"\n[dataset]\npath = "y"\n[run]\nexecutor = "yarn"\n')
    with pytest.raises(PipelineError, match="executor must be"):
        load(bad)
    bad.write_text('[source]\ndirectory = "x"\ncolour = 1\n')
    with pytest.raises(PipelineError, match="unknown key 'colour'"):
        load(bad)


# ---------------------------------------------------------------- hostile paths

@pytest.mark.parametrize("name", ["ds*x", "ds?x", "ds[O]x"])
def test_attach_and_scan_dataset_glob_characters_in_path_read_only_that_dataset(tmp_path, name):
    import pyarrow as pa

    for ds, value in ((name, 1), ("dsOx", 2), ("dsOLDx", 3)):
        part = tmp_path / ds / "table=bbo" / "date=2020-01-02"
        part.mkdir(parents=True)
        pq.write_table(pa.table({"seq": [value]}), part / "part-0.parquet")
    con = duckdb.connect()
    try:
        assert attach(con, tmp_path / name) == ["bbo"]
        assert con.execute("SELECT seq FROM bbo").fetchall() == [(1,)]
    finally:
        con.close()
    assert scan_dataset(tmp_path / name).select("seq").collect()["seq"].to_list() == [1]


# ---------------------------------------------------------------- hostile definitions

@pytest.mark.parametrize("pattern", ["/tmp/*.NASDAQ_ITCH50*", "../outside/*", "a/../../*"])
def test_pipeline_load_glob_outside_source_directory_is_pipeline_error(tmp_path, pattern):
    toml = write_pipeline(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds")
    toml.write_text(toml.read_text().replace('glob = "*.NASDAQ_ITCH50*"', f'glob = "{pattern}"'))
    with pytest.raises(PipelineError, match="glob"):
        load(toml)


def test_pipeline_day_name_with_trailing_newline_is_not_a_day(setup):
    p, files, ds = setup
    (p.source_dir / "01062020.NASDAQ_ITCH50\n").write_bytes(files["2019-12-30"].read_bytes())
    states = {d["file"]: (d["date"], d["state"]) for d in status(p)["days"]}
    assert states[str(p.source_dir / "01062020.NASDAQ_ITCH50\n")] == (None, "invalid")


def test_pipeline_day_without_a_date_is_invalid_reason_names_the_accepted_names(setup):
    from obook.gen.csv import write_csv

    p, files, ds = setup
    (p.source_dir / "day.NASDAQ_ITCH50").write_bytes(files["2019-12-30"].read_bytes())
    write_csv(p.source_dir / "x_20200106.NASDAQ_ITCH50", 3000, 3, seed=2)
    states = {Path(d["file"]).name: (d["date"], d["state"], d["reason"]) for d in status(p)["days"]}
    date, state, reason = states["day.NASDAQ_ITCH50"]
    assert (date, state) == (None, "invalid")
    assert all(form in reason for form in ("MMDDYYYY.NASDAQ_ITCH50", "YYYYMMDD", "YYYY-MM-DD")), reason
    assert states["x_20200106.NASDAQ_ITCH50"][0] == "2020-01-06"     # a CSV feed: a form the reason names


def test_pipeline_itch_day_iso_date_in_name_is_invalid_as_the_tables_read_no_date(setup):
    p, files, ds = setup
    (p.source_dir / "x_20200106.NASDAQ_ITCH50").write_bytes(files["2019-12-30"].read_bytes())
    states = {Path(d["file"]).name: (d["date"], d["state"]) for d in status(p)["days"]}
    assert states["x_20200106.NASDAQ_ITCH50"] == (None, "invalid")


def test_pipeline_itch_day_after_a_csv_day_is_invalid_reason_reads_its_format_is_itch(setup):
    from obook.gen.csv import write_csv

    p, files, ds = setup
    write_csv(p.source_dir / "20190101.NASDAQ_ITCH50", 3000, 3, seed=2)
    states = {Path(d["file"]).name: (d["state"], d["reason"]) for d in status(p)["days"]}
    assert states[Path(files[DATES[0]]).name] == (
        "invalid", "its format is itch, but 20190101.NASDAQ_ITCH50's is csv: a dataset holds one format's "
                   "tables (their units differ); give this one its own pipeline")


def test_pipeline_day_of_another_format_is_invalid_the_rest_run(setup):
    from obook.gen.csv import write_csv
    from obook.gen.pitch import write_pitch

    p, files, ds = setup
    write_pitch(p.source_dir / "20200107.NASDAQ_ITCH50", 3000, 3, seed=2)
    write_csv(p.source_dir / "20200108.NASDAQ_ITCH50", 3000, 3, seed=2)
    states = {Path(d["file"]).name: (d["state"], d["reason"]) for d in status(p)["days"]}
    first = Path(files[DATES[0]]).name
    for name, fmt in (("20200107.NASDAQ_ITCH50", "pitch"), ("20200108.NASDAQ_ITCH50", "csv")):
        assert states[name] == ("invalid", f"its format is {fmt}, but {first}'s is itch: a dataset holds one "
                                           "format's tables (their units differ); give this one its own pipeline")
    run(p)
    st = status(p)
    assert st["counts"]["done"] == len(files) and st["counts"]["invalid"] == 2
    assert not list(ds.glob("table=*/date=2020-01-0[78]"))


def test_pipeline_day_with_a_date_no_timestamp_holds_is_invalid_the_rest_run(setup):
    p, files, ds = setup
    (p.source_dir / "01011600.NASDAQ_ITCH50").write_bytes(files["2019-12-30"].read_bytes())
    states = {Path(d["file"]).name: (d["date"], d["state"], d["reason"]) for d in status(p)["days"]}
    date, state, reason = states["01011600.NASDAQ_ITCH50"]
    assert (date, state) == (None, "invalid") and "1600-01-01 is outside" in reason
    summary = run(p)
    assert status(p)["counts"]["done"] == len(files) and summary is not None


def test_pipeline_days_in_their_own_processes_log_their_warnings_here(setup, caplog):
    p, files, ds = setup
    assert p.days_at_once == 2
    toml = p.path
    toml.write_text(toml.read_text().replace("workers = 1", 'workers = 1\ntickers = ["NOPE"]'))
    with caplog.at_level("WARNING", logger="obook"):
        run(load(toml))
    warned = [r.getMessage() for r in caplog.records if "not in the feed: NOPE" in r.getMessage()]
    assert len(warned) == len(files), caplog.text


def test_pipeline_day_whose_second_table_cannot_be_placed_moves_none(setup):
    p, files, ds = setup
    run(p)
    date = sorted(files)[0]
    before = {f: f.read_bytes() for f in ds.glob(f"table=*/date={date}/*.parquet")}
    files[date].write_bytes(files[sorted(files)[1]].read_bytes())             # the day's file changed
    blocked = ds / f"table={p.tables[1]}" / f"date={date}"
    for f in blocked.iterdir():
        f.unlink()
    blocked.rmdir()
    blocked.write_text("in the way")
    run(p)
    assert {f: f.read_bytes() for f in ds.glob(f"table=*/date={date}/*.parquet")} == \
        {f: b for f, b in before.items() if f.parent != blocked}              # nothing moved
    assert status(p)["counts"]["failed"] == 1


def test_pipeline_failed_day_reason_names_its_file_once(setup):
    p, files, ds = setup
    date = sorted(files)[0]
    data = files[date].read_bytes()
    files[date].write_bytes(data[: len(data) // 2 + 1])
    run(p)
    reason = next(d["reason"] for d in status(p)["days"] if d["date"] == date)
    assert reason.count(files[date].name) == 1 and "truncated" in reason, reason


def test_pipeline_fewer_tables_removes_the_dropped_tables_partitions(setup, tmp_path):
    p, files, ds = setup
    run(p)
    toml = p.path
    toml.write_text(toml.read_text().replace(f"tables = {json.dumps(TABLES)}", 'tables = ["bbo"]'))
    summary = run(load(toml))
    assert summary["converted"] == DATES and summary["failed"] == {}
    assert sorted({t for t, _ in dataset_tables(ds)}) == ["bbo"]
    con = duckdb.connect()
    try:
        assert attach(con, ds) == ["bbo"]
    finally:
        con.close()


# ---------------------------------------------------------------- empty days

@pytest.mark.parametrize("content, reason", [(b"", "empty file"),
                                             (gzip.compress(b""), "empty file once decompressed")],
                         ids=["zero-bytes", "gzip-of-nothing"])
def test_pipeline_empty_day_file_is_invalid_not_done_and_converted_once_replaced(setup, content, reason):
    p, files, ds = setup
    date = "2019-12-31"
    real = files[date].read_bytes()
    files[date].write_bytes(content)
    summary = run(p)
    assert summary["converted"] == ["2019-12-30", "2020-01-02"] and summary["failed"] == {}
    assert summary["invalid"] == {str(p.source_dir / files[date].name): reason}
    assert not list(ds.glob(f"table=*/date={date}")) and date not in manifest.read(ds)["days"]
    day = next(d for d in status(p)["days"] if d["date"] == date)
    assert (day["state"], day["reason"], day["previous"]) == ("invalid", reason, None)
    files[date].write_bytes(real)
    assert run(p)["converted"] == [date]
    assert status(p)["counts"] == {"done": 3, "pending": 0, "failed": 0, "invalid": 0}


def test_cli_pipeline_run_empty_day_file_exit_1_names_the_file_and_reason(setup):
    p, files, ds = setup
    files["2019-12-31"].write_bytes(b"")
    res = obook_cli("pipeline", "run", p.path)
    assert res.returncode == 1, res.stderr
    assert f"invalid: {p.source_dir / files['2019-12-31'].name}: empty file\n" in res.stderr
    assert "2 converted, 0 unchanged, 0 failed, 1 invalid" in res.stderr


def test_convert_day_empty_file_raises_feed_failure_writes_nothing(tmp_path):
    from obook.pipelines.run import DayFeedFailed, convert_day

    feed = tmp_path / "12312019.NASDAQ_ITCH50"
    feed.write_bytes(b"")
    spec = {"file": str(feed), "date": "2019-12-31", "dataset": str(tmp_path / "ds"), "tables": ["bbo"],
            "workers": 1, "on_error": "raise", "options": {"tables": ["bbo"], "on_error": "raise"}}
    with pytest.raises(DayFeedFailed, match=f"{feed.name}: empty file"):
        convert_day(spec)
    assert not list((tmp_path / "ds").glob("table=*"))


# ---------------------------------------------------------------- what a failed day leaves

def test_pipeline_changed_day_that_fails_keeps_previous_partitions_and_says_so(setup, caplog):
    p, files, ds = setup
    run(p)
    date = "2019-12-31"
    before = {f: f.read_bytes() for f in ds.glob(f"table=*/date={date}/*.parquet")}
    old = manifest.read(ds)["days"][date]
    data = files[date].read_bytes()
    files[date].write_bytes(data[: len(data) // 2 + 3])          # changed, and its conversion fails
    with caplog.at_level("WARNING", logger="obook"):
        summary = run(p)
    assert list(summary["failed"]) == [date]
    kept = summary["previous_partitions"][date]
    assert (kept["changed"], kept["size"], kept["sha256"], kept["completed_at"]) == \
        ("source", old["size"], old["sha256"], old["completed_at"])
    assert {f: f.read_bytes() for f in ds.glob(f"table=*/date={date}/*.parquet")} == before
    doc = manifest.read(ds)
    assert doc["days"][date] == old and doc["failed"][date]["sha256"] != old["sha256"]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(m.startswith(f"{date}: ") and "previous source" in m and old["sha256"][:12] in m
               for m in warned), warned
    day = next(d for d in status(p)["days"] if d["date"] == date)
    assert day["state"] == "failed" and day["previous"]["sha256"] == old["sha256"]
    text = obook_cli("pipeline", "status", p.path).stdout
    line = next(x for x in text.splitlines() if x.startswith(date))
    assert "failed" in line and "truncated" in line and "partitions from its previous source" in line, text
    res = obook_cli("pipeline", "run", p.path)
    line = next(x for x in res.stderr.splitlines() if x.startswith(f"failed: {date}: "))
    assert res.returncode == 1 and "partitions from its previous source" in line, res.stderr


def test_pipeline_fewer_tables_and_a_failing_day_warns_naming_the_leftover_partitions(setup, caplog):
    p, files, ds = setup
    run(p)
    date = "2019-12-31"
    data = files[date].read_bytes()
    files[date].write_bytes(data[: len(data) // 2 + 3])
    toml = p.path
    toml.write_text(toml.read_text().replace(f"tables = {json.dumps(TABLES)}", 'tables = ["bbo"]'))
    lines = []
    with caplog.at_level("WARNING", logger="obook"):
        summary = run(load(toml), progress=lines.append)
    dropped = sorted(t for t in TABLES if t != "bbo")
    left = [f"table={t}/date={date}" for t in dropped]
    assert summary["dropped_table_partitions"] == left
    assert sorted(dataset_tables(ds)) == sorted([("bbo", d) for d in DATES] + [(t, date) for t in dropped])
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    for t in dropped:
        assert any(f"table={t}: 1 partition(s)" in m and f"date={date}" in m for m in warned), warned
    assert summary["previous_partitions"][date]["changed"] == "source"
    removed = f"removed its partitions of {', '.join(dropped)}"
    assert sum(removed in line for line in lines) == 2, lines          # the two days converted again
    assert status(load(toml))["dropped_table_partitions"] == left


@pytest.mark.parametrize("dataset", [5, None, ""])
def test_dataset_not_a_path_raises_obook_error(dataset):
    from obook.dataset import attach, scan_dataset, tables

    for call in (lambda: tables(dataset), lambda: scan_dataset(dataset), lambda: attach(None, dataset)):
        with pytest.raises(obook.ObookError, match="a dataset is a folder's path"):
            call()


def test_pipeline_rerun_unchanged_days_not_hashed_again_rewritten_one_is(setup, monkeypatch):
    import importlib
    import os

    from obook.to_parquet import file_digest

    p, files, ds = setup
    run(p)
    hashed = []
    module = importlib.import_module("obook.pipelines.run")
    monkeypatch.setattr(module, "file_digest", lambda f: hashed.append(f.name) or file_digest(f))
    assert run(p)["unchanged"] == 3 and hashed == []            # a nightly run over a year of days: no re-read
    day = files["2019-12-31"]
    st = os.stat(day)
    day.write_bytes(day.read_bytes()[::-1])                  # same size, other bytes, the same mtime put back
    os.utime(day, ns=(st.st_atime_ns, st.st_mtime_ns))
    st = status(p)
    assert st["counts"]["pending"] == 1 and hashed == [day.name], (st, hashed)
