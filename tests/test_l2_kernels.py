"""The AX-SBE text kernels (obook._kernels.l2_text), compiled and as plain Python."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels import l2_text as T

PY = pytest.mark.parametrize("py", [False, True], ids=["compiled", "py_func"])


def _f(fn, py):
    return fn.py_func if py else fn


def _buf(text: bytes) -> np.ndarray:
    return np.frombuffer(text, np.uint8).copy()


@PY
@pytest.mark.parametrize("final", [False, True])
def test_line_ends_every_newline_and_last_line_only_when_final(py, final):
    text = b"//a=1\n\n" + b"x" * 37 + b"\n\x0b\n" + b"//b=2 c=3"   # 0x0b after a newline: a false candidate
    ends = np.zeros(10, np.int64)
    k = _f(T.line_ends, py)(_buf(text), 0, len(text), final, ends, 0, 10)
    want = [i for i, c in enumerate(text) if c == 10] + ([len(text)] if final else [])
    assert ends[:k].tolist() == want


@PY
def test_line_ends_continues_and_stops_at_max_lines(py):
    text = b"".join(b"//k=%d\n" % i for i in range(30))
    buf, ends = _buf(text), np.zeros(40, np.int64)
    k = _f(T.line_ends, py)(buf, 0, len(text), False, ends, 0, 7)
    assert k == 7
    k = _f(T.line_ends, py)(buf, int(ends[6]) + 1, len(text), False, ends, 7, 40)
    assert ends[:k].tolist() == [i for i, c in enumerate(text) if c == 10]


def _parse(line: bytes, py, stop=-1):
    vals, have = np.zeros(T.N_KEYS, np.int64), np.zeros(T.N_KEYS, np.int8)
    st, pos = _f(T.parse_line, py)(_buf(line), 0, len(line), T.KHASH, T.KID, vals, have, stop)
    return st, pos, {k: (int(vals[i]) if have[i] > 0 else None) for k, i in T.KEYS.items() if have[i]}


@PY
def test_parse_line_known_keys_values_and_bad_numbers(py):
    line = (b"//SecurityIDSource=102 MsgType=192   Unknown=zz SecurityID=000001 Price=-15 "
            b"OrderQty=12x TransactTime=20240105093000123 BidLevel[9].Price=99999999999999999999 "
            b"AskLevel[0].Qty=9223372036854775799   \r")
    st, _, got = _parse(line, py)
    assert st == T.LINE_OK
    assert got == {"SecurityIDSource": 102, "MsgType": 192, "SecurityID": 1, "Price": -15, "OrderQty": None,
                   "TransactTime": 20240105093000123, "BidLevel[9].Price": None,
                   "AskLevel[0].Qty": 9223372036854775799}


@PY
def test_parse_line_stop_key_leaves_rest_unread(py):
    line = b"//MsgType=191 ChannelNo=7 ApplSeqNum=5 LastPx=3"
    st, pos, got = _parse(line, py, T.K_APPLSEQ)
    assert (st, line[pos:], got) == (T.LINE_OK, b" LastPx=3", {"MsgType": 191, "ChannelNo": 7, "ApplSeqNum": 5})


@PY
@pytest.mark.parametrize("line, status", [(b"//MsgType=1 oops", T.LINE_BAD_TOKEN), (b"1f2e", T.LINE_NOT_MESSAGE),
                                          (b"", T.LINE_NOT_MESSAGE), (b"//", T.LINE_OK)])
def test_parse_line_status(py, line, status):
    assert _parse(line, py)[0] == status


@PY
@pytest.mark.parametrize("line, lost", [
    (b"SecurityIDSource=101 MsgType=192 SecurityID=600000", True), (b"/SecurityIDSource=101 MsgType=192", True),
    (b"BidLevel[0].Price=5", True), (b"MsgType=", True),
    (b"0000: c0 00 30 00 36 30 30", False), (b"c0 00 30 =", False), (b"", False), (b"   ", False),
    (b"/", False), (b"=5", False), (b"Sec urity=1", False), (b"9abc=1", False)])
def test_marker_lost_key_and_equals_at_the_start_only(py, line, lost):
    assert _f(T.marker_lost, py)(_buf(line), 0, len(line)) is lost


def test_key_table_every_key_found_and_near_misses_not():
    for text, i in T.KEYS.items():
        assert _parse(f"//{text}=1".encode(), False)[2] == {text: 1}
    for near in ("Pric", "Prices", "price", "BidLevel[0].Pricf", "SecurityIDSourc"):
        assert _parse(f"//{near}=1".encode(), False)[2] == {}


@PY
def test_line_ends_and_keys_same_at_every_buffer_alignment(py):
    """line_end and the key hash read aligned words of the buffer: any start offset of
    the buffer in memory and any line position give the same lines and values."""
    rnd = np.random.default_rng(3)
    lines = [b"//MsgType=192 SecurityID=%d ChannelNo=%d " % (rnd.integers(1, 10**6), rnd.integers(1, 99))
             + b"x" * int(rnd.integers(0, 20)) + b"\x0b=1 OfferApplSeqNum=%d" % rnd.integers(0, 10**9)
             for _ in range(40)]
    text = b"\n".join(lines) + b"\n"
    want = [i for i, c in enumerate(text) if c == 10]
    for off in range(16):
        big = np.zeros(len(text) + 32, np.uint8)
        buf = big[off:off + len(text)]
        buf[:] = np.frombuffer(text, np.uint8)
        ends = np.zeros(len(lines) + 1, np.int64)
        k = _f(T.line_ends, py)(buf, 0, len(text), False, ends, 0, len(lines) + 1)
        assert ends[:k].tolist() == want
        vals, have = np.zeros(T.N_KEYS, np.int64), np.zeros(T.N_KEYS, np.int8)
        a = 0
        for line, e in zip(lines, want):
            _f(T.parse_line, py)(buf, a, e, T.KHASH, T.KID, vals, have, -1)
            d = dict(t.split(b"=") for t in line[2:].split(b" "))
            assert vals[T.K_SECID] == int(d[b"SecurityID"]) and vals[T.K_OFFERSEQ] == int(d[b"OfferApplSeqNum"])
            assert vals[T.K_CHANNEL] == int(d[b"ChannelNo"]) and have[T.K_MSGTYPE] == 1
            a = e + 1


@PY
@pytest.mark.parametrize("line", [
    b"//SecurityIDSource=102 MsgType=192 MsgLen=48 SecurityID=300001 ChannelNo=2011 ApplSeqNum=7 "
    b"TradingPhase=0 Price=101000 OrderQty=300 Side=49 OrdType=50 TransactTime=20240105093000123",
    b"//SecurityIDSource=102 MsgType=191 MsgLen=64 SecurityID=300001 ChannelNo=2011 ApplSeqNum=8 "
    b"TradingPhase=0 BidApplSeqNum=7 OfferApplSeqNum=3 LastPx=101000 LastQty=100 ExecType=70 TransactTime=1",
    b"//SecurityIDSource=101 MsgType=192 MsgLen=64 SecurityID=600519   ChannelNo=6 ApplSeqNum=60775  "
    b"TradingPhase=0 OrderNo=30  Price=1818880 OrderQty=100000  OrdType=65 Side=83 TransactTime=9150000 "
    b"resv=   BizIndex=67298   \r",
    # near misses of known keys
    b"//SecurityIDSource=102 MsgTypes=5 MsgType=192 MsgLen=48 SecurityIDx=9 SecurityID=1 ChannelNo= "
    b"ApplSeqNum=-3 TradingPhase=0 Prices=4 Price=5 OrderQt=6 OrderQty=7 Sid=8 Side=49",
])
def test_parse_line_layouts_values_same_as_split(py, line):
    """Shenzhen and Shanghai layouts and near-miss keys: the values are those of a plain
    split of the line."""
    st, _, got = _parse(line, py)
    assert st == T.LINE_OK
    want = {}
    for tok in line[2:].split(b" "):
        if b"=" in tok.strip(b"\r"):
            k, v = tok.strip(b"\r").split(b"=", 1)
            if k.decode() in T.KEYS:
                want[k.decode()] = int(v) if v.lstrip(b"-").isdigit() else None
    assert got == want


def _reference_tokens(line: bytes):
    """A plain split of a message line: (status, {known key: int or None})."""
    got = {}
    for tok in line[2:].rstrip(b"\r ").split(b" "):
        if not tok:
            continue
        if b"=" not in tok:
            return T.LINE_BAD_TOKEN, None
        k, v = tok.split(b"=", 1)
        if k.decode("latin-1") in T.KEYS:
            ok = v.lstrip(b"-").isdigit() and v[1:2] != b"-" and abs(int(v)) <= 9223372036854775799
            got[k.decode()] = int(v) if ok else None
    return T.LINE_OK, got


@PY
def test_parse_line_guessed_keys_and_word_digits_same_as_split(py):
    """The next key guessed from the layouts and compared as words, the digits read eight at
    a time (1 to 20 digits, signs, junk after digits, other key orders, at the buffer's end
    or not): the same status and values as a plain split."""
    rnd = np.random.default_rng(21)
    sz = list(T._LAYOUTS[0]) + ["BidApplSeqNum", "OfferApplSeqNum", "LastPx", "LastQty", "ExecType"]
    sh = list(T._LAYOUTS[3]) + ["DataTimeStamp", "BidLevel[3].Qty", "Unknown"]
    for i in range(400):
        keys = list(sz if i % 2 else sh)
        if i % 5 == 0:
            rnd.shuffle(keys)

        def value():
            r = rnd.random()
            digits = "".join(str(d) for d in rnd.integers(0, 10, int(rnd.integers(1, 21))))
            if r < 0.7:
                return digits
            return rnd.choice(["-" + digits, digits + "x", "", "1-2", digits + "=3", "0" * 19 + "7"])
        toks = [f"{k}={value()}" for k in keys]
        if i % 7 == 0:
            toks.insert(int(rnd.integers(0, len(toks))), "oops")
        line = ("//" + (" " * int(rnd.integers(1, 3))).join(toks) + (" \r" if i % 3 == 0 else "")).encode()
        for pad in (b"", b"\n" + b"9" * 40):
            buf = _buf(line + pad)
            vals, have = np.zeros(T.N_KEYS, np.int64), np.zeros(T.N_KEYS, np.int8)
            st, _ = _f(T.parse_line, py)(buf, 0, len(line), T.KHASH, T.KID, vals, have, -1)
            want_st, want = _reference_tokens(line)
            assert st == want_st, line
            if st == T.LINE_OK:
                assert {k: (int(vals[j]) if have[j] > 0 else None) for k, j in T.KEYS.items() if have[j]} == want, line
