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
