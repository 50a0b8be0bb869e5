"""The Level-2 text feeds' last line without a line end. When it does not form a whole
record (a field its message type needs is missing, it ends inside a key, a needed value
is empty, a fixed-width value is short: Shenzhen's 17-digit TransactTime; a vendor CSV
row has fewer fields than its header), the replay stops with a FeedError naming the file
and the line ("the last line is cut"), in strict and tolerant mode alike, after every row
of the lines before it. A whole last line without a line end is read as before."""

from __future__ import annotations

import pytest

import obook
from obook.errors import FeedError, TruncatedFeedError
from obook.gen.szse import text_line, write_vendor

SSE = ("//SecurityIDSource=101 MsgType=192 SecurityID=600000 ChannelNo=1 OrderNo={n} Price={px} "
       "OrderQty=100000 OrdType=65 Side={side} TransactTime={t} BizIndex={n}")
SSE_TRADE = ("//SecurityIDSource=101 MsgType=191 SecurityID=600000 ChannelNo=1 BidApplSeqNum=4 "
             "OfferApplSeqNum=5 LastPx=1005000 LastQty=50000 ExecType=66 TransactTime=10000006 BizIndex=6")
STAMP = 20240105_100000_000


def _price(n, scale):
    """Sells (odd n) lower and buys (even n) higher each time: every order is a new best."""
    return (1000 + (10 - n) if n % 2 else 1000 - (10 - n)) * scale


def _sse_lines():
    lines = [SSE.format(n=n, px=_price(n, 1000), side=83 if n % 2 else 66, t=10000000 + n) for n in range(1, 6)]
    return lines + [SSE_TRADE]         # half of the best ask (order 5) trades


def _szse_lines():
    recs = [dict(MsgType=192, SecurityID="000001", ChannelNo=2011, ApplSeqNum=n, Price=_price(n, 100),
                 OrderQty=100, Side=50 if n % 2 else 49, OrdType=50, TransactTime=STAMP + n) for n in range(1, 6)]
    recs.append(dict(MsgType=191, SecurityID="000001", ChannelNo=2011, ApplSeqNum=6, BidApplSeqNum=4,
                     OfferApplSeqNum=0, LastPx=0, LastQty=100, ExecType=52, TransactTime=STAMP + 6))
    return [text_line(r) for r in recs]   # the best bid (order 4) cancelled


LINES = {"sse": _sse_lines, "szse": _szse_lines}


def _cuts(fmt):
    """(id, the last line cut, the reason's words) of the last line (a trade line for
    Shanghai, a cancel for Shenzhen)."""
    last = LINES[fmt]()[-1]
    t = last.index("TransactTime=") + len("TransactTime=")
    out = [
        ("inside-a-key", last[:last.index("ExecType=") + 4], "inside a key"),
        ("fields-missing", last[:last.index(" ExecType=")], "no ExecType"),
        ("empty-value", last[:last.index("ExecType=") + 9], "ExecType has no value"),
        ("no-msgtype", "//SecurityIDSource=10", "no MsgType"),
        ("inside-msgtype", last[:last.index("MsgType=") + 10], "MsgType ends at '19'"),
    ]
    if fmt == "szse":      # TransactTime: 17 digits, the line's last value
        out.append(("short-fixed-width", last[:t + 12], "TransactTime has 12 of its 17 digits"))
    return [pytest.param(cut, why, id=name) for name, cut, why in out]


def _rows(path, **kw):
    rows, err = [], None
    try:
        for b in obook.bbo(path, **kw):
            rows += b.to_pylist()
    except FeedError as e:
        err = e
    return rows, err


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(("fmt", "cut", "why"), [pytest.param("sse", *p.values, id=f"sse-{p.id}")
                                                 for p in _cuts("sse")]
                         + [pytest.param("szse", *p.values, id=f"szse-{p.id}") for p in _cuts("szse")])
def test_l2_text_last_line_cut_error_names_line_after_rows(tmp_path, fmt, cut, why, workers, on_error):
    lines = LINES[fmt]()
    whole = tmp_path / "whole.log"
    whole.write_text("\n".join(lines[:-1]) + "\n")
    want = obook.bbo(whole, workers=1).read_all().to_pylist()
    p = tmp_path / "cut.log"
    p.write_text("\n".join(lines[:-1] + [cut]))
    rows, err = _rows(p, workers=workers, on_error=on_error, format=fmt)
    assert isinstance(err, TruncatedFeedError), err
    assert err.record == len(lines) and err.unit == "line" and str(p) in str(err)
    assert err.reason.startswith("the last line is cut") and why in err.reason, err.reason
    assert rows == want and len(want) >= 3


@pytest.mark.parametrize("ending", ["", "\r", "  "])
@pytest.mark.parametrize("fmt", ["sse", "szse"])
def test_l2_text_whole_last_line_without_line_end_read_as_before(tmp_path, fmt, ending):
    lines = LINES[fmt]()
    ended, open_end = tmp_path / "ended.log", tmp_path / "open.log"
    ended.write_text("\n".join(lines) + "\n")
    open_end.write_text("\n".join(lines) + ending)
    for workers in (1, 2):
        want = obook.bbo(ended, workers=workers).read_all()
        assert obook.bbo(open_end, workers=workers, format=fmt).read_all().equals(want)
    assert want.num_rows >= 4


@pytest.mark.parametrize("fmt", ["sse", "szse"])
def test_l2_text_last_line_not_a_message_without_line_end_read_as_before(tmp_path, fmt):
    """A hex dump (not a message) cut at the end carries nothing: read as before."""
    lines = LINES[fmt]()
    ended, open_end = tmp_path / "ended.log", tmp_path / "open.log"
    ended.write_text("\n".join(lines) + "\n")
    open_end.write_text("\n".join(lines) + "\n0000: c0 00 30 00 36 30 30")
    assert obook.bbo(open_end, workers=1, format=fmt).read_all().equals(obook.bbo(ended, workers=1).read_all())


@pytest.mark.parametrize("fmt", ["sse", "szse"])
def test_l2_text_malformed_line_inside_the_feed_still_counted_skip(tmp_path, fmt):
    """A line missing a field that ends with its line end is a malformed line as before
    (counted in a tolerant replay), not a cut one."""
    lines = LINES[fmt]()
    lines[2] = lines[2][:lines[2].index(" Side=")]
    p = tmp_path / "day.log"
    p.write_text("\n".join(lines) + "\n")
    stats: dict = {}
    obook.bbo(p, workers=1, on_error="skip", stats=stats).read_all()
    assert sum(stats["skipped"].values()) == 1 and "cut" not in str(stats["skipped"])
    with pytest.raises(FeedError) as info:
        obook.bbo(p, workers=1).read_all()
    assert info.value.record == 3 and "cut" not in info.value.reason


# ---------------------------------------------------------------- Shenzhen vendor CSV

def _vendor(tmp_path, extra: bool):
    recs = [dict(MsgType=192, SecurityID="000001", ChannelNo=2011, ApplSeqNum=n, Price=_price(n, 100),
                 OrderQty=100, Side=50 if n % 2 else 49, OrdType=50, TransactTime=STAMP + n) for n in range(1, 6)]
    folder = tmp_path / "vendor"
    files = write_vendor(folder, recs)
    ticks = folder / "000001_ticks.csv"
    ticks.write_text("ApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo\n")
    orders = folder / "000001_orders.csv"
    if extra:       # a vendor column after ChannelNo
        rows = orders.read_text().splitlines()
        orders.write_text("\n".join([rows[0] + ",Source"] + [r + ",SZ" for r in rows[1:]]) + "\n")
    return sorted(set(files) | {ticks}), orders


@pytest.mark.parametrize(("extra", "cut", "why"), [
    pytest.param(True, lambda row: row[:-4], "7 of its header's 8 fields", id="inside-channel-no-header-has-more"),
    pytest.param(False, lambda row: ",".join(row.split(",")[:5]), "5 of its header's 7 fields", id="fields-missing"),
])
def test_szse_vendor_last_row_cut_error_names_line_after_rows(tmp_path, extra, cut, why):
    files, orders = _vendor(tmp_path, extra)
    want = obook.bbo(files, workers=1, format="szse-csv").read_all().to_pylist()
    text = orders.read_text().rstrip("\n")
    last = text.splitlines()[-1]
    orders.write_text(text[:len(text) - len(last)] + cut(last))    # no line end
    for on_error in ("raise", "skip"):
        rows, err = _rows(files, workers=1, format="szse-csv", on_error=on_error)
        assert isinstance(err, TruncatedFeedError), err
        assert err.record == 6 and str(orders) in str(err)
        assert err.reason.startswith("the last line is cut") and why in err.reason, err.reason
        assert rows == want[:-1] and rows


def test_szse_vendor_whole_last_row_without_line_end_read_as_before(tmp_path):
    files, orders = _vendor(tmp_path, True)
    want = obook.bbo(files, workers=1, format="szse-csv").read_all()
    orders.write_text(orders.read_text().rstrip("\n"))
    assert obook.bbo(files, workers=1, format="szse-csv").read_all().equals(want)
