"""LOBSTER output: the two-file layout academic code reads, per ticker and day.

    obook.lobster.lobster("12302019.NASDAQ_ITCH50.gz", "out/", tickers=["AAPL"], levels=10)

writes ``out/AAPL_2019-12-30_34200000_57600000_message_10.csv`` and
``out/AAPL_2019-12-30_34200000_57600000_orderbook_10.csv`` (no header lines).

Built only from the engine's tables (one replay of orders, trades and depth; the book is
never re-implemented here): the orders and trades rows give the message rows, the depth
rows the book state after each of them (depth has rows only when the top levels change, so the last state
of each ticker is carried forward), ``obook.trading_actions`` the trading actions (``H``) and
``obook.cross_trades`` the type of each cross (``Q``).

Message file columns: time (seconds after midnight in the shortest form, ``34200.05990197``),
event type, order id, size, price (x10000, the raw ITCH integer), direction (1 buy, -1 sell).

As LOBSTER writes its files (``style="lobster"``, the default): a submission, cancellation or
deletion is listed only when it falls inside the requested levels (it changes the top
``levels`` of its side), so a 1-level file is much shorter than a 10-level one; a replace
(``U``) is a deletion row with the book after the deletion, then a submission row with the
book after both (the deletion step may bring level N+1 into view: the replay keeps one level
more than it writes). ``style="all"``: every event at any level, a ``U``'s rows as in
LOBSTER's style (the deletion row with the book after the deletion), times with 9 decimals.

| ITCH | LOBSTER rows |
|---|---|
| ``A`` / ``F`` | 1 submission |
| ``X`` | 2 partial cancellation; 3 total deletion when it leaves the order at 0 shares |
| ``D`` | 3 deletion: size = the shares that were left, price = the order's |
| ``U`` | 3 deletion of the original (its remaining shares, its price), then 1 submission of the new ref |
| ``E`` / ``C`` | 4 execution of a visible order: size executed, price = the resting order's limit price (for ``C`` too, printable or not, so the row names the level it took from), direction = the resting side |
| ``P`` | 5 execution of a hidden order: ref, shares, price and side as given |
| ``Q`` | 6 cross: order id -1 opening, -2 closing, -3 halt/IPO, -4 intraday or post-close (the message's cross type), shares, price, direction -1 |
| ``H`` | 7 trading action: order id 0, size 0, price -1 halted/paused, 0 quotation only, 1 trading; direction -1 |
| ``B`` | no row (LOBSTER has no broken-trade event) |

Orderbook file: per message row, ``ask px 1, ask size 1, bid px 1, bid size 1, ask px 2 ...``
for ``levels`` levels, the book after that message; a missing level is LOBSTER's dummy
(ask price 9999999999, bid price -9999999999, size 0).

Only messages with ``start_ms <= time < end_ms`` (ms after midnight, default 09:30 to 16:00)
are written; the book state still counts every earlier message. Files are written under
temporary names and renamed when the whole replay succeeded; a failing record raises
``FeedError`` and the rows before it are kept as ``<file>.partial`` (``e.kept_in`` says
where; with no row before it, no file is left, nor the folders the call made). A complete
run removes the ``.partial`` files an earlier stopped one left under its names. A final
name that is a folder is an ``OutputError`` before the replay (no ticker's files are written).
Each ticker's two files are open through the whole replay: the soft limit of open files is
raised for them (and put back after); more than the hard limit allows is an ``OutputError``
before any folder is made.
"""

from __future__ import annotations

import os

import numpy as np

from .checks import is_integer, not_int
from .errors import FeedError, ObookError, OutputError
from .interrupts import deferred
from .lobster_rows import DUMMY_ASK, DUMMY_BID
from .tempfiles import remove_quietly, temp_path

__all__ = ["lobster", "lobster_names", "DUMMY_ASK", "DUMMY_BID"]

START_MS = 34_200_000
END_MS = 57_600_000

MAX_LEVELS = 50
STYLES = ("lobster", "all")



def lobster_names(ticker: str, date, levels: int, start_ms: int = START_MS,
                  end_ms: int = END_MS) -> tuple[str, str]:
    """(message file name, orderbook file name) of a ticker and day (a path separator in the
    ticker is written as ``_``: the files stay in the output folder)."""
    safe = "".join("_" if c in "/\\\0" else c for c in ticker)
    stem = f"{safe}_{date.isoformat()}_{start_ms}_{end_ms}"
    return f"{stem}_message_{levels}.csv", f"{stem}_orderbook_{levels}.csv"


def lobster(feed, outdir, tickers, levels: int = 10, workers: int | None = None, date=None,
            start_ms: int = START_MS, end_ms: int = END_MS, style: str = "lobster", progress=None) -> dict:
    """Write the LOBSTER message and orderbook files of each ticker of ``tickers``.

    ``tickers``: names (a list, or a comma-separated string). ``date``: the session date
    (``YYYY-MM-DD``; default from a ``MMDDYYYY.NASDAQ_ITCH50[.gz]`` file name, and one that
    differs from the name's is used with a warning; required otherwise, it is part of the file names). Returns ``{ticker: {"message": path,
    "orderbook": path, "rows": n}}``. ``style``: "lobster" (LOBSTER's own files: events
    outside the levels unlisted, a replace as two steps, shortest times) or "all" (every
    event, a replace's deletion row with the book after the deletion, 9-decimal times).
    """
    from .checks import check_choice, ticker_names
    from .session import session_date

    tickers = ticker_names(tickers)
    if not tickers:
        raise ObookError("--tickers / tickers=: no ticker given; LOBSTER files are of the tickers asked for")
    if not isinstance(outdir, (str, os.PathLike)) or not os.fspath(outdir):
        raise ObookError(f"outdir must be a folder's path, not {outdir!r}")
    if not is_integer(levels) or not 1 <= levels <= MAX_LEVELS:
        raise ObookError(f"levels must be an integer from 1 to {MAX_LEVELS}, not {not_int(levels)}")
    levels = int(levels)
    start_ms, end_ms = _window(start_ms, end_ms)
    style = check_choice("style", style, STYLES)
    from .errors import FormatError
    from .checks import a_feed
    from .feeds import resolve_format
    from .feeds.sources import check_source, source_name, source_paths

    _not_a_stream(feed)
    check_source(feed)      # a missing feed: said before any folder is made
    # (a tuple is one feed in pieces: a capture's lines A and B)
    try:
        fmt = resolve_format(None, feed)
    except FormatError as e:    # (no format to pass: LOBSTER output is of ITCH feeds)
        raise e.hinted("LOBSTER output needs an ITCH feed", choices=()) from None
    if not _lobster_units(fmt):
        raise ObookError(f"{source_name(feed)}: LOBSTER output needs an ITCH feed (with trading actions and "
                         f"crosses, prices in 1/10000 and times in ns since midnight), not {a_feed(fmt.name)}")
    day = session_date(feed, date, fmt)
    if day is None:
        raise ObookError(f"the session date of {feed} is unknown: name the file "
                         "MMDDYYYY.NASDAQ_ITCH50[.gz] or give the date (--date / date= YYYY-MM-DD)")
    from .checks import put_back_fd_limit
    from .output import check_not_an_input, make_output_dir, new_folders, remove_new_folders

    soft = _room_for_files(2 * len(tickers))      # (before any folder is made)
    readers, made = [], []
    try:
        made = new_folders(outdir)
        outdir = make_output_dir(outdir)
        for t in tickers:     # a folder under a final name, the feed itself: found before the replay
            for name in lobster_names(t, day, levels, start_ms, end_ms):
                final = outdir / name
                if final.is_dir():
                    raise OutputError(f"{final}: is a directory; the LOBSTER file of {t} cannot be written there")
                check_not_an_input(final, source_paths(feed))
        return _write(feed, outdir, tickers, levels, workers, day, start_ms, end_ms, readers, style, progress)
    except BaseException:
        remove_new_folders(made)    # the folders this call made, nothing kept in them
        raise
    finally:
        for reader in readers:
            try:
                reader.close()
            except Exception:  # noqa: BLE001 - closing after a failure; the first error wins
                pass
        put_back_fd_limit(soft)


_TWICE = "LOBSTER output reads the feed twice (its trading actions first)"


def _not_a_stream(feed) -> None:
    """ObookError for a feed that is a stream, or a named pipe, rather than files: it is read twice."""
    from .checks import not_a_file
    from .feeds.sources import is_stream, source_name, source_paths

    if is_stream(feed):
        raise ObookError(f"{source_name(feed)}: a stream; {_TWICE}: give its file's path")
    for p in source_paths(feed):
        if os.path.exists(p) and not os.path.isfile(p) and not os.path.isdir(p):
            raise ObookError(f"{not_a_file(p, stream=False)}; {_TWICE}: give a file")


#: descriptors the replay holds besides the LOBSTER files (the feed, the workers' pipes and memory)
_FD_RESERVE = 128


def _room_for_files(files: int):
    """Each ticker's two files are open through the whole replay: the soft limit of open
    files raised for them (the one before returned, to put back; None: unchanged), an
    ``OutputError`` when the hard limit does not allow them."""
    from .checks import raise_fd_limit

    try:
        import resource
    except ImportError:         # not a POSIX system: no such limit
        return None
    before = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    got = raise_fd_limit(files + _FD_RESERVE)
    if got < files + _FD_RESERVE:
        raise OutputError(f"{files // 2} tickers' LOBSTER files ({files}) are open together through the replay: "
                          f"more than the open files limit allows ({got}, ulimit -n); ask for fewer tickers a call "
                          "or raise the limit")
    return None if got == before else before


def _window(start_ms, end_ms) -> tuple[int, int]:
    """``start_ms`` and ``end_ms``: whole ms after midnight, ``0 <= start_ms < end_ms <= 24:00`` (they
    are part of the file names; an empty window would write empty files)."""
    for name, value in (("start_ms", start_ms), ("end_ms", end_ms)):
        if not is_integer(value) or not 0 <= value <= _MAX_MS:
            raise ObookError(f"{name} must be an integer of ms after midnight from 0 to {_MAX_MS}, "
                             f"not {not_int(value)}")
    if start_ms >= end_ms:
        raise ObookError(f"start_ms {start_ms} must be before end_ms {end_ms} (ms after midnight)")
    return int(start_ms), int(end_ms)


#: the latest window end: 24:00 (an ITCH time is before it)
_MAX_MS = 86_400_000


def _lobster_units(fmt) -> bool:
    """LOBSTER's files are ITCH's units: prices x10000, times ns after midnight; its halts are
    the format's trading actions, its crosses' order ids their cross trades' types."""
    return ({"trading_actions", "cross_trades"} <= set(fmt.side_tables) and fmt.price_scale == 4
            and fmt.time_unit_ns == 1 and not fmt.epoch)


def _write(feed, outdir, tickers, levels, workers, day, start_ms, end_ms, readers, style, progress) -> dict:
    import pyarrow.csv as pcsv

    from .engine.replay import Replay
    from .lobster_rows import TickerState, ticker_rows
    from .output import drop_stale_partial

    start_ns, end_ns = start_ms * 1_000_000, end_ms * 1_000_000
    # LOBSTER has no broken-trade event: no pre-pass for the trades' breaks
    # only the wanted tickers' books are replayed (ticker pushdown); one the feed does not
    # name gets a warning and empty files
    # one level more than written: a replace's deletion step can bring level N+1 into view
    # (50 levels read 51: the books hold them, the depth tables stop at 50)
    class DeeperReplay(Replay):
        max_levels = MAX_LEVELS + 1

    deep = levels + 1
    replay = DeeperReplay(feed, workers=workers, tables=("depth", "orders", "trades"), levels=deep,
                          queue_positions=False,     # LOBSTER's files have no queue places
                          breaks=False, tickers=tickers, unknown_tickers="warn", progress=progress)
    halts, cross_types, side_error = _side(feed, replay.format)
    no_quotes = pcsv.WriteOptions(include_header=False, quoting_style="none")

    files: dict[str, dict] = {}
    handles = []
    try:
        for t in tickers:
            message_name, book_name = lobster_names(t, day, levels, start_ms, end_ms)
            files[t] = {"message": outdir / message_name, "orderbook": outdir / book_name,
                        "tmp": (temp_path(outdir / message_name), temp_path(outdir / book_name)),
                        "state": TickerState(deep), "writers": None}
            for p in files[t]["tmp"]:
                handles.append(open(p, "wb"))
            files[t]["out"] = handles[-2:]
        for tables in _batches(replay, halts):
            for t, f in files.items():
                got = ticker_rows({name: _of_ticker(table, t) for name, table in tables.items()}, f["state"],
                                  levels, cross_types, start_ns, end_ns, style)
                if got is None:
                    continue
                if f["writers"] is None:
                    f["writers"] = [pcsv.CSVWriter(h, table.schema, write_options=no_quotes)
                                    for h, table in zip(f["out"], got)]
                for w, table in zip(f["writers"], got):
                    w.write_table(table)
                f["state"].rows += got[0].num_rows
        if side_error is not None:      # (the replay stops at the same record first)
            raise side_error
        _close(files, handles)
        with deferred():    # a Ctrl-C: once every file is in place (not some of them)
            for f in files.values():
                for tmp, final in zip(f["tmp"], (f["message"], f["orderbook"])):
                    os.replace(tmp, final)
                    drop_stale_partial(final)
    except BaseException as e:
        if isinstance(e, FeedError) and _keep_partial(files, handles, e, outdir, day, levels, start_ms, end_ms):
            raise
        for h in handles:
            try:
                h.close()
            except OSError:     # its buffer cannot be written either (a full disk)
                pass
        with deferred():    # a second Ctrl-C: once every temp file is gone
            for f in files.values():
                for p in f["tmp"]:
                    remove_quietly(p)
        if isinstance(e, OSError):
            raise OutputError(f"{outdir}: write failed: {e.strerror or e}") from e
        raise
    return {t: {"message": f["message"], "orderbook": f["orderbook"], "rows": f["state"].rows}
            for t, f in files.items()}


def _close(files: dict, handles: list) -> None:
    """The CSV writers, then their files."""
    for f in files.values():
        for w in f["writers"] or ():
            w.close()
    for h in handles:
        h.close()


def _keep_partial(files: dict, handles: list, e, outdir, day, levels, start_ms, end_ms) -> bool:
    """After a bad record: each ticker's rows before it, kept as ``<file>.partial`` (``e.kept_in``
    says where); whether they were kept (none when no ticker has a row before it, or a file
    cannot be closed or renamed)."""
    if not any(f["state"].rows for f in files.values()):
        return False
    kept = []
    try:
        _close(files, handles)
        for f in files.values():
            for tmp, final in zip(f["tmp"], (f["message"], f["orderbook"])):
                kept.append(final.with_name(final.name + ".partial"))
                os.replace(tmp, kept[-1])
    except OSError:
        for p in kept:
            remove_quietly(p)
        return False
    ticker = next(iter(files)) if len(files) == 1 else "TICKER"
    message, _ = lobster_names(ticker, day, levels, start_ms, end_ms)
    e.kept_in = str(outdir / (message.replace("_message_", "_{message,orderbook}_") + ".partial"))
    return True


def _side(feed, fmt):
    """The format's trading actions (ITCH H) with a ``ticker`` column, the cross type of each
    cross by its record number (ITCH Q), read in one pass over the feed, and the FeedError of
    a bad record (None: none): the rows before it are the ones the files keep."""
    import pyarrow as pa

    got = {"trading_actions": [], "cross_trades": []}
    error = None
    try:
        for name, batch in fmt.side_batches(feed, list(got), "raise"):
            got[name].append(batch)
    except FeedError as e:
        error = e
    actions = pa.Table.from_batches(got["trading_actions"], fmt.side_table("trading_actions").schema)
    crosses = pa.Table.from_batches(got["cross_trades"], fmt.side_table("cross_trades").schema)
    return (actions.rename_columns(["ticker" if c == "stock" else c for c in actions.column_names]),
            dict(zip(crosses["seq"].to_pylist(), crosses["cross_type"].to_pylist())), error)


def _batches(replay, halts):
    """Per batch of the replay: its depth, orders and P/Q trades rows (tables of the wanted
    tickers), and the trading actions up to the batch's last record."""
    import pyarrow as pa
    import pyarrow.compute as pc

    group: dict = {}
    done = 0            # trading actions handed out

    def flush(last_seq):
        nonlocal done
        tables = {name: pa.Table.from_batches(b) for name, b in group.items()}
        if halts is not None:
            upto = halts.num_rows if last_seq is None else int(np.searchsorted(
                halts["seq"].to_numpy(), last_seq, "right"))
            tables["halts"], done = halts.slice(done, upto - done), max(done, upto)
        group.clear()
        return tables

    last_seq = 0
    try:
        for table, batch in replay.table_batches():
            if table in group:
                yield flush(last_seq)
            if table == "trades":
                batch = batch.filter(pc.is_in(batch["kind"], value_set=pa.array(["P", "Q"])))
            if batch.num_rows:
                last_seq = max(last_seq, int(batch["seq"][-1].as_py()))
            group.setdefault(table, []).append(batch)
    except FeedError as e:      # the rows before the bad record, then the error
        yield flush(e.record - 1 if e.record else last_seq)
        raise
    yield flush(None)


def _of_ticker(table, ticker: str):
    import pyarrow.compute as pc

    if table is None or table.num_rows == 0:
        return None
    return table.filter(pc.fill_null(pc.equal(table["ticker"], ticker), False))


def _seconds_short(ns: int) -> str:
    """Seconds after midnight in their shortest form, as LOBSTER writes them
    (``34200.05990197``, ``34200``)."""
    whole, frac = divmod(ns, 1_000_000_000)
    return f"{whole}.{frac:09d}".rstrip("0") if frac else str(whole)
