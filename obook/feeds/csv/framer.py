"""The CSV framer (parent process): cuts whole physical lines (a record is a line)."""

from __future__ import annotations

from ..._kernels import csv_decode as K
from ..base import Framer, FrameResult


class CsvFramer(Framer):
    """Cuts whole physical lines; a last line without a newline counts at the end."""

    unit = "line"

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        lines, n_bytes = K.frame_lines(buf, bool(final), int(max_records))
        return FrameResult(int(lines), int(n_bytes))
