"""obook plot backtest: the figure's data is the run's (fills at their prices and times,
equity the equity table), the PNG and the HTML page it draws, and the command's refusals."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from obook.cli import app
from tests.cli_support import cli_error, cli_run

pytest.importorskip("matplotlib")
from PIL import Image  # noqa: E402  (matplotlib's own dependency)

OPEN = 34_200_000          # 09:30 in the CSV feed's milliseconds since midnight

STRATEGY = '''
from obook.backtest.orders import Order


class Flip:
    """Every fourth book change: buys 10 at the ask when flat, else sells 10 at the bid (IOC)."""

    def __init__(self):
        self.calls, self.ref = 0, 0

    def on_book(self, ctx):
        self.calls += 1
        bid, _, ask, _ = ctx.top()
        if self.calls % 4 or bid is None or ask is None:
            return None
        self.ref += 1
        if ctx.position() <= 0:
            return [Order("enter", "AAA", "B", 10, ask, ref=self.ref, tif="IOC")]
        return [Order("enter", "AAA", "S", 10, bid, ref=self.ref, tif="IOC")]
'''


def write_day(path, seed: int, n: int = 40):
    """A CSV day of one instrument: each second a new bid and ask around a random walk, the
    ones of two seconds before deleted."""
    rng = random.Random(seed)
    lines, mid, t = ["Time,Ticker,Order,T,Shares,Price"], 10_000, OPEN
    for i in range(n):
        t += 1000
        mid += rng.choice((-10, 0, 10))
        lines += [f"{t},AAA,b{i},B,100,{mid - 10}", f"{t + 1},AAA,s{i},S,100,{mid + 10}"]
        if i >= 2:
            lines += [f"{t + 2},AAA,b{i - 2},D,0,0", f"{t + 3},AAA,s{i - 2},D,0,0"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A day, the strategy's file and the folder obook backtest -o wrote."""
    d = tmp_path_factory.mktemp("plot_backtest")
    day = write_day(d / "day.csv", 1)
    (d / "flip.py").write_text(STRATEGY)
    r = CliRunner().invoke(app, ["backtest", str(day), "--strategy", f"{d / 'flip.py'}:Flip", "-f", "csv",
                                 "-o", str(d / "out")])
    assert r.exit_code == 0, r.output
    return d


def _pixels(path):
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(path).convert("RGB"))


def test_plot_backtest_series_fills_and_equity_are_the_tables(run):
    import pyarrow.parquet as pq

    from obook.plotting_backtest import backtest_series

    d = backtest_series(run / "out")
    fills = pq.read_table(run / "out" / "backtest.fills.parquet").to_pylist()
    equity = pq.read_table(run / "out" / "backtest.equity.parquet").to_pylist()
    assert len(fills) > 10 and {f["side"] for f in fills} == {"B", "S"}
    for key, side in (("buys", "B"), ("sells", "S")):
        mine = [f for f in fills if f["side"] == side]
        # CSV times are ms since midnight, prices 1/10,000 of a dollar
        assert np.allclose(d[key][0], [f["time"] / 3_600_000 for f in mine])
        assert np.allclose(d[key][1], [f["price"] / 10_000 for f in mine])
        assert list(d[key][2]) == [f["quantity"] for f in mine]
    # an IOC buy at the ask it saw: each buy is at a best ask the book showed
    asks = set(np.round(d["price"]["ask"][1], 6))
    assert set(np.round(d["buys"][1], 6)) <= asks
    assert np.allclose(d["equity"][0], [e["time"] / 3_600_000 for e in equity])
    assert np.allclose(d["equity"][1], [float(e["equity"]) / 10_000 for e in equity])
    assert list(d["position"][1]) == [e["position"] for e in equity]
    assert d["tz"] == "America/New_York" and d["t0"] == pytest.approx((OPEN + 1000) / 3_600_000)


def test_plot_backtest_python_result_without_feed_draws_marks(run, tmp_path):
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy
    from obook.plotting_backtest import backtest_series, plot_backtest

    r = backtest(str(run / "day.csv"), load_strategy(f"{run / 'flip.py'}:Flip"), format="csv")
    d = backtest_series(r, format="csv", start=OPEN + 20_000)
    times = r.equity.column("time").to_numpy()
    keep = times >= OPEN + 20_000
    marks = [float(m) / 10_000 for m in r.equity.column("mark").to_pylist() if m is not None]
    assert np.allclose(d["price"]["mark"][1], marks[-keep.sum() - 1:])     # (the first: the mark held at the start)
    assert d["price"]["mark"][0][0] * 3_600_000 == pytest.approx(OPEN + 20_000)
    first = min(d["buys"][0].min(), d["sells"][0].min())
    assert round(first * 3_600_000) >= OPEN + 20_000
    px = _pixels(plot_backtest(r, tmp_path / "r.png", format="csv", width=8, height=6, dpi=50))
    assert px.shape == (300, 400, 3)


def test_plot_backtest_cli_png_of_the_folder(run, tmp_path):
    out = tmp_path / "bt.png"
    r = CliRunner().invoke(app, ["plot", "backtest", str(run / "out"), str(out), "--start", "09:30:10"])
    assert r.exit_code == 0, r.output
    px = _pixels(out)
    assert px.shape[:2] == (800, 1200)
    green = (px[..., 1] > 120) & (px[..., 0] < 80) & (px[..., 2] < 80)
    red = (px[..., 0] > 180) & (px[..., 1] < 80) & (px[..., 2] < 80)
    assert green.sum() > 50 and red.sum() > 50          # buy and sell markers


def test_plot_backtest_cli_empty_format_is_the_runs_as_when_left_out(run, tmp_path):
    out = tmp_path / "bt.png"
    r = CliRunner().invoke(app, ["plot", "backtest", str(run / "out"), str(out), "--format", ""])
    assert r.exit_code == 0, r.output
    assert _pixels(out).shape[:2] == (800, 1200)


def test_plot_backtest_cli_empty_format_without_run_json_asks_for_the_feed(run, tmp_path, capsys):
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "backtest.fills.parquet").write_bytes((run / "out" / "backtest.fills.parquet").read_bytes())
    err = cli_error(capsys, "plot", "backtest", tmp_path / "bare", tmp_path / "x.png", "--format", "")
    assert "no run.json naming the run's feed: give it with --feed" in err


def test_plot_backtest_cli_folder_of_no_run_refused_as_not_a_backtest_folder(tmp_path, capsys):
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "bbo.parquet").write_bytes(b"PAR1")      # (obook convert's folder, say)
    err = cli_error(capsys, "plot", "backtest", tmp_path / "tables", tmp_path / "x.png")
    assert err == (f"error: {tmp_path / 'tables'}: not a backtest folder (obook backtest FEED --strategy ... "
                   "-o DIR writes one)\n")


@pytest.mark.parametrize("args, message", [
    (["--start", "09:31", "--end", "09:30"], "--start 09:31 is not before --end 09:30"),
    (["--end", "25:00"], "between 00:00 and 24:00"),
    (["--start", "09:30:nan"], "--start: a time of day is HH:MM, HH:MM:SS or HH:MM:SS.fff (minutes and seconds "
                               "below 60), not '09:30:nan'"),
    (["-k", "BBB"], "no instrument 'BBB'"),
])
def test_plot_backtest_cli_bad_window_or_ticker_refused(run, tmp_path, capsys, args, message):
    err = cli_error(capsys, "plot", "backtest", run / "out", tmp_path / "x.png", *args)
    assert message in err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("args, message", [
    (["-l", "5"], "obook plot backtest: --levels is for a feed's picture"),
    (["-i", "5s", "-w", "2"], "obook plot backtest: --interval, --workers are for a feed's picture"),
])
def test_plot_backtest_cli_feed_picture_options_refused(run, tmp_path, capsys, args, message):
    err = cli_error(capsys, "plot", "backtest", run / "out", tmp_path / "x.png", *args)
    assert message in err
    assert not (tmp_path / "x.png").exists()


def test_plot_backtest_cli_dash_picture_refused(run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = cli_error(capsys, "plot", "backtest", run / "out", "-")
    assert "-: a picture goes to a file" in err
    assert list(tmp_path.iterdir()) == []


def test_plot_backtest_cli_not_a_folder_refused(run, tmp_path, capsys):
    err = cli_error(capsys, "plot", "backtest", run / "day.csv", tmp_path / "x.png", "-f", "csv")
    assert "not a backtest folder" in err


def test_plot_backtest_cli_missing_folder_says_there_is_none(tmp_path, capsys):
    err = cli_error(capsys, "plot", "backtest", tmp_path / "nothere", tmp_path / "x.png")
    assert err.startswith(f"error: {tmp_path / 'nothere'}: no such folder (obook backtest FEED"), err
    assert list(tmp_path.iterdir()) == []


def test_plot_backtest_many_days_needs_a_date(tmp_path, capsys):
    days = [write_day(tmp_path / f"d{i}.csv", i, n=12) for i in (1, 2)]
    (tmp_path / "flip.py").write_text(STRATEGY)
    r = CliRunner().invoke(app, ["backtest", *map(str, days), "--strategy", f"{tmp_path / 'flip.py'}:Flip",
                                 "-f", "csv", "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    err = cli_error(capsys, "plot", "backtest", tmp_path / "out", tmp_path / "x.png")
    assert "the run has 2 days: name one with --date (d1, d2)" in err
    from obook.plotting_backtest import backtest_series

    d = backtest_series(tmp_path / "out", date="d2")
    assert d["price"]["bid"][0].size > 0                 # d2's feed replayed for the price


def test_plot_backtest_days_of_two_formats_each_drawn_with_its_own(tmp_path, capsys):
    import json

    from obook.gen.pitch import write_pitch
    from obook.plotting_backtest import backtest_series

    csv_day = write_day(tmp_path / "d1.csv", 1, n=12)
    pitch_day = tmp_path / "d2.pitch"
    write_pitch(pitch_day, 3000, 2, seed=3)
    (tmp_path / "flip.py").write_text(STRATEGY)
    r = CliRunner().invoke(app, ["backtest", str(csv_day), str(pitch_day), "--strategy",
                                 f"{tmp_path / 'flip.py'}:Flip", "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    days = {Path(f).name: day for day, f in run["feeds"].items()}
    assert run["formats"] == {days["d1.csv"]: "csv", days["d2.pitch"]: "pitch"}
    for name in ("d1.csv", "d2.pitch"):
        d = backtest_series(tmp_path / "out", date=days[name])
        assert d["price"]["bid"][0].size > 0, name           # each day's feed replayed in its format
    code, err = cli_run(capsys, "plot", "backtest", tmp_path / "out", tmp_path / "p.png", "--date", days["d2.pitch"])
    assert code == 0 and (tmp_path / "p.png").stat().st_size > 0, err


def test_plot_backtest_html_in_headless_chromium_no_console_errors_not_blank(run, tmp_path):
    from obook.plotting_backtest import plot_backtest

    from tests.browser_support import chromium_screenshot

    pytest.importorskip("plotly")
    page = plot_backtest(run / "out", tmp_path / "p.html")
    console, shot = chromium_screenshot(page, tmp_path)
    assert console == []
    px = _pixels(shot)
    assert px.shape[:2] == (800, 1200)
    green = (px[..., 1] > 100) & (px[..., 0] < 60) & (px[..., 2] < 60)
    assert green.sum() > 50                               # the buy markers and the equity line
    assert len({tuple(c) for c in px.reshape(-1, 3)}) > 100


def test_plot_backtest_of_a_run_a_strategy_error_stopped(run, tmp_path):
    (tmp_path / "late.py").write_text(STRATEGY + '''

class Late(Flip):
    """Flip until its 60th book change, then raises."""

    def on_book(self, ctx):
        if self.calls >= 60:
            raise RuntimeError("late")
        return super().on_book(ctx)
''')
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["backtest", str(run / "day.csv"), "--strategy", f"{tmp_path / 'late.py'}:Late",
                                 "-f", "csv", "-o", str(out)])
    assert r.exit_code != 0 and (out / "backtest.fills.parquet.partial").is_file()
    from obook.plotting_backtest import backtest_series

    d = backtest_series(out)
    assert 0 < len(d["buys"][0]) + len(d["sells"][0]) < 20        # the fills before the error
    assert d["price"]["bid"][0].size > 0                          # the feed, from run.json


@pytest.mark.parametrize("text, says", [("[]", "not a run's description"), ('{"format": "itch"', "not JSON")])
def test_plot_backtest_damaged_run_json_names_it(tmp_path, text, says):
    from obook.errors import ObookError
    from obook.plotting_backtest import run_format

    (tmp_path / "run.json").write_text(text)
    with pytest.raises(ObookError, match=says):
        run_format(tmp_path)


def test_plot_backtest_unknown_instrument_lists_first_ten_and_the_count(tmp_path):
    from types import SimpleNamespace

    import pyarrow as pa

    from obook.errors import ObookError
    from obook.plotting_backtest import backtest_series

    names = [f"S{i:03d}" for i in range(100)]
    equity = pa.table({"instrument": names, "time": [OPEN] * 100})
    fills = pa.table({"instrument": pa.array([], pa.string()), "time": pa.array([], pa.int64())})
    with pytest.raises(ObookError) as e:
        backtest_series(SimpleNamespace(equity=equity, fills=fills), format="csv", ticker="ZZZ")
    assert str(e.value) == ("the run has no instrument 'ZZZ' (has: S000, S001, S002, S003, S004, S005, S006, "
                            "S007, S008, S009, ... (100 in all))")


def test_plot_backtest_one_day_run_date_not_its_day_refused(run, tmp_path, capsys):
    import shutil

    from obook.errors import ObookError
    from obook.plotting_backtest import backtest_series

    err = cli_error(capsys, "plot", "backtest", run / "out", tmp_path / "x.png", "--date", "2024-03-01")
    assert "--date 2024-03-01: the run is one day, of no known date (its feed names none)" in err
    dated = shutil.copy(run / "day.csv", tmp_path / "2024-03-01.csv")       # the same day, its date in the name
    with pytest.raises(ObookError, match=r"--date 2024-03-04: the run is one day, 2024-03-01 \(its feed .*\), "
                                         r"not 2024-03-04"):
        backtest_series(run / "out", feed=dated, date="2024-03-04")
    d = backtest_series(run / "out", feed=dated, date="2024-03-01")
    assert d["price"]["bid"][0].size > 0
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("table, change, says", [
    ("fills", lambda t: t.drop_columns(["instrument"]), "no column instrument"),
    ("equity", lambda t: t.drop_columns(["equity"]), "no column equity"),
    ("fills", lambda t: t.set_column(t.schema.get_field_index("price"), "price",
                                     t.column("price").cast("string")), "column price is string, not numbers"),
    ("equity", lambda t: t.set_column(t.schema.get_field_index("instrument"), "instrument",
                                      pa.array(range(t.num_rows))), "column instrument is int64, not text"),
])
def test_plot_backtest_table_without_a_column_or_of_wrong_type_one_line_error(run, tmp_path, capsys, table,
                                                                              change, says):
    import shutil

    import pyarrow.parquet as pq

    folder = tmp_path / "out"
    shutil.copytree(run / "out", folder)
    path = folder / f"backtest.{table}.parquet"
    pq.write_table(change(pq.read_table(path)), path)
    err = cli_error(capsys, "plot", "backtest", folder, tmp_path / "p.png")
    assert err == f"error: {path}: not a backtest table ({says})\n"
    assert not (tmp_path / "p.png").exists()


def test_plot_backtest_series_of_a_shanghai_run_position_in_shares_equity_in_the_currency(tmp_path):
    continuous = (9 * 3600 + 30 * 60) * 10**9          # (the generated day: its opening call auction before)
    from obook.backtest import backtest
    from obook.backtest.orders import Order
    from obook.gen.sse import write_sse
    from obook.plotting_backtest import backtest_series

    day = tmp_path / "2024-01-05.log"           # Shanghai: prices 1/1,000 yuan, quantities 1/1,000 share
    write_sse(day, 3000, 1, 0)

    class BuyOnce:
        def __init__(self):
            self.sent = False

        def on_book(self, ctx):
            bid, _, ask, _ = ctx.top()
            if self.sent or ask is None or ctx.time < continuous:     # (an IOC takes nothing in a call auction)
                return None
            self.sent = True
            return [Order("enter", "600000", "B", 5000, ask, ref=1, tif="IOC")]

    r = backtest(day, BuyOnce(), tickers=["600000"], format="sse")
    fill = r.fills.to_pylist()[0]
    assert fill["quantity"] > 0
    d = backtest_series(r, feed=day, format="sse")
    assert list(d["buys"][2]) == [fill["quantity"] / 1000]          # shares, as obook plot's volume
    equity = r.equity.to_pylist()
    assert list(d["position"][1]) == [e["position"] / 1000 for e in equity]
    assert np.allclose(d["equity"][1], [float(e["equity"]) / 1000 / 1000 for e in equity])   # yuan
    assert np.allclose(d["buys"][1], [fill["price"] / 1000])


def test_plot_backtest_one_day_run_date_only_from_its_formats_naming_rule(tmp_path, capsys):
    """An ITCH feed's session date is its Nasdaq name's (MMDDYYYY.NASDAQ_ITCH50): a YYYYMMDD
    elsewhere in its name is no date of it, as for the backtest's own timestamps."""
    from frontend_feeds import write_small_feed

    feed = write_small_feed(tmp_path / "day_20240102.itch")
    (tmp_path / "s.py").write_text("class Idle:\n    def on_book(self, ctx):\n        return None\n")
    r = CliRunner().invoke(app, ["backtest", str(feed), "--strategy", f"{tmp_path / 's.py'}:Idle",
                                 "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    err = cli_error(capsys, "plot", "backtest", tmp_path / "out", tmp_path / "x.png", "--date", "2024-01-02")
    assert "--date 2024-01-02: the run is one day, of no known date (its feed names none)" in err
    assert not (tmp_path / "x.png").exists()


def test_plot_backtest_cli_progress_bar_over_the_runs_feed(run, tmp_path, monkeypatch):
    """The command shows the feed command's bar (file_progress) while it replays the run's
    feed: opened on that feed, told its bytes up to the whole file."""
    from contextlib import contextmanager

    import obook.cli.progress

    opened, told = [], []

    @contextmanager
    def bar(path, label="replaying", enabled=True):
        opened.append(path)
        yield lambda done, phase=None: told.append(done)

    monkeypatch.setattr(obook.cli.progress, "file_progress", bar)
    out = tmp_path / "bt.png"
    r = CliRunner().invoke(app, ["plot", "backtest", str(run / "out"), str(out)])
    assert r.exit_code == 0, r.output
    assert [Path(p) for p in opened] == [run / "day.csv"]
    assert told and max(told) == (run / "day.csv").stat().st_size


def _no_fills(names):
    """A run's tables (as a BacktestResult's) of ``names`` with equity rows and no fill."""
    from types import SimpleNamespace

    n = len(names)
    equity = pa.table({"time": [OPEN + 1000] * n, "instrument": names, "position": [0] * n,
                       "mark": [10_000] * n, "equity": [0] * n})
    fills = pa.table({"time": pa.array([], pa.int64()), "instrument": pa.array([], pa.string()),
                      "side": pa.array([], pa.string()), "price": pa.array([], pa.int64()),
                      "quantity": pa.array([], pa.int64())})
    return SimpleNamespace(equity=equity, fills=fills)


def test_plot_backtest_run_of_no_fills_and_several_instruments_asks_for_one(tmp_path):
    from obook.errors import ObookError
    from obook.plotting_backtest import backtest_series

    with pytest.raises(ObookError) as e:
        backtest_series(_no_fills(["BBB", "AAA"]), format="csv")
    assert str(e.value) == ("the run has no fills to pick the instrument by (the one with the most): name one "
                            "with -k (AAA, BBB)")
    assert backtest_series(_no_fills(["BBB", "AAA"]), format="csv", ticker="BBB")["instrument"] == "BBB"


def test_plot_backtest_run_of_no_fills_title_says_so(tmp_path):
    from obook.plotting_backtest import backtest_series

    d = backtest_series(_no_fills(["AAA"]), format="csv")
    assert d["instrument"] == "AAA" and d["title"] == "AAA backtest (csv): no fills"


def test_plot_backtest_price_axis_leaves_out_auction_marks_at_the_price_limits(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from matplotlib.figure import Figure

    from obook.plotting_backtest import plot_backtest

    n = 100                                # marks around 1.00, the first three at the limit up (1.10)
    marks = [11_000] * 3 + [10_000 + i % 5 for i in range(n - 3)]
    equity = pa.table({"time": [OPEN + 1000 * i for i in range(n)], "instrument": ["AAA"] * n,
                       "position": [0] * n, "mark": marks, "equity": [0] * n})
    fills = pa.table({"time": [OPEN + 50_000], "instrument": ["AAA"], "side": ["B"], "price": [9_990],
                      "quantity": [10]})
    drawn = []

    def keep(fig, path, **kw):
        drawn.append(fig)
        open(path, "w").close()

    monkeypatch.setattr(Figure, "savefig", keep)
    plot_backtest(SimpleNamespace(equity=equity, fills=fills), tmp_path / "p.png", format="csv")
    lo, hi = drawn[0].axes[0].get_ylim()
    assert 0.99 < lo < 0.999 and 1.0004 < hi < 1.002           # the marks after the auction and the fill


@pytest.mark.parametrize("window, says", [
    ({"start": "09:30"}, "start must be feed time units since local midnight (an integer from 0 to 86,400,000, "
                         "24:00), not '09:30'"),
    ({"start": 10, "end": 10}, "start 10 is not before end 10"),
])
def test_plot_backtest_api_window_not_times_of_a_day_or_empty_obook_error(run, tmp_path, window, says):
    from obook.errors import ObookError
    from obook.plotting_backtest import plot_backtest

    with pytest.raises(ObookError) as e:
        plot_backtest(run / "out", tmp_path / "b.png", **window)
    assert str(e.value) == says


def test_plot_backtest_window_lines_start_from_the_values_held_at_its_start(run):
    import pyarrow.parquet as pq

    import obook
    from obook.plotting_backtest import backtest_series

    start = OPEN + 20_500                          # between two seconds' rows
    d = backtest_series(run / "out", start=start, end=OPEN + 30_000)
    equity = pq.read_table(run / "out" / "backtest.equity.parquet").to_pylist()
    held = [e for e in equity if e["time"] < start][-1]
    bbo = obook.bbo(str(run / "day.csv"), format="csv", tickers=["AAA"]).read_all().to_pylist()
    book = [b for b in bbo if b["time"] < start][-1]
    at = start / 3_600_000
    assert d["position"][0][0] == pytest.approx(at) and d["position"][1][0] == held["position"]
    assert d["equity"][0][0] == pytest.approx(at) and d["equity"][1][0] == pytest.approx(float(held["equity"]) / 10_000)
    for side in ("bid", "ask"):
        assert d["price"][side][0][0] == pytest.approx(at)
        assert d["price"][side][1][0] == pytest.approx(book[f"{side}_px"] / 10_000)


def test_plot_backtest_window_held_lines_reach_the_window_end(run):
    from obook.plotting_backtest import backtest_series

    d = backtest_series(run / "out", start=OPEN + 10_000, end=OPEN + 90_000)      # past the day's last row
    for x, y in (d["price"]["bid"], d["price"]["ask"], d["position"], d["equity"]):
        assert x[-1] == pytest.approx(d["t1"]) == pytest.approx((OPEN + 90_000) / 3_600_000)
        assert y[-1] == y[-2] or (np.isnan(y[-1]) and np.isnan(y[-2]))
