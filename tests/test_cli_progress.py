"""The command line's progress bars (obook.cli.progress): shown on a terminal only, sized
to the whole feed."""

from __future__ import annotations

import sys

import pytest

from obook.cli.progress import file_progress


@pytest.fixture
def tty_totals(monkeypatch):
    """stderr a terminal; the totals of the bars started (rich's add_task)."""
    from rich.progress import Progress

    totals = []
    add_task = Progress.add_task

    def recorded(self, description, *args, total=None, **kw):
        totals.append(total)
        return add_task(self, description, *args, total=total, **kw)

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(Progress, "add_task", recorded)
    return totals


def test_file_progress_several_files_total_is_their_sum(tmp_path, tty_totals):
    a, b = tmp_path / "000001_orders.csv", tmp_path / "000001_ticks.csv"
    a.write_bytes(b"x" * 1000)
    b.write_bytes(b"y" * 234)
    with file_progress([a, b]) as update:
        assert update is not None
        update(1234)
    assert tty_totals == [1234]


def test_file_progress_one_file_total_is_its_size(tmp_path, tty_totals):
    a = tmp_path / "day.itch"
    a.write_bytes(b"x" * 77)
    with file_progress(a) as update:
        assert update is not None
    assert tty_totals == [77]


@pytest.mark.parametrize("what", ["stdin", "nothing", "disabled"])
def test_file_progress_stdin_or_no_file_or_disabled_no_bar(tmp_path, tty_totals, what):
    a = tmp_path / "day.itch"
    a.write_bytes(b"x")
    paths, enabled = {"stdin": ([a, "-"], True), "nothing": ([], True), "disabled": ([a], False)}[what]
    with file_progress(paths, enabled=enabled) as update:
        assert update is None
    assert tty_totals == []
