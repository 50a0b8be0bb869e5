"""Parquet data for nullable integer columns, written without Arrow's column writer: the
depth table's 60 level columns (obook.parquet_levels), where Arrow's writer spent ~2.5 ms a
column of 152,303 rows (16 ns a value: definition levels, dictionary, index runs), about
three quarters of a depth convert's CPU (benchmarks/bench_parquet_levels.py).

Each column: ``compact`` gives its definition levels (one byte a row) and its valid values,
then ``dict_dense`` their dictionary (as Arrow makes it: values in order of first
appearance) for the dictionary-encoded columns; ``level_sections`` encodes the levels of
each data page, and ``page_bodies`` writes the uncompressed bodies of its data pages
(format v1: the definition levels with their 4-byte length, then the dictionary indices'
bit width and runs, the BYTE_STREAM_SPLIT bytes or the PLAIN bytes), each one's end in
``ends``. Runs are Parquet's RLE / bit-packing hybrid (``rle_runs``).
"""

import numpy as np

from .jit import njit

#: page_bodies' value modes
DICT_INDICES, BYTE_SPLIT, PLAIN = 0, 1, 2
#: the multiplier of the dictionary's hash (Fibonacci hashing)
_GOLDEN = 0x9E3779B97F4A7C15


@njit(cache=True, nogil=True, inline="always")
def _bits(mask):
    """The bits of a mask 2**k - 1 (k)."""
    k = 0
    while mask > 0:
        mask >>= 1
        k += 1
    return k


@njit(cache=True, nogil=True, inline="always")
def _valid8(valid, bit):
    """The 8 validity bits from bit ``bit`` of an Arrow bitmap (0xFF without one)."""
    if valid.shape[0] == 0:
        return 0xFF
    q = bit >> 3
    r = bit & 7
    x = np.int64(valid[q]) >> r
    if r and q + 1 < valid.shape[0]:
        x |= np.int64(valid[q + 1]) << (8 - r)
    return x & 0xFF


@njit(cache=True, nogil=True)
def dict_dense(values, a, b, keys, slots, dictionary, n_dict, indices):
    """Dictionary-encode values[a:b] (the valid values, from ``compact``: hashing them apart
    from the validity bits, with no branch on it, takes half the time where many rows are
    null), adding to a dictionary of n_dict entries in order of first appearance;
    indices[a:b] receive their entries. ``keys`` and ``slots`` (int32, -1 free) are the
    open-addressing table, a power of two long, kept at most half full. Returns n_dict, or
    -1 when a new value would not fit ``dictionary``, -2 when the table would be more than
    half full (start again with a larger one)."""
    mask = keys.shape[0] - 1
    shift = np.uint64(64 - _bits(mask))
    for i in range(a, b):
        k = _entry(values[i], keys, slots, mask, shift, dictionary, n_dict)
        if k < 0:
            return k
        n_dict = max(n_dict, k + 1)
        indices[i] = k
    return n_dict


@njit(cache=True, nogil=True, inline="always")
def _entry(v, keys, slots, mask, shift, dictionary, n_dict):
    """The dictionary entry of v, added as entry n_dict when new; -1: the dictionary is
    full, -2: the table would be more than half full."""
    s = np.int64((np.uint64(v) * np.uint64(_GOLDEN)) >> shift)
    while True:
        k = slots[s]
        if k < 0:
            if n_dict == dictionary.shape[0]:
                return -1
            if 2 * (n_dict + 1) > keys.shape[0]:
                return -2
            slots[s] = n_dict
            keys[s] = v
            dictionary[n_dict] = v
            return n_dict
        if keys[s] == v:
            return k
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def compact(values, valid, vbit, n, out, n_out, defs, n_defs):
    """values[:n]'s definition levels (1 valid, 0 null) to defs[n_defs ...] and its valid
    values, in order, to out[n_out ...] (out has room for n_out + n); returns the new n_out.
    ``valid``: the Arrow validity bitmap of the values (row i's bit at vbit + i; an empty
    array: all valid)."""
    full = n - n % 8
    for i0 in range(0, full, 8):
        bits = _valid8(valid, vbit + i0)
        if bits == 0xFF:
            for j in range(8):
                defs[n_defs + i0 + j] = 1
                out[n_out + j] = values[i0 + j]
            n_out += 8
            continue
        for j in range(8):
            ok = (bits >> j) & 1
            defs[n_defs + i0 + j] = ok
            out[n_out] = values[i0 + j]       # kept only when valid: no branch
            n_out += ok
    bits = _valid8(valid, vbit + full) if full < n else 0
    for j in range(n - full):
        ok = (bits >> j) & 1
        defs[n_defs + full + j] = ok
        out[n_out] = values[full + j]
        n_out += ok
    return n_out


@njit(cache=True, nogil=True, inline="always")
def _varint(out, pos, v):
    while v >= 0x80:
        out[pos] = (v & 0x7F) | 0x80
        v >>= 7
        pos += 1
    out[pos] = v
    return pos + 1


@njit(cache=True, nogil=True)
def rle_runs(vals, a, b, bit_width, out, pos):
    """vals[a:b] in Parquet's RLE / bit-packing hybrid (bit_width bits a value) at out[pos:];
    returns the end. A value repeated 8 times or more from a group's start is a run, and so
    are the last values when they are all one value; the rest is bit-packed in groups of 8
    (the last padded with zeros), at most 63 groups a header (one byte). These are the runs
    Arrow's RleEncoder writes, byte for byte."""
    width_bytes = (bit_width + 7) // 8
    i = a
    while i < b:
        v = vals[i]
        j = i + 1
        while j < b and vals[j] == v:
            j += 1
        if j - i >= 8 or j == b:
            pos = _varint(out, pos, np.int64(j - i) << 1)
            x = np.int64(v)
            for k in range(width_bytes):
                out[pos] = (x >> (8 * k)) & 0xFF
                pos += 1
            i = j
            continue
        head = pos
        pos += 1
        groups = 0
        while True:
            acc = np.uint64(0)
            held = 0
            for k in range(8):
                x = np.uint64(vals[i + k]) if i + k < b else np.uint64(0)
                acc |= x << np.uint64(held)
                held += bit_width
                while held >= 8:
                    out[pos] = acc & np.uint64(0xFF)
                    pos += 1
                    acc >>= np.uint64(8)
                    held -= 8
            i += 8
            groups += 1
            if i >= b or groups == 63:
                break
            v = vals[i]
            j = i + 1
            while j < b and j - i < 8 and vals[j] == v:
                j += 1
            if j - i >= 8:
                break
        out[head] = (groups << 1) | 1
    return pos


@njit(cache=True, nogil=True)
def level_sections(defs, n, page_rows, out, ends, counts):
    """The definition levels of the data pages of rows [0, n), page_rows rows a page: each
    page's levels (defs, RLE) with their 4-byte length, one after another in ``out``; page
    p's end at ends[p] and its valid values' count at counts[p]. Returns the page count.
    (The three columns of a depth level share one validity bitmap: their pages share this.)"""
    pos = 0
    p = 0
    for a in range(0, n, page_rows):
        b = min(n, a + page_rows)
        start = pos + 4
        pos = rle_runs(defs, a, b, 1, out, start)
        size = pos - start
        for k in range(4):
            out[start - 4 + k] = (size >> (8 * k)) & 0xFF
        m = 0
        for i in range(a, b):
            m += np.int64(defs[i])
        ends[p] = pos
        counts[p] = m
        p += 1
    return p


@njit(cache=True, nogil=True)
def page_bodies(levels, level_ends, counts, pages, vals, raw, width, mode, out, ends):
    """The uncompressed bodies of a column's data pages, one after another in ``out`` (page
    p's end at ends[p]): the page's definition levels (``level_sections``), then its valid
    values: mode DICT_INDICES, their indices ``vals`` (a bit-width byte, then runs; the
    width of the dictionary's entries up to the page, as Arrow writes it); BYTE_SPLIT,
    ``raw`` (the values' bytes, ``width`` a value) split into byte streams; PLAIN, ``raw``
    as it is."""
    pos = 0
    v0 = 0
    top = 0       # dictionary entries used up to this page
    a = 0
    for p in range(pages):
        for i in range(a, level_ends[p]):
            out[pos + i - a] = levels[i]
        pos += level_ends[p] - a
        a = level_ends[p]
        m = counts[p]
        if mode == DICT_INDICES:
            for i in range(v0, v0 + m):
                top = max(top, np.int64(vals[i]) + 1)
            bits = _bits(top - 1) if top > 1 else top      # the dictionary's size so far, as Arrow
            out[pos] = bits
            pos = rle_runs(vals, v0, v0 + m, bits, out, pos + 1)
        elif mode == BYTE_SPLIT:
            for k in range(width):
                for i in range(m):
                    out[pos + k * m + i] = raw[(v0 + i) * width + k]
            pos += width * m
        else:
            for i in range(m * width):
                out[pos + i] = raw[v0 * width + i]
            pos += width * m
        v0 += m
        ends[p] = pos
