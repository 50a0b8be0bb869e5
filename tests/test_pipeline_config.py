"""Pipeline definitions (pipelines/config.py): a section that is no table, a path from the home
directory."""

from __future__ import annotations

import pytest

from cli_support import cli_error

TOML = '[source]\ndirectory = "{days}"\n[dataset]\npath = "{dataset}"\n'


@pytest.mark.parametrize("text, says", [
    ('[[convert]]\ntables = ["bbo"]\n', "[convert] must be a table ([convert] and its keys), not a list"),
    ("convert = 5\n", "[convert] must be a table ([convert] and its keys), not 5"),
])
def test_cli_pipeline_section_not_a_table_one_line_error_saying_so(tmp_path, capsys, text, says):
    p = tmp_path / "p.toml"
    p.write_text(text + TOML.format(days=".", dataset="ds"))
    err = cli_error(capsys, "pipeline", "status", p)
    assert says in err and "unknown section" not in err, err


def test_pipeline_load_directory_and_dataset_from_the_home_directory(tmp_path, monkeypatch):
    from obook.pipelines import load

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    p = tmp_path / "defs" / "p.toml"
    p.parent.mkdir()
    p.write_text(TOML.format(days="~/days", dataset="~/ds"))
    pipeline = load(p)
    assert (pipeline.source_dir, pipeline.dataset) == (tmp_path / "home" / "days", tmp_path / "home" / "ds")


@pytest.mark.parametrize("section, line, attr, value", [
    ("run", 'executor = "Local"', "executor", "local"),
    ("run", 'executor = "DASK://Scheduler:8786"', "executor", "dask://Scheduler:8786"),
    ("convert", 'on_error = "SKIP"', "on_error", "skip"),
    ("convert", 'format = "Itch"', "format", "itch"),
    ("convert", 'tables = ["BBO", "Trades"]', "tables", ("bbo", "trades")),
])
def test_pipeline_load_choices_in_any_case_taken_as_the_choice(tmp_path, section, line, attr, value):
    from obook.pipelines import load

    p = tmp_path / "p.toml"
    p.write_text(TOML.format(days=".", dataset="ds") + f"[{section}]\n{line}\n")
    assert getattr(load(p), attr) == value


@pytest.mark.parametrize("line, says", [
    ('[run]\nexecutor = "yarn"', "[run] executor must be one of local, dask://host:port, not 'yarn'"),
    ("[run]\nexecutor = 5", "[run] executor must be one of local, dask://host:port, not 5"),
    ('[convert]\non_error = "ignore"', "[convert] on_error must be one of raise, skip, not 'ignore'"),
    ('[convert]\nformat = "nasdaq"', "[convert] format must be one of itch, "),
])
def test_cli_pipeline_choice_not_among_them_one_line_error_listing_the_choices(tmp_path, capsys, line, says):
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(days=".", dataset="ds") + line + "\n")
    assert says in cli_error(capsys, "pipeline", "status", p)


def test_cli_pipeline_status_json_definition_given_relative_every_path_absolute(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from obook.cli import app

    (tmp_path / "days").mkdir()
    (tmp_path / "days" / "notes.NASDAQ_ITCH50").write_bytes(b"x")     # a file that is no day
    (tmp_path / "p.toml").write_text(TOML.format(days="days", dataset="ds"))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["pipeline", "status", "--json", "p.toml"])
    st = json.loads(r.stdout)
    assert st["pipeline"] == str(tmp_path.resolve() / "p.toml") and st["dataset"] == str(tmp_path.resolve() / "ds")
    assert [d["file"] for d in st["days"]] == [str(tmp_path.resolve() / "days" / "notes.NASDAQ_ITCH50")]


_GLOB = '[source]\ndirectory = "days"\nglob = "{glob}"\n[dataset]\npath = "ds"\n'


@pytest.mark.parametrize("text, says", [
    (TOML.format(days="~no-such-user-obook/days", dataset="ds"),
     "[source] directory '~no-such-user-obook/days': no user no-such-user-obook (~user is that user's home directory)"),
    (TOML.format(days="days", dataset="~no-such-user-obook/ds"),
     "[dataset] path '~no-such-user-obook/ds': no user no-such-user-obook (~user is that user's home directory)"),
    (TOML.format(days="da\\u0000ys", dataset="ds"), "[source] directory 'da\\x00ys': a path holds no NUL character"),
    (TOML.format(days="days", dataset="d\\u0000s"), "[dataset] path 'd\\x00s': a path holds no NUL character"),
    (_GLOB.format(glob="*\\u0000.gz"), "[source] glob '*\\x00.gz': a path holds no NUL character"),
])
def test_cli_pipeline_path_of_an_unknown_user_or_with_a_nul_one_line_error(tmp_path, capsys, text, says):
    p = tmp_path / "p.toml"
    p.write_text(text)
    assert cli_error(capsys, "pipeline", "status", p) == f"error: {p}: {says}\n"
