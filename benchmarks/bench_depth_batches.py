"""The depth table's parent-side steps on real batches: the k-way merge of the workers' rows
(row by row, as obook does, against merging an index and gathering column by column) and
building the Arrow arrays (packbits + astype per level, as before, against the level_counts
kernel). Batches are captured from a 2-worker depth replay of the benchmark day (copied out
of shared memory), then each variant runs over all of them, alternating, CPU time medians.

    python benchmarks/bench_depth_batches.py --messages 5000000 --batches 40 --repeats 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import itch_day  # noqa: E402

from obook._kernels.merge import TABLE_BLOCK, _next_source, level_counts, merge_depth, merge_table  # noqa: E402
from obook.schema import depth_schema  # noqa: E402

LEVELS = 10


@njit(_nrt=False)
def merge_order(rows, counts, limit, head, src):
    """The merged order only: src[i] = worker * rows.shape[1] + row of output row i."""
    for w in range(rows.shape[0]):
        head[w] = 0
    n = 0
    while True:
        best = _next_source(rows, counts, head, limit)
        if best < 0:
            return n
        src[n] = best * rows.shape[1] + head[best]
        head[best] += 1
        n += 1


@njit(_nrt=False)
def merge_rowwise(rows, counts, limit, book_mul, book_add, head, out):
    """merge_table before its blocked version: row by row into 63 column streams."""
    for w in range(rows.shape[0]):
        head[w] = 0
    n = 0
    while True:
        best = _next_source(rows, counts, head, limit)
        if best < 0:
            return n
        h = head[best]
        for c in range(rows.shape[2]):
            out[c, n] = rows[best, h, c]
        out[2, n] = rows[best, h, 2] * book_mul[best] + book_add[best]
        head[best] = h + 1
        n += 1


@njit(_nrt=False)
def merge_order_cols(cols, counts, limit, head, src):
    """The merged order of column-major worker output (cols[w, c, h]; seq is column 0)."""
    for w in range(cols.shape[0]):
        head[w] = 0
    n = 0
    nw = cols.shape[0]
    while True:
        best = -1
        bseq = limit
        for w in range(nw):
            h = head[w]
            if h < counts[w] and cols[w, 0, h] < bseq:
                bseq = cols[w, 0, h]
                best = w
        if best < 0:
            return n
        src[n] = best
        head[best] += 1
        n += 1


@njit(_nrt=False)
def gather_cols(cols, src, n, book_mul, book_add, head, out):
    """out[c, i] = the next row of worker src[i], column by column (each worker's rows are
    read in order: two sequential read streams and one write stream a column)."""
    for c in range(cols.shape[1]):
        for w in range(cols.shape[0]):
            head[w] = 0
        for i in range(n):
            w = src[i]
            out[c, i] = cols[w, c, head[w]]
            head[w] += 1
    for i in range(n):
        w = src[i]
        out[2, i] = out[2, i] * book_mul[w] + book_add[w]


@njit(_nrt=False)
def gather_columns(flat, src, n, block, book_mul, book_add, per, out):
    """out[c, i] = flat[src[i], c], block rows at a time column by column; book made global."""
    for s in range(0, n, block):
        e = min(n, s + block)
        for c in range(flat.shape[1]):
            for i in range(s, e):
                out[c, i] = flat[src[i], c]
        for i in range(s, e):
            w = src[i] // per
            out[2, i] = out[2, i] * book_mul[w] + book_add[w]


@njit(_nrt=False)
def merge_blocked(rows, counts, limit, book_mul, book_add, head, src_w, src_h, out):
    """The k-way merge choosing len(src_w) rows at a time, then copying them column by column."""
    for w in range(rows.shape[0]):
        head[w] = 0
    n = 0
    while True:
        k = 0
        while k < src_w.shape[0]:
            best = _next_source(rows, counts, head, limit)
            if best < 0:
                break
            src_w[k] = best
            src_h[k] = head[best]
            head[best] += 1
            k += 1
        for c in range(rows.shape[2]):
            for i in range(k):
                out[c, n + i] = rows[src_w[i], src_h[i], c]
        for i in range(k):
            out[2, n + i] = out[2, n + i] * book_mul[src_w[i]] + book_add[src_w[i]]
        n += k
        if k < src_w.shape[0]:
            return n


def capture(path, workers: int, batches: int):
    import obook.engine.replay as R
    orig, saved = R.merge_table_batch, []

    def hook(table, rows, counts, limit, book_mul, book_add, *args, **kw):
        if table == "depth" and len(saved) < batches:
            saved.append((rows[:, :int(counts.max())].copy(), counts.copy(), limit, book_mul.copy(),
                          book_add.copy()))
        return orig(table, rows, counts, limit, book_mul, book_add, *args, **kw)

    R.merge_table_batch = hook
    try:
        for _ in R.Replay(path, workers=workers, tables=["depth"], levels=LEVELS).table_batches():
            if len(saved) >= batches:
                break
    finally:
        R.merge_table_batch = orig
    return saved


def _out(rows, counts):
    return np.empty((rows.shape[2], int(counts.sum())), np.int64)


def m_rowwise(rows, counts, limit, bm, ba):
    out = _out(rows, counts)
    return out[:, :merge_rowwise(rows, counts, limit, bm, ba, np.zeros(len(counts), np.int64), out)]


def m_wip(rows, counts, limit, bm, ba):
    out = _out(rows, counts)
    return out[:, :merge_table(rows, counts, limit, bm, ba, np.zeros(len(counts), np.int64),
                               np.empty((2, TABLE_BLOCK), np.int64),
                               np.empty((TABLE_BLOCK, rows.shape[2]), np.int64), out)]


_REUSED = {}


def _out_reused(rows, counts):
    key = rows.shape[2]
    n = int(counts.sum())
    buf = _REUSED.get(key)
    if buf is None or buf.shape[1] < n:
        buf = _REUSED[key] = np.empty((key, n), np.int64)
    return buf


def m_rowwise_reused(rows, counts, limit, bm, ba):
    out = _out_reused(rows, counts)
    return out[:, :merge_rowwise(rows, counts, limit, bm, ba, np.zeros(len(counts), np.int64), out)]


def m_wip_reused(rows, counts, limit, bm, ba):
    out = _out_reused(rows, counts)
    return out[:, :merge_table(rows, counts, limit, bm, ba, np.zeros(len(counts), np.int64),
                               np.empty((2, TABLE_BLOCK), np.int64),
                               np.empty((TABLE_BLOCK, rows.shape[2]), np.int64), out)]


def m_colmajor(cols, counts, limit, bm, ba):
    """Workers writing column-major (cols[w, c, h]): the order, then a gather per column."""
    src = np.empty(int(counts.sum()), np.int64)
    head = np.zeros(len(counts), np.int64)
    n = merge_order_cols(cols, counts, limit, head, src)
    out = np.empty((cols.shape[1], int(counts.sum())), np.int64)
    gather_cols(cols, src, n, bm, ba, head, out)
    return out[:, :n]


def m_index_gather(rows, counts, limit, bm, ba, block=32):
    src = np.empty(int(counts.sum()), np.int64)
    n = merge_order(rows, counts, limit, np.zeros(len(counts), np.int64), src)
    out = _out(rows, counts)
    gather_columns(rows.reshape(-1, rows.shape[2]), src, n, block, bm, ba, rows.shape[1], out)
    return out[:, :n]


def m_index_numpy(rows, counts, limit, bm, ba):
    src = np.empty(int(counts.sum()), np.int64)
    n = merge_order(rows, counts, limit, np.zeros(len(counts), np.int64), src)
    out = np.ascontiguousarray(rows.reshape(-1, rows.shape[2])[src[:n]].T)
    w = src[:n] // rows.shape[1]
    out[2] = out[2] * bm[w] + ba[w]
    return out


def m_blocked(rows, counts, limit, bm, ba, block=32):
    out = _out(rows, counts)
    sw, sh = np.empty(block, np.int64), np.empty(block, np.int64)
    return out[:, :merge_blocked(rows, counts, limit, bm, ba, np.zeros(len(counts), np.int64), sw, sh, out)]


def a_packbits(c):
    n, arrays = c.shape[1], []
    for k in range(2 * LEVELS):
        px, qty, cnt = c[3 + 3 * k], c[4 + 3 * k], c[5 + 3 * k]
        valid = pa.py_buffer(np.packbits(cnt != 0, bitorder="little"))
        arrays += [pa.Array.from_buffers(pa.int64(), n, [valid, pa.py_buffer(np.ascontiguousarray(px))]),
                   pa.Array.from_buffers(pa.int64(), n, [valid, pa.py_buffer(np.ascontiguousarray(qty))]),
                   pa.Array.from_buffers(pa.int32(), n, [valid, pa.py_buffer(cnt.astype(np.int32))])]
    return arrays


def a_level_counts(c):
    n, arrays = c.shape[1], []
    n_orders = np.empty((2 * LEVELS, n), np.int32)
    valid = np.empty((2 * LEVELS, (n + 7) // 8), np.uint8)
    level_counts(c, 5, 3, n, n_orders, valid)
    for k in range(2 * LEVELS):
        v = pa.py_buffer(valid[k])
        arrays += [pa.Array.from_buffers(pa.int64(), n, [v, pa.py_buffer(c[3 + 3 * k])]),
                   pa.Array.from_buffers(pa.int64(), n, [v, pa.py_buffer(c[4 + 3 * k])]),
                   pa.Array.from_buffers(pa.int32(), n, [v, pa.py_buffer(n_orders[k])])]
    return arrays


def d_two_pass(rows, counts, limit, bm, ba):
    """The older way: the merge into 63 int64 columns, then level_counts over the orders."""
    c = m_rowwise(rows, counts, limit, bm, ba)
    n = c.shape[1]
    n_orders = np.empty((2 * LEVELS, n), np.int32)
    valid = np.empty((2 * LEVELS, (n + 7) // 8), np.uint8)
    level_counts(c, 5, 3, n, n_orders, valid)
    return c, n_orders, valid


def d_fused(rows, counts, limit, bm, ba):
    """merge_depth: the Arrow buffers written from the tile in one pass."""
    cap = int(counts.sum())
    out = np.empty((3 + 4 * LEVELS, cap), np.int64)
    n_orders = np.empty((2 * LEVELS, cap), np.int32)
    valid = np.empty((2 * LEVELS, (cap + 7) // 8), np.uint8)
    n = merge_depth(rows, counts, limit, bm, ba, np.zeros(len(counts), np.int64), np.empty((2, TABLE_BLOCK), np.int64),
                    np.empty((TABLE_BLOCK, rows.shape[2]), np.int64), out, n_orders, valid)
    return out[:, :n], n_orders[:, :n], valid[:, :(n + 7) // 8]


def timed(variants, items, repeats, rows):
    res = {k: [] for k in variants}
    for _ in range(repeats):
        for k, f in variants.items():
            t = time.process_time()
            for it in items:
                f(*it)
            res[k].append(time.process_time() - t)
    base = statistics.median(res[next(iter(variants))])
    for k, v in res.items():
        m = statistics.median(v)
        print(f"  {k:<22}{m * 1e9 / rows:8.1f} ns/row  {m / base:5.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5_000_000)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stocks", type=int, default=8000)
    args = ap.parse_args()
    batches = capture(itch_day(args.messages, args.stocks), args.workers, args.batches)
    merged = [m_rowwise(*b) for b in batches]
    colmajor = [(np.ascontiguousarray(b[0].transpose(0, 2, 1)),) + tuple(b[1:]) for b in batches]
    for b, cb, want in zip(batches, colmajor, merged):
        for f in (m_wip, m_index_gather, m_index_numpy, m_blocked, m_rowwise_reused, m_wip_reused):
            assert np.array_equal(f(*b), want), f.__name__
        assert np.array_equal(m_colmajor(*cb), want)
    for b in batches[:5]:
        c, cnt, val = d_two_pass(*b)
        f64, fcnt, fval = d_fused(*b)
        head_px_qty = [0, 1, 2] + [3 + 3 * k + j for k in range(2 * LEVELS) for j in (0, 1)]
        assert np.array_equal(f64, c[head_px_qty]) and np.array_equal(fcnt, cnt) and np.array_equal(fval, val)
    for c in merged[:3]:
        assert pa.RecordBatch.from_arrays(a_packbits(c), names=depth_schema(LEVELS).names[4:]).equals(
            pa.RecordBatch.from_arrays(a_level_counts(c), names=depth_schema(LEVELS).names[4:]))
    rows = sum(c.shape[1] for c in merged)
    print(f"{len(batches)} batches, {rows} depth rows of {batches[0][0].shape[2]} columns")
    print("merge (63 int64 columns a row):")
    timed({"row by row (before)": m_rowwise, "blocked 256 + prefetch": m_wip,
           "row by row, out reused": m_rowwise_reused, "blocked 256, out reused": m_wip_reused,
           "index + gather, 32": m_index_gather, "blocked merge, 32": m_blocked}, batches, args.repeats, rows)
    print("merge of column-major worker rows (transposed beforehand, not timed):")
    res = {"row by row (before)": [], "colmajor: order + gather": []}
    for _ in range(args.repeats):
        t = time.process_time()
        for b in batches:
            m_rowwise(*b)
        res["row by row (before)"].append(time.process_time() - t)
        t = time.process_time()
        for b in colmajor:
            m_colmajor(*b)
        res["colmajor: order + gather"].append(time.process_time() - t)
    base = statistics.median(res["row by row (before)"])
    for k, v in res.items():
        print(f"  {k:<22}{statistics.median(v) * 1e9 / rows:8.1f} ns/row  {statistics.median(v) / base:5.2f}x")
    print("depth buffers (merge + int32 orders + validity bitmaps):")
    timed({"two passes (before)": d_two_pass, "merge_depth (fused)": d_fused}, batches, args.repeats, rows)
    print("Arrow arrays of the 60 level columns:")
    timed({"packbits + astype": a_packbits, "level_counts (kept)": a_level_counts},
          [(c,) for c in merged], args.repeats, rows)


if __name__ == "__main__":
    main()
