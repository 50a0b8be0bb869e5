"""Shenzhen records with values outside the spec (a channel past the per-channel tables,
ApplSeqNum -1, impossible TransactTimes, unknown Side / OrdType, a binary record of
another exchange): a clear error naming the line or record (strict), a counted skip
(tolerant), never a crash or a silent replay; the rows before are delivered."""

from __future__ import annotations

import pytest

import obook
from obook.errors import FeedError, ObookError
from obook.gen.szse import binary_record, text_line, vendor_order, write_vendor

from hostile_support import batches_until_error, cli_error
from reference_l2 import bbo_by_ticker, szse_bbo

STAMP = 20240105_093000_000


def _order(appl, side=49, price=100_000, ch=2011, **kw):
    return dict(MsgType=192, SecurityID="000001", ChannelNo=ch, ApplSeqNum=appl, Price=price, OrderQty=100,
                Side=side, OrdType=50, TransactTime=STAMP + appl, **kw)


def _good():
    return [_order(1), _order(2, side=50, price=100_100), _order(3, price=100_050)]


def _write(tmp_path, recs, binary=False):
    p = tmp_path / ("day.bin" if binary else "day.log")
    if binary:
        p.write_bytes(b"".join(binary_record(r) for r in recs))
    else:
        p.write_text("\n".join(text_line(r) for r in recs) + "\n")
    return p


BAD_TEXT = {
    "channel_65536": (dict(ChannelNo=65536), "bad ChannelNo 65536"),
    "channel_70000": (dict(ChannelNo=70000), "bad ChannelNo 70000"),
    "channel_negative": (dict(ChannelNo=-5), "bad ChannelNo -5"),
    "applseqnum_minus_1": (dict(ApplSeqNum=-1), "bad ApplSeqNum -1"),
    "transacttime_11_nines": (dict(TransactTime=99999999999), "bad TransactTime 99999999999"),
    "transacttime_minus_1": (dict(TransactTime=-1), "bad TransactTime -1"),
    "transacttime_hour_25": (dict(TransactTime=20240105_250000_000), "bad TransactTime"),
    "side_3": (dict(Side=51), "bad Side 51"),
    "ordtype_x": (dict(OrdType=88), "bad OrdType 88"),
    "price_negative": (dict(Price=-100), "bad Price -100"),
    "orderqty_past_int64": (dict(OrderQty=2**63 - 1), "OrderQty out of range: '9223372036854775807'"),
    "orderqty_20_digits": (dict(OrderQty=-10**19), "OrderQty out of range: '-10000000000000000000'"),
}


@pytest.mark.parametrize("case", sorted(BAD_TEXT))
def test_szse_text_value_outside_spec_strict_names_line_rows_before_delivered(tmp_path, case):
    change, reason = BAD_TEXT[case]
    recs = _good() + [{**_order(4), **change}] + [_order(5)]
    path = _write(tmp_path, recs)
    reader = obook.bbo(path, workers=1)
    rows = []
    with pytest.raises(FeedError) as info:
        for b in reader:
            rows += b.to_pylist()
    assert info.value.record == 4 and reason in info.value.reason, info.value
    assert [r["seq"] for r in rows] == [1, 2, 3]


@pytest.mark.parametrize("case", sorted(BAD_TEXT))
def test_szse_text_value_outside_spec_tolerant_counted_skip(tmp_path, case):
    change, _ = BAD_TEXT[case]
    path = _write(tmp_path, _good() + [{**_order(4), **change}])
    stats: dict = {}
    rows = obook.bbo(path, workers=1, on_error="skip", stats=stats).read_all().to_pylist()
    assert [r["seq"] for r in rows] == [1, 2, 3]
    assert sum(stats["skipped"].values()) == 1 and "sequence gap" not in stats["skipped"], stats["skipped"]


#: a line whose head (the fields routing and the sequence check read) is unreadable: its
#: ApplSeqNum is unknown; (edit of an order line, what a tolerant replay counts)
BAD_HEAD = {
    "no_marker": (lambda s: s.lstrip("/"), "malformed record"),
    "token_without_equals": (lambda s: s.replace("MsgType=192", "MsgType=192 junk"), "malformed record"),
    "unknown_msgtype": (lambda s: s.replace("MsgType=192", "MsgType=193"), "unknown message type"),
    "msgtype_not_integer": (lambda s: s.replace("MsgType=192", "MsgType=1x"), "malformed record"),
    "no_applseqnum": (lambda s: s.replace(" ApplSeqNum=4", ""), "malformed record"),
    "applseqnum_not_integer": (lambda s: s.replace("ApplSeqNum=4", "ApplSeqNum=4x"), "malformed record"),
    "channel_not_integer": (lambda s: s.replace("ChannelNo=2011", "ChannelNo=2x"), "malformed record"),
    "source_101": (lambda s: s.replace("SecurityIDSource=102", "SecurityIDSource=101"), "malformed record"),
}


def _bad_line(case):
    if case in BAD_TEXT:
        return text_line({**_order(4), **BAD_TEXT[case][0]}), "malformed record"
    edit, kind = BAD_HEAD[case]
    return edit(text_line(_order(4))), kind


@pytest.mark.parametrize("case", sorted(BAD_TEXT) + sorted(BAD_HEAD))
def test_szse_text_bad_line_before_more_records_tolerant_one_skip_no_gap(tmp_path, case):
    bad, kind = _bad_line(case)
    lines = [text_line(r) for r in _good()] + [bad, text_line(_order(5, price=100_060)), text_line(_order(6))]
    path = tmp_path / "day.log"
    path.write_text("\n".join(lines) + "\n")
    stats: dict = {}
    rows = obook.bbo(path, workers=1, on_error="skip", stats=stats).read_all().to_pylist()
    assert [r["seq"] for r in rows] == [1, 2, 3, 5]
    assert stats["skipped"] == {kind: 1}


def test_szse_text_gap_wider_than_the_lines_skipped_before_it_tolerant_still_counted(tmp_path):
    bad, _ = _bad_line("no_marker")
    lines = [text_line(r) for r in _good()] + [bad, text_line(_order(7, price=100_060))]
    path = tmp_path / "day.log"
    path.write_text("\n".join(lines) + "\n")
    stats: dict = {}
    rows = obook.bbo(path, workers=1, on_error="skip", stats=stats).read_all().to_pylist()
    assert [r["seq"] for r in rows] == [1, 2, 3, 5]
    assert stats["skipped"] == {"malformed record": 1, "sequence gap": 1}


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("channel", [65536, 70000, 10**12])
def test_szse_cli_channel_past_tables_one_line_error_not_a_crash(tmp_path, channel, compiled):
    path = _write(tmp_path, _good() + [_order(4, ch=channel)])
    line = cli_error("bbo", path, compiled=compiled)
    assert f"line 4: malformed record: bad ChannelNo {channel}" in line


TICKS_HEADER = "ApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo\n"


def _with_ticks(orders):
    """An orders file and its ticks file (no execution): a vendor day is read as a pair."""
    ticks = orders.with_name(orders.name.replace("orders", "ticks"))
    ticks.write_text(TICKS_HEADER)
    return [orders, ticks]


def test_szse_vendor_csv_channel_past_tables_error_names_record(tmp_path):
    recs = vendor_order(_good() + [_order(4, ch=70000)])
    files = _with_ticks(write_vendor(tmp_path / "vendor", recs)[0])
    with pytest.raises(FeedError, match="bad ChannelNo 70000"):
        obook.bbo(files, workers=1, format="szse-csv").read_all()
    line = cli_error("bbo", "--format", "szse-csv", *files)
    assert "bad ChannelNo 70000" in line


@pytest.mark.parametrize("args", [("bbo", "-"), ("bbo", "--format", "szse-csv", "-"), ("table", "trades", "-")])
def test_szse_vendor_csv_on_stdin_one_line_error_asks_for_the_files(tmp_path, args):
    orders = _with_ticks(write_vendor(tmp_path / "vendor", vendor_order(_good()))[0])[0]
    with open(orders, "rb") as f:
        line = cli_error(*args, stdin=f)
    assert line == ("error: <stdin>: a Shenzhen vendor CSV feed is an orders and a ticks file for each security, "
                    "merged by time: give the files, not a stream")


def test_szse_cancel_naming_applseqnum_minus_1_is_refused(tmp_path):
    cancel = dict(MsgType=191, SecurityID="000001", ChannelNo=2011, ApplSeqNum=4, BidApplSeqNum=-1,
                  OfferApplSeqNum=0, LastPx=0, LastQty=100, ExecType=52, TransactTime=STAMP + 4)
    path = _write(tmp_path, _good() + [cancel])
    with pytest.raises(FeedError, match="bad BidApplSeqNum -1") as info:
        obook.bbo(path, workers=1).read_all()
    assert info.value.record == 4


def test_szse_applseqnum_minus_1_does_not_bypass_the_gap_check(tmp_path):
    """-1 was the 'none seen' mark of the sequence check: a record numbered -1 reset it and
    the gap after it went unseen."""
    path = _write(tmp_path, _good() + [_order(-1), _order(9)])
    stats: dict = {}
    obook.bbo(path, workers=1, on_error="skip", stats=stats).read_all()
    assert stats["skipped"] == {"malformed record": 1, "sequence gap": 1}, stats["skipped"]


BAD_BIN = {
    "source_101": (0, 101, "bad SecurityIDSource"),
    "applseqnum_2_64_minus_1": (15, (2**64 - 1).to_bytes(8, "little"), "bad ApplSeqNum"),
    "applseqnum_0": (15, bytes(8), "bad ApplSeqNum"),
    "side_3": (24 + 12, 51, "bad Side"),
    "ordtype_x": (24 + 13, 88, "bad OrdType"),
    "transacttime_minus_1": (24 + 14, (2**64 - 1).to_bytes(8, "little"), "bad TransactTime"),
    "transacttime_11_nines": (24 + 14, (99999999999).to_bytes(8, "little"), "bad TransactTime"),
}


@pytest.mark.parametrize("case", sorted(BAD_BIN))
def test_szse_binary_field_outside_spec_strict_error_tolerant_counted(tmp_path, case):
    at, value, reason = BAD_BIN[case]
    data = [binary_record(r) for r in _good() + [_order(4)]]
    raw = bytearray(data[3])
    if isinstance(value, int):
        raw[at] = value
    else:
        raw[at:at + len(value)] = value
    data[3] = bytes(raw)
    path = tmp_path / "day.bin"
    path.write_bytes(b"".join(data))
    with pytest.raises(FeedError) as info:
        obook.bbo(path, workers=1).read_all()
    assert info.value.record == 4 and reason in info.value.reason, info.value
    stats: dict = {}
    rows = obook.bbo(path, workers=2, on_error="skip", stats=stats).read_all()
    assert rows.num_rows == 3 and stats["skipped"] == {"malformed record": 1}
    assert reason in cli_error("bbo", path)


@pytest.mark.parametrize("length", [3, 40, 200])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_szse_binary_length_that_loses_the_records_after_it_ends_either_mode(tmp_path, length, on_error):
    """A record length below the header, or one after which no record of a known type and
    length follows, leaves the records after it unfound: a tolerant replay ends there too,
    with the strict replay's error and the rows before it."""
    recs = _good() + [_order(a) for a in range(4, 40)]
    data = [binary_record(r) for r in recs]
    raw = bytearray(data[3])
    raw[2:4] = length.to_bytes(2, "little")
    data[3] = bytes(raw)
    path = tmp_path / "day.bin"
    path.write_bytes(b"".join(data))
    batches, err = batches_until_error(obook.bbo(path, workers=2, on_error=on_error))
    assert isinstance(err, FeedError) and (err.record, err.reason) == (4, f"malformed record: length {length}")
    assert sum(b.num_rows for b in batches) == 3


def test_szse_binary_record_of_another_length_whole_is_passed_over_in_a_tolerant_replay(tmp_path):
    recs = _good() + [_order(a) for a in range(4, 40)]
    data = [binary_record(r) for r in recs]
    data[3] = data[3][:2] + (len(data[3]) + 8).to_bytes(2, "little") + data[3][4:] + bytes(8)   # its length holds
    path = tmp_path / "day.bin"
    path.write_bytes(b"".join(data))
    stats: dict = {}
    obook.bbo(path, workers=1, on_error="skip", stats=stats).read_all()
    assert stats["skipped"] == {"malformed record": 1}      # its ApplSeqNum's hole is its skip, not a gap
    assert stats["complete"] and stats["records"] == 39 and stats["live_orders"] == 38


def test_szse_binary_execution_transacttime_outside_spec_refused(tmp_path):
    fill = dict(MsgType=191, SecurityID="000001", ChannelNo=2011, ApplSeqNum=4, BidApplSeqNum=1,
                OfferApplSeqNum=2, LastPx=100_000, LastQty=100, ExecType=70, TransactTime=0)
    raw = binary_record(fill)
    raw = raw[:24 + 29] + (99999999999).to_bytes(8, "little") + raw[24 + 37:]
    path = tmp_path / "day.bin"
    path.write_bytes(b"".join(binary_record(r) for r in _good()) + raw)
    with pytest.raises(FeedError, match="bad TransactTime") as info:
        obook.bbo(path, workers=1).read_all()
    assert info.value.record == 4


HEADER = "ApplSeqNum,Side,OrdType,Price,OrderQty,TransactTime,ChannelNo\n"
GOOD_ROWS = "1,1,2,10.0000,1.00,20240105093000001,2011\n2,2,2,10.0100,1.00,20240105093000002,2011\n"
ROW3 = "3,1,2,{px},1.00,20240105093000003,2011\n"

VENDOR_CASES = {
    "field_over_128_kb": (HEADER + GOOD_ROWS + "3,1,2,\"" + "9" * 200_000 + "\",1.00,20240105093000003,2011\n",
                          4, "field larger than field limit"),
    "gbk_bytes": ((HEADER + GOOD_ROWS).encode() + "3,1,2,10.0000,1.00,20240105093000003,2011,深圳\n".encode("gbk"),
                  4, "not UTF-8 text"),
    "price_snan": (HEADER + GOOD_ROWS + ROW3.format(px="sNaN"), 4, "Price is not a finite number: 'sNaN'"),
    "price_infinity": (HEADER + GOOD_ROWS + ROW3.format(px="Infinity"), 4, "Price is not a finite number"),
    "price_nan": (HEADER + GOOD_ROWS + ROW3.format(px="NaN"), 4, "Price is not a finite number"),
    "price_1e100000000": (HEADER + GOOD_ROWS + ROW3.format(px="1e100000000"), 4, "Price out of range"),
    "price_20_digits": (HEADER + GOOD_ROWS + ROW3.format(px="9" * 20), 4, "Price out of range"),
    "channel_5000_digits": (HEADER + GOOD_ROWS + "3,1,2,10.0000,1.00,20240105093000003," + "7" * 5000 + "\n",
                            4, "malformed row"),
    "line_too_long": (HEADER + GOOD_ROWS + "3,1,2,10.0000,1.00,20240105093000003,2011," + "x" * (3 << 20) + "\n",
                      4, "line longer than"),
}


@pytest.mark.parametrize("case", sorted(VENDOR_CASES))
def test_szse_vendor_csv_hostile_row_one_line_error_names_file_line_rows_before(tmp_path, case):
    text, line, reason = VENDOR_CASES[case]
    folder = tmp_path / "vendor"
    folder.mkdir()
    path = folder / "000001_orders.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    files = _with_ticks(path)
    rows = []
    with pytest.raises(FeedError) as info:
        for b in obook.bbo(files, workers=1, format="szse-csv"):
            rows += b.to_pylist()
    assert info.value.path == str(path) and info.value.record == line and reason in info.value.reason, info.value
    assert len(str(info.value)) < 400 and [r["seq"] for r in rows] == [1, 2]
    err = cli_error("bbo", "--format", "szse-csv", *files)
    assert f"line {line}: " in err and reason in err


@pytest.mark.parametrize("binary", [False, True])
def test_szse_cut_zstd_log_rows_before_then_clear_error(tmp_path, binary):
    """A zstd stream cut inside a frame: the rows before, then the error (the decoders once
    failed on the engine's empty closing batch)."""
    import zstandard

    recs = [_order(i, price=100_000 + i * 7919 % 10_007) for i in range(1, 6001)]
    path = _write(tmp_path, recs, binary)
    blob = zstandard.ZstdCompressor().compress(path.read_bytes())
    cut = tmp_path / (path.name + ".zst")
    cut.write_bytes(blob[:len(blob) * 3 // 4])
    batches, error = batches_until_error(obook.bbo(cut, workers=1))
    assert isinstance(error, FeedError) and batches


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("what", ["order", "fill"])
def test_szse_negative_price_strict_names_record_rows_before_delivered(tmp_path, binary, what):
    bad = ({**_order(4), "Price": -100} if what == "order" else
           dict(MsgType=191, SecurityID="000001", ChannelNo=2011, ApplSeqNum=4, BidApplSeqNum=3, OfferApplSeqNum=2,
                LastPx=-100, LastQty=10, ExecType=70, TransactTime=STAMP + 4))
    path = _write(tmp_path, _good() + [bad] + [_order(5)], binary)
    rows, error = batches_until_error(obook.bbo(path, workers=1))
    assert isinstance(error, FeedError) and error.record == 4, error
    assert "Price" in error.reason or "LastPx" in error.reason
    assert [r["seq"] for b in rows for r in b.to_pylist()] == [1, 2, 3]


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("workers", [1, 2])
def test_szse_strict_error_after_an_incoming_order_delivers_its_fill_as_the_cut_feed(tmp_path, binary, workers):
    """An incoming order, its fill, then a bad record (and a record that would continue
    the order's fills): the rows before the bad record are those of the feed cut there."""
    fill = lambda appl, qty: dict(MsgType=191, SecurityID="000001", ChannelNo=2011, ApplSeqNum=appl,  # noqa: E731
                                  BidApplSeqNum=2, OfferApplSeqNum=1, LastPx=100_000, LastQty=qty, ExecType=70,
                                  TransactTime=STAMP + appl)
    recs = [_order(1, side=50, price=100_000), _order(2, side=49, price=100_000), fill(3, 50)]
    (tmp_path / "cut").mkdir()
    cut = _write(tmp_path / "cut", recs, binary)
    want = obook.orders(cut, workers=1).read_all().to_pylist()
    full = _write(tmp_path, recs + [{**_order(4), "Side": 51}, fill(5, 50)], binary)
    rows, error = batches_until_error(obook.orders(full, workers=workers))
    assert isinstance(error, FeedError) and error.record == 4
    got = [r for b in rows for r in b.to_pylist()]
    assert [(r["seq"], r["action"], r["ref"]) for r in got] == [(r["seq"], r["action"], r["ref"]) for r in want]
    assert len(want) == 3


def test_szse_vendor_csv_progress_counts_the_files_bytes_up_to_their_size(tmp_path):
    from obook.engine.replay import Replay
    from obook.gen.szse import generate

    files = sorted(write_vendor(tmp_path / "vendor", generate(3000, 2, 1)))
    seen = []
    Replay(files, workers=1, format="szse-csv", on_error="skip",
           progress=lambda done, phase=None: seen.append(done)).reader().read_all()
    total = sum(f.stat().st_size for f in files)
    assert seen and seen == sorted(seen) and 0 < seen[-1] <= total and seen[-1] >= 0.9 * total


def _vendor_day(tmp_path, name="vendor"):
    """A generated vendor day's files (every security's pair), sorted."""
    from obook.gen.szse import generate

    return sorted(write_vendor(tmp_path / name, vendor_order(generate(3000, 3, 1))))


def _rewrite_columns(path, order):
    """Rewrite a vendor file with its columns (header and values alike) in ``order``."""
    import csv

    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    at = [rows[0].index(c) for c in order]
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([[r[i] for i in at] for r in rows])


def test_szse_vendor_csv_columns_in_another_order_replay_by_their_header_names(tmp_path):
    files = _vendor_day(tmp_path)
    want = obook.orders(files, workers=1, format="szse-csv").read_all()
    orders = next(f for f in files if f.name.endswith("_orders.csv"))
    ticks = next(f for f in files if f.name.endswith("_ticks.csv"))
    _rewrite_columns(orders, ["ChannelNo", "ApplSeqNum", "Side", "OrdType", "OrderQty", "Price", "TransactTime"])
    _rewrite_columns(ticks, ["TransactTime", "Qty", "Price", "ExecType", "OfferApplSeqNum", "BidApplSeqNum",
                             "ApplSeqNum", "ChannelNo"])
    assert orders.read_text().startswith("ChannelNo,ApplSeqNum,Side,OrdType,OrderQty,Price,")
    assert want.num_rows > 100
    assert obook.orders(files, workers=1, format="szse-csv").read_all().equals(want)
    assert obook.orders(files, workers=1).read_all().equals(want)        # detected by its header names


BAD_HEADERS = {
    "orders_without_orderqty": ("orders", lambda h: h.replace("OrderQty", "Volume"),
                                "an orders header lacks OrderQty: found 'ApplSeqNum,Side,OrdType,Price,Volume,"),
    "ticks_without_exectype": ("ticks", lambda h: h.replace("ExecType,", ""), "a ticks header lacks ExecType"),
    "letters": ("orders", lambda h: "a,b,c,d,e,f,g",
                "not a Shenzhen vendor orders or ticks header: found 'a,b,c,d,e,f,g'"),
    "price_twice": ("ticks", lambda h: h + ",Price", "the header names Price twice"),
}


@pytest.mark.parametrize("case", sorted(BAD_HEADERS))
@pytest.mark.parametrize("given", [True, False])
def test_szse_vendor_csv_header_not_naming_its_columns_error_names_file_and_what_is_expected(tmp_path, case, given):
    kind, change, reason = BAD_HEADERS[case]
    files = _vendor_day(tmp_path)
    bad = next(f for f in files if f.name.endswith(f"_{kind}.csv"))
    lines = bad.read_text().split("\n")
    lines[0] = change(lines[0])
    bad.write_text("\n".join(lines))
    fmt = {"format": "szse-csv"} if given else {}
    with pytest.raises(FeedError) as info:
        obook.bbo(files, workers=1, **fmt).read_all()
    assert info.value.path == str(bad) and info.value.record == 1 and reason in info.value.reason, info.value
    assert "in any order" in info.value.reason
    err = cli_error("bbo", *(["--format", "szse-csv"] if given else []), *files)
    assert err.startswith(f"error: {bad}: line 1: ") and reason in err


@pytest.mark.parametrize("given", [True, False])
def test_szse_vendor_csv_empty_file_error_says_it_is_empty(tmp_path, given):
    files = _vendor_day(tmp_path)
    empty = tmp_path / "000009_orders.csv"
    empty.write_bytes(b"")
    fmt = {"format": "szse-csv"} if given else {}
    with pytest.raises(FeedError, match="the file is empty: a Shenzhen vendor CSV file starts with its header line") as info:
        obook.bbo([*files, empty], workers=1, **fmt).read_all()
    assert info.value.path == str(empty)
    err = cli_error("bbo", *(["--format", "szse-csv"] if given else []), *files, empty)
    assert err.startswith(f"error: {empty}: feed: the file is empty"), err


def _vendor_change(tmp_path, kind, line, change):
    """A vendor day whose first ``kind`` file has ``change`` applied to its line ``line``:
    (files, that file, rows of the day before the change, the changed row's record)."""
    files = _vendor_day(tmp_path)
    bad = next(f for f in files if f.name.endswith(f"_{kind}.csv"))
    lines = bad.read_text().split("\n")
    row = lines[line - 1]
    lines[line - 1] = change(row)
    assert lines[line - 1] != row
    bad.write_text("\n".join(lines))
    return files, bad, row


def _cell(row: str, i: int, value: str) -> str:
    """A CSV row with its cell ``i`` set to ``value``."""
    cells = row.split(",")
    cells[i] = value
    return ",".join(cells)


@pytest.mark.parametrize("kind, line, change, reason", [
    ("orders", 3, lambda r: _cell(r, 1, "X"), "malformed record: bad Side 88"),
    ("ticks", 4, lambda r: _cell(r, 5, "Z"), "malformed record: bad ExecType 90"),
])
def test_szse_vendor_csv_bad_record_error_names_its_file_and_line_merged_record_in_parentheses(
        tmp_path, kind, line, change, reason):
    files, bad, row = _vendor_change(tmp_path, kind, line, change)
    rows, error = batches_until_error(obook.bbo(files, workers=1, format="szse-csv"))
    assert isinstance(error, FeedError) and error.path == str(bad) and error.record == line, error
    assert error.reason.startswith(reason) and error.reason.endswith(f"(line {error.feed_record} of the merged feed)")
    seqs = [r["seq"] for b in rows for r in b.to_pylist()]
    assert seqs and max(seqs) < error.feed_record
    err = cli_error("bbo", "--format", "szse-csv", *files)
    assert err == f"error: {bad}: line {line}: {error.reason}"


@pytest.mark.parametrize("stamp", ["2024010509150009", "2024010525150009", "-20240105091500096"])
def test_szse_vendor_csv_transacttime_not_a_stamp_error_names_it_not_a_sequence_gap(tmp_path, stamp):
    files, bad, _ = _vendor_change(tmp_path, "orders", 3, lambda r: _cell(r, 5, stamp))
    with pytest.raises(FeedError) as info:
        obook.bbo(files, workers=1, format="szse-csv").read_all()
    assert info.value.path == str(bad) and info.value.record == 3, info.value
    assert info.value.reason == f"bad TransactTime {stamp}: not a YYYYMMDDHHMMSSsss time"


def test_szse_vendor_csv_row_shorter_than_its_header_names_file_and_line(tmp_path):
    files, bad, _ = _vendor_change(tmp_path, "orders", 4, lambda r: r.rsplit(",", 1)[0])
    with pytest.raises(FeedError) as info:
        obook.bbo(files, workers=1, format="szse-csv").read_all()
    assert info.value.path == str(bad) and info.value.record == 4
    assert info.value.reason == "malformed row: 6 fields, its header has 7"


@pytest.mark.parametrize("name", ["2024-03-04.csv", "orders_000001.csv"])
def test_szse_vendor_csv_file_name_without_security_id_is_refused(tmp_path, name):
    files = _vendor_day(tmp_path)
    odd = files[0].rename(files[0].with_name(name))
    with pytest.raises(ObookError, match="the file name must start with the security id"):
        obook.bbo([odd, *files[1:]], workers=1, format="szse-csv").read_all()


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("last", [False, True])
def test_szse_own_best_on_an_empty_side_without_its_cancel_never_rests(tmp_path, binary, last):
    """An own-best buy (Price 0) with no bid resting, its cancel missing (a damaged feed, or
    the feed's last record): the exchange cancels such an order, so it never rests, never at
    price 0; the orders after it replay as the reference does."""
    recs = [_order(1, side=50, price=100_100), {**_order(2, price=0), "OrdType": 85}]
    recs += [] if last else [_order(3, price=100_000), {**_order(4, price=0), "OrdType": 85}]
    path = _write(tmp_path, recs, binary)
    orders = obook.orders(path, workers=1).read_all().to_pylist()
    assert [r["ref"] for r in orders] == ([1] if last else [1, 3, 4])
    assert all(r["price"] > 0 for r in orders)
    bbo = obook.bbo(path, workers=1).read_all()
    assert 0 not in bbo.column("bid_px").to_pylist()
    assert bbo_by_ticker(bbo) == szse_bbo(recs)
    depth = obook.depth(path, workers=1).read_all()
    assert 0 not in depth.column("bid_px_1").to_pylist()


def test_szse_simulate_own_best_on_an_empty_side_without_its_cancel_gives_no_bid_to_sell_into(tmp_path):
    """The simulator's view of the feed's book: an own-best buy on an empty bid whose cancel
    does not follow never rests there, so a market sell after it finds no bid (cancelled
    unfilled), never a fill at price 0."""
    import csv

    stamp = 20240105_093100_000
    recs = [{**_order(1, side=50, price=100_100), "TransactTime": stamp + 1},
            {**_order(2, price=0), "OrdType": 85, "TransactTime": stamp + 2},
            {**_order(3, side=50, price=100_200), "TransactTime": stamp + 3}]
    path = _write(tmp_path, recs)
    last = obook.bbo(path, workers=1).read_all().column("time").to_pylist()[-1]
    orders = tmp_path / "orders.csv"
    with open(orders, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time", "instrument", "order_id", "action", "side", "type", "tif", "price", "quantity"])
        w.writerow([last + 1, "000001", 1, "new", "sell", "market", "IOC", "", 100])
    r = obook.simulate(path, orders, latency=0)
    assert r.fills.num_rows == 0
    assert r.summary.select(["status", "filled"]).to_pylist() == [{"status": "cancelled", "filled": 0}]
