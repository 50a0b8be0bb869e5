"""Which files of a pipeline's source directory are days (a symbolic link to nothing, a name
whose digits are no date), and what a day's failure says."""

from __future__ import annotations

import os

from pipeline_support import write_days


def _pipeline(tmp_path):
    write_days(tmp_path / "days")
    p = tmp_path / "p.toml"
    p.write_text('[source]\ndirectory = "days"\nglob = "*.NASDAQ_ITCH50*"\n[convert]\ntables = ["bbo"]\n'
                 '[dataset]\npath = "ds"\n')
    return p


def test_pipeline_day_file_a_dangling_symlink_is_invalid_naming_its_target_others_run(tmp_path):
    from obook.pipelines import load, run, status

    p = _pipeline(tmp_path)
    link = tmp_path / "days" / "01032020.NASDAQ_ITCH50"
    os.symlink(tmp_path / "gone" / "01032020.NASDAQ_ITCH50", link)     # a mount that went away
    summary = run(load(p))
    assert len(summary["converted"]) == 3
    assert list(summary["invalid"]) == [str(link)]
    assert "symbolic link to" in summary["invalid"][str(link)] and "gone" in summary["invalid"][str(link)]
    day = next(d for d in status(load(p))["days"] if d["file"] == str(link))
    assert (day["date"], day["state"]) == ("2020-01-03", "invalid")


def test_pipeline_day_file_a_dangling_symlink_after_its_day_was_done_keeps_its_partitions_and_says_so(tmp_path):
    from obook.pipelines import load, run

    p = _pipeline(tmp_path)
    assert len(run(load(p))["converted"]) == 3
    day = tmp_path / "days" / "12312019.NASDAQ_ITCH50"
    day.rename(tmp_path / "elsewhere")
    os.symlink(tmp_path / "gone", day)
    summary = run(load(p))
    assert list(summary["invalid"]) == [str(day)] and "2019-12-31" in summary["previous_partitions"]


def test_pipeline_name_whose_date_digits_are_no_date_is_invalid_saying_so(tmp_path):
    from obook.pipelines import load, run

    p = _pipeline(tmp_path)
    for name in ("13012020.NASDAQ_ITCH50", "02302020.NASDAQ_ITCH50"):
        (tmp_path / "days" / name).write_bytes((tmp_path / "days" / "12302019.NASDAQ_ITCH50").read_bytes())
    invalid = run(load(p))["invalid"]
    assert sorted(invalid) == sorted(str(tmp_path / "days" / n) for n in ("13012020.NASDAQ_ITCH50",
                                                                          "02302020.NASDAQ_ITCH50"))
    assert "13012020 in the name is no calendar date" in invalid[str(tmp_path / "days" / "13012020.NASDAQ_ITCH50")]
    assert "02302020 in the name is no calendar date" in invalid[str(tmp_path / "days" / "02302020.NASDAQ_ITCH50")]


def test_pipeline_day_whose_partition_folder_cannot_be_made_fails_naming_the_place_and_the_reason(tmp_path):
    from obook.pipelines import load, run

    p = _pipeline(tmp_path)
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "table=bbo").write_text("x")         # a file where the table's folder goes
    failed = run(load(p))["failed"]
    assert len(failed) == 3
    for date, error in failed.items():
        assert error.endswith(f"{tmp_path / 'ds' / 'table=bbo' / f'date={date}'}: Not a directory"), error
        assert "Errno" not in error


def test_pipeline_databento_days_dated_by_their_names_as_databento_names_them(tmp_path):
    from typer.testing import CliRunner

    from obook.cli import app
    from obook.pipelines import load, run

    days = tmp_path / "days"
    days.mkdir()
    for name, date in (("xnas-itch-20231114.mbo.dbn", "2023-11-14"), ("xnas-itch-20231115.mbo.dbn", "2023-11-15"),
                       ("undated.mbo.dbn", "2023-11-16")):
        r = CliRunner().invoke(app, ["gen", "databento", "-n", "500", "-d", date, str(days / name)])
        assert r.exit_code == 0, r.output
    p = tmp_path / "p.toml"
    p.write_text('[source]\ndirectory = "days"\nglob = "*.dbn"\n[convert]\ntables = ["bbo", "mbp1"]\n'
                 '[dataset]\npath = "ds"\n')
    summary = run(load(p))
    assert summary["converted"] == ["2023-11-14", "2023-11-15"] and not summary["failed"], summary
    assert list(summary["invalid"]) == [str(days / "undated.mbo.dbn")]
    assert (tmp_path / "ds" / "table=mbp1" / "date=2023-11-15" / "part-0.parquet").is_file()


def test_pipeline_format_set_file_of_another_format_invalid_reason_names_the_set_format_and_the_files(tmp_path):
    from typer.testing import CliRunner

    from obook.cli import app
    from obook.pipelines import load, run

    p = _pipeline(tmp_path)
    csv = tmp_path / "days" / "day-2020-01-03.NASDAQ_ITCH50.csv"
    assert CliRunner().invoke(app, ["gen", "csv", "-n", "300", "-d", "2020-01-03", str(csv)]).exit_code == 0
    p.write_text(p.read_text().replace('tables = ["bbo"]', 'tables = ["bbo"]\nformat = "itch"'))
    reason = run(load(p))["invalid"][str(csv)]
    assert "[convert] format is itch" in reason and "MMDDYYYY.NASDAQ_ITCH50" in reason, reason
    assert "the file is a csv feed" in reason and "CSV" not in reason, reason


def _states(p) -> dict:
    from obook.pipelines import load, status

    return {os.path.relpath(d["file"], p.parent): (d["state"], d["reason"]) for d in status(load(p))["days"]}


def test_pipeline_folder_and_fifo_the_glob_matches_invalid_saying_what_they_are(tmp_path):
    days = tmp_path / "days"
    days.mkdir()
    (days / "12302019.NASDAQ_ITCH50").mkdir()
    os.mkfifo(days / "12312019.NASDAQ_ITCH50")          # never opened: a run would wait on it
    os.symlink(days / "12302019.NASDAQ_ITCH50", days / "01022020.NASDAQ_ITCH50")
    p = tmp_path / "p.toml"
    p.write_text('[source]\ndirectory = "days"\nglob = "*.NASDAQ_ITCH50*"\n[dataset]\npath = "ds"\n')
    assert _states(p) == {
        "days/12302019.NASDAQ_ITCH50": ("invalid", "not a day file: it is a folder, not a regular file"),
        "days/12312019.NASDAQ_ITCH50": ("invalid", "not a day file: it is a named pipe (FIFO), not a regular file"),
        "days/01022020.NASDAQ_ITCH50": ("invalid", "not a day file: it is a folder (a symbolic link to "
                                                   f"{days / '12302019.NASDAQ_ITCH50'}), not a regular file")}


def test_pipeline_folders_holding_the_dataset_or_day_files_the_glob_matches_are_no_invalid_days(tmp_path):
    (tmp_path / "2019").mkdir()
    (tmp_path / "2019" / "12302019.NASDAQ_ITCH50").write_bytes(b"\0\x0cS")
    (tmp_path / "out" / "ds").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    p = tmp_path / "p.toml"
    p.write_text('[source]\ndirectory = "."\nglob = "**/*.NASDAQ_ITCH50"\n[dataset]\npath = "out/ds"\n')
    assert _states(p) == {"2019/12302019.NASDAQ_ITCH50": ("pending", "new")}
    p.write_text('[source]\ndirectory = "."\nglob = "*"\n[dataset]\npath = "out/ds"\n')
    folder = ("invalid", "not a day file: it is a folder, not a regular file")
    assert _states(p) == {"2019": folder, "empty": folder}      # (no day in them is matched by "*")
