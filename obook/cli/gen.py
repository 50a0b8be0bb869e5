"""``obook gen``: write deterministic synthetic feeds for tests, demos and benchmarks."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .options import aliases

app = typer.Typer(help="Write deterministic synthetic feeds (same seed, same bytes). A size that the disk or the "
                       "memory cannot hold is refused before anything is written.", no_args_is_help=True,
                  rich_markup_mode=None)


#: the generators' --seed (the same seed writes the same bytes)
SEED = typer.Option(0, "--seed", "-s", min=0, max=2**63 - 1, help="Random seed.")
DATE_HELP = "Session date YYYY-MM-DD of the day's timestamps."
#: Shenzhen securities with six-digit codes of their own (000001 ... and 300002 ...)
SZSE_MAX = 300_001
SZSE_K_HELP = "Securities (000001, 000002, ChiNext 300002 ...), plus the thin ChiNext 300999 (asks only)."


COMPRESSED = (".gz", ".zst")
#: compressions a reader may meet but the generators do not write: a name ending so would
#: hold plain bytes
NOT_WRITTEN = (".zip", ".bz2", ".xz", ".lz4", ".7z", ".tar", ".tgz")


def _writing(out: Path, write, folder: bool = False, also=(), size: Optional[tuple] = None):
    """Run a generator, ``write(path, *also_paths)`` (with ``folder``: ``write()``); bad
    arguments and unwritable outputs become ``error: ...``. Each file is written into a
    temporary folder beside it under its own name (a ``.gz`` or ``.zst`` name tells the
    compression) and renamed into place when every one is complete: a generator stopped
    midway (an error, Ctrl-C) leaves no partial file at ``out`` nor at the files of
    ``also``, and a file that was there stays as it was (a cut feed under the name would
    read as a shorter day). A device or a pipe (/dev/null, a FIFO) is written as it is.
    With ``folder``: the files it wrote in the folder go, and the folders it made.
    ``size``: (messages, the generator's ``MIN_BYTES``): a size the disk or the memory cannot
    hold is refused before anything is written."""
    from ..errors import ObookError, OutputError

    if out.is_dir() and not folder:
        raise OutputError(f"{out}: is a directory; give a file name")
    if folder and out.exists() and not out.is_dir():
        raise OutputError(f"{out}: is a file; give a folder (created if missing)")
    if str(out) == "-":
        raise OutputError("-: the generators write files (give a file name; '-' is stdin only for reading)")
    if not folder and out.name.lower().endswith(NOT_WRITTEN):
        raise OutputError(f"{out}: the generators write plain files, .gz (gzip) or .zst (zstd), not "
                          f"{out.suffix}; give another name")
    if not folder:
        for f in (out, *also):
            if f is not None and not f.absolute().parent.is_dir():
                if f.absolute().parent.exists():
                    raise OutputError(f"{f}: cannot write: {f.parent} is not a folder")
                raise OutputError(f"{f}: cannot write: the folder {f.parent} does not exist (create it first)")
    if size is not None:
        _check_room(out, *size)
    from ..interrupts import deferred
    from ..output import new_folders, remove_new_folders
    from ..tempfiles import remove_dir_quietly, remove_quietly

    made = new_folders(out) if folder else []     # (they go again when the generator stops)
    files = _folder_files(out) if folder else {}
    staged: list = []           # (temporary folder, the file in it, the final file)
    try:
        try:
            if folder:
                return write()
            paths = [_staged(f, staged) for f in (out, *also)]
            result = write(*paths)
            with deferred():    # a second Ctrl-C: once every file is in place
                for _, tmp, final in staged:
                    os.replace(tmp, final)
            return result
        except ValueError as e:
            raise ObookError(f"{out}: {e}") from None
        except OSError as e:
            raise OutputError(f"{out}: cannot write: {_reason(e, staged)}") from None
        except MemoryError:
            raise ObookError(f"{out}: not enough memory for these sizes; give smaller ones") from None
    except BaseException:
        with deferred():    # a second Ctrl-C: once every file written and folder made is gone
            if folder:      # the folder's files written so far: a part of the day would read as all of it
                files.update({f: None for f in _folder_files(out) if f not in files})
                for f, before in files.items():
                    if _stamp(f) != before:     # written to (an untouched file stays)
                        remove_quietly(f)
            remove_new_folders(made)
        raise
    finally:
        with deferred():    # a second Ctrl-C: once every temporary file is gone
            for stage, tmp, _ in staged:
                remove_quietly(tmp)             # (gone once renamed)
                remove_dir_quietly(stage)


def _staged(path: Optional[Path], staged: list) -> Optional[Path]:
    """Where a generator writes ``path``: the file of its name in a new temporary folder
    beside the file it makes (a symbolic link's target), noted in ``staged``; a device or a
    pipe as it is."""
    from ..tempfiles import temp_path

    final = _own_file(path)
    if final is None:
        return path
    stage = temp_path(final)
    stage.mkdir()
    staged.append((stage, stage / final.name, final))
    return stage / final.name


def _reason(e: OSError, staged: list) -> str:
    """Why a write failed (:func:`obook.output.write_failure`), naming no temporary file."""
    from ..output import write_failure

    why = write_failure(e)
    for _, tmp, final in staged:
        why = why.replace(str(tmp), str(final))
    return why


def _folder_files(folder: Path) -> dict:
    """The stamps of the files in ``folder`` (none when it does not exist yet)."""
    if not folder.is_dir():
        return {}
    return {f: _stamp(f) for f in folder.iterdir() if f.is_file() and not f.is_symlink()}


def _check_room(out: Path, messages: int, min_bytes: tuple) -> None:
    """ObookError when ``messages`` would not fit on the disk holding ``out`` or in the memory
    available now (a hostile size would otherwise fill the disk, or end in the kernel's
    out-of-memory kill). ``min_bytes``: the generator's ``MIN_BYTES``, the bytes a message
    takes at least on disk (plain, compressed) and in memory while it is generated (0: the
    generator streams)."""
    import shutil

    from ..errors import ObookError

    plain, packed, memory = min_bytes
    disk = messages * (packed if out.name.endswith(COMPRESSED) else plain)
    free = None
    if not out.exists() or out.is_file() or out.is_dir():        # not a device or a pipe (/dev/null, /dev/stdout)
        where = next(p for p in (out.absolute(), *out.absolute().parents) if p.exists())
        try:
            free = shutil.disk_usage(where).free
        except OSError:
            pass
    if free is not None and disk > free:
        raise ObookError(f"{out}: {messages:,} messages make at least {_bytes(disk)} and the disk has "
                         f"{_bytes(free)} free: give fewer --messages")
    available = _available_memory()
    if memory and available is not None and messages * memory > available:
        raise ObookError(f"{out}: {messages:,} messages need at least {_bytes(messages * memory)} of memory to "
                         f"generate and {_bytes(available)} is available: give fewer --messages")


def _available_memory() -> Optional[int]:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _bytes(n: float) -> str:
    """A size in bytes as people read it: 330 bytes, 84.3 GB."""
    if n < 1000:
        return f"{n:,.0f} bytes"
    for unit in ("KB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000:
            break
    return f"{n:,.1f} {unit}"


def _own_file(path: Optional[Path]) -> Optional[Path]:
    """The file a generator makes at ``path`` (the target of a symlink), which a stopped run
    removes; None for a device, a pipe or a socket (/dev/null, a FIFO, /dev/stdout), never
    removed."""
    import stat

    if path is None:
        return None
    real = Path(os.path.realpath(path))
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        return real
    except OSError:
        return None
    return real if stat.S_ISREG(mode) else None


def _stamp(path: Path):
    """What tells a file written since: its inode, size and time of change (None: none)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@app.command("itch", context_settings=aliases(stocks="instruments"))
def itch(
    out: Path = typer.Argument(..., metavar="OUT", help="Output file; ends in .gz to gzip it, .zst for zstd. With --date: a folder "
                                         "(the file is named MMDDYYYY.NASDAQ_ITCH50) or such a name."),
    messages: int = typer.Option(100_000, "--messages", "-n", min=1, help="Messages to write."),
    stocks: int = typer.Option(100, "--instruments", "-k", min=1, max=65535, help="Stocks (locates 1..K)."),
    seed: int = SEED,
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help=DATE_HELP + " An ITCH file carries it in its name, "
                                                        "MMDDYYYY.NASDAQ_ITCH50, as Nasdaq names its files."),
) -> None:
    """Write a synthetic Nasdaq ITCH 5.0 day: directory, adds near the touch, deletes, cancels,
    executions, replaces, trades, and a few other message types."""
    from ..gen.itch import MIN_BYTES, write_itch

    if date is not None:
        out = _itch_dated(out, _date(date))
    n = _writing(out, lambda path: write_itch(path, messages, stocks, seed), size=(messages, MIN_BYTES))
    typer.echo(f"wrote {n} messages to {out}", err=True)


def _itch_dated(out: Path, date: str) -> Path:
    """The ITCH file of ``--date``: Nasdaq's name for that day, MMDDYYYY.NASDAQ_ITCH50."""
    from ..feeds.itch import session_date

    return _dated(out, date, session_date, "{day.month:02}{day.day:02}{day.year:04}.NASDAQ_ITCH50", "an ITCH file")


def _dated(out: Path, date: str, name_date, pattern: str, what: str) -> Path:
    """The file of ``--date`` for a format that carries the session date in its file name
    only (``name_date(path)``: the date a name says): ``out`` itself when its name says
    that day, ``out/<pattern>`` for a folder (created when the name has no suffix)."""
    import datetime as dt

    from ..errors import ObookError

    day = dt.date.fromisoformat(date)
    named = name_date(out)
    if named is not None:
        if named != day:
            raise ObookError(f"{out}: the name says {named.isoformat()}, --date says {date}")
        return out
    name = pattern.format(day=day)
    if out.is_dir() or not out.exists() and not out.suffix:
        out.mkdir(parents=True, exist_ok=True)
        return out / name
    raise ObookError(f"{out}: {what} carries its session date in its name only: give a folder "
                     f"(the file is named {name}) or a name with the date, such as {name}")


def _named(out: Path, date: Optional[str], suffix: str, what: str) -> Path:
    """``out`` for ``--date`` on a format whose readers take the session date from a date
    in the file name (YYYY-MM-DD or YYYYMMDD): see obook.feeds.named_date."""
    if date is None:
        return out
    from ..feeds import named_date

    return _dated(out, _date(date), named_date, "{day.year:04}-{day.month:02}-{day.day:02}" + suffix, what)


class CaptureKind(str, Enum):
    """The capture file formats of ``obook gen pcap``."""
    pcap = "pcap"
    pcap_ns = "pcap-ns"
    pcapng = "pcapng"


@app.command("pcap")
def pcap(
    itch: Path = typer.Argument(..., metavar="ITCH", help="An ITCH day file (plain, .gz or .zst; e.g. from `obook gen itch`)."),
    out_a: Path = typer.Argument(..., metavar="OUT_A", help="Capture of line A (of both lines without OUT_B)."),
    out_b: Optional[Path] = typer.Argument(None, metavar="[OUT_B]",
                                           help="Capture of line B (default: line B into OUT_A too)."),
    seed: int = SEED,
    drop: float = typer.Option(0.01, "--drop", min=0.0, max=1.0, help="Share of packets each line drops "
                                                                     "(B never drops what A dropped)."),
    dup: float = typer.Option(0.005, "--dup", min=0.0, max=1.0, help="Share of packets sent twice."),
    reorder: float = typer.Option(0.005, "--reorder", min=0.0, max=1.0, help="Share of packets swapped with the next."),
    both_gaps: int = typer.Option(0, "--both-gaps", min=0, help="Packets dropped on both lines (lost); at most the "
                                                                  "packets the day makes (more is an error "
                                                                  "saying how many)."),
    kind: CaptureKind = typer.Option(CaptureKind.pcap, "--kind", help="pcap (µs), pcap-ns or pcapng."),
    vlan: bool = typer.Option(False, "--vlan", help="Add an 802.1Q tag to every frame."),
    date: str = typer.Option("2026-11-30", "--date", "-d", metavar="YYYY-MM-DD",
                             help="Session date of the capture times (YYYY-MM-DD)."),
) -> None:
    """Write an ITCH day as MoldUDP64 on lines A (233.54.12.111:26477) and B (233.54.12.112:26477)
    in packet captures, with seeded drops, duplicates, reordering and gaps on both lines."""
    from ..gen.pcap import check_captures, write_pcap

    check_captures(itch, out_a, out_b)      # (the writer sees the temporary names)
    info = _writing(out_a, lambda a, b: write_pcap(itch, a, b, seed=seed, drop=drop, dup=dup,
                                              reorder=reorder, both_gaps=both_gaps, kind=kind.value, vlan=vlan,
                                              date=_date(date)), also=(out_b,))
    lost = sum(c for _, c in info["lost"])
    typer.echo(f"wrote {info['packets']} packets of {info['messages']} messages a line "
               f"({lost} lost on both lines)", err=True)


@app.command("csv", context_settings=aliases(events="messages", tickers="instruments"))
def csv(
    out: Path = typer.Argument(..., metavar="OUT", help="Output file; ends in .gz to gzip it, .zst for zstd."),
    events: int = typer.Option(100_000, "--messages", "-n", min=1, help="Events to write (before the final drain)."),
    tickers: int = typer.Option(100, "--instruments", "-k", min=1, help="Tickers (AAA, AAB, ...)."),
    seed: int = SEED,
    depth: int = typer.Option(200, "--depth", min=1, help="At most this many live orders a ticker."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help=DATE_HELP + " A CSV feed carries it in its file name (YYYY-MM-DD "
                                                        "or YYYYMMDD): give a folder (the file is named "
                                                        "YYYY-MM-DD.csv) or such a name."),
) -> None:
    """Write a synthetic CSV order feed (Time,Ticker,Order,T,Shares,Price,MPID,X; CRLF)."""
    from ..gen.csv import MIN_BYTES, write_csv

    out = _named(out, date, ".csv", "a CSV feed")
    _check_order_slots(out, tickers, depth)
    n = _writing(out, lambda path: write_csv(path, events, tickers, seed, depth), size=(events, MIN_BYTES))
    typer.echo(f"wrote {n} events to {out}", err=True)


def _check_order_slots(out: Path, tickers: int, depth: int) -> None:
    """ObookError naming the options when the CSV generator's live orders (``depth`` slots a
    ticker, 32 bytes each) would not fit in the memory available now."""
    from ..errors import ObookError

    need, available = tickers * depth * 32, _available_memory()
    if available is not None and need > available:
        raise ObookError(f"{out}: not enough memory for --instruments {tickers:,} x --depth {depth:,} (their live "
                         f"orders need {_bytes(need)}, {_bytes(available)} is available): give fewer --instruments "
                         "or a smaller --depth")


def _no_day(text: str) -> str:
    """The error of a ``--date`` that is no day: not of the form YYYY-MM-DD, or of it but no
    calendar day (2020-02-30: the month's days said)."""
    import calendar
    import re

    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text)
    if not m:
        return f"--date: expected YYYY-MM-DD, not {text!r}"
    year, month = int(m.group(1)), int(m.group(2))
    if not 1 <= month <= 12:
        return f"--date {text}: no such day (month {month})"
    return (f"--date {text}: no such day ({calendar.month_name[month]} {year} has "
            f"{calendar.monthrange(year, month)[1]} days)")


def _date(text: Optional[str], first: Optional[str] = None, last: Optional[str] = None,
          holder: str = "") -> Optional[str]:
    """``--date`` checked (YYYY-MM-DD); with ``first`` and ``last``: within them, the days
    ``holder`` (what carries the times, e.g. "a DBN file's ns times") can hold."""
    if text is None:
        return None
    import datetime as dt

    from ..errors import ObookError

    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise ObookError(_no_day(text)) from None
    if first is not None and not dt.date.fromisoformat(first) <= day <= dt.date.fromisoformat(last):
        raise ObookError(f"--date {text}: out of range for {holder} ({first} to {last}); give a date in it")
    return text


@app.command("szse", context_settings=aliases(securities="instruments"))
def szse(
    out: Path = typer.Argument(..., metavar="OUT",
                               help="Output file (text log; .bin with --binary); ends in .gz to gzip it, .zst for zstd."),
    messages: int = typer.Option(100_000, "--messages", "-n", min=1, help="Messages to write (about)."),
    securities: int = typer.Option(6, "--instruments", "-k", min=1, max=SZSE_MAX,
                                   help=SZSE_K_HELP),
    seed: int = SEED,
    binary: bool = typer.Option(False, "--binary", help="Write AX-SBE binary records instead of the text log."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD", help=DATE_HELP + " [default: 2024-01-05]"),
) -> None:
    """Write a synthetic Shenzhen Level-2 day: call auctions and their uncross, limit, market,
    own-best and securities-lending orders, fills, cancels, snapshots; two channels."""
    from ..gen.szse import MIN_BYTES_BINARY, MIN_BYTES_TEXT, write_szse

    n = _writing(out, lambda path: write_szse(path, messages, securities, seed, binary, _date(date)),
                 size=(messages, MIN_BYTES_BINARY if binary else MIN_BYTES_TEXT))
    typer.echo(f"wrote {n} messages to {out}", err=True)


@app.command("szse-csv")
def szse_csv(
    outdir: Path = typer.Argument(..., metavar="OUTDIR", help="Folder for the files (created if missing): "
                                            "<security>_orders.csv and <security>_ticks.csv."),
    messages: int = typer.Option(100_000, "--messages", "-n", min=1, help="Messages of the day (about)."),
    securities: int = typer.Option(6, "--instruments", "-k", min=1, max=SZSE_MAX,
                                   help=SZSE_K_HELP),
    seed: int = SEED,
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD", help=DATE_HELP + " [default: 2024-01-05]"),
) -> None:
    """Write the synthetic Shenzhen day of `obook gen szse` as vendor CSV files, an orders
    and a ticks file per security (prices in yuan, quantities in shares); replay them all
    with `obook bbo OUTDIR/*.csv` (securities share channels: one pair alone has gaps in
    its channel's sequence, replayed with --on-error skip)."""
    from ..gen.szse import MIN_BYTES_VENDOR, generate, write_vendor

    files = _writing(outdir, lambda: write_vendor(outdir, generate(messages, securities, seed, _date(date))),
                     folder=True, size=(messages, MIN_BYTES_VENDOR))
    typer.echo(f"wrote {len(files)} file{'' if len(files) == 1 else 's'} to {outdir}", err=True)


@app.command("databento")
def databento(
    out: Path = typer.Argument(..., metavar="OUT", help="Output file (.dbn); ends in .zst for zstd (.dbn.zst, as Databento's), .gz to gzip it."),
    messages: int = typer.Option(100_000, "--messages", "-n", min=1, help="MBO records (about)."),
    instruments: int = typer.Option(3, "--instruments", "-k", min=1, max=1_000_000, help="Instruments."),
    seed: int = SEED,
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help=DATE_HELP + " The day starts at 09:30 New York [default: "
                                                        "2023-11-14, from 22:13:20 UTC]."),
) -> None:
    """Write a synthetic Databento MBO file (DBN version 3, XNAS.ITCH): adds, cancels, modifies,
    trades and fills in events flagged F_LAST, book clears, order ids above 2^63."""
    from ..gen.databento import MIN_BYTES, START_NS, mbo_flow, session_start, write_dbn

    start = session_start(_date(date, "1970-01-01", "2262-04-10", "a DBN file's ns times as obook reads them")) \
        if date is not None else START_NS
    if messages < instruments:
        from ..errors import ObookError

        raise ObookError(f"{out}: --messages {messages} is fewer than --instruments {instruments} (the day opens with "
                         "a clear of each book): more --messages or fewer --instruments")

    def write(path):
        flow = mbo_flow(messages, instruments, seed, start_ns=start)
        # the array's bytes: what databento_dbn's encoder writes, record by record, many times slower
        write_dbn(path, flow, zstd=out.name.endswith(".zst"), gz=out.name.endswith(".gz"), start_ns=start,
                  encoder=False)
        return len(flow)

    n = _writing(out, write, size=(messages, MIN_BYTES))
    typer.echo(f"wrote {n} records to {out}", err=True)


@app.command("sse", context_settings=aliases(events="messages", securities="instruments"))
def sse(
    out: Path = typer.Argument(..., metavar="OUT", help="Output file (AX-SBE text log); ends in .gz to gzip it, .zst for zstd."),
    events: int = typer.Option(10_000, "--messages", "-n", min=1, help="Order and trade lines (about)."),
    securities: int = typer.Option(4, "--instruments", "-k", min=1, max=57_143,
                                   help="Securities (600000, 600007 ...: six digits)."),
    seed: int = SEED,
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help=DATE_HELP + " A Shanghai log carries none in its lines: it goes in "
                                                        "the file name (YYYY-MM-DD or YYYYMMDD); give a folder "
                                                        "(the file is named YYYY-MM-DD.log) or such a name."),
) -> None:
    """Write a synthetic Shanghai AX-SBE text log of a day: the opening call auction (orders and
    deletes from 09:15, a tenth of the lines; the book may cross) and its uncross at 09:25:00.00
    (call-auction trades, ExecType N, at one price a security); continuous trading from 09:30
    (orders, deletes, trades naming the resting and the incoming order); the closing call
    auction from 14:57 (a twentieth) and its uncross at 15:00:00.00. File order is not
    BizIndex order (an uncross's trades come before its call's orders, as in the exchange's
    log). 10-level snapshots with day tallies; during a call auction the exchange's: the
    uncross price and the shares it would match on both sides' first level. Events are 0.2 s
    apart on average, closer together in a day too long for its session's hours."""
    from ..gen.sse import MIN_BYTES, write_sse

    out = _named(out, date, ".log", "a Shanghai log")
    n = _writing(out, lambda path: write_sse(path, events, securities, seed), size=(events, MIN_BYTES))
    typer.echo(f"wrote {n} lines to {out}", err=True)


@app.command("orders")
def orders(
    out: Path = typer.Argument(..., metavar="OUT", help="Output file: .parquet, else CSV (ends in .gz to gzip it, .zst for zstd)."),
    messages: int = typer.Option(1_100_000, "--messages", "-n", min=1, help="Instructions to write."),
    instruments: int = typer.Option(1, "--instruments", "-k", min=1, max=1_000_000,
                                    help="Instruments (S00001, S00002 ...)."),
    seed: int = typer.Option(42, "--seed", "-s", min=0, max=2**62, help="Random seed (42: the seed benchmark)."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help=DATE_HELP + " The times become ns since midnight New York (from "
                                                        "09:30) and the date goes in the file name (YYYY-MM-DD "
                                                        "or YYYYMMDD), where `obook match` finds it; give a "
                                                        "folder (the file is named YYYY-MM-DD.parquet) or "
                                                        "such a name."),
) -> None:
    """Write the seed matching benchmark's order entry: around a mid of 10,000
    ticks, 48% resting adds a geometric distance from the mid, 37% cancels, 10% IOC takers
    crossing 1-6 ticks, 5% modifies; adds turn into cancels once a book holds 10,000 orders."""
    from ..gen.orders import MIN_BYTES_CSV, MIN_BYTES_PARQUET, write_orders

    out = _named(out, date, ".parquet", "an order-entry file")
    n = _writing(out, lambda path: write_orders(path, messages, instruments, seed, dated=date is not None),
                 size=(messages, MIN_BYTES_PARQUET if out.suffix in (".parquet", ".pq") else MIN_BYTES_CSV))
    typer.echo(f"wrote {n} instructions to {out}", err=True)


def _format_commands() -> None:
    """``obook gen <format>`` of each format whose package names its generator command
    (``GEN_COMMAND``: a lazy reference to a typer command function); the old long names of
    the sizes read as the common ones, as for the generators above."""
    from ..feeds import format_package, formats, load

    have = {c.name for c in app.registered_commands}
    for name, fmt in formats().items():
        ref = getattr(format_package(fmt), "GEN_COMMAND", None)
        if ref and name not in have:
            app.command(name, context_settings=aliases(stocks="instruments", events="messages"))(load(ref))


_format_commands()

