"""``obook lobster``: the LOBSTER message + orderbook files of some tickers of a feed."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class Style(str, Enum):
    lobster = "lobster"
    all = "all"


def lobster(
    feed: Path = typer.Argument(..., help="Nasdaq ITCH 5.0 feed file (BinaryFILE, plain, .gz or .zst; a file: "
                                          "it is read twice, so not stdin)."),
    outdir: Path = typer.Argument(..., help="Directory for the CSV files (created if missing)."),
    tickers: str = typer.Option(..., "--tickers", "-k", help="Comma-separated tickers, e.g. AAPL,MSFT."),
    levels: int = typer.Option(10, "--levels", "-l", min=1, max=50,
                               help="Book levels per side in the orderbook file (1 to 50)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, max=64,
                                          help="Worker processes applying the books (default: one per core, at most 8; one for a feed under 1 MiB)."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help="Session date for the file names (default: from a "
                                            "MMDDYYYY.NASDAQ_ITCH50[.gz] file name; one that differs from the "
                                            "name's is used, with a warning)."),
    style: Style = typer.Option(Style.lobster, "--style",
                                help="lobster: as LOBSTER writes its files (events outside the levels "
                                     "unlisted, a replace as two steps, shortest times); all: every "
                                     "event (a replace as two steps too), 9-decimal times."),
) -> None:
    """Write the LOBSTER message and orderbook files of some tickers of an ITCH feed.

    Files: OUTDIR/<TICKER>_<date>_34200000_57600000_{message,orderbook}_<levels>.csv per ticker.

    Message rows: time (s after midnight), type (1 submission, 2 partial cancel, 3 deletion,
    4 visible execution, 5 hidden execution, 6 cross, 7 trading action), order id, size,
    price x10000, direction (1 buy, -1 sell); the orderbook file has the book after each
    message row. Messages from 09:30 to 16:00 only; files appear only when complete (at a bad
    record, the rows before it are kept as <file>.partial).
    """
    from ..lobster import lobster as _lobster
    from .bbo import one_feed_file
    from .progress import file_progress

    if str(feed) == "-":
        from ..errors import ObookError

        raise ObookError("-: obook lobster reads the feed twice (its trading actions first): give a file, "
                         "not stdin")

    feed = one_feed_file(feed, "lobster")
    with file_progress(feed) as progress:
        result = _lobster(feed, outdir, tickers, levels=levels, workers=workers, date=date, style=style.value,
                          progress=progress)
    from .stdout import rows_said

    for ticker, info in result.items():
        typer.echo(f"wrote {info['message']} and {info['orderbook']} ({rows_said(info['rows'])})", err=True)
