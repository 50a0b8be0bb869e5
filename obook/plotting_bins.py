"""The arrays obook plot draws its depth heatmap and best bid and ask lines from, built
while the depth reader streams, batch by batch, so that memory is bounded by the heatmap's
columns rather than the book's rows.

The heatmap's columns are known only at the end (the window ends at the book's or the
trades' last time), so the rows a column can need (the last row of each time: time and
the levels' prices and shares) go to a temporary Arrow file (unlinked: it has no name), read back one batch at a time
once the window is known; the best bid and ask lines keep only the rows where the price
changes (a step line through the rows between them is the same line).
"""

from __future__ import annotations

import numpy as np

from .errors import ObookError, OutputError

TIME_BINS = 600        # columns of the heatmap


def level_names(levels: int, kind: str) -> list[str]:
    """The depth table's ``kind`` columns (px, qty) of the top ``levels``, bids then asks."""
    return [f"{side}_{kind}_{k}" for side in ("bid", "ask") for k in range(1, levels + 1)]


def _floats(column) -> np.ndarray:
    """A price or quantity column as floats (a null: NaN)."""
    return column.to_numpy(zero_copy_only=False).astype(float)


def last_rows(batches, levels: int, t0: int, t1: int) -> tuple:
    """(prices, shares [level, column], columns): the levels of the last row of each heatmap
    column of [t0, t1) that holds a row, from ``batches`` of depth rows in feed order."""
    prices = np.full((2 * levels, TIME_BINS), np.nan)
    shares = np.full((2 * levels, TIME_BINS), np.nan)
    filled = np.zeros(TIME_BINS, bool)
    names = list(zip(level_names(levels, "px"), level_names(levels, "qty")))
    for batch in batches:
        if batch.num_rows == 0:
            continue
        t = batch.column("time").to_numpy().astype(np.int64)
        cols = np.minimum(((t - t0) * TIME_BINS) // max(1, t1 - t0), TIME_BINS - 1)
        last = np.flatnonzero(np.r_[cols[1:] != cols[:-1], True])     # the last row of each column
        at = cols[last]          # (a column going on in the next batch: its later rows win)
        for j, (px, qty) in enumerate(names):
            prices[j, at] = _floats(batch.column(px).take(last))
            shares[j, at] = _floats(batch.column(qty).take(last))
        filled[at] = True
    at = np.flatnonzero(filled)
    return prices[:, at], shares[:, at], at


#: how far past the quartiles of the columns' lowest and highest prices a price still counts
#: as the book's (Tukey's far-out fence): an opening auction's orders at the price limits do not
FENCE = 3.0


def book_span(px) -> tuple:
    """(low, high) of the prices the book rests at over the window, ``px`` [level, column]:
    the columns' lowest and highest prices, without the far-out ones (a call auction's
    orders at the day's price limits, which would squeeze the rest of the day into a few
    rows of the heatmap); (inf, -inf) for an empty book."""
    cols = np.isfinite(px).any(axis=0)
    if not cols.any():
        return np.inf, -np.inf
    lows, highs = np.nanmin(px[:, cols], axis=0), np.nanmax(px[:, cols], axis=0)
    q1, q3 = np.quantile(lows, [0.25, 0.75])
    low = max(lows.min(), q1 - FENCE * (q3 - q1))
    q1, q3 = np.quantile(highs, [0.25, 0.75])
    high = min(highs.max(), q3 + FENCE * (q3 - q1))
    return low, high


def heatmap(batches, levels: int, scale: float, t0: int, t1: int, traded=()) -> tuple:
    """(grid shares [price row, time column], price edges, time edges) of the top levels; a
    book empty throughout the window: an empty grid over the prices ``traded`` there."""
    px, qty, at = last_rows(batches, levels, t0, t1)
    seen = px[np.isfinite(px)]
    low, high = book_span(px)
    prices = np.unique(np.r_[seen[(seen >= low) & (seen <= high)], np.asarray(traded, dtype=float)])
    if len(prices) == 0:
        raise ObookError("no price in the window: the book is empty throughout it and nothing trades")
    tick = np.min(np.diff(prices)) if len(prices) > 1 else 1.0
    lo, hi = prices[0] - tick / 2, prices[-1] + tick / 2
    rows = int(min(400, max(1, round((hi - lo) / tick))))
    grid = np.zeros((rows, TIME_BINS))
    filled = np.zeros(TIME_BINS, bool)
    filled[at] = True
    for j in range(px.shape[0]):
        ok = np.isfinite(px[j]) & np.isfinite(qty[j]) & (px[j] >= lo) & (px[j] <= hi)
        r = np.clip(((px[j][ok] - lo) / (hi - lo) * rows).astype(int), 0, rows - 1)
        np.add.at(grid, (r, at[ok]), qty[j][ok])
    for c in range(1, TIME_BINS):            # a column without a row keeps the book before it
        if not filled[c]:
            grid[:, c] = grid[:, c - 1]
    edges_t = t0 + (t1 - t0) * np.arange(TIME_BINS + 1) / TIME_BINS
    return grid, np.linspace(lo, hi, rows + 1) / scale, edges_t


def _unwritable(where, e: OSError) -> OutputError:
    return OutputError(f"{where}: cannot write obook plot's temporary file of the book's rows "
                      f"({e.strerror or e}); set TMPDIR to a folder with room")


class BookRows:
    """The window's depth rows of one security, given batch by batch (``add``): the first
    and last row's times, the best bid and ask where they change (``best``) and the rows
    the heatmap can need in a temporary Arrow file (``heatmap``). Close it (``with``) to
    remove the file."""

    def __init__(self, levels: int):
        import tempfile

        self.levels = levels
        self.names = ["time", *level_names(levels, "px"), *level_names(levels, "qty")]
        self.rows = 0
        self.first = self.last = None        # the first and last row's times
        try:       # a file without a name (unlinked): nothing is left even by a SIGKILL
            self._file = tempfile.TemporaryFile(prefix="obook-plot-", suffix=".arrows")
        except OSError as e:
            raise _unwritable(tempfile.gettempdir(), e) from e
        self.path = tempfile.gettempdir()       # where it is, for the errors
        self._writer = None
        self._best = {side: ([], []) for side in ("bid", "ask")}
        self._end = {}           # side: (time, price, kept) of the last row so far

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        writer, self._writer = self._writer, None
        try:
            if writer is not None:
                writer.close()
        except OSError:          # (the disk that was full: the file goes anyway)
            pass
        try:
            self._file.close()
        except OSError:          # (its buffer's last bytes not written: a full disk, said already)
            pass

    def add(self, batch) -> None:
        import pyarrow as pa

        if batch.num_rows == 0:
            return
        t = batch.column("time").to_numpy().astype(np.int64)
        if self.first is None:
            self.first = int(t[0])
        self.last = int(t[-1])
        self.rows += batch.num_rows
        thin = batch.select(self.names).filter(pa.array(np.r_[t[1:] != t[:-1], True]))    # last of each time
        try:
            if self._writer is None:
                self._writer = pa.ipc.new_stream(self._file, thin.schema)
            self._writer.write_batch(thin)
        except OSError as e:         # (a full disk)
            raise _unwritable(self.path, e) from e
        for side, (times, prices) in self._best.items():
            v = _floats(batch.column(f"{side}_px_1"))
            before = np.r_[self._end[side][1] if side in self._end else np.nan, v[:-1]]
            change = ~((v == before) | (np.isnan(v) & np.isnan(before)))
            if side not in self._end:
                change[0] = True
            times.append(t[change])
            prices.append(v[change])
            self._end[side] = (t[-1], v[-1], bool(change[-1]))

    def best(self, side: str) -> tuple:
        """(times, prices) of the best ``side`` (NaN: none) at each change and at the last
        row: the same step line as through every row."""
        times, prices = self._best[side]
        end_t, end_v, kept = self._end[side]
        if not kept:
            times, prices = [*times, [end_t]], [*prices, [end_v]]
        return np.concatenate(times).astype(np.int64), np.concatenate(prices)

    def heatmap(self, scale: float, t0: int, t1: int, traded=()) -> tuple:
        """``heatmap`` of the rows given, read back from the temporary file."""
        import pyarrow as pa

        try:                    # (the file is buffered: a full disk may say so only here)
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            self._file.seek(0)
        except OSError as e:
            raise _unwritable(self.path, e) from e
        return heatmap(pa.ipc.open_stream(self._file), self.levels, scale, t0, t1, traded)
