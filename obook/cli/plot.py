"""``obook plot``: candlesticks with volume and a depth heatmap of one security."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def _clock(option: str, text: Optional[str], unit_ns: int) -> Optional[int]:
    """'HH:MM[:SS[.fff]]' (00:00 to 24:00) as feed time units since midnight (None stays None)."""
    if text is None:
        return None
    from ..errors import ObookError

    try:
        parts = [float(p) if i == 2 else int(p) for i, p in enumerate(text.strip().split(":"))]
        # (a NaN seconds fails both comparisons)
        if not 2 <= len(parts) <= 3 or not all(0 <= p for p in parts) or not all(p < 60 for p in parts[1:]):
            raise ValueError
    except ValueError:
        raise ObookError(f"{option}: a time of day is HH:MM, HH:MM:SS or HH:MM:SS.fff (minutes and seconds "
                         f"below 60), not {text!r}") from None
    seconds = parts[0] * 3600 + parts[1] * 60 + (parts[2] if len(parts) == 3 else 0)
    if seconds > 24 * 3600:
        raise ObookError(f"{option}: a time of day is between 00:00 and 24:00, not {text!r}")
    return int(round(seconds * 1e9)) // unit_ns


def plot(
    feed: Path = typer.Argument(..., metavar="FEED",
                                help="Feed file (any format obook reads; '-' reads the feed from stdin, with -k), "
                                     "or the word latency or backtest."),
    out: Path = typer.Argument(..., metavar="OUT",
                               help="Picture file: .png (.svg, .pdf: by the suffix; none: PNG), or .html for an "
                                    "interactive page of a feed or a backtest. "
                                    "After latency: the latency table (obook listen --latency-output). "
                                    "After backtest: the folder obook backtest -o DIR wrote. "
                                    "Followed by a PICTURE after a feed: the feed's next file."),
    picture: Optional[List[Path]] = typer.Argument(
        None, metavar="[PICTURE]...",
        help="After latency TABLE or backtest DIR: the picture file. After a feed's files: the picture, last; the "
             "arguments before it are the files of one feed, e.g. a Shenzhen vendor pair ORDERS.csv TICKS.csv."),
    ticker: Optional[str] = typer.Option(None, "--tickers", "-k",
                                         help="The security, one ticker (default: the one with the most trades); "
                                              "plot latency: the stages to draw (comma-separated, default all)."),
    start: Optional[str] = typer.Option(None, "--start", metavar="HH:MM[:SS[.fff]]",
                                        help="Window start (time of day)."),
    end: Optional[str] = typer.Option(None, "--end", metavar="HH:MM[:SS[.fff]]", help="Window end (time of day)."),
    interval: str = typer.Option("1 minute", "--interval", "-i", help="Bar length, e.g. '1 minute', '5s'."),
    feed_format: Optional[str] = typer.Option(None, "--format", "-f", help="Feed format, in any case (default, or '': detected)."),
    levels: int = typer.Option(10, "--levels", "-l", min=1, max=50, help="Book levels a side in the heatmap."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, max=64, help="Worker processes."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help="Session date; plot backtest: the day of a many-day run (on a "
                                            "one-day run: its feed's date, else refused)."),
    price_feed: Optional[Path] = typer.Option(None, "--feed", help="plot backtest: the feed the price is drawn from "
                                                                  "(default: the one the run's run.json names)."),
) -> None:
    """Draw one security's bars (candlesticks, volume below) and its depth heatmap (time x
    price, colour = resting shares of the top levels) with the best bid and ask and the
    trades on top. Needs matplotlib (plotly for .html): pip install 'obook[plot]'.

    ``obook plot FEED... PICTURE``: a feed in several files (a Shenzhen vendor pair
    ORDERS.csv TICKS.csv, a day split in parts): the picture is the last argument.

    ``obook plot latency TABLE PICTURE``: a live run's latency distributions, one line a
    stage, latency against percentile (log scales, HdrHistogram style).

    ``obook plot backtest DIR PICTURE``: a backtest's run (the folder of ``obook backtest FEED
    --strategy FILE.py:NAME -o DIR``): the instrument's best bid and ask replayed from the
    run's feed with the strategy's buys and sells at their prices and times, its position
    and its equity (the equity table) below; -k picks the instrument (default: the one with
    the most fills; a run of several and no fill asks for -k), --date the day of a many-day
    run (on a one-day run it must be the run's day, its feed's date)."""
    from ..errors import ObookError

    if str(feed) in ("latency", "backtest") and len(picture or ()) > 1:
        raise ObookError(f"obook plot {feed} {'TABLE' if str(feed) == 'latency' else 'DIR'} PICTURE: one picture, "
                         f"not also {picture[1]}")
    if str(feed) == "latency":
        from ..live.plot_latency import plot_latency

        picture = picture[0] if picture else None
        if picture is None:
            raise ObookError("obook plot latency TABLE PICTURE: give the picture file")
        _refuse("latency", "a latency table's (-k picks the stages to draw)", start=start, end=end,
                interval=interval, format=feed_format, levels=levels, workers=workers, date=date, feed=price_feed)
        if str(picture) == "-":
            raise ObookError("-: a picture goes to a file; give its name (.png, .svg, .pdf ...)")
        stages = [s.strip() for s in ticker.split(",") if s.strip()] if ticker is not None else None
        if stages == []:        # ('' or ',': naming none is no way to say all)
            raise ObookError(f"-k {ticker!r}: names no stage; leave -k out to draw every stage")
        typer.echo(f"wrote {plot_latency(out, picture, stages=stages)}", err=True)
        return
    if str(feed) == "backtest":
        _refuse("backtest", "a backtest's", interval=interval, levels=levels, workers=workers)
        _backtest(out, picture[0] if picture else None, ticker, start, end, feed_format, date, price_feed)
        return
    from ..feeds import resolve_format
    from ..feeds.sources import check_source
    from ..output import check_not_an_input
    from ..plotting import is_picture_name, plot as _plot

    from .bbo import feed_files, feed_source

    given = [feed, out, *(picture or ())]         # the feed's files, then the picture
    files, out = feed_files(given[:-1]), given[-1]     # (a quoted glob pattern: its files)
    if ticker is None and any(str(f) == "-" for f in files):
        raise ObookError("-: obook plot without -k replays its feed twice (its trades to find the busiest "
                         "ticker, then its book): give -k TICKER, or a feed file, not stdin")
    for f in files[1:]:
        if is_picture_name(f):
            raise ObookError(f"obook plot FEED... PICTURE: one picture, the last argument; {f} is a picture's "
                             "name, not a feed file")
    if price_feed is not None:
        raise ObookError("obook plot FEED PICTURE: --feed is for plot backtest (the feed its price is drawn "
                         "from); a feed's picture draws FEED")
    check_not_an_input(out, files, "picture")
    feed, feed_format = feed_source(files, feed_format)    # several files: one feed; -: stdin
    check_source(feed)          # (a named pipe: not opened to tell its format, which would wait for a writer)
    fmt = resolve_format(feed_format, feed)
    if ticker is not None and "," in ticker:
        raise ObookError(f"--tickers: plot draws one security, not {ticker!r}")
    first, last = _clock("--start", start, fmt.time_unit_ns), _clock("--end", end, fmt.time_unit_ns)
    if first is not None and last is not None and first >= last:
        raise ObookError(f"--start {start} is not before --end {end}")
    from .progress import file_progress

    with file_progress(files) as progress:       # (a bar on a terminal: a bar a pass over the feed)
        path = _plot(feed, out, ticker=ticker, start=first, end=last, interval=interval, format=fmt.name,
                     workers=workers, levels=levels, date=date, progress=progress)
    typer.echo(f"wrote {path}", err=True)


#: the options of a feed's picture and their defaults
_FEED_OPTIONS = {"start": None, "end": None, "interval": "1 minute", "format": None, "levels": 10, "workers": None,
                 "date": None, "feed": None}


def _refuse(what: str, whose: str, **given) -> None:
    """ObookError naming the options of ``given`` set away from their defaults: they are
    for a feed's picture, not for ``obook plot WHAT``'s (``whose``)."""
    from ..errors import ObookError

    if given.get("format") == "":       # --format '': detected, as when left out
        given["format"] = None
    names = [f"--{name}" for name, value in given.items() if value != _FEED_OPTIONS[name]]
    if names:
        raise ObookError(f"obook plot {what}: {', '.join(names)} {'is' if len(names) == 1 else 'are'} for a "
                         f"feed's picture, not {whose}")


def _backtest(run: Path, picture: Optional[Path], ticker, start, end, feed_format, date, price_feed) -> None:
    from ..errors import ObookError
    from ..plotting_backtest import plot_backtest, run_format

    if picture is None:
        raise ObookError("obook plot backtest DIR PICTURE: give the picture file")
    fmt = run_format(run, feed_format, price_feed, date)
    first, last = _clock("--start", start, fmt.time_unit_ns), _clock("--end", end, fmt.time_unit_ns)
    if first is not None and last is not None and first >= last:
        raise ObookError(f"--start {start} is not before --end {end}")
    from .progress import file_progress

    path = plot_backtest(run, picture, feed=price_feed, ticker=ticker, start=first, end=last, format=fmt.name,
                         date=date, progress=file_progress)     # (a bar on a terminal while the feed replays)
    typer.echo(f"wrote {path}", err=True)
