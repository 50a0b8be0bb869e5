"""Pipelines: levels and tickers in [convert], `obook pipeline init`, and
days_at_once honoured by the local executor (one process a day)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import obook
from obook.cli import app
from obook.pipelines import load, run
from obook.pipelines.config import PipelineError
from pipeline_support import DAYS, write_days


def _toml(path, days, dataset, convert_extra="", days_at_once=1):
    path.write_text(f"""
[source]
directory = "{days}"
glob = "*.NASDAQ_ITCH50*"

[convert]
tables = ["bbo", "depth"]
workers = 1
{convert_extra}

[dataset]
path = "{dataset}"

[run]
days_at_once = {days_at_once}
""")
    return path


def test_pipeline_levels_and_tickers_reach_convert(tmp_path):
    days = write_days(tmp_path / "days")
    first = next(iter(days.values()))
    ticker = obook.bbo(first, workers=1).read_all()["ticker"][0].as_py()
    p = load(_toml(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds",
                   f'levels = 3\ntickers = ["{ticker}"]', days_at_once=2))
    assert p.options() == {"tables": ["bbo", "depth"], "on_error": "raise", "levels": 3, "tickers": [ticker]}
    summary = run(p)
    assert sorted(summary["converted"]) == sorted(DAYS.values()) and not summary["failed"]
    for date, feed in days.items():
        depth = pq.read_table(tmp_path / "ds" / "table=depth" / f"date={date}" / "part-0.parquet")
        assert "bid_px_3" in depth.schema.names and "bid_px_4" not in depth.schema.names
        assert set(depth["ticker"].to_pylist()) <= {ticker}
        bbo = pq.read_table(tmp_path / "ds" / "table=bbo" / f"date={date}" / "part-0.parquet")
        expected = obook.bbo(feed, workers=1, date=date, tickers=[ticker]).read_all()
        assert bbo.select(expected.schema.names).equals(expected.replace_schema_metadata(bbo.schema.metadata))


@pytest.mark.parametrize("extra,needle", [("levels = 51", "levels"), ("levels = 0", "levels"),
                                          ("tickers = 5", "tickers"), ("tickers = []", "tickers")])
def test_pipeline_bad_levels_or_tickers_rejected(tmp_path, extra, needle):
    with pytest.raises(PipelineError, match=needle):
        load(_toml(tmp_path / "p.toml", tmp_path, tmp_path / "ds", extra))


def test_cli_pipeline_init_writes_loadable_starter_not_over_existing(tmp_path):
    r = CliRunner().invoke(app, ["pipeline", "init", str(tmp_path / "days")])
    assert r.exit_code == 0, r.output
    p = load(tmp_path / "days" / "obook-pipeline.toml")
    assert p.source_dir == (tmp_path / "days").resolve() and p.dataset == (tmp_path / "days" / "dataset").resolve()
    again = CliRunner().invoke(app, ["pipeline", "init", str(tmp_path / "days")])
    assert again.exit_code == 1 and "exists already" in str(again.exception)


def test_pipeline_format_reaches_convert_and_the_options(tmp_path):
    days = write_days(tmp_path / "days")
    p = load(_toml(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds", 'format = "itch"'))
    assert p.format == "itch" and p.options()["format"] == "itch"
    summary = run(p)
    assert sorted(summary["converted"]) == sorted(DAYS.values()) and not summary["failed"]
    date, feed = next(iter(days.items()))
    bbo = pq.read_table(tmp_path / "ds" / "table=bbo" / f"date={date}" / "part-0.parquet")
    assert bbo.num_rows == obook.bbo(feed, workers=1).read_all().num_rows
    assert 'options changed' in str(obook.pipelines.status(load(_toml(tmp_path / "p.toml", tmp_path / "days",
                                                                         tmp_path / "ds"))))


def test_pipeline_format_of_another_kind_reads_every_day_as_it(tmp_path):
    write_days(tmp_path / "days")       # ITCH days: as PITCH feeds, no Time Reference gives their date
    summary = run(load(_toml(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds", 'format = "pitch"')))
    assert not summary["converted"] and len(summary["invalid"]) == len(DAYS)
    assert all(reason.startswith("no session date") for reason in summary["invalid"].values())


def test_pipeline_format_that_dates_no_converted_day_invalid_keeps_its_partitions_not_file_gone(tmp_path):
    write_days(tmp_path / "days")
    assert sorted(run(load(_toml(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds")))["converted"]) \
        == sorted(DAYS.values())
    p = load(_toml(tmp_path / "p.toml", tmp_path / "days", tmp_path / "ds", 'format = "pitch"'))
    days = obook.pipelines.status(p)["days"]
    assert [(d["date"], d["state"]) for d in days] == [(date, "invalid") for date in sorted(DAYS.values())]
    assert all(d["reason"].startswith("no session date") and d["previous"]["changed"] == "options" for d in days)
    summary = run(p)
    assert summary["unchanged"] == 0 and len(summary["invalid"]) == len(DAYS)
    assert sorted(summary["previous_partitions"]) == sorted(DAYS.values())


def test_pipeline_unknown_format_rejected_naming_the_formats(tmp_path):
    with pytest.raises(PipelineError, match=r"\[convert\] format must be one of itch, .*pitch.*, not 'nasdaq'"):
        load(_toml(tmp_path / "p.toml", tmp_path, tmp_path / "ds", 'format = "nasdaq"'))


@pytest.mark.parametrize("extra, fmt, on_error", [('format = "ITCH"', "itch", "raise"), ('format = ""', None, "raise"),
                                                  ('on_error = "Skip"', None, "skip")])
def test_pipeline_format_and_on_error_any_case_and_empty_format_detects(tmp_path, extra, fmt, on_error):
    p = load(_toml(tmp_path / "p.toml", tmp_path, tmp_path / "ds", extra))
    assert (p.format, p.on_error) == (fmt, on_error)


@pytest.mark.parametrize("kind, name, tables", [
    ("csv", "2024-01-05.csv", ["bbo", "trades"]),
    ("sse", "2024-01-05.log", ["bbo", "trades"]),
    ("pitch", "2024-01-05.pitch", ["bbo", "trades"]),
    ("itch", "01052024.NASDAQ_ITCH50", ["bbo", "trades", "symbols"]),
])
def test_cli_pipeline_init_starter_fits_the_day_files_format_and_its_run_converts_them(tmp_path, kind, name,
                                                                                        tables):
    days = tmp_path / "days"
    days.mkdir()
    r = CliRunner().invoke(app, ["gen", kind, "-n", "300", "-k", "2", "-d", "2024-01-05", str(days / name)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["pipeline", "init", str(days)])
    assert r.exit_code == 0, r.output
    p = load(days / "obook-pipeline.toml")
    assert list(p.tables) == tables and p.format is None
    assert [f.name for f in p.source_dir.glob(p.glob)] == [name]
    summary = run(p)
    assert len(summary["converted"]) == 1 and not summary["failed"] and not summary["invalid"], summary


def test_cli_pipeline_init_days_of_two_formats_starter_of_the_most_warns_of_the_other(tmp_path):
    days = tmp_path / "days"
    days.mkdir()
    for kind, name in (("csv", "2024-01-05.csv"), ("csv", "2024-01-08.csv"), ("pitch", "2024-01-05.pitch")):
        gen = ["gen", kind, "-n", "300", "-k", "2", "-d", f"{name[:10]}", str(days / name)]
        assert CliRunner().invoke(app, gen).exit_code == 0
    r = CliRunner().invoke(app, ["pipeline", "init", str(days)])
    assert r.exit_code == 0, r.output
    p = load(days / "obook-pipeline.toml")
    assert sorted(f.name for f in p.source_dir.glob(p.glob)) == ["2024-01-05.csv", "2024-01-08.csv"]
    assert "2024-01-05.pitch" in r.output and "pitch" in r.output and "their own pipeline" in r.output


def test_cli_pipeline_init_zipped_days_without_a_suffix_glob_the_zips_warns_of_the_other_format(tmp_path):
    import zipfile

    from obook.gen.sse import write_sse

    days = tmp_path / "days"
    days.mkdir()
    for date in ("20230605", "20230606"):        # as Shanghai's vendors ship a day: a zipped log
        write_sse(tmp_path / f"AX_sbe_sse_{date}", 300)
        with zipfile.ZipFile(days / f"AX_sbe_sse_{date}.zip", "w") as z:
            z.write(tmp_path / f"AX_sbe_sse_{date}", f"AX_sbe_sse_{date}.log")
    assert CliRunner().invoke(app, ["gen", "itch", "-n", "300", str(days / "12302019.NASDAQ_ITCH50")]).exit_code == 0
    r = CliRunner().invoke(app, ["pipeline", "init", str(days)])
    assert r.exit_code == 0, r.output
    p = load(days / "obook-pipeline.toml")
    assert sorted(f.name for f in p.source_dir.glob(p.glob)) == ["AX_sbe_sse_20230605.zip", "AX_sbe_sse_20230606.zip"]
    assert "12302019.NASDAQ_ITCH50" in r.output and "their own pipeline" in r.output
