"""LOBSTER's own file format: events outside the requested levels are not listed,
a replace is a deletion step then a submission step each with its own book, times in their
shortest form. Hand-made feeds, hand-checked lines."""

from __future__ import annotations

import pytest

from obook.lobster import _seconds_short, lobster

from itch_builder import ItchBuilder

OPEN = 34_200 * 10**9
A, B = 9_999_999_999, -9_999_999_999


def feed(tmp_path):
    b = ItchBuilder(start_ts=OPEN)
    b.directory(1, "AAPL", ts=30_000 * 10**9)              # 1
    b.add(1, 1, "B", 100, 1_000_000, ts=OPEN + 1)          # 2  bid level 1
    b.add(1, 2, "B", 50, 990_000, ts=OPEN + 2)             # 3  bid level 2
    b.add(1, 3, "B", 30, 980_000, ts=OPEN + 3)             # 4  bid level 3
    b.cancel(1, 3, 10, ts=OPEN + 4)                        # 5  partial cancel at level 3
    b.cancel(1, 2, 20, ts=OPEN + 5)                        # 6  partial cancel at level 2
    b.replace(1, 1, 4, 25, 985_000, ts=OPEN + 59_901_970)  # 7  level 1 goes, new order at level 2
    b.execute(1, 2, 5, match=1, ts=OPEN + 10**9)           # 8  execution: always listed
    b.delete(1, 3, ts=OPEN + 10**9 + 7)                    # 9  deletion at level 3
    b.add(1, 5, "S", 10, 1_010_000, ts=OPEN + 10**9 + 8)   # 10 ask level 1
    return b.write(tmp_path / "01022020.NASDAQ_ITCH50")


def lines(out, levels):
    stem = f"AAPL_2020-01-02_34200000_57600000_{{}}_{levels}.csv"
    return ((out / stem.format("message")).read_text().splitlines(),
            (out / stem.format("orderbook")).read_text().splitlines())


@pytest.mark.parametrize("workers", [1, 2])
def test_lobster_style_one_level_lists_only_level_one_events(tmp_path, workers):
    lobster(feed(tmp_path), tmp_path / "o", ["AAPL"], levels=1, workers=workers)
    messages, books = lines(tmp_path / "o", 1)
    assert messages == [
        "34200.000000001,1,1,100,1000000,1",
        "34200.05990197,3,1,100,1000000,1",      # the replace's deletion: level 1 goes
        "34201,4,2,5,990000,1",
        "34201.000000008,1,5,10,1010000,-1",
    ]
    assert books == [f"{A},0,1000000,100", f"{A},0,990000,30", f"{A},0,990000,25", "1010000,10,990000,25"]


def test_lobster_style_two_levels_replace_as_two_steps(tmp_path):
    lobster(feed(tmp_path), tmp_path / "o", ["AAPL"], levels=2, workers=1)
    messages, books = lines(tmp_path / "o", 2)
    assert messages == [
        "34200.000000001,1,1,100,1000000,1",
        "34200.000000002,1,2,50,990000,1",
        "34200.000000005,2,2,20,990000,1",
        "34200.05990197,3,1,100,1000000,1",
        "34200.05990197,1,4,25,985000,1",
        "34201,4,2,5,990000,1",
        "34201.000000008,1,5,10,1010000,-1",
    ]
    assert books == [
        f"{A},0,1000000,100,{A},0,{B},0",
        f"{A},0,1000000,100,{A},0,990000,50",
        f"{A},0,1000000,100,{A},0,990000,30",
        f"{A},0,990000,30,{A},0,980000,20",       # after the deletion step: level 3 moved up
        f"{A},0,990000,30,{A},0,985000,25",       # after the submission step
        f"{A},0,990000,25,{A},0,985000,25",
        f"1010000,10,990000,25,{A},0,985000,25",
    ]


def test_lobster_style_all_lists_every_event(tmp_path):
    lobster(feed(tmp_path), tmp_path / "o", ["AAPL"], levels=1, workers=1, style="all")
    messages, _ = lines(tmp_path / "o", 1)
    assert len(messages) == 10 and messages[0] == "34200.000000001,1,1,100,1000000,1"


def test_lobster_style_in_any_case_is_the_word(tmp_path):
    lobster(feed(tmp_path), tmp_path / "o", ["AAPL"], levels=1, workers=1, style="All")
    assert len(lines(tmp_path / "o", 1)[0]) == 10


def test_lobster_style_all_replace_deletion_row_shows_book_after_the_deletion(tmp_path):
    lobster(feed(tmp_path), tmp_path / "o", ["AAPL"], levels=2, workers=1, style="all")
    messages, books = lines(tmp_path / "o", 2)
    at = messages.index("34200.059901970,3,1,100,1000000,1")
    assert messages[at + 1] == "34200.059901970,1,4,25,985000,1"
    assert books[at] == f"{A},0,990000,30,{A},0,980000,20"      # the deletion step alone
    assert books[at + 1] == f"{A},0,990000,30,{A},0,985000,25"  # then the submission


def test_lobster_style_all_every_row_consistent_with_its_message_generated_day(tmp_path):
    """Each row's book differs from the row before's only by its own message: a submission
    adds, a deletion or cancellation takes off, at the message's price (levels=10 keeps every
    level of a small generated day in view)."""
    from obook.gen.itch import write_itch

    path = tmp_path / "01022020.NASDAQ_ITCH50"
    write_itch(path, 6000, 2, seed=9)
    lobster(path, tmp_path / "o", ["AAA"], levels=10, workers=1, style="all")
    stem = "AAA_2020-01-02_34200000_57600000_{}_10.csv"
    messages = (tmp_path / "o" / stem.format("message")).read_text().splitlines()
    books = (tmp_path / "o" / stem.format("orderbook")).read_text().splitlines()

    def side(line, direction):
        v = [int(x) for x in line.split(",")]
        pairs = [(v[i], v[i + 1]) for i in range(2 if direction == 1 else 0, len(v), 4)]
        return {px: q for px, q in pairs if q}

    replaces = checked = 0
    for k in range(1, len(messages)):
        _t, kind, _ref, size, price, direction = messages[k].split(",")
        kind, size, price, direction = int(kind), int(size), int(price), int(direction)
        if kind not in (1, 2, 3):
            continue
        before, after = side(books[k - 1], direction), side(books[k], direction)
        if len(before) == 10 or len(after) == 10:
            continue                     # a level may come from beyond the written ten
        want = dict(before)
        want[price] = want.get(price, 0) + (size if kind == 1 else -size)
        assert {p: q for p, q in want.items() if q} == after, (k, messages[k])
        checked += 1
        replaces += kind == 3 and k + 1 < len(messages) and messages[k + 1].split(",")[0] == messages[k].split(",")[0]
    assert checked > 100 and replaces > 5, (checked, replaces)


def test_lobster_more_levels_lists_more_events_generated_day(tmp_path):
    from obook.gen.itch import write_itch

    path = tmp_path / "01022020.NASDAQ_ITCH50"
    write_itch(path, 20_000, 3, seed=4)
    one = lobster(path, tmp_path / "one", ["AAA"], levels=1, workers=1)["AAA"]["rows"]
    ten = lobster(path, tmp_path / "ten", ["AAA"], levels=10, workers=1)["AAA"]["rows"]
    every = lobster(path, tmp_path / "all", ["AAA"], levels=1, workers=1, style="all")["AAA"]["rows"]
    assert 0 < one < ten <= every


@pytest.mark.parametrize("ns,text", [(34_200_059_901_970, "34200.05990197"), (34_200 * 10**9, "34200"),
                                     (34_200_000_000_001, "34200.000000001"), (0, "0"),
                                     (57_599_500_000_000, "57599.5")])
def test_seconds_short_shortest_form(ns, text):
    assert _seconds_short(ns) == text


@pytest.mark.parametrize("style", ["lobster", "all"])
def test_lobster_many_small_batches_same_files_as_one_batch(tmp_path, monkeypatch, style):
    """The files are built a batch of records at a time, the book and the live orders (a
    replace's deletion row needs its order's price and shares) carried from one batch to
    the next: 4 KiB reads (hundreds of batches) write the same bytes as one batch."""
    import obook.engine.replay as replay
    import obook.lobster as module
    from obook.gen.itch import write_itch

    path = tmp_path / "01022020.NASDAQ_ITCH50"
    write_itch(path, 20_000, 2, seed=5)
    lobster(path, tmp_path / "one", ["AAA", "AAB"], levels=3, workers=1, style=style)
    real, groups = replay.Replay, module._batches

    def counted(*args):
        for tables in groups(*args):
            counted.n += 1
            yield tables

    counted.n = 0
    class SmallBlocks(real):
        def __init__(self, *a, **kw):
            super().__init__(*a, **{**kw, "block_size": 4096})

    monkeypatch.setattr(replay, "Replay", SmallBlocks)
    monkeypatch.setattr(module, "_batches", counted)
    lobster(path, tmp_path / "many", ["AAA", "AAB"], levels=3, workers=1, style=style)
    assert counted.n > 50
    for one in sorted((tmp_path / "one").iterdir()):
        many = (tmp_path / "many" / one.name).read_bytes()
        assert many == one.read_bytes() and len(many) > 1000, one.name
