"""Tables shaped like Databento's ``mbp-1`` and ``mbp-10`` schemas, built from a replay.

One row per event that changes the top ``levels`` levels of a book (price, size or order
count of a level: the replay's ``depth`` rows, published at the event's F_LAST record) and
one per trade record (action ``T``: Databento's MBP schemas carry trades; fills ``F`` are
MBO-only). The columns are Databento's, with their meaning:

* ``ts_recv``, ``ts_event``, ``publisher_id``, ``instrument_id``, ``action``, ``side``,
  ``price``, ``size``, ``flags``, ``ts_in_delta``, ``sequence``: of the MBO record that
  ends the event (for a trade, the T record); ``rtype`` 1 (mbp-1) or 10 (mbp-10);
* ``depth``: the level (0 = best) of the record's price on its side after the event (before
  it when the level went away; a trade: on the resting side); 0 when it is in neither;
* ``bid_px_NN``, ``ask_px_NN``, ``bid_sz_NN``, ``ask_sz_NN``, ``bid_ct_NN``, ``ask_ct_NN``:
  the book's level NN after the event (a trade: the book it met); an empty level has a
  null price (Databento: UNDEF_PRICE) and size and count 0.

Besides them: ``seq`` (obook's record number, first) and ``symbol`` (the ticker, last,
as ``DBNStore.to_df(map_symbols=True)`` adds it).

The record fields come from the feed's bytes, read once more in step with the replay
(no second book replay); :func:`mbp_batches` takes the replay's ``depth`` and ``trades``
batches, which the engine yields per batch of records in table order.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..._kernels import dbn as K
from ...errors import FeedError
from .metadata import MAGIC, header_length

UINT = {"sz": pa.uint32(), "ct": pa.uint32(), "px": pa.int64()}


def mbp_schema(levels: int) -> pa.Schema:
    fields = [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("ts_recv", pa.uint64(), nullable=False),
        pa.field("ts_event", pa.uint64(), nullable=False),
        pa.field("rtype", pa.uint8(), nullable=False),
        pa.field("publisher_id", pa.uint16(), nullable=False),
        pa.field("instrument_id", pa.uint32(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("side", pa.string(), nullable=False),
        pa.field("depth", pa.uint8(), nullable=False),
        pa.field("price", pa.int64()),
        pa.field("size", pa.uint32(), nullable=False),
        pa.field("flags", pa.uint8(), nullable=False),
        pa.field("ts_in_delta", pa.int32(), nullable=False),
        pa.field("sequence", pa.uint32(), nullable=False),
    ]
    for k in range(levels):
        for col in ("px", "sz", "ct"):
            for side in ("bid", "ask"):
                fields.append(pa.field(f"{side}_{col}_{k:02d}", UINT[col], nullable=col == "px"))   # px: null when the level is empty
    fields.append(pa.field("symbol", pa.string()))
    return pa.schema(fields, metadata={b"obook.table": f"mbp{levels}".encode(),
                                       b"obook.price_scale": b"1000000000"})


class RecordCursor:
    """The feed's records by record number, read in step with a replay (seqs ascending)."""

    def __init__(self, batches: Iterator):
        self.batches = batches
        self.window: deque = deque()      # (base_seq, n_records, bytes, offsets)

    def records(self, seqs: np.ndarray) -> np.ndarray:
        """The MBO records (K.MBO_DTYPE) of the ascending record numbers seqs."""
        last = int(seqs[-1])
        while not self.window or self.window[-1][0] + self.window[-1][1] <= last:
            b = next(self.batches)
            data = np.array(b.data)
            start = 0
            if bytes(data[:3]) == MAGIC:            # a file's header (a batch of no record)
                start = header_length(bytes(data[:8]))
            offsets = np.zeros(max(1, b.n_records), np.int64)
            K.record_offsets(data[start:], b.n_records, offsets)
            offsets += start
            self.window.append((b.base_seq, b.n_records, data, offsets))
        while self.window[0][0] + self.window[0][1] <= int(seqs[0]):
            self.window.popleft()
        pos = np.empty(len(seqs), np.int64)
        parts = []
        for base, n, data, offsets in self.window:
            mine = (seqs >= base) & (seqs < base + n)
            if mine.any():
                pos[mine] = offsets[seqs[mine] - base] + sum(len(p) for p in parts)
                parts.append(data)
        buf = np.concatenate(parts) if len(parts) > 1 else parts[0]
        rows = buf[pos[:, None] + np.arange(K.MBO_SIZE)]
        return np.ascontiguousarray(rows).view(K.MBO_DTYPE).reshape(-1)


def _levels(batch: pa.RecordBatch, levels: int) -> np.ndarray:
    """A depth batch's first ``levels`` levels as (n, 6 * levels) int64 (empty: UNDEF, 0, 0)."""
    n = batch.num_rows
    out = np.empty((n, 6 * levels), np.int64)
    c = 0
    for side in ("bid", "ask"):
        for k in range(1, levels + 1):
            for name, fill in (("px", K.UNDEF_PRICE), ("qty", 0), ("orders", 0)):
                col = batch.column(f"{side}_{name}_{k}")
                out[:, c] = col.fill_null(fill).to_numpy(zero_copy_only=False)
                c += 1
    return out


class MbpBuilder:
    """Turns groups of depth and trade rows into mbp batches, keeping each book's levels."""

    def __init__(self, cursor: RecordCursor, levels: int, path: str = "", locate=None):
        self.cursor = cursor
        self.path = path
        self.locate = locate or (lambda error: error)   # a feed in pieces: the error names its file
        #: a FeedError of the first row whose level size or count is past 2^32 - 1 (Databento's
        #: mbp columns are 32-bit): the batch built stops before it, and the batches end there
        self.error: FeedError | None = None
        self.levels = levels
        self.schema = mbp_schema(levels)
        self.books: dict[int, int] = {}
        self.state = np.zeros((0, 6 * levels), np.int64)

    def _book_index(self, ids: np.ndarray) -> np.ndarray:
        out = np.empty(len(ids), np.int64)
        for i, iid in enumerate(ids.tolist()):
            b = self.books.get(iid)
            if b is None:
                b = self.books[iid] = len(self.books)
            out[i] = b
        if len(self.books) > len(self.state):
            grown = np.empty((max(16, 2 * len(self.books)), self.state.shape[1]), np.int64)
            grown[:, :] = 0
            grown[:, 0::3] = K.UNDEF_PRICE
            grown[:len(self.state)] = self.state
            self.state = grown
        return out

    def build(self, depth: list, trades: list) -> pa.RecordBatch | None:
        L = self.levels
        seqs, ids, symbols, lvs, is_trade = [], [], [], [], []
        for b in depth:
            seqs.append(b.column("seq").to_numpy())
            ids.append(b.column("instrument_id").to_numpy())
            symbols.append(b.column("ticker"))
            lvs.append(_levels(b, L))
            is_trade.append(np.zeros(b.num_rows, bool))
        for b in trades:
            t = b.filter(pa.compute.equal(b.column("kind"), "T"))
            if t.num_rows:
                seqs.append(t.column("seq").to_numpy())
                ids.append(t.column("instrument_id").to_numpy())
                symbols.append(t.column("ticker"))
                lvs.append(np.zeros((t.num_rows, 6 * L), np.int64))
                is_trade.append(np.ones(t.num_rows, bool))
        if not seqs:
            return None
        seq = np.concatenate(seqs)
        order = np.argsort(seq, kind="stable")
        seq = seq[order]
        iid = np.concatenate(ids)[order]
        symbol = pa.chunked_array(symbols).combine_chunks().take(pa.array(order))
        lv = np.concatenate(lvs)[order]
        trade = np.concatenate(is_trade)[order]
        rec = self.cursor.records(seq)
        side_ch = rec["side"].view(np.uint8)
        side = np.where(side_ch == ord("B"), 0, np.where(side_ch == ord("A"), 1, -1)).astype(np.int64)
        n = len(seq)
        out = np.empty((n, 6 * L), np.int64)
        depth_col = np.empty(n, np.int64)
        K.mbp_rows(trade, self._book_index(iid), side, rec["price"].astype(np.int64), lv, self.state,
                   out, depth_col)
        price = rec["price"].astype(np.int64)
        cut = self._past_u32(seq, out)
        arrays = [
            pa.array(seq), pa.array(rec["ts_recv"]), pa.array(rec["ts_event"]),
            pa.array(np.full(n, 1 if L == 1 else 10, np.uint8)), pa.array(rec["publisher_id"]),
            pa.array(rec["instrument_id"]),
            pa.array(rec["action"].astype("U1")), pa.array(rec["side"].astype("U1")),
            pa.array(depth_col.astype(np.uint8)), pa.array(price, mask=price == K.UNDEF_PRICE),
            pa.array(rec["size"]), pa.array(rec["flags"]), pa.array(rec["ts_in_delta"]),
            pa.array(rec["sequence"]),
        ]
        for k in range(L):
            for c, typ in ((0, pa.int64()), (1, pa.uint32()), (2, pa.uint32())):
                for s in range(2):
                    v = out[:, (s * L + k) * 3 + c]
                    if c == 0:
                        arrays.append(pa.array(v, mask=v == K.UNDEF_PRICE))
                    else:      # (a value past 2^32 - 1 is in a row cut off below)
                        arrays.append(pa.array(np.minimum(v, 0xFFFFFFFF).astype(np.uint32)))
        arrays.append(symbol)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema).slice(0, cut)

    def _past_u32(self, seq: np.ndarray, out: np.ndarray) -> int:
        """The number of rows before the first whose level size or count is past 2^32 - 1
        (all of them when none is); that row's error goes in ``error``."""
        counts = np.ones(out.shape[1], bool)
        counts[0::3] = False
        past = (out[:, counts] > 0xFFFFFFFF).any(axis=1)
        if not past.any():
            return len(seq)
        i = int(np.argmax(past))
        cols = np.flatnonzero(counts)
        c = int(cols[np.argmax(out[i, counts] > 0xFFFFFFFF)])
        side, level, what = ("bid", "ask")[c // 3 // self.levels], c // 3 % self.levels, ("size", "count")[c % 3 - 1]
        self.error = self.locate(FeedError(self.path, int(seq[i]), f"the book's {side} level {level:02d} {what} is "
                               f"{int(out[i, c])}, past 2^32 - 1, the most Databento's mbp {what} holds "
                               f"(mbp{self.levels})", unit="record"))
        return i


def mbp_batches(table_batches: Iterable, records: Iterator, levels: int, path: str = "",
                locate=None) -> Iterator[pa.RecordBatch]:
    """The mbp-``levels`` batches of a replay's (table, batch) pairs (tables depth, then
    trades, with ``levels`` levels); ``records``: the feed's framed batches (the engine's
    ``iter_batches`` with a DbnFramer), read again in step for the record fields; ``path``
    names the feed and ``locate`` turns an error of the joined feed into one naming its file."""
    builder = MbpBuilder(RecordCursor(iter(records)), levels, path, locate)
    depth: list = []
    trades: list = []
    try:
        for table, batch in table_batches:
            if table == "depth":
                if depth or trades:    # a new batch of records: every row so far is final
                    out = builder.build(depth, trades)
                    if out is not None:
                        yield out
                    if builder.error is not None:
                        raise builder.error
                    depth, trades = [], []
                depth.append(batch)
            elif table == "trades":
                trades.append(batch)
    except FeedError as e:     # a bad record: the rows of the records before it, then the error
        if e is builder.error:
            raise
        out = builder.build(depth, trades)
        if out is not None:
            yield out
        if builder.error is not None and builder.error.feed_record < (e.feed_record or 0):
            raise builder.error from None
        raise
    out = builder.build(depth, trades)
    if out is not None:
        yield out
    if builder.error is not None:
        raise builder.error


def table_schema(name: str) -> pa.Schema:
    """The schema of one of the format's own tables (``FORMAT.tables``: mbp1, mbp10)."""
    return mbp_schema({"mbp1": 1, "mbp10": 10}[name])
