"""The Shenzhen text log read in two parts: the framer reads each line's head
(``text_heads``: the usual layout as words, anything else the slow way) and each worker
parses the rest of its own lines (``text_rows``). Against a plain split of the lines,
compiled and as plain Python, and end to end with 1, 2 and 3 workers."""

from __future__ import annotations

import numpy as np
import pytest

import obook
from obook._kernels import l2_szse as K
from obook._kernels import l2_text as T
from obook.errors import FeedError
from obook.gen.szse import generate, text_line

PY = pytest.mark.parametrize("py", [False, True], ids=["compiled", "py_func"])
HEAD = ("MsgType", "SecurityID", "ChannelNo", "ApplSeqNum")


def _f(fn, py):
    return fn.py_func if py else fn


@pytest.fixture(scope="module")
def recs():
    return generate(3000, securities=4, seed=11)


def _variants(recs, seed=3):
    """The generated lines, and some of them changed: other key orders, two spaces, a CR,
    unknown keys, a bad value, a head key given twice, not a message, a short last line."""
    rnd = np.random.default_rng(seed)
    lines = []
    for i, r in enumerate(recs[:1500]):
        line = text_line(r)
        k = i % 11
        if k == 1:
            toks = line[2:].split(" ")
            rnd.shuffle(toks)
            line = "//" + " ".join(toks)
        elif k == 2:
            line = line.replace(" ", "  ", 3)
        elif k == 3:
            line += " \r"
        elif k == 4:
            line = line.replace("TradingPhase=0", "Foo=bar TradingPhase=T1")
        elif k == 5 and i % 2:
            line = line.replace("TransactTime=", "TransactTime=x")
        elif k == 6 and i % 3 == 0:
            line += f" SecurityID={int(r['SecurityID']) + 1:06d}"
        elif k == 7 and i % 3 == 0:
            line = line.replace("ApplSeqNum=", "ApplSeqNum=-")
        elif k == 8 and i % 4 == 0:
            line = "00 01 02 03"
        lines.append(line)
    return ("\n".join(lines)).encode()


def _split_rows(text: bytes):
    """A plain split of each line: {line number: (type, security, channel, sequence, row
    fields)} of the order and execution lines whose fields are all integers, whose head
    keys are given once and whose ApplSeqNum is at least 1."""
    out = {}
    for n, line in enumerate(text.split(b"\n"), 1):
        line = line.rstrip(b"\r ")
        if not line.startswith(b"//"):
            continue
        toks = [t.split(b"=", 1) for t in line[2:].split()]
        if any(len(t) != 2 for t in toks):
            continue
        keys = [k.decode() for k, _ in toks]
        d = {k.decode(): v for k, v in toks}
        if any(keys.count(k) > 1 for k in HEAD + ("BidApplSeqNum", "OfferApplSeqNum")):
            continue
        t = d.get("MsgType")
        want = {b"192": ("SecurityID", "ChannelNo", "ApplSeqNum", "Price", "OrderQty", "Side", "OrdType",
                         "TransactTime"),
                b"191": ("SecurityID", "ChannelNo", "ApplSeqNum", "BidApplSeqNum", "OfferApplSeqNum",
                         "LastPx", "LastQty", "ExecType", "TransactTime")}.get(t)
        if want is None or not all(d.get(k, b"x").lstrip(b"-").isdigit() for k in want):
            continue
        v = {k: int(d[k]) for k in want}
        if v["ApplSeqNum"] < 1:         # record numbers count from 1: a refused line
            continue
        out[n] = (int(t), v)
    return out


def _run(text: bytes, py, workers=1, slow=False):
    buf = np.frombuffer(text, np.uint8).copy()
    n = text.count(b"\n") + 1
    H = K.Heads(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((n, K.H_WIDTH), np.int64))
    ends, heads, F = H.ends, H.rows, T.fields()
    heads_of = _f(K.text_heads, py)
    # in two calls: the first stops before a line the buffer ends in (not final)
    cut = len(buf) // 2
    k, r = heads_of(buf[:cut], 0, cut, False, 0, n, 1, F, H, 0)
    assert 0 < k < n and ends[k - 1] < cut <= ends[k - 1] + len(text.split(b"\n")[k]) + 1
    k, r = heads_of(buf, int(ends[k - 1]) + 1, len(buf), True, k, n, 1, F, H, r)
    assert k == n and ends[:n].tolist() == [i for i, c in enumerate(text) if c == 10] + [len(text)]
    if slow:
        heads[:r, K.H_POS] = -1
    rows, bad = [], []
    for w in range(workers):
        rec, b = np.zeros((r, K.R_WIDTH), np.int64), np.zeros((r, 3), np.int64)
        m, nb = _f(K.text_rows, py)(buf, heads, r, w, workers, F, rec, b)
        rows += [tuple(x) for x in rec[:m].tolist()]
        bad += [(int(heads[i, K.R_SEQ]), c, d) for i, c, d in b[:nb].tolist()]
    return sorted(rows), sorted(bad), heads[:r]


@PY
def test_text_heads_rows_well_formed_lines_same_as_split(recs, py):
    text = _variants(recs)
    rows, bad, heads = _run(text, py)
    want = _split_rows(text)
    assert (heads[:, K.H_POS] >= 0).sum() > len(heads) // 2          # most lines: the word path
    assert (heads[:, K.H_POS] < 0).any()                              # some: the slow path
    got = {row[K.R_SEQ]: row for row in rows}
    assert sorted(got) == sorted(want)
    for n, (t, v) in want.items():
        row = got[n]
        assert (row[K.R_TYPE], row[K.R_SEC], row[K.R_CHAN], row[K.R_APPL]) == (
            t, v["SecurityID"], v["ChannelNo"], v["ApplSeqNum"])
        assert row[K.R_TIME] == K.time_ns.py_func(v["TransactTime"])
        if t == 192:
            assert (row[K.R_PRICE], row[K.R_QTY], row[K.R_SIDE], row[K.R_ORDTYPE]) == (
                v["Price"], v["OrderQty"], v["Side"], v["OrdType"])
        else:
            assert (row[K.R_BID], row[K.R_OFFER], row[K.R_LASTPX], row[K.R_LASTQTY], row[K.R_EXEC]) == (
                v["BidApplSeqNum"], v["OfferApplSeqNum"], v["LastPx"], v["LastQty"], v["ExecType"])
    assert {c for _, c, _ in bad} >= {K.BAD_NUMBER, K.BAD_VALUE}     # a bad field, a head key twice


@PY
@pytest.mark.parametrize("workers", [2, 3])
def test_text_rows_word_and_slow_heads_and_workers_same_rows(recs, py, workers):
    text = _variants(recs, seed=4)
    one = _run(text, py)[:2]
    assert _run(text, py, slow=True)[:2] == one
    assert _run(text, py, workers=workers)[:2] == one


def _write(tmp_path, lines):
    p = tmp_path / "day.log"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_szse_bad_field_strict_names_line_rows_before_same_any_workers(recs, tmp_path, workers):
    """A bad field is a worker's find: the same error and record with 1-3 workers, and the
    rows before the line are the tolerant replay's."""
    lines = [text_line(r) for r in recs]
    k = next(i for i, r in enumerate(recs) if r["MsgType"] == 191 and i > 2000)
    lines[k] = lines[k].replace("LastQty=", "LastQty=1x")
    p = _write(tmp_path, lines)
    rows = []
    with pytest.raises(FeedError, match="LastQty is not an integer") as e:
        for b in obook.bbo(p, workers=workers):
            rows.append(b)
    assert e.value.record == k + 1
    import pyarrow as pa
    import pyarrow.compute as pc
    got = pa.Table.from_batches(rows)
    assert got.num_rows > 0
    skip = obook.bbo(p, workers=1, on_error="skip").read_all()
    assert got.equals(skip.filter(pc.less(skip.column("seq"), k + 1)))


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_szse_head_key_given_twice_strict_error_tolerant_counted(recs, tmp_path, workers):
    lines = [text_line(r) for r in recs]
    k = next(i for i, r in enumerate(recs) if r["MsgType"] == 192 and i > 1000)
    lines[k] += " SecurityID=000999"
    p = _write(tmp_path, lines)
    with pytest.raises(FeedError, match="bad SecurityID 000999") as e:
        obook.bbo(p, workers=workers).read_all()
    assert e.value.record == k + 1
    stats = {}
    obook.bbo(p, workers=workers, on_error="skip", stats=stats).read_all()
    assert stats["skipped"]["malformed record"] == 1     # (its fills or cancel: unknown order refs)


@pytest.mark.parametrize("fmt", ["szse", "sse"])
def test_text_log_in_two_files_the_second_with_a_byte_order_mark_same_rows_as_whole(tmp_path, fmt):
    from obook.gen.sse import write_sse

    whole = tmp_path / "whole.log"
    if fmt == "szse":
        whole.write_text("\n".join(text_line(r) for r in generate(2000, securities=3, seed=5)) + "\n")
    else:
        write_sse(whole, 2000)
    data = whole.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(data[:cut])
    b.write_bytes(b"\xef\xbb\xbf" + data[cut:])
    for workers in (1, 2):
        assert (obook.bbo((str(a), str(b)), workers=workers).read_all().to_pylist()
                == obook.bbo(str(whole), workers=workers).read_all().to_pylist())
