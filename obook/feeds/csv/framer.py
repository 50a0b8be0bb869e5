"""The CSV framer (parent process): cuts whole physical lines (a record is a line)."""

from __future__ import annotations

import logging

from ..._kernels import csv_decode as K
from ...errors import FeedError
from ..base import Framer, FrameResult

log = logging.getLogger("obook")

#: the columns a CSV order feed's header names first
HEADER = "Time,Ticker,Order,T,Shares,Price"
#: the longest line waited for (an order line is a few dozen bytes; a longer one is an
#: error naming it after the lines before it: memory stays bounded)
MAX_LINE = 32 << 20


class CsvFramer(Framer):
    """Cuts whole physical lines; a last line without a newline counts at the end."""

    unit = "line"

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        if byte_offset == 0 and base_seq == 1:
            error = self._check_header(bytes(buf[:512]), final)
            if error is not None:
                return FrameResult(0, 0, error=error) if final else FrameResult(0, 0)
        lines, n_bytes = K.frame_lines(buf, bool(final), int(max_records))
        if lines == 0 and not final and len(buf) > MAX_LINE:
            return FrameResult(0, 0, FeedError(self.path, base_seq, f"line longer than {MAX_LINE} bytes",
                                               unit=self.unit))
        return FrameResult(int(lines), int(n_bytes))

    def _check_header(self, head: bytes, final: bool):
        """Line 1 is a header the replay skips. With fewer than the six columns of
        a CSV order feed the file is most likely something else: an error when nothing
        follows it and the format was told from the file name (a one-line file gives no
        rows at all), else a warning and the replay goes on. Returns the error or None."""
        line, _, rest = head.partition(b"\n")
        if not _ and not final and len(head) == 512:
            return None                 # a header longer than 512 bytes: not checked
        fields = line.count(b",") + 1
        if fields < 6 and line.strip():
            shown = line[:60].decode("latin-1").rstrip("\r")
            if final and not rest.strip() and self.detected:
                return FeedError(self.path, 1, f"not a CSV order feed (its header {shown!r} has {fields} "
                                 f"field{'' if fields == 1 else 's'}, not {HEADER}), nor ITCH or "
                                 "another format obook tells apart: pass --format", unit="line")
            log.warning("%s: line 1 is no CSV order feed header (%d field%s, not %s...): %r; "
                        "is this an ITCH, CSV or gzip feed?", self.path, fields,
                        "" if fields == 1 else "s", HEADER, shown)
        return None
