"""A deliberately simple pure-Python reference of the CSV order feed.

Dict books, a full scan for the BBO after every line: slow and obviously right.
This is the oracle the numba decoder + book kernel are compared against.

``reference_csv_bbo(path_or_bytes, on_error="raise")`` returns
``(text_lines, error, skipped)``: the BBO text rows
``<TIME>,<TICKER>,<BID_PX>,<BID_QTY>,<ASK_PX>,<ASK_QTY>`` in feed order, the
first failing ``(line, reason)`` (strict) or None, and the tolerant-mode counts
(field errors under the reason without its text, book errors under
``layout.BOOK_ERROR_NAMES``: a duplicate add replaces the live order, an
unknown order changes nothing). Line 1 that is an order line, or a header naming the six
columns in another order, is an error in either mode. A last line without a line end that is not blank and has
fewer fields than the header (six at least) is cut: its error in either mode.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from obook._kernels.layout import BOOK_ERROR_NAMES, ERR_DUPLICATE_REF, ERR_UNKNOWN_REF

_UINT = re.compile(rb"[0-9]+")
_TYPES = {b"B", b"S", b"C", b"D", b"E", b"F", b"T", b"X"}


class _Fail(Exception):
    def __init__(self, reason: str, kind: str):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _shown(b: bytes) -> str:
    """A field in an error's reason: its first 64 bytes and its size when longer."""
    return _text(b) if len(b) <= 64 else f"{_text(b[:64])}... ({len(b)} bytes)"


def _uint(field: bytes, name: str, bits: int) -> int:
    if not _UINT.fullmatch(field):
        hint = (" (a header line not at the feed's start: of the files read as one feed, only the first has one)"
                if name == "time" and _shown(field).strip().lower() == "time" else "")
        raise _Fail(f"{name} is not an unsigned integer: '{_shown(field)}'{hint}", f"{name} is not an unsigned integer")
    v = int(field)
    if v >= 1 << bits:
        raise _Fail(f"{name} out of range: '{_shown(field)}'", f"{name} out of range")
    return v


def _bbo(book: dict) -> tuple:
    """(bid px, bid qty, ask px, ask qty), None for an empty side."""
    bids = [(p, q) for side, p, q in book.values() if side == b"B"]
    asks = [(p, q) for side, p, q in book.values() if side == b"S"]
    bp = max(p for p, _ in bids) if bids else None
    ap = min(p for p, _ in asks) if asks else None
    bq = sum(q for p, q in bids if p == bp) if bids else None
    aq = sum(q for p, q in asks if p == ap) if asks else None
    return bp, bq, ap, aq


def _row(time: int, ticker: bytes, bbo: tuple) -> str:
    return ",".join([str(time), _text(ticker)] + ["" if v is None else str(v) for v in bbo])


def _read(path_or_bytes) -> bytes:
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
    else:
        data = Path(path_or_bytes).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def data_lines(data: bytes):
    """(line number, line) of every data line: no header, no blank line, no trailing CR."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()               # the newline ends the last line; it starts none
    for no, raw in enumerate(lines, 1):
        if no == 1:
            continue
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if line.strip():
            yield no, line


def header_fields(data: bytes) -> int:
    """The fields a line may have: the header's, six at least."""
    return max(6, data.split(b"\n", 1)[0].count(b",") + 1)


def parse_line(line: bytes, most: int = 6):
    """(time, ticker, order id, type, shares, price) of a line, or _Fail, checked in the
    documented order; ``most``: the fields a line may have (header_fields)."""
    f = line.split(b",")
    if len(f) < 6:
        raise _Fail(f"expected at least 6 fields, got {len(f)}", "expected at least 6 fields")
    if len(f) > most:
        raise _Fail(f"expected at most {most} fields (as many as the header), got {len(f)}: two lines joined by "
                    "a lost line end?", "more fields than the header")
    time = _uint(f[0], "time", 64)
    ticker, oid, typ = f[1], f[2], f[3]
    if typ not in _TYPES:
        raise _Fail(f"unknown message type '{_shown(typ)}'", "unknown message type")
    shares = _uint(f[4], "shares", 32)
    price = _uint(f[5], "price", 32)
    return time, ticker, oid, typ, shares, price


def cut_last_line(data: bytes):
    """(line number, reason) of the last line when it has no line end and is cut, else None."""
    lines = data.split(b"\n")
    if len(lines) < 2 or lines[-1] == b"" or not lines[-1].strip():
        return None
    header = lines[0].count(b",") + 1
    fields = lines[-1].count(b",") + 1
    if fields >= max(6, header):
        return None
    whole = f"its header's {header}" if header >= 6 else "the 6 a line needs"
    return len(lines), f"the last line is cut: it has {fields} of {whole} fields and no line end"


def header_misread(data: bytes):
    """(1, reason) when line 1 is an order line, a header naming the six columns in another
    order, or any other line but the header (Time,Ticker,Order,T,Shares,Price in any case,
    then any columns more: not a CSV order feed), else None. A line 1 longer than 512 bytes:
    only its first six names, when whole in them."""
    line, nl, _ = data[:512].partition(b"\n")
    longer = not nl and len(data) > 512
    line = line.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r")
    fields = [f.strip().lower() for f in line.split(b",")]
    if longer and len(fields) <= 6:
        return None
    if not longer and len(fields) >= 6 and fields[0].isdigit():
        return 1, "an order line, not the header (Time,Ticker,Order,T,Shares,Price) a CSV order feed starts with"
    names = [b"time", b"ticker", b"order", b"t", b"shares", b"price"]
    if not longer and set(names) <= set(fields) and fields[:6] != names:
        shown = line.decode("utf-8", "replace")[:120]
        return 1, (f"the header {shown!r} names the columns in another order: a CSV order feed's columns are "
                   "read by place, Time,Ticker,Order,T,Shares,Price")
    if not line.strip() or fields[:6] == names:
        return None
    shown = line[:60].decode("utf-8", "replace")
    expected = "Time,Ticker,Order,T,Shares,Price (any case), then any columns more"
    if [f.strip(b'"') for f in fields[:2]] == [b"seq", b"time"]:
        return 1, f"not a CSV order feed: line 1 {shown!r} names a table's columns, not the header {expected}: " \
                  "is this a table rather than a feed?"
    if len(fields) < 6:
        why = f"has {len(fields)} field{'' if len(fields) == 1 else 's'}, not the header {expected}"
    else:
        why = f"is not the header {expected}"
    return 1, (f"not a CSV order feed: line 1 {shown!r} {why}; if the file is another format, give it "
               "(format=, --format on the command line)")


def reference_csv_bbo(path_or_bytes, on_error: str = "raise"):
    books: dict[bytes, dict[bytes, list]] = {}
    rows: list[str] = []
    skipped: dict[str, int] = {}
    data = _read(path_or_bytes)
    misread = header_misread(data)
    if misread is not None:
        return rows, misread, skipped
    cut = cut_last_line(data)
    most = header_fields(data)
    for no, line in data_lines(data):
        if cut is not None and no == cut[0]:
            return rows, cut, skipped
        try:
            time, ticker, oid, typ, shares, price = parse_line(line, most)
            if typ in (b"T", b"X"):
                continue
            book = books.setdefault(ticker, {})
            before = _bbo(book)
            order = book.get(oid)
            if typ in (b"B", b"S"):
                if order is not None:
                    if on_error == "raise":
                        raise _Fail(f"duplicate order '{_shown(oid)}'", "")
                    skipped[BOOK_ERROR_NAMES[ERR_DUPLICATE_REF]] = skipped.get(BOOK_ERROR_NAMES[ERR_DUPLICATE_REF], 0) + 1
                    del book[oid]
                book[oid] = [typ, price, shares]
            elif order is None:
                if on_error == "raise":
                    raise _Fail(f"unknown order '{_shown(oid)}'", "")
                skipped[BOOK_ERROR_NAMES[ERR_UNKNOWN_REF]] = skipped.get(BOOK_ERROR_NAMES[ERR_UNKNOWN_REF], 0) + 1
            elif typ == b"C":
                if shares < order[2]:
                    order[2] = shares
                    if shares == 0:
                        del book[oid]
            elif typ == b"E":
                order[2] -= min(shares, order[2])
                if order[2] == 0:
                    del book[oid]
            else:                      # D, F
                del book[oid]
            after = _bbo(book)
            if after != before:
                rows.append(_row(time, ticker, after))
        except _Fail as e:
            if on_error == "raise":
                return rows, (no, e.reason), skipped
            skipped[e.kind] = skipped.get(e.kind, 0) + 1
    return rows, None, skipped
