"""Shenzhen vendor CSV files as CSV writers write them (Python's csv module, pandas.to_csv):
quoted fields, CRLF line ends, a UTF-8 byte order mark, blank lines after the header. Each
replays to the tables of the plain files, ``timestamp`` column included, whether the format
is given or detected; line ends of a CR alone are an error naming the file and line 1."""

from __future__ import annotations

import csv
import io

import pytest

import obook
from obook.errors import FeedError
from obook.feeds import SNIFF_BYTES, detect_format
from obook.feeds.szse.vendor import session_date, sniff
from obook.gen.szse import generate, vendor_order, write_vendor

from hostile_support import cli_error

TABLES = ("bbo", "trades", "orders", "depth")
NUMERIC = {"ApplSeqNum", "BidApplSeqNum", "OfferApplSeqNum", "Price", "Qty", "OrderQty", "TransactTime", "ChannelNo"}


def _csv(rows, **options) -> bytes:
    out = io.StringIO(newline="")
    csv.writer(out, **options).writerows(rows)
    return out.getvalue().encode()


def _plain(rows) -> bytes:
    return _csv(rows, lineterminator="\n")


def _quoted_transacttime(rows) -> bytes:
    at = rows[0].index("TransactTime")
    return "".join(",".join(f'"{c}"' if i == at and n else c for i, c in enumerate(r)) + "\n"
                   for n, r in enumerate(rows)).encode()


def _nonnumeric(rows) -> bytes:
    """pandas.to_csv(quoting=QUOTE_NONNUMERIC) of the file read with its numbers as numbers:
    the names and the character columns quoted, prices as floats (``49.29``)."""
    kinds = [float if c in ("Price", "Qty", "OrderQty") else int if c in NUMERIC else str for c in rows[0]]
    return _csv([rows[0]] + [[k(c) for k, c in zip(kinds, r)] for r in rows[1:]], quoting=csv.QUOTE_NONNUMERIC)


#: a CSV writer's variant of a vendor file: its rows (header first) -> the file's bytes
WRITTEN = {
    "blank_line_after_header": lambda rows: _plain(rows[:1]) + b"\n" + _plain(rows[1:]),
    "blank_lines_of_spaces_and_crlf_after_header": lambda rows: _plain(rows[:1]) + b"\n  \n\r\n" + _plain(rows[1:]),
    "quoted_transacttime": _quoted_transacttime,
    "csv_quote_all_crlf": lambda rows: _csv(rows, quoting=csv.QUOTE_ALL),
    "csv_quote_nonnumeric": _nonnumeric,
    "crlf": lambda rows: _csv(rows),
    "byte_order_mark": lambda rows: b"\xef\xbb\xbf" + _plain(rows),
    "byte_order_mark_quote_all": lambda rows: b"\xef\xbb\xbf" + _csv(rows, quoting=csv.QUOTE_ALL),
    "blank_line_after_header_crlf_quote_all": lambda rows: _csv(rows[:1], quoting=csv.QUOTE_ALL) + b"\r\n"
    + _csv(rows[1:], quoting=csv.QUOTE_ALL),
}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """(the files of a generated vendor day, their tables by name)."""
    files = sorted(write_vendor(tmp_path_factory.mktemp("szse") / "vendor", vendor_order(generate(3000, 2, 1))))
    return files, {t: obook.table(t, files, workers=1, format="szse-csv").read_all() for t in TABLES}


def _rewrite(files, folder, variant, rename=lambda name: name):
    """The files written again into ``folder`` as WRITTEN[variant] writes them."""
    folder.mkdir()
    out = []
    for f in files:
        with open(f, newline="") as src:
            rows = list(csv.reader(src))
        out.append(folder / rename(f.name))
        out[-1].write_bytes(WRITTEN[variant](rows))
    return out


@pytest.mark.parametrize("given", [True, False])
@pytest.mark.parametrize("variant", sorted(WRITTEN))
def test_szse_vendor_csv_as_csv_writers_write_it_equal_tables_timestamp_included(plain, tmp_path, variant, given):
    files, want = plain
    written = _rewrite(files, tmp_path / "vendor", variant)
    assert written[0].read_bytes() != files[0].read_bytes()
    fmt = {"format": "szse-csv"} if given else {}
    for t in TABLES:
        got = obook.table(t, written, workers=1, **fmt).read_all()
        assert "timestamp" in got.column_names and got.num_rows > 50, t
        assert got.equals(want[t]), t


@pytest.mark.parametrize("variant", ["csv_quote_all_crlf", "byte_order_mark", "byte_order_mark_quote_all"])
def test_szse_vendor_csv_quoted_or_marked_header_other_file_names_detected(plain, tmp_path, variant):
    """Files named otherwise than ``000001_orders.csv`` are told by their header alone, the
    ticks header (and a quoted orders header) longer than the head a sniffer gets."""
    files, want = plain
    written = _rewrite(files, tmp_path / "vendor", variant, lambda n: n.replace("_orders", ".o").replace("_ticks", ".t"))
    assert {detect_format(f) for f in written} == {"szse-csv"}
    assert obook.bbo(written, workers=1).read_all().equals(want["bbo"])


@pytest.mark.parametrize("header", [
    b'"ApplSeqNum","BidApplSeqNum","OfferApplSeqNum","Price","Qty","ExecType","TransactTime","ChannelNo"\r\n',
    b'\xef\xbb\xbfApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo\n',
    b'"ApplSeqNum","Side","OrdType","Price","OrderQty","TransactTime","ChannelNo"\n',
], ids=["ticks_quoted", "ticks_byte_order_mark", "orders_quoted"])
def test_sniff_vendor_header_quoted_or_after_byte_order_mark_cut_at_head_surer_than_csv(header):
    assert len(header) > SNIFF_BYTES
    assert sniff("day.csv", header[:SNIFF_BYTES]) == 200


@pytest.mark.parametrize("first_rows", [
    "\n\n1,1,2,10.00,1.00,20190102093000120,2011\n",
    '"1","1","2","10.00","1.00","20190102093000120","2011"\r\n',
    "   \n1,1,2,10.00,1.00,20190102093000120,2011\n",
    "\n" * 5000 + "1,1,2,10.00,1.00,20190102093000120,2011\n",
], ids=["blank_lines", "quoted_crlf", "line_of_spaces", "blank_lines_past_4_kb"])
def test_session_date_first_row_after_blank_lines_or_quoted_is_its_day(tmp_path, first_rows):
    p = tmp_path / "000001_orders.csv"
    p.write_text("ApplSeqNum,Side,OrdType,Price,OrderQty,TransactTime,ChannelNo\n" + first_rows)
    assert str(session_date(str(p))) == "2019-01-02"


def test_session_date_first_row_refused_is_none(tmp_path):
    p = tmp_path / "000001_orders.csv"
    p.write_text("ApplSeqNum,Side,OrdType,Price,OrderQty,TransactTime,ChannelNo\n1,1,2,10.00,1.00,2019,2011\n")
    assert session_date(str(p)) is None


def test_szse_vendor_csv_cr_line_ends_error_names_file_and_line_1(plain, tmp_path):
    files, _ = plain
    written = _rewrite(files, tmp_path / "vendor", "crlf")
    bad = written[0]
    bad.write_bytes(bad.read_bytes().replace(b"\r\n", b"\r"))
    with pytest.raises(FeedError) as info:
        obook.bbo(written, workers=1, format="szse-csv").read_all()
    assert info.value.path == str(bad) and info.value.record == 1, info.value
    assert "carriage return (CR)" in info.value.reason and len(str(info.value)) < 300
    assert cli_error("bbo", "--format", "szse-csv", *written).startswith(f"error: {bad}: line 1: ")


def test_szse_vendor_one_security_of_a_shared_channel_gap_error_says_what_to_do(tmp_path):
    """One security's pair of a channel other securities share has gaps in the channel's
    ApplSeqNum: the error says so and how to replay it (its pair tolerantly reads)."""
    files = sorted(write_vendor(tmp_path / "vendor", vendor_order(generate(3000, 6, 0))))
    one = [f for f in files if f.name.startswith("000001_")]
    assert len(one) == 2
    with pytest.raises(FeedError, match=r"sequence gap in channel \d+: .*securities of the channel missing: "
                                        r"replay them together, or skip gaps with on_error skip") as e:
        obook.bbo(one, workers=1, format="szse-csv").read_all()
    assert e.value.path in {str(f) for f in one}
    stats = {}
    assert obook.bbo(one, workers=1, format="szse-csv", on_error="skip", stats=stats).read_all().num_rows > 0
    assert stats["skipped"]["sequence gap"] > 0


ORDERS_HEADER = "ApplSeqNum,Side,OrdType,Price,OrderQty,TransactTime,ChannelNo\n"
TICKS_HEADER = "ApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo\n"


@pytest.mark.parametrize("value", ["sNaN", "99999999999999999999", "1.000001"])
@pytest.mark.parametrize("workers", [1, 2])
def test_szse_vendor_csv_unreadable_value_rows_of_other_files_before_it_delivered(tmp_path, value, workers):
    """A row whose value cannot be read ends the merged feed at its own place: the rows of the
    other files merged before it are replayed first, and the error names its merged line."""
    folder = tmp_path / "vendor"
    folder.mkdir()
    (folder / "000001_orders.csv").write_text(ORDERS_HEADER + "1,1,2,10.0000,1.00,20240105093000001,2011\n"
                                              f"4,1,2,{value},1.00,20240105093000004,2011\n")
    (folder / "000002_orders.csv").write_text(ORDERS_HEADER + "2,1,2,20.0000,1.00,20240105093000002,2011\n"
                                              "3,2,2,21.0000,1.00,20240105093000003,2011\n")
    for sec in ("000001", "000002"):
        (folder / f"{sec}_ticks.csv").write_text(TICKS_HEADER)
    files = sorted(str(p) for p in folder.iterdir())
    rows = []
    with pytest.raises(FeedError) as info:
        for b in obook.bbo(tuple(files), workers=workers, format="szse-csv"):
            rows += b.to_pylist()
    assert [r["seq"] for r in rows] == [1, 2, 3]
    assert info.value.path == str(folder / "000001_orders.csv") and info.value.record == 3
    assert "(line 4 of the merged feed)" in info.value.reason and info.value.feed_record == 4
    err = cli_error("table", "bbo", "--format", "szse-csv", *files)
    assert "000001_orders.csv: line 3: " in err and "(line 4 of the merged feed)" in err


ROW = "{appl},1,2,{px},1.00,2024010509300000{appl},2011\n"
#: an orders row 4 that cannot be read (a value, its merge key, its fields): (row, reason)
UNREADABLE_ROWS = {
    "price_snan": ROW.format(appl=4, px="sNaN"),
    "price_20_digits": ROW.format(appl=4, px="9" * 20),
    "qty_three_decimals": "4,1,2,10.0000,1.001,20240105093000004,2011\n",
    "transacttime_not_a_time": "4,1,2,10.0000,1.00,20249999999999999,2011\n",
    "applseqnum_not_an_integer": "4x,1,2,10.0000,1.00,20240105093000004,2011\n",
    "channel_5000_digits": "4,1,2,10.0000,1.00,20240105093000004," + "7" * 5000 + "\n",
    "fields_missing": "4,1,2,10.0000\n",
    "field_over_128_kb": "4,1,2,\"" + "9" * 200_000 + "\",1.00,20240105093000004,2011\n",
    "gbk_bytes": "4,1,2,10.0000,1.00,20240105093000004,2011,\udcc9\udcee\n",
}


def _day_with_row_4(tmp_path, row: str) -> list[str]:
    folder = tmp_path / "vendor"
    folder.mkdir()
    text = ORDERS_HEADER + "".join(ROW.format(appl=a, px=px) for a, px in ((1, "10.0000"), (2, "10.0100"),
                                                                             (3, "10.0200")))
    text += row + ROW.format(appl=5, px="10.0300") + ROW.format(appl=6, px="10.0000")
    (folder / "000001_orders.csv").write_bytes(text.encode("utf-8", "surrogateescape"))
    (folder / "000001_ticks.csv").write_text(TICKS_HEADER)
    return sorted(str(p) for p in folder.iterdir())


@pytest.mark.parametrize("case", sorted(UNREADABLE_ROWS))
@pytest.mark.parametrize("workers", [1, 2])
def test_szse_vendor_csv_unreadable_row_tolerant_skipped_counted_rows_after_replayed(tmp_path, case, workers):
    files = _day_with_row_4(tmp_path, UNREADABLE_ROWS[case])
    stats: dict = {}
    rows = obook.bbo(files, workers=workers, format="szse-csv", on_error="skip", stats=stats).read_all().to_pylist()
    assert [r["seq"] for r in rows] == [1, 2, 3, 5]
    assert stats["skipped"] == {"malformed record": 1}


@pytest.mark.parametrize("case", sorted(UNREADABLE_ROWS))
def test_szse_vendor_csv_unreadable_row_strict_error_names_file_line(tmp_path, case):
    files = _day_with_row_4(tmp_path, UNREADABLE_ROWS[case])
    rows = []
    with pytest.raises(FeedError) as info:
        for b in obook.bbo(files, workers=1, format="szse-csv"):
            rows += b.to_pylist()
    assert info.value.path.endswith("000001_orders.csv") and info.value.record == 5, info.value
    assert [r["seq"] for r in rows] == [1, 2, 3]


def test_szse_vendor_csv_unreadable_row_tolerant_cli_says_it_skipped(tmp_path):
    from hostile_support import obook_cli

    files = _day_with_row_4(tmp_path, UNREADABLE_ROWS["price_snan"])
    r = obook_cli("bbo", "--format", "szse-csv", "--on-error", "skip", *files)
    err = r.stderr.decode()
    assert r.returncode == 0 and "skipped records: malformed record: 1" in err, err


@pytest.mark.parametrize("row3", ["3,1,2,sNaN,1.00,20240105093000003,2011\n",
                                  "3,\xd8,2,10.0200,1.00,20240105093000003,2011\n",
                                  "3x,1,2,10.0200,1.00,20240105093000003,2011\n"])
def test_szse_vendor_csv_unreadable_row_between_other_files_rows_tolerant_one_skip_no_gap(tmp_path, row3):
    folder = tmp_path / "vendor"
    folder.mkdir()
    a = ORDERS_HEADER + ROW.format(appl=1, px="10.0000") + row3 + ROW.format(appl=5, px="10.0300")
    (folder / "000001_orders.csv").write_bytes(a.encode("utf-8", "surrogateescape").replace(b"\xc3\x98", b"\xd8"))
    (folder / "000002_orders.csv").write_text(ORDERS_HEADER + ROW.format(appl=2, px="20.0000")
                                              + ROW.format(appl=4, px="20.0100"))
    for sec in ("000001", "000002"):
        (folder / f"{sec}_ticks.csv").write_text(TICKS_HEADER)
    files = sorted(str(p) for p in folder.iterdir())
    stats: dict = {}
    rows = obook.bbo(files, workers=1, format="szse-csv", on_error="skip", stats=stats).read_all().to_pylist()
    assert [r["seq"] for r in rows] == [1, 2, 4, 5]
    assert stats["skipped"] == {"malformed record": 1}


def test_szse_vendor_csv_cut_last_row_with_bytes_not_utf8_tolerant_still_cut_error(tmp_path):
    from obook.errors import TruncatedFeedError

    files = _day_with_row_4(tmp_path, "")
    orders = next(f for f in files if f.endswith("_orders.csv"))
    with open(orders, "ab") as f:
        f.write(b"7,1,\xd8")
    with pytest.raises(TruncatedFeedError, match="the last line is cut"):
        obook.bbo(files, workers=1, format="szse-csv", on_error="skip").read_all()
