"""Plain reference of the orders table's time-priority columns.

``fifo_queue(rows)`` rebuilds the books from orders-table rows (the references' own:
``reference_tables.reference_orders`` for ITCH, ``reference_csv_tables`` for CSV) with
one Python list per (book, side, price) holding the order keys in arrival order, and
returns, per row, ``(queue_shares_ahead, queue_orders_ahead)`` after the row: the shares
and the number of orders in front of the row's order (U: the new one) at its price, or
``(None, None)`` when that order does not rest after the row.

Rules: A appends at the back; E, C and X keep the order's place (it leaves at 0
remaining, except that a CSV C of 0 shares changes nothing); D removes; U removes the
original and appends the new order at the back of its (new) price, even at the same
price and shares (priority is lost).
"""

from __future__ import annotations


def fifo_queue(rows):
    """rows: ``(book, action, side, price, shares, remaining, key, new_key)`` tuples."""
    orders: dict = {}                 # (book, key) -> [side, price, shares]
    queues: dict = {}                 # (book, side, price) -> [key, ...] in arrival order
    out = []

    def remove(book, key):
        side, price, _ = orders.pop((book, key))
        queues[book, side, price].remove(key)

    def append(book, key, side, price, shares):
        orders[book, key] = [side, price, shares]
        queues.setdefault((book, side, price), []).append(key)

    for book, action, side, price, shares, remaining, key, new_key in rows:
        rests = key
        if action == "A":
            append(book, key, side, price, remaining)
        elif action == "C" and shares == 0:
            pass
        elif action in "ECX":
            if remaining:
                orders[book, key][2] = remaining
            else:
                remove(book, key)
                rests = None
        elif action == "D":
            remove(book, key)
            rests = None
        elif action == "U":
            remove(book, key)
            append(book, new_key, side, price, remaining)
            rests = new_key
        else:
            raise ValueError(f"unknown action {action!r}")
        if rests is None:
            out.append((None, None))
            continue
        side, price, _ = orders[book, rests]
        queue = queues[book, side, price]
        at = queue.index(rests)
        out.append((sum(orders[book, k][2] for k in queue[:at]), at))
    return out


def itch_queue(orders_rows):
    """fifo_queue of ``reference_tables.reference_orders`` rows."""
    return fifo_queue([(loc, a, s, px, sh, rem, ref, new_ref)
                       for _, _, loc, _, a, s, px, sh, rem, ref, new_ref, _ in orders_rows])


def csv_queue(orders_rows):
    """fifo_queue of ``reference_csv_tables`` orders rows (book = ticker, key = order id)."""
    return fifo_queue([(tk, a, s, px, sh, rem, oid, None)
                       for _, _, tk, a, s, px, sh, rem, oid in orders_rows])
