"""Plain reference implementations of the trades, orders and depth tables.

The oracle the engine's ``obook.trades`` / ``obook.orders`` / ``obook.depth`` are checked
against: clarity over speed, strict mode only. One pass over the feed with a dict book per
locate (``ref -> [side, price, shares]``), in the style of ``reference_itch.reference_bbo``.

Every function returns ``(rows, error)``: the rows of the records before the first failing
record, and None or ``(seq, reason)`` with the reasons of ``reference_itch``. A failing
record gives no row in any table.

Row layouts (see each function): plain tuples, ``None`` for a null.
"""

from __future__ import annotations

from reference_itch import (DUPLICATE, MALFORMED, OVER_CANCEL, OVER_EXEC, SHARES_PAST_INT64, SIZES,
                            TRUNCATED, UNKNOWN, ZERO_ADD, _u, frames)


def book_levels(book: dict, levels: int) -> tuple[list, list]:
    """(bids, asks): ``levels`` tuples ``(price, shares, orders)`` best first, padded with None."""
    out = []
    for side, best_first in (("B", True), ("S", False)):
        agg: dict[int, list] = {}
        for s, price, shares in book.values():
            if s == side:
                level = agg.setdefault(price, [0, 0])
                level[0] += shares
                level[1] += 1
        prices = sorted(agg, reverse=best_first)[:levels]
        rows = [(p, agg[p][0], agg[p][1]) for p in prices]
        out.append(rows + [None] * (levels - len(rows)))
    return out[0], out[1]


def _replay(path, levels: int = 10, with_trades: bool = True):
    """One strict pass; returns ``(trades, orders, depth, error)``. ``with_trades``: the pass of
    a replay that makes the trades table, which stops at a Q of 2^63 shares or more (its shares
    are int64); without, they are not checked (the orders and depth of a replay without it)."""
    books: dict[int, dict] = {}
    tickers: dict[int, str] = {}
    last: dict[int, tuple] = {}
    trades, orders, depth = [], [], []
    empty = ([None] * levels, [None] * levels)

    for seq, _offset, msg in frames(path):
        if msg is None:
            return trades, orders, depth, (seq, TRUNCATED)
        typ = chr(msg[0]) if msg else ""
        if not msg or (typ in SIZES and len(msg) < SIZES[typ]):
            return trades, orders, depth, (seq, MALFORMED)
        if typ == "R":
            tickers[_u(msg, 1, 2)] = msg[11:19].decode("latin-1").rstrip()
        if typ not in "AFECXDUPQB" or typ == "":
            continue
        locate, time = _u(msg, 1, 2), _u(msg, 5, 6)
        head = (seq, time, locate, tickers.get(locate))

        if typ == "P":
            trades.append(head + ("P", _u(msg, 32, 4), _u(msg, 20, 4), chr(msg[19]),
                                  _u(msg, 11, 8), _u(msg, 36, 8)))
            continue
        if typ == "Q":
            if with_trades and _u(msg, 11, 8) >= 2**63:
                return trades, orders, depth, (seq, SHARES_PAST_INT64)
            trades.append(head + ("Q", _u(msg, 27, 4), _u(msg, 11, 8), None, None, _u(msg, 31, 8)))
            continue
        if typ == "B":
            trades.append(head + ("B", None, None, None, None, _u(msg, 11, 8)))
            continue

        book = books.setdefault(locate, {})
        ref = _u(msg, 11, 8)
        before = last.get(locate, empty)

        if typ in "AF":
            side = "B" if msg[19] == ord("B") else "S"
            shares, price = _u(msg, 20, 4), _u(msg, 32, 4)
            if shares == 0:
                return trades, orders, depth, (seq, ZERO_ADD)
            if ref in book:
                return trades, orders, depth, (seq, DUPLICATE)
            book[ref] = [side, price, shares]
            orders.append(head + ("A", side, price, shares, shares, ref, None, None))
        else:
            if ref not in book:
                return trades, orders, depth, (seq, UNKNOWN)
            side, price, remaining = book[ref]
            if typ in "ECX":
                shares = _u(msg, 19, 4)
                if shares > remaining:
                    return trades, orders, depth, (seq, OVER_CANCEL if typ == "X" else OVER_EXEC)
                remaining -= shares
                if remaining:
                    book[ref][2] = remaining
                else:
                    del book[ref]
                match = _u(msg, 23, 8) if typ in "EC" else None
                orders.append(head + (typ, side, price, shares, remaining, ref, None, match))
                if typ == "E":
                    trades.append(head + ("E", price, shares, side, ref, match))
                elif typ == "C" and chr(msg[31]) == "Y":
                    trades.append(head + ("C", _u(msg, 32, 4), shares, side, ref, match))
            elif typ == "D":
                del book[ref]
                orders.append(head + ("D", side, price, remaining, 0, ref, None, None))
            else:  # U
                new_ref, shares, new_price = _u(msg, 19, 8), _u(msg, 27, 4), _u(msg, 31, 4)
                if shares == 0:
                    return trades, orders, depth, (seq, ZERO_ADD)
                if new_ref in book:          # checked while the original is live
                    return trades, orders, depth, (seq, DUPLICATE)
                del book[ref]
                book[new_ref] = [side, new_price, shares]
                orders.append(head + ("U", side, new_price, shares, shares, ref, new_ref, None))

        after = last[locate] = book_levels(book, levels)
        if after != before:
            depth.append(head + after)
    return trades, orders, depth, None


def last_breaks(path) -> dict[int, int]:
    """match number -> record number of its last B, over the frames before the first bad one."""
    last = {}
    for seq, _offset, msg in frames(path):
        if not msg or (chr(msg[0]) in SIZES and len(msg) < SIZES[chr(msg[0])]):
            break
        if msg[0] == ord("B"):
            last[_u(msg, 11, 8)] = seq
    return last


def with_broken(trades: list, path) -> list:
    """Each trade row + ``broken``: a later B of the feed (delivered or not) names its match."""
    last = last_breaks(path)
    return [t + (t[4] != "B" and last.get(t[9], 0) > t[0],) for t in trades]


def reference_all(path, levels: int = 10, with_trades: bool = True):
    """``(trades, orders, depth, error)`` of one pass (the three functions below in one);
    ``with_trades`` False: the orders and depth of a replay without the trades table."""
    trades, orders, depth, error = _replay(path, levels, with_trades)
    return with_broken(trades, path), orders, depth, error


def reference_trades(path):
    """Rows ``(seq, time, locate, ticker, kind, price, shares, side, ref, match, broken)`` in
    feed order.

    E: the resting order's price and side; C (printable "Y" only): the C's own price, the
    resting side; P: as given (side byte as a one-letter string); Q: side and ref None;
    B: price, shares, side, ref None, match = the broken match number. broken: a later B
    of the feed names the match (False for B rows).
    """
    trades, _, _, error = _replay(path)
    return with_broken(trades, path), error


def reference_orders(path):
    """Rows ``(seq, time, locate, ticker, action, side, price, shares, remaining, ref, new_ref,
    match)``: one per A/F/E/C/X/D/U that applies (action "A" for A and F).

    shares: added (A/F), executed (E/C), cancelled (X), the remaining ones (D), the new
    shares (U). remaining: after the message (0 when removed). U: price is the new price,
    ref the original, new_ref the new one. match: E/C only.
    """
    _, orders, _, error = _replay(path)
    return orders, error


def reference_depth(path, levels: int = 10):
    """Rows ``(seq, time, locate, ticker, bids, asks)`` for each record that changes the top
    ``levels`` levels of its book; bids/asks as in :func:`book_levels`."""
    _, _, depth, error = _replay(path, levels)
    return depth, error


def replay_orders_table(orders_rows, levels: int = 10):
    """Rebuild books from orders-table rows by the documented rules; returns
    ``(bbo_rows, depth_rows)`` in the layouts of ``reference_bbo`` and :func:`reference_depth`.

    A/F: add ``ref`` with (side, price, remaining); E/C/X: set remaining, removed at 0,
    except that a C of 0 shares changes nothing (a CSV reduce-to at or above the remaining,
    which leaves even a 0-share order in place); D: remove; U: remove ``ref``, add
    ``new_ref`` with (side, price, remaining).
    """
    books: dict[int, dict] = {}
    last_depth: dict[int, tuple] = {}
    last_bbo: dict[int, tuple] = {}
    empty = ([None] * levels, [None] * levels)
    bbo, depth = [], []
    for seq, time, locate, ticker, action, side, price, shares, remaining, ref, new_ref, match in orders_rows:
        book = books.setdefault(locate, {})
        if action == "A":
            book[ref] = (side, price, remaining)
        elif action == "C" and shares == 0:
            pass
        elif action in "ECX":
            if remaining:
                book[ref] = (side, price, remaining)
            else:
                del book[ref]
        elif action == "D":
            del book[ref]
        elif action == "U":
            del book[ref]
            book[new_ref] = (side, price, remaining)
        else:
            raise ValueError(f"unknown action {action!r}")
        head = (seq, time, locate, ticker)
        after = book_levels(book, levels)
        if after != last_depth.get(locate, empty):
            depth.append(head + after)
        last_depth[locate] = after
        b, a = book_levels(book, 1)
        top = (b[0] or (None, None, 0)) + (a[0] or (None, None, 0))
        if top[:2] + top[3:5] != last_bbo.get(locate, (None, None, 0, None, None, 0))[:2] + \
                last_bbo.get(locate, (None, None, 0, None, None, 0))[3:5]:
            bbo.append(head + top)
        last_bbo[locate] = top
    return bbo, depth
