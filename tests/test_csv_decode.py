"""The CSV kernels, compiled and as plain Python (``.py_func``)."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels import csv_decode as K
from obook._kernels.layout import (ACT_ADD_ZERO_OK, ACT_DELETE, ACT_EXEC_CLAMP, ACT_REDUCE_TO, ASK,
                                   ERR_DUPLICATE_REF, ERR_UNKNOWN_REF, EV_ACTION, EV_BOOK, EV_REF,
                                   EV_SEQ, EV_TIME, EV_WIDTH)
from obook.feeds.csv import CsvDecoder

MODES = ["jit", "py"]


def fn(f, mode):
    return f if mode == "jit" else f.py_func


def b(s: bytes) -> np.ndarray:
    return np.frombuffer(s, np.uint8)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("text,want", [
    (b"0", (K.P_OK, 0)), (b"007", (K.P_OK, 7)), (b"4294967295", (K.P_OK, 4294967295)),
    (b"4294967296", (K.P_RANGE, 0)), (b"99999999999999999999999", (K.P_RANGE, 0)),
    (b"", (K.P_NAN, 0)), (b"-1", (K.P_NAN, 0)), (b"1 ", (K.P_NAN, 0)), (b"99999999999x", (K.P_NAN, 0)),
])
def test_parse_u32_values_and_limits_expected(mode, text, want):
    assert fn(K.parse_u32, mode)(b(text), 0, len(text)) == want


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("text,want", [
    (b"18446744073709551615", (K.P_OK, -1)), (b"9223372036854775808", (K.P_OK, -(1 << 63))),
    (b"18446744073709551616", (K.P_RANGE, 0)), (b"18446744073709551620", (K.P_RANGE, 0)),
    (b"00000000000000000000001", (K.P_OK, 1)), (b"+5", (K.P_NAN, 0)),
])
def test_parse_u64_values_and_limits_expected(mode, text, want):
    assert fn(K.parse_u64, mode)(b(text), 0, len(text)) == want


@pytest.mark.parametrize("mode", MODES)
def test_frame_lines_cuts_at_last_newline(mode):
    f = fn(K.frame_lines, mode)
    data = b(b"a\nbb\nccc")
    assert f(data, False, 100) == (2, 5)
    assert f(data, True, 100) == (3, 8)
    assert f(data, True, 1) == (1, 2)
    assert f(b(b""), True, 10) == (0, 0)
    assert f(b(b"abc"), False, 10) == (0, 0)


@pytest.mark.parametrize("mode", MODES)
def test_frame_lines_long_buffer_matches_count(mode):
    rng = np.random.default_rng(1)
    data = rng.choice(np.array([10, 44, 65, 66], np.uint8), 50_000)
    nl = np.flatnonzero(data == 10)
    f = fn(K.frame_lines, mode)
    for m in (1, 7, 1000, len(nl), 10 ** 9):
        lines, end = f(data, False, m)
        assert lines == min(m, len(nl)) and end == nl[lines - 1] + 1


@pytest.mark.parametrize("mode", MODES)
def test_is_blank_whitespace_only_true(mode):
    f = fn(K.is_blank, mode)
    assert f(b(b" \t\r\x0b\x0c"), 0, 5) and f(b(b""), 0, 0) and not f(b(b" x "), 0, 3)


def test_fnv1a_known_vector_expected():
    assert K.fnv1a(b(b"a"), 0, 1) == 0xAF63DC4C8601EC8C
    assert K.fnv1a(b(b""), 0, 0) == 0xCBF29CE484222325


@pytest.mark.parametrize("mode", MODES)
def test_table_insert_remove_keeps_every_key_findable(mode):
    """Random inserts and backward-shift removals on a tiny table (long and short keys)."""
    rng = np.random.default_rng(3)
    tab = np.zeros((64, K.T_WIDTH), np.int64)
    tab[:, K.T_KEY] = -1
    keys = np.zeros((64, K.K_WIDTH), np.int64)
    arena = np.zeros(1 << 14, np.uint8)
    texts = [(b"id%d" % i) * (1 + i % 5) for i in range(40)]
    find, put, remove, row_of = (fn(K.table_find, mode), fn(K.table_put, mode),
                                 fn(K.table_remove, mode), fn(K.table_row_of, mode))
    live, used = {}, 0
    with np.errstate(over="ignore"):
        for step in range(400):
            i = int(rng.integers(len(texts)))
            t = b(texts[i])
            h = K.mix(np.uint64(K.fnv1a(t, 0, len(t))), 0)
            p = K.prefix8(t, 0, len(t))
            r, found = find(tab, arena, keys, h, 0, p, t, 0, len(t))
            assert found == (i in live)
            if found:
                assert tab[r, K.T_KEY] == live[i] and row_of(tab, keys, live[i]) == r
                remove(tab, r)
                del live[i]
            elif len(live) < 30:
                k = min(set(range(64)) - set(live.values()))
                used = put(tab, arena, keys, used, r, k, h, 0, p, t, 0, len(t))
                live[i] = k


def decoder_run(data: bytes, workers=1, worker=0, on_error="raise", rows=64):
    d = CsvDecoder("x.csv", worker, workers, on_error)
    ev = np.zeros((rows, EV_WIDTH), np.int64)
    res = d.decode(b(data), 1, ev)
    return d, ev[:res.n_events], res


def test_decoder_actions_and_books_expected():
    data = (b"h\n10,AAA,1,B,5,100\n11,BBB,1,S,6,101\n12,AAA,1,C,2,0\n13,AAA,1,E,9,0\n"
            b"14,BBB,1,T,1,1\n15,BBB,1,D,0,0\n16,BBB,1,F,0,0\n")
    d, ev, res = decoder_run(data)
    assert res.error is None and res.names == [(0, "AAA"), (1, "BBB")]
    assert ev[:, EV_SEQ].tolist() == [2, 3, 4, 5, 7, 8]
    assert ev[:, EV_TIME].tolist() == [10, 11, 12, 13, 15, 16]
    assert ev[:, EV_BOOK].tolist() == [0, 1, 0, 0, 1, 1]
    assert (ev[:, EV_ACTION] & 0xFF).tolist() == [ACT_ADD_ZERO_OK, ACT_ADD_ZERO_OK, ACT_REDUCE_TO,
                                                   ACT_EXEC_CLAMP, ACT_DELETE, ACT_DELETE]
    assert ev[1, EV_ACTION] >> 8 == ASK
    assert ev[0, EV_REF] != ev[1, EV_REF]                      # '1' of AAA is not '1' of BBB
    assert d.describe(ERR_UNKNOWN_REF, ev[5]) == "unknown order '1'"
    assert d.describe(ERR_DUPLICATE_REF, ev[0]) == "duplicate order '1'"


def test_decoder_workers_partition_lines_once():
    lines = [b"%d,T%d,%d,B,1,1" % (i, i % 37, i) for i in range(500)]
    data = b"h\n" + b"\n".join(lines) + b"\nshort\n"
    seqs, errors = [], []
    for w in range(3):
        d, ev, res = decoder_run(data, 3, w, rows=600)
        seqs += ev[:, EV_SEQ].tolist()
        assert d.book_mul == 3 and d.book_add == w
        errors.append(res.error)
    assert sorted(seqs) == list(range(2, 502))
    assert errors == [(502, "expected at least 6 fields, got 1"), None, None]


def test_decoder_dead_keys_are_reused_after_a_batch():
    d = CsvDecoder("x.csv", 0, 1)
    ev = np.zeros((8, EV_WIDTH), np.int64)
    d.decode(b(b"h\n1,A,x,B,1,1\n2,A,x,D,1,1\n"), 1, ev)
    for i in range(200):
        res = d.decode(b(b"%d,A,%d,B,1,1\n%d,A,%d,E,5,1\n" % (i, i, i, i)), 3 + 2 * i, ev)
        assert res.n_events == 2
    assert d.st[K.S_KEYS_HIGH] <= 3 and d.st[K.S_IN_TABLE] <= 2


def test_decoder_grows_tables_from_tiny_and_matches():
    lines = b"".join(b"%d,T%d,id-number-%d,B,1,1\n" % (i, i % 301, i) for i in range(3000))
    d, ev, res = decoder_run(b"h\n" + lines, rows=3000)
    assert res.n_events == 3000 and len(res.names) == 301
    assert len(set(ev[:, EV_REF].tolist())) == 3000
    assert d.order_id(ev[2999, EV_REF]) == "id-number-2999"


def test_decoder_tolerant_counts_kinds():
    data = b"h\n1,A,1,B,1\nx,A,1,B,1,1\n1,A,1,Q,1,1\n1,A,1,B,1,99999999999\n1,A,1,B,1,1\n"
    d, ev, res = decoder_run(data, on_error="skip")
    assert res.error is None and len(ev) == 1
    assert d.skipped == {"expected at least 6 fields": 1, "time is not an unsigned integer": 1,
                         "unknown message type": 1, "price out of range": 1}


def test_decode_lines_py_func_matches_jit():
    data = b"h\n" + b"".join(b"%d,T%d,%d,%s,%d,%d\r\n" % (i, i % 5, i % 13, b"BSCEDF"[i % 6:i % 6 + 1], i, i)
                             for i in range(300))
    results = []
    for mode in MODES:
        d = CsvDecoder("x", 0, 1)
        ev = np.zeros((400, EV_WIDTH), np.int64)
        out = d.out
        out[:3] = (0, 1, 0)
        with np.errstate(over="ignore"):
            while True:
                s = fn(K.decode_lines, mode)(b(data), 0, 1, False, ev, d.tk.tab, d.tk.keys, d.tk.arena,
                                             d.ids.tab, d.ids.keys, d.ids.arena, d.free, d.pend,
                                             d.st, d.counts, out, np.zeros(6, np.int64))
                if s != K.NEED_ROOM:
                    break
                d._grow(int(out[K.O_ROOM]))
        results.append(ev[:out[K.O_EVENTS]].copy())
    assert s == K.ST_OK and np.array_equal(results[0], results[1]) and len(results[0]) == 300
