"""The CSV feed end to end (obook.bbo) against the pure-Python reference."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import obook
from obook._kernels.layout import EV_WIDTH
from obook.errors import TruncatedFeedError
from obook.feeds import detect_format
from obook.feeds.csv import CsvDecoder, CsvFramer
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch
from obook.gen.pitch import write_pitch
from obook.gen.sse import write_sse
from obook.gen.szse import write_szse

from reference_csv import reference_csv_bbo

HEADER = b"Time,Ticker,Order,T,Shares,Price\n"


def _fmt(v):
    return "" if v is None else str(v)


def replay(path, workers=1, on_error="raise"):
    """(text lines, (line, reason) or None, skipped) through obook.bbo."""
    stats = {}
    lines, error = [], None
    reader = obook.bbo(path, workers=workers, format="csv", on_error=on_error, stats=stats)
    try:
        for batch in reader:
            for r in batch.to_pylist():
                lines.append(f"{r['time']},{r['ticker']},{_fmt(r['bid_px'])},{_fmt(r['bid_qty'])},"
                             f"{_fmt(r['ask_px'])},{_fmt(r['ask_qty'])}")
    except obook.FeedError as e:
        error = (e.record, e.reason)
    return lines, error, stats.get("skipped", {})


def check(tmp_path, data: bytes, workers=(1, 2, 3), on_error="raise", name="feed.csv"):
    path = tmp_path / name
    path.write_bytes(data)
    want = reference_csv_bbo(data, on_error)
    for w in workers:
        got = replay(path, w, on_error)
        assert got[0] == want[0], f"workers={w}"
        assert got[1] == want[1], f"workers={w}"
        if on_error != "raise":
            assert got[2] == want[2], f"workers={w}"
    return want


ERRORS = [
    (b"1,AAA,1,B,100\n", "expected at least 6 fields, got 5"),
    (b"x\n", "expected at least 6 fields, got 1"),
    (b"-1,AAA,1,B,1,1\n", "time is not an unsigned integer: '-1'"),
    (b" 1,AAA,1,B,1,1\n", "time is not an unsigned integer: ' 1'"),
    (b",AAA,1,B,1,1\n", "time is not an unsigned integer: ''"),
    (b"18446744073709551616,AAA,1,B,1,1\n", "time out of range: '18446744073709551616'"),
    (b"1,AAA,1,Q,1,1\n", "unknown message type 'Q'"),
    (b"1,AAA,1,BB,x,1\n", "unknown message type 'BB'"),
    (b"1,AAA,1,b,1,1\n", "unknown message type 'b'"),
    (b"1,AAA,1,B,+1,1\n", "shares is not an unsigned integer: '+1'"),
    (b"1,AAA,1,B,4294967296,1\n", "shares out of range: '4294967296'"),
    (b"1,AAA,1,B,1,1.5\n", "price is not an unsigned integer: '1.5'"),
    (b"1,AAA,1,B,1,4294967296\n", "price out of range: '4294967296'"),
    (b"1,AAA,1,T,1,\n", "price is not an unsigned integer: ''"),
    (b"1,AAA,1,B,1,1\n2,AAA,1,S,1,2\n", "duplicate order '1'"),
    (b"1,AAA,7,C,1,1\n", "unknown order '7'"),
    (b"1,AAA,7,D,1,1\n", "unknown order '7'"),
    (b"1,AAA,7,E,1,1\n", "unknown order '7'"),
    (b"1,AAA,1,B,1,1\n2,AAA,1,F,1,1\n3,AAA,1,F,1,1\n", "unknown order '1'"),
]


@pytest.mark.parametrize("body,reason", ERRORS)
def test_bbo_failing_line_reports_spec_reason(tmp_path, body, reason):
    data = HEADER + b"0,ZZZ,1,B,5,5\n" + body + b"9,ZZZ,1,D,5,5\n"
    lines, error, _ = check(tmp_path, data, workers=(1, 2))
    assert error is not None and error[1] == reason
    assert lines[0] == "0,ZZZ,5,5,,"


def test_bbo_failing_line_same_for_1_2_3_8_workers(tmp_path):
    path = tmp_path / "g.csv"
    write_csv(path, 3000, 11, seed=5, depth=20)
    data = path.read_bytes().split(b"\n")
    data.insert(2500, b"1,ABC,1,B,1,x\r")
    check(tmp_path, b"\n".join(data), workers=(1, 2, 3, 8))


def test_bbo_edge_cases_match_reference(tmp_path):
    data = (HEADER
            + b"1,AAA,1,B,100,50\r\n"            # CRLF
            + b"2,BBB,1,B,200,60\n"              # same id in another ticker
            + b"\n   \n\t\r\n"                   # blank lines count in line numbers
            + b"3,AAA,2,B,0,51\n"                # a 0-share add makes a 0-share level
            + b"4,AAA,1,C,500,50\n"              # C to a larger size: nothing changes
            + b"5,AAA,1,C,40,50\n"
            + b"6,AAA,1,E,1000,50\n"             # E past remaining: clamped, removed
            + b"7,AAA,2,E,0,51\n"                # a 0-share order executed by anything leaves
            + b"8,BBB,1,T,7,7\n9,BBB,1,X,7,7\n"  # trade prints
            + b"4294967295,BBB,2,S,4294967295,4294967295\n"
            + b"18446744073709551615,BBB,2,D,0,0\n"
            + b"10,,,B,1,1\n11,,,D,1,1\n"        # empty ticker and id
            + b"12,CCC,abcdefghijklmnopqrstuvwxyz,S,3,3\n13,CCC,abcdefghijklmnopqrstuvwxyZ,S,3,3\n"
            + b"14,CCC,abcdefghijklmnopqrstuvwxyz,C,0,3\n"
            + b"15,AAA,1,B,1,1")                 # no trailing newline
    lines, error, _ = check(tmp_path, data, workers=(1, 2, 3, 8))
    assert error is None
    assert "6,AAA,,,," not in lines and "7,AAA,,,," in lines
    assert lines[-1] == "15,AAA,1,1,,"


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_csv_lines_joined_by_lost_line_end_error_names_line_after_rows(tmp_path, on_error):
    """Two lines run together (the line end between them lost) have more fields than the
    header: refused (strict) or counted (tolerant), never read as the first line's order
    with the rest ignored."""
    joined = b"3,AAA,3,B,70,10504,AAA,4,S,20,1060\n"
    data = HEADER + b"1,AAA,1,B,100,1000\n2,AAA,2,S,50,1100\n" + joined + b"5,AAA,5,B,10,1040\n"
    lines, error, skipped = check(tmp_path, data, on_error=on_error)
    if on_error == "raise":
        assert error == (4, "expected at most 6 fields (as many as the header), got 11: two lines joined by a "
                            "lost line end?")
        assert lines == ["1,AAA,1000,100,,", "2,AAA,1000,100,1100,50"]
    else:
        assert error is None and skipped == {"more fields than the header": 1}
        assert lines[-1] == "5,AAA,1040,10,1100,50"
    with pytest.raises(obook.FeedError, match=r"feed\.csv: line 4: expected at most 6 fields"):
        obook.bbo(tmp_path / "feed.csv", workers=1).read_all()


def test_csv_columns_the_header_names_after_price_are_read_past(tmp_path):
    """A header of more columns than the six lets the lines carry them (ignored); a line of
    more fields than its header is refused."""
    header = b"Time,Ticker,Order,T,Shares,Price,Venue,Note\n"
    body = b"1,AAA,1,B,100,1000,NY,a\n2,AAA,2,S,50,1100\n3,AAA,3,B,70,1050,NY\n"
    lines, error, _ = check(tmp_path, header + body)
    assert error is None and lines[-1] == "3,AAA,1050,70,1100,50"
    lines, error, _ = check(tmp_path, header + body + b"4,AAA,4,S,5,1090,NY,a,b\n")
    assert error == (5, "expected at most 8 fields (as many as the header), got 9: two lines joined by a lost "
                        "line end?")
    assert len(lines) == 3


CUT_BODY = [b"1,AAA,1,B,100,1000", b"2,AAA,2,S,50,1100", b"3,AAA,3,B,70,1050"]


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize(("extra", "last", "reason"), [
    pytest.param(b",Venue", b"4,AAA,4,S,100,10", "the last line is cut: it has 6 of its header's 7 fields and no "
                 "line end", id="inside-price-header-has-more"),
    pytest.param(b"", b"4,AAA,4,S,10", "the last line is cut: it has 5 of its header's 6 fields and no line end",
                 id="fields-missing"),
])
def test_csv_last_line_cut_error_names_line_after_rows(tmp_path, extra, last, reason, on_error):
    """A last line without a line end and with fewer fields than the header is cut: a
    FeedError in either mode, after the rows of every line before it (never a cut price
    read as the price)."""
    header = HEADER.rstrip(b"\n") + extra + b"\n"
    body = b"".join(ln + (b",NY" if extra else b"") + b"\n" for ln in CUT_BODY)
    lines, error, _ = check(tmp_path, header + body + last, on_error=on_error)
    assert error == (5, reason)
    assert lines == check(tmp_path, header + body, name="whole.csv")[0] and len(lines) == 3
    with pytest.raises(TruncatedFeedError, match=r"feed\.csv: line 5: the last line is cut"):
        obook.bbo(tmp_path / "feed.csv", workers=1, on_error=on_error).read_all()


@pytest.mark.parametrize("last", [b"4,AAA,4,S,100,1090,NY", b"4,AAA,4,S,100,1090,NY\r", b"  \t", b"4,AAA,4,S,100,1090,"])
def test_csv_whole_last_line_without_line_end_read_as_before(tmp_path, last):
    header = HEADER.rstrip(b"\n") + b",Venue\n"
    body = b"".join(ln + b",NY\n" for ln in CUT_BODY)
    lines, error, _ = check(tmp_path, header + body + last)
    assert error is None and lines == check(tmp_path, header + body + last + b"\n", name="ended.csv")[0]


@pytest.mark.parametrize("data", [b"", HEADER, HEADER[:-1], b"\n\n"])
def test_bbo_empty_or_header_only_gives_no_rows(tmp_path, data):
    assert check(tmp_path, data) == ([], None, {})


@pytest.mark.parametrize("seed", [1, 2])
def test_bbo_generated_feed_matches_reference(tmp_path, seed):
    path = tmp_path / "g.csv"
    write_csv(path, 5000, 9, seed=seed, depth=25)
    lines, error, _ = check(tmp_path, path.read_bytes(), workers=(1, 2, 3, 8))
    assert error is None and len(lines) > 500


def test_bbo_gzipped_feed_matches_reference(tmp_path):
    path = tmp_path / "g.csv"
    write_csv(path, 2000, 5, seed=4)
    gz = tmp_path / "g.csv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert replay(gz, 2)[0] == reference_csv_bbo(path)[0]


def test_bbo_tolerant_mode_counts_and_matches_reference(tmp_path):
    body = b"".join(b for b, _ in ERRORS)
    data = HEADER + b"0,ZZZ,1,B,5,5\n" + body + b"9,ZZZ,1,D,5,5\n"
    lines, error, skipped = check(tmp_path, data, workers=(1, 2, 3), on_error="skip")
    assert error is None and sum(skipped.values()) >= len(ERRORS) - 1


def test_decoder_without_engine_matches_reference(tmp_path):
    """Framer + decoder alone, tiny batches: every line of the right worker, once."""
    path = tmp_path / "g.csv"
    write_csv(path, 3000, 6, seed=9, depth=15)
    data = np.fromfile(path, np.uint8)
    ev = np.zeros((64, EV_WIDTH), np.int64)
    for workers in (1, 3):
        fr = CsvFramer(path)
        decs = [CsvDecoder(path, w, workers) for w in range(workers)]
        pos, seq, seen = 0, 1, []
        while True:
            r = fr.frame(data[pos:], seq, pos, True, 64)
            if r.n_records == 0:
                break
            for d in decs:
                res = d.decode(data[pos:pos + r.n_bytes], seq, ev)
                assert res.error is None
                seen += ev[:res.n_events, 0].tolist()
            pos, seq = pos + r.n_bytes, seq + r.n_records
        assert pos == data.shape[0]
        lines = path.read_bytes().split(b"\r\n")
        want = [i for i, ln in enumerate(lines, 1) if i > 1 and ln and ln.split(b",")[3] not in (b"T", b"X")]
        assert sorted(seen) == want


def test_csv_files_read_as_one_feed_second_header_error_says_it_is_a_header(tmp_path):
    day = tmp_path / "day.csv"
    write_csv(day, 3000, 10, seed=4)
    lines = day.read_bytes().splitlines(keepends=True)
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_bytes(b"".join(lines[:1500]))
    second.write_bytes(lines[0] + b"".join(lines[1500:]))
    with pytest.raises(obook.FeedError, match="b.csv: line 1: time is not an unsigned integer: 'Time' "
                                              r"\(a header line not at the feed's start: of the files read as one "
                                              r"feed, only the first has one\) \(line 1501 of .*a.csv\+.*b.csv\)$") as e:
        obook.bbo((str(first), str(second)), workers=1).read_all()
    assert (e.value.record, e.value.feed_record) == (1, 1501)
    second.write_bytes(b"".join(lines[1500:]))          # without its header: the whole day
    got = obook.bbo((str(first), str(second)), workers=1).read_all()
    assert got.num_rows > 500 and got.equals(obook.bbo(str(day), workers=1).read_all())


@pytest.mark.parametrize("header, reason", [
    (b"", "an order line, not the header (Time,Ticker,Order,T,Shares,Price) a CSV order feed starts with"),
    (b"\xef\xbb\xbfTime,Ticker,Order,T,Price,Shares\r\n",
     "the header 'Time,Ticker,Order,T,Price,Shares' names the columns in another order: a CSV order feed's "
     "columns are read by place, Time,Ticker,Order,T,Shares,Price"),
    (b"time, order, ticker, t, shares, price, venue\n",
     "the header 'time, order, ticker, t, shares, price, venue' names the columns in another order: a CSV "
     "order feed's columns are read by place, Time,Ticker,Order,T,Shares,Price")])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_csv_line_1_that_misreads_the_rows_error_on_line_1(tmp_path, header, reason, on_error):
    """A file without its header lost its first order (line 1 is skipped), and a header naming
    Price before Shares read every price as shares, without a word."""
    body = b"1,AAA,1,B,100,1000\n2,AAA,2,S,50,1100\n"
    assert check(tmp_path, header + body, on_error=on_error) == ([], (1, reason), {})


def test_csv_header_names_in_other_case_read_as_the_header(tmp_path):
    body = b"1,AAA,1,B,100,1000\n2,AAA,2,S,50,1100\n"
    lines, error, _ = check(tmp_path, b"TIME, ticker ,Order,t,SHARES,price,MPID\n" + body)
    assert error is None and lines == check(tmp_path, HEADER + body, name="plain.csv")[0] and len(lines) == 2


@pytest.mark.parametrize("ext", [".txt", ".csv", ".txt.gz"])
@pytest.mark.parametrize("fmt, write", [
    ("sse", lambda p: write_sse(p, 2000)),
    ("szse", lambda p: write_szse(p, 2000)),
    ("pitch", lambda p: write_pitch(p, 2000, 3)),
    ("itch", lambda p: write_itch(p, 2000, 3)),
    ("csv", lambda p: write_csv(p, 2000, 3)),
])
def test_csv_sniff_text_name_over_another_formats_bytes_that_format(tmp_path, fmt, write, ext):
    plain = tmp_path / f"day.{fmt}"
    write(plain)
    named = tmp_path / f"day{ext}"
    data = plain.read_bytes()
    named.write_bytes(gzip.compress(data) if ext.endswith(".gz") else data)
    assert detect_format(named) == fmt
    assert obook.bbo(named, workers=1).read_all().equals(obook.bbo(plain, workers=1).read_all())


def test_csv_table_written_as_csv_error_on_line_1_says_it_is_a_table(tmp_path):
    """A table obook wrote as CSV, given back as a feed: line 1 names its columns, and the
    error says what line 1 reads."""
    import pyarrow.csv as pcsv

    day = tmp_path / "day.itch"
    write_itch(day, 5000, 4, seed=2)
    table = tmp_path / "bbo.csv"
    pcsv.write_csv(obook.bbo(str(day), workers=1).read_all(), table)
    with pytest.raises(obook.FeedError, match=r"bbo.csv: line 1: not a CSV order feed: line 1 "
                                              r"'\"seq\",\"time\",\"ticker\",.*' names a table's columns, not the "
                                              r"header Time,Ticker,Order,T,Shares,Price \(any case\), then any "
                                              r"columns more: is this a table rather than a feed\?$") as e:
        obook.bbo(str(table), workers=1).read_all()
    assert e.value.record == 1


@pytest.mark.parametrize("header", [b"ts,symbol,id,type,qty,px\n", b"a,b,c,d,e,f,g,h\n",
                                    b"Time,Ticker,Order,Type,Shares,Price\r\n", b"Time,Ticker,Id,T,Shares,Price,Venue\n"])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_csv_line_1_of_six_fields_other_names_error_on_line_1_names_expected_header(tmp_path, header, on_error):
    """Line 1 of six fields or more is the header only when it names the expected columns:
    other names are no CSV order feed (its columns are read by place)."""
    lines, error, _ = check(tmp_path, header + b"1,AAA,1,B,100,1000\n", on_error=on_error)
    shown = header.decode().rstrip("\r\n")
    assert (lines, error) == ([], (1, f"not a CSV order feed: line 1 {shown!r} is not the header "
                                      "Time,Ticker,Order,T,Shares,Price (any case), then any columns more; if the "
                                      "file is another format, give it (format=, --format on the command line)"))


@pytest.mark.parametrize("header", [HEADER, b"TIME, ticker ,Order,t,SHARES,price,MPID\n",
                                    b"Time,Ticker,Order,T,Shares,Price,Venue,Note\n"])
def test_csv_order_feed_header_error_on_line_2_reason_alone(tmp_path, header):
    lines, error, _ = check(tmp_path, header + b"1,AAA,1,Q,1,1\n")
    assert (lines, error) == ([], (2, "unknown message type 'Q'"))


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("name, given", [("README.txt", None), ("notes.md", "csv")])
def test_csv_text_file_not_a_feed_error_on_line_1_names_expected_header(tmp_path, name, given, on_error):
    """A text file whose line 1 has fewer than the six columns (a README, notes) is no CSV
    order feed: an error on line 1 naming the file and the header expected, not 0 rows."""
    text = tmp_path / name
    text.write_text("# obook\n\nReplay feeds, fast.\nAnother line\n")
    with pytest.raises(obook.FeedError, match=r"README.txt|notes.md") as e:
        obook.bbo(str(text), workers=1, format=given, on_error=on_error).read_all()
    assert e.value.record == 1
    assert "not a CSV order feed" in e.value.reason and "Time,Ticker,Order,T,Shares,Price" in e.value.reason
