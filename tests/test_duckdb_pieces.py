"""The SQL macros given one feed cut into files: a DuckDB tuple of paths, as a tuple in Python."""

from __future__ import annotations

import duckdb
import pytest

import obook
from obook.duckdb import connect
from obook.gen.sse import generate


@pytest.fixture()
def con():
    c = connect()
    yield c
    c.close()


@pytest.fixture()
def pieces(tmp_path, monkeypatch):
    """A Shanghai day and its head and tail files (relative names, the day's date in each)."""
    lines = generate(1500, securities=3, seed=7)
    n = len(lines) // 2
    for name, part in (("2024-01-02.log", lines), ("a_2024-01-02.log", lines[:n]), ("b_2024-01-02.log", lines[n:])):
        (tmp_path / name).write_text("\n".join(part) + "\n")
    monkeypatch.chdir(tmp_path)
    return "2024-01-02.log", ("a_2024-01-02.log", "b_2024-01-02.log")


def _table(con, sql):
    out = con.sql(sql).arrow()
    return out.read_all() if hasattr(out, "read_all") else out


@pytest.mark.parametrize("table", ["bbo", "audit"])
def test_obook_macro_tuple_of_sse_files_same_rows_as_python_tuple_and_the_day(con, pieces, table):
    day, (a, b) = pieces
    want = getattr(obook, table)(day, workers=1).read_all()
    assert getattr(obook, table)((a, b), workers=1).read_all().equals(want)
    got = _table(con, f"SELECT * FROM obook_{table}(('{a}', '{b}'), workers := 1)")
    assert got.num_rows == want.num_rows > 0
    assert got.select(want.column_names).cast(want.schema).equals(want)


def test_obook_macro_list_of_sse_files_each_file_on_its_own(con, pieces):
    """A list stays a set of feeds, each replayed on its own: a piece alone names orders the
    other has, the same error as in Python."""
    _, (a, b) = pieces
    with pytest.raises(obook.FeedError, match="unknown order ref") as python:
        obook.bbo([a, b], workers=1).read_all()
    with pytest.raises(duckdb.Error, match=f"{python.value.path}: line {python.value.record}: unknown order ref"):
        con.sql(f"SELECT * FROM obook_bbo(['{a}', '{b}'], workers := 1)").fetchall()


def test_obook_macro_tuple_filename_is_its_files_as_given_joined_by_plus(con, pieces):
    _, (a, b) = pieces
    got = con.sql(f"SELECT DISTINCT filename FROM obook_bbo(('{a}', '{b}'), filename := true)").fetchall()
    want = obook.bbo((a, b), filename=True).read_all().column("filename").unique().to_pylist()
    assert got == [(w,) for w in want] == [(f"{a}+{b}",)]


def test_obook_sql_macro_over_a_tuple_reads_it_as_one_feed(con, pieces):
    day, (a, b) = pieces
    whole = con.sql(f"SELECT count(*), sum(spread) FROM obook_spread('{day}')").fetchall()
    assert con.sql(f"SELECT count(*), sum(spread) FROM obook_spread(('{a}', '{b}'))").fetchall() == whole


@pytest.mark.parametrize("path, says", [("('a_*.log', 'b_2024-01-02.log')", "each a file, not a glob pattern: 'a_*.log'"),
                                        ("('a_2024-01-02.log', 3)", "not 3"),
                                        ("('a_2024-01-02.log', 'nope.log')", "nope.log: no such feed file"),
                                        ("('a_2024-01-02.log', './a_2024-01-02.log')",
                                         "a_2024-01-02.log: named twice: the files of one feed name each file once")])
def test_obook_macro_tuple_of_a_pattern_number_or_missing_file_is_an_error_naming_it(con, pieces, path, says):
    with pytest.raises(duckdb.Error, match=says.replace("(", r"\(").replace("*", r"\*")):
        con.sql(f"SELECT * FROM obook_bbo({path})").fetchall()


def test_obook_macro_path_duckdb_1_tuple_json_unnamed_struct_is_the_tuple(tmp_path, monkeypatch):
    """DuckDB before 2.0 types ('a', 'b') as a struct of unnamed fields: its to_json is taken as the tuple."""
    from obook.duckdb import _given_names, _source

    monkeypatch.chdir(tmp_path)
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_text("")
    assert _source('{"":"a.log","":"b.log"}') == (str(tmp_path / "a.log"), str(tmp_path / "b.log"))
    assert list(_given_names('{"":"a.log","":"b.log"}').values()) == ["a.log", "b.log"]
    with pytest.raises(obook.ObookError, match="must be text"):
        _source('{"day":"a.log"}')         # a named struct is not a tuple of files
