"""The Shenzhen binary kernels and the book events' order keys (obook._kernels.l2_szse),
compiled and as plain Python."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels import l2_szse as K
from obook.gen.szse import binary_record

PY = pytest.mark.parametrize("py", [False, True], ids=["compiled", "py_func"])
T0 = 20240105093000123


def _f(fn, py):
    return fn.py_func if py else fn


def _order(sec="000001", ch=1, appl=1, px=100_000, qty=300, side=ord("1"), typ=ord("2")):
    return binary_record(dict(MsgType=192, SecurityID=sec, ChannelNo=ch, ApplSeqNum=appl, Price=px,
                              OrderQty=qty, Side=side, OrdType=typ, TransactTime=T0))


def _trade(sec="000001", ch=1, appl=2, bid=1, offer=0, px=100_000, qty=100, ex=ord("F")):
    return binary_record(dict(MsgType=191, SecurityID=sec, ChannelNo=ch, ApplSeqNum=appl, BidApplSeqNum=bid,
                              OfferApplSeqNum=offer, LastPx=px, LastQty=qty, ExecType=ex, TransactTime=T0))


def _snapshot(sec="000001", ch=1):
    return binary_record(dict(MsgType=111, SecurityID=sec, ChannelNo=ch, ApplSeqNum=0))


def _with(rec: bytes, at: int, value: bytes) -> bytes:
    return rec[:at] + value + rec[at + len(value):]


def _heads(data: bytes, py, max_bytes=1 << 30, want=100):
    buf = np.frombuffer(data, np.uint8).copy()
    codes, details, offs = (np.zeros(want, np.int64) for _ in range(3))
    secs = np.zeros(want, np.int32)
    heads = np.zeros((want, K.B_WIDTH), np.int64)
    n, nbytes, r, fits = _f(K.bin_heads, py)(buf, len(buf), want, max_bytes, codes, details, offs, secs, heads)
    return buf, n, nbytes, r, fits, codes[:n], details[:n], offs[:n], secs[:n], heads[:r]


@PY
def test_bin_heads_every_record_coded_and_replayed_ones_head_rows(py):
    recs = [_order(appl=1), _trade(appl=2, bid=1, offer=7), _snapshot(),
            _with(_order(appl=3), 1, bytes([99])),                 # unknown type
            _with(_order(appl=4), 2, (50).to_bytes(2, "little")) + b"\0\0",   # an order of 50 bytes
            _order(sec="00A001", appl=5),                          # bad SecurityID
            _with(_trade(appl=6), 24 + 28, b"X"),                  # bad ExecType
            _order(sec="123456", ch=9, appl=7, px=5),
            _order(appl=8, px=-5), _trade(appl=9, px=-5)]          # negative prices
    buf, n, nbytes, r, fits, codes, details, offs, secs, heads = _heads(b"".join(recs), py)
    assert (n, nbytes, fits) == (10, len(buf), 10)
    assert offs.tolist() == list(np.cumsum([0] + [len(x) for x in recs[:-1]]))
    assert codes.tolist() == [K.OK, K.OK, K.OK, K.BAD_TYPE, K.BAD_LENGTH, K.BAD_VALUE, K.BAD_VALUE, K.OK,
                              K.BAD_VALUE, K.BAD_VALUE]
    assert details.tolist() == [0, 0, 0, 99, 50, K.K_SECID, K.K_EXECTYPE, 0, K.K_PRICE, K.K_LASTPX]
    assert secs.tolist() == [1, 1, -1, -1, -1, -1, -1, 123456, -1, -1]
    # head rows: R_SEQ (the record's index), R_CHAN, R_APPL, R_TYPE, R_SEC, R_BID, R_OFFER
    assert heads.tolist() == [[0, 1, 1, 192, 1, 0, 0], [1, 1, 2, 191, 1, 1, 7], [7, 9, 7, 192, 123456, 0, 0]]


@PY
def test_bin_heads_length_below_header_stops_there_with_bad_length(py):
    data = _order(appl=1) + _with(_order(appl=2), 2, (5).to_bytes(2, "little")) + _order(appl=3)
    _, n, nbytes, r, fits, codes, details, _, _, _ = _heads(data, py)
    assert (n, nbytes, r, fits) == (2, 48, 1, 2)
    assert codes.tolist() == [K.OK, K.BAD_LENGTH] and details[1] == 5


@PY
def test_bin_heads_fits_counts_records_within_max_bytes(py):
    data = _order(appl=1) + _trade(appl=2) + _order(appl=3)      # ends at 48, 112, 160
    assert _heads(data, py, max_bytes=112)[4] == 2
    assert _heads(data, py, max_bytes=111)[4] == 1
    assert _heads(data, py, max_bytes=10)[4] == 0


def _rows(buf, nbytes, secs, worker, n_workers, py):
    rec = np.zeros((len(secs) + 1, K.R_WIDTH), np.int64)
    r = _f(K.bin_rows, py)(buf, nbytes, secs, 10, worker, n_workers, rec)
    return rec[:r]


@PY
def test_bin_rows_fields_and_workers_rows_partition_the_records(py):
    recs = [_order(sec=f"{s:06d}", ch=s % 3, appl=100 + s, px=1000 + s, qty=s, side=ord("2"), typ=ord("U"))
            if s % 2 else _trade(sec=f"{s:06d}", ch=s % 3, appl=100 + s, bid=s, offer=2 * s, px=s, qty=3 * s,
                                 ex=ord("4"))
            for s in range(1, 40)] + [_snapshot(), _order(sec="x")]
    buf, n, nbytes, _, _, _, _, _, secs, heads = _heads(b"".join(recs), py)
    one = _rows(buf, nbytes, secs, 0, 1, py)
    assert one.shape[0] == 39
    assert (one[:, K.R_SEQ] == heads[:, K.R_SEQ] + 10).all() and (one[:, 1:K.B_WIDTH] == heads[:, 1:]).all()
    o, t = one[0], one[1]                           # security 1 (an order), 2 (an execution)
    assert [o[K.R_PRICE], o[K.R_QTY], o[K.R_SIDE], o[K.R_ORDTYPE], o[K.R_TIME], o[K.R_EXEC]] == \
        [1001, 1, ord("2"), ord("U"), K.time_ns(T0), 0]
    assert [t[K.R_LASTPX], t[K.R_LASTQTY], t[K.R_EXEC], t[K.R_TIME], t[K.R_PRICE], t[K.R_BAD]] == \
        [2, 6, ord("4"), K.time_ns(T0), 0, 0]
    for nw in (2, 3):
        parts = [_rows(buf, nbytes, secs, w, nw, py) for w in range(nw)]
        assert all((K.owner_of.py_func(p[:, K.R_SEC], nw) == w).all() for w, p in enumerate(parts) if len(p))
        both = np.concatenate(parts)
        assert (both[np.argsort(both[:, K.R_SEQ])] == one).all()


@PY
def test_bin_count_goes_on_from_a_shorter_buffer_same_count(py):
    data = b"".join(_order(appl=i) if i % 3 else _trade(appl=i) for i in range(1, 30))
    buf = np.frombuffer(data, np.uint8).copy()
    whole = _f(K.bin_count, py)(buf, 0, 0, len(buf), 100)
    k, p = _f(K.bin_count, py)(buf, 0, 0, 1000, 100)
    assert _f(K.bin_count, py)(buf, p, k, len(buf), 100) == whole == (29, len(buf))
    assert _f(K.bin_count, py)(buf, 0, 0, len(buf), 7)[0] == 7
    bad = np.frombuffer(_order() + _with(_order(), 2, b"\x03\x00"), np.uint8).copy()
    assert _f(K.bin_count, py)(bad, 0, 0, len(bad), 100) == (100, 48)


@PY
def test_bin_types_counts_records_not_refused_before_n(py):
    recs = [_order(), _trade(), _snapshot(), _with(_order(), 1, bytes([99])), _order()]
    buf, n, _, _, _, codes, _, offs, _, _ = _heads(b"".join(recs), py)
    counts = np.zeros(256, np.int64)
    _f(K.bin_types, py)(buf, offs, codes, 4, counts)
    assert {int(t): int(counts[t]) for t in np.flatnonzero(counts)} == {111: 1, 191: 1, 192: 1}


@PY
def test_ref_key_distinct_below_direct_index_and_feed_ref_gives_applseqnum_back(py):
    rk = np.zeros(K.RK_WIDTH, np.int64)
    key, back = _f(K.ref_key, py), _f(K.feed_ref, py)
    pairs = [(ch, a) for ch in (0, 1, 2011, 65535) for a in (1, 2, 5, (1 << 20) - 1, 1 << 20, 3 << 20, (1 << 26) - 1)]
    keys = [int(key(rk, ch, a)) for ch, a in pairs]
    assert len(set(keys)) == len(pairs) and all(0 < k < 1 << 32 for k in keys)
    assert [int(back(rk, k)) for k in keys] == [a for _, a in pairs]
    assert [int(key(rk, ch, a)) for ch, a in pairs] == keys      # the same keys again
    assert key(rk, 5, 0) == 0 and back(rk, 0) == 0
    for a in (1 << 26, 1 << 40, -7):                             # beyond the chunks' range
        k = int(key(rk, 1, a))
        assert not 0 < k < 1 << 32 and int(back(rk, k)) == a


@PY
def test_ref_key_no_chunk_left_keys_beyond_direct_index(py):
    rk = np.zeros(K.RK_WIDTH, np.int64)
    key, back = _f(K.ref_key, py), _f(K.feed_ref, py)
    k1 = int(key(rk, 1, 10))
    rk[K.RK_CHUNKS] = K.REF_CHUNKS                               # every chunk handed out
    k2 = int(key(rk, 2, 10))
    assert k1 < 1 << 32 <= k2 and int(back(rk, k2)) == 10
    assert int(key(rk, 1, 11)) == k1 + 1                         # a channel's chunk stays
    rows = np.array([[k1, k2, 0], [k2, 0, k1]], np.int64)
    _f(K.feed_refs, py)(rows, 2, 0, 1, rk)
    assert rows.tolist() == [[10, 10, 0], [10, 0, k1]]


@PY
def test_time_ns_any_int64_equals_the_decimal_formula(py):
    """TransactTime YYYYMMDDHHMMSSsss to ns since midnight, in 32-bit steps: the same as the
    plain formula for every int64 (a binary record's u64 may be anything)."""
    def plain(t):
        t = t % 1_000_000_000
        s = (t // 10_000_000) * 3600 + ((t // 100_000) % 100) * 60 + (t // 1000) % 100
        return ((s * 1000 + t % 1000) * 1_000_000 + 2**63) % 2**64 - 2**63   # int64 wrap-around

    rng = np.random.default_rng(3)
    vals = [0, -1, T0, 20241231235959999, 999_999_999, 10**9, 2**63 - 1, -2**63]
    vals += [int(v) for v in rng.integers(-2**63, 2**63 - 1, 300)] + [int(v) for v in rng.integers(0, 10**18, 300)]
    fn = _f(K.time_ns, py)
    assert [int(fn(np.int64(v))) for v in vals] == [plain(v) for v in vals]
