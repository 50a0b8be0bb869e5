"""``obook convert``: a feed (one file, or several read as one) → Parquet tables with provenance in
their footers."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..tables import offered, tables
from .bbo import COMPRESSION_HELP, DATE_DEFAULT, Compression, FeedFormatName, OnError

#: the tables ``convert`` writes (the registry's)
_TABLES = [t for t in tables() if offered(t, "convert")]


def convert(
    feeds: Optional[List[Path]] = typer.Argument(
        None, metavar="FEED...", show_default=False,
        help="The feed, before OUTDIR: a file (any registered format, plain, .gz, .zst or .zip), or several files of a format "
             "read as one feed, e.g. a Shenzhen vendor pair ORDERS.csv TICKS.csv (a quoted glob pattern: its files, "
             "sorted); '-' alone reads the feed from "
             "stdin (its format told from its first bytes; the replay tables only)."),
    outdir: Path = typer.Argument(..., metavar="OUTDIR", show_default=False,
                                  help="Directory for <table>.parquet (created if missing); the last argument."),
    tables: str = typer.Option("bbo", "--tables", "-t",
                               help="Comma-separated tables: " + ", ".join(_TABLES) + " (bbo, trades, orders "
                                    "and depth from one replay; the others where the feed's format has them), "
                                    "or all: every table the feed's format has."),
    levels: int = typer.Option(10, "--levels", "-l", min=1, max=50, help="Depth levels a side."),
    interval: str = typer.Option("1 minute", "--interval",
                                 help="The bars' length ('1 minute', '5s', '100 ms'), as obook table bars "
                                      "--interval takes it."),
    tickers: Optional[str] = typer.Option(None, "--tickers", "-k",
                                          help="Replay only these tickers' books (comma-separated); a ticker "
                                               "the feed does not name gets a warning."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, max=64,
                                          help="Worker processes applying the books (default: one per core, at most 8; one for a feed under 1 MiB)."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help=f"Session date (default: {DATE_DEFAULT}; one that differs "
                                            "from the feed's is used, with a warning). "
                                            "When known, the tables get a timestamp column (UTC instants)."),
    on_error: OnError = typer.Option(OnError.raise_, "--on-error",
                                     help="raise: stop at the first failing record, the rows before it kept as OUTDIR/<table>.parquet.partial; "
                                          "skip: apply the tolerant rules and record the skipped counts (a feed cut short still ends in an error, the rows before the cut kept as .partial)."),
    compression: Compression = typer.Option(Compression.fast, "--compression", "-c", help=COMPRESSION_HELP),
    format: Optional[FeedFormatName] = typer.Option(None, "--format", "-f", help="Force the feed format, in any case (default, or '': detect)."),
) -> None:
    """Replay FEED and write OUTDIR/<table>.parquet for each table (in feed order).

    Files appear only when every table is complete; on a bad record every table keeps the rows of the records before it as OUTDIR/<table>.parquet.partial (a table with none: no file) and the command exits 1. Each file's footer metadata (JSON under the key 'obook') records the source's name, size and sha256 (each file's, for a feed of several files), the session date, obook's version, the options and the replay statistics. The files of tables not asked for stay in OUTDIR as they are. A convert into an OUTDIR another convert is writing stops with an error.
    """
    from ..errors import ObookError
    from ..to_parquet import convert as _convert
    from .bbo import feed_source
    from .progress import file_progress

    if not feeds:
        raise ObookError(f"obook convert takes FEED... OUTDIR: the feed file(s), then the folder for the tables; "
                         f"only {outdir} was given")
    if outdir.exists() and not outdir.is_dir():     # OUTDIR forgotten: the last feed file taken for it
        raise ObookError(f"{outdir}: exists and is not a folder; OUTDIR, the last argument, is the folder for "
                         "the tables (obook convert FEED... OUTDIR)")
    source, fmt = feed_source(feeds, format.value if format else None, digest=True)
    with file_progress(feeds) as progress:
        result = _convert(source, outdir, tables=tables, workers=workers, date=date, on_error=on_error.value,
                          levels=levels, interval=interval, tickers=tickers, progress=progress,
                          compression=compression.value, unknown_tickers="warn", format=fmt)
    from .stdout import rows_said

    for table, path in result["files"].items():
        typer.echo(f"wrote {path} ({rows_said(result['rows'][table])})", err=True)
