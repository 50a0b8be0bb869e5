"""How obook plot draws a security's picture (``obook.plotting``'s ``_drawn`` arrays): the
candles, the volume bars and the depth heatmap with the best bid and ask lines and the
trades, on one time axis of round times of day; with matplotlib as a picture (PNG or any
type matplotlib writes, by the suffix) or with plotly as a self-contained HTML page. A
picture is written beside its final name and renamed once whole (``_complete``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import ObookError, OutputError

INSTALL = "obook plot needs matplotlib: pip install 'obook[plot]' (or pip install matplotlib)"


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ObookError(INSTALL) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def candle_bodies(b: dict) -> tuple:
    """(bottom, height) of each candle's body: open to close, and for a bar whose open and
    close are equal (one trade, or a flat bar) a thin body a two-hundredth of the chart's
    price range high, so that every bar shows."""
    lo, hi = (np.nanmin(b["low"]), np.nanmax(b["high"])) if len(b["low"]) else (0.0, 0.0)
    thin = max(hi - lo, abs(hi) * 1e-3, 1e-9) / 200
    body = b["close"] - b["open"]
    flat = np.abs(body) < thin
    return np.where(flat, b["open"] - thin / 2, b["open"]), np.where(flat, thin, body)


def _clock_digits(t0: float, t1: float, count: int = 8) -> int:
    """Decimals of the second that tell apart about ``count`` times of day (hours) spread
    over [t0, t1]: none over ``count`` seconds or more, up to 9 (nanoseconds)."""
    import math

    step = max(t1 - t0, 1e-15) * 3600 / count
    return int(min(9, max(0, math.ceil(-math.log10(step)))))


def _clock_text(h: float, digits: int = 0) -> str:
    """Hours since midnight as HH:MM:SS, with ``digits`` decimals of the second."""
    s, frac = divmod(round(h * 3600 * 10 ** digits), 10 ** digits)
    text = f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
    return f"{text}.{frac:0{digits}d}" if digits else text


def _png(d: dict, out: Path, width: float, height: float, dpi: int) -> None:
    plt = _matplotlib()
    fig = _png_figure(plt, d, width, height, dpi)
    try:
        _complete(out, lambda tmp: fig.savefig(tmp, format=out.suffix[1:].lower() or "png"), "picture")
    finally:
        plt.close(fig)


def _png_figure(plt, d: dict, width: float, height: float, dpi: int):
    """The matplotlib figure of ``d``: the three panels as wide as one another (the heatmap's
    colour bar in a column of its own), on one time axis."""
    from matplotlib.ticker import FixedLocator, FuncFormatter

    fig = plt.figure(figsize=(width, height), dpi=dpi)
    grid = fig.add_gridspec(3, 2, height_ratios=[3, 1, 4], width_ratios=[60, 1], wspace=0.03)
    ax_bar = fig.add_subplot(grid[0, 0])
    ax_vol = fig.add_subplot(grid[1, 0], sharex=ax_bar)
    ax_depth = fig.add_subplot(grid[2, 0], sharex=ax_bar)
    for ax in (ax_bar, ax_vol):
        ax.tick_params(labelbottom=False)
    fig.suptitle(d["title"])
    b = d["bars"]
    colour = np.where(b["close"] >= b["open"], "tab:red", "tab:green")     # red up, green down (A shares)
    left, wide = b["left"], b["width"]
    ax_bar.vlines(left + wide / 2, b["low"], b["high"], color=colour, linewidth=0.8)
    bottom, tall = candle_bodies(b)
    ax_bar.bar(left, tall, wide, bottom, color=colour, align="edge")
    ax_vol.bar(left, b["volume"], wide, color=colour, align="edge")
    ax_bar.set_ylabel("price")
    ax_vol.set_ylabel("volume (shares)")
    for ax in (ax_bar, ax_depth):
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")      # prices as they read
    h = d["heat"]
    # rasterized: in an SVG or a PDF one image, not a path a cell (seams between them, and megabytes)
    mesh = ax_depth.pcolormesh(h["times"], h["prices"], h["grid"], cmap="viridis", shading="flat", vmin=0,
                               vmax=h["top"], rasterized=True)
    fig.colorbar(mesh, cax=fig.add_subplot(grid[2, 1]), label="resting shares",
                 extend="max" if h["grid"].max() > h["top"] else "neither")
    for side, colour in (("bid", "red"), ("ask", "cyan")):
        ax_depth.step(*d["best"][side], where="post", color=colour, linewidth=1.2, label=f"best {side}")
    ax_depth.scatter(*d["trades"], s=4, color="white", edgecolors="black", linewidths=0.3, label="trades", zorder=3)
    ax_depth.set_ylabel("price")
    ax_depth.set_ylim(*_price_range(d))
    if not len(b["open"]):      # no candle: the book's prices, not an axis around 0
        ax_bar.set_ylim(*_price_range(d))
        ax_vol.set_ylim(0, 1)
    ax_depth.set_xlabel(f"time of day ({d['tz']})")
    digits = _clock_digits(d["t0"], d["t1"])
    ax_depth.xaxis.set_major_locator(FixedLocator(_clock_ticks(d["t0"], d["t1"])))     # round times of day
    ax_depth.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _clock_text(v, digits)))
    ax_depth.legend(loc="upper left", fontsize="small")
    ax_depth.set_xlim(d["t0"], d["t1"])
    return fig


def _clock_ticks(t0: float, t1: float, count: int = 8) -> list:
    """About ``count`` round times of day (hours) between t0 and t1."""
    span = max(t1 - t0, 1e-9 / 3600)
    steps = [m * 10.0 ** e / 3600 for e in range(-9, 0) for m in (1, 2, 5)]      # below a second
    steps += [s / 3600 for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800)]
    step = next((s for s in steps if span / s <= count), steps[-1])
    # whole multiples of the step (a sum of steps drifts: 09:30 + 6 x 5 min passed 10:00)
    k0, k1 = np.ceil(t0 / step - 1e-9), np.floor(t1 / step + 1e-9)
    return [float(k * step) for k in np.arange(k0, k1 + 1)]


def _html(d: dict, out: Path, width: float, height: float, dpi: int) -> None:
    """A self-contained interactive page (plotly, its script inlined)."""
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise ObookError(INSTALL.replace("matplotlib", "plotly") + " for .html") from None
    fig = _html_figure(go, make_subplots, d, width, height, dpi)
    _complete(out, lambda tmp: fig.write_html(str(tmp), include_plotlyjs=True, full_html=True), "page")


def _price_range(d: dict) -> list:
    """[low, high] of the heatmap's price axis: its rows' edges and the trades (a book of one
    row: around its prices; a best bid or ask out at the price limits in a call auction
    leaves the axis)."""
    seen = np.concatenate([d["heat"]["prices"], d["trades"][1]])
    return [float(np.nanmin(seen)), float(np.nanmax(seen))]


def _html_figure(go, make_subplots, d: dict, width: float, height: float, dpi: int):
    """The plotly figure of ``d``: candles and volume bars centred on their interval as the
    picture's, the heatmap's cells on their time and price edges."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, row_heights=[0.35, 0.15, 0.5], vertical_spacing=0.03)
    b = d["bars"]
    digits = _clock_digits(d["t0"], d["t1"])
    stamp = [_clock_text(x, digits) for x in b["x"]]
    mid = b["left"] + b["width"] / 2
    fig.add_trace(go.Candlestick(x=mid, open=b["open"], high=b["high"], low=b["low"], close=b["close"],
                                 text=stamp, name="bars", increasing_line_color="red",
                                 decreasing_line_color="green"), row=1, col=1)
    fig.add_trace(go.Bar(x=mid, y=b["volume"], width=b["width"], name="volume", marker_color="grey"),
                  row=2, col=1)
    h = d["heat"]
    fig.add_trace(go.Heatmap(x=h["times"], y=h["prices"], z=h["grid"], colorscale="Viridis", zmin=0, zmax=h["top"],
                             colorbar={"title": "resting shares", "len": 0.5, "y": 0.25}, name="depth"),
                  row=3, col=1)
    for side, colour in (("bid", "red"), ("ask", "cyan")):
        x, y = d["best"][side]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line={"shape": "hv", "color": colour},
                                 name=f"best {side}"), row=3, col=1)
    fig.add_trace(go.Scatter(x=d["trades"][0], y=d["trades"][1], mode="markers", name="trades",
                             marker={"size": 4, "color": "white", "line": {"width": 0.5, "color": "black"}}),
                  row=3, col=1)
    fig.update_layout(title=d["title"], width=int(width * dpi), height=int(height * dpi),
                      xaxis_rangeslider_visible=False)
    ticks = _clock_ticks(d["t0"], d["t1"])
    fig.update_xaxes(range=[d["t0"], d["t1"]], tickvals=ticks, ticktext=[_clock_text(x, digits) for x in ticks])
    fig.update_xaxes(title_text=f"time of day ({d['tz']})", row=3, col=1)
    fig.update_yaxes(range=_price_range(d), row=3, col=1)
    if not len(b["open"]):      # no candle: the book's prices, not an axis around 0
        fig.update_yaxes(range=_price_range(d), row=1, col=1)
        fig.update_yaxes(range=[0, 1], row=2, col=1)
    for row, label in ((1, "price"), (2, "volume (shares)"), (3, "price")):
        fig.update_yaxes(title_text=label, row=row, col=1)
    return fig


def _complete(out: Path, write, what: str) -> None:
    """``write(temporary path)`` beside ``out``, renamed to ``out`` once whole: a failure (a
    full disk) leaves nothing under the final name, and no temporary file."""
    import os

    from .tempfiles import remove_quietly, temp_path

    tmp = temp_path(out)
    try:
        write(tmp)
        os.replace(tmp, out)
    except (OSError, ValueError) as e:
        remove_quietly(tmp)
        why = getattr(e, "strerror", None) or str(e).replace(str(tmp), str(out))
        raise OutputError(f"{out}: cannot write the {what}: {why}") from None
    except BaseException:
        remove_quietly(tmp)
        raise
