"""The seed benchmark's order-entry workload for any number of instruments.

``seed_rows(n, seed)``: one book's flow as kernel instruction rows (what the benchmark
replays); ``orders_table(n, instruments, seed)``: the same flows as an order-entry table
(``obook.feeds.orders`` columns), instruments interleaved at random;
``write_orders(path, ...)``: that table as CSV or Parquet (by the extension).
Same arguments, same rows. Prices are ticks (tick 1) around a mid of 10,000.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from .._kernels.match_layout import OP_CANCEL, SIDE_SHIFT, TIF_SHIFT
from ..matching.prepare import Instructions

SEED = 42
#: bytes a message takes at least: on disk (plain, compressed) and in memory while the day is
#: generated (0: written as it goes); a little below what 1 M messages measure, so that a size
#: `obook gen` refuses for want of room could not have fitted
MIN_BYTES_PARQUET = (8, 8, 150)
MIN_BYTES_CSV = (40, 40, 150)


def seed_rows(n: int, seed: int = SEED) -> tuple[Instructions, int, int]:
    """(instructions, lowest price, levels): n kernel instructions of one book (book 0,
    keys 0, 1, ... in order of the new orders), prices as rows of a band starting at the
    lowest price."""
    from .._kernels.match import MatchState, Stream
    from .._kernels.match_gen import BAND, FULL, MID, generate
    from ..matching.books import new_state

    levels = 2 * BAND + 1
    lv, od, ow, bk, st, _ = new_state(levels, [0], [levels - 1], n, 1)
    fl = np.zeros((2 * FULL + 64, 8), np.int64)
    ev = np.zeros((1, 10), np.int64)
    msg = Instructions.zeros(n)
    live = np.zeros(max(n, 1), np.int64)
    pos = np.full(max(n, 1), -1, np.int64)
    generate(seed, n, Stream(msg.rows, msg.owner, msg.clock), MatchState(lv, od, ow, bk, st), fl, ev, live, pos)
    return msg, MID - BAND, levels


#: a dated day's instructions: from 09:30 New York, spread evenly over the 6.5 h session (ns)
OPEN_NS, SESSION_NS = 34_200 * 10**9, 23_400 * 10**9


def session_times(n: int) -> np.ndarray:
    """ns since midnight of n instructions spread evenly from 09:30 over the session."""
    return OPEN_NS + np.arange(n, dtype=np.int64) * max(1, SESSION_NS // max(n, 1))


def orders_table(n: int, instruments: int = 1, seed: int = SEED, dated: bool = False) -> pa.Table:
    """n instructions over ``instruments`` books (names S00001 ...), each book its own
    seeded flow, interleaved by a seeded draw. ``time``: the row number, or with ``dated``
    ns since midnight (``session_times``), for a day whose date ``obook match --date`` (or
    the file name) gives."""
    rng = np.random.default_rng(seed)
    book = rng.integers(0, instruments, n) if instruments > 1 else np.zeros(n, np.int64)
    counts = np.bincount(book, minlength=instruments)
    cols = {k: np.zeros(n, np.int64) for k in ("order_id", "price", "quantity", "op")}
    by_book = np.argsort(book, kind="stable")       # each book's rows, in order
    ends = np.cumsum(counts)
    for b in np.flatnonzero(counts).tolist():       # (a book with no rows adds none)
        where = by_book[ends[b] - counts[b]:ends[b]]
        msg, lo, _ = seed_rows(int(counts[b]), seed + 1_000_003 * b)
        rows = msg.rows
        cols["order_id"][where] = rows["key"] + 1
        cols["price"][where] = np.where(rows["price"] >= 0, rows["price"] + lo, -1)
        cols["quantity"][where] = rows["qty"]
        cols["op"][where] = rows["op"]
    op = cols["op"]
    action = op & 3
    # from numpy arrays: pyarrow's conversion of Python lists imports pandas
    used = np.flatnonzero(counts)                   # the names of the books that have rows
    names = pa.array(np.array([f"S{b + 1:05d}" for b in used.tolist()], object), pa.string())
    actions = pa.array(np.array(["new", "modify", "cancel"], object), pa.string())
    is_new = action == 0
    return pa.table({
        "time": pa.array(session_times(n) if dated else np.arange(1, n + 1, dtype=np.int64)),
        "instrument": names.take(pa.array(np.searchsorted(used, book))),
        "order_id": pa.array(cols["order_id"]),
        "action": actions.take(pa.array(action)),
        "side": pa.array(np.where((op >> SIDE_SHIFT) & 1, "sell", "buy").astype(object), pa.string(), mask=~is_new),
        "tif": pa.array(np.where((op >> TIF_SHIFT) & 3 == 2, "IOC", "GTC").astype(object), pa.string(),
                        mask=~is_new),
        "price": pa.array(cols["price"], mask=(cols["price"] < 0) | (action == OP_CANCEL)),
        "quantity": pa.array(cols["quantity"], mask=(cols["quantity"] < 0) | (action == OP_CANCEL)),
    })


def write_orders(path, n: int, instruments: int = 1, seed: int = SEED, dated: bool = False) -> int:
    """Write orders_table(...) to path (.parquet: Parquet, else CSV: gzipped when the name
    ends in .gz, zstd-compressed when in .zst); returns n."""
    t = orders_table(n, instruments, seed, dated)
    path = Path(path)
    if path.suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq
        pq.write_table(t, path)
    else:
        import pyarrow.csv as pcsv

        from . import open_output

        with open_output(path) as f:
            pcsv.write_csv(t, f)
    return n

