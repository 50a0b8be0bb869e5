"""Merging the workers' BBO rows back into feed order."""

from numba import njit


@njit(cache=True, _nrt=False)
def merge_rows(rows, counts, limit, book_mul, book_add, head, out):
    """k-way merge of rows[w, :counts[w]] (each sorted by seq) into out (columns x rows).

    Rows with seq >= limit are left out; book ids become global
    (book * book_mul[w] + book_add[w]); head (scratch, >= workers) is zeroed here.
    Returns the number of rows written.
    """
    nw = rows.shape[0]
    for w in range(nw):
        head[w] = 0
    n = 0
    while True:
        best = -1
        bseq = limit
        for w in range(nw):
            h = head[w]
            if h < counts[w] and rows[w, h, 0] < bseq:
                bseq = rows[w, h, 0]
                best = w
        if best < 0:
            return n
        h = head[best]
        for c in range(rows.shape[2]):
            out[c, n] = rows[best, h, c]
        out[2, n] = rows[best, h, 2] * book_mul[best] + book_add[best]
        head[best] = h + 1
        n += 1
