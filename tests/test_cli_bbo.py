"""The FEED arguments of the commands: a quoted glob pattern is its files, sorted, as the
shell's expansion of the same pattern gives them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from obook.cli import app

runner = CliRunner()

HEADER = "Time,Ticker,Order,T,Shares,Price\n"


@pytest.fixture
def pieces(tmp_path):
    """A CSV day in two files (the second without a header: the rest of the first)."""
    day = tmp_path / "day"
    day.mkdir()
    (day / "p1.csv").write_text(HEADER + "34200001,AAA,1,B,100,1000\n34200002,AAA,2,S,50,1100\n")
    (day / "p2.csv").write_text("34200003,AAA,3,B,70,1050\n34200004,AAA,2,E,30,0\n34200005,AAA,1,D,0,0\n")
    return day


def _out(args):
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("command", [["bbo"], ["table", "bbo"], ["table", "orders"]])
def test_cli_feed_quoted_glob_same_rows_as_its_files_listed(pieces, command):
    listed = _out([*command, pieces / "p1.csv", pieces / "p2.csv"])
    assert listed.count("\n") >= 3
    assert _out([*command, f"{pieces}/p*.csv"]) == listed


def test_cli_convert_quoted_glob_same_tables_as_its_files_listed(pieces, tmp_path):
    import pyarrow.parquet as pq

    _out(["convert", pieces / "p1.csv", pieces / "p2.csv", tmp_path / "listed", "--tables", "bbo"])
    _out(["convert", f"{pieces}/p*.csv", tmp_path / "glob", "--tables", "bbo"])
    got, want = (pq.read_table(tmp_path / d / "bbo.parquet") for d in ("glob", "listed"))
    assert want.num_rows >= 3 and got.equals(want.replace_schema_metadata(got.schema.metadata))


@pytest.mark.parametrize("command", [["bbo"], ["table", "bbo"], ["convert"]])
def test_cli_feed_quoted_glob_matching_nothing_error_names_it(tmp_path, command):
    args = [*command, f"{tmp_path}/*.csv"] + ([tmp_path / "out"] if command == ["convert"] else [])
    r = runner.invoke(app, [str(a) for a in args])
    assert str(r.exception) == f"{tmp_path}/*.csv: no feed file matches", r.output


def test_cli_plot_quoted_glob_same_picture_as_its_files_listed(pieces, tmp_path):
    _out(["plot", pieces / "p1.csv", pieces / "p2.csv", tmp_path / "listed.png", "--interval", "1s"])
    _out(["plot", f"{pieces}/p*.csv", tmp_path / "glob.png", "--interval", "1s"])
    assert (tmp_path / "glob.png").read_bytes() == (tmp_path / "listed.png").read_bytes()


@pytest.mark.parametrize("command", [["lobster", "{out}", "-k", "AAA"], ["send", "--linger", "0"]])
def test_cli_one_file_commands_quoted_glob_of_two_files_error_names_both(pieces, tmp_path, command):
    args = [command[0], f"{pieces}/p*.csv", *[a.format(out=tmp_path / "out") for a in command[1:]]]
    r = runner.invoke(app, [str(a) for a in args])
    assert str(r.exception) == (f"{pieces}/p*.csv: matches 2 files ({pieces}/p1.csv, {pieces}/p2.csv...); "
                                f"obook {command[0]} reads one feed file"), r.output


def test_cli_lobster_quoted_glob_of_one_file_same_files_as_the_file(tmp_path):
    from obook.gen.itch import write_itch

    day = tmp_path / "day" / "01302019.NASDAQ_ITCH50"
    day.parent.mkdir()
    write_itch(day, 3000, 3, seed=1)
    _out(["lobster", day, tmp_path / "listed", "-k", "AAA"])
    _out(["lobster", f"{day.parent}/*ITCH50", tmp_path / "glob", "-k", "AAA"])
    listed = sorted(p.name for p in (tmp_path / "listed").iterdir())
    assert listed and listed == sorted(p.name for p in (tmp_path / "glob").iterdir())
    for name in listed:
        assert (tmp_path / "glob" / name).read_bytes() == (tmp_path / "listed" / name).read_bytes()
