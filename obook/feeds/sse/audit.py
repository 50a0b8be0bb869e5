"""The exchange's 10-level snapshots of an AX-SBE text log, and the ``audit`` table:
each snapshot compared with the book obook rebuilt from the ticks.

The rule (learnt from the real Shanghai day, where it holds for every continuous-session
snapshot): a snapshot stamped second T (DataTimeStamp HHMMSS, truncated to the second)
matches when some state of the rebuilt book during [T - 3 s, T + 1 s) has the same 10
levels a side (price and total quantity; an empty level is price 0 and quantity 0):
the state in force at T - 3 s, or the state after any event stamped inside the window.
The first difference is reported against the state of the window closest to the snapshot
(most equal values; the latest of equals).

The day tallies (NumTrades, TotalVolumeTrade, TotalValueTrade, LastPx, HighPx, LowPx)
are rebuilt from the trades stamped before T + 1 s. TotalValueTrade carries 5 implied
decimals (yuan * 10**5) while price * quantity carries 6: the rebuilt value is
sum(price * quantity) // 10 (exact: Shanghai prices are whole fen).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._kernels import l2_sse as K
from ..._kernels.l2_text import fields
from ...errors import FeedError
from ..axsbe_lines import drop_bom
from ..sources import Cut, is_stream, open_source, read_block, tee
from .feed import LOOKAHEAD
from .schema import LEVELS, TALLIES, audit_schema  # noqa: F401
from . import NAME

SECOND = 1_000_000_000
WINDOW = 3 * SECOND
#: the largest rebuilt tally (the snapshots' own are int64 too)
MAX_TALLY = (1 << 63) - 1


def snapshots(path, chunk: int = 1 << 23, stop: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every snapshot line of the log as rows of int64 (``l2_sse.S_*`` columns); the channel
    of each security's events (-1: none, -2: several) and the latest time of its events on
    the lines numbered below ``stop`` (-1: none), indexed by SecurityID."""
    F = fields()
    chan_of = np.full(K.MAX_SECURITY, -1, np.int64)
    sec_time = np.full(K.MAX_SECURITY, -1, np.int64)
    out = np.zeros((4096, K.S_WIDTH), np.int64)
    parts = []
    buf = np.zeros(0, np.uint8)
    seq = 1
    block = np.empty(chunk, np.uint8)
    with open_source(path) as f:
        eof = False
        while not eof:
            try:
                got = read_block(f, memoryview(block))
            except Cut as e:       # a damaged log: the replay of the same bytes reports it
                got = e.got
                eof = True
            eof = eof or got < chunk
            if seq == 1 and not len(buf):
                drop_bom(block[:got])
            buf = np.concatenate([buf, block[:got]])
            pos = 0
            while True:
                lines, used, rows = K.sse_snapshots(buf[pos:], len(buf) - pos, eof, seq, F, out,
                                                  chan_of, stop, sec_time)
                if rows:
                    parts.append(out[:rows].copy())
                seq += lines
                pos += used
                if rows < out.shape[0]:
                    break
            buf = buf[pos:].copy()
    snap = np.concatenate(parts) if parts else np.zeros((0, K.S_WIDTH), np.int64)
    return snap, chan_of, sec_time


def continuous(t: np.ndarray) -> np.ndarray:
    """Snapshot times (ns since midnight) inside the continuous sessions."""
    h = lambda hh, mm: (hh * 3600 + mm * 60) * SECOND  # noqa: E731
    return ((t >= h(9, 30)) & (t <= h(11, 30))) | ((t >= h(13, 0)) & (t < h(14, 57)))


def _depth_levels(depth: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tickers, times, levels[n, 40]: bid px, bid qty, ask px, ask qty) of the depth rows."""
    cols = []
    for part in ("bid_px", "bid_qty", "ask_px", "ask_qty"):
        for i in range(1, LEVELS + 1):
            cols.append(depth.column(f"{part}_{i}").fill_null(0).to_numpy())
    lv = np.stack(cols, axis=1) if len(depth) else np.zeros((0, 4 * LEVELS), np.int64)
    return (np.asarray(depth.column("ticker").to_pylist(), dtype=object),
            depth.column("time").to_numpy().astype(np.int64), lv)


def _snap_levels(snap: np.ndarray) -> np.ndarray:
    """Snapshot levels in the depth order (bid px, bid qty, ask px, ask qty); an empty level is 0, 0."""
    lv = snap[:, K.S_LEVELS:K.S_LEVELS + 40].copy()
    for px, qty in ((0, 10), (20, 30)):
        empty = lv[:, qty:qty + 10] == 0
        lv[:, px:px + 10][empty] = 0
    return lv


def _sums(p: np.ndarray, q: np.ndarray, seq: np.ndarray, ticker: str, path) -> tuple[np.ndarray, np.ndarray]:
    """The running volume and value (sum of price * quantity, // 10) of one security's
    trades, exact: a tally past 2**63 - 1 is a FeedError naming the trade that takes it there."""
    if len(q) == 0 or float(q.sum(dtype=np.float64)) * max(float(p.max()), 1.0) < 2.0**62:
        return np.cumsum(q), np.cumsum(p * q) // 10          # no sum or product can wrap
    vol = np.cumsum(q.astype(object))
    val = np.cumsum(p.astype(object) * q.astype(object)) // 10
    for name, run in (("TotalVolumeTrade", vol), ("TotalValueTrade", val)):
        past = np.flatnonzero(run > MAX_TALLY)
        if len(past):
            raise FeedError(path, int(seq[past[0]]), f"the rebuilt {name} of security {ticker} passes "
                            "2**63 - 1 at this trade", unit="line")
    return vol.astype(np.int64), val.astype(np.int64)


def _tallies(trades: pa.Table, tickers=None, path=None):
    """Per ticker (of ``tickers``; None: all): trade times and cumulative count, volume,
    value, last, high, low."""
    out = {}
    if not len(trades):
        return out
    tick = np.asarray(trades.column("ticker").to_pylist(), dtype=object)
    time = trades.column("time").to_numpy().astype(np.int64)
    px = trades.column("price").to_numpy()
    qty = trades.column("shares").to_numpy()
    seq = trades.column("seq").to_numpy()
    for t in np.unique(tick):
        if tickers is not None and t not in tickers:
            continue
        m = tick == t
        p, q = px[m], qty[m]
        vol, val = _sums(p, q, seq[m], t, path)
        out[t] = (np.maximum.accumulate(time[m]), np.arange(1, len(p) + 1), vol, val, p,
                  np.maximum.accumulate(p), np.minimum.accumulate(p))
    return out


def audit_table(snap: np.ndarray, depth: pa.Table, trades: pa.Table, path=None) -> pa.Table:
    """The audit rows of the snapshots ``snap`` against a replay's depth (10 levels) and trades
    (of the log ``path``, named by an error)."""
    tickers, times, levels = _depth_levels(depth)
    tallies = _tallies(trades, {f"{int(s):06d}" for s in snap[:, K.S_SECURITY]}, path)
    n = len(snap)
    want = _snap_levels(snap)
    matched = np.zeros(n, bool)
    diff = np.full((n, 6), -1, np.int64)         # side, level, snap px, snap qty, book px, book qty
    book_t = np.zeros((n, 6), np.int64)
    by_ticker = {}
    for t in (np.unique(tickers) if len(tickers) else ()):
        rows = np.flatnonzero(tickers == t)
        by_ticker[t] = (rows, np.maximum.accumulate(times[rows]))
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    for i in range(n):
        tk = f"{int(snap[i, K.S_SECURITY]):06d}"
        T = int(snap[i, K.S_TIME])
        rows, tt = by_ticker.get(tk, none)
        lo = int(np.searchsorted(tt, T - WINDOW, "left"))
        hi = int(np.searchsorted(tt, T + SECOND, "left"))
        states = levels[rows[max(lo - 1, 0):hi]]
        if lo == 0:   # the book was empty before its first change
            states = np.vstack([np.zeros((1, 4 * LEVELS), np.int64), states])
        same = (states == want[i]).sum(axis=1)
        matched[i] = bool(same.max() == want.shape[1])
        if not matched[i]:
            last = states[len(same) - 1 - int(np.argmax(same[::-1]))]   # the closest (latest) state
            for k in range(2 * LEVELS):
                side, lvl = divmod(k, LEVELS)
                a, b = 20 * side + lvl, 20 * side + 10 + lvl
                if last[a] != want[i, a] or last[b] != want[i, b]:
                    diff[i] = (side, lvl + 1, want[i, a], want[i, b], last[a], last[b])
                    break
        tl = tallies.get(tk)
        if tl is not None:
            # the book's tallies after the snapshot's NumTrades-th trade when that trade falls in
            # the window, else after the trades before T + 1 s
            lo = int(np.searchsorted(tl[0], T - WINDOW, "left"))
            j = int(np.searchsorted(tl[0], T + SECOND, "left"))
            if lo <= snap[i, K.S_NUM_TRADES] <= j:
                j = int(snap[i, K.S_NUM_TRADES])
            if j:
                book_t[i] = [c[j - 1] for c in tl[1:]]
    snap_t = snap[:, [K.S_NUM_TRADES, K.S_VOLUME, K.S_VALUE, K.S_LAST, K.S_HIGH, K.S_LOW]]
    has = diff[:, 0] >= 0
    side = pa.array([("B" if d == 0 else "S") if h else None for d, h in zip(diff[:, 0].tolist(), has)],
                    pa.string())
    opt = lambda c: pa.array(diff[:, c], mask=~has)  # noqa: E731
    arrays = [
        pa.array(snap[:, K.S_SEQ]), pa.array(snap[:, K.S_TIME].astype(np.uint64)),
        pa.array([f"{int(s):06d}" for s in snap[:, K.S_SECURITY]], pa.string()),
        pa.array(snap[:, K.S_SECURITY].astype(np.int32)),
        pa.array(continuous(snap[:, K.S_TIME])), pa.array(matched),
        side, pa.array(diff[:, 1].astype(np.int32), mask=~has), opt(2), opt(3), opt(4), opt(5),
    ]
    for c in range(6):
        arrays += [pa.array(snap_t[:, c]), pa.array(book_t[:, c])]
    arrays.append(pa.array((snap_t == book_t).all(axis=1)))
    return pa.Table.from_arrays(arrays, schema=audit_schema)


def _by_channel(chan_of: np.ndarray, times: np.ndarray) -> np.ndarray:
    """By SecurityID: the latest of ``times`` (by SecurityID) over the securities of its
    channel ``chan_of`` (-1 for a security of no channel or several)."""
    one = chan_of >= 0
    channels, of = np.unique(chan_of[one], return_inverse=True)
    top = np.full(len(channels), -1, np.int64)
    np.maximum.at(top, of, times[one])
    out = np.full(len(chan_of), -1, np.int64)
    out[one] = top[of]
    return out


def settled(snap: np.ndarray, error: FeedError, depth: pa.Table, trades: pa.Table,
            chan_of: np.ndarray, early: np.ndarray) -> np.ndarray:
    """The snapshots a replay stopped by ``error`` still audits as a whole log would: those
    whose window (to T + 1 s) the replayed events of their security's channel passed (the
    events of a channel are in BizIndex order, which is time order; other channels' events
    may be later or earlier in time). ``chan_of``, ``early``: of :func:`snapshots`, the
    channel of each security and the latest time of its events on the lines more than the
    framer's window before a bad line.

    A book error (located: ``feed_line``) stops the replay at a record in event order, the
    same of the day in one file or cut into files (by lines, by channel): each channel's
    replayed events are its lowest BizIndexes, so its events not replayed are no earlier
    than its latest replayed one; a snapshot of any line is kept. A bad line (the framer's
    error) ends the log there. The framer's window of lines before it is in no BizIndex
    order, but no line after that window holds a lower BizIndex of its channel than the
    lines before it (that is an error): a channel passed T + 1 s by an event on a line
    before that window, and the snapshot's line is before the bad line. A security with
    events on several channels, or none, is never settled."""
    latest = np.full(K.MAX_SECURITY, -1, np.int64)      # of each security's replayed events
    for t in (depth, trades):
        if len(t):
            by = pa.TableGroupBy(t.select(["ticker", "time"]), "ticker").aggregate([("time", "max")])
            ids = np.array([int(x) for x in by.column("ticker").to_pylist()], np.int64)
            latest[ids] = np.maximum(latest[ids], by.column("time_max").to_numpy().astype(np.int64))
    bad_line = not hasattr(error, "feed_line")
    ends = _by_channel(chan_of, latest)
    if bad_line:
        ends = np.minimum(ends, _by_channel(chan_of, early))
    ends = ends[snap[:, K.S_SECURITY]]
    keep = snap[:, K.S_TIME] + SECOND <= ends
    if bad_line:
        keep &= snap[:, K.S_SEQ] < (error.feed_record or 0)
    return snap[keep]


def audit(path, workers, on_error, replay_class) -> tuple[pa.Table, FeedError | None]:
    """Replay the log (depth and trades) with ``replay_class`` (the engine's Replay, handed
    in: a feed does not import the engine) and compare every snapshot with the rebuilt book.
    Returns the audit and the error of a bad line (the audit then holds the snapshots
    before it: :func:`settled`), or None. A stream is read once, kept in memory for the
    snapshots (a path is read again)."""
    again = path
    if is_stream(path):
        path, again = tee(path)
    replay = replay_class(path, workers=workers, format=NAME, on_error=on_error,
                          tables=("depth", "trades"), levels=LEVELS)
    parts = {"depth": [], "trades": []}
    error = None
    try:
        for table, batch in replay.table_batches():
            parts[table].append(batch)
    except FeedError as e:
        error = e
    depth = pa.Table.from_batches(parts["depth"], replay.schema("depth"))
    trades = pa.Table.from_batches(parts["trades"], replay.schema("trades"))
    bad = error is not None and not hasattr(error, "feed_line")
    snap, chan_of, early = snapshots(again, stop=(error.feed_record or 0) - LOOKAHEAD if bad else 0)
    if error is not None:
        snap = settled(snap, error, depth, trades, chan_of, early)
    return audit_table(snap, depth, trades, replay.path), error


def reader(name: str, path, workers, on_error: str, replay_class) -> pa.RecordBatchReader:
    """The format's extra tables (``FORMAT.tables``): ``audit`` (the rows of the snapshots
    before a bad line, then its error)."""
    t, error = audit(path, workers, on_error, replay_class)

    def batches():
        yield from t.to_batches()
        if error is not None:
            raise error
    return pa.RecordBatchReader.from_batches(t.schema, batches())
