"""The shared checks of the front ends' arguments (obook.checks): each wrong value is a one-line
ObookError naming the argument, a value whose meaning is clear is taken."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pytest

import obook
from obook.backtest.arguments import check_timer, check_timer_start
from obook.checks import (check_choice, check_date, check_levels, check_number, check_path, check_seed,
                          check_whole_at_least_1, is_integer)
from obook.errors import ObookError
from itch_builder import ItchBuilder


def _day(tmp_path):
    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.add(1, ref=10, side="B", shares=100, price=1_000_000)
    return b.write(tmp_path / "day.itch")


@pytest.mark.parametrize("date", ["20200102", "2020-W01-4", 20200102, "2020-01-02T00:00"])
def test_check_date_not_yyyy_mm_dd_raises_naming_date(date):
    with pytest.raises(ObookError, match=r"^--date / date= .*: not a day YYYY-MM-DD"):
        check_date(date)


@pytest.mark.parametrize("date", [dt.datetime(2020, 1, 2, 15, 30), dt.datetime(2020, 1, 2, tzinfo=dt.timezone.utc),
                                  np.datetime64("2020-01-02T09:30")])
def test_check_date_time_of_day_or_zone_raises(date):
    with pytest.raises(ObookError, match=r"^--date / date= .*: .*no session date"):
        check_date(date)


@pytest.mark.parametrize("date", ["2020-01-02", dt.date(2020, 1, 2), dt.datetime(2020, 1, 2),
                                  np.datetime64("2020-01-02")])
def test_check_date_a_day_gives_that_day(date):
    assert check_date(date) == dt.date(2020, 1, 2)


def test_check_levels_numpy_integer_gives_an_int():
    levels = check_levels(np.int64(3))
    assert levels == 3 and type(levels) is int


@pytest.mark.parametrize("path", ["", "a\0b.itch"])
def test_check_path_empty_or_nul_raises_naming_it(path):
    with pytest.raises(ObookError, match=r"^outdir"):
        check_path("outdir", path)


def test_bbo_date_with_a_time_of_day_raises_before_any_row(tmp_path):
    with pytest.raises(ObookError, match="no session date"):
        obook.bbo(_day(tmp_path), workers=1, date=dt.datetime(2019, 12, 30, 23, tzinfo=dt.timezone.utc))


def test_bbo_progress_not_a_function_raises_naming_progress(tmp_path):
    with pytest.raises(ObookError, match="^progress must be a function"):
        obook.bbo(_day(tmp_path), workers=1, progress=1).read_all()


def test_bbo_closed_stream_raises_naming_the_stream(tmp_path):
    path = _day(tmp_path)
    with open(path, "rb") as f:
        pass
    with pytest.raises(ObookError, match=r"^the feed stream .*day\.itch' is closed$"):
        obook.bbo(f, workers=1)


def test_lines_capture_not_a_path_raises_naming_the_line():
    with pytest.raises(ObookError, match=r"^a line \(CAPTURE\[:ADDRESS:PORT\]\) must be a path"):
        obook.lines(a=5)


def test_convert_numpy_integer_levels_writes_the_depth(tmp_path):
    out = obook.convert(_day(tmp_path), tmp_path / "out", tables=["depth"], workers=1, levels=np.int64(2))
    assert out["rows"] == {"depth": 1}


def test_convert_outdir_with_nul_raises_and_writes_nothing(tmp_path):
    with pytest.raises(ObookError, match=r"^outdir .* holds a NUL character"):
        obook.convert(_day(tmp_path), str(tmp_path / "a\0b"), workers=1)
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("value", ["skip", "Skip", "SKIP"])
def test_check_choice_any_case_is_the_word(value):
    assert check_choice("on_error", value, ("raise", "skip")) == "skip"


@pytest.mark.parametrize("value", ["", "skipped", None, 1, b"skip"])
def test_check_choice_other_value_raises_naming_option_and_words(value):
    with pytest.raises(ObookError, match=rf"^on_error must be one of raise, skip, not {re.escape(repr(value))}$"):
        check_choice("on_error", value, ("raise", "skip"))


@pytest.mark.parametrize("value", [5, np.int64(5), np.uint8(5), 0, -3, 1 << 70])
def test_is_integer_python_or_numpy_integer_true(value):
    assert is_integer(value)


@pytest.mark.parametrize("value", [5.0, 1e9, np.float64(5), True, np.bool_(True), "5", None])
def test_is_integer_float_bool_or_digits_false(value):
    assert not is_integer(value)


@pytest.mark.parametrize("seed, shown", [(1.0, "1.0 (a float)"), ("1", "'1'"), (True, "True")])
def test_check_seed_float_text_or_bool_is_obook_error(seed, shown):
    with pytest.raises(ObookError, match=f"^seed must be an integer from 0 to {(1 << 63) - 1}, not {re.escape(shown)}$"):
        check_seed(seed)


@pytest.mark.parametrize("check, says", [
    (lambda: check_seed(7.0), f"seed must be an integer from 0 to {(1 << 63) - 1}, not 7.0 (a float)"),
    (lambda: check_seed(np.float64(7)), "seed must be an integer from 0 to"),
    (lambda: check_whole_at_least_1("workers", 2.0), "workers must be an integer, not 2.0 (a float)"),
    (lambda: check_number("retries", 5.0, 0, 10, whole=True), "retries must be an integer from 0 to 10, not 5.0 (a float)"),
    (lambda: check_timer(1e9), "timer 1000000000.0 (a float): give an integer of ns"),
    (lambda: check_timer_start(5.0), "timer_start must be an integer from 0 to"),
])
def test_integer_option_given_a_whole_float_error_says_it_is_a_float(check, says):
    with pytest.raises(ObookError) as e:
        check()
    assert str(e.value).startswith(says) and "(a float)" in str(e.value) and "whole number" not in str(e.value)


def test_feed_path_of_a_named_pipe_error_says_to_read_it_as_a_stream(tmp_path):
    """A FIFO is no feed file, but its bytes are a stream a reader takes: the error says how."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ObookError, match=r"^" + re.escape(f"{fifo}: a named pipe (FIFO), not a feed file; read it "
                                                         "as a stream (open(path, 'rb') in Python, stdin with "
                                                         "--format on the command line)") + "$"):
        obook.bbo(fifo).read_all()


@pytest.mark.parametrize("kind, says", [("directory", "a directory, not {} file"), ("device", "not a regular file"),
                                        ("fifo", "a named pipe (FIFO), not {} file")])
def test_path_no_regular_file_same_words_in_python_sql_and_polars(tmp_path, kind, says):
    import os

    import duckdb

    import obook.polars

    path = {"directory": str(tmp_path), "device": "/dev/null", "fifo": str(tmp_path / "fifo")}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    con = obook.connect()
    feed_runs = (lambda: obook.bbo(path, workers=1).read_all(),
                 lambda: con.sql(f"SELECT * FROM obook_bbo('{path}')").fetchall(),
                 lambda: obook.polars.scan_bbo(path).collect())
    order_runs = (lambda: obook.match(path), lambda: con.sql(f"SELECT * FROM obook_match('{path}')").fetchall(),
                  lambda: obook.polars.scan_match(path).collect())
    for runs, what in ((feed_runs, "a feed"), (order_runs, "an order")):
        for run in runs:
            with pytest.raises((ObookError, duckdb.Error)) as e:
                run()
            assert f"{path}: {says.format(what)}" in str(e.value), (what, str(e.value))


@pytest.mark.parametrize("word, said", [("int", "an int"), ("pitch", "a pitch"), ("list", "a list"),
                                        ("S", "an S"), ("B", "a B"), ("X", "an X"), ("SSE", "an SSE"),
                                        ("CSV", "a CSV"), ("MBO", "an MBO"), ("float", "a float")])
def test_checks_a_or_an_letters_read_by_their_names_expected(word, said):
    from obook.checks import a_or_an

    assert a_or_an(word) == said


@pytest.mark.parametrize(("name", "said"), [("sse", "an sse feed"), ("szse-bin", "an szse-bin feed"),
                                            ("csv", "a csv feed"), ("itch", "an itch feed"),
                                            ("pitch", "a pitch feed"), ("databento", "a databento feed")])
def test_checks_a_feed_format_names_read_letter_by_letter_expected(name, said):
    from obook.checks import a_feed

    assert a_feed(name) == said
