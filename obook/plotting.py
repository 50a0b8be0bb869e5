"""Pictures of one security over a time window, for any format: a candlestick
chart of its bars with the volume under it, and a depth heatmap (time x price, colour =
resting shares of the top levels) with the best bid and ask lines and the trades on top.

Built from obook's own tables (``trades``, ``depth``, the bars of ``obook.klines``) of
one replay restricted to the security; drawn with matplotlib (the optional extra
``obook[plot]``), written as PNG (or any format matplotlib writes, by the file's suffix),
or with plotly as a self-contained interactive HTML page (.html).
Prices are drawn in the table's unit (its schema's ``obook.price_scale``); times as the
local time of day in the feed's time zone (named on the axis), from feeds stamped since
local midnight and from feeds stamped in UTC epoch time alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import ObookError, OutputError
from .plotting_bins import BookRows, heatmap
from .plotting_draw import _html, _matplotlib, _png


def _busiest(counts: dict, path) -> str:
    """The ticker with the most trades in ``counts`` (ticker: trades; a tie: the last name)."""
    if not counts:
        name = ", ".join(map(str, path)) if isinstance(path, (list, tuple)) else path
        raise ObookError(f"{name}: the feed has no trades to pick the busiest security by: name one (-k, ticker=)")
    return max(counts.items(), key=lambda c: (c[1], c[0]))[0]


def _counts(tickers) -> dict:
    """ticker: rows of a ticker column."""
    import pyarrow.compute as pc

    return {c["values"]: c["counts"] for c in pc.value_counts(tickers).to_pylist()}


def units(schema, fmt, path=None) -> dict:
    """How to read a table's prices, quantities and times: from its schema's units metadata
    (``obook.price_scale``, ``obook.quantity_scale``, ``obook.time_unit``, ``obook.time_zone``,
    ``obook.time_origin``: obook.tables.units), the feed format's declaration where the schema
    says nothing. A feed stamped in UTC epoch time whose file ``path`` names its venue is shown
    in the venue's zone."""
    from .tables.units import time_unit_ns, units as meta_units

    meta = meta_units(schema)
    u = {"price_scale": int(meta.get("price_scale", 10 ** fmt.price_scale)),
         "quantity_scale": int(meta.get("quantity_scale", fmt.quantity_scale)),
         "time_unit_ns": time_unit_ns(meta["time_unit"]) if "time_unit" in meta else fmt.time_unit_ns,
         "tz": meta.get("time_zone", fmt.tz),
         "epoch": meta["time_origin"] == "epoch" if "time_origin" in meta else fmt.epoch}
    if u["epoch"] and u["tz"] == "UTC" and path is not None:
        u["tz"] = venue_zone(path) or u["tz"]
    return u


#: the venues' time zones by the first four letters of a Databento dataset (its venue's MIC)
VENUE_ZONES = {
    **dict.fromkeys(("XNAS", "XNYS", "XASE", "ARCX", "XBOS", "XPSX", "BATS", "BATY", "EDGA", "EDGX",
                     "IEXG", "MEMX", "EPRL", "XCHI", "XCIS", "FINN", "FINY", "FINC", "DBEQ", "EQUS",
                     "OPRA", "IFUS", "NDEX"), "America/New_York"),
    **dict.fromkeys(("GLBX", "XCME", "XCBT", "XNYM", "XCEC"), "America/Chicago"),
    **dict.fromkeys(("XEUR", "XEEE"), "Europe/Berlin"),
    **dict.fromkeys(("IFEU", "IFLL", "IFLO", "IFLX", "XLON"), "Europe/London"),
}


def venue_zone(path) -> str | None:
    """The time zone of the venue a feed file names: a DBN file's dataset (``XNAS.ITCH``:
    New York, ``GLBX.MDP3``: Chicago); None when the file names none obook knows."""
    if isinstance(path, (list, tuple)):
        return None
    from .feeds.sources import read_head

    try:
        head = read_head(path, 24)
    except ObookError:
        return None
    if head[:3] != b"DBN" or len(head) < 24:
        return None
    return VENUE_ZONES.get(head[8:12].decode("ascii", "replace").upper())


def local_midnight(first_time: int, u: dict) -> int:
    """The feed time (its units) of local midnight of the session holding ``first_time``:
    0 for a feed stamped since local midnight; for an epoch feed, midnight in its zone of
    the local day of ``first_time``."""
    if not u["epoch"]:
        return 0
    import datetime as dt
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(u["tz"])
    ns = first_time * u["time_unit_ns"]
    local = dt.datetime.fromtimestamp(ns // 10**9, dt.timezone.utc).astimezone(zone)
    midnight = dt.datetime.combine(local.date(), dt.time(0), zone)
    return int(midnight.timestamp()) * 10**9 // u["time_unit_ns"]


def _window(table, start, end):
    t = table.column("time").to_numpy().astype(np.int64)
    keep = np.ones(len(t), bool)
    if start is not None:
        keep &= t >= start
    if end is not None:
        keep &= t < end
    return table.filter(keep)


def _pass(progress, label):
    """The progress callback of one pass over the feed (``progress(bytes, phase)`` as a
    replay's): the pass's ``label`` first, then the replay's own phases under it."""
    if progress is None:
        return None
    progress(0, label)
    return lambda done, phase=None: progress(done) if phase is None else progress(done, f"{label}: {phase}")


def frame(path, ticker=None, start=None, end=None, interval="1 minute", format=None, workers=None,
          levels: int = 10, date=None, progress=None):
    """The data of the pictures: (ticker, format, bars, depth, trades) as pyarrow tables of
    the window [start, end) (feed time units since local midnight, for epoch-stamped feeds
    too; None: open). ``progress(bytes read[, phase])``: as a replay's, once a pass over the
    feed: one replay of the ticker's trades and book; ``ticker`` None: its trades (to find
    the busiest), then its book)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    import obook
    from .feeds import resolve_format
    from .klines import bar_step, bars_table

    _not_empty(path)
    fmt = resolve_format(format, path)
    step = bar_step(interval, fmt.time_unit_ns)      # (as obook.bars: 500 us on a ms feed is an error)
    check_window(start, end, fmt.time_unit_ns)
    pick = dict(workers=workers, format=fmt.name, tickers=[ticker], date=date)
    if ticker is None:      # the busiest one: its trades are already in the whole feed's
        every = obook.trades(path, workers=workers, format=fmt.name, date=date,
                             progress=_pass(progress, "trades")).read_all()
        ticker = pick["tickers"][0] = _busiest(_counts(every.column("ticker")), path)
        trades = every.filter(pc.equal(every.column("ticker"), ticker))
        depth = obook.depth(path, levels=levels, progress=_pass(progress, "book"), **pick).read_all()
    else:                   # one replay of both
        schemas, pairs = _both(path, ticker, fmt, workers, levels, date, progress)
        got = {"trades": [], "depth": []}
        for name, batch in pairs:
            got[name].append(batch)
        trades, depth = (pa.Table.from_batches(got[n], schemas[n]) for n in ("trades", "depth"))
    if depth.num_rows and (start is not None or end is not None):
        midnight = local_midnight(int(depth.column("time")[0].as_py()), units(depth.schema, fmt, path))
        start = None if start is None else start + midnight
        end = None if end is None else end + midnight
    trades = _window(trades, start, end)
    depth = _window(depth, start, end)
    if depth.num_rows == 0:
        raise _no_book(ticker, start, end)
    from .engine.tables import format_schema

    bars = bars_table(trades, step)       # with its units, as obook.bars's and the other tables'
    return ticker, fmt, bars.replace_schema_metadata(format_schema(bars.schema, fmt).metadata), depth, trades


def _no_book(ticker, start, end) -> ObookError:
    """The error of a security without a book row to draw: in the window, or (none given)
    in the whole feed (a sample of a feed's first messages: its directory, no order)."""
    if start is None and end is None:
        return ObookError(f"{ticker}: no book rows in the feed (no order of it to draw)")
    return ObookError(f"{ticker}: no book rows in the window")


def _heatmap(depth, levels, scale, t0, t1, traded=()):
    """(grid shares [price row, time column], price edges, time edges) of the top levels of
    a depth table; a book empty throughout the window: an empty grid over the prices
    ``traded`` there."""
    return heatmap(depth.to_batches(), levels, scale, t0, t1, traded)


TRADE_COLUMNS = ("ticker", "time", "price", "shares", "broken")     # what the bars and the dots read
#: trades of the whole feed kept while the busiest ticker is looked for; past them, its
#: trades are read again once it is known (a third pass, over that ticker only)
KEEP_TRADES = 4_000_000


def _trades(path, ticker, fmt, workers, date, progress):
    """(ticker, its trades: the columns the pictures read) from one pass over the feed's
    trades, batch by batch; ``ticker`` None: the one with the most trades (from a feed of
    more than ``KEEP_TRADES`` trades, a second pass reads its own)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    import obook

    reader = obook.trades(path, workers=workers, format=fmt.name, date=date,
                          tickers=None if ticker is None else [ticker], progress=_pass(progress, "trades"))
    kept, counts, rows = [], {}, 0
    for batch in reader:
        rows += batch.num_rows
        if ticker is None:
            for name, n in _counts(batch.column("ticker")).items():
                counts[name] = counts.get(name, 0) + n
            if rows > KEEP_TRADES:
                kept = None
        if kept is not None:
            kept.append(batch.select(TRADE_COLUMNS))
    names = reader.schema.names
    schema = pa.schema([reader.schema.field(names.index(c)) for c in TRADE_COLUMNS])
    if ticker is not None:
        return ticker, pa.Table.from_batches(kept, schema)
    ticker = _busiest(counts, path)
    if kept is None:
        return _trades(path, ticker, fmt, workers, date, progress)
    trades = pa.Table.from_batches(kept, schema)
    return ticker, trades.filter(pc.equal(trades.column("ticker"), ticker))


class _SaidOnce:
    """A filter of the obook loggers (``cover`` adds it to those there are) that drops a
    warning one of them already gave through it: a feed replayed for its trades, then for
    its book, warns once. ``remove`` takes it off again."""

    def __init__(self):
        self.said, self.loggers = set(), []

    def cover(self) -> None:
        import logging

        for name, logger in [("obook", logging.getLogger("obook")), *logging.Logger.manager.loggerDict.items()]:
            if (name == "obook" or name.startswith("obook.")) and isinstance(logger, logging.Logger) \
                    and self not in logger.filters:
                logger.addFilter(self)
                self.loggers.append(logger)

    def remove(self) -> None:
        for logger in self.loggers:
            logger.removeFilter(self)

    def filter(self, record) -> bool:
        import logging

        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.getMessage())
        if key in self.said:
            return False
        self.said.add(key)
        return True


def _series(path, ticker, start, end, interval, format, workers, levels, date, progress=None) -> dict:
    """What both renderers draw, in display units (prices / 10**scale, times in hours). The
    trades and the book of a named ``ticker`` are read in one replay; with none, the feed's
    trades in one pass (to find the busiest), its book in another. The book's rows come batch
    by batch (``BookRows``), never all in memory; a warning of the feed is given once, not once
    a pass."""
    from .feeds import resolve_format
    from .klines import bar_step

    _not_empty(path)
    fmt = resolve_format(format, path)
    bar_step(interval, fmt.time_unit_ns)      # (as obook.bars: 500 us on a ms feed is an error; before a replay)
    check_window(start, end, fmt.time_unit_ns)
    once = _SaidOnce()
    once.cover()
    try:
        if ticker is not None:      # one replay: its trades and its book side by side
            return _book_series(path, ticker, fmt, None, start, end, interval, workers, levels, date, progress)
        ticker, trades = _trades(path, ticker, fmt, workers, date, progress)
        once.cover()       # (and the loggers the first pass made)
        return _book_series(path, ticker, fmt, trades, start, end, interval, workers, levels, date, progress)
    finally:
        once.remove()


def _not_empty(path) -> None:
    """ObookError when the feed is a file of no bytes, also once decompressed: its replay has
    no record (said once, rather than a warning and then that it has no such security); or
    when a path of it is no file (missing, a folder, a named pipe: read as a stream)."""
    import os

    from .feeds.sources import check_source, read_head

    check_source(path)
    if isinstance(path, (str, os.PathLike)) and os.path.isfile(path):
        try:
            empty = read_head(path, 1) == b""
        except ObookError:      # (damaged: its replay says how)
            return
        if empty:
            raise ObookError(f"{path}: empty file: no record to draw")


def check_window(start, end, time_unit_ns: int) -> None:
    """ObookError unless the window's bounds (None: open) are times of a day in feed time units
    since local midnight, the start before the end (as ``--start`` and ``--end`` are): a
    bound given in other units, far past the day, would draw for ever."""
    from .checks import is_integer, not_int

    day = 86_400 * 10**9 // time_unit_ns
    for name, value in (("start", start), ("end", end)):
        if value is not None and not (is_integer(value) and 0 <= value <= day):
            raise ObookError(f"{name} must be feed time units since local midnight (an integer from 0 to "
                             f"{day:,}, 24:00), not {not_int(value)}")
    if start is not None and end is not None and start >= end:
        raise ObookError(f"start {start} is not before end {end}")


def _both(path, ticker, fmt, workers, levels, date, progress):
    """(schemas by table, (table, batch) pairs) of ``ticker``'s trades and depth from one replay."""
    from .tables.open import open_tables

    return open_tables(("trades", "depth"), path, workers=workers, format=fmt.name, date=date, tickers=[ticker],
                       levels=levels, progress=_pass(progress, "trades and book"))


def _book_series(path, ticker, fmt, trades, start, end, interval, workers, levels, date, progress) -> dict:
    """``_series`` once the ticker is known: the book's pass (``trades`` None: the pass reads its
    trades too), then the arrays drawn."""
    import pyarrow as pa

    import obook

    if trades is None:
        schemas, pairs = _both(path, ticker, fmt, workers, levels, date, progress)
        kept = []
        depth = _depth_of(pairs, kept)
        schema = schemas["depth"]
    else:
        depth = obook.depth(path, levels=levels, progress=_pass(progress, "book"), workers=workers,
                            format=fmt.name, tickers=[ticker], date=date)
        schema = depth.schema
    u = units(schema, fmt, path)
    window = None        # [start, end) in feed time: from the local midnight of the book's first row
    resting = None       # the last row before the window's start: the book resting at the start
    with BookRows(levels) as book:
        for batch in depth:
            if batch.num_rows and (start is not None or end is not None):
                if window is None:
                    first = local_midnight(int(batch.column("time")[0].as_py()), u)
                    window = (_shift(start, first), _shift(end, first))
                if book.rows == 0 and window[0] is not None:
                    resting = _last_before(batch, window[0], resting)
                batch = _window(batch, *window)
            if resting is not None and batch.num_rows:
                book.add(resting)
                resting = None
            book.add(batch)
        if trades is None:
            names = schemas["trades"].names
            trades = pa.Table.from_batches(kept, pa.schema([schemas["trades"].field(names.index(c))
                                                            for c in TRADE_COLUMNS]))
        if window is not None:
            trades = _window(trades, *window)
        if resting is not None and (end is not None or trades.num_rows):
            book.add(resting)   # no change in the window: the book before it, to the end (open: the last trade)
        if book.rows == 0:
            raise _no_book(ticker, start, end)
        return _drawn(ticker, fmt, u, interval, trades, book, start, end)


def _last_before(batch, start: int, resting):
    """The depth row of ``batch`` last before ``start`` (feed time), stamped ``start``: the
    book the window opens on; ``resting`` (the one of the batches before) when it has none."""
    import pyarrow as pa

    t = batch.column("time").to_numpy().astype(np.int64)
    before = np.flatnonzero(t < start)
    if not len(before):
        return resting
    row = batch.slice(int(before[-1]), 1)
    at = row.schema.get_field_index("time")
    stamp = pa.array([start], row.schema.field(at).type)
    return pa.RecordBatch.from_arrays([stamp if i == at else c for i, c in enumerate(row.columns)], schema=row.schema)


def _depth_of(pairs, kept: list):
    """The depth batches of (table, batch) pairs, the trades' (their ``TRADE_COLUMNS``) put in ``kept``."""
    for name, batch in pairs:
        if name == "trades":
            kept.append(batch.select(TRADE_COLUMNS))
        else:
            yield batch


def _drawn(ticker, fmt, u: dict, interval, trades, book, start, end) -> dict:
    """What both renderers draw from the window's ``trades`` and ``book`` (its first and
    last row's times ``first``, ``last``; ``heatmap(scale, t0, t1, traded)``; ``best(side)``:
    (times, prices)), in display units (prices / 10**scale, times in hours)."""
    from .klines import bar_step, bars_table

    step = bar_step(interval, fmt.time_unit_ns)
    bars = bars_table(trades, step)
    scale = float(u["price_scale"])
    midnight = local_midnight(book.first, u)
    hours_per_unit = u["time_unit_ns"] / 3.6e12

    def hours(x):          # feed times -> hours since local midnight
        return (np.asarray(x, dtype=np.int64) - midnight) * hours_per_unit

    starts = bars.column("start").to_numpy().astype(np.int64)
    traded = trades.column("time").to_numpy().astype(np.int64)
    last = max(book.last, int(traded.max(initial=book.last)))      # (a trade after the book's last change too)
    t0 = int(start) + midnight if start is not None else book.first
    t1 = int(end) + midnight if end is not None else last + 1
    if t1 - t0 >= 2 * step:       # an open end of a window of bars: the first and the last bar whole in it
        t0 = t0 if start is not None else min(t0, int(starts.min(initial=t0)))
        t1 = t1 if end is not None else int(starts.max(initial=t1 - step)) + step
    none = "" if bars.num_rows else ": no trades" + (" in the window" if start is not None or end is not None else "")
    d = {"title": f"{ticker} ({fmt.name}){none}", "tz": u["tz"], "t0": float(hours(t0)), "t1": float(hours(t1))}
    b = {c: bars.column(c).to_numpy().astype(float) for c in ("open", "high", "low", "close", "volume")}
    shares = float(u["quantity_scale"])       # feed quantities -> shares (Shanghai: 1/1000 share)
    d["bars"] = {"x": hours(starts), "volume": b["volume"] / shares,
                 **{c: b[c] / scale for c in ("open", "high", "low", "close")}}
    d["bar_width"] = bar_step(interval, u["time_unit_ns"]) * hours_per_unit * 0.8    # of one interval
    d["bars"].update(_bodies(d["bars"]["x"], d["bar_width"] / 0.8, d["t0"], d["t1"]))
    tp = trades.filter(trades.column("price").is_valid())
    try:
        grid, edges_p, edges_t = book.heatmap(scale, t0, t1, tp.column("price").to_numpy())
    except OutputError:         # (the temporary file's: no word of the ticker)
        raise
    except ObookError as e:
        raise ObookError(f"{ticker}: {e}") from None
    d["heat"] = {"grid": grid / shares, "prices": edges_p, "times": hours(edges_t.astype(np.int64))}
    d["heat"]["top"] = colour_top(d["heat"]["grid"])
    d["best"] = {}
    for side in ("bid", "ask"):
        times, prices = book.best(side)
        if times[-1] < t1:      # the last price holds to the axis's end
            times, prices = np.r_[times, t1], np.r_[prices, prices[-1]]
        d["best"][side] = (hours(times), prices / scale)
    d["trades"] = (hours(tp.column("time").to_numpy()), tp.column("price").to_numpy().astype(float) / scale)
    return d


def colour_top(grid) -> float:
    """The resting shares the heatmap's brightest colour stands for: the 99th percentile of
    its cells that hold shares (a few huge orders would leave the rest of the book dark)."""
    held = grid[grid > 0]
    return float(np.quantile(held, 0.99)) if len(held) else 1.0


def _bodies(x, step: float, t0: float, t1: float) -> dict:
    """``left`` and ``width`` (hours) of the bars starting at ``x``, ``step`` long: the middle
    0.8 of the part of their interval inside the axis [t0, t1] (a bar the window cuts, or
    a window shorter than one bar, is drawn inside it)."""
    lo, hi = np.maximum(x, t0), np.minimum(x + step, t1)
    return {"left": lo + (hi - lo) * 0.1, "width": (hi - lo) * 0.8}


def _shift(t, midnight):
    """A window bound (feed time since local midnight, or None) as the feed's time."""
    return None if t is None else t + midnight


#: the suffixes of the pictures and pages obook plot writes (matplotlib's usual kinds, .html)
PICTURE_SUFFIXES = (".png", ".svg", ".svgz", ".pdf", ".ps", ".eps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp",
                    ".html", ".htm")


def is_picture_name(path) -> bool:
    """Whether ``path``'s suffix is a picture's or a page's (``PICTURE_SUFFIXES``): in
    ``obook plot FEED... PICTURE`` such a name is the picture, never a file of the feed."""
    return Path(path).suffix.lower() in PICTURE_SUFFIXES


def is_page(out) -> bool:
    """Whether ``out`` is drawn as an interactive page (.html, .htm) rather than a picture.
    Checked before any replay: a picture file matplotlib cannot write (by its suffix; none
    is PNG), '-' (a picture goes to a file), a folder or a file in no folder (OutputError)
    and a missing matplotlib are ObookErrors."""
    out = Path(out)
    if str(out) == "-":
        raise ObookError("-: a picture goes to a file; give its name (.png, .svg, .pdf ... or .html)")
    check_picture_path(out)
    if out.suffix.lower() in (".html", ".htm"):
        return True
    _matplotlib()
    from matplotlib.backend_bases import FigureCanvasBase

    kind = out.suffix[1:].lower() or "png"
    known = FigureCanvasBase.get_supported_filetypes()
    if kind not in known:
        raise ObookError(f"{out}: .{kind} is no picture type; give .html or one of "
                         f"{', '.join('.' + k for k in sorted(known))}")
    return False


def check_picture_path(out: Path) -> None:
    """OutputError when the picture ``out`` could not be written: a folder, no regular file (a
    device, a pipe: the finished picture's rename would replace it), or in a folder that does
    not exist (said before the feed is replayed, not after)."""
    from .errors import OutputError

    if out.is_dir():
        raise OutputError(f"{out}: is a folder; give the picture's file name (.png, .svg, .pdf ... or .html)")
    if out.exists() and not out.is_file():
        raise OutputError(f"{out}: is not a regular file (a device, a pipe or a socket); give the picture's file name")
    folder = out.absolute().parent
    if not folder.is_dir():
        raise OutputError(f"{out}: cannot write: {'no folder' if not folder.exists() else 'not a folder:'} {folder}")


def plot(path, out, ticker=None, start=None, end=None, interval="1 minute", format=None, workers=None,
         levels: int = 10, date=None, width: float = 12.0, height: float = 8.0, dpi: int = 100,
         progress=None) -> Path:
    """Draw the candlesticks with volume and the depth heatmap of ``ticker`` (None: the one
    with the most trades) in [start, end) (feed time units) into ``out``: a self-contained
    interactive page for .html (plotly), else a picture (matplotlib: .png, .svg, .pdf ...).
    ``progress``: as :func:`frame`'s. Returns its path."""
    out = Path(out)
    html = is_page(out)        # before the replay: a bad name or a missing library says so at once
    d = _series(path, ticker, start, end, interval, format, workers, levels, date, progress)
    (_html if html else _png)(d, out, width, height, dpi)
    return out
