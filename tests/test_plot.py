"""obook plot: the PNG it writes, from a generated Shenzhen day and an ITCH day."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from obook.cli import app
from obook.errors import ObookError
from obook.gen.szse import write_szse

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
