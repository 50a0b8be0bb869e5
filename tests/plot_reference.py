"""The whole-table computation of obook plot's arrays: every trade and depth row of the
security read into memory (``obook.plotting.frame``) and binned in one piece, the best
bid and ask drawn through every row (a window's first the book resting at its start: the day's
last row before it); the reference the streaming ``_series`` of
obook.plotting is checked against."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from obook.plotting import _drawn, _heatmap, frame, local_midnight, units


class WholeBook:
    """A depth table as ``_drawn`` reads a book: all its rows at once."""

    def __init__(self, depth, levels: int):
        self.depth, self.levels = depth.combine_chunks(), levels
        self.times = depth.column("time").to_numpy().astype(np.int64)
        self.first, self.last = int(self.times[0]), int(self.times[-1])

    def heatmap(self, scale, t0, t1, traded=()):
        return _heatmap(self.depth, self.levels, scale, t0, t1, traded)

    def best(self, side):
        return self.times, self.depth.column(f"{side}_px_1").to_numpy(zero_copy_only=False).astype(float)


def series(path, ticker, start, end, interval, format, workers, levels, date) -> dict:
    ticker, fmt, _bars, depth, trades = frame(path, ticker, start, end, interval, format, workers, levels, date)
    if start is not None:       # the book resting at the window's start: the day's last row before it
        whole = frame(path, ticker, None, None, interval, format, workers, levels, date)[3]
        t = whole.column("time").to_numpy().astype(np.int64)
        at = start + local_midnight(int(t[0]), units(whole.schema, fmt, path))
        before = np.flatnonzero(t < at)
        if len(before):
            row = whole.slice(int(before[-1]), 1)
            i = row.schema.get_field_index("time")
            row = row.set_column(i, row.schema.field(i), pa.array([at], row.schema.field(i).type))
            depth = pa.concat_tables([row, depth])
    return _drawn(ticker, fmt, units(depth.schema, fmt, path), interval, trades, WholeBook(depth, levels), start, end)
