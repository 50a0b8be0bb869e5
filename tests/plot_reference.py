"""The whole-table computation of obook plot's arrays: every trade and depth row of the
security read into memory (``obook.plotting.frame``) and binned in one piece, the best
bid and ask drawn through every row; the reference the streaming ``_series`` of
obook.plotting is checked against."""

from __future__ import annotations

import numpy as np

from obook.plotting import _drawn, _heatmap, frame, units


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
    return _drawn(ticker, fmt, units(depth.schema, fmt, path), interval, trades, WholeBook(depth, levels), start, end)
