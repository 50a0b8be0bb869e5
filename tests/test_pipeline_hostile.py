"""Hostile pipeline definitions: a binary TOML, a dataset path that is a file or a place no
lock file can be made: one ``error:`` line, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_support import cli_error

TOML = """[source]
directory = "."
glob = "*.NASDAQ_ITCH50*"
[convert]
tables = ["bbo"]
[dataset]
path = "{dataset}"
"""


def test_cli_pipeline_binary_toml_one_line_error(tmp_path, capsys):
    p = tmp_path / "p.toml"
    p.write_bytes(bytes(range(256)) * 4)
    for command in ("run", "status"):
        assert "not valid TOML: not UTF-8 text" in cli_error(capsys, "pipeline", command, p)


def test_cli_pipeline_dataset_path_is_a_file_one_line_error(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="afile"))
    for command in ("run", "status"):
        assert "is a file, not a directory" in cli_error(capsys, "pipeline", command, p)


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="no /proc")
def test_cli_pipeline_dataset_in_proc_one_line_error(tmp_path, capsys):
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="/proc/self"))
    assert "cannot hold the dataset's lock" in cli_error(capsys, "pipeline", "run", p)


@pytest.mark.parametrize("key, value, says", [("[convert]\ntables", "5", "tables must be a list"),
                                              ("[run]\ndask_resources", '"x"', "dask_resources must be a table"),
                                              ("[run]\ndask_resources", "5", "dask_resources must be a table"),
                                              ("[run]\ndask_resources", "{ memory = -8e9 }",
                                               "dask_resources: memory must be an amount of 0 or more, not -8000000000.0"),
                                              ("[run]\ndask_resources", "{ GPU = nan }",
                                               "dask_resources: GPU must be an amount of 0 or more, not nan")])
def test_cli_pipeline_value_of_the_wrong_type_one_line_error(tmp_path, capsys, key, value, says):
    p = tmp_path / "p.toml"
    text = TOML.format(dataset="ds")
    section, name = key.split("\n")
    if section == "[convert]":
        text = text.replace('tables = ["bbo"]', f"{name} = {value}")
    else:
        text += f"{section}\n{name} = {value}\n"
    p.write_text(text)
    assert says in cli_error(capsys, "pipeline", "status", p)


@pytest.mark.parametrize("manifest", ["[]", '{"days": []}', '{"days": null}', '{"days": {"2019-12-30": 5}}'])
def test_cli_pipeline_damaged_manifest_one_line_error(tmp_path, capsys, manifest):
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds"))
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "_manifest.json").write_text(manifest)
    for command in ("run", "status"):
        assert "cannot read the manifest" in cli_error(capsys, "pipeline", command, p)


def test_cli_pipeline_interrupted_with_days_at_once_exits_promptly_leaves_no_process(tmp_path):
    import os
    import signal
    import subprocess
    import time

    import psutil

    proc, _, _ = _converting_run(tmp_path, retries=0, workers=2)
    time.sleep(0.5)                         # their book workers started
    kids = psutil.Process(proc.pid).children(recursive=True)
    os.kill(proc.pid, signal.SIGINT)
    try:
        code = proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the interrupted run did not end") from None
    err = proc.stderr.read()
    assert code == 130 and "Traceback" not in err, err
    gone, alive = psutil.wait_procs(kids, timeout=10)
    assert not alive, alive


@pytest.mark.parametrize("change, says", [
    (("[convert]", "workers = true"), "workers must be a positive integer"),
    (("[run]", 'executor = "dask://"'), "executor must be"),
    (("[source]", "glob = 5"), "glob must be text"),
    (("[convert]", "workers = 65"), "[convert] workers must be from 1 to 64"),
    (("[convert]", 'tickers = ["AAPL", " "]'), "[convert] tickers must be a list of tickers"),
    (("[run]", "days_at_once = 65"), "[run] days_at_once must be from 1 to 64, not 65"),
    (("[run]", "retries = 1000000000"), "[run] retries must be from 0 to 100, not 1000000000"),
    (("[run]", "retries = -1"), "[run] retries must be a non-negative integer"),
    (("[dataset]", 'path = ""'), "[dataset] path is empty"),
    (("[source]", 'directory = " "'), "[source] directory is empty"),
])
def test_cli_pipeline_loose_values_one_line_error(tmp_path, capsys, change, says):
    section, line = change
    p = tmp_path / "p.toml"
    text = TOML.format(dataset="ds")
    if section in text:
        key = line.split(" = ")[0]
        text = "\n".join(x for x in text.splitlines() if not x.startswith(key + " ")) + "\n"
        text = text.replace(section + "\n", f"{section}\n{line}\n")
    else:
        text += f"{section}\n{line}\n"
    p.write_text(text)
    assert says in cli_error(capsys, "pipeline", "status", p)


@pytest.mark.parametrize("name", ["../x.toml", "{tmp}/abs.toml", "sub/x.toml", "..", ".", ""])
def test_cli_pipeline_init_name_with_a_directory_one_line_error_nothing_written(tmp_path, capsys, name):
    days = tmp_path / "a" / "days"
    err = cli_error(capsys, "pipeline", "init", days, "--name", name.format(tmp=tmp_path))
    assert "--name" in err and "give a file name" in err
    assert [f for f in tmp_path.rglob("*") if not f.is_dir()] == []


def test_cli_pipeline_init_name_a_dangling_symlink_is_not_written_through(tmp_path, capsys):
    days = tmp_path / "days"
    days.mkdir()
    (days / "p.toml").symlink_to(tmp_path / "elsewhere.toml")
    assert "exists already" in cli_error(capsys, "pipeline", "init", days, "--name", "p.toml")
    assert not (tmp_path / "elsewhere.toml").exists()


def test_cli_pipeline_run_missing_source_directory_one_line_error_makes_no_dataset(tmp_path, capsys):
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "nope"'))
    assert "source directory does not exist" in cli_error(capsys, "pipeline", "run", p)
    assert not (tmp_path / "ds").exists()


def test_pipeline_run_interrupted_mid_day_leaves_no_temp_folder_and_records_nothing(tmp_path, monkeypatch):
    import importlib

    from obook.pipelines import load, run
    from pipeline_support import write_days

    write_days(tmp_path / "days")
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "days"'))

    def interrupted(source, outdir, **kwargs):     # Ctrl-C while a day's tables are being written
        Path(outdir).mkdir(parents=True)
        (Path(outdir) / "bbo.parquet").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module("obook.pipelines.run"), "convert", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(load(p))
    ds = tmp_path / "ds"
    assert sorted(x.name for x in ds.iterdir()) == [".lock"]


@pytest.mark.parametrize("glob", [".", "./"])
def test_cli_pipeline_glob_naming_no_file_one_line_error(tmp_path, capsys, glob):
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('"*.NASDAQ_ITCH50*"', f'"{glob}"'))
    for command in ("run", "status"):
        assert "[source] glob must be a pattern inside the source directory" in cli_error(
            capsys, "pipeline", command, p)


def test_cli_pipeline_source_directory_a_file_one_line_error(tmp_path, capsys):
    (tmp_path / "days").write_text("x")
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "days"'))
    assert "source directory is not a directory" in cli_error(capsys, "pipeline", "run", p)
    assert not (tmp_path / "ds").exists()


def test_pipeline_run_dataset_a_folder_with_its_own_tmp_keeps_that_tmp(tmp_path):
    from obook.pipelines import load, run
    from pipeline_support import write_days

    write_days(tmp_path / "days")
    mine = tmp_path / "home" / ".tmp" / "notes"
    mine.mkdir(parents=True)
    (mine / "keep.txt").write_text("mine")
    stale = tmp_path / "home" / ".tmp" / "2019-12-30.123.0123abcd"      # a dead run's day folder
    stale.mkdir()
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="home").replace('directory = "."', 'directory = "days"'))
    summary = run(load(p))
    assert len(summary["converted"]) == 3
    assert (mine / "keep.txt").read_text() == "mine" and not stale.exists()


def test_pipeline_glob_reaching_the_dataset_and_definition_finds_only_days(tmp_path):
    from obook.pipelines import load, run, status
    from pipeline_support import write_days

    write_days(tmp_path)
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset=".").replace('"*.NASDAQ_ITCH50*"', '"**/*"'))
    first = run(load(p))
    assert len(first["converted"]) == 3 and first["invalid"] == {}
    st = status(load(p))
    assert st["counts"] == {"done": 3, "pending": 0, "failed": 0, "invalid": 0}


def test_pipeline_glob_matching_no_file_warns(tmp_path, caplog):
    from obook.pipelines import load, run

    (tmp_path / "days").mkdir()
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "days"'))
    with caplog.at_level("WARNING", logger="obook"):
        summary = run(load(p))
    assert summary["converted"] == [] and summary["unchanged"] == 0
    assert "no file matches the pipeline's glob '*.NASDAQ_ITCH50*'" in caplog.text


def _days_pipeline(tmp_path) -> Path:
    from pipeline_support import write_days

    write_days(tmp_path / "days")
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "days"'))
    return p


def _deny_reading(monkeypatch, denied: Path) -> None:
    """``open`` of ``denied`` fails as a file of mode 000 does (for any user but root)."""
    import builtins

    real = builtins.open

    def guarded(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file).resolve() == denied.resolve():
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)


def test_pipeline_unreadable_day_file_is_invalid_the_rest_run(tmp_path, monkeypatch, capsys):
    from obook.pipelines import load, run, status

    p = _days_pipeline(tmp_path)
    denied = tmp_path / "days" / "12312019.NASDAQ_ITCH50"
    _deny_reading(monkeypatch, denied)
    summary = run(load(p))
    assert summary["converted"] == ["2019-12-30", "2020-01-02"] and summary["failed"] == {}
    assert summary["invalid"] == {str(denied): "cannot read the file: Permission denied"}
    day = next(d for d in status(load(p))["days"] if d["date"] == "2019-12-31")
    assert (day["state"], day["reason"]) == ("invalid", "cannot read the file: Permission denied")
    code, err = __import__("cli_support").cli_run(capsys, "pipeline", "run", p)
    assert code == 1 and "Traceback" not in err, err
    assert f"invalid: {denied}: cannot read the file: Permission denied" in err


def test_pipeline_day_done_then_unreadable_keeps_its_partitions_and_says_so(tmp_path, monkeypatch):
    from obook.pipelines import load, run

    p = _days_pipeline(tmp_path)
    assert len(run(load(p))["converted"]) == 3
    denied = tmp_path / "days" / "12312019.NASDAQ_ITCH50"
    _deny_reading(monkeypatch, denied)
    summary = run(load(p))
    assert summary["invalid"] == {str(denied): "cannot read the file: Permission denied"}
    assert summary["previous_partitions"]["2019-12-31"]["source"] == denied.name
    assert (tmp_path / "ds" / "table=bbo" / "date=2019-12-31" / "part-0.parquet").is_file()


def test_pipeline_done_day_whose_partition_was_removed_is_converted_again(tmp_path):
    import shutil

    from obook.pipelines import load, run, status

    p = _days_pipeline(tmp_path)
    assert len(run(load(p))["converted"]) == 3
    gone = tmp_path / "ds" / "table=bbo" / "date=2019-12-31"
    shutil.rmtree(gone)
    day = next(d for d in status(load(p))["days"] if d["date"] == "2019-12-31")
    assert (day["state"], day["reason"]) == ("pending", "partitions missing from the dataset: bbo")
    assert run(load(p))["converted"] == ["2019-12-31"]
    assert (gone / "part-0.parquet").is_file()
    assert status(load(p))["counts"] == {"done": 3, "pending": 0, "failed": 0, "invalid": 0}


def _damaged(data: bytes, damage: str) -> bytes:
    """A Parquet file's bytes damaged: replaced, cut short, or its footer overwritten (the
    magic bytes at both ends kept)."""
    if damage == "junk":
        return b"not parquet at all"
    if damage == "cut":
        return data[: len(data) // 2]
    footer = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer
    return data[:start] + b"\x07" * footer + data[-8:]


@pytest.mark.parametrize("damage", ["junk", "cut", "footer"])
def test_pipeline_done_day_whose_partition_was_damaged_is_converted_again(tmp_path, damage):
    import pyarrow.parquet as pq

    from obook.pipelines import load, run, status

    p = _days_pipeline(tmp_path)
    assert len(run(load(p))["converted"]) == 3
    part = tmp_path / "ds" / "table=bbo" / "date=2019-12-31" / "part-0.parquet"
    whole = pq.read_table(part)
    part.write_bytes(_damaged(part.read_bytes(), damage))
    day = next(d for d in status(load(p))["days"] if d["date"] == "2019-12-31")
    assert (day["state"], day["reason"]) == ("pending", "partitions damaged in the dataset (not whole Parquet "
                                                        "files): bbo")
    assert run(load(p))["converted"] == ["2019-12-31"]
    assert pq.read_table(part).equals(whole)
    assert status(load(p))["counts"] == {"done": 3, "pending": 0, "failed": 0, "invalid": 0}


def test_pipeline_done_day_whose_partition_was_replaced_by_another_days_is_converted_again(tmp_path):
    import pyarrow.parquet as pq

    from obook.pipelines import load, run, status

    p = _days_pipeline(tmp_path)
    assert len(run(load(p))["converted"]) == 3
    bbo = tmp_path / "ds" / "table=bbo"
    part, other = (bbo / f"date={d}" / "part-0.parquet" for d in ("2019-12-31", "2019-12-30"))
    whole, wrong = pq.read_table(part), pq.read_table(other)
    assert whole.num_rows != wrong.num_rows
    part.write_bytes(other.read_bytes())
    day = next(d for d in status(load(p))["days"] if d["date"] == "2019-12-31")
    assert (day["state"], day["reason"]) == ("pending", "partitions changed in the dataset (not the rows written): bbo")
    assert run(load(p))["converted"] == ["2019-12-31"]
    assert pq.read_table(part).equals(whole)


def test_pipeline_table_its_days_format_lacks_one_line_error_nothing_converted(tmp_path, capsys):
    import datetime as dt

    from obook.gen.pitch import write_pitch

    days = tmp_path / "days"
    days.mkdir()
    for i in (6, 7):
        write_pitch(days / f"day{i}.pitch", 2000, 3, seed=i, date=dt.date(2020, 1, i))
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "days"')
                 .replace('"*.NASDAQ_ITCH50*"', '"*.pitch"').replace('["bbo"]', '["bbo", "symbols"]')
                 + "[run]\nretries = 3\n")
    err = cli_error(capsys, "pipeline", "run", p)
    assert "[convert] tables: pitch feeds have no table 'symbols'" in err and "(day6.pitch is of format pitch)" in err
    assert sorted(x.name for x in (tmp_path / "ds").iterdir()) == [".lock"]


def _vendor_days(tmp_path) -> Path:
    from obook.gen.szse import generate, write_vendor

    days = tmp_path / "days"
    write_vendor(days, generate(3000, 2, 0, None))     # an orders and a ticks file a security
    return days


_SEVERAL = ("a Shenzhen vendor CSV day is several files (an orders and a ticks file a security) read as "
            "one feed; a pipeline converts one file a day: convert such a day with obook convert FILES... OUTDIR")


def test_cli_pipeline_run_vendor_csv_days_one_line_error_nothing_converted(tmp_path, capsys):
    days = _vendor_days(tmp_path)
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "days"')
                 .replace('"*.NASDAQ_ITCH50*"', '"*.csv"') + "[run]\nretries = 3\n")
    first = sorted(days.glob("*.csv"))[0].name
    assert cli_error(capsys, "pipeline", "run", p) == f"error: {p}: {first}: {_SEVERAL}\n"
    assert sorted(x.name for x in (tmp_path / "ds").iterdir()) == [".lock"]


def test_cli_pipeline_init_vendor_csv_days_one_line_error_writes_nothing(tmp_path, capsys):
    days = _vendor_days(tmp_path)
    before = sorted(days.iterdir())
    assert cli_error(capsys, "pipeline", "init", days) == f"error: {days}: {_SEVERAL}\n"
    assert sorted(days.iterdir()) == before


@pytest.mark.parametrize("content, reason", [(b"", "empty file"), (__import__("gzip").compress(b"", mtime=0),
                                                                   "empty file once decompressed")],
                         ids=["plain", "gzip"])
def test_pipeline_empty_day_dated_by_its_records_invalid_as_empty_file(tmp_path, content, reason):
    import datetime as dt

    from obook.gen.pitch import write_pitch
    from obook.pipelines import load, run, status

    days = tmp_path / "days"
    days.mkdir()
    write_pitch(days / "day6.pitch", 2000, 3, seed=6, date=dt.date(2020, 1, 6))
    empty = days / "day7.pitch"       # a PITCH day's date is in its records: an empty one has none
    empty.write_bytes(content)
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "days"')
                 .replace('"*.NASDAQ_ITCH50*"', '"*.pitch"'))
    summary = run(load(p))
    assert summary["converted"] == ["2020-01-06"] and summary["invalid"] == {str(empty): reason}
    assert [d["reason"] for d in status(load(p))["days"] if d["state"] == "invalid"] == [reason]

def test_pipeline_day_no_format_recognises_fails_once_not_retried(tmp_path):
    from obook.pipelines import load, run

    p = _days_pipeline(tmp_path)
    p.write_text(p.read_text().replace('"*.NASDAQ_ITCH50*"', '"*"') + "[run]\nretries = 2\n")
    odd = tmp_path / "days" / "2020-01-13.zip"
    odd.write_bytes(b"PK\x03\x04 not a zip of a feed")
    summary = run(load(p))
    assert len(summary["converted"]) == 3
    assert "cannot tell the feed format; set format in the pipeline's [convert] (itch, " in summary["failed"]["2020-01-13"]
    assert "format=" not in summary["failed"]["2020-01-13"]
    failed = __import__("obook.pipelines.manifest", fromlist=["read"]).read(tmp_path / "ds")["failed"]
    assert failed["2020-01-13"]["attempts"] == 1


def test_pipeline_day_file_replaced_while_converted_records_nothing_then_converts_the_new_file(tmp_path, monkeypatch):
    import importlib
    import json

    from obook.gen.itch import write_itch
    from obook.pipelines import load, run

    p = _days_pipeline(tmp_path)
    day = tmp_path / "days" / "12302019.NASDAQ_ITCH50"
    module = importlib.import_module("obook.pipelines.run")
    real = module.convert

    def replaced_meanwhile(source, outdir, **kwargs):   # the replay read one file, then it is another
        result = real(source, outdir, **kwargs)
        if Path(source) == day:
            write_itch(tmp_path / "new", 500, 10, seed=7)
            (tmp_path / "new").replace(day)
        return result

    monkeypatch.setattr(module, "convert", replaced_meanwhile)
    summary = run(load(p))
    assert "changed while it was converted" in summary["failed"]["2019-12-30"]
    assert not list((tmp_path / "ds").glob("table=*/date=2019-12-30"))
    doc = json.loads((tmp_path / "ds" / "_manifest.json").read_text())
    assert "2019-12-30" not in doc["days"]

    monkeypatch.setattr(module, "convert", real)
    assert run(load(p))["converted"] == ["2019-12-30"]
    from obook.to_parquet import file_digest

    rec = json.loads((tmp_path / "ds" / "_manifest.json").read_text())["days"]["2019-12-30"]
    assert (rec["size"], rec["sha256"]) == file_digest(day)


def test_pipeline_day_whose_second_table_cannot_be_moved_keeps_all_its_previous_partitions(tmp_path, monkeypatch):
    import os

    from obook.pipelines import load, run

    p = _days_pipeline(tmp_path)
    p.write_text(p.read_text().replace('tables = ["bbo"]', 'tables = ["bbo", "trades"]'))
    assert run(load(p))["failed"] == {}
    ds = tmp_path / "ds"
    before = {f: f.read_bytes() for f in ds.glob("table=*/date=2019-12-30/part-0.parquet")}
    assert len(before) == 2
    p.write_text(p.read_text().replace('tables = ["bbo", "trades"]', 'tables = ["bbo", "trades"]\non_error = "skip"'))
    real = os.replace

    def refused(src, dst, *args, **kwargs):     # the trades folder refuses the new file
        if "table=trades" in str(dst) and "2019-12-30" in str(dst):
            raise PermissionError(1, "Operation not permitted", str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", refused)
    summary = run(load(p))
    monkeypatch.setattr(os, "replace", real)
    assert "Operation not permitted" in summary["failed"]["2019-12-30"]
    assert {f: f.read_bytes() for f in ds.glob("table=*/date=2019-12-30/part-0.parquet")} == before
    assert summary["previous_partitions"]["2019-12-30"]["changed"] == "options"


@pytest.mark.parametrize("manifest", ['{"days": {"2019-12-30": {"size": 5}}}',
                                      '{"days": {"2019-12-30": {"source": "x", "size": "5", "sha256": "ab"}}}',
                                      '{"failed": {"2019-12-30": {"source": "x", "error": "e"}}}'])
def test_cli_pipeline_manifest_day_record_missing_its_keys_one_line_error_naming_the_day(tmp_path, capsys,
                                                                                        manifest):
    from obook.gen.itch import write_itch

    write_itch(tmp_path / "12302019.NASDAQ_ITCH50", 100, 5)
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds"))
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "_manifest.json").write_text(manifest)
    for command in ("run", "status"):
        err = cli_error(capsys, "pipeline", command, p)
        assert "cannot read the manifest" in err and "2019-12-30" in err, err


def _converting_run(tmp_path, retries: int, workers: int = 1):
    """A ``pipeline run`` of three days, two at a time, in its own process, once two days
    are converting: (the process, the two day processes, the stderr read so far)."""
    import subprocess
    import sys
    import time

    import psutil

    from obook.gen.itch import write_itch

    days = tmp_path / "days"
    days.mkdir()
    for i in (1, 2, 3):
        write_itch(days / f"0{i}132021.NASDAQ_ITCH50", 400_000, 20, seed=i)
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset=tmp_path / "ds").replace('directory = "."', f'directory = "{days}"')
                 .replace('tables = ["bbo"]', f'tables = ["bbo", "trades", "depth"]\nworkers = {workers}')
                 + f"[run]\ndays_at_once = 2\nretries = {retries}\n")
    proc = subprocess.Popen([sys.executable, "-m", "obook", "pipeline", "run", str(p)], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    seen = ""
    while seen.count("converting") < 2:
        line = proc.stderr.readline()
        assert line, f"the run ended before converting two days: {seen}"
        seen += line
    server = next(c for c in psutil.Process(proc.pid).children() if "forkserver" in " ".join(c.cmdline()))
    while len(server.children()) < 2:       # the day processes, the forkserver's children
        time.sleep(0.01)
    return proc, server.children(), seen


def test_cli_pipeline_day_process_killed_days_retried_in_new_processes_run_completes(tmp_path):
    import signal

    from obook.pipelines import manifest

    proc, day_processes, seen = _converting_run(tmp_path, retries=1)
    day_processes[0].send_signal(signal.SIGKILL)    # the out-of-memory killer's way
    err = seen + proc.communicate(timeout=120)[1]
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "attempt 2 of 2" in err, err
    assert sorted(manifest.read(tmp_path / "ds")["days"]) == ["2021-01-13", "2021-02-13", "2021-03-13"]
    assert not (tmp_path / "ds" / ".tmp").exists()


def test_cli_pipeline_day_process_killed_no_retry_left_day_recorded_failed_saying_why(tmp_path):
    import signal

    from obook.pipelines import manifest

    proc, day_processes, seen = _converting_run(tmp_path, retries=0)
    day_processes[0].send_signal(signal.SIGKILL)
    err = seen + proc.communicate(timeout=120)[1]
    assert proc.returncode == 1 and "Traceback" not in err, err
    doc = manifest.read(tmp_path / "ds")
    assert len(doc["days"]) + len(doc["failed"]) == 3 and doc["failed"], doc
    assert all("process ended abruptly" in f["error"] for f in doc["failed"].values()), doc["failed"]


def test_cli_pipeline_run_killed_outright_its_day_processes_end_too(tmp_path):
    import psutil

    proc, day_processes, _ = _converting_run(tmp_path, retries=0)
    kids = psutil.Process(proc.pid).children(recursive=True)
    proc.kill()             # SIGKILL: no handler runs; the lock is free for the next run
    proc.wait()
    _, alive = psutil.wait_procs(kids, timeout=30)
    for left in alive:
        left.kill()
    assert not alive, alive


@pytest.mark.parametrize("timeout", ["5", -1, float("nan"), True])
def test_pipeline_run_lock_timeout_not_seconds_pipeline_error_before_the_lock(tmp_path, timeout):
    from obook.pipelines import load, run
    from obook.pipelines.config import PipelineError

    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds"))
    with pytest.raises(PipelineError) as e:
        run(load(p), lock_timeout=timeout)
    assert str(e.value) == f"lock_timeout must be a number of seconds >= 0 (or None: wait), not {timeout!r}"
    assert not (tmp_path / "ds").exists()


def test_pipeline_day_whose_write_fails_error_names_the_dataset_not_the_temp_folder_gone(tmp_path, monkeypatch):
    import importlib

    from obook.errors import OutputError
    from obook.pipelines import load, run
    from pipeline_support import write_days

    write_days(tmp_path / "days")
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="ds").replace('directory = "."', 'directory = "days"'))

    def full(source, outdir, **kwargs):             # the disk full as the day's tables are written
        raise OutputError(f"{outdir}: write failed: No space left on device")

    monkeypatch.setattr(importlib.import_module("obook.pipelines.run"), "convert", full)
    failed = run(load(p))["failed"]
    ds = (tmp_path / "ds").resolve()
    assert failed["2019-12-30"] == f"12302019.NASDAQ_ITCH50: {ds}: write failed: No space left on device"
