"""The vendor CSV files of a Shenzhen day merged into one text log stream (see the package)."""

from __future__ import annotations

import csv
import heapq
import io
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ....errors import FeedError, ObookError, TruncatedFeedError
from ...sources import open_source


#: the largest magnitude of a price or quantity read (a decimal exponent beyond it is
#: refused before it is scaled: ``1e100000000`` would be an integer of 100 million digits)
MAX_DIGITS = 18


def _scaled(text: str, digits: int, path: str, line: int, field: str) -> int:
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise FeedError(path, line, f"{field} is not a decimal number: '{_shown(text)}'", unit="line") from None
    if not d.is_finite():
        raise FeedError(path, line, f"{field} is not a finite number: '{_shown(text)}'", unit="line")
    if d.adjusted() + digits >= MAX_DIGITS:
        raise FeedError(path, line, f"{field} out of range: '{_shown(text)}'", unit="line")
    v = d.scaleb(digits)
    if v != v.to_integral_value():
        raise FeedError(path, line, f"{field} has more than {digits} decimals: '{_shown(text)}'", unit="line")
    return int(v)


def _shown(text: str) -> str:
    """A field as an error shows it: its start and size when it is long."""
    return text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"


def _code(text: str) -> int:
    return ord(text.strip()[:1] or "\0")


def _line(sec: str, ticks: bool, row: list, path: str, n: int) -> tuple:
    """(merge key, text log line) of one data row."""
    if ticks:
        appl, bid, offer, px, qty, ex, t, ch = row[:8]
        line = (f"//SecurityIDSource=102 MsgType=191 SecurityID={sec} ChannelNo={int(ch)} "
                f"ApplSeqNum={int(appl)} BidApplSeqNum={int(bid)} OfferApplSeqNum={int(offer)} "
                f"LastPx={_scaled(px, 4, path, n, 'Price')} "
                f"LastQty={_scaled(qty, 2, path, n, 'Qty')} ExecType={_code(ex)} TransactTime={int(t)}")
    else:
        appl, side, typ, px, qty, t, ch = row[:7]
        line = (f"//SecurityIDSource=102 MsgType=192 SecurityID={sec} ChannelNo={int(ch)} "
                f"ApplSeqNum={int(appl)} Price={_scaled(px, 4, path, n, 'Price')} "
                f"OrderQty={_scaled(qty, 2, path, n, 'OrderQty')} Side={_code(side)} "
                f"OrdType={_code(typ)} TransactTime={int(t)}")
    return (int(t), int(ch), int(appl)), line


def _rows(path: str, opened: list | None = None):
    """(key, text log line) of one file, in file order; a row that cannot be read raises
    FeedError naming the file and its line. The file's last line without a line end is cut
    when it holds fewer fields than the header (or than a row needs): a TruncatedFeedError.
    ``opened``: gets the file's reader (its ``pos()``: the file's bytes read so far)."""
    m = re.match(r"(\d{1,6})", Path(path).name)
    if not m:
        raise ObookError(f"{path}: the file name must start with the security id (000001_orders.csv)")
    sec = f"{int(m.group(1)):06d}"
    with open_source(path) as f:
        if opened is not None:
            opened.append(f)
        last = _LastLine()
        reader = csv.reader(_text_lines(io.BufferedReader(_Raw(f)), path, last))
        ticks = None
        header = 0
        while True:
            try:
                row = next(reader, None)
            except csv.Error as e:
                raise FeedError(path, reader.line_num, f"malformed row: {e}", unit="line") from None
            if row is None:
                return
            if ticks is None:
                ticks = "BidApplSeqNum" in row
                header = len(row)
                continue
            if not row:
                continue
            if last.open and any(c.strip() for c in row):
                _check_last(row, header, 8 if ticks else 7, path, reader.line_num, last.start)
            try:
                yield _line(sec, ticks, row, path, reader.line_num)
            except ValueError as e:
                raise FeedError(path, reader.line_num, f"malformed row: {_shown(str(e))}", unit="line") from None


def _check_last(row: list, header: int, need: int, path: str, line: int, start: int) -> None:
    """Raise when the file's last row, which has no line end, has fewer fields than its
    header (``header`` fields) or than ``need``, the fields a row is read by."""
    if len(row) >= max(header, need):
        return
    whole = f"its header's {header}" if header >= need else f"the {need} a row needs"
    raise TruncatedFeedError(path, line, start, f"the last line is cut: it has {len(row)} of {whole} fields "
                             "and no line end", unit="line")


class _LastLine:
    """Where the lines _text_lines gave end: ``open`` when the last one has no line end (the
    file's last line), ``start`` its byte offset in the file."""

    def __init__(self):
        self.open = False
        self.start = 0


def _text_lines(raw, path: str, last: _LastLine | None = None):
    """The lines of a file as text (each with its newline), each checked to be UTF-8 and at
    most MAX_LINE bytes long (a longer one is never held whole); ``last`` follows them."""
    from ...._kernels.l2_text import MAX_LINE

    n = 0
    at = 0
    while True:
        line = raw.readline(MAX_LINE + 1)
        if not line:
            return
        n += 1
        if last is not None:
            last.open = not line.endswith(b"\n")
            last.start = at
        at += len(line)
        if len(line) > MAX_LINE:
            raise FeedError(path, n, f"line longer than {MAX_LINE} bytes", unit="line")
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FeedError(path, n, f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at column "
                            f"{e.start + 1})", unit="line") from None


class _Raw(io.RawIOBase):
    def __init__(self, reader):
        self.reader = reader

    def readable(self):
        return True

    def readinto(self, b):
        return self.reader.readinto(memoryview(b))


class MergedReader:
    """A Reader of the merged text log (readinto, pos, a context manager). A row that cannot
    be read ends the merged log there: its error is ``deferred_error``, raised after the
    lines before it are replayed."""

    def __init__(self, paths):
        self._opened: list = []
        self._lines = (line for _, line in heapq.merge(*(_rows(p, self._opened) for p in paths),
                                                       key=lambda r: r[0]))
        self._buf = b""
        self.deferred_error: ObookError | None = None

    def readinto(self, view) -> int:
        while len(self._buf) < len(view) and self.deferred_error is None:
            lines = []
            try:
                for _, line in zip(range(4096), self._lines):
                    lines.append(line)
            except ObookError as e:
                self.deferred_error = e
            if not lines:
                break
            self._buf += ("\n".join(lines) + "\n").encode()
        n = min(len(view), len(self._buf))
        view[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def pos(self) -> int:
        """The bytes of the files read so far (their total is the files' size: a progress
        bar's), not of the merged log."""
        return sum(f.pos() for f in self._opened)

    def close(self) -> None:
        self._lines.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def paired(source):
    """``source`` (a path or a list of them) once every security in it has both its orders
    file and its ticks file: one without the other replays nothing (a ticks file names the
    orders the orders file adds; an orders file alone never trades), so it is an error
    naming the file that is missing."""
    if hasattr(source, "read"):     # stdin, a pipe: one stream cannot be a pair of files
        raise ObookError(f"{getattr(source, 'name', 'a stream')}: a Shenzhen vendor CSV feed is an orders and a "
                         "ticks file for each security, merged by time: give the files, not a stream")
    paths = [source] if isinstance(source, (str, Path)) else list(source)
    kinds: dict[str, dict[str, str]] = {}
    for p in paths:
        m = re.match(r"(\d{1,6})", Path(p).name)
        if not m:
            raise ObookError(f"{p}: the file name must start with the security id (000001_orders.csv)")
        from ...sources import read_head

        head = read_head(str(p), 256)
        kind = "ticks" if head.startswith(b"ApplSeqNum,BidApplSeqNum") else "orders"
        kinds.setdefault(f"{int(m.group(1)):06d}", {})[kind] = str(p)
    for sec, have in kinds.items():
        for kind, other in (("orders", "ticks"), ("ticks", "orders")):
            if kind in have and other not in have:
                missing = Path(have[kind]).with_name(f"{sec}_{other}.csv")
                raise ObookError(f"{have[kind]}: a Shenzhen vendor {kind} file is read with its {other} file "
                                 f"(e.g. {missing}); give both")
    return [str(p) for p in paths]


def merge(paths) -> MergedReader:
    return MergedReader([str(p) for p in paths])
