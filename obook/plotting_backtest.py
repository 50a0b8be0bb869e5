"""A backtest's picture: the instrument's price (best bid and ask) with the strategy's fills
on it (buys and sells at their prices and times), its position and its equity below, on
one time axis.

The run is a :class:`obook.backtest.BacktestResult` or the folder ``obook backtest -o DIR``
wrote (its ``backtest.<table>.parquet`` files, or the ``.parquet.partial`` ones of a run a
strategy error stopped, and ``run.json``: the feeds and their format). The price comes
from a replay of the feed (its ``bbo`` rows of the instrument); without the feed, from the
equity table's marks (the mid at every fill and interval). Drawn like obook.plotting's
pictures: matplotlib for PNG (any suffix it writes), plotly for a self-contained HTML
page; times as the venue's local time of day, named on the axis; prices and money in the
currency (the feed's integer prices divided by its price scale), positions and fills in
shares (the feed's quantities divided by its quantity scale: Shanghai's 1/1000 share).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .errors import ObookError
from .plotting import check_window, is_page, local_midnight, units
from .plotting_draw import INSTALL, _clock_digits, _clock_text, _clock_ticks, _complete, _matplotlib

#: the tables a picture reads, and the file holding the run's feeds
NEEDED = ("fills", "equity")
RUN_FILE = "run.json"
#: the columns the picture draws from: text or numbers
TEXT, NUMBERS = "text", "numbers"
COLUMNS = {"fills": {"time": NUMBERS, "instrument": TEXT, "side": TEXT, "price": NUMBERS, "quantity": NUMBERS},
           "equity": {"time": NUMBERS, "instrument": TEXT, "position": NUMBERS, "mark": NUMBERS, "equity": NUMBERS}}


def _check_columns(path: Path, name: str, schema) -> None:
    """An ObookError naming ``path`` when the table lacks a column the picture draws, or holds it as
    another kind (numbers for text, text for numbers)."""
    import pyarrow as pa

    kinds = {TEXT: lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
             NUMBERS: lambda t: pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)}
    for column, kind in COLUMNS[name].items():
        if column not in schema.names:
            raise ObookError(f"{path}: not a backtest table (no column {column})")
        t = schema.field(column).type
        if not kinds[kind](t):
            raise ObookError(f"{path}: not a backtest table (column {column} is {t}, not {kind})")


def _read_folder(folder: Path) -> tuple[dict, dict]:
    """The tables of a backtest folder (whole, else partial) and its run.json (or {})."""
    import pyarrow.parquet as pq

    tables = {}
    for name in NEEDED:
        for suffix in ("", ".partial"):
            path = folder / f"backtest.{name}.parquet{suffix}"
            if path.is_file():
                try:
                    tables[name] = pq.read_table(path)
                except (OSError, ValueError) as e:
                    raise ObookError(f"{path}: not a backtest table ({e})") from None
                _check_columns(path, name, tables[name].schema)
                break
        else:
            raise ObookError(f"{folder}: no backtest.{name}.parquet (obook backtest -o {folder} writes it)")
    run = {}
    if (folder / RUN_FILE).is_file():
        run = _run_json(folder / RUN_FILE)
    return tables, run


def _run_json(path: Path) -> dict:
    """A run.json's object; what is no JSON object is an ObookError naming the file."""
    try:
        run = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ObookError(f"{path}: not JSON ({e})") from None
    if not isinstance(run, dict):
        raise ObookError(f"{path}: not a run's description (a JSON object; obook backtest -o writes one)")
    return run


#: the names an error lists at most (instruments, days); the count of all follows
LISTED = 10


def listing(names) -> str:
    """``names`` for an error: all of them when few, else the first ``LISTED`` and how many
    there are in all (``AAA, ..., JJJ, ... (100 in all)``); ``none`` for none."""
    names = list(names)
    if not names:
        return "none"
    if len(names) <= LISTED:
        return ", ".join(names)
    return f"{', '.join(names[:LISTED])}, ... ({len(names)} in all)"


def _one_day(tables: dict, run: dict, date) -> tuple[dict, str | None]:
    """The tables of one day (a many-day run has a ``date`` column) and that day's feed."""
    import pyarrow.compute as pc

    feeds = run.get("feeds") or {}
    if "date" not in tables["equity"].column_names:
        return tables, next(iter(feeds.values()), None)
    days = sorted(set(tables["equity"].column("date").to_pylist()) | set(tables["fills"].column("date").to_pylist()))
    if date is None:
        if len(days) != 1:
            raise ObookError(f"the run has {len(days)} days: name one with --date ({listing(days)})")
        date = days[0]
    date = str(date)
    if date not in days:
        raise ObookError(f"the run has no day {date} (has: {listing(days)})")
    picked = {k: t.filter(pc.equal(t.column("date"), date)).drop_columns(["date"]) for k, t in tables.items()}
    return picked, feeds.get(date)


def _check_the_day(date, feed, fmt) -> None:
    """``date`` named for a one-day run: it must be the run's day, its feed's session date
    by its format's own rule (a Nasdaq file name's, a CSV file name's ISO date ...), the day
    the run's timestamps are of; a run of one day whose feed has no date has nothing to
    pick, and --date is refused rather than ignored."""
    from .session import session_date

    wanted = session_date(None, date)          # a YYYY-MM-DD, else an ObookError saying so
    day = session_date(feed, None, fmt) if feed is not None else None
    if day is None:
        raise ObookError(f"--date {date}: the run is one day, of no known date (its feed names none): --date "
                         "picks a day of a many-day run; leave it out")
    if wanted != day:
        raise ObookError(f"--date {date}: the run is one day, {day} (its feed {feed}), not {date}")


def _instrument(tables: dict, ticker) -> str:
    fills, equity = tables["fills"], tables["equity"]
    names = set(equity.column("instrument").to_pylist()) | set(fills.column("instrument").to_pylist())
    if ticker is not None:
        if ticker not in names:
            raise ObookError(f"the run has no instrument {ticker!r} (has: {listing(sorted(names))})")
        return ticker
    if not names:
        raise ObookError("the run has no equity rows and no fills: nothing to draw")
    if fills.num_rows == 0 and len(names) > 1:
        raise ObookError(f"the run has no fills to pick the instrument by (the one with the most): name one "
                         f"with -k ({listing(sorted(names))})")
    counts = {n: 0 for n in names}
    for n in fills.column("instrument").to_pylist():
        counts[n] += 1
    return max(sorted(counts), key=lambda n: counts[n])


def _floats(column) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in column.to_pylist()], dtype=float)


def backtest_series(run, feed=None, ticker=None, start=None, end=None, format=None, date=None,
                    progress=None) -> dict:
    """What the picture draws, in display units (prices / the price scale, quantities / the
    quantity scale: shares, money in the currency, times in hours since local midnight): ``price`` ({"bid": (t, px), "ask": (t, px)}, or
    {"mark": (t, px)} without a feed), ``buys`` / ``sells`` (t, price, shares), ``position``
    and ``equity`` (t, value, at each equity row), ``tz``, ``title``, ``t0``, ``t1``.
    ``run``: a BacktestResult or an ``obook backtest -o`` folder; ``feed``: the feed for
    the price (a folder's run.json names it); [start, end): feed time units since local
    midnight (None: open); ``date``: the day of a many-day run; ``progress``: a context
    manager of the feed's files (a file, or the list of one feed's) yielding a replay's
    progress callback (or None), open while the feed is replayed (obook's CLI: its bar)."""
    import pyarrow.compute as pc

    from .feeds import get_format, resolve_format

    if isinstance(run, (str, Path)):
        folder = Path(run)
        if not folder.is_dir():
            raise ObookError(_not_a_run(run))
        tables, meta = _read_folder(folder)
    else:
        tables, meta = {name: getattr(run, name) for name in NEEDED}, {}
    many = "date" in tables["equity"].column_names
    tables, day_feed = _one_day(tables, meta, date)
    feed = feed if feed is not None else day_feed
    files = feed if isinstance(feed, (list, tuple)) else [] if feed is None else [feed]     # a day of several files
    for f in files:
        if not Path(f).exists():
            raise ObookError(f"{f}: the run's feed is not there (give it with --feed)")
    format = format or _day_format(meta, date)
    if feed is None and format is None:
        raise ObookError("without the feed the picture needs its format (--format) for the time unit and zone")
    fmt = resolve_format(format, feed) if feed is not None else get_format(format)
    check_window(start, end, fmt.time_unit_ns)
    if not many and date is not None:
        _check_the_day(date, files[0] if files else None, fmt)
    name = _instrument(tables, ticker)
    fills = tables["fills"].filter(pc.equal(tables["fills"].column("instrument"), name))
    equity = tables["equity"].filter(pc.equal(tables["equity"].column("instrument"), name))
    bbo = None
    if feed is not None:
        import obook

        from contextlib import nullcontext

        path = list(map(str, files)) if len(files) > 1 else str(files[0])
        with progress(path) if progress is not None else nullcontext() as told:
            bbo = obook.bbo(path, tickers=[name], format=fmt.name, progress=told).read_all()
        u = units(bbo.schema, fmt, files[0])
    else:
        u = units(equity.schema, fmt)
    firsts = [int(t.column("time")[0].as_py()) for t in (bbo, equity, fills) if t is not None and t.num_rows]
    if not firsts:
        raise ObookError(f"{name}: no book rows, fills or equity rows to draw")
    midnight = local_midnight(min(firsts), u)
    lo = None if start is None else int(start) + midnight
    hi = None if end is None else int(end) + midnight
    scale = float(u["price_scale"])
    shares = float(u["quantity_scale"])       # feed quantities -> shares (Shanghai: 1/1000 share), as obook plot
    per_hour = u["time_unit_ns"] / 3.6e12

    def window(t):
        keep = np.ones(len(t), bool)
        if lo is not None:
            keep &= t >= lo
        if hi is not None:
            keep &= t < hi
        return keep

    def held(t):
        """(rows, times) of a line of values held until the next row (the best bid and ask,
        the position, the equity): the window's rows, after the last row before its start
        stamped at the start (the value held there), when the window's end is known."""
        rows = np.flatnonzero(window(t))
        before = np.flatnonzero(t < lo) if lo is not None and (hi is not None or len(rows)) else ()
        if len(before):
            return np.r_[before[-1], rows], np.r_[lo, t[rows]]
        return rows, t[rows]

    def hours(t):
        return (np.asarray(t, dtype=np.int64) - midnight) * per_hour

    title = f"{name} backtest ({fmt.name})" + ("" if fills.num_rows else ": no fills")
    d = {"title": title, "tz": u["tz"], "instrument": name, "price": {}}
    times = []
    if bbo is not None and bbo.num_rows:
        rows, t = held(bbo.column("time").to_numpy().astype(np.int64))
        for side in ("bid", "ask"):
            px = _floats(bbo.column(f"{side}_px")) / scale
            d["price"][side] = (hours(t), px[rows])
        times.append(t)
    rows, t = held(equity.column("time").to_numpy().astype(np.int64))
    if bbo is None:
        d["price"]["mark"] = (hours(t), _floats(equity.column("mark"))[rows] / scale)
    d["position"] = (hours(t), equity.column("position").to_numpy().astype(float)[rows] / shares)
    # money is price x quantity in the feed's integers: the currency once both are divided out
    d["equity"] = (hours(t), _floats(equity.column("equity"))[rows] / (scale * shares))
    times.append(t)
    t = fills.column("time").to_numpy().astype(np.int64)
    keep = window(t)
    side = np.array(fills.column("side").to_pylist(), dtype=object)
    px = fills.column("price").to_numpy().astype(float) / scale
    qty = fills.column("quantity").to_numpy().astype(float) / shares
    for key, code in (("buys", "B"), ("sells", "S")):
        m = keep & (side == code)
        d[key] = (hours(t[m]), px[m], qty[m])
    times.append(t[keep])
    every = np.concatenate(times)
    if not len(every):
        raise ObookError(f"{name}: nothing in the window")
    d["t0"] = float(hours(lo if lo is not None else every.min()))
    d["t1"] = float(hours(hi if hi is not None else every.max() + 1))
    for line in (d["price"], d) if hi is not None else ():      # the held values to --end
        for key in [k for k in line if k in ("bid", "ask", "mark", "position", "equity")]:
            x, y = line[key]
            if len(x) and x[-1] < d["t1"]:
                line[key] = (np.r_[x, d["t1"]], np.r_[y, y[-1]])
    d["price_range"] = price_range([p for _, p in d["price"].values()], [d["buys"][1], d["sells"][1]])
    return d


def price_range(lines, fills) -> list | None:
    """[low, high] of the price panel: the prices of ``lines`` (the best bid and ask, or the
    marks) a twentieth of their span beyond them, without the far-out ones (a call auction's
    orders at the day's price limits: the line leaves the axis while they are the best),
    and every fill's; None when there is no price."""
    from .plotting_bins import book_span

    rows = [np.asarray(p, dtype=float) for p in lines if len(p)]
    low, high = book_span(np.vstack(rows)) if rows else (np.inf, -np.inf)
    done = np.concatenate([np.asarray(f, dtype=float) for f in fills])
    low, high = min(low, done.min(initial=np.inf)), max(high, done.max(initial=-np.inf))
    if not np.isfinite(low):
        return None
    pad = (high - low) / 20 or abs(high) / 1000 or 1.0
    return [float(low - pad), float(high + pad)]


def _png(d: dict, out: Path, width: float, height: float, dpi: int) -> None:
    plt = _matplotlib()
    from matplotlib.ticker import FixedLocator, FuncFormatter

    fig, (ax_px, ax_pos, ax_eq) = plt.subplots(
        3, 1, figsize=(width, height), dpi=dpi, sharex=True, gridspec_kw={"height_ratios": [3, 1, 1.5]})
    fig.suptitle(d["title"])
    for key, colour in (("bid", "tab:blue"), ("ask", "tab:orange"), ("mark", "tab:grey")):
        if key in d["price"]:
            label = "mark (mid)" if key == "mark" else f"best {key}"
            ax_px.step(*d["price"][key], where="post", color=colour, linewidth=1.0, label=label)
    for key, colour, marker in (("buys", "tab:green", "^"), ("sells", "tab:red", "v")):
        t, px, _ = d[key]
        ax_px.scatter(t, px, s=36, color=colour, marker=marker, edgecolors="black", linewidths=0.4,
                      label=key, zorder=3)
    ax_px.set_ylabel("price")
    if d["price_range"] is not None:
        ax_px.set_ylim(*d["price_range"])
    for ax in (ax_px, ax_eq):
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")      # prices and money as they read
    ax_px.legend(loc="best", fontsize="small")
    ax_pos.step(*d["position"], where="post", color="tab:purple")
    ax_pos.axhline(0, color="grey", linewidth=0.5)
    ax_pos.set_ylabel("position (shares)")
    ax_eq.step(*d["equity"], where="post", color="tab:green")
    ax_eq.axhline(0, color="grey", linewidth=0.5)
    ax_eq.set_ylabel("equity")
    ax_eq.set_xlabel(f"time of day ({d['tz']})")
    digits = _clock_digits(d["t0"], d["t1"])
    ax_eq.xaxis.set_major_locator(FixedLocator(_clock_ticks(d["t0"], d["t1"])))     # round times of day
    ax_eq.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _clock_text(v, digits)))
    ax_eq.set_xlim(d["t0"], d["t1"])
    try:
        _complete(out, lambda tmp: fig.savefig(tmp, format=out.suffix[1:].lower() or "png"), "picture")
    finally:
        plt.close(fig)


def _html(d: dict, out: Path, width: float, height: float, dpi: int) -> None:
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise ObookError(INSTALL.replace("matplotlib", "plotly") + " for .html") from None
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, row_heights=[0.55, 0.18, 0.27], vertical_spacing=0.04)
    digits = _clock_digits(d["t0"], d["t1"])
    for key, colour in (("bid", "royalblue"), ("ask", "darkorange"), ("mark", "grey")):
        if key in d["price"]:
            x, y = d["price"][key]
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line={"shape": "hv", "color": colour},
                                     name="mark (mid)" if key == "mark" else f"best {key}"), row=1, col=1)
    for key, colour, symbol in (("buys", "green", "triangle-up"), ("sells", "red", "triangle-down")):
        t, px, qty = d[key]
        fig.add_trace(go.Scatter(x=t, y=px, mode="markers", name=key,
                                 text=[f"{_clock_text(x, digits)} {q:g} @ {p:g}" for x, p, q in zip(t, px, qty)],
                                 marker={"size": 9, "color": colour, "symbol": symbol,
                                         "line": {"width": 0.5, "color": "black"}}), row=1, col=1)
    fig.add_trace(go.Scatter(x=d["position"][0], y=d["position"][1], mode="lines", name="position",
                             line={"shape": "hv", "color": "purple"}), row=2, col=1)
    fig.add_trace(go.Scatter(x=d["equity"][0], y=d["equity"][1], mode="lines", name="equity",
                             line={"shape": "hv", "color": "green"}), row=3, col=1)
    fig.update_layout(title=d["title"], width=int(width * dpi), height=int(height * dpi))
    ticks = _clock_ticks(d["t0"], d["t1"])
    fig.update_xaxes(range=[d["t0"], d["t1"]], tickvals=ticks, ticktext=[_clock_text(x, digits) for x in ticks])
    fig.update_xaxes(title_text=f"time of day ({d['tz']})", row=3, col=1)
    for row, label in ((1, "price"), (2, "position (shares)"), (3, "equity")):
        fig.update_yaxes(title_text=label, row=row, col=1)
    if d["price_range"] is not None:
        fig.update_yaxes(range=d["price_range"], row=1, col=1)
    _complete(out, lambda tmp: fig.write_html(str(tmp), include_plotlyjs=True, full_html=True), "page")


def _day_format(run: dict, date=None) -> str | None:
    """The format of a run.json's day ``date`` (its days may be of several formats), else the
    run's (its first day's)."""
    return (run.get("formats") or {}).get(str(date)) or run.get("format")


def run_format(folder, format=None, feed=None, date=None):
    """The feed format of a backtest folder's run: ``format``, else its run.json's (of day
    ``date``), else the one ``feed`` is in (``''``: as None, detected as on every feed command)."""
    from .feeds import get_format, resolve_format

    format = format or None
    if format is None and feed is None:
        path = Path(folder) / RUN_FILE
        if not Path(folder).is_dir() or not (path.is_file() or any(Path(folder).glob("backtest.*.parquet*"))):
            raise ObookError(_not_a_run(folder))
        format = _day_format(_run_json(path), date) if path.is_file() else None
        if format is None:
            raise ObookError(f"{folder}: no {RUN_FILE} naming the run's feed: give it with --feed")
        return get_format(format)
    return resolve_format(format, feed) if feed is not None else get_format(format)


def plot_backtest(run, out, feed=None, ticker=None, start=None, end=None, format=None, date=None,
                  width: float = 12.0, height: float = 8.0, dpi: int = 100, progress=None) -> Path:
    """Draw a backtest (see :func:`backtest_series` for the arguments) into ``out``: a
    self-contained interactive page for .html (plotly), else a picture (matplotlib)."""
    out = Path(out)
    html = is_page(out)
    d = backtest_series(run, feed, ticker, start, end, format, date, progress)
    (_html if html else _png)(d, out, width, height, dpi)
    return out


def run_text(feeds: dict, format_name: str, strategy: str, tickers=None, formats: dict | None = None) -> str:
    """The text of ``run.json`` beside a backtest's tables: its feeds by day (a file, or the
    list of files read as that day's feed), format (the first day's; ``formats``: each day's,
    when they differ), strategy, tickers (what ``obook plot backtest FOLDER`` reads to draw
    the price)."""
    def resolved(f):        # a day of several files (read as one feed): their list
        return [resolved(p) for p in f] if isinstance(f, (list, tuple)) else str(Path(f).resolve())

    doc = {"feeds": {str(day): resolved(f) for day, f in feeds.items()}, "format": format_name,
           "strategy": strategy, "tickers": tickers}
    if formats and len(set(formats.values())) > 1:
        doc["formats"] = {str(day): name for day, name in formats.items()}
    return json.dumps(doc, indent=1) + "\n"


def _not_a_run(folder) -> str:
    """The error of a backtest folder that is none: missing, a file, or without a run's tables."""
    what = "no such folder" if not Path(folder).exists() else "not a backtest folder"
    return f"{folder}: {what} (obook backtest FEED --strategy ... -o DIR writes one)"
