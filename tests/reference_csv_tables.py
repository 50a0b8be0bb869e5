"""Plain reference of the trades, orders and depth tables of a CSV order feed.

The oracle for ``obook.trades`` / ``obook.orders`` / ``obook.depth`` on CSV feeds:
one strict pass with a dict book per ticker (``order id -> [side, price, shares]``),
the feed's rules written out, the top levels recomputed from scratch after every line.

``reference_csv_tables(path, levels)`` returns ``(trades, orders, depth, error)``:

* trades ``(seq, time, ticker, kind, price, shares, side, order_id)``: ``E`` at the
  resting order's price with the shares it executed (clamped to the remaining), and the
  prints ``T`` / ``X`` as given (no side);
* orders ``(seq, time, ticker, action, side, price, shares, remaining, order_id)``:
  ``A`` (B and S adds), ``C`` (shares: what it cancelled, 0 when it changes nothing),
  ``E`` (what it executed), ``D`` (D and F: the shares it removed);
* depth ``(seq, time, ticker, bids, asks)`` with ``levels`` ``(price, shares, orders)``
  a side, best first, None-padded, whenever they change;
* error: None or ``(line, reason)``; the failing line gives no row. Line 1 and a cut last
  line are judged as ``reference_csv.reference_csv_bbo`` judges them.
"""

from __future__ import annotations

from reference_csv import (_Fail, _read, _text, cut_last_line, data_lines, header_fields, header_misread,
                           parse_line)
from reference_tables import book_levels


def reference_csv_tables(path, levels: int = 10):
    books: dict[bytes, dict[bytes, list]] = {}
    trades, orders, depth = [], [], []
    data = _read(path)
    misread = header_misread(data)
    if misread is not None:
        return trades, orders, depth, misread
    cut = cut_last_line(data)
    for no, line in data_lines(data):
        if cut is not None and no == cut[0]:
            return trades, orders, depth, cut
        try:
            time, ticker, oid, typ, shares, price = parse_line(line, header_fields(data))
        except _Fail as e:
            return trades, orders, depth, (no, e.reason)
        name, text = _text(ticker), _text(oid)
        if typ in (b"T", b"X"):
            trades.append((no, time, name, typ.decode(), price, shares, None, text))
            continue
        book = books.setdefault(ticker, {})
        before = book_levels(book, levels)
        order = book.get(oid)
        if typ in (b"B", b"S"):
            if order is not None:
                return trades, orders, depth, (no, f"duplicate order '{text}'")
            side = typ.decode()
            book[oid] = [side, price, shares]
            orders.append((no, time, name, "A", side, price, shares, shares, text))
        elif order is None:
            return trades, orders, depth, (no, f"unknown order '{text}'")
        else:
            side, rest_px, rem = order
            if typ == b"C":
                action, taken = "C", rem - shares if shares < rem else 0
                gone = shares < rem and shares == 0
            elif typ == b"E":
                action, taken = "E", min(shares, rem)
                gone = taken == rem
                if taken:                             # an E of no share prints no trade
                    trades.append((no, time, name, "E", rest_px, taken, side, text))
            else:                                     # D, F
                action, taken, gone = "D", rem, True
            left = 0 if gone else rem - taken
            order[2] = left
            if gone:
                del book[oid]
            orders.append((no, time, name, action, side, rest_px, taken, left, text))
        after = book_levels(book, levels)
        if after != before:
            depth.append((no, time, name, after[0], after[1]))
    return trades, orders, depth, None
