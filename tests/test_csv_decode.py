"""The CSV kernels, compiled and as plain Python (``.py_func``)."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels import csv_decode as K
from obook._kernels.layout import (ACT_ADD_ZERO_OK, ACT_DELETE, ACT_EXEC_CLAMP, ACT_PRINT,
                                   ACT_REDUCE_TO, ASK, ERR_DUPLICATE_REF, ERR_UNKNOWN_REF, EV_ACTION,
                                   EV_AUX, EV_BOOK, EV_MATCH, EV_REF, EV_SEQ, EV_TIME, EV_WIDTH, TYPE_SHIFT)
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



def test_decoder_execution_price_column_zero_at_the_orders_price():
    """Every event row's EV_AUX is written: 0, the resting order's price (an E executes
    there), whatever the events array held before (the simulation reads it as a call
    auction's price)."""
    data = b"h\n10,AAA,1,B,5,100\n13,AAA,1,E,2,100\n14,AAA,1,D,0,0\n"
    d = CsvDecoder("x.csv", 0, 1, "raise")
    ev = np.full((8, EV_WIDTH), 777, np.int64)
    res = d.decode(b(data), 1, ev)
    assert res.n_events == 3 and ev[:3, EV_AUX].tolist() == [0, 0, 0]

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
                s = fn(K.decode_lines, mode)(b(data), 0, 1, 5, False, False, ev, d.tk.kernel(), d.ids.kernel(),
                                             d.decoding())
                if s != K.NEED_ROOM:
                    break
                d._grow(int(out[K.O_ROOM]))
        results.append(ev[:out[K.O_EVENTS]].copy())
    assert s == K.ST_OK and np.array_equal(results[0], results[1]) and len(results[0]) == 300


def _mixed_feed(n=700):
    """Lines of every kind (tolerant errors, blanks, trade prints, short lines) across chunks."""
    out = [b"h"]
    for i in range(n):
        k = i % 11
        if k == 3:
            out.append(b"  ")
        elif k == 5:
            out.append(b"%d,T%d,9,X,1,1" % (i, i % 7))
        elif k == 7 and i % 3 == 0:
            out.append(b"%d,T%d,1,B,1,x" % (i, i % 7))
        elif k == 8 and i % 5 == 0:
            out.append(b"short")
        else:
            out.append(b"%d,T%d,%d,%s,%d,%d\r" % (i, i % 7, i % 17, b"BSCEDF"[i % 6:i % 6 + 1], i % 50, i))
    return b"\n".join(out) + b"\n"


def _decode_all(data, worker, workers, mode, prints=False):
    d = CsvDecoder("x", worker, workers, "skip")
    ev = np.zeros((len(data), EV_WIDTH), np.int64)
    out = d.out
    out[:3] = (0, 1, 0)
    with np.errstate(over="ignore"):
        while True:
            s = fn(K.decode_lines, mode)(b(data), worker, workers, 5, True, prints, ev, d.tk.kernel(), d.ids.kernel(),
                                         d.decoding())
            if s != K.NEED_ROOM:
                break
            d._grow(int(out[K.O_ROOM]))
    return s, ev[:out[K.O_EVENTS]].copy(), d.counts.copy(), d.types.copy()


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_decode_lines_chunks_resume_and_partition(workers):
    """Many scan chunks, NEED_ROOM resumes from tiny tables, tolerant counts: jit == py_func,
    and the workers' events together are every decodable line once."""
    data = _mixed_feed()
    seqs, counts, types = [], np.zeros(K.N_ST, np.int64), np.zeros(256, np.int64)
    for w in range(workers):
        got = [_decode_all(data, w, workers, mode) for mode in MODES]
        assert got[0][0] == got[1][0] == K.ST_OK
        for k in (1, 2, 3):
            assert np.array_equal(got[0][k], got[1][k])
        seqs += got[0][1][:, EV_SEQ].tolist()
        counts += got[0][2]
        types += got[0][3]
    lines = data.split(b"\n")
    want = [i + 1 for i, ln in enumerate(lines[1:-1], 1)
            if ln.count(b",") >= 5 and b",X," not in ln and not ln.endswith(b",x")]
    assert sorted(seqs) == want
    well_formed = [ln.split(b",")[3] for ln in lines[1:-1] if ln.count(b",") >= 5 and not ln.endswith(b",x")]
    assert {chr(t): int(n) for t, n in enumerate(types) if n} == {
        t.decode(): well_formed.count(t) for t in set(well_formed)}
    assert counts[K.ST_PRICE_NAN] == sum(ln.endswith(b",x") for ln in lines)
    assert counts[K.ST_FIELDS] == lines.count(b"short")


@pytest.mark.parametrize("mode", MODES)
def test_decode_lines_prints_emit_print_events_with_id_bytes(mode):
    """With ``prints`` the T / X lines become ACT_PRINT events carrying their letter; every
    event's EV_MATCH is its order id's span in the buffer; without, they give no event."""
    data = _mixed_feed()
    s, ev, _, types = _decode_all(data, 0, 1, mode, prints=True)
    s0, ev0, _, types0 = _decode_all(data, 0, 1, mode, prints=False)
    assert np.array_equal(types, types0)
    assert s == s0 == K.ST_OK
    acts = ev[:, EV_ACTION]
    is_print = (acts & 0xFF) == ACT_PRINT
    assert ((acts[is_print] >> TYPE_SHIFT) & 0xFF).tolist() == [ord("X")] * int(is_print.sum())
    assert int(is_print.sum()) == data.count(b",X,")
    rest = [c for c in range(EV_WIDTH) if c != EV_BOOK]    # a print may see a ticker first
    assert np.array_equal(ev[~is_print][:, rest], ev0[:, rest])
    lines = data.split(b"\n")
    for row in ev:
        start, n = int(row[EV_MATCH]) >> 32, int(row[EV_MATCH]) & 0xFFFFFFFF
        assert data[start:start + n] == lines[row[EV_SEQ] - 1].split(b",")[2]


def test_decode_lines_strict_error_mid_chunk_resume_position():
    data = b"h\n" + b"".join(b"%d,A,%d,B,1,1\n" % (i, i) for i in range(100)) + b"1,A,1,Q,1,1\n2,A,x,B,1,1\n"
    d, ev, res = decoder_run(data, rows=200)
    assert res.n_events == 100 and res.error == (102, "unknown message type 'Q'")
    assert d.out[K.O_NEXT] == 102 and d.out[K.O_POS] == data.index(b"1,A,1,Q")


def test_decoder_remaining_shares_up_to_u32_max():
    """The shadow remaining shares (packed beside the key) hold any u32."""
    data = (b"h\n1,A,1,B,4294967295,1\n2,A,1,E,4294967294,1\n3,A,1,C,4294967295,1\n"
            b"4,A,1,E,1,1\n5,A,1,D,0,0\n")
    d, ev, res = decoder_run(data)
    assert res.error is None and len(ev) == 5 and d.st[K.S_IN_TABLE] == 0
    assert ev[:4, EV_REF].tolist() == [ev[0, EV_REF]] * 4 and ev[4, EV_REF] != ev[0, EV_REF]
    assert d.describe(ERR_UNKNOWN_REF, ev[4]) == "unknown order '1'"


@pytest.mark.parametrize("mode", MODES)
def test_parse_short_and_long_paths_agree(mode):
    """Every length around the no-overflow fast paths (9 digits u32, 18 digits u64)."""
    p32, p64 = fn(K.parse_u32, mode), fn(K.parse_u64, mode)
    for n in range(1, 22):
        for text in (b"9" * n, b"1" + b"0" * (n - 1), b"0" * n, b"4" * (n - 1) + b"x", b"/" * n, b":"):
            ok = text.isdigit()
            v = int(text) if ok else None
            want32 = (K.P_OK, v) if ok and v <= 0xFFFFFFFF else ((K.P_RANGE, 0) if ok else (K.P_NAN, 0))
            want64 = (K.P_OK, v - (1 << 64) if v >= 1 << 63 else v) if ok and v < 1 << 64 else \
                ((K.P_RANGE, 0) if ok else (K.P_NAN, 0))
            assert p32(b(text), 0, len(text)) == want32, text
            assert p64(b(text), 0, len(text)) == want64, text


def test_find_commas_word_and_byte_paths_agree():
    """The 8-byte path against a bytewise scan: every offset, line length and buffer end."""
    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(0, 40))
        data = rng.choice(np.array([10, 44, 65, 0, 255, 0x2D, 0x0B, 0x8A, 0xAC], np.uint8), n)
        pos = int(rng.integers(0, n + 1))
        sc = np.full((2, K.SC_WIDTH), -7, np.int64)
        i, nc = K.find_commas(data, pos, sc, 1)
        rest = data[pos:]
        end = pos + (int(np.flatnonzero(rest == 10)[0]) if (rest == 10).any() else len(rest))
        commas = [pos + int(c) for c in np.flatnonzero(data[pos:end] == 44)]
        assert (i, nc) == (end, len(commas))
        assert sc[1, K.SC_C0:K.SC_C0 + min(nc, 6)].tolist() == commas[:6] and (sc[0] == -7).all()


@pytest.mark.parametrize("mode", MODES)
def test_owner_of_is_hash_mod_workers(mode):
    f = fn(K.owner_of, mode)
    for h in (0, 1, 7, 2 ** 63 + 5, 2 ** 64 - 1, 0xAF63DC4C8601EC8C):
        for n in (1, 2, 3, 4, 5, 8, 12):
            assert f(np.uint64(h), n) == h % n


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "py_func"])
def test_count_lf_swar_any_offsets_matches_bytewise_count(compiled):
    f = K.count_lf if compiled else K.count_lf.py_func
    for trial in range(100):
        rng = np.random.default_rng(trial)
        data = rng.integers(0, 256, 600).astype(np.uint8)
        data[data % 5 == 0] = 10
        a = int(rng.integers(0, 300))
        b = int(rng.integers(a, 601))
        with np.errstate(over="ignore"):     # the SWAR multiply wraps on purpose
            assert f(data, a, b) == np.count_nonzero(data[a:b] == 10)
