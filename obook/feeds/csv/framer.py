"""The CSV framer (parent process): cuts whole physical lines (a record is a line)."""

from __future__ import annotations

import numpy as np

from ..._kernels import csv_decode as K
from ...errors import FeedError, TruncatedFeedError
from ..base import Framer, FrameResult

#: the columns a CSV order feed's header names first
HEADER = "Time,Ticker,Order,T,Shares,Price"
#: the longest line waited for (an order line is a few dozen bytes; a longer one is an
#: error naming it after the lines before it: memory stays bounded)
MAX_LINE = 32 << 20
#: the fields of a whole line
FIELDS = 6
#: the header's first names, as compared (lower case, spaces around them stripped)
NAMES = HEADER.lower().encode().split(b",")


class CsvFramer(Framer):
    """Cuts whole physical lines; a last line without a newline counts at the end, unless
    it is cut: not blank, with fewer fields than the header (six at least), it is a
    TruncatedFeedError (strict and tolerant) after the lines before it."""

    unit = "line"
    #: line 1 is the header, no order line
    headed = True

    def __init__(self, path, on_error="raise"):
        super().__init__(path, on_error)
        self.header_fields = FIELDS     # the fields of line 1, once framed

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        if byte_offset == 0 and base_seq == 1:
            error = self._header_misread(bytes(buf[:512]))
            if error is not None:
                return FrameResult(0, 0, error=error)
            head = bytes(buf[:512])
            error = self._check_header(head, final)
            if error is not None:       # (line 1 whole, or the feed's end: else wait for more)
                return FrameResult(0, 0, error=error) if final or b"\n" in head else FrameResult(0, 0)
        lines, n_bytes = K.frame_lines(buf, bool(final), int(max_records))
        if lines == 0 and not final and len(buf) > MAX_LINE:
            return FrameResult(0, 0, FeedError(self.path, base_seq, f"line longer than {MAX_LINE} bytes",
                                               unit=self.unit))
        if byte_offset == 0 and base_seq == 1 and lines:
            self.header_fields = header_commas(buf[:n_bytes]) + 1
        if final and lines and n_bytes == len(buf) and buf[n_bytes - 1] != 10 and base_seq + lines - 1 > 1:
            error = self._cut_last(buf, base_seq + lines - 1, byte_offset, n_bytes)
            if error is not None:
                return FrameResult(int(lines) - 1, error.offset - byte_offset, error)
        return FrameResult(int(lines), int(n_bytes))

    def _cut_last(self, buf, line: int, byte_offset: int, end: int):
        """The error of the feed's last line (``line``, no line end, ending at ``end``) when it
        is cut, else None."""
        nl = np.flatnonzero(buf[:end] == 10)
        start = int(nl[-1]) + 1 if len(nl) else 0
        text = buf[start:end]
        if not np.any((text != 32) & ((text < 9) | (text > 13))):
            return None                 # blank: skipped as a blank line is
        fields = int(np.count_nonzero(text == 44)) + 1
        need = max(FIELDS, self.header_fields)
        if fields >= need:
            return None
        whole = f"its header's {need}" if self.header_fields >= FIELDS else f"the {FIELDS} a line needs"
        return TruncatedFeedError(self.path, line, byte_offset + start,
                                  f"the last line is cut: it has {fields} of {whole} fields and no line end",
                                  unit=self.unit)

    def _header_misread(self, head: bytes):
        """The error of a line 1 whose rows would be misread: an order line (a file without
        its header: the replay would skip that order), or a header naming the six columns
        in another order (the columns are read by place, not by name). Else None."""
        line, nl, _ = head.partition(b"\n")
        if not nl and len(head) == 512:
            return None                 # a header longer than 512 bytes: not checked
        line = line.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r")
        fields = [f.strip().lower() for f in line.split(b",")]
        if len(fields) >= FIELDS and fields[0].isdigit():
            return FeedError(self.path, 1, f"an order line, not the header ({HEADER}) a CSV order "
                             "feed starts with", unit=self.unit)
        if set(NAMES) <= set(fields) and fields[:FIELDS] != NAMES:
            shown = line.decode("utf-8", "replace")[:120]
            return FeedError(self.path, 1, f"the header {shown!r} names the columns in another order: a CSV "
                             f"order feed's columns are read by place, {HEADER}", unit=self.unit)
        return None

    def _check_header(self, head: bytes, final: bool):
        """Line 1 is the header the replay skips: ``Time,Ticker,Order,T,Shares,Price`` (names
        in any case, spaces around them allowed), then any columns more (ignored). Any other
        line 1 (a README, notes, another format's text, a table obook wrote as CSV) is no CSV
        order feed's header: an error on line 1 naming the header expected, in strict and
        tolerant mode alike. A blank line 1 passes (an empty feed stays one). Returns the
        error or None."""
        line, nl, _ = head.partition(b"\n")
        longer = not nl and not final and len(head) == 512
        line = line.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r")
        fields = line.split(b",")
        if not line.strip() or longer and len(fields) <= FIELDS:
            return None         # blank, or a header longer than 512 bytes before its sixth comma: not checked
        if [f.strip().lower() for f in fields[:FIELDS]] == NAMES:
            return None
        shown = line[:60].decode("utf-8", "replace")
        expected = f"{HEADER} (any case), then any columns more"
        if _table_header(line):
            why = f"names a table's columns, not the header {expected}: is this a table rather than a feed?"
        elif len(fields) < FIELDS:
            why = f"has {len(fields)} field{'' if len(fields) == 1 else 's'}, not the header {expected}; {_OTHER}"
        else:
            why = f"is not the header {expected}; {_OTHER}"
        error = FeedError(self.path, 1, f"not a CSV order feed: line 1 {shown!r} {why}", unit=self.unit)
        error.advice = f"; {_OTHER}"    # (a replay that knows the format the file looks like names it instead)
        return error


#: the way out of a header error, in the words of every front end
_OTHER = "if the file is another format, give it (format=, --format on the command line)"


def header_commas(buf) -> int:
    """The commas of line 1 (the header) at the front of buf (read as far as its line end:
    not the whole batch)."""
    n = 4096
    while True:
        head = bytes(buf[:n])
        end = head.find(b"\n")
        if end >= 0 or n >= len(buf):
            return head[:end if end >= 0 else len(head)].count(b",")
        n *= 4


def _table_header(line: bytes) -> bool:
    """Whether ``line`` (line 1) names the first columns of a table obook writes (``seq``,
    ``time``; quoted or not)."""
    return [f.strip().strip(b'"').lower() for f in line.split(b",")][:2] == [b"seq", b"time"]
