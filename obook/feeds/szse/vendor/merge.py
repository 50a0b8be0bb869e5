"""The vendor CSV files of a Shenzhen day merged into one text log stream (see the package)."""

from __future__ import annotations

import csv
import heapq
import io
import itertools
import re
from decimal import Decimal, InvalidOperation
from operator import itemgetter
from pathlib import Path

from ....errors import FeedError, ObookError, TruncatedFeedError
from ...._kernels.l2_szse import stamp_ok as _stamp_ok
from ...sources import open_source
from . import ORDER_COLUMNS, TICK_COLUMNS, header_names, kind_of

stamp_ok = _stamp_ok.py_func


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


def _shown(text: str, limit: int = 40) -> str:
    """A field as an error shows it: its start and size when it is longer than ``limit``."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _code(text: str) -> int:
    return ord(text.strip()[:1] or "\0")


def _line(sec: str, ticks: bool, cells: tuple, path: str, n: int) -> tuple:
    """(merge key, text log line) of one data row's cells (in ORDER_COLUMNS or TICK_COLUMNS
    order)."""
    key = _key(cells, path, n)
    if ticks:
        appl, bid, offer, px, qty, ex, t, ch = cells
        line = (f"//SecurityIDSource=102 MsgType=191 SecurityID={sec} ChannelNo={key[1]} "
                f"ApplSeqNum={key[2]} BidApplSeqNum={int(bid)} OfferApplSeqNum={int(offer)} "
                f"LastPx={_scaled(px, 4, path, n, 'Price')} "
                f"LastQty={_scaled(qty, 2, path, n, 'Qty')} ExecType={_code(ex)} TransactTime={key[0]}")
    else:
        appl, side, typ, px, qty, t, ch = cells
        line = (f"//SecurityIDSource=102 MsgType=192 SecurityID={sec} ChannelNo={key[1]} "
                f"ApplSeqNum={key[2]} Price={_scaled(px, 4, path, n, 'Price')} "
                f"OrderQty={_scaled(qty, 2, path, n, 'OrderQty')} Side={_code(side)} "
                f"OrdType={_code(typ)} TransactTime={key[0]}")
    return key, line


def _key(cells: tuple, path: str, n: int) -> tuple:
    """The merge key (TransactTime, ChannelNo, ApplSeqNum) of a row's cells; a TransactTime
    that is no YYYYMMDDHHMMSSsss stamp (which would misplace the row in the merge) raises."""
    t = int(cells[-2])
    if not stamp_ok(t):
        raise FeedError(path, n, f"bad TransactTime {_shown(cells[-2].strip())}: not a YYYYMMDDHHMMSSsss time",
                        unit="line")
    return t, int(cells[-1]), int(cells[0])


def _best_key(row, get, last: tuple) -> tuple:
    """The merge key of a row a tolerant replay skips: of (TransactTime, ChannelNo,
    ApplSeqNum) those that read, the others the file's row before it's (``last``)."""
    try:
        cells = get(row)
    except IndexError:
        return last
    out = []
    for text, before, ok in zip((cells[-2], cells[-1], cells[0]), last, (stamp_ok, None, None)):
        try:
            v = int(text)
        except ValueError:
            v = None
        out.append(v if v is not None and (ok is None or ok(v)) else before)
    return tuple(out)


def _columns(row: list, path: str):
    """(ticks, getter of a row's cells in ORDER_COLUMNS / TICK_COLUMNS order) of a file's
    header row; a header that names neither kind's columns, or one of them twice, raises."""
    names = header_names(",".join(row))
    if any("\r" in c for c in names):
        raise FeedError(path, 1, "the header line holds a carriage return (CR): lines must end with LF or CRLF, "
                        "not a CR alone", unit="line")
    kind = kind_of(names)
    if kind is None:
        if any(c in names for c in ("BidApplSeqNum", "OfferApplSeqNum", "ExecType")):
            what, expected = "a ticks header lacks", ",".join(TICK_COLUMNS)
        elif any(c in names for c in ("Side", "OrdType", "OrderQty")):
            what, expected = "an orders header lacks", ",".join(ORDER_COLUMNS)
        else:
            what, expected = "not a Shenzhen vendor orders or ticks header", \
                f"{','.join(ORDER_COLUMNS)} (orders) or {','.join(TICK_COLUMNS)} (ticks)"
        if what.endswith("lacks"):
            what += " " + ", ".join(c for c in (TICK_COLUMNS if "ticks" in what else ORDER_COLUMNS) if c not in names)
        raise FeedError(path, 1, f"{what}: found '{_shown(','.join(names), 200)}'; expected the columns {expected}, "
                        "in any order", unit="line")
    columns = TICK_COLUMNS if kind == "ticks" else ORDER_COLUMNS
    twice = [c for c in columns if names.count(c) > 1]
    if twice:
        raise FeedError(path, 1, f"the header names {twice[0]} twice (each column once, in any order)", unit="line")
    return kind == "ticks", itemgetter(*(names.index(c) for c in columns))


#: a tolerant replay's line of the merged log in place of a row that cannot be read: a
#: malformed line that the replay skips and counts (as it counts a bad line of the text log),
#: keeping the merged feed's line numbers (``origin``)
SKIPPED = "//?"


def _rows(path: str, opened: list | None = None, where: int | None = None, tolerant: bool = False):
    """(key, text log line) of one file, in file order; a row that cannot be read raises
    FeedError naming the file and its line, but one whose key (TransactTime, ChannelNo,
    ApplSeqNum) reads gives that FeedError in place of its line (the merge ends there, at the
    row's place). ``tolerant``: such a row gives the line SKIPPED instead, at its key (the
    parts of it that do not read: the file's row before it's, see _best_key). The file's
    last line without a line end is cut when it holds fewer fields than the header (or than
    a row needs): a TruncatedFeedError, as is a line longer than the cap, in either mode.
    ``opened``: gets the file's reader (its ``pos()``: the file's bytes read so far).
    ``where``: (key, (where, line)) instead, the row's key and line number (see origin)."""
    sec = security_of(path)
    with open_source(path) as f:
        if opened is not None:
            opened.append(f)
        last = _LastLine()
        reader = csv.reader(_text_lines(io.BufferedReader(_Raw(f)), path, last, tolerant))
        get = None
        key = (-1, -1, -1)      # (tolerant: the key of the file's last row read)
        while True:
            not_utf8 = last.not_utf8
            try:
                row = next(reader, None)
            except csv.Error as e:
                error = FeedError(path, reader.line_num, f"malformed row: {e}", unit="line")
                if not tolerant or get is None:
                    raise error from None
                row = ()
            if row is None:
                return
            if get is None:
                if last.not_utf8:
                    raise FeedError(path, 1, last.not_utf8_reason, unit="line")
                ticks, get = _columns(row, path)
                header = len(row)
                continue
            if row != () and last.open and any(c.strip() for c in row):
                _check_last(row, header, 8 if ticks else 7, path, reader.line_num, last.start)
            if row == () or last.not_utf8 != not_utf8:      # (tolerant) a row csv or UTF-8 refused
                key = _best_key(row, get, key)
                yield key, (where, reader.line_num) if where is not None else SKIPPED
                continue
            if not row or (len(row) == 1 and not row[0].strip()):     # a blank line, or one of spaces
                continue
            try:
                cells = get(row)
                key = _key(cells, path, reader.line_num)
                if where is not None:
                    yield key, (where, reader.line_num)
                    continue
                try:
                    line = _line(sec, ticks, cells, path, reader.line_num)[1]
                except (FeedError, ValueError) as e:
                    # a value that cannot be read: its error takes the row's place in the merge,
                    # after the other files' rows that come before it
                    line = SKIPPED if tolerant else e if isinstance(e, FeedError) else FeedError(
                        path, reader.line_num, f"malformed row: {_shown(str(e))}", unit="line")
                yield key, line
            except (IndexError, ValueError, FeedError) as e:
                if tolerant:
                    key = _best_key(row, get, key)
                    yield key, (where, reader.line_num) if where is not None else SKIPPED
                    continue
                if isinstance(e, FeedError):
                    raise
                why = (f"{len(row)} fields, its header has {header}" if isinstance(e, IndexError)
                       else _shown(str(e)))
                raise FeedError(path, reader.line_num, f"malformed row: {why}", unit="line") from None


def origin(paths: list, record: int, tolerant: bool = False):
    """(path, line) of record ``record`` of the files' merged feed (None past its end): the
    files are merged again by their rows' keys alone, up to that record (``tolerant``: as a
    tolerant replay merged them, its rows that cannot be read in their places)."""
    merged = heapq.merge(*(_rows(p, where=i, tolerant=tolerant) for i, p in enumerate(paths)), key=lambda r: r[0])
    try:
        for _, (i, line) in itertools.islice(merged, record - 1, record):
            return paths[i], line
    except ObookError:
        return None
    finally:
        merged.close()
    return None


def first_stamp(path: str) -> int | None:
    """The TransactTime of a file's first data row, read as the replay reads it (None: the
    file has no row, or the replay refuses it or a line before it)."""
    rows = _rows(path, where=0)
    try:
        return next(rows)[0][0]
    except (StopIteration, ObookError):
        return None
    finally:
        rows.close()


def security_of(path) -> str:
    """The six-digit security of a vendor file: its name's leading digits, followed by '_'
    or '.' (``000001_orders.csv``)."""
    m = re.match(r"(\d{1,6})[_.]", Path(path).name)
    if not m:
        raise ObookError(f"{path}: the file name must start with the security id and '_' (000001_orders.csv)")
    return f"{int(m.group(1)):06d}"


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
    file's last line), ``start`` its byte offset in the file; ``not_utf8``: the lines so far
    that were not UTF-8 (a tolerant read's), the reason of the last of them."""

    def __init__(self):
        self.open = False
        self.start = 0
        self.not_utf8 = 0
        self.not_utf8_reason = ""


def _text_lines(raw, path: str, last: _LastLine | None = None, tolerant: bool = False):
    """The lines of a file as text (each with its newline), each checked to be UTF-8 and at
    most MAX_LINE bytes long (a longer one is never held whole); ``last`` follows them.
    ``tolerant`` (with ``last``): a line that is not UTF-8 is given with its bad bytes
    replaced, and counted in ``last.not_utf8``."""
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
            text = line.decode("utf-8")
        except UnicodeDecodeError as e:
            reason = f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at column {e.start + 1})"
            if not tolerant or last is None:
                raise FeedError(path, n, reason, unit="line") from None
            last.not_utf8 += 1
            last.not_utf8_reason = reason
            text = line.decode("utf-8", "replace")
        yield text


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

    def __init__(self, paths, on_error: str = "raise"):
        self.paths = paths
        self.tolerant = on_error != "raise"
        self._opened: list = []
        self._lines = (line for _, line in heapq.merge(*(_rows(p, self._opened, tolerant=self.tolerant)
                                                         for p in paths), key=lambda r: r[0]))
        self._buf = b""
        self._given = 0         # lines of the merged log given so far
        self.deferred_error: ObookError | None = None

    def readinto(self, view) -> int:
        while len(self._buf) < len(view) and self.deferred_error is None:
            lines = []
            try:
                for _, line in zip(range(4096), self._lines):
                    if isinstance(line, FeedError):     # a row whose value cannot be read: the end
                        self.deferred_error = _at_merged_line(line, self._given + len(lines) + 1)
                        break
                    lines.append(line)
            except ObookError as e:
                self.deferred_error = e
            self._given += len(lines)
            if not lines:
                break
            self._buf += ("\n".join(lines) + "\n").encode()
        n = min(len(view), len(self._buf))
        view[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def origin(self, record: int):
        """(path, line) of record ``record`` of the merged feed (see :func:`origin`)."""
        return origin(self.paths, record, self.tolerant)

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


def _at_merged_line(error: FeedError, line: int) -> FeedError:
    """``error`` of a file's row with the row's line of the merged feed."""
    out = FeedError(error.path, error.record, f"{error.reason} (line {line} of the merged feed)", unit="line")
    out.feed_record = line
    return out


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
    from ...sources import read_head

    for p in paths:
        sec = security_of(p)
        try:
            head = read_head(str(p), 4096)
            if not head:
                raise FeedError(str(p), None, "the file is empty: a Shenzhen vendor CSV file starts with its header line")
            ticks, _ = _columns(head.split(b"\n")[0].decode("utf-8", "replace").split(","), str(p))
        except FeedError as e:
            e.feed = "+".join(str(q) for q in paths)    # one of several files: the error names it
            raise
        kinds.setdefault(sec, {})["ticks" if ticks else "orders"] = str(p)
    for sec, have in kinds.items():
        for kind, other in (("orders", "ticks"), ("ticks", "orders")):
            if kind in have and other not in have:
                missing = Path(have[kind]).with_name(f"{sec}_{other}.csv")
                raise ObookError(f"{have[kind]}: a Shenzhen vendor {kind} file is read with its {other} file "
                                 f"(e.g. {missing}); give both")
    return [str(p) for p in paths]


def merge(paths, on_error: str = "raise") -> MergedReader:
    return MergedReader([str(p) for p in paths], on_error)
