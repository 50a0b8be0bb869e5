"""Price level totals past 2**63 - 1 shares: an add that would take a level's total past
int64's largest is a malformed record. A strict replay stops there with a FeedError naming
the file, the record and the reason, after every row of the records before it; a tolerant
one skips the record and counts it. On the book kernel (compiled and as Python), the
Shenzhen price cage's entries, and every Level-2 form whose quantities can get there
(Shanghai text, Shenzhen text, binary and vendor CSV). An incoming Shenzhen order whose
fills sum past it leaves no rest."""

from __future__ import annotations

import numpy as np
import pytest

import obook
from obook._kernels import replay as K
from obook._kernels.layout import (ACT_ADD, ASK, BID, BOOK_ERROR_NAMES, ERR_LEVEL_OVERFLOW, EV_WIDTH, OK,
                                   ROW_WIDTH)
from obook.engine.books import BookState
from obook.errors import FeedError
from obook.gen.szse import binary_record, text_line, write_vendor

KERNELS = [pytest.param(K.replay_events, id="compiled"), pytest.param(K.replay_events.py_func, id="py_func")]
#: two orders of it at one price hold 2**63 shares: one past int64's largest
HALF = 2**62
MAX = 2**63 - 1
SKIP_KEY = BOOK_ERROR_NAMES[ERR_LEVEL_OVERFLOW]


def _events(*specs):
    ev = np.zeros((len(specs), EV_WIDTH), np.int64)
    for k, (side, ref, shares, price) in enumerate(specs):
        ev[k] = (k + 1, k, 0, ACT_ADD | (side << 8), ref, shares, price, 0, 0, 0)
    return ev


def _bbo(b, n):
    return [tuple(int(x) for x in r[3:9]) for r in b.out_rows[:n]]


@pytest.mark.parametrize("kernel", KERNELS)
def test_book_add_past_level_total_strict_stops_at_the_add(kernel):
    ev = _events((BID, 1, HALF, 100), (BID, 2, HALF - 1, 100), (BID, 3, 1, 100), (ASK, 4, 5, 101))
    b = BookState(kernel=kernel)
    status, i, n = b.apply(ev, len(ev), np.zeros((16, ROW_WIDTH), np.int64))
    assert (status, i) == (ERR_LEVEL_OVERFLOW, 2)
    assert _bbo(b, n) == [(100, HALF, 1, -1, -1, 0), (100, MAX, 2, -1, -1, 0)]
    assert b.live_orders == 2


@pytest.mark.parametrize("kernel", KERNELS)
def test_book_add_past_level_total_tolerant_skipped_and_counted(kernel):
    ev = _events((BID, 1, HALF, 100), (BID, 2, HALF, 100), (BID, 3, HALF - 1, 100), (ASK, 4, 5, 101),
                 (BID, 5, 7, 99))
    b = BookState(strict=False, kernel=kernel)
    status, _, n = b.apply(ev, len(ev), np.zeros((16, ROW_WIDTH), np.int64))
    assert status == OK and b.skips[ERR_LEVEL_OVERFLOW] == 1
    assert _bbo(b, n) == [(100, HALF, 1, -1, -1, 0), (100, MAX, 2, -1, -1, 0), (100, MAX, 2, 101, 5, 1)]
    assert b.live_orders == 4 and all(r[1] > 0 for r in _bbo(b, n))


# ---------------------------------------------------------------- the Level-2 forms

SSE = ("//SecurityIDSource=101 MsgType=192 SecurityID=600000 ChannelNo=1 OrderNo={n} Price={px} "
       "OrderQty={q} OrdType=65 Side={side} TransactTime={t} BizIndex={n}")
STAMP = 20240105_100000_000         # 10:00, continuous trading


def _sse(orders):
    return "\n".join(SSE.format(n=n, px=px, q=q, side=66 if side == "1" else 83, t=10000000 + n)
                     for n, (side, px, q) in enumerate(orders, 1)) + "\n"


def _szse_recs(orders, security="000001"):
    return [dict(MsgType=192, SecurityID=security, ChannelNo=2011, ApplSeqNum=n, Price=px, OrderQty=q,
                 Side=ord(side), OrdType=50, TransactTime=STAMP + n) for n, (side, px, q) in enumerate(orders, 1)]


#: order 3 takes the bid level past 2**63 - 1 (orders: side, price, quantity as the feed gives it)
ORDERS = [("1", 100_000, HALF), ("1", 100_000, HALF - 1), ("1", 100_000, 1), ("2", 100_100, 5),
          ("1", 99_900, 7)]


def _write(tmp_path, form, orders):
    if form == "sse":
        p = tmp_path / "sh.log"
        p.write_text(_sse(orders))
        return p, {}
    recs = _szse_recs(orders)
    if form == "szse":
        p = tmp_path / "sz.log"
        p.write_text("\n".join(text_line(r) for r in recs) + "\n")
        return p, {}
    if form == "szse-bin":
        p = tmp_path / "sz.bin"
        p.write_bytes(b"".join(binary_record(r) for r in recs))
        return p, {}
    files = write_vendor(tmp_path / "vendor", recs)
    (tmp_path / "vendor" / "000001_ticks.csv").write_text(
        "ApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo\n")
    return sorted(set(files) | {tmp_path / "vendor" / "000001_ticks.csv"}), {"format": "szse-csv"}


#: the vendor files' quantities are shares below 10**16 (stored * 100): ten orders of
#: 0.99 * 10**16 shares at one price pass 2**63 - 1 at the tenth
VENDOR_BIG = 99 * 10**16
VENDOR_ORDERS = [("1", 100_000, VENDOR_BIG)] * 10 + [("1", 100_000, 1), ("2", 100_100, 5), ("1", 99_900, 7)]


FORMS = ["sse", "szse", "szse-bin", "szse-csv"]


def _case(tmp_path, form):
    """(feed, options, the failing record, the rows of the records before it)."""
    if form == "szse-csv":
        feed, opts = _write(tmp_path, form, VENDOR_ORDERS)
        return feed, opts, 10, 9
    feed, opts = _write(tmp_path, form, ORDERS)
    return feed, opts, 3, 2


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("form", FORMS)
def test_l2_add_past_level_total_strict_error_names_record_after_rows(tmp_path, form, workers):
    feed, opts, record, before = _case(tmp_path, form)
    rows = []
    with pytest.raises(FeedError) as info:
        for b in obook.bbo(feed, workers=workers, **opts):
            rows += b.to_pylist()
    err = info.value
    assert err.feed_record == record and "2**63 - 1" in err.reason
    assert ("600000" if form == "sse" else "000001") in err.reason
    if form != "szse-csv":
        assert str(feed) in str(err) and err.record == record
    else:                                   # the vendor file's own line (after its header)
        assert (err.path, err.record) == (str(feed[0]), record + 1)
    assert [r["seq"] for r in rows] == list(range(1, before + 1))
    assert all(r["bid_qty"] > 0 for r in rows)


@pytest.mark.parametrize("form", FORMS)
def test_l2_add_past_level_total_tolerant_skipped_and_counted(tmp_path, form):
    feed, opts, record, before = _case(tmp_path, form)
    stats: dict = {}
    got = obook.bbo(feed, workers=1, on_error="skip", stats=stats, **opts).read_all().to_pylist()
    assert stats["skipped"] == {SKIP_KEY: 1}
    assert record not in [r["seq"] for r in got]
    assert all(q is None or q > 0 for r in got for q in (r["bid_qty"], r["ask_qty"]))
    assert got[-1]["bid_qty"] == (MAX if form != "szse-csv" else 9 * VENDOR_BIG + 1)


def test_szse_cage_entry_past_level_total_strict_error_tolerant_skip(tmp_path):
    """Two sells held by the ChiNext cage (below 98% of the best bid) enter together when
    the bid is cancelled: the second would take their level past 2**63 - 1."""
    recs = _szse_recs([("1", 100_000, 100), ("2", 97_000, HALF), ("2", 97_000, HALF)], security="300001")
    recs.append(dict(MsgType=191, SecurityID="300001", ChannelNo=2011, ApplSeqNum=4, BidApplSeqNum=1,
                     OfferApplSeqNum=0, LastPx=0, LastQty=100, ExecType=52, TransactTime=STAMP + 4))
    p = tmp_path / "sz.log"
    p.write_text("\n".join(text_line(r) for r in recs) + "\n")
    orders = obook.orders(p, workers=1, on_error="skip").read_all().to_pylist()
    assert [o["action"] for o in orders[:3]] == ["A", "H", "H"]
    rows = []
    with pytest.raises(FeedError) as info:
        for b in obook.bbo(p, workers=1):
            rows += b.to_pylist()
    assert info.value.record == 4 and "2**63 - 1" in info.value.reason
    assert [r["seq"] for r in rows] == [1]
    stats: dict = {}
    got = obook.bbo(p, workers=1, on_error="skip", stats=stats).read_all().to_pylist()
    assert stats["skipped"] == {SKIP_KEY: 1}
    assert (got[-1]["seq"], got[-1]["bid_qty"], got[-1]["ask_px"], got[-1]["ask_qty"]) == (4, None, 97_000, HALF)


def _incoming_past_int64():
    """Three sells of 2**62 at three prices, then an incoming buy of 1 share whose three
    fills take them all (3 * 2**62 shares)."""
    recs = _szse_recs([("2", 100_000, HALF), ("2", 100_100, HALF), ("2", 100_200, HALF), ("1", 100_200, 1)])
    for n, (offer, px) in enumerate(((1, 100_000), (2, 100_100), (3, 100_200)), 5):
        recs.append(dict(MsgType=191, SecurityID="000001", ChannelNo=2011, ApplSeqNum=n, BidApplSeqNum=4,
                         OfferApplSeqNum=offer, LastPx=px, LastQty=HALF, ExecType=70, TransactTime=STAMP + n))
    return recs


@pytest.mark.parametrize("py", [False, True], ids=["compiled", "py_func"])
def test_szse_roles_fills_past_int64_no_rest_to_add(py):
    from obook._kernels import l2_szse as L

    recs = _incoming_past_int64()
    buf = np.frombuffer(b"".join(binary_record(r) for r in recs), np.uint8)
    rec = np.zeros((len(recs), L.R_WIDTH), np.int64)
    n = L.bin_rows(buf, len(buf), np.ones(len(recs), np.int32), 1, 0, 1, rec)
    aux = np.zeros((n, L.A_WIDTH), np.int64)
    (L._roles.py_func if py else L._roles)(rec, n, aux, np.zeros(L.CHANNELS, np.int64))
    assert aux[3, L.A_ROLE] == L.ROLE_INCOMING and aux[6, L.A_LAST] == 1
    assert aux[:, L.A_ADD_QTY].tolist() == [0] * 7


@pytest.mark.parametrize("py", [False, True], ids=["compiled", "py_func"])
def test_price_cage_bounds_exact_where_price_times_100_passes_int64(py):
    from obook._kernels.price_cage import outside_cage

    fn = outside_cage.py_func if py else outside_cage
    for ref in (50, 99, 10**6 + 7, 10**17 + 3, 2**62 - 1, MAX // 51 * 50):
        for price in {ref + ref // 50, ref + ref // 50 + 1, ref - ref // 50, ref - ref // 50 - 1, ref}:
            assert fn(0, price, ref) == (price * 100 > ref * 102), (price, ref)
            assert fn(1, price, ref) == (price * 100 < ref * 98), (price, ref)


@pytest.mark.parametrize("binary", [False, True])
def test_szse_incoming_order_fills_past_int64_leave_no_rest(tmp_path, binary):
    """An incoming buy of 1 share whose fills take 3 * 2**62 shares from three resting
    sells: nothing of it rests (its fills' sum held at 2**63 - 1, not wrapped into a bid)."""
    recs = _incoming_past_int64()
    p = tmp_path / ("sz.bin" if binary else "sz.log")
    if binary:
        p.write_bytes(b"".join(binary_record(r) for r in recs))
    else:
        p.write_text("\n".join(text_line(r) for r in recs) + "\n")
    got = obook.bbo(p, workers=1).read_all().to_pylist()
    assert got[-1]["seq"] == 7
    assert (got[-1]["bid_px"], got[-1]["bid_qty"], got[-1]["ask_px"]) == (None, None, None)
    assert obook.orders(p, workers=1).read_all().num_rows == 6      # 3 adds, 3 fills: no add of a rest


def test_sse_audit_rebuilt_volume_past_int64_error_names_trade(tmp_path):
    """Three sells of 2**62 shares at three prices, each traded whole: the day's rebuilt
    TotalVolumeTrade passes 2**63 - 1 at the second trade (a snapshot's tally is int64)."""
    orders = [SSE.format(n=n, px=px, q=HALF, side=83, t=10000000 + n)
              for n, px in enumerate((1_000_000, 1_001_000, 1_002_000), 1)]
    trades = [(f"//SecurityIDSource=101 MsgType=191 SecurityID=600000 ChannelNo=1 BidApplSeqNum=9 "
               f"OfferApplSeqNum={n} LastPx={px} LastQty={HALF} ExecType=66 TransactTime={10000010 + n} "
               f"BizIndex={3 + n}") for n, px in enumerate((1_000_000, 1_001_000, 1_002_000), 1)]
    snap = ("//SecurityIDSource=101 MsgType=111 SecurityID=600000 ChannelNo=0 NumTrades=3 DataTimeStamp=100001 "
            "TotalVolumeTrade=0 TotalValueTrade=0 LastPx=0 HighPx=0 LowPx=0 "
            + " ".join(f"{s}Level[{k}].{f}=0" for s in ("Bid", "Ask") for k in range(10) for f in ("Price", "Qty")))
    p = tmp_path / "sh.log"
    p.write_text("\n".join(orders + trades + [snap]) + "\n")
    assert obook.trades(p, workers=1).read_all().column("shares").to_pylist() == [HALF] * 3
    with pytest.raises(FeedError) as info:
        obook.audit(p).read_all()
    assert info.value.record == 5 and str(p) in str(info.value)
    assert "TotalVolumeTrade of security 600000 passes 2**63 - 1" in info.value.reason
