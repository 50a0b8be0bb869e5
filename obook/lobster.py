"""LOBSTER output: the two-file layout academic code reads, per ticker and day.

    obook.lobster.lobster("12302019.NASDAQ_ITCH50.gz", "out/", tickers=["AAPL"], levels=10)

writes ``out/AAPL_2019-12-30_34200000_57600000_message_10.csv`` and
``out/AAPL_2019-12-30_34200000_57600000_orderbook_10.csv`` (no header lines).

Built only from the engine's tables (one replay of orders, trades and depth; the book is
never re-implemented here): the orders and trades rows give the message rows, the depth
rows the book state after each of them (depth has rows only when the top levels change, so the last state
of each ticker is carried forward), ``obook.trading_actions`` the trading actions (``H``).

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
| ``Q`` | 6 cross: order id -1 opening, -2 closing, -3 halt/IPO, -4 other cross types (when the trades table carries ``cross_type``; else -3), shares, price, direction -1 |
| ``H`` | 7 trading action: order id 0, size 0, price -1 halted/paused, 0 quotation only, 1 trading; direction -1 |
| ``B`` | no row (LOBSTER has no broken-trade event) |

Orderbook file: per message row, ``ask px 1, ask size 1, bid px 1, bid size 1, ask px 2 ...``
for ``levels`` levels, the book after that message; a missing level is LOBSTER's dummy
(ask price 9999999999, bid price -9999999999, size 0).

Only messages with ``start_ms <= time < end_ms`` (ms after midnight, default 09:30 to 16:00)
are written; the book state still counts every earlier message. Files are written under
temporary names and renamed when the whole replay succeeded; a failing record raises
``FeedError`` and leaves no file behind.
"""

from __future__ import annotations

import heapq
import os
from pathlib import Path

from .errors import ObookError, OutputError
from .tempfiles import remove_quietly, temp_path

__all__ = ["lobster", "lobster_names", "DUMMY_ASK", "DUMMY_BID"]

DUMMY_ASK = 9_999_999_999
DUMMY_BID = -9_999_999_999
START_MS = 34_200_000
END_MS = 57_600_000

MAX_LEVELS = 50
STYLES = ("lobster", "all")

_CROSS_IDS = {"O": -1, "C": -2, "H": -3, "I": -4}
_HALT_PRICE = {"H": -1, "P": -1, "Q": 0, "T": 1}


def lobster_names(ticker: str, date, levels: int, start_ms: int = START_MS,
                  end_ms: int = END_MS) -> tuple[str, str]:
    """(message file name, orderbook file name) of a ticker and day."""
    stem = f"{ticker}_{date.isoformat()}_{start_ms}_{end_ms}"
    return f"{stem}_message_{levels}.csv", f"{stem}_orderbook_{levels}.csv"


def _seconds(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def _direction(side) -> int:
    return 1 if side == "B" else -1


def _filtered(reader, tickers, kinds=None, column="ticker"):
    """Rows (as dicts of Python values) of ``reader`` whose ticker is wanted, in order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    value_set = pa.array(sorted(tickers), type=pa.string())
    for batch in reader:
        mask = pc.is_in(batch[column], value_set=value_set)
        if kinds is not None:
            mask = pc.and_(mask, pc.is_in(batch[kinds[0]], value_set=pa.array(kinds[1], type=pa.string())))
        batch = batch.filter(pc.fill_null(mask, False))
        if "timestamp" in batch.schema.names:   # LOBSTER writes the time column; ns would not fit datetime
            batch = batch.drop_columns(["timestamp"])
        if batch.num_rows:
            yield from batch.to_pylist()


def _stream(rows, priority: int):
    for row in rows:
        yield row["seq"], priority, row


def _replay_rows(replay, wanted):
    """(seq, priority, row) of the replay's depth (0), orders (1) and P/Q trades (1) rows of
    the wanted tickers, in feed order: the tables of one engine batch are merged by seq."""
    group: dict = {}

    def flush():
        streams = [_stream(_filtered([group[t]], wanted, **kw), prio)
                   for t, prio, kw in (("depth", 0, {}), ("orders", 1, {}),
                                       ("trades", 1, {"kinds": ("kind", ["P", "Q"])}))
                   if t in group]
        yield from heapq.merge(*streams, key=lambda item: (item[0], item[1]))
        group.clear()

    for table, batch in replay.table_batches():
        if table in group:
            yield from flush()
        group[table] = batch
    yield from flush()


def lobster(feed, outdir, tickers, levels: int = 10, workers: int | None = None, date=None,
            start_ms: int = START_MS, end_ms: int = END_MS, style: str = "lobster", progress=None) -> dict:
    """Write the LOBSTER message and orderbook files of each ticker of ``tickers``.

    ``tickers``: names (a list, or a comma-separated string). ``date``: the session date
    (``YYYY-MM-DD``; default from a ``MMDDYYYY.NASDAQ_ITCH50[.gz]`` file name; required
    otherwise, it is part of the file names). Returns ``{ticker: {"message": path,
    "orderbook": path, "rows": n}}``. ``style``: "lobster" (LOBSTER's own files: events
    outside the levels unlisted, a replace as two steps, shortest times) or "all" (every
    event, a replace's deletion row with the book after the deletion, 9-decimal times).
    """
    from .session import session_date

    if isinstance(tickers, str):
        tickers = [t.strip() for t in tickers.split(",")]
    tickers = list(dict.fromkeys(t for t in tickers if t))
    if not tickers:
        raise ObookError("no tickers asked for")
    if not 1 <= levels <= MAX_LEVELS:
        raise ObookError(f"levels must be between 1 and {MAX_LEVELS}, not {levels}")
    if style not in STYLES:
        raise ObookError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    from .feeds import resolve_format

    fmt = resolve_format(None, feed) if Path(feed).is_file() else None   # (a missing file: the replay says so)
    if fmt is not None and "trading_actions" not in fmt.side_tables:   # LOBSTER's halts are trading actions
        raise ObookError(f"{feed}: LOBSTER output needs an ITCH feed (with trading actions), "
                         f"not a {fmt.name} feed")
    day = session_date(feed, date)
    if day is None:
        raise ObookError(f"the session date of {feed} is unknown: name the file "
                         "MMDDYYYY.NASDAQ_ITCH50[.gz] or give a date (YYYY-MM-DD)")
    from .output import make_output_dir

    outdir = make_output_dir(outdir)

    readers = []
    try:
        return _write(feed, outdir, tickers, levels, workers, day, start_ms, end_ms, readers, style, progress)
    finally:
        for reader in readers:
            try:
                reader.close()
            except Exception:  # noqa: BLE001 - closing after a failure; the first error wins
                pass


def _write(feed, outdir, tickers, levels, workers, day, start_ms, end_ms, readers, style, progress) -> dict:
    from .engine.tables import schema_of
    from .feeds import read_side_table

    start_ns, end_ns = start_ms * 1_000_000, end_ms * 1_000_000
    wanted = set(tickers)
    from .engine.replay import Replay

    # LOBSTER has no broken-trade event: no pre-pass for the trades' breaks
    # only the wanted tickers' books are replayed (ticker pushdown); one the feed does not
    # name gets a warning and empty files
    # one level more than written: a replace's deletion step can bring level N+1 into view
    deep = min(levels + 1, MAX_LEVELS)
    replay = Replay(feed, workers=workers, tables=("depth", "orders", "trades"), levels=deep,
                    queue_positions=False,     # LOBSTER's files have no queue places
                    breaks=False, tickers=tickers, unknown_tickers="warn", progress=progress)
    cross_types = "cross_type" in schema_of("trades", levels).names
    # the format's trading actions (ITCH H), when it has them
    actions = (read_side_table(feed, "trading_actions", format=replay.format).to_batches()
               if "trading_actions" in replay.format.side_tables else [])

    def halts():
        for batch in actions:
            for row in batch.to_pylist():
                if row["stock"] in wanted:
                    row["ticker"] = row["stock"]
                    yield row

    # one replay gives the three tables; depth first at a seq: a message row's book is the
    # state after its own record
    merged = heapq.merge(_replay_rows(replay, wanted), _stream(halts(), 1),
                         key=lambda item: (item[0], item[1]))

    empty = ((), ())
    files: dict[str, dict] = {}
    for t in tickers:
        message_name, book_name = lobster_names(t, day, levels, start_ms, end_ms)
        files[t] = {
            "message": outdir / message_name, "orderbook": outdir / book_name, "rows": 0,
            "tmp": (temp_path(outdir / message_name), temp_path(outdir / book_name)),
            "book": empty, "before": empty, "book_seq": -1, "orders": {},
        }
    handles = []
    try:
        for f in files.values():
            f["out"] = tuple(open(p, "w", newline="", encoding="ascii") for p in f["tmp"])
            handles.extend(f["out"])

        for seq, priority, row in merged:
            f = files[row["ticker"]]
            if priority == 0:       # the book after record seq (comes before its message rows)
                f["before"], f["book"], f["book_seq"] = f["book"], _sides(row, deep), seq
                continue
            if not start_ns <= row["time"] < end_ns:
                _message_rows(row, f["orders"], cross_types)     # keeps the live orders current
                continue
            before = f["before"] if f["book_seq"] == seq else f["book"]
            msgs = _message_rows(row, f["orders"], cross_types)
            if style == "all":
                steps = [(m, b) for m, _a, b in _steps(msgs, before, f["book"])]
                when = _seconds(row["time"])
            else:
                steps = _lobster_steps(msgs, before, f["book"], levels)
                when = _seconds_short(row["time"])
            for msg, book in steps:
                f["out"][0].write(f"{when},{msg}\n")
                f["out"][1].write(_line(book, levels) + "\n")
                f["rows"] += 1

        for h in handles:
            h.close()
        for f in files.values():
            os.replace(f["tmp"][0], f["message"])
            os.replace(f["tmp"][1], f["orderbook"])
    except BaseException as e:
        for h in handles:
            try:
                h.close()
            except OSError:     # its buffer cannot be written either (a full disk)
                pass
        for f in files.values():
            for p in f["tmp"]:
                remove_quietly(p)
        if isinstance(e, OSError):
            raise OutputError(f"{outdir}: write failed: {e.strerror or e}") from e
        raise
    return {t: {"message": f["message"], "orderbook": f["orderbook"], "rows": f["rows"]}
            for t, f in files.items()}


def _sides(row: dict, levels: int) -> tuple[tuple, tuple]:
    """(asks, bids) of a depth row: ((price, shares), ...) best first, empty levels left out."""
    def side(name):
        return tuple((row[f"{name}_px_{i}"], row[f"{name}_qty_{i}"]) for i in range(1, levels + 1)
                     if row[f"{name}_px_{i}"] is not None)
    return side("ask"), side("bid")


def _line(book: tuple[tuple, tuple], levels: int) -> str:
    """The orderbook row: ask px, ask size, bid px, bid size per level; LOBSTER's dummies
    for a missing level."""
    asks, bids = book
    parts = []
    for i in range(levels):
        parts.append(f"{asks[i][0]},{asks[i][1]}" if i < len(asks) else f"{DUMMY_ASK},0")
        parts.append(f"{bids[i][0]},{bids[i][1]}" if i < len(bids) else f"{DUMMY_BID},0")
    return ",".join(parts)


def _top(book: tuple[tuple, tuple], levels: int) -> tuple[tuple, tuple]:
    return book[0][:levels], book[1][:levels]


def _without(book: tuple[tuple, tuple], price: int, shares: int, direction: int) -> tuple[tuple, tuple]:
    """The book with ``shares`` at ``price`` taken off one side (a replace's deletion step);
    a level left empty goes, and the next one moves up."""
    asks, bids = book
    levels = bids if direction == 1 else asks
    out = []
    for px, qty in levels:
        if px == price:
            qty -= shares
            if qty <= 0:
                continue
        out.append((px, qty))
    return (asks, tuple(out)) if direction == 1 else (tuple(out), bids)


def _steps(msgs: list[str], before, after) -> list[tuple[str, tuple, tuple]]:
    """(message, book before it, book after it) of one record's rows. A replace is a
    deletion with the book after the deletion, then a submission with the book after both."""
    if len(msgs) == 2:          # U: deletion of the original, submission of the new order
        _, _, size, price, direction = (int(v) for v in msgs[0].split(","))
        middle = _without(before, price, size, direction)
        return [(msgs[0], before, middle), (msgs[1], middle, after)]
    return [(m, before, after) for m in msgs]


def _lobster_steps(msgs: list[str], before, after, levels: int) -> list[tuple[str, tuple]]:
    """LOBSTER's rows of one record: (message, book after it) (see ``_steps``).
    Submissions, cancellations and deletions that leave the top ``levels`` unchanged lie
    outside them and are not listed."""
    return [(m, b) for m, a, b in _steps(msgs, before, after)
            if m[0] not in "123" or _top(a, levels) != _top(b, levels)]


def _seconds_short(ns: int) -> str:
    """Seconds after midnight in their shortest form, as LOBSTER writes them
    (``34200.05990197``, ``34200``)."""
    whole, frac = divmod(ns, 1_000_000_000)
    return f"{whole}.{frac:09d}".rstrip("0") if frac else str(whole)


def _message_rows(row: dict, live: dict, cross_types: bool) -> list[str]:
    """LOBSTER ``type,id,size,price,direction`` of one table row; ``live`` tracks
    ``ref -> (price, remaining, side)`` of the ticker's orders from the orders rows (the
    U deletion row needs the original's price and remaining shares)."""
    action = row.get("action")
    if action is not None:          # an orders row
        ref, side, price, shares, remaining = (row["ref"], row["side"], row["price"], row["shares"],
                                               row["remaining"])
        d = _direction(side)
        if action == "A":
            live[ref] = (price, remaining)
            return [f"1,{ref},{shares},{price},{d}"]
        if action == "U":
            old_price, old_remaining = live.pop(ref, (None, None))
            live[row["new_ref"]] = (price, remaining)
            old = (f"3,{ref},{old_remaining},{old_price},{d}" if old_price is not None
                   else f"3,{ref},0,0,{d}")   # the original was added before a feed we never saw
            return [old, f"1,{row['new_ref']},{shares},{price},{d}"]
        if remaining:
            live[ref] = (price, remaining)
        else:
            live.pop(ref, None)
        if action in ("E", "C"):
            return [f"4,{ref},{shares},{price},{d}"]
        if action == "X":
            return [f"{2 if remaining else 3},{ref},{shares},{price},{d}"]
        if action == "D":
            return [f"3,{ref},{shares},{price},{d}"]
        raise ObookError(f"unknown orders action {action!r}")
    kind = row.get("kind")
    if kind == "P":
        return [f"5,{row['ref']},{row['shares']},{row['price']},{_direction(row['side'])}"]
    if kind == "Q":
        cross = _CROSS_IDS.get(row.get("cross_type"), -4) if cross_types else -3
        return [f"6,{cross},{row['shares']},{row['price']},-1"]
    # a trading action (obook.trading_actions)
    return [f"7,0,0,{_HALT_PRICE.get(row['state'], -1)},-1"]
