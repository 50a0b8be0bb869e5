"""A deliberately plain reference replayer for Nasdaq ITCH 5.0.

It is the oracle the engine is checked against: clarity over speed. Each locate
has its own book, a dict ``ref -> [side, price, shares]``; the best levels are
computed by scanning that book's orders after every record that touches it.

Decisions the reference makes (the engine should agree, or the tests say so):

* Only the types S R H A F E C X D U P Q B are checked
  against their sizes; every other type, known or not, is framed and skipped.
  A zero-length frame is malformed. Frames longer than their type's size are fine.
* ``A``/``F``: a 0-share add is checked before the duplicate ref.
* ``U``: checked in the order unknown original, 0 shares, duplicate new ref
  (checked while the original is still live, so new ref == original ref is a
  duplicate). Tolerant: an unknown original changes nothing; a 0-share ``U``
  removes the original and adds nothing; a duplicate new ref removes the
  original, then the new order replaces the live one.
* A truncated last message is an error in both modes; its seq is the number it would
  have had.
* A feed of mostly frames whose type is no ITCH 5.0 message is refused (both modes): at
  the first record where more than half of the records so far are such frames, once 64
  records are framed or at the feed's last record (a malformed record first is that error).
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

from obook._kernels.itch_layout import MESSAGES

# the sizes of the one ITCH layout; the fields below are read at their offsets written out
# here, so a wrong offset in the layout shows as a difference with the engine
SIZES = {t: n for t, (n, _) in MESSAGES.items()}

UNKNOWN = "unknown order ref"
DUPLICATE = "duplicate order ref"
OVER_EXEC = "over-execution"
OVER_CANCEL = "over-cancel"
ZERO_ADD = "zero-share add"
MALFORMED = "malformed frame"
TRUNCATED = "truncated"
# a Q's 8-byte shares of 2^63 or more: an error of a replay that makes the trades table (its
# shares are int64), at that record (reference_tables); the BBO never reads them
SHARES_PAST_INT64 = "past 2^63 - 1"
NOT_ITCH = "not ITCH 5.0"
ITCH50 = set("SRHYLVWKJhAFECXDUPQBINO")
JUDGED_AFTER = 64


def _load(data_or_path) -> bytes:
    if isinstance(data_or_path, (bytes, bytearray, memoryview)):
        data = bytes(data_or_path)
    else:
        data = Path(data_or_path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def frames(data_or_path):
    """Yield ``(seq, offset, msg)``; ``msg`` is None for a truncated last message.

    ``offset`` is the position of the frame's 2-byte length in the (decompressed) file.
    """
    data = _load(data_or_path)
    pos, seq = 0, 0
    while pos < len(data):
        seq += 1
        if pos + 2 > len(data):
            yield seq, pos, None
            return
        (n,) = struct.unpack_from(">H", data, pos)
        if pos + 2 + n > len(data):
            yield seq, pos, None
            return
        yield seq, pos, data[pos + 2: pos + 2 + n]
        pos += 2 + n


def _u(msg: bytes, offset: int, size: int) -> int:
    return int.from_bytes(msg[offset:offset + size], "big")


def best_levels(book: dict) -> tuple:
    """(bid_px, bid_qty, bid_orders, ask_px, ask_qty, ask_orders); None/None/0 for an empty side."""
    out = []
    for side, pick in (("B", max), ("S", min)):
        prices = [price for s, price, _ in book.values() if s == side]
        if not prices:
            out += [None, None, 0]
            continue
        best = pick(prices)
        at_best = [shares for s, price, shares in book.values() if s == side and price == best]
        out += [best, sum(at_best), len(at_best)]
    return tuple(out)


def _bbo_key(levels: tuple) -> tuple:
    bid_px, bid_qty, _, ask_px, ask_qty, _ = levels
    return bid_px, bid_qty, ask_px, ask_qty


def reference_bbo(data_or_path, on_error: str = "raise"):
    """Replay an ITCH feed; returns ``(rows, error, skipped)`` (see the module docstring).

    rows: ``(seq, time, locate, ticker, bid_px, bid_qty, bid_orders, ask_px, ask_qty,
    ask_orders)`` for each record that changes its book's BBO. error: None or
    ``(seq, reason)``. skipped: tolerant-mode counts by reason.
    """
    if on_error not in ("raise", "skip"):
        raise ValueError("on_error must be 'raise' or 'skip'")
    strict = on_error == "raise"
    books: dict[int, dict] = {}
    tickers: dict[int, str] = {}
    last: dict[int, tuple] = {}           # locate -> its book's levels after its last record
    rows, skipped = [], {}
    data = _load(data_or_path)
    unknown = 0

    for seq, offset, msg in frames(data):
        if msg is None:
            return rows, (seq, TRUNCATED), skipped
        typ = chr(msg[0]) if msg else ""
        malformed = not msg or (typ in SIZES and len(msg) < SIZES[typ])
        if malformed and strict:
            return rows, (seq, MALFORMED), skipped
        unknown += bool(msg) and typ not in ITCH50
        ends = offset + 2 + len(msg) == len(data)
        if 2 * unknown > seq and (seq >= JUDGED_AFTER or ends):
            return rows, (seq, NOT_ITCH), skipped
        if malformed:
            skipped[MALFORMED] = skipped.get(MALFORMED, 0) + 1
            continue
        if typ == "R":
            tickers[_u(msg, 1, 2)] = msg[11:19].decode("latin-1").rstrip()  # as the engine
        if typ not in "AFECXDU":
            continue

        locate, time, ref = _u(msg, 1, 2), _u(msg, 5, 6), _u(msg, 11, 8)
        book = books.setdefault(locate, {})
        before = last.get(locate, (None, None, 0, None, None, 0))
        failure = _apply(book, typ, msg, ref)
        if failure is not None:
            if strict:
                return rows, (seq, failure), skipped
            skipped[failure] = skipped.get(failure, 0) + 1
        after = last[locate] = best_levels(book)
        if _bbo_key(after) != _bbo_key(before):
            rows.append((seq, time, locate, tickers.get(locate)) + after)
    return rows, None, skipped


def _apply(book: dict, typ: str, msg: bytes, ref: int) -> str | None:
    """Apply one order message to ``book``; return the failure reason, or None.

    On a failure the book is left as the tolerant rules say (strict mode stops
    right after, so the state no longer matters).
    """
    if typ in "AF":
        side = "B" if msg[19] == ord("B") else "S"   # README: a side byte other than B is a sell
        shares, price = _u(msg, 20, 4), _u(msg, 32, 4)
        if shares == 0:
            return ZERO_ADD
        failure = DUPLICATE if ref in book else None
        book.pop(ref, None)
        book[ref] = [side, price, shares]
        return failure

    if ref not in book:
        return UNKNOWN
    order = book[ref]

    if typ in "ECX":
        shares = _u(msg, 19, 4)
        if shares > order[2]:
            del book[ref]
            return OVER_CANCEL if typ == "X" else OVER_EXEC
        order[2] -= shares
        if order[2] == 0:
            del book[ref]
        return None

    if typ == "D":
        del book[ref]
        return None

    # U: remove the original, add the new ref with the same side at the new price/shares
    new_ref, shares, price = _u(msg, 19, 8), _u(msg, 27, 4), _u(msg, 31, 4)
    failure = ZERO_ADD if shares == 0 else DUPLICATE if new_ref in book else None
    del book[ref]
    if shares:
        book.pop(new_ref, None)
        book[new_ref] = [order[0], price, shares]
    return failure


def reference_messages(data_or_path) -> list[dict]:
    """Decode every message plainly: one dict per frame, fields None where absent.

    Keys: seq, offset (of the 2-byte length), length, type, locate, tracking, time,
    ref, side, shares, price, new_ref, match, stock. A truncated last message is
    left out; a frame too short for a field leaves that field None.
    """
    out = []
    for seq, offset, msg in frames(data_or_path):
        if msg is None:
            break
        d = dict(seq=seq, offset=offset, length=len(msg), type=chr(msg[0]) if msg else None,
                 locate=None, tracking=None, time=None, ref=None, side=None, shares=None,
                 price=None, new_ref=None, match=None, stock=None)
        out.append(d)
        if len(msg) >= 11:
            d.update(locate=_u(msg, 1, 2), tracking=_u(msg, 3, 2), time=_u(msg, 5, 6))
        typ = d["type"]
        if typ not in SIZES or len(msg) < SIZES[typ]:
            continue
        field = {
            "R": dict(stock=(11, 8)),
            "H": dict(stock=(11, 8)),
            "A": dict(ref=(11, 8), side=(19, 1), shares=(20, 4), stock=(24, 8), price=(32, 4)),
            "F": dict(ref=(11, 8), side=(19, 1), shares=(20, 4), stock=(24, 8), price=(32, 4)),
            "E": dict(ref=(11, 8), shares=(19, 4), match=(23, 8)),
            "C": dict(ref=(11, 8), shares=(19, 4), match=(23, 8), price=(32, 4)),
            "X": dict(ref=(11, 8), shares=(19, 4)),
            "D": dict(ref=(11, 8)),
            "U": dict(ref=(11, 8), new_ref=(19, 8), shares=(27, 4), price=(31, 4)),
            "P": dict(ref=(11, 8), side=(19, 1), shares=(20, 4), stock=(24, 8), price=(32, 4),
                      match=(36, 8)),
            "Q": dict(shares=(11, 8), stock=(19, 8), price=(27, 4), match=(31, 8)),
            "B": dict(match=(11, 8)),
        }.get(typ, {})
        for name, (at, size) in field.items():
            if name in ("side", "stock"):
                d[name] = msg[at:at + size].decode("ascii").rstrip()
            else:
                d[name] = _u(msg, at, size)
    return out
