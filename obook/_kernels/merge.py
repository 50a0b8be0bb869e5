"""Merging the workers' BBO rows back into feed order, straight into Arrow-ready columns."""

from collections import namedtuple

import numpy as np
from .jit import njit
from .prefetch import prefetch
from .layout import (DEPTH_HEAD, DEPTH_LEVEL_WIDTH, DP_ORDERS, DP_PX, DP_QTY, ROW_ASK_PX, ROW_BID_N, ROW_BID_PX,
                     ROW_BID_QTY, ROW_BOOK, ROW_SEQ, ROW_TIME)

#: every table's row starts (seq, time, book) (layout.py declares them), so ROW_SEQ and
#: ROW_BOOK name those columns of any table's rows; a side's bbo columns are SIDE_STEP apart
SIDE_STEP = ROW_ASK_PX - ROW_BID_PX
#: the bbo columns merge_rows writes: seq, time, global book (>= rows each); price, shares and
#: orders (2, >= rows: bid, ask); the sides' Arrow validity bitmaps (2, bytes)
BboColumns = namedtuple("BboColumns", ("seq", "time", "book", "px", "qty", "n_orders", "valid"))


@njit(cache=True, _nrt=False, inline="always")
def _next_source(rows, counts, head, limit):
    """The worker whose next row has the smallest seq (< limit), or -1 when none is left."""
    best = -1
    bseq = limit
    for w in range(rows.shape[0]):
        h = head[w]
        if h < counts[w] and rows[w, h, ROW_SEQ] < bseq:
            bseq = rows[w, h, ROW_SEQ]
            best = w
    return best


@njit(cache=True, _nrt=False, nogil=True)
def merge_rows(rows, counts, limit, book_mul, book_add, head, cols):
    """k-way merge of rows[w, :counts[w]] (each sorted by seq) into the BboColumns cols.

    Rows with seq >= limit are left out; book ids become global (book * book_mul[w] +
    book_add[w]); a side is valid when it has orders. head is scratch (>= workers).
    Returns the number of rows written.
    """
    seq, time, book, px, qty, n_orders, valid = cols
    nw = rows.shape[0]
    for w in range(nw):
        head[w] = 0
    for b in range(valid.shape[1]):
        valid[0, b] = 0
        valid[1, b] = 0
    n = 0
    while True:
        best = _next_source(rows, counts, head, limit)
        if best < 0:
            return n
        h = head[best]
        seq[n] = rows[best, h, ROW_SEQ]
        time[n] = rows[best, h, ROW_TIME]
        book[n] = rows[best, h, ROW_BOOK] * book_mul[best] + book_add[best]
        for s in range(2):
            c = rows[best, h, ROW_BID_N + SIDE_STEP * s]
            px[s, n] = rows[best, h, ROW_BID_PX + SIDE_STEP * s]
            qty[s, n] = rows[best, h, ROW_BID_QTY + SIDE_STEP * s]
            n_orders[s, n] = c
            if c != 0:
                valid[s, n >> 3] |= np.uint8(1 << (n & 7))
        head[best] = h + 1
        n += 1


@njit(cache=True, _nrt=False, nogil=True)
def names_nbytes(book, n, name_len):
    """The bytes gather_names writes for book[:n] (unknown books: none)."""
    total = 0
    for i in range(n):
        k = book[i]
        if 0 <= k < name_len.shape[0] and name_len[k] > 0:
            total += name_len[k]
    return total


@njit(cache=True, _nrt=False, nogil=True)
def gather_names(book, n, name_off, name_len, arena, offsets, data, valid):
    """Arrow string column of the names of book[:n] (name_len < 0: unknown, null).

    offsets (int32, n + 1) and data (uint8, large enough) are written; valid gets
    the validity bitmap. Returns the bytes of data used.
    """
    for b in range(valid.shape[0]):
        valid[b] = 0
    pos = 0
    offsets[0] = 0
    for i in range(n):
        k = book[i]
        if 0 <= k < name_len.shape[0] and name_len[k] >= 0:
            ln = name_len[k]
            o = name_off[k]
            for j in range(ln):
                data[pos + j] = arena[o + j]
            pos += ln
            valid[i >> 3] |= np.uint8(1 << (i & 7))
        offsets[i + 1] = pos
    return pos


#: rows merge_table gathers before writing them out column by column
TABLE_BLOCK = 256
#: how far ahead, in a worker's rows, merge_table prefetches the row it will compare next
_AHEAD = 16


@njit(cache=True, _nrt=False, nogil=True)
def _pick_block(rows, counts, limit, head, pick):
    """The next rows in seq order (< limit): pick[0, i] the worker, pick[1, i] its row, for up
    to pick.shape[1] rows; returns their count. Wide rows (a depth row is 8 cache lines)
    from workers taken in no fixed pattern defeat the hardware prefetcher: each pick
    prefetches the row _AHEAD further on in its worker, whose seq a later pick compares."""
    m = 0
    n_rows, width = rows.shape[1], rows.shape[2]
    while m < pick.shape[1]:
        best = _next_source(rows, counts, head, limit)
        if best < 0:
            break
        h = head[best]
        pick[0, m] = best
        pick[1, m] = h
        head[best] = h + 1
        if h + _AHEAD < n_rows:
            prefetch(rows, (best * n_rows + h + _AHEAD) * width)
        m += 1
    return m


@njit(cache=True, _nrt=False, inline="always")
def _gather(rows, pick, m, book_mul, book_add, tile):
    """The m picked rows whole into tile[:m], their book (column 2) made global."""
    for i in range(m):
        w, h = pick[0, i], pick[1, i]
        for c in range(rows.shape[2]):
            tile[i, c] = rows[w, h, c]
        tile[i, ROW_BOOK] = tile[i, ROW_BOOK] * book_mul[w] + book_add[w]


@njit(cache=True, _nrt=False, nogil=True)
def merge_table(rows, counts, limit, book_mul, book_add, head, pick, tile, out):
    """k-way merge of rows[w, :counts[w]] (sorted by column 0, seq) into out (columns x rows),
    leaving out rows with seq >= limit; column 2 (book) becomes global. Returns the count.

    Block by block (pick: (2, B) and tile: (B, >= columns) scratch; head: >= workers): the
    block's rows are copied whole into tile, then written out a few columns at a time (as
    fast as a row by row copy on real batches, 1.05x; it is merge_depth's structure, which
    is faster: benchmarks/bench_depth_batches.py)."""
    for w in range(rows.shape[0]):
        head[w] = 0
    width = rows.shape[2]
    n = 0
    while True:
        m = _pick_block(rows, counts, limit, head, pick)
        if m == 0:
            return n
        _gather(rows, pick, m, book_mul, book_add, tile)
        for c0 in range(0, width, 4):
            for i in range(m):
                for c in range(c0, min(c0 + 4, width)):
                    out[c, n + i] = tile[i, c]
        n += m


@njit(cache=True, _nrt=False, nogil=True)
def merge_depth(rows, counts, limit, book_mul, book_add, head, pick, tile, out, orders, valid):
    """merge_table for depth rows (seq, time, book, then per level price, shares, orders),
    writing the columns as Arrow takes them: out (3 + 2 * levels, >= rows) gets seq, time,
    the global book and each level's price and shares (level k at 3 + 2k, 4 + 2k); orders
    (levels, >= rows) the orders counts as int32, and valid (levels, >= (rows + 7) // 8) one
    validity bitmap a level (valid when it has orders), shared by its three columns. Returns
    the count. Scratch as merge_table's (pick: (2, B), tile: (B, >= row width)); the orders
    columns are converted and their bits set while they are in the tile, so no later pass
    reads them again (benchmarks/bench_depth_batches.py)."""
    for w in range(rows.shape[0]):
        head[w] = 0
    n = 0
    while True:
        m = _pick_block(rows, counts, limit, head, pick)
        if m == 0:
            return n
        _gather(rows, pick, m, book_mul, book_add, tile)
        for i in range(m):
            for c in range(DEPTH_HEAD):
                out[c, n + i] = tile[i, c]
        for k in range(orders.shape[0]):
            src = DEPTH_HEAD + DEPTH_LEVEL_WIDTH * k
            bits = valid[k, n >> 3] if n & 7 else 0     # a byte the block before began
            for i in range(m):
                p = n + i
                out[DEPTH_HEAD + 2 * k, p] = tile[i, src + DP_PX]
                out[DEPTH_HEAD + 1 + 2 * k, p] = tile[i, src + DP_QTY]
                v = tile[i, src + DP_ORDERS]
                orders[k, p] = v
                bits |= (v != 0) << (p & 7)
                if p & 7 == 7:
                    valid[k, p >> 3] = bits
                    bits = 0
            if (n + m) & 7:
                valid[k, (n + m) >> 3] = bits
        n += m


@njit(cache=True, _nrt=False, nogil=True)
def level_counts(cols, first, step, n, counts, valid):
    """The orders columns of merged depth rows as Arrow wants them, in one pass: level k's
    column is cols[first + step * k, :n]; counts[k, :n] receives it as int32 and valid[k]
    its validity bitmap (a level is valid when it has orders), shared by the level's price
    and shares. Returns n. (The depth batches now come from merge_depth, which does this
    while it merges; this two-pass form is its reference in tests and benchmarks.)"""
    full = n >> 3
    for k in range(counts.shape[0]):
        row = first + step * k
        for b in range(full):
            bits = 0
            for j in range(8):
                v = cols[row, 8 * b + j]
                counts[k, 8 * b + j] = v
                bits |= (v != 0) << j
            valid[k, b] = bits
        bits = 0
        for i in range(8 * full, n):
            v = cols[row, i]
            counts[k, i] = v
            bits |= (v != 0) << (i & 7)
        if n & 7:
            valid[k, full] = bits
    return n
