"""``obook bbo``: replay a feed and write its best bid/offer rows."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from ..feeds import formats
from .progress import file_progress

#: the registered formats' names (``--format``)
FeedFormatName = Enum("FeedFormatName", {name: name for name in formats()}, type=str)


class OnError(str, Enum):
    raise_ = "raise"
    skip = "skip"


class Compression(str, Enum):
    fast = "fast"
    small = "small"


COMPRESSION_HELP = ("Parquet compression (other outputs: a warning that it is not used): fast (zstd level 1, dictionaries: the smallest files measured but "
                    "for a fraction of a percent) or small (zstd level 7: up to 0.5% smaller, 1.3-1.8x "
                    "the encoding time).")
#: where a feed's own session date comes from, --date's default
DATE_DEFAULT = ("the feed's own: a MMDDYYYY.NASDAQ_ITCH50 name, a YYYY-MM-DD or YYYYMMDD in a CSV or Shanghai "
                "log's name, a Shenzhen feed's first TransactTime")


def feed_files(feeds) -> list:
    """The FEED arguments with each quoted glob pattern (``'days/*.itch'``) replaced by its
    files, sorted, as the shell expands one left unquoted; a pattern that matches no file is
    an ObookError."""
    from ..tables.open import expand, is_pattern

    return [f for item in feeds for f in (expand(item) if is_pattern(item) else [item])]


def one_feed_file(feed, command: str):
    """The one feed file of a command that reads a single file: a quoted glob pattern must
    match exactly one."""
    files = feed_files([feed])
    if len(files) > 1:
        from ..errors import ObookError
        raise ObookError(f"{feed}: matches {len(files)} files ({files[0]}, {files[1]}...); obook {command} "
                         "reads one feed file")
    return files[0]


def feed_source(feed, format: str | None, digest: bool = False):
    """(source, format) of a FEED argument, or of the list of a FEED... argument (several
    files: a tuple of paths, one feed): ``-`` is stdin, read as a stream whose format,
    unless given, is told from its first bytes (and decompressed when it is gzip or zstd);
    with ``digest`` the stream's ``digest()`` gives the size and sha256 of stdin's bytes.
    ``-`` among several files is an ObookError. A quoted glob pattern gives its files, sorted
    (``feed_files``)."""
    files = feed_files(feed if isinstance(feed, (list, tuple)) else [feed])
    if len(files) > 1:
        if any(str(f) == "-" for f in files):
            from ..errors import ObookError
            raise ObookError("'-' reads the feed from stdin: give '-' alone, or feed files")
        return tuple(os.fspath(f) for f in files), format      # several files: one feed
    feed, = files
    if str(feed) != "-":
        return feed, format
    from ..feeds import SNIFF_BYTES, detect_head
    from ..feeds.sources import HEAD_BYTES, DigestingStream, sniffed_stream

    raw = DigestingStream(sys.stdin.buffer, "<stdin>") if digest else sys.stdin.buffer
    stream, head = sniffed_stream(raw, "<stdin>", HEAD_BYTES)
    if digest:
        stream.digest = raw.digest
    if not head:
        from ..errors import ObookError
        if stream.failed is not None:       # its first read failed: that, not an empty feed
            raise ObookError(f"<stdin>: reading it failed before its first byte: {stream.failed}")
        raise ObookError("<stdin>: the feed on stdin is empty")
    return stream, format or detect_head("", head[:SNIFF_BYTES], "<stdin>")


def bbo(
    feeds: Optional[List[Path]] = typer.Argument(
        None, metavar="FEED...", show_default=False,
        help="Feed file (any registered format, plain, .gz, .zst or .zip; a packet capture); '-' reads the "
             "feed from stdin (its format told from its first bytes). Several files of a format read as one "
             "feed, e.g. a Shenzhen vendor pair ORDERS.csv TICKS.csv; a quoted glob pattern is its files, sorted. "
             "Or give --line-a/--line-b."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, max=64,
                                          help="Worker processes applying the books (default: one per core, at most 8; one for a feed under 1 MiB)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write to a file instead of stdout; the type follows the extension: "
                                               ".parquet (or .pq), .arrow (or .feather, .ipc), .csv (with header), .txt (the stdout text)."),
    format: Optional[FeedFormatName] = typer.Option(None, "--format", "-f", help="Force the feed format, in any case (default, or '': detect)."),
    on_error: OnError = typer.Option(OnError.raise_, "--on-error",
                                     help="raise: stop at the first failing record (after writing every earlier row); "
                                          "skip: apply the tolerant rules and report what was skipped (a feed cut short still ends in an error, after every row before the cut)."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help=f"Session date YYYY-MM-DD (default: {DATE_DEFAULT}; one that differs "
                                            "from the feed's is used, with a warning); "
                                            "when known, file outputs get a timestamp column (UTC)."),
    compression: Compression = typer.Option(Compression.fast, "--compression", "-c", help=COMPRESSION_HELP),
    tickers: Optional[str] = typer.Option(None, "--tickers", "-k",
                                          help="Replay only these tickers' books (comma-separated); a ticker "
                                               "the feed does not name gets a warning."),
    line_a: Optional[str] = typer.Option(None, "--line-a", metavar="CAPTURE:ADDRESS:PORT",
                                         help="MoldUDP64 line A in a packet capture (pcap/pcapng), e.g. "
                                              "a.pcap:233.54.12.111:26477; the lines are arbitrated into one "
                                              "ITCH feed (rows get mold_seq, line, ts_recv)."),
    line_b: Optional[str] = typer.Option(None, "--line-b", metavar="CAPTURE:ADDRESS:PORT",
                                         help="MoldUDP64 line B (may be the same capture as line A)."),
    latency: bool = typer.Option(False, "--latency", help="Time every event in the book kernel (one worker, a timed "
                                                          "kernel) and print p50/p99/p99.9/max ns per event on stderr."),
) -> None:
    """Replay FEED through its order books and write one row per BBO change.

    Text lines on stdout are TIME,TICKER,BID_PX,BID_QTY,ASK_PX,ASK_QTY with the feed's own
    integer prices (ITCH: 1/10000 $; Databento: 1e-9; file outputs record the scale as
    obook.price_scale) and empty fields for an empty side. A failing record prints
    'error: <file>: <unit> N: <reason>' on stderr (unit: line for CSV and Level-2 logs)
    and exits 1 after every earlier row is written.
    """
    # imported here, inside main()'s try: a Ctrl-C while numba and the kernels load is exit 130
    from ..engine.replay import Replay
    from ..errors import ObookError
    from ..output import check_not_an_input, warn_stdout_compression, write_file, write_text
    from .stdout import writing_stdout

    if output is not None:
        check_not_an_input(output, [os.fspath(f) for f in feeds or ()])
    feed = (feeds[0] if len(feeds) == 1 else [os.fspath(f) for f in feeds]) if feeds else None
    if line_a or line_b:
        if feed is not None:
            raise ObookError("give a FEED or --line-a/--line-b, not both")
        from ..feeds.mold.lines import lines
        feed = lines(line_a, line_b)
    elif feed is None:
        raise ObookError("give a FEED (or --line-a/--line-b)")
    # rows printed on the terminal would be glued to the bar's line: no bar then
    show_bar = output is not None or not sys.stdout.isatty()
    if line_a or line_b:                 # the lines of packet captures
        source, fmt = feed, format.value if format else None
    else:                                # a file, stdin, or several files as one feed
        source, fmt = feed_source(feeds, format.value if format else None)
    with file_progress(feeds or [], enabled=show_bar) as progress:      # (captures' lines: no bar)
        timer = None
        if latency:
            from ..live.latency import BookTimer

            timer = BookTimer()
        replay = Replay(source, workers=workers, format=fmt,
                        on_error=on_error.value, progress=progress, date=date, tickers=tickers,
                        unknown_tickers="warn", book_kernel=timer.kernel if timer else None)
        reader = replay.reader()
        if output is not None:
            rows = write_file(reader, output, compression=compression.value)
            from .stdout import rows_said

            typer.echo(f"wrote {output} ({rows_said(rows)})", err=True)
            _report(timer, replay)
            return
        warn_stdout_compression(compression.value, "text")
        with writing_stdout(reader):    # `| head`: a quiet exit; `> /dev/full`: an error
            write_text(reader, sys.stdout.buffer)
        _report(timer, replay)


def _report(timer, replay) -> None:
    if timer is not None:
        from ..live.latency import report_text

        typer.echo(report_text([timer.histogram(f"book ({replay.format.name})")],
                               "book kernel, ns per event"), err=True)
