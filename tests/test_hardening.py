"""Rough edges a hostile user finds: wrong-typed options, a CSV feed where an ITCH
one is needed, a replace's error naming the right order."""

from __future__ import annotations

import pytest

import obook
from obook.errors import FeedError, ObookError
from obook.gen.csv import write_csv

from itch_builder import ItchBuilder


@pytest.mark.parametrize("levels", [2.5, "3", True, 0])
def test_depth_levels_not_an_integer_in_range_raises_obook_error(tmp_path, levels):
    path = ItchBuilder().write(tmp_path / "empty.itch")
    with pytest.raises(ObookError, match="levels must be (an integer )?between"):
        obook.depth(path, workers=1, levels=levels).read_all()
    with pytest.raises(ObookError, match="levels must be (an integer )?between"):
        obook.convert(path, tmp_path / "out", tables="depth", levels=levels, workers=1)


@pytest.mark.parametrize("reader", ["symbols", "system_events", "trading_actions"])
def test_itch_side_table_of_csv_feed_says_needs_itch_feed(tmp_path, reader):
    path = tmp_path / "day.csv"
    write_csv(path, 200, 3, seed=1)
    with pytest.raises(ObookError, match="(?i)csv feeds have no table|needs an ITCH feed"):
        getattr(obook, reader)(path)


def test_lobster_of_csv_feed_says_needs_itch_feed(tmp_path):
    from obook.lobster import lobster

    path = tmp_path / "day.csv"
    write_csv(path, 200, 3, seed=1)
    with pytest.raises(ObookError, match="needs an ITCH feed"):
        lobster(path, tmp_path / "out", ["T000"], date="2020-01-02", workers=1)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case", ["zero shares", "duplicate"])
def test_itch_replace_error_names_the_new_order_ref(tmp_path, case, workers):
    """A U whose new order fails (0 shares, or a ref already live) names the new ref, which
    is the order that fails; the original ref is fine."""
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 10, "B", 100, 1_000_000)
    b.add(1, 20, "B", 100, 1_000_000)
    b.replace(1, 10, 77 if case == "zero shares" else 20, 0 if case == "zero shares" else 50, 1_000_100)
    path = b.write(tmp_path / "u.itch")
    with pytest.raises(FeedError) as info:
        obook.bbo(path, workers=workers).read_all()
    want = "zero-share add 77" if case == "zero shares" else "duplicate order ref 20"
    assert info.value.record == 4 and info.value.reason.startswith(want), info.value.reason


@pytest.mark.parametrize("path", [5, None, 1.5, True, b"day.itch", [5], ["day.itch", None], [["day.itch"]], ("day.itch", 7),
                                  {"day.itch": 1}, {"day.itch"}, bytearray(b"day.itch"), ""])
@pytest.mark.parametrize("reader", ["bbo", "trades", "bars", "spread", "messages"])
def test_reader_path_not_a_path_raises_obook_error_naming_the_feed_path(tmp_path, monkeypatch, path, reader):
    ItchBuilder().write(tmp_path / "day.itch")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ObookError, match="the feed path (must be text|is empty)"):
        obook.table(reader, path).read_all()


def test_reader_path_generator_raises_obook_error_naming_the_feed_path(tmp_path):
    path = str(ItchBuilder().write(tmp_path / "day.itch"))
    with pytest.raises(ObookError, match="the feed path must be text"):
        obook.bbo((p for p in [path]), workers=1)
    with pytest.raises(ObookError, match="the feed path must be text"):
        obook.read_itch(5)
    with pytest.raises(ObookError, match="the feed path must be text"):
        obook.bbo(5, workers=1, stats={})


def test_reader_text_stream_raises_obook_error_binary_mode(tmp_path):
    path = ItchBuilder().write(tmp_path / "day.itch")
    with open(path, encoding="latin-1") as f, pytest.raises(ObookError, match="text stream.*'rb'"):
        obook.bbo(f, format="itch", workers=1).read_all()


def test_reader_file_name_too_long_raises_obook_error(tmp_path):
    with pytest.raises(ObookError, match="too long"):
        obook.bbo(str(tmp_path / ("x" * 300)), workers=1)


@pytest.mark.parametrize("option, value, message", [
    ("format", 5, "format must be a feed format's name"), ("format", ["itch"], "format must be a feed format's name"),
    ("tickers", 5, "tickers must be a list of tickers"), ("tickers", b"AAA", "tickers must be a list of tickers"),
    ("tickers", ["AAA", 5], "tickers must be text, not 5"), ("tickers", [None], "tickers must be text, not None"),
    ("filename", "false", "filename must be True or False"), ("filename", 1, "filename must be True or False")])
def test_reader_option_of_wrong_type_raises_obook_error_naming_it(tmp_path, option, value, message):
    path = ItchBuilder().write(tmp_path / "day.itch")
    with pytest.raises(ObookError, match=message):
        obook.bbo(path, workers=1, **{option: value}).read_all()


@pytest.mark.parametrize("value", [0, "false", "no", 1])
def test_orders_queue_positions_not_a_bool_raises_obook_error(tmp_path, value):
    path = ItchBuilder().write(tmp_path / "day.itch")
    with pytest.raises(ObookError, match="queue_positions must be True or False"):
        obook.orders(path, workers=1, queue_positions=value)


def test_bars_interval_true_raises_obook_error(tmp_path):
    path = ItchBuilder().write(tmp_path / "day.itch")
    with pytest.raises(ObookError, match="interval must be like"):
        obook.bars(path, True, workers=1)


def test_reader_tickers_iterator_same_rows_as_list(tmp_path):
    path = tmp_path / "day.itch"
    from obook.gen.itch import write_itch

    write_itch(path, 3000, 5)
    want = obook.bbo(path, workers=1, tickers=["AAA"]).read_all()
    assert want.num_rows > 0
    assert obook.bbo(path, workers=1, tickers=iter(["AAA"])).read_all().equals(want)


@pytest.mark.parametrize("stats", [[], "x", 0])
def test_bbo_stats_not_a_dict_raises_obook_error(tmp_path, stats):
    path = ItchBuilder().write(tmp_path / "day.itch")
    with pytest.raises(ObookError, match="stats must be a dict"):
        obook.bbo(path, workers=1, stats=stats).read_all()


@pytest.mark.parametrize("workers", ["2", True, 2.0, 0])
def test_bbo_stats_checks_workers_like_without_stats(tmp_path, workers):
    path = ItchBuilder().write(tmp_path / "day.itch")
    with pytest.raises(ObookError, match="workers must be"):
        obook.bbo(path, workers=workers, stats={})


@pytest.mark.parametrize("on_error", ["", "skipped", 1])
def test_reader_on_error_not_raise_or_skip_is_an_error(on_error, tmp_path):
    from obook.gen.csv import write_csv

    write_csv(tmp_path / "day.csv", 200, 2, 1)
    with pytest.raises(obook.ObookError, match="on_error must be one of"):
        obook.trades(tmp_path / "day.csv", on_error=on_error)
