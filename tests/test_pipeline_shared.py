"""Two pipeline definitions on one dataset: the second is refused, naming the first; a
definition moved (the first one gone) takes the dataset over."""

from __future__ import annotations

import pytest

from cli_support import cli_error
from pipeline_support import write_days, write_pipeline


def test_cli_pipeline_second_definition_on_a_dataset_refused_naming_the_first_nothing_replaced(tmp_path, capsys):
    from obook.pipelines import load, manifest, run

    write_days(tmp_path / "a")
    write_days(tmp_path / "b", seed=7)                    # the same dates, other files
    first = write_pipeline(tmp_path / "a.toml", tmp_path / "a", tmp_path / "ds", days_at_once=1)
    second = write_pipeline(tmp_path / "b.toml", tmp_path / "b", tmp_path / "ds", days_at_once=1)
    assert len(run(load(first))["converted"]) == 3
    before = manifest.read(tmp_path / "ds")["days"]
    for command in ("run", "status"):
        err = cli_error(capsys, "pipeline", command, second)
        assert "the dataset of another pipeline" in err and str(first) in err, err
    assert manifest.read(tmp_path / "ds")["days"] == before
    assert run(load(first))["unchanged"] == 3


def test_pipeline_definition_moved_copied_or_the_old_one_pointed_elsewhere_takes_its_dataset_over(tmp_path):
    from obook.errors import ObookError
    from obook.pipelines import load, run

    write_days(tmp_path / "days")
    write_days(tmp_path / "other", seed=7)
    first = write_pipeline(tmp_path / "a.toml", tmp_path / "days", tmp_path / "ds", days_at_once=1)
    assert len(run(load(first))["converted"]) == 3
    moved = first.rename(tmp_path / "nightly.toml")
    assert run(load(moved))["unchanged"] == 3
    copy = write_pipeline(tmp_path / "copy.toml", tmp_path / "days", tmp_path / "ds", days_at_once=1)
    assert run(load(copy))["unchanged"] == 3                   # the same day files: the same pipeline
    another = write_pipeline(tmp_path / "b.toml", tmp_path / "other", tmp_path / "ds", days_at_once=1)
    with pytest.raises(ObookError, match="the dataset of another pipeline"):
        run(load(another))
    write_pipeline(copy, tmp_path / "days", tmp_path / "ds-days", days_at_once=1)   # pointed elsewhere
    assert len(run(load(another))["converted"]) == 3


def test_pipeline_owner_whose_source_directory_is_gone_taken_over_with_a_warning_naming_it(tmp_path, caplog):
    from obook.pipelines import load, manifest, run, status

    write_days(tmp_path / "a")
    write_days(tmp_path / "b", seed=7)
    first = write_pipeline(tmp_path / "a.toml", tmp_path / "a", tmp_path / "ds", days_at_once=1)
    second = write_pipeline(tmp_path / "b.toml", tmp_path / "b", tmp_path / "ds", days_at_once=1)
    assert len(run(load(first))["converted"]) == 3
    (tmp_path / "a").rename(tmp_path / "a-retired")       # the first pipeline's days are gone
    caplog.clear()
    assert status(load(second))["counts"]["pending"] == 3
    assert manifest.read(tmp_path / "ds")["pipeline"] == str(first)       # (status writes nothing)
    assert len(run(load(second))["converted"]) == 3
    assert manifest.read(tmp_path / "ds")["pipeline"] == str(second)
    warned = [r.getMessage() for r in caplog.records if "takes the dataset over" in r.getMessage()]
    assert warned and all(str(first) in w and f"{tmp_path / 'a'} does not exist" in w for w in warned), warned
