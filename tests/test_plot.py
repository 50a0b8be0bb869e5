"""obook plot: the PNG it writes, from a generated Shenzhen day and an ITCH day."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from obook.cli import app
from obook.errors import ObookError
from obook.gen.szse import write_szse
from tests.cli_support import cli_error

pytest.importorskip("matplotlib")
from PIL import Image  # noqa: E402  (matplotlib's own dependency)


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    p = tmp_path_factory.mktemp("plot") / "day.log"
    write_szse(p, 6000, securities=3, seed=4)
    return p


def _pixels(path):
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(path).convert("RGB"))


def test_plot_png_size_and_content(day, tmp_path):
    from obook.plotting import plot

    ns = 60 * 10**9
    out = plot(day, tmp_path / "p.png", ticker="000001", start=(9 * 60 + 29) * ns, end=(9 * 60 + 32) * ns,
               interval="5s", workers=1, width=10, height=6, dpi=80)
    px = _pixels(out)
    assert px.shape == (480, 800, 3)
    colours = {tuple(c) for c in px.reshape(-1, 3)[::7]}
    assert len(colours) > 200                       # a heatmap, not a blank page
    red = (px[..., 0] > 180) & (px[..., 1] < 80) & (px[..., 2] < 80)
    green = (px[..., 1] > 120) & (px[..., 0] < 80) & (px[..., 2] < 80)
    assert red.sum() > 50 and green.sum() > 50     # up and down candles


def test_plot_svg_heatmap_one_raster_image_not_a_vector_cell_each(day, tmp_path):
    from obook.plotting import plot

    svg = plot(day, tmp_path / "p.svg", ticker="000001", workers=1).read_text()
    # the colour bar's image and the heatmap's: cells as paths of their own show seams between them
    assert svg.count("<image") == 2, svg.count("<path")


def test_plot_window_and_default_ticker_via_cli(day, tmp_path):
    out = tmp_path / "w.png"
    r = CliRunner().invoke(app, ["plot", str(day), str(out), "--start", "09:30", "--end", "10:30",
                                 "-w", "1", "-i", "5 minutes"])
    assert r.exit_code == 0, r.output
    assert _pixels(out).shape[:2] == (800, 1200)


def test_plot_empty_window_clear_error(day, tmp_path):
    from obook.plotting import plot

    with pytest.raises(ObookError, match="no book rows"):
        plot(day, tmp_path / "e.png", ticker="000001", start=0, end=1, workers=1)


def test_plot_without_matplotlib_says_how_to_install(day, tmp_path, monkeypatch):
    from obook import plotting

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ObookError, match=r"pip install 'obook\[plot\]'"):
        plotting.plot(day, tmp_path / "x.png", workers=1)


def test_plot_html_self_contained_page(day, tmp_path):
    import json
    import re

    from obook.plotting import plot

    pytest.importorskip("plotly")
    out = plot(day, tmp_path / "p.html", ticker="000001", workers=1)
    page = out.read_text()
    assert page.lower().startswith("<!doctype html>") and "<script src=" not in page   # nothing fetched
    spec = re.search(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", page, re.S)
    traces = json.loads(spec.group(1))
    assert [t["type"] for t in traces] == ["candlestick", "bar", "heatmap", "scatter", "scatter", "scatter"]
    assert "000001" in page


def test_plot_epoch_feed_axis_local_time_of_day_zone_named(tmp_path):
    from obook.gen.databento import START_NS, mbo_flow, write_dbn
    from obook.plotting import _series
    from obook.plotting_draw import _clock_text

    feed = tmp_path / "day.mbo.dbn"
    write_dbn(feed, mbo_flow(3000, 2, seed=1))
    d = _series(feed, None, None, None, "1 minute", None, 1, 5, None)
    import datetime as dt
    from zoneinfo import ZoneInfo

    first = dt.datetime.fromtimestamp(START_NS // 10**9, ZoneInfo("America/New_York"))   # XNAS's zone
    assert d["tz"] == "America/New_York"
    assert _clock_text(d["t0"]).startswith(first.strftime("%H:%M"))     # 17:13, not 472222:13 nor 22:13 UTC
    assert 0 <= d["t0"] < d["t1"] <= 24 and 0 <= d["bars"]["x"].min() < 24


@pytest.mark.parametrize("dataset, zone", [("XNAS.ITCH", "America/New_York"), ("GLBX.MDP3", "America/Chicago"),
                                           ("ZZZZ.NEW", "UTC")])
def test_plot_databento_axis_label_names_venue_zone(tmp_path, monkeypatch, dataset, zone):
    """The PNG's time axis is labelled with the venue's zone (the dataset's), the session's
    opening drawn at its local time; a venue obook does not know stays in UTC, named so."""
    import matplotlib.pyplot as plt

    from obook.gen.databento import mbo_flow, session_start, write_dbn
    from obook.plotting import plot

    start = session_start("2024-03-01")          # 09:30 New York = 14:30 UTC
    feed = tmp_path / "day.dbn"
    write_dbn(feed, mbo_flow(3000, 2, seed=1, start_ns=start), start_ns=start)
    raw = bytearray(feed.read_bytes())
    raw[8:24] = dataset.encode().ljust(16, b"\0")
    feed.write_bytes(bytes(raw))
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    plot(feed, tmp_path / "p.png", workers=1, levels=5, dpi=40)
    axis = figures[0].axes[2]
    assert axis.get_xlabel() == f"time of day ({zone})"
    opening = {"America/New_York": 9.5, "America/Chicago": 8.5, "UTC": 14.5}[zone]
    assert opening <= axis.get_xlim()[0] < opening + 0.5


def test_plot_series_volume_and_depth_in_shares_of_a_scaled_feed(day):
    """A Shenzhen feed's quantities are hundredths of a share: the chart shows shares."""
    from obook.klines import bar_step
    from obook.plotting import _heatmap, _series, frame

    args = (day, None, None, None, "1m", None, 1, 5, None)
    _ticker, fmt, bars, depth, trades = frame(*args)
    d = _series(*args)
    raw_volume = bars.column("volume").to_numpy().astype(float)
    assert raw_volume.sum() > 0 and np.allclose(d["bars"]["volume"], raw_volume / 100)
    t = depth.column("time").to_numpy().astype(np.int64)
    starts = bars.column("start").to_numpy().astype(np.int64)        # (the axis holds the bars whole)
    last = max(int(t[-1]), int(trades.column("time").to_numpy().max()))
    t0, t1 = min(int(t[0]), int(starts[0])), max(last + 1, int(starts[-1]) + bar_step("1m", fmt.time_unit_ns))
    raw_grid = _heatmap(depth, 5, 100.0, t0, t1)[0]
    assert raw_grid.max() > 0 and np.allclose(d["heat"]["grid"], raw_grid / 100)


def test_plot_flat_one_trade_candles_drawn(tmp_path):
    from obook.plotting_draw import _png, candle_bodies

    x = np.arange(5) / 60 + 10.0
    flat = np.array([10.0, 10.5, 10.2, 10.4, 10.1])
    bars = {"x": x, "open": flat, "high": flat, "low": flat, "close": flat, "volume": np.full(5, 100.0)}
    bottom, height = candle_bodies(bars)
    assert (height > 0).all() and np.allclose(bottom + height / 2, flat)
    heat = {"grid": np.zeros((2, 2)), "prices": np.array([10.0, 10.25, 10.5]), "times": np.array([10.0, 10.05, 10.1]),
            "top": 1.0}
    bars.update(left=x, width=np.full(5, 0.8 / 60))
    best = (x, flat)
    d = {"title": "flat", "tz": "UTC", "t0": 10.0, "t1": 10.1, "bars": bars, "bar_width": 0.8 / 60,
         "heat": heat, "best": {"bid": best, "ask": best}, "trades": (x, flat)}
    _png(d, tmp_path / "flat.png", 6, 4, 80)
    px = _pixels(tmp_path / "flat.png")
    top = px[: px.shape[0] * 3 // 8]                  # the candlestick panel
    red = (top[..., 0] > 180) & (top[..., 1] < 80) & (top[..., 2] < 80)
    assert red.sum() >= 5 * 3                         # five bodies of a few pixels each


@pytest.mark.parametrize("args, message", [
    (["--start", "25:00"], "--start: a time of day is between 00:00 and 24:00"),
    (["--end", "10:75"], "--end: a time of day is HH:MM"),
    (["--start", "ten"], "--start: a time of day is HH:MM"),
    (["--start", "11:00", "--end", "10:00"], "--start 11:00 is not before --end 10:00"),
    (["-k", "000001,000002"], "plot draws one security"),
])
def test_plot_cli_bad_window_or_tickers_refused(day, tmp_path, args, message):
    import subprocess

    r = subprocess.run([sys.executable, "-m", "obook", "plot", str(day), str(tmp_path / "x.png"), *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.startswith("error: ") and message in r.stderr, r.stderr
    assert not (tmp_path / "x.png").exists()


def test_plot_html_in_headless_chromium_no_console_errors_not_blank(day, tmp_path):
    from obook.plotting import plot

    from tests.browser_support import chromium_screenshot

    pytest.importorskip("plotly")
    page = plot(day, tmp_path / "p.html", ticker="000001", workers=1)
    console, shot = chromium_screenshot(page, tmp_path)
    assert console == []                             # no script error, no message at all
    px = _pixels(shot)
    assert px.shape[:2] == (800, 1200)
    colours = {tuple(c) for c in px.reshape(-1, 3)}
    assert len(colours) > 500                        # a heatmap, candles and axes, not a blank page


def test_plot_latency_percentile_curve_matches_numpy_and_draws_png(tmp_path):
    import pyarrow.parquet as pq

    from obook.live.latency import Histogram, report_table
    from obook.live.plot_latency import percentile_curve

    rng = np.random.default_rng(3)
    values = rng.lognormal(9, 1, 50_000).astype(np.int64)
    h, g = Histogram("tick-to-trade"), Histogram("recv")
    h.record(values)
    g.record(values // 3)
    pq.write_table(report_table([h, g]), tmp_path / "lat.parquet")
    row = pq.read_table(tmp_path / "lat.parquet").to_pylist()[0]
    pct, ns = percentile_curve(row["bucket_ns"], row["bucket_count"])
    for q in (50, 90, 99, 99.9):
        at = ns[np.searchsorted(pct, q)]        # the first bucket reaching q
        assert abs(at - np.percentile(values, q)) <= 0.01 * np.percentile(values, q) + 1
    assert ns[-1] == values.max() and sum(row["bucket_count"]) == len(values)
    r = CliRunner().invoke(app, ["plot", "latency", str(tmp_path / "lat.parquet"), str(tmp_path / "lat.png")])
    assert r.exit_code == 0, r.output
    px = _pixels(tmp_path / "lat.png")
    assert px.shape[0] > 300 and len({tuple(c) for c in px.reshape(-1, 3)[::5]}) > 10
    r = CliRunner().invoke(app, ["plot", "latency", str(tmp_path / "lat.png"), str(tmp_path / "x.png")])
    assert r.exit_code != 0 and "not a latency table" in f"{r.output}{r.exception}"
    for out, says in (("lat.html", "drawn as .png, .svg or .pdf"), ("nowhere/x.png", "cannot write: no folder")):
        r = CliRunner().invoke(app, ["plot", "latency", str(tmp_path / "lat.parquet"), str(tmp_path / out)])
        assert r.exit_code != 0 and says in str(r.exception), r.output
    r = CliRunner().invoke(app, ["plot", "latency", str(tmp_path / "lat.parquet"), str(tmp_path / "bare")])
    assert r.exit_code == 0 and (tmp_path / "bare").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_latency_missing_table_error_says_no_such_table(tmp_path):
    r = CliRunner().invoke(app, ["plot", "latency", str(tmp_path / "nope.parquet"), str(tmp_path / "x.png")])
    assert r.exit_code != 0 and "nope.parquet: no such latency table" in f"{r.output}{r.exception}"
    assert list(tmp_path.iterdir()) == []


def test_plot_latency_empty_format_is_as_left_out(tmp_path):
    r = CliRunner().invoke(app, ["plot", "latency", str(tmp_path / "nope.parquet"), str(tmp_path / "x.png"),
                                 "--format", ""])
    assert r.exit_code != 0 and "nope.parquet: no such latency table" in f"{r.output}{r.exception}"


@pytest.mark.parametrize("args, message", [
    (["-"], "-: a picture goes to a file"),
    (["x.png", "extra.png"], "one picture, the last argument; x.png is a picture's name, not a feed file"),
    (["x.png", "--feed", "F"], "--feed is for plot backtest"),
])
def test_plot_cli_dash_third_argument_or_feed_option_refused(day, tmp_path, capsys, monkeypatch, args, message):
    from tests.cli_support import cli_error

    monkeypatch.chdir(tmp_path)
    err = cli_error(capsys, "plot", day, *[str(day) if a == "F" else a for a in args])
    assert message in err
    assert list(tmp_path.iterdir()) == []


def test_plot_cli_stdin_feed_without_ticker_refused_names_why(tmp_path, capsys):
    from tests.cli_support import cli_error

    err = cli_error(capsys, "plot", "-", tmp_path / "x.png")
    assert "-: obook plot without -k replays its feed twice" in err and "give -k TICKER" in err


def test_plot_cli_stdin_feed_with_ticker_draws_as_the_file_does(day, tmp_path):
    import subprocess

    args = ["-k", "000001", "-f", "szse", "-w", "1", "-i", "5 minutes"]
    run = [sys.executable, "-m", "obook", "plot"]
    subprocess.run([*run, str(day), str(tmp_path / "file.png"), *args], check=True, capture_output=True)
    with open(day, "rb") as f:
        r = subprocess.run([*run, "-", str(tmp_path / "stdin.png"), *args], stdin=f, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert np.array_equal(_pixels(tmp_path / "stdin.png"), _pixels(tmp_path / "file.png"))


def test_plot_unknown_picture_suffix_refused_before_the_replay(tmp_path):
    from obook.plotting import plot

    with pytest.raises(ObookError, match=r"x\.txt: \.txt is no picture type; give \.html or one of .*\.png"):
        plot(tmp_path / "not-read.itch", tmp_path / "x.txt")      # the feed is not even opened
    assert not (tmp_path / "x.txt").exists()


def test_plot_latency_cli_dash_picture_refused(tmp_path, capsys, monkeypatch):
    from tests.cli_support import cli_error

    monkeypatch.chdir(tmp_path)
    err = cli_error(capsys, "plot", "latency", tmp_path / "latency.parquet", "-")
    assert "-: a picture goes to a file" in err
    assert list(tmp_path.iterdir()) == []


def test_plot_help_usage_names_arguments_as_the_help_text_does():
    first = CliRunner().invoke(app, ["plot", "--help"]).output.splitlines()[0]
    assert first == "Usage: obook plot [OPTIONS] {FEED} {OUT} [PICTURE]..."


def test_plot_bars_as_wide_as_their_interval_when_trades_are_sparse(tmp_path):
    from obook.plotting import _series

    feed = tmp_path / "sparse.csv"      # trades at 09:30 and 09:35 only
    feed.write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,b1,B,100,10000\n34200001,AAA,s1,S,100,10100\n"
                    "34200500,AAA,t1,T,50,10050\n34500500,AAA,t2,T,70,10060\n34800000,AAA,b2,B,100,10010\n")
    d = _series(feed, None, None, None, "1 minute", None, 1, 5, None)
    assert list(d["bars"]["x"] * 60) == pytest.approx([570.0, 575.0])
    assert d["bar_width"] * 60 == pytest.approx(0.8)          # 0.8 of one minute, not of the 5 between bars


def test_plot_clock_ticks_of_a_subsecond_window_tell_times_apart():
    from obook.plotting_draw import _clock_digits, _clock_text, _clock_ticks

    t0 = 17 + 13 / 60 + 20 / 3600                               # 17:13:20, a window of 12 ms
    t1 = t0 + 0.012 / 3600
    labels = [_clock_text(x, _clock_digits(t0, t1)) for x in _clock_ticks(t0, t1)]
    assert labels[:2] == ["17:13:20.000", "17:13:20.002"] and len(set(labels)) == len(labels) >= 5
    day = [_clock_text(x, _clock_digits(9.5, 16)) for x in _clock_ticks(9.5, 16)]
    assert day == ["10:00:00", "11:00:00", "12:00:00", "13:00:00", "14:00:00", "15:00:00", "16:00:00"]


def test_plot_html_of_a_millisecond_day_axis_labels_tell_times_apart(tmp_path):
    import json
    import re

    from obook.gen.databento import mbo_flow, write_dbn
    from obook.plotting import plot

    pytest.importorskip("plotly")
    feed = tmp_path / "day.dbn"                                 # 3,000 records within about 10 ms
    write_dbn(feed, mbo_flow(3000, 2, seed=1))
    plot(feed, tmp_path / "p.html", workers=1)
    labels = json.loads(re.search(r'"ticktext":(\[[^\]]*\])', (tmp_path / "p.html").read_text()).group(1))
    assert len(labels) >= 4 and len(set(labels)) == len(labels) and all("." in x for x in labels), labels


def test_plot_latency_csv_or_damaged_table_one_line_error_names_file_and_expected(tmp_path, capsys):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    err = cli_error(capsys, "plot", "latency", tmp_path / "x.csv", tmp_path / "p.png")
    assert err == (f"error: {tmp_path / 'x.csv'}: not a latency table: not a Parquet file (expected the Parquet "
                   "file obook listen --latency-output TABLE writes)\n")
    (tmp_path / "cut.parquet").write_bytes(b"PAR1" + b"\0" * 40)
    err = cli_error(capsys, "plot", "latency", tmp_path / "cut.parquet", tmp_path / "p.png")
    assert "cut.parquet: not a latency table: a Parquet file cut short or damaged" in err
    assert not (tmp_path / "p.png").exists()


def test_plot_cli_shenzhen_vendor_pair_drawn_picture_last(tmp_path):
    from obook.gen.szse import generate, write_vendor
    from obook.plotting import _series

    (tmp_path / "sz").mkdir()
    write_vendor(tmp_path / "sz", generate(3000, securities=1, seed=2))
    orders, ticks = tmp_path / "sz" / "000001_orders.csv", tmp_path / "sz" / "000001_ticks.csv"
    out = tmp_path / "pair.png"
    r = CliRunner().invoke(app, ["plot", str(orders), str(ticks), str(out), "-w", "1"])
    assert r.exit_code == 0, r.output
    assert _pixels(out).shape[:2] == (800, 1200)
    d = _series([orders, ticks], None, None, None, "1 minute", None, 1, 10, None)
    assert d["title"] == "000001 (szse-csv)" and len(d["trades"][0]) > 0     # the ticks file's trades drawn


def test_plot_cli_picture_name_among_feed_files_refused_before_the_replay(day, tmp_path, capsys):
    err = cli_error(capsys, "plot", day, tmp_path / "a.html", tmp_path / "b.png")
    assert "one picture, the last argument; " in err and "a.html is a picture's name, not a feed file" in err
    err = cli_error(capsys, "plot", "latency", tmp_path / "t.parquet", tmp_path / "a.png", tmp_path / "b.png")
    assert "obook plot latency TABLE PICTURE: one picture, not also" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("columns, says", [
    (dict(stage=["recv"], bucket_ns=["x"], bucket_count=[1]), "bucket_ns is string, not a list of numbers"),
    (dict(stage=["recv"], bucket_ns=[5], bucket_count=[1]), "bucket_ns is int64, not a list of numbers"),
    (dict(stage=[1], bucket_ns=[[5.0]], bucket_count=[[1]]), "stage is int64, not text"),
    (dict(stage=["recv"], bucket_ns=[[5.0]], bucket_count=[[1.5]]), "bucket_count is a list of double, not a list of whole numbers"),
    (dict(stage=["recv"], bucket_ns=[[5.0, 6.0]], bucket_count=[[1]]), "stage recv: 2 bucket_ns but 1 bucket_count"),
    (dict(stage=["recv"], bucket_ns=[[5.0]], bucket_count=[[-1]]), "stage recv: a bucket_count below 0 or not a finite number"),
    (dict(stage=["recv"], bucket_ns=[[float("nan")]], bucket_count=[[1]]), "stage recv: a bucket_ns below 0 or not a finite number"),
    (dict(stage=["recv"], bucket_ns=[[5.0, None]], bucket_count=[[1, 2]]), "stage recv: a null in bucket_ns"),
    (dict(stage=["recv", None], bucket_ns=[[5.0], [5.0]], bucket_count=[[1], [1]]), "row 2: no stage"),
])
def test_plot_latency_table_of_wrong_types_or_values_one_line_error(tmp_path, capsys, monkeypatch, columns, says):
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setenv("OBOOK_KERNELS", "python")      # (a tiny input: the command would set it)
    pq.write_table(pa.table(columns), tmp_path / "t.parquet")
    err = cli_error(capsys, "plot", "latency", tmp_path / "t.parquet", tmp_path / "p.png")
    assert err == f"error: {tmp_path / 't.parquet'}: not a latency table: {says}\n"
    assert not (tmp_path / "p.png").exists()


def test_plot_feed_without_trades_error_names_the_feed_and_the_option(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OBOOK_KERNELS", "python")      # (a tiny input: the command would set it)
    feed = tmp_path / "quiet.csv"
    feed.write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,b1,B,100,10000\n")
    err = cli_error(capsys, "plot", feed, tmp_path / "p.png")
    assert err == f"error: {feed}: the feed has no trades to pick the busiest security by: name one (-k, ticker=)\n"
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("interval", ["500us", "1500 us"])
def test_plot_interval_not_whole_feed_time_units_refused_as_bars_refuse_it(tmp_path, capsys, interval):
    from obook.plotting import plot

    feed = tmp_path / "day.csv"         # CSV: times in ms; a bar of 500 us (or 1.5 ms) is no whole number of them
    feed.write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,b1,B,100,10000\n34200001,AAA,s1,S,100,10100\n"
                    "34200500,AAA,t1,T,50,10050\n")
    with pytest.raises(ObookError, match="not a whole number of the feed's time unit"):
        plot(feed, tmp_path / "p.png", interval=interval, workers=1)
    err = cli_error(capsys, "plot", str(feed), str(tmp_path / "q.png"), "-i", interval, "-w", "1")
    assert "not a whole number of the feed's time unit (1 ms)" in err
    assert not (tmp_path / "p.png").exists() and not (tmp_path / "q.png").exists()


def test_plot_units_table_metadata_other_than_format_default_followed():
    import pyarrow as pa

    from obook.feeds import get_format
    from obook.plotting import units

    meta = {b"obook.price_scale": b"1000", b"obook.quantity_scale": b"100", b"obook.time_unit": b"ms",
            b"obook.time_origin": b"epoch", b"obook.time_zone": b"Asia/Shanghai"}
    schema = pa.schema([("time", pa.uint64())], metadata=meta)
    assert units(schema, get_format("itch")) == {"price_scale": 1000, "quantity_scale": 100,
                                                 "time_unit_ns": 1_000_000, "tz": "Asia/Shanghai", "epoch": True}
    assert units(pa.schema([("time", pa.uint64())]), get_format("itch")) == {
        "price_scale": 10_000, "quantity_scale": 1, "time_unit_ns": 1, "tz": "America/New_York", "epoch": False}


@pytest.mark.parametrize("name, says", [("a-folder", "is a folder; give the picture's file name"),
                                        ("no-folder/x.png", "cannot write: no folder"),
                                        ("f.txt/x.html", "cannot write: not a folder:")])
def test_plot_unwritable_picture_path_refused_before_the_replay(tmp_path, name, says):
    from obook.errors import OutputError
    from obook.plotting import plot

    (tmp_path / "a-folder").mkdir()
    (tmp_path / "f.txt").write_text("")
    with pytest.raises(OutputError, match=says):
        plot(tmp_path / "not-read.itch", tmp_path / name)      # the feed is not even opened


def test_plot_picture_path_a_fifo_refused_before_the_replay_and_left_as_it_is(day, tmp_path, capsys):
    import os
    import stat

    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    err = cli_error(capsys, "plot", day, fifo, "-k", "000001")
    assert err == (f"error: {fifo}: is not a regular file (a device, a pipe or a socket); "
                   "give the picture's file name\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)       # (a rename over it would have replaced it)


def test_plot_cli_picture_is_the_feed_refused_names_the_picture(day, capsys):
    err = cli_error(capsys, "plot", day, day)
    assert err == f"error: {day}: is an input of this command; write the picture elsewhere\n"


_EMPTIED = ("Time,Ticker,Order,T,Shares,Price\n34200001,AAA,17,B,100,1172400\n"
            "35160000,AAA,17,D,0,0\n")        # the book empty from 09:46


def test_plot_window_of_an_empty_book_and_no_trade_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OBOOK_KERNELS", "python")      # (a tiny input: the command would set it)
    (tmp_path / "e.csv").write_text(_EMPTIED)
    err = cli_error(capsys, "plot", tmp_path / "e.csv", tmp_path / "e.png", "-k", "AAA", "--start", "09:47",
                    "--end", "10:00")
    assert err == "error: AAA: no price in the window: the book is empty throughout it and nothing trades\n"


def test_plot_series_empty_book_window_spans_its_trades_prices_and_times(tmp_path):
    from obook.plotting import _series

    (tmp_path / "e.csv").write_text(_EMPTIED + "35400000,AAA,x1,T,10,1172500\n")    # a trade at 09:50
    d = _series(tmp_path / "e.csv", None, 35_220_000, None, "1 minute", "csv", 1, 5, None)
    assert d["heat"]["grid"].sum() == 0
    assert d["heat"]["prices"][0] < 117.25 < d["heat"]["prices"][-1]
    assert d["t1"] > 9 + 50 / 60 and d["trades"][0][0] == pytest.approx(9 + 50 / 60)


def test_plot_progress_told_each_pass_over_the_feed(day, tmp_path):
    from obook.plotting import plot

    calls = []
    plot(day, tmp_path / "p.png", progress=lambda *a: calls.append(a))
    phases = [a[1] for a in calls if len(a) == 2]
    assert phases[0] == "trades" and "book" in phases and phases.index("book") > 0
    assert max(a[0] for a in calls) == day.stat().st_size


def test_plot_feed_warning_of_both_passes_given_once(tmp_path, caplog):
    """Without a ticker the feed is replayed twice (its trades, then its book): a warning of the feed (frames
    of no ITCH 5.0 type, skipped) is given once, not once a pass."""
    import logging

    from itch_builder import ItchBuilder

    from obook.plotting import plot

    b = ItchBuilder(step=10**9)
    b.system("O")
    b.directory(1, "AAPL")
    for i in range(40):
        b.add(1, 2 * i + 1, "B", 100, 1_000_000 - i)
        b.add(1, 2 * i + 2, "S", 100, 1_001_000 + i)
        b.execute(1, 2 * i + 1, 50)
        if i % 10 == 0:
            b.raw(b"z", 20, locate=1)
    feed = b.write(tmp_path / "d.itch")
    with caplog.at_level(logging.WARNING, logger="obook"):
        plot(feed, tmp_path / "d.png", workers=1, dpi=30)
    notes = [r.getMessage() for r in caplog.records if "not ITCH 5.0" in r.getMessage()]
    assert len(notes) == 1, caplog.text
    assert "skipped 4 messages" in notes[0]


def _drawn_figure(monkeypatch, kind):
    """The figures obook plot writes, kept as the renderer leaves them (``kind``: png or html)."""
    drawn = []

    def keep(fig, path, **kw):
        drawn.append(fig)
        open(path, "w").close()

    if kind == "html":
        import plotly.graph_objects as go

        monkeypatch.setattr(go.Figure, "write_html", keep)
    else:
        from matplotlib.figure import Figure

        monkeypatch.setattr(Figure, "savefig", keep)
    return drawn


_LAST_TRADE = ("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,b1,B,100,10000\n34200001,AAA,s1,S,100,10100\n"
               "34230000,AAA,t1,T,50,10050\n")      # the last event a trade at 09:30:30, in the bar of 09:30


def test_plot_series_open_end_axis_holds_the_last_bar_whole(tmp_path):
    from obook.plotting import _series

    (tmp_path / "l.csv").write_text(_LAST_TRADE + "34530000,AAA,t2,T,50,10060\n")     # and at 09:35:30
    d = _series(tmp_path / "l.csv", None, None, None, "1 minute", None, 1, 5, None)
    b = d["bars"]
    assert d["t0"] <= b["left"][0] and b["left"][-1] + b["width"][-1] <= d["t1"]
    assert b["width"] * 60 == pytest.approx([0.8, 0.8])            # whole bars, the axis to 09:36
    assert d["t1"] * 60 == pytest.approx(576)


def test_plot_series_window_shorter_than_a_bar_draws_it_inside_the_axis(tmp_path):
    from obook.plotting import _series

    (tmp_path / "l.csv").write_text(_LAST_TRADE)            # 30 s of a feed, bars of a minute
    d = _series(tmp_path / "l.csv", None, None, None, "1 minute", None, 1, 5, None)
    b = d["bars"]
    assert d["t0"] <= b["left"][0] and b["left"][0] + b["width"][0] <= d["t1"]
    assert (d["t1"] - d["t0"]) * 3600 == pytest.approx(30.001)       # the axis stays on the feed's 30 s


def test_plot_html_open_end_axis_holds_the_last_candle_whole(tmp_path, monkeypatch):
    from obook.plotting import plot

    pytest.importorskip("plotly")
    (tmp_path / "l.csv").write_text(_LAST_TRADE + "34530000,AAA,t2,T,50,10060\n")
    drawn = _drawn_figure(monkeypatch, "html")
    plot(tmp_path / "l.csv", tmp_path / "l.html", workers=1)
    fig = drawn[0]
    candles = next(t for t in fig.data if t.type == "candlestick")
    lo, hi = fig.layout.xaxis.range
    # plotly centres a candle on its x: the bar of 09:35 [9:35, 9:36) centred inside the axis
    assert candles.x[-1] * 60 == pytest.approx(575.5) and hi * 60 >= 576 and lo * 60 <= 570.1


def test_plot_html_one_row_book_price_axis_around_its_prices(tmp_path, monkeypatch):
    from obook.plotting import plot

    pytest.importorskip("plotly")
    (tmp_path / "one.csv").write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,b1,B,100,10000\n"
                                      "34200000,AAA,s1,S,100,10100\n")      # one row: bid 1.00, ask 1.01
    drawn = _drawn_figure(monkeypatch, "html")
    plot(tmp_path / "one.csv", tmp_path / "one.html", ticker="AAA", workers=1)
    lo, hi = drawn[0].layout.yaxis3.range
    assert 0.99 < lo < 1.0 and 1.01 < hi < 1.02


@pytest.mark.parametrize("kind", ["png", "html"])
def test_plot_window_without_trades_title_says_so_price_panel_on_the_book_prices(tmp_path, monkeypatch, kind):
    from obook.plotting import plot

    if kind == "html":
        pytest.importorskip("plotly")
    (tmp_path / "one.csv").write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,b1,B,100,10000\n"
                                      "34200000,AAA,s1,S,100,10100\n")      # a book, no trade
    drawn = _drawn_figure(monkeypatch, kind)
    plot(tmp_path / "one.csv", tmp_path / f"one.{kind}", ticker="AAA", workers=1)
    fig = drawn[0]
    if kind == "html":
        title, (lo, hi) = fig.layout.title.text, fig.layout.yaxis.range
    else:
        title, (lo, hi) = fig._suptitle.get_text(), fig.axes[0].get_ylim()
    assert title == "AAA (csv): no trades"
    assert 0.99 < lo < 1.0 and 1.01 < hi < 1.02        # (not an axis around 0)


def test_plot_png_panels_as_wide_as_one_another(day, tmp_path, monkeypatch):
    from obook.plotting import plot

    drawn = _drawn_figure(monkeypatch, "png")
    plot(day, tmp_path / "p.png", ticker="000001", workers=1)
    panels = [ax.get_position() for ax in drawn[0].axes if ax.get_label() != "<colorbar>"][:3]
    assert len({(round(p.x0, 4), round(p.x1, 4)) for p in panels}) == 1, panels


def test_plot_colour_top_of_a_few_huge_orders_is_the_rest_of_the_book():
    from obook.plotting import colour_top

    grid = np.zeros((50, 600))
    grid[10:20, :] = 100.0
    grid[0, :3] = 1e6                                   # three cells of one huge order
    assert colour_top(grid) == 100.0 and colour_top(np.zeros((2, 2))) == 1.0


def test_plot_security_without_orders_and_no_window_says_the_feed_has_none(tmp_path, capsys, monkeypatch):
    from tests.itch_builder import ItchBuilder

    monkeypatch.setenv("OBOOK_KERNELS", "python")      # (a tiny input: the command would set it)
    b = ItchBuilder()                                  # a feed's first messages: its directory, no order
    b.system("O")
    b.directory(1, "AAPL")
    feed = b.write(tmp_path / "head.itch")
    err = cli_error(capsys, "plot", feed, tmp_path / "p.png", "-k", "AAPL")
    assert err == "error: AAPL: no book rows in the feed (no order of it to draw)\n"


def test_plot_frame_bars_declare_their_units_as_the_other_tables(day):
    from obook.plotting import frame
    from obook.tables.units import units

    _ticker, _fmt, bars, depth, _trades = frame(day, "000001", workers=1)
    declared = units(bars.schema)
    assert declared["price_columns"] == "open,high,low,close" and declared["quantity_columns"] == "volume"
    for key in ("price_scale", "quantity_scale", "time_unit", "time_zone", "time_origin"):
        assert declared[key] == units(depth.schema)[key], key


def test_plot_clock_ticks_window_end_on_a_round_time_labelled():
    from obook.plotting_draw import _clock_text, _clock_ticks

    ticks = _clock_ticks(34200 / 3600, 36000 / 3600)          # --start 09:30 --end 10:00
    assert [_clock_text(x) for x in ticks] == ["09:30:00", "09:35:00", "09:40:00", "09:45:00", "09:50:00",
                                               "09:55:00", "10:00:00"]


def test_plot_help_out_html_page_of_a_feed_or_a_backtest():
    text = " ".join(CliRunner().invoke(app, ["plot", "--help"], terminal_width=200).output.split())
    assert ".html for an interactive page of a feed or a backtest" in text


def test_plot_named_ticker_one_replay_of_the_feed(day, tmp_path, monkeypatch):
    """Trades and book of a named security come from one replay (the core reader's
    ``table_batches`` is run once), for the picture and for ``frame`` alike."""
    from obook.engine.replay import Replay
    from obook.plotting import frame, plot

    runs = []
    real = Replay.table_batches

    def counted(self):
        runs.append(self.tables)
        return real(self)

    monkeypatch.setattr(Replay, "table_batches", counted)
    plot(day, tmp_path / "p.png", ticker="000001", workers=1, dpi=30)
    assert len(runs) == 1, runs
    runs.clear()
    _, _, bars, depth, trades = frame(day, ticker="000001", workers=1)
    assert len(runs) == 1, runs
    assert depth.num_rows and trades.num_rows and bars.num_rows
    assert set(trades.column("ticker").to_pylist()) == {"000001"}


_BOUND = "must be feed time units since local midnight (an integer from 0 to 86,400,000, 24:00), not "


@pytest.mark.parametrize("window, says", [
    ({"start": "09:30"}, "start " + _BOUND + "'09:30'"),
    ({"end": 3.5e7}, "end " + _BOUND + "35000000.0 (a float)"),
    ({"end": 35_000_000_000_000}, "end " + _BOUND + "35000000000000"),     # (ns on a feed of ms: no end in sight)
    ({"start": -5}, "start " + _BOUND + "-5"),
    ({"start": 10, "end": 10}, "start 10 is not before end 10"),
])
@pytest.mark.parametrize("call", ["plot", "frame"])
def test_plot_api_window_not_times_of_a_day_or_empty_obook_error_before_the_replay(tmp_path, window, says, call):
    import obook.plotting

    feed = tmp_path / "f.csv"
    feed.write_text(_LAST_TRADE)
    args = (feed, tmp_path / "p.png") if call == "plot" else (feed,)
    with pytest.raises(ObookError) as e:
        getattr(obook.plotting, call)(*args, ticker="AAA", workers=1, **window)
    assert str(e.value) == says


@pytest.mark.parametrize("content, k", [(b"", []), (b"", ["-k", "AAA"]),
                                        (__import__("gzip").compress(b"", mtime=0), [])], ids=["plain", "k", "gzip"])
def test_plot_cli_empty_feed_file_one_line_error_says_empty(tmp_path, capsys, monkeypatch, content, k):
    monkeypatch.setenv("OBOOK_KERNELS", "python")
    feed = tmp_path / ("day.itch" + (".gz" if content else ""))
    feed.write_bytes(content)
    err = cli_error(capsys, "plot", feed, tmp_path / "p.png", *k)
    assert err == f"error: {feed}: empty file: no record to draw\n"
    assert not (tmp_path / "p.png").exists()


_RESTING = ("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,b1,B,100,10000\n34200000,AAA,s1,S,300,10100\n"
            "36000000,AAA,b2,B,50,10000\n")      # a book from 09:30, its next change at 10:00


def test_plot_series_window_after_the_book_rests_draws_it_from_the_window_start(tmp_path):
    from obook.plotting import _series

    (tmp_path / "r.csv").write_text(_RESTING)
    minute = 60_000
    d = _series(tmp_path / "r.csv", "AAA", 35_100_000, 35_100_000 + 5 * minute, "1 minute", None, 1, 5, None)
    grid = d["heat"]["grid"]
    assert grid[:, 0].sum() == 400 and grid[:, -1].sum() == 400     # the bid's 100 and the ask's 300 throughout
    for side, price in (("bid", 1.0), ("ask", 1.01)):
        times, prices = d["best"][side]
        assert times[0] == pytest.approx(d["t0"]) and times[-1] == pytest.approx(d["t1"])
        assert list(prices) == [price] * len(prices)


def test_plot_series_window_start_before_a_change_book_before_it_in_the_first_columns(tmp_path):
    from obook.plotting import _series

    (tmp_path / "r.csv").write_text(_RESTING)
    d = _series(tmp_path / "r.csv", "AAA", 35_700_000, 36_300_000, "1 minute", None, 1, 5, None)   # 09:55 to 10:05
    grid = d["heat"]["grid"]
    assert grid[:, 0].sum() == 400 and grid[:, -1].sum() == 450
    assert d["best"]["bid"][0][0] == pytest.approx(d["t0"])


def test_plot_best_lines_without_a_change_in_the_last_columns_reach_the_window_end(tmp_path):
    from obook.plotting import _series

    (tmp_path / "r.csv").write_text(_RESTING)
    d = _series(tmp_path / "r.csv", "AAA", None, 37_800_000, "1 minute", None, 1, 5, None)       # to 10:30
    for side in ("bid", "ask"):
        assert d["best"][side][0][-1] == pytest.approx(d["t1"]) == pytest.approx(10.5)


def test_plot_picture_write_failure_output_error_names_the_picture(tmp_path):
    import errno

    from obook.errors import OutputError
    from obook.plotting_draw import _complete

    def full(tmp):
        open(tmp, "wb").close()
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError, match=r"^.*p\.png: cannot write the picture: No space left on device$"):
        _complete(tmp_path / "p.png", full, "picture")
    assert list(tmp_path.iterdir()) == []


def test_plot_temporary_file_write_failure_output_error_without_the_ticker(tmp_path, monkeypatch):
    import errno

    from obook.errors import OutputError
    from obook.plotting import plot
    from obook.plotting_bins import BookRows, _unwritable

    def full(self, *a, **kw):
        raise _unwritable("/tmp", OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr(BookRows, "heatmap", full)
    (tmp_path / "r.csv").write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,b1,B,100,10000\n")
    with pytest.raises(OutputError) as e:
        plot(tmp_path / "r.csv", tmp_path / "p.png", ticker="AAA", workers=1)
    assert str(e.value).startswith("/tmp: cannot write obook plot's temporary file of the book's rows (No space")


def test_plot_series_open_window_after_the_last_change_and_trade_obook_error(tmp_path):
    from obook.plotting import _series

    (tmp_path / "r.csv").write_text(_RESTING)
    with pytest.raises(ObookError, match="^AAA: no book rows in the window$"):     # (not an axis of 1 ms)
        _series(tmp_path / "r.csv", "AAA", 36_600_000, None, "1 minute", None, 1, 5, None)


def test_plot_series_open_window_after_the_last_change_resting_book_to_the_last_trade(tmp_path):
    from obook.plotting import _series

    (tmp_path / "r.csv").write_text(_RESTING + "37800000,AAA,t1,T,10,10050\n")     # a trade at 10:30
    d = _series(tmp_path / "r.csv", "AAA", 36_600_000, None, "1 minute", None, 1, 5, None)   # from 10:10
    assert d["t0"] == pytest.approx(10 + 10 / 60) and d["t1"] >= 10.5
    assert d["heat"]["grid"][:, 0].sum() == 450 and d["heat"]["grid"][:, -1].sum() == 450


def test_plot_cli_named_pipe_feed_one_line_error(day, tmp_path, capsys):
    import os
    import threading

    pipe = tmp_path / "feed.fifo"
    os.mkfifo(pipe)

    def write():            # a writer on the pipe, as `cat day > feed.fifo &`
        try:
            fd = os.open(pipe, os.O_WRONLY)
            try:
                os.write(fd, day.read_bytes()[:4096])
            finally:
                os.close(fd)
        except OSError:     # (the reader went: a broken pipe)
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        err = cli_error(capsys, "plot", pipe, tmp_path / "p.png", "-k", "000001")
    finally:
        os.close(os.open(pipe, os.O_RDONLY | os.O_NONBLOCK))      # (lets a writer still waiting go)
        writer.join(5)
    assert err.startswith(f"error: {pipe}: a named pipe (FIFO), not a feed file; read it as a stream"), err
