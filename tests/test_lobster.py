"""obook lobster: the LOBSTER message/orderbook files of a hand-built feed, line by line."""

import pytest
import typer
from typer.testing import CliRunner

import obook
from obook.errors import FeedError, ObookError

from itch_builder import ItchBuilder

_missing = [name for name in ("trades", "orders", "depth") if not hasattr(obook, name)]
pytestmark = pytest.mark.skipif(bool(_missing), reason=f"obook.{', obook.'.join(_missing)} "
                                "not in the engine yet: lobster is built on them")

OPEN = 34_200 * 10**9
A, B = 9_999_999_999, -9_999_999_999      # LOBSTER's dummy prices of a missing level


def feed(tmp_path, name="01022020.NASDAQ_ITCH50"):
    """AAPL (locate 1) with every event type; MSFT (locate 2) to be filtered out."""
    b = ItchBuilder()
    b.directory(1, "AAPL", ts=30_000 * 10**9)                  # 1
    b.directory(2, "MSFT")                                     # 2
    b.add(1, 7, "S", 10, 1_020_000)                            # 3  before 09:30: in the book, no row
    b.add(1, 1, "B", 100, 1_000_000, ts=OPEN + 1_000)          # 4
    b.add(2, 5, "S", 10, 500_000)                              # 5  MSFT
    b.add(1, 2, "S", 50, 1_010_000, mpid="GSCO")               # 6  F
    b.add(1, 3, "B", 20, 990_000)                              # 7  bid level 2
    b.cancel(1, 1, 30)                                         # 8  partial cancel
    b.execute(1, 2, 10, match=1)                               # 9
    b.execute_price(1, 2, 5, 1_010_100, match=2)               # 10 C: the order's price in LOBSTER
    b.replace(1, 3, 4, 25, 995_000)                            # 11 two rows
    b.trade(1, 0, "S", 100, 1_005_000, match=3)                # 12 hidden execution
    b.cross(1, 1000, 1_005_000, match=4, cross_type="O")       # 13
    b.broken(3, locate=1)                                      # 14 no row
    b.trading_action(1, "H")                                   # 15
    b.trading_action(1, "T")                                   # 16
    b.cancel(1, 4, 25)                                         # 17 cancel of everything: 3
    b.delete(1, 2)                                             # 18
    b.delete(2, 5)                                             # 19 MSFT
    b.add(1, 9, "B", 1, 1_000_000, ts=57_600 * 10**9)          # 20 16:00: outside the window
    return b.write(tmp_path / name)


def expected_lines(path):
    c = -1                                                     # an opening cross
    t = [f"34200.{k:06d}000" for k in range(1, 20)]
    # ask1 px,size, bid1 px,size, ask2 px,size, bid2 px,size
    messages = [
        (f"{t[0]},1,1,100,1000000,1", f"1020000,10,1000000,100,{A},0,{B},0"),
        (f"{t[2]},1,2,50,1010000,-1", f"1010000,50,1000000,100,1020000,10,{B},0"),
        (f"{t[3]},1,3,20,990000,1", "1010000,50,1000000,100,1020000,10,990000,20"),
        (f"{t[4]},2,1,30,1000000,1", "1010000,50,1000000,70,1020000,10,990000,20"),
        (f"{t[5]},4,2,10,1010000,-1", "1010000,40,1000000,70,1020000,10,990000,20"),
        (f"{t[6]},4,2,5,1010000,-1", "1010000,35,1000000,70,1020000,10,990000,20"),
        (f"{t[7]},3,3,20,990000,1", f"1010000,35,1000000,70,1020000,10,{B},0"),   # after the delete half
        (f"{t[7]},1,4,25,995000,1", "1010000,35,1000000,70,1020000,10,995000,25"),
        (f"{t[8]},5,0,100,1005000,-1", "1010000,35,1000000,70,1020000,10,995000,25"),
        (f"{t[9]},6,{c},1000,1005000,-1", "1010000,35,1000000,70,1020000,10,995000,25"),
        (f"{t[11]},7,0,0,-1,-1", "1010000,35,1000000,70,1020000,10,995000,25"),
        (f"{t[12]},7,0,0,1,-1", "1010000,35,1000000,70,1020000,10,995000,25"),
        (f"{t[13]},3,4,25,995000,1", f"1010000,35,1000000,70,1020000,10,{B},0"),
        (f"{t[14]},3,2,35,1010000,-1", f"1020000,10,1000000,70,{A},0,{B},0"),
    ]
    return [m for m, _ in messages], [o for _, o in messages]


def test_lobster_hand_built_feed_hand_checked_lines(tmp_path):
    path = feed(tmp_path)
    out = tmp_path / "out"
    result = run_lobster(path, out, ["AAPL"], levels=2)
    msg = out / "AAPL_2020-01-02_34200000_57600000_message_2.csv"
    book = out / "AAPL_2020-01-02_34200000_57600000_orderbook_2.csv"
    assert result["AAPL"]["message"] == msg and result["AAPL"]["orderbook"] == book
    assert sorted(p.name for p in out.iterdir()) == sorted([msg.name, book.name])
    messages, books = expected_lines(path)
    assert msg.read_text().splitlines() == messages
    assert book.read_text().splitlines() == books
    assert result["AAPL"]["rows"] == len(messages)


def run_lobster(*args, **kw):
    """obook's earlier output (every event, 9 decimals): ``style="all"``; the LOBSTER style
    has its own tests (test_lobster_style.py)."""
    from obook.lobster import lobster
    kw.setdefault("style", "all")
    return lobster(*args, **kw)


@pytest.mark.parametrize("style", ["lobster", "all"])
def test_lobster_cross_type_gives_the_cross_order_id(tmp_path, style):
    b = ItchBuilder()
    b.directory(1, "AAPL", ts=30_000 * 10**9)
    b.add(1, 1, "B", 100, 1_000_000, ts=OPEN + 1_000)
    for k, kind in enumerate("OCHIZ"):                   # Z: no type of the spec's
        b.cross(1, 100 + k, 1_000_000 + k, match=10 + k, cross_type=kind)
    path = b.write(tmp_path / "01022020.NASDAQ_ITCH50")
    from obook.lobster import lobster
    lobster(path, tmp_path / "out", ["AAPL"], levels=1, style=style)
    lines = (tmp_path / "out" / "AAPL_2020-01-02_34200000_57600000_message_1.csv").read_text().splitlines()
    crosses = [ln.split(",") for ln in lines if ln.split(",")[1] == "6"]
    assert [(c[2], c[3]) for c in crosses] == [("-1", "100"), ("-2", "101"), ("-3", "102"), ("-4", "103"),
                                               ("-4", "104")]


def test_lobster_two_tickers_each_gets_own_files(tmp_path):
    path = feed(tmp_path)
    out = tmp_path / "out"
    result = run_lobster(path, out, "AAPL,MSFT", levels=1)
    msft = (out / "MSFT_2020-01-02_34200000_57600000_message_1.csv").read_text().splitlines()
    assert msft == ["34200.000002000,1,5,10,500000,-1", "34200.000016000,3,5,10,500000,-1"]
    assert (out / "MSFT_2020-01-02_34200000_57600000_orderbook_1.csv").read_text().splitlines() == [
        f"500000,10,{B},0", f"{A},0,{B},0"]
    assert result["AAPL"]["rows"] == 14
    aapl = (out / "AAPL_2020-01-02_34200000_57600000_orderbook_1.csv").read_text().splitlines()
    assert aapl == [",".join(line.split(",")[:4]) for line in expected_lines(path)[1]]


def test_lobster_unknown_ticker_empty_files(tmp_path):
    path = feed(tmp_path)
    result = run_lobster(path, tmp_path / "out", ["NOPE"], levels=10)
    assert result["NOPE"]["rows"] == 0
    assert result["NOPE"]["message"].read_text() == ""
    assert result["NOPE"]["orderbook"].read_text() == ""


def test_lobster_date_option_names_files_of_any_feed_name(tmp_path):
    path = feed(tmp_path, name="day.itch")
    run_lobster(path, tmp_path / "out", ["AAPL"], levels=2, date="2021-03-04")
    assert (tmp_path / "out" / "AAPL_2021-03-04_34200000_57600000_message_2.csv").exists()


def test_lobster_no_date_known_raises_obook_error(tmp_path):
    path = feed(tmp_path, name="day.itch")
    with pytest.raises(ObookError, match=r"session date.*give the date \(--date / date= YYYY-MM-DD\)"):
        run_lobster(path, tmp_path / "out", ["AAPL"])


def test_lobster_itch_name_with_iso_date_not_nasdaq_rule_raises_obook_error(tmp_path):
    path = feed(tmp_path, name="nasdaq_20191230.itch")     # ITCH's rule is MMDDYYYY.NASDAQ_ITCH50
    with pytest.raises(ObookError, match="session date"):
        run_lobster(path, tmp_path / "out", ["AAPL"])
    assert "timestamp" not in obook.bbo(path, workers=1).schema.names     # as the tables


@pytest.mark.parametrize("workers", [1, 2])
def test_lobster_failing_record_raises_keeps_the_row_before_it_as_partial(tmp_path, workers):
    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.add(1, 1, "B", 100, 1_000_000, ts=OPEN)
    b.delete(1, 99)
    path = b.write(tmp_path / "01022020.NASDAQ_ITCH50")
    out = tmp_path / "out"
    with pytest.raises(FeedError) as info:
        run_lobster(path, out, ["AAPL"], levels=1, workers=workers)
    assert info.value.record == 3
    stem = out / "AAPL_2020-01-02_34200000_57600000"
    assert (out / f"{stem.name}_message_1.csv.partial").read_text() == "34200.000000000,1,1,100,1000000,1\n"
    assert (out / f"{stem.name}_orderbook_1.csv.partial").read_text() == f"{A},0,1000000,100\n"
    assert sorted(p.name for p in out.iterdir()) == [f"{stem.name}_message_1.csv.partial",
                                                     f"{stem.name}_orderbook_1.csv.partial"]


def test_lobster_failing_record_with_no_row_before_it_leaves_no_files(tmp_path):
    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.add(1, 1, "B", 100, 1_000_000, ts=OPEN - 1)       # before 09:30: in the book, no row
    b.delete(1, 99)
    path = b.write(tmp_path / "01022020.NASDAQ_ITCH50")
    out = tmp_path / "out"
    with pytest.raises(FeedError):
        run_lobster(path, out, ["AAPL"], workers=1)
    assert not out.exists()         # no file, and the folder the call made goes too


def test_lobster_same_files_for_any_worker_count(tmp_path):
    from obook.gen.itch import write_itch
    path = tmp_path / "01022020.NASDAQ_ITCH50"
    write_itch(path, 20_000, 3, seed=4)
    one, three = tmp_path / "one", tmp_path / "three"
    run_lobster(path, one, ["AAA", "AAB"], levels=5, workers=1)
    run_lobster(path, three, ["AAA", "AAB"], levels=5, workers=3)
    names = sorted(p.name for p in one.iterdir())
    assert len(names) == 4 and names == sorted(p.name for p in three.iterdir())
    for name in names:
        assert (one / name).read_bytes() == (three / name).read_bytes()
    lines = (one / names[0]).read_text().splitlines()
    assert len(lines) > 1000


def test_lobster_cli_writes_files(tmp_path):
    from obook.cli.lobster import lobster as command
    app = typer.Typer()
    app.command()(command)
    path = feed(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [str(path), str(out), "--tickers", "AAPL", "--levels", "2", "--workers", "1",
                                      "--style", "all"])
    assert result.exit_code == 0, result.output
    assert (out / "AAPL_2020-01-02_34200000_57600000_message_2.csv").read_text().splitlines() == \
        expected_lines(path)[0]


def test_lobster_names_ticker_with_path_separators_stays_in_the_folder():
    import datetime as dt
    import os

    from obook.lobster import lobster_names

    for name in lobster_names("../escaped", dt.date(2019, 12, 30), 10) + lobster_names("a\\b", dt.date(2019, 12, 30), 5):
        assert os.sep not in name and "\\" not in name and os.path.dirname(name) == ""


def test_lobster_missing_feed_raises_obook_error_makes_no_folder(tmp_path):
    out = tmp_path / "new" / "out"
    with pytest.raises(ObookError, match="no such feed file"):
        run_lobster(tmp_path / "01022020.NASDAQ_ITCH50", out, ["AAPL"])
    assert not (tmp_path / "new").exists()


def test_lobster_failing_record_removes_the_folders_it_made(tmp_path):
    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.delete(1, 99)
    path = b.write(tmp_path / "01022020.NASDAQ_ITCH50")
    with pytest.raises(FeedError):
        run_lobster(path, tmp_path / "new" / "out", ["AAPL"], workers=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_lobster_final_name_a_directory_raises_before_any_file_is_written(tmp_path):
    path = feed(tmp_path)
    out = tmp_path / "out"
    blocked = out / "MSFT_2020-01-02_34200000_57600000_orderbook_1.csv"
    blocked.mkdir(parents=True)
    with pytest.raises(ObookError, match=f"{blocked}: is a directory"):
        run_lobster(path, out, ["AAPL", "MSFT"], levels=1, workers=1)
    assert [p.name for p in out.iterdir()] == [blocked.name]     # AAPL's pair not written either


@pytest.mark.parametrize("tickers", [None, [1, 2], ["", " "]])
def test_lobster_tickers_not_text_raises_obook_error(tmp_path, tickers):
    with pytest.raises(ObookError, match="tickers"):
        run_lobster(feed(tmp_path), tmp_path / "out", tickers)
    assert not (tmp_path / "out").exists()


def _deep_bids_and_a_replace(tmp_path, n):
    """AAPL with ``n`` bid levels (1_000_000 down by 100, level k + 1 holding 10 + k shares),
    then the best bid's order replaced at a better price: its level goes."""
    b = ItchBuilder()
    b.directory(1, "AAPL", ts=30_000 * 10**9)
    for k in range(n):
        b.add(1, k + 1, "B", 10 + k, 1_000_000 - 100 * k, ts=OPEN + 1_000 * (k + 1))
    b.replace(1, 1, 1000, 10, 1_000_050)
    return b.write(tmp_path / "01022020.NASDAQ_ITCH50")


@pytest.mark.parametrize("levels", [49, 50])
def test_lobster_replace_at_the_deepest_levels_deletion_row_shows_the_next_level(tmp_path, levels):
    path = _deep_bids_and_a_replace(tmp_path, 51)
    result = run_lobster(path, tmp_path / "out", ["AAPL"], levels=levels, workers=1)
    rows = open(result["AAPL"]["orderbook"]).read().splitlines()
    deletion, submission = rows[-2].split(","), rows[-1].split(",")
    # the deletion step: levels 2 .. levels + 1 of the book before it; its last the level below the file's
    assert deletion[2::4] == [str(1_000_000 - 100 * k) for k in range(1, levels + 1)]
    assert deletion[3::4] == [str(10 + k) for k in range(1, levels + 1)]
    assert submission[2:4] == ["1000050", "10"] and submission[-2:] == [str(1_000_000 - 100 * (levels - 1)),
                                                                       str(10 + levels - 1)]


def _cut_day(tmp_path):
    """A generated day cut inside a record two thirds in, and the whole day beside it."""
    from obook.gen.itch import write_itch

    whole = tmp_path / "whole" / "01022020.NASDAQ_ITCH50"
    whole.parent.mkdir()
    write_itch(whole, 20_000, 3, seed=4)
    cut = tmp_path / "01022020.NASDAQ_ITCH50"
    data = whole.read_bytes()
    cut.write_bytes(data[:len(data) * 2 // 3])
    return whole, cut


@pytest.mark.parametrize("workers", [1, 2])
def test_lobster_cut_feed_keeps_the_rows_before_the_bad_record_as_partial(tmp_path, workers):
    whole, cut = _cut_day(tmp_path)
    run_lobster(whole, tmp_path / "full", ["AAA", "AAB"], levels=5, workers=workers)
    out = tmp_path / "out"
    with pytest.raises(FeedError, match="truncated record") as info:
        run_lobster(cut, out, ["AAA", "AAB"], levels=5, workers=workers)
    assert info.value.kept_in == str(out / "TICKER_2020-01-02_34200000_57600000_{message,orderbook}_5.csv.partial")
    kept = sorted(p.name for p in out.iterdir())
    assert kept == sorted(p.name + ".partial" for p in (tmp_path / "full").iterdir())
    for name in kept:
        rows = (out / name).read_text().splitlines()
        full = (tmp_path / "full" / name[:-len(".partial")]).read_text().splitlines()
        assert 100 < len(rows) < len(full) and rows == full[:len(rows)]
    run_lobster(whole, out, ["AAA", "AAB"], levels=5, workers=workers)     # complete: the partial ones go
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (tmp_path / "full").iterdir())


def test_lobster_cli_cut_feed_error_names_record_and_the_partial_files(tmp_path, capsys):
    from cli_support import cli_error

    _, cut = _cut_day(tmp_path)
    out = tmp_path / "out"
    err = cli_error(capsys, "lobster", cut, out, "-k", "AAA", "-w", "1")
    assert f"error: {cut}: message " in err and "truncated record" in err
    assert err.endswith(f"(the rows before it are in {out}/AAA_2020-01-02_34200000_57600000_"
                        "{message,orderbook}_10.csv.partial)\n"), err
    assert sorted(p.name for p in out.iterdir()) == ["AAA_2020-01-02_34200000_57600000_message_10.csv.partial",
                                                     "AAA_2020-01-02_34200000_57600000_orderbook_10.csv.partial"]


def test_lobster_ctrl_c_between_renames_names_every_file(tmp_path, monkeypatch, python_sigint):
    from interrupt_support import ctrl_c_after_first_replace

    path = feed(tmp_path)
    out = tmp_path / "out"
    renamed = ctrl_c_after_first_replace(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        run_lobster(path, out, "AAPL,MSFT", levels=1)
    assert renamed
    assert sorted(p.name for p in out.iterdir()) == [f"{t}_2020-01-02_34200000_57600000_{kind}_1.csv"
                                                     for t in ("AAPL", "MSFT") for kind in ("message", "orderbook")]


@pytest.fixture
def open_files_soft_limit():
    """The soft limit of open files set to 64 for the test (the hard one as it is), put back after."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    yield resource
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_lobster_more_files_than_the_open_files_soft_limit_written_limit_put_back(tmp_path, open_files_soft_limit):
    resource = open_files_soft_limit
    tickers = ["AAPL", "MSFT"] + [f"T{i}" for i in range(40)]        # 84 files open together
    result = run_lobster(feed(tmp_path), tmp_path / "out", tickers, levels=1, workers=1)
    assert result["AAPL"]["rows"] == 14 and result["T39"]["rows"] == 0
    assert len(list((tmp_path / "out").iterdir())) == 84
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 64


def test_lobster_more_files_than_the_open_files_hard_limit_output_error_no_folder(tmp_path, monkeypatch):
    import resource

    from obook.errors import OutputError

    monkeypatch.setattr(resource, "getrlimit", lambda which: (64, 64))
    tickers = ["AAPL", "MSFT"] + [f"T{i}" for i in range(40)]
    with pytest.raises(OutputError, match=r"^42 tickers' LOBSTER files \(84\) are open together through the replay: "
                                          r"more than the open files limit allows \(64, ulimit -n\); "):
        run_lobster(feed(tmp_path), tmp_path / "new" / "out", tickers, levels=1, workers=1)
    assert not (tmp_path / "new").exists()


def test_lobster_stream_feed_obook_error_a_file_is_read_twice(tmp_path):
    path = feed(tmp_path)
    with open(path, "rb") as f:
        with pytest.raises(ObookError, match=r"^.*01022020\.NASDAQ_ITCH50: a stream; LOBSTER output reads the feed "
                                             r"twice \(its trading actions first\): give its file's path$"):
            run_lobster(f, tmp_path / "out", ["AAPL"])
    assert not (tmp_path / "out").exists()


def test_lobster_named_pipe_feed_obook_error_without_the_stream_hint(tmp_path):
    import os

    pipe = tmp_path / "feed.fifo"
    os.mkfifo(pipe)
    with pytest.raises(ObookError) as e:
        run_lobster(pipe, tmp_path / "out", ["AAPL"], date="2020-01-02")
    assert str(e.value) == (f"{pipe}: a named pipe (FIFO), not a feed file; LOBSTER output reads the feed twice "
                            "(its trading actions first): give a file")
