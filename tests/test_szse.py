"""Shenzhen Level-2: the text log and the AX-SBE binary against a pure-Python reference."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

import obook
from obook.errors import FeedError
from obook.feeds import detect_format
from obook.gen.szse import binary_record, generate, text_line

from hostile_support import lose_marker_checked
from reference_l2 import bbo_by_ticker, szse_bbo

CONTINUOUS = ((9 * 60 + 30) * 60 * 10**9, (14 * 60 + 57) * 60 * 10**9)


def _write(tmp_path, recs, binary=False, name=None):
    p = tmp_path / (name or ("day.bin" if binary else "day.log"))
    if binary:
        p.write_bytes(b"".join(binary_record(r) for r in recs))
    else:
        p.write_text("\n".join(text_line(r) for r in recs) + "\n")
    return p


@pytest.fixture(scope="module")
def recs():
    return generate(12_000, securities=6, seed=5)


@pytest.fixture(scope="module")
def files(recs, tmp_path_factory):
    d = tmp_path_factory.mktemp("szse")
    return _write(d, recs), _write(d, recs, binary=True)


def test_szse_generator_every_order_type_and_auctions(recs):
    kinds = {(r["MsgType"], chr(r.get("OrdType", 0) or r.get("ExecType", 0))) for r in recs}
    assert {(192, "2"), (192, "1"), (192, "U"), (191, "F"), (191, "4")} <= kinds
    assert {chr(r["Side"]) for r in recs if r["MsgType"] == 192} == set("12GF")
    auction = [r for r in recs if r["MsgType"] == 191 and r["TransactTime"] % 10**9 == 92500000]
    assert auction and any(r["SecurityID"].startswith("300") for r in recs)


def test_detect_szse_text_and_binary(files):
    assert (detect_format(files[0]), detect_format(files[1])) == ("szse", "szse-bin")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_szse_bbo_generated_equals_reference(tmp_path, seed):
    recs = generate(6000, securities=4, seed=seed)
    assert bbo_by_ticker(obook.bbo(_write(tmp_path, recs), workers=1).read_all()) == szse_bbo(recs)


@pytest.mark.parametrize("fn", [obook.bbo, obook.trades, obook.orders, obook.depth])
def test_szse_text_equals_binary(files, fn):
    assert fn(files[0], workers=1).read_all().equals(fn(files[1], workers=1).read_all())


@pytest.mark.parametrize("workers", [2, 3])
def test_szse_workers_identical(files, workers):
    for fn in (obook.bbo, obook.trades, obook.orders):
        for f in files:
            assert fn(f, workers=workers).read_all().equals(fn(f, workers=1).read_all())


def test_szse_no_crossed_book_in_continuous_trading(files):
    b = obook.bbo(files[0], workers=1).read_all()
    t = b["time"].to_numpy()
    cont = b.filter((t >= CONTINUOUS[0] + 10**9) & (t < CONTINUOUS[1]))
    both = cont.filter(pc.and_(pc.is_valid(cont["bid_px"]), pc.is_valid(cont["ask_px"])))
    assert both.num_rows > 1000
    assert pc.all(pc.less(both["bid_px"], both["ask_px"])).as_py()


def test_szse_trades_print_fill_prices(files, recs):
    tr = obook.trades(files[0], workers=1).read_all()
    fills = [r for r in recs if r["MsgType"] == 191 and r["ExecType"] == ord("F")]
    assert tr.num_rows == len(fills)
    assert tr["price"].to_pylist() == [r["LastPx"] for r in fills]
    assert tr["match"].to_pylist() == [r["ApplSeqNum"] for r in fills]


@pytest.mark.parametrize("seed", [5, 11])
def test_szse_trade_sides_equal_reference_entries_take_resting_side(tmp_path, seed):
    """Every printed fill's side (the resting order's) as the reference's; the fills of a
    held order that entered and crossed the book (price cage) take the other order's side:
    an entering buy's fills are 'S', not the bid's 'B'."""
    recs = generate(12_000, securities=6, seed=seed)     # 49 / 50 such fills on these days
    want: list = []
    szse_bbo(recs, want)
    p = _write(tmp_path, recs)
    for workers in (1, 2):
        tr = obook.trades(p, workers=workers).read_all()
        got = list(zip(tr["ticker"].to_pylist(), tr["match"].to_pylist(), tr["side"].to_pylist()))
        assert got == want


def _broken(recs, k, **change):
    recs = [dict(r) for r in recs]
    recs[k].update(change)
    return recs


def _first(recs, msg, start=3000):
    return next(i for i, r in enumerate(recs) if r["MsgType"] == msg and i > start)


@pytest.mark.parametrize("binary", [False, True])
def test_szse_unknown_type_strict_names_record(recs, tmp_path, binary):
    k = _first(recs, 192)
    p = _write(tmp_path, _broken(recs, k, MsgType=199, Price=0, OrderQty=0, Side=49, OrdType=50), binary)
    with pytest.raises(FeedError, match="unknown message type 199") as e:
        obook.bbo(p, workers=1).read_all()
    assert e.value.record == k + 1


def test_szse_malformed_line_strict_and_tolerant(recs, tmp_path):
    k = _first(recs, 192)
    lines = [text_line(r) for r in recs]
    lines[k] = lines[k].replace("OrderQty=", "OrderQty=x")
    p = tmp_path / "bad.log"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(FeedError, match="OrderQty is not an integer") as e:
        obook.bbo(p, workers=1).read_all()
    assert e.value.record == k + 1
    stats = {}
    obook.bbo(p, workers=1, on_error="skip", stats=stats).read_all()
    assert stats["skipped"].get("malformed record") == 1


@pytest.mark.parametrize("lost", ["//", "/"])
@pytest.mark.parametrize("where", ["inside", "last of its channel"])
def test_szse_message_line_without_its_marker_strict_error_tolerant_counted(recs, tmp_path, lost, where):
    """A message line that lost its leading // is a malformed line (strict: an error naming
    it after rows of the lines before it; tolerant: counted), not a line that carries
    nothing; a hex dump line and a blank line still carry nothing."""
    lines = [text_line(r) for r in recs]
    if where == "inside":
        k = _first(recs, 192)
    else:
        last = {}
        for i, r in enumerate(recs):
            last[r["ChannelNo"]] = i
        k = min(last.values())
    lose_marker_checked(tmp_path, lines, k, lost, "malformed record")


@pytest.mark.parametrize("field", ["OrderQty=", "TransactTime=", "Side="])
def test_szse_malformed_field_tolerant_counted_once_no_gap_any_workers(recs, tmp_path, field):
    """A line whose head is good and another field is not (the framer parses it whole and
    keeps its row for the sequence checks only): one malformed record, no sequence gap,
    the same rows and counts with 1, 2 and 3 workers."""
    k = _first(recs, 192)
    lines = [text_line(r) for r in recs]
    lines[k] = lines[k].replace(field, field + "x")
    p = tmp_path / "bad.log"
    p.write_text("\n".join(lines) + "\n")
    got = []
    for w in (1, 2, 3):
        stats = {}
        table = obook.bbo(p, workers=w, on_error="skip", stats=stats).read_all()
        got.append((table, stats["skipped"]))
        assert stats["skipped"].get("malformed record") == 1 and "sequence gap" not in stats["skipped"]
    assert all(t.equals(got[0][0]) and s == got[0][1] for t, s in got[1:])


@pytest.mark.parametrize("binary", [False, True])
def test_szse_sequence_gap_strict_error_tolerant_counted(recs, tmp_path, binary):
    k = _first(recs, 192)
    gapped = recs[:k] + recs[k + 1:]
    p = _write(tmp_path, gapped, binary)
    with pytest.raises(FeedError, match="sequence gap in channel") as e:
        obook.bbo(p, workers=1).read_all()
    nxt = next(i for i in range(k, len(gapped))
               if gapped[i]["ChannelNo"] == recs[k]["ChannelNo"] and gapped[i]["MsgType"] != 111)
    assert e.value.record == nxt + 1
    stats = {}
    obook.bbo(p, workers=1, on_error="skip", stats=stats).read_all()
    assert stats["skipped"].get("sequence gap") == 1


@pytest.mark.parametrize("binary", [False, True])
def test_szse_sequence_going_back_error_says_so_not_records_lost(recs, tmp_path, binary):
    """A day's records followed by the same records again: the ApplSeqNums go back, which
    the error says (records read twice), rather than that records were lost."""
    p = _write(tmp_path, recs + recs, binary)
    with pytest.raises(FeedError, match="sequence gap in channel") as e:
        obook.bbo(p, workers=1).read_all()
    first = next(i for i, r in enumerate(recs) if r["MsgType"] != 111)      # (a snapshot has no ApplSeqNum)
    assert e.value.record == len(recs) + first + 1
    assert "going back" in e.value.reason and "records lost" not in e.value.reason


def test_szse_cancel_of_unknown_order_strict_error(recs, tmp_path):
    k = next(i for i, r in enumerate(recs) if r["MsgType"] == 191 and r["ExecType"] == ord("4")
             and r["BidApplSeqNum"] and i > 3000)
    p = _write(tmp_path, _broken(recs, k, BidApplSeqNum=987654))
    with pytest.raises(FeedError, match="unknown order ref 987654"):
        obook.bbo(p, workers=1).read_all()


def test_szse_binary_refused_records_tolerant_same_any_workers_strict_names_first(recs, tmp_path):
    """Records the framer refuses (an unknown type, a bad SecurityID, an order of 50 bytes, a
    bad ExecType): the workers, which read the records' bytes themselves, skip the same
    ones: the same rows and counts with 1, 2 and 3 workers; strict mode names the first and
    delivers the rows before it."""
    import pyarrow as pa

    data = [binary_record(r) for r in recs]
    ks = [_first(recs, 192, 3000), _first(recs, 191, 5000), _first(recs, 192, 7000), _first(recs, 191, 9000)]
    data[ks[0]] = data[ks[0]][:1] + bytes([199]) + data[ks[0]][2:]
    data[ks[1]] = data[ks[1]][:4] + b"ABCDEFGHI" + data[ks[1]][13:]
    data[ks[2]] = data[ks[2]][:2] + (50).to_bytes(2, "little") + data[ks[2]][4:] + b"\0\0"
    data[ks[3]] = data[ks[3]][:52] + b"X" + data[ks[3]][53:]
    p = tmp_path / "bad.bin"
    p.write_bytes(b"".join(data))
    got = []
    for w in (1, 2, 3):
        stats = {}
        bbo = obook.bbo(p, workers=w, on_error="skip", stats=stats).read_all()
        got.append((bbo, obook.trades(p, workers=w, on_error="skip").read_all(), stats["skipped"]))
        assert stats["skipped"]["unknown message type"] == 1 and stats["skipped"]["malformed record"] == 3
    assert all(b.equals(got[0][0]) and t.equals(got[0][1]) and s == got[0][2] for b, t, s in got[1:])
    reader = obook.bbo(p, workers=2)
    batches = []
    with pytest.raises(FeedError, match="unknown message type 199") as e:
        for b in reader:
            batches.append(b)
    assert e.value.record == ks[0] + 1
    tolerant = got[0][0]
    assert pa.Table.from_batches(batches, schema=reader.schema).equals(
        tolerant.filter(pc.less(tolerant["seq"], ks[0] + 1)))


@pytest.mark.parametrize("field", ["ApplSeqNum", "BidApplSeqNum", "OfferApplSeqNum"])
def test_szse_binary_order_number_from_2_62_up_is_malformed_not_a_shared_book_key(recs, tmp_path, field):
    """The books name orders by keys (ref_key) whose far range would collide with the usual
    keys from 2**62 up: a binary record naming such an order is refused, not replayed."""
    data = [binary_record(r) for r in recs]
    k = _first(recs, 191, 5000) if field != "ApplSeqNum" else _first(recs, 192, 5000)
    at = {"ApplSeqNum": 15, "BidApplSeqNum": 24, "OfferApplSeqNum": 32}[field]
    data[k] = data[k][:at] + (2**62 + 7).to_bytes(8, "little") + data[k][at + 8:]
    p = tmp_path / "far.bin"
    p.write_bytes(b"".join(data))
    with pytest.raises(FeedError, match=f"bad {field}") as e:
        obook.bbo(p, workers=2).read_all()
    assert e.value.record == k + 1


def test_szse_binary_truncated_names_offset(files, tmp_path):
    data = files[1].read_bytes()
    p = tmp_path / "cut.bin"
    p.write_bytes(data[:-10])
    with pytest.raises(FeedError, match="truncated"):
        obook.bbo(p, workers=1).read_all()


@pytest.mark.parametrize("fn", [obook.bbo, obook.trades, obook.orders])
def test_szse_vendor_csv_equals_text_log(recs, tmp_path, fn):
    from obook.gen.szse import vendor_order, write_vendor

    ordered = vendor_order(recs)
    files = write_vendor(tmp_path / "vendor", ordered)
    assert len(files) == 2 * len({r["SecurityID"] for r in ordered})
    assert detect_format(files[0]) == "szse-csv"
    text = _write(tmp_path, ordered)
    got = fn(files, workers=1, format="szse-csv").read_all()
    assert got.num_rows > 100
    assert got.equals(fn(text, workers=1).read_all())
    assert fn(str(tmp_path / "vendor" / "*.csv"), workers=1).read_all().equals(got)     # a glob is the list


def test_szse_vendor_csv_bad_price_names_file_and_line(recs, tmp_path):
    from obook.gen.szse import vendor_order, write_vendor

    files = write_vendor(tmp_path / "vendor", vendor_order(recs)[:3000])
    lines = files[0].read_text().splitlines()
    lines[5] = lines[5].replace(",", ",x", 3).replace(",x", ",", 2)
    files[0].write_text("\n".join(lines) + "\n")
    with pytest.raises(FeedError) as e:
        obook.bbo(files, workers=1, format="szse-csv").read_all()
    assert str(files[0]) in str(e.value) and e.value.record == 6


def test_szse_own_best_rests_at_own_side_best(files, recs):
    own = {(r["SecurityID"], r["ApplSeqNum"]) for r in recs
           if r["MsgType"] == 192 and r["OrdType"] == ord("U") and r["SecurityID"] != "300999"}
    o = obook.orders(files[0], workers=1).read_all().to_pylist()
    adds = [r for r in o if r["action"] == "A" and (r["ticker"], r["ref"]) in own]
    assert len(adds) > 10
    for r in adds:   # the book just before: the best of its side equals the order's price
        before = [x for x in o if x["ticker"] == r["ticker"] and x["seq"] < r["seq"]]
        assert r["price"] > 0 and r["price"] in {x["price"] for x in before if x["side"] == r["side"]}


def test_szse_cage_held_orders_enter_are_cancelled_or_never_enter(files, recs):
    """The generated day's ChiNext orders outside the price cage: held (orders row H, not in
    the book), then some enter (row A, and their fills, naming them, follow in the feed),
    some are cancelled while held, some never enter; the other securities hold none."""
    o = obook.orders(files[0], workers=1).read_all().to_pylist()
    held = {(r["ticker"], r["ref"]) for r in o if r["action"] == "H"}
    assert held and all(t.startswith("300") for t, _ in held)
    first = {}
    for r in o:
        k = (r["ticker"], r["ref"])
        if k in held and r["action"] in "AX":
            first.setdefault(k, r)
    entered = {k for k, r in first.items() if r["action"] == "A"}
    cancelled = {k for k, r in first.items() if r["action"] == "X" and r["queue_shares_ahead"] is None}
    assert len(entered) >= 5 and len(cancelled) >= 5 and len(held - entered - cancelled) >= 1
    fills = {(r["SecurityID"], a) for r in recs if r["MsgType"] == 191 and r["ExecType"] == ord("F")
             for a in (r["BidApplSeqNum"], r["OfferApplSeqNum"])}
    assert entered & fills
    bbo = obook.bbo(files[0], workers=1).read_all()
    for t, ref in entered:   # held at its order's record: no BBO row there
        seq = next(r["seq"] for r in o if (r["ticker"], r["ref"]) == (t, ref) and r["action"] == "H")
        assert not pc.any(pc.and_(pc.equal(bbo["seq"], seq), pc.equal(bbo["ticker"], t))).as_py()
