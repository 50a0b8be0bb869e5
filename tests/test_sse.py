"""The Shanghai AX-SBE text log: BizIndex order, replay rules, errors, the audit."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import obook
from obook.errors import FeedError
from obook.feeds import detect_format
from obook.gen.sse import generate

from conftest import SHARED_DATA
from hostile_support import lose_marker_checked
from reference_l2 import bbo_by_ticker, sse_bbo

REAL_DAY = SHARED_DATA / "AX_sbe_sse_600519.zip"     # beside the repository (absent: skipped)


def _write(tmp_path, lines, name="day.log"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """A generated day whose lines are each at most a few events from their place, an
    uncross's trades too (ahead=0): the framer's tests below use a window of 64 lines."""
    p = tmp_path_factory.mktemp("sse") / "gen.log"
    p.write_text("\n".join(generate(6000, securities=5, seed=3, ahead=0)) + "\n")
    return p


def test_detect_sse_log_by_content(day):
    assert detect_format(day) == "sse"


def test_sse_bbo_generated_equals_reference(day):
    got = bbo_by_ticker(obook.bbo(day, workers=1).read_all())
    assert got == sse_bbo(day.read_text())
    assert len(got) == 5


def test_sse_bbo_shuffled_file_order_same_as_sorted(day, tmp_path):
    lines = day.read_text().splitlines()
    sorted_lines = sorted((ln for ln in lines if "MsgType=111" not in ln),
                          key=lambda ln: int(ln.rsplit("BizIndex=", 1)[1].split()[0]) * 10 + int(ln.split("ChannelNo=")[1].split()[0]))
    p = _write(tmp_path, sorted_lines, "sorted.log")
    assert bbo_by_ticker(obook.bbo(p, workers=1).read_all()) == bbo_by_ticker(obook.bbo(day, workers=1).read_all())


@pytest.mark.parametrize("workers", [2, 3])
def test_sse_tables_workers_identical(day, workers):
    for fn in (obook.bbo, obook.trades, obook.depth):
        assert fn(day, workers=workers).read_all().equals(fn(day, workers=1).read_all())


def test_sse_audit_generated_every_snapshot_outside_the_call_auctions_matched(day):
    """Every tally matches; every level does but in the call auctions' snapshots (the
    exchange's show the uncross the book would make: tests/test_sse_gen.py)."""
    a = obook.audit(day, workers=1).read_all()
    s = pc.divide(a["time"], 10**9)
    call = pc.or_(pc.and_(pc.greater_equal(s, 9 * 3600 + 15 * 60), pc.less(s, 9 * 3600 + 25 * 60)),
                  pc.and_(pc.greater_equal(s, 14 * 3600 + 57 * 60), pc.less(s, 15 * 3600)))
    rest = a.filter(pc.invert(call))
    assert rest.num_rows > 100 and a.num_rows > rest.num_rows
    assert pc.all(rest["matched"]).as_py()
    assert pc.all(a["tallies_matched"]).as_py()


def test_sse_audit_wrong_level_reports_first_difference(day, tmp_path):
    lines = day.read_text().splitlines()
    k = max(i for i, ln in enumerate(lines) if "MsgType=111" in ln and "AskLevel[1].Price=0 " not in ln)
    lines[k] = lines[k].replace("AskLevel[1].Qty=", "AskLevel[1].Qty=7")
    a = obook.audit(_write(tmp_path, lines), workers=1).read_all()
    bad = [r for r, c in zip(a.to_pylist(), obook.audit(day, workers=1).read_all().to_pylist()) if r != c]
    assert len(bad) == 1 and not bad[0]["matched"]
    assert (bad[0]["side"], bad[0]["level"]) == ("S", 2)
    assert str(bad[0]["snap_qty"]).startswith("7") and bad[0]["snap_qty"] != bad[0]["book_qty"]


def _bad_day(day, tmp_path, old, new):
    lines = day.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if old in ln and i > 200)
    lines[k] = lines[k].replace(old, new, 1)
    return _write(tmp_path, lines, "bad.log"), k + 1


@pytest.mark.parametrize("old,new,reason", [
    ("MsgType=192", "MsgType=199", "unknown message type 199"),
    ("OrderQty=", "OrderQty=x", "OrderQty is not an integer"),
    ("OrderQty=", "OrderQty=99999999999999999999", "OrderQty out of range: '99999999999999999999"),
    ("MsgType=192", "MsgType=192 junk", "token without '='"),
])
def test_sse_bad_line_strict_names_line(day, tmp_path, old, new, reason):
    p, line = _bad_day(day, tmp_path, old, new)
    with pytest.raises(FeedError) as e:
        obook.bbo(p, workers=1).read_all()
    assert e.value.record == line and reason in str(e.value) and "line" in str(e.value)


def test_sse_bad_line_tolerant_counted(day, tmp_path):
    p, _ = _bad_day(day, tmp_path, "MsgType=111", "MsgType=199")
    stats = {}
    obook.bbo(p, workers=1, on_error="skip", stats=stats).read_all()
    assert stats["skipped"] == {"unknown message type": 1}


@pytest.mark.parametrize("lost", ["//", "/"])
def test_sse_message_line_without_its_marker_strict_error_tolerant_counted(day, tmp_path, lost):
    """A message line that lost its leading // is a malformed line (strict: an error naming
    it after rows of the lines before it; tolerant: counted), not a line that carries
    nothing; a hex dump line and a blank line still carry nothing."""
    lines = day.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if "MsgType=192" in ln and i > 200)
    lose_marker_checked(tmp_path, lines, k, lost, "malformed line")    # (its order's later lines: unknown)


def test_sse_trade_naming_unknown_order_strict_error(day, tmp_path):
    lines = day.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if "MsgType=191" in ln and i > 200)
    lines[k] = lines[k].replace("BidApplSeqNum=", "BidApplSeqNum=99999").replace(
        "OfferApplSeqNum=", "OfferApplSeqNum=99999")
    p = _write(tmp_path, lines)
    with pytest.raises(FeedError, match="unknown order ref 99999"):
        obook.bbo(p, workers=1).read_all()


@pytest.mark.parametrize("workers", [1, 2])
def test_sse_book_error_names_the_physical_line_and_its_event_order_record(day, tmp_path, workers):
    from hostile_support import batches_until_error, cli_error

    lines = day.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if "MsgType=191" in ln and i > 500 and "BidApplSeqNum=" in ln)
    lines[k] = lines[k].replace("BidApplSeqNum=", "BidApplSeqNum=99999")
    p = _write(tmp_path, lines)
    rows, error = batches_until_error(obook.bbo(p, workers=workers))
    assert isinstance(error, FeedError) and error.record == k + 1 and error.unit == "line", error
    assert error.feed_record != k + 1     # the line's place in event order is another number
    assert error.reason.startswith("unknown order ref 99999")
    assert error.reason.endswith(f"(record {error.feed_record} in event order)")
    assert rows and max(r["seq"] for b in rows for r in b.to_pylist()) < error.feed_record
    assert cli_error("bbo", p) == f"error: {p}: line {k + 1}: {error.reason}"


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_sse_second_day_after_the_first_error_after_every_first_day_row(day, tmp_path, on_error):
    """A log holding a day twice, one after the other: the second day's BizIndexes start
    again, far more lines out of order than the framer's window. The replay stops at the
    second day's first event line, strict and tolerant alike, after every row of the first
    day."""
    from hostile_support import batches_until_error

    lines = day.read_text().splitlines()
    p = _write(tmp_path, lines + lines, "twice.log")
    rows, error = batches_until_error(obook.bbo(p, workers=1, on_error=on_error))
    first = next(i for i, ln in enumerate(lines) if "MsgType=19" in ln)
    assert isinstance(error, FeedError) and error.record == len(lines) + first + 1, error
    assert "more than 4096 lines out of order" in error.reason
    clean = obook.bbo(day, workers=1).read_all()
    assert bbo_by_ticker(pa.Table.from_batches(rows, clean.schema)) == bbo_by_ticker(clean)


@pytest.mark.skipif(not REAL_DAY.exists(), reason="the real Shanghai day is not on this machine")
def test_sse_real_day_every_continuous_snapshot_matches():
    a = obook.audit(REAL_DAY, workers=1).read_all()
    cont = a.filter(a["continuous"])
    assert a.num_rows == 5146
    assert (pc.sum(cont["matched"]).as_py(), cont.num_rows) == (4767, 4767)
    last = a.slice(a.num_rows - 1).to_pylist()[0]
    assert last["tallies_matched"] and last["num_trades"] == last["book_num_trades"] == 18685
    assert last["volume"] == last["book_volume"] == 2432171000


def test_sse_gen_long_day_times_within_session_replays(tmp_path):
    """A day long enough that its events' steps would pass midnight starts at 09:15 (the
    opening call auction) and ends at 15:00 (the closing uncross), and replays without a
    bad TransactTime."""
    lines = generate(320_000, securities=20, seed=1)
    times = [int(ln.split("TransactTime=")[1].split()[0]) for ln in lines if "TransactTime=" in ln]
    assert max(times) == 15_000_000 and min(times) >= 9_150_000
    p = _write(tmp_path, lines)
    assert obook.bbo(p, workers=1).read_all().num_rows > 0


def _bad_type_at(day, tmp_path, line: int):
    import re

    lines = day.read_text().splitlines()
    lines[line - 1] = re.sub(r"MsgType=\d+", "MsgType=300", lines[line - 1])
    return _write(tmp_path, lines, "bad.log")


@pytest.mark.parametrize("stream", [False, True])
def test_sse_audit_bad_line_snapshots_before_it_then_its_error(day, tmp_path, stream):
    from hostile_support import batches_until_error

    bad = _bad_type_at(day, tmp_path, 5900)
    source = open(bad, "rb") if stream else bad
    got, error = batches_until_error(obook.audit(source, workers=1))
    got = pa.Table.from_batches(got, obook.audit(day, workers=1).schema)
    clean = obook.audit(day, workers=1).read_all()
    assert 0 < got.num_rows < clean.num_rows
    rows = clean.to_pylist()
    assert all(row in rows for row in got.to_pylist())        # the clean log's rows
    assert pc.max(got.column("seq")).as_py() < 5900
    assert str(error) == f"{bad}: line 5900: unknown message type 300"
    if stream:
        source.close()


def test_sse_audit_cli_stdin_same_rows_as_the_path(day):
    from hostile_support import obook_cli

    with open(day, "rb") as stdin:
        piped = obook_cli("table", "audit", "-", stdin=stdin)
    assert piped.returncode == 0, piped.stderr.decode()[-2000:]
    rows = piped.stdout.decode().splitlines()
    assert len(rows) == obook.audit(day, workers=1).read_all().num_rows + 1 > 1
    assert piped.stdout == obook_cli("table", "audit", day).stdout


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_sse_small_day_twice_within_the_window_error_names_the_line_seen_again(tmp_path, on_error):
    """A day of fewer lines than the framer's window, twice in a log: the second day's
    first event line is an error naming the events seen twice (not a duplicate order met
    somewhere in the merged BizIndex order), strict and tolerant alike, after every row of
    the first day."""
    from hostile_support import batches_until_error

    lines = generate(300, securities=3, seed=5)
    assert len(lines) < 4096
    day = _write(tmp_path, lines)
    p = _write(tmp_path, lines + lines, "twice.log")
    rows, error = batches_until_error(obook.bbo(p, workers=1, on_error=on_error))
    first = next(i for i, ln in enumerate(lines) if "MsgType=19" in ln)
    assert isinstance(error, FeedError) and error.record == len(lines) + first + 1, error
    assert f"again, {len(lines)} lines after the line that has it: the same events twice" in error.reason
    clean = obook.bbo(day, workers=1).read_all()
    assert bbo_by_ticker(pa.Table.from_batches(rows, clean.schema)) == bbo_by_ticker(clean)


def test_sse_day_split_in_two_files_replays_as_the_day_overlapping_split_names_the_line(tmp_path):
    """A day cut into two files by lines (head, tail) replays as the day; cut with a line in
    both files (tail -n +N after head -n N), the second file's line 1 is the error."""
    lines = generate(600, securities=3, seed=5)
    day = _write(tmp_path, lines, "2024-01-02.log")
    n = next(i for i, ln in enumerate(lines) if i > len(lines) // 2 and "MsgType=192" in ln) + 1
    head = _write(tmp_path, lines[:n], "a_2024-01-02.log")
    tail = _write(tmp_path, lines[n:], "b_2024-01-02.log")
    assert obook.bbo((head, tail), workers=2).read_all().equals(obook.bbo(day, workers=2).read_all())
    tail = _write(tmp_path, lines[n - 1:], "b_2024-01-02.log")
    with pytest.raises(FeedError, match="again, 1 line after the line that has it: the same events twice") as e:
        obook.bbo((head, tail), workers=2).read_all()
    assert (e.value.path, e.value.record) == (str(tail), 1)


def test_sse_line_seen_again_beyond_its_batch_same_error_in_the_next(tmp_path):
    """A line seen again in the window after its batch's end (its first delivered in that
    batch) is late in the next batch: the error still says it is the same event again."""
    from obook.feeds.sources import iter_batches
    from obook.feeds.sse.feed import SseFramer

    import re

    events = [ln for ln in generate(300, securities=3, seed=5) if "MsgType=19" in ln]
    lines = sorted(events, key=lambda ln: int(re.search(r"BizIndex=(\d+)", ln).group(1)))    # any cut will do
    p = _write(tmp_path, lines[:20] + [lines[2]] + lines[20:40])
    batches = list(iter_batches(str(p), SseFramer(str(p), lookahead=30), max_records=16))
    error = batches[-1].error
    assert isinstance(error, FeedError) and error.record == 21, error
    assert "again, 18 lines after the line that has it" in error.reason


def _cut_before(day, tmp_path, line: int):
    lines = day.read_text().splitlines()
    return _write(tmp_path, lines[:line - 1], "clean.log")


@pytest.mark.parametrize("line", [836, 304, 2000, 4098, 5900])
def test_sse_bad_line_rows_before_equal_replay_of_the_lines_before_it(day, tmp_path, line):
    """The rows before a bad line's error are those of a log of the lines before it: each
    line before it is replayed, not only those BizIndex order could place with the lines
    after it in view (4098: past the framer's window of 4096 lines). The error names the bad
    line, also where the lines before it lack an event after it (836: a trade whose order's
    add comes later in the file; a log of the lines before it stops at that trade)."""
    from hostile_support import batches_until_error

    bad = _bad_type_at(day, tmp_path, line)
    clean = _cut_before(day, tmp_path, line)
    for fn in (obook.bbo, obook.trades, obook.orders, obook.depth):
        got, error = batches_until_error(fn(bad, workers=1))
        want, clean_error = batches_until_error(fn(clean, workers=1))
        assert str(error).startswith(f"{bad}: line {line}: unknown message type 300")
        assert (clean_error is None) == (line != 836), clean_error
        if clean_error is not None:     # the error of the trade that lacks its order: named too
            assert str(error) == (f"{bad}: line {line}: unknown message type 300; line {clean_error.record} of the "
                                  f"feed, {line - clean_error.record} before it: "
                                  f"{clean_error.reason.replace(' in event order)', ' in event order), which')} "
                                  "may come first or be no error: the lines after this one could place it later or "
                                  "hold what it lacks"), error
        else:
            assert str(error) == f"{bad}: line {line}: unknown message type 300"
        schema = fn(day, workers=1).schema
        assert pa.Table.from_batches(got, schema).equals(pa.Table.from_batches(want, schema)), fn.__name__
    got, error = batches_until_error(obook.audit(bad, workers=1))
    want, _ = batches_until_error(obook.audit(clean, workers=1))
    got, want = (pa.Table.from_batches(b, obook.audit(day, workers=1).schema) for b in (got, want))
    assert got.equals(want.slice(0, got.num_rows))


def _framed(path, on_error):
    """(the bytes of the batches of 200 lines, a window of 64, the feed's error)."""
    from obook.feeds.sources import iter_batches
    from obook.feeds.sse.feed import SseFramer

    data, error = [], None
    for b in iter_batches(path, SseFramer(str(path), on_error, lookahead=64), block_size=1 << 14, max_records=400):
        data.append(bytes(b.data[:b.n_records and len(b.data)]))
        error = b.error or error
    return b"".join(data), error


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("line", [150, 399, 400, 401, 463, 464, 465, 900])
def test_sse_framer_bad_line_delivers_the_lines_before_as_their_own_log(day, tmp_path, line, on_error):
    """Batches of 200 lines, a window of 64: a line that stops the replay (strict: an unknown
    message type; strict and tolerant: a BizIndex far out of order) near a batch's end or its
    window's delivers the lines before it in the order a log of just those lines has."""
    lines = day.read_text().splitlines()
    late = lines[next(i for i, ln in enumerate(lines) if "MsgType=192" in ln)]    # BizIndex of the day's start
    lines.insert(line - 1, late if on_error == "skip" else lines[line - 1].replace("MsgType=192", "MsgType=300")
                 .replace("MsgType=191", "MsgType=300").replace("MsgType=111", "MsgType=300"))
    bad = _write(tmp_path, lines, "bad.log")
    got, error = _framed(bad, on_error)
    want, none = _framed(_write(tmp_path, lines[:line - 1], "clean.log"), on_error)
    assert none is None and error.record == line, error
    assert got == want


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("line", [150, 399, 400, 401, 463, 464, 465, 900])
def test_sse_framer_line_seen_again_delivers_the_lines_before_as_their_own_log(day, tmp_path, line, on_error):
    """Batches of 200 lines, a window of 64: an event line given again a few lines after it,
    near a batch's end or its window's, is an error naming the same events twice after the
    lines before it, in the order a log of just those lines has, strict and tolerant alike."""
    lines = day.read_text().splitlines()
    k = max(i for i in range(line - 12, line - 1) if "MsgType=19" in lines[i])
    lines.insert(line - 1, lines[k])
    got, error = _framed(_write(tmp_path, lines, "again.log"), on_error)
    want, none = _framed(_write(tmp_path, lines[:line - 1], "clean.log"), on_error)
    assert none is None and error.record == line, error
    assert f"again, {line - 1 - k} line" in error.reason and "the same events twice" in error.reason
    assert got == want


def test_sse_framer_tolerant_bad_lines_counted_once(day, tmp_path):
    """Batches of 200 lines, a window of 64: each skipped line is counted once, though the
    lines scanned past a batch's end are scanned again with the next batch."""
    import re

    from obook.feeds.sources import iter_batches
    from obook.feeds.sse.feed import SseFramer

    lines = day.read_text().splitlines()[:1700]
    bad = range(100, 1700, 37)
    for k in bad:
        lines[k] = re.sub(r"MsgType=\d+", "MsgType=300", lines[k])
    p = _write(tmp_path, lines)
    framer = SseFramer(str(p), "skip", lookahead=64)
    batches = list(iter_batches(p, framer, block_size=1 << 14, max_records=400))
    assert sum(b.n_records for b in batches) == len(lines) and batches[-1].error is None
    assert framer.skipped == {"unknown message type": len(bad)}


def test_sse_book_error_before_a_bad_line_named_not_the_bad_line(day, tmp_path):
    """A trade naming an unknown order 300 lines before a bad line: the book error, which no
    line after it could have prevented, is the one named."""
    lines = day.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if "MsgType=191" in ln and i > 500 and "BidApplSeqNum=" in ln)
    lines[k] = lines[k].replace("BidApplSeqNum=", "BidApplSeqNum=99999")
    lines[k + 300] = lines[k + 300].replace("MsgType=", "MsgType=3", 1)
    with pytest.raises(FeedError) as e:
        obook.bbo(_write(tmp_path, lines), workers=1).read_all()
    assert e.value.record == k + 1 and e.value.reason.startswith("unknown order ref 99999"), e.value


def test_sse_book_error_just_before_a_bad_line_error_names_both(day, tmp_path):
    """A trade naming an unknown order a few lines before a bad line, where the lines after
    the bad line could still place it: the error names the bad line and, in its reason, the
    trade's line and error (either may be the first in event order)."""
    from hostile_support import batches_until_error

    lines = day.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if "MsgType=191" in ln and i > 500 and "BidApplSeqNum=" in ln)
    lines[k] = lines[k].replace("BidApplSeqNum=", "BidApplSeqNum=99999")
    lines[k + 2] = lines[k + 2].replace("MsgType=", "MsgType=3", 1)
    bad = _write(tmp_path, lines)
    rows, error = batches_until_error(obook.bbo(bad, workers=1))
    assert (error.path, error.record) == (str(bad), k + 3), error
    assert error.reason.startswith("unknown message type 3")
    assert f"; line {k + 1} of the feed, 2 before it: unknown order ref 99999" in error.reason, error
    assert "which may come first or be no error" in error.reason
    assert max(s for t in rows for s in t.column("seq").to_pylist()) < k + 3


def _unknown_order_after(day, tmp_path, after: int, name="bad.log"):
    """The day with the first trade line past line ``after`` naming unknown orders: (lines, its index)."""
    lines = day.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if "MsgType=191" in ln and i > after)
    lines[k] = lines[k].replace("BidApplSeqNum=", "BidApplSeqNum=99999").replace(
        "OfferApplSeqNum=", "OfferApplSeqNum=99999")
    return lines, k


def test_sse_audit_book_error_rows_are_the_clean_days_of_the_snapshots_it_settles(day, tmp_path):
    """A book error ends the audit with the rows of the snapshots whose window the records
    before it (in event order, past its line) passed: each the clean day's row."""
    from hostile_support import batches_until_error

    lines, k = _unknown_order_after(day, tmp_path, 1500)
    got, error = batches_until_error(obook.audit(_write(tmp_path, lines), workers=1))
    assert error.record == k + 1 < error.feed_record, error
    got = pa.Table.from_batches(got)
    clean = obook.audit(day, workers=1).read_all()
    assert got.num_rows and got.equals(clean.filter(pc.is_in(clean.column("seq"), got.column("seq"))))


def test_sse_files_read_as_one_feed_book_error_keeps_its_event_order_record(day, tmp_path):
    """Of a day split into two files, a book error names the file, its line and the record's
    number in event order as ``feed_record`` (the rows' seq): convert keeps every row before it."""
    from hostile_support import batches_until_error, obook_cli
    import pyarrow.parquet as pq

    lines, k = _unknown_order_after(day, tmp_path, 1500)
    a, b = _write(tmp_path, lines[:1000], "a.log"), _write(tmp_path, lines[1000:], "b.log")
    rows, error = batches_until_error(obook.bbo((a, b), workers=1))
    assert (error.path, error.record) == (str(b), k + 1 - 1000), error
    assert error.feed_record > k + 1 and error.feed_line == k + 1        # (the day's line after the cut)
    assert max(r for t in rows for r in t.column("seq").to_pylist()) < error.feed_record
    assert obook_cli("convert", a, b, tmp_path / "out", "-t", "bbo").returncode == 1
    kept = pq.read_table(tmp_path / "out" / "bbo.parquet.partial")
    assert kept.select(rows[0].schema.names).to_batches() and kept.num_rows == sum(t.num_rows for t in rows)


def _snapshot_damaged(day, tmp_path, damage):
    """The day with its first continuous-trading snapshot of a bid damaged by ``damage(line)``
    (bytes); returns (path, that line's number)."""
    lines = day.read_bytes().split(b"\n")
    k = next(i for i, ln in enumerate(lines) if b"MsgType=111" in ln and b"DataTimeStamp=93" in ln
             and b"BidLevel[0].Price=0 " not in ln)
    lines[k] = damage(lines[k])
    p = tmp_path / "damaged.log"
    p.write_bytes(b"\n".join(lines))
    return p, k + 1


SNAPSHOT_DAMAGE = {
    "ff_in_a_value": (lambda ln: ln.replace(b"BidLevel[0].Qty=", b"BidLevel[0].Qty=1\xff", 1),
                      "BidLevel[0].Qty is not an integer"),
    "ff_in_a_key": (lambda ln: ln.replace(b"BidLevel[0].Qty=", b"Bi\xffLevel[0].Qty=", 1), "no BidLevel[0].Qty"),
    "cr_in_a_key": (lambda ln: ln.replace(b"AskLevel[8].Qty=", b"AskLevel\r8].Qty=", 1), "no AskLevel[8].Qty"),
    "level_missing": (lambda ln: ln.replace(b" AskLevel[9].Price=", b" Ask=", 1), "no AskLevel[9].Price"),
    "nul_in_a_value": (lambda ln: ln.replace(b"TotalVolumeTrade=", b"TotalVolumeTrade=\x00", 1),
                       "TotalVolumeTrade is not an integer"),
    "negative_level": (lambda ln: ln.replace(b"AskLevel[0].Qty=", b"AskLevel[0].Qty=-", 1),
                       "bad AskLevel[0].Qty -"),
    "datatimestamp_hour_25": (lambda ln: ln.replace(b"DataTimeStamp=93", b"DataTimeStamp=253", 1),
                              "bad DataTimeStamp 253"),
}


@pytest.mark.parametrize("case", sorted(SNAPSHOT_DAMAGE))
def test_sse_snapshot_field_not_a_value_strict_error_names_line_rows_before(day, tmp_path, case):
    """A snapshot whose compared field cannot be read (bytes no text has in a key or value, a
    level missing, negative, a time of day that is none) is a malformed line, not a snapshot
    the audit compares a 0 of:
    the audit's rows of the snapshots before it, then an error naming its line; bbo too."""
    damage, reason = SNAPSHOT_DAMAGE[case]
    p, line = _snapshot_damaged(day, tmp_path, damage)
    clean = obook.audit(day, workers=1).read_all()
    rows = []
    with pytest.raises(FeedError) as e:
        for b in obook.audit(p, workers=1):
            rows.extend(b.to_pylist())
    assert e.value.record == line and reason in e.value.reason and str(p) in str(e.value)
    assert rows == clean.to_pylist()[:len(rows)]
    with pytest.raises(FeedError) as e:
        obook.bbo(p, workers=2).read_all()
    assert e.value.record == line and reason in e.value.reason


@pytest.mark.parametrize("case", sorted(SNAPSHOT_DAMAGE))
def test_sse_snapshot_field_not_a_value_tolerant_no_audit_row_counted(day, tmp_path, case):
    damage, _ = SNAPSHOT_DAMAGE[case]
    p, line = _snapshot_damaged(day, tmp_path, damage)
    clean = obook.audit(day, workers=1).read_all()
    got = obook.audit(p, workers=1, on_error="skip").read_all()
    assert got.to_pylist() == [r for r in clean.to_pylist() if r["seq"] != line]
    assert got.num_rows == clean.num_rows - 1
    stats = {}
    bbo = obook.bbo(p, workers=1, on_error="skip", stats=stats).read_all()
    assert stats["skipped"] == {"malformed line": 1} and bbo.equals(obook.bbo(day, workers=1).read_all())


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_sse_snapshot_last_line_cut_between_its_levels_is_a_cut_line(day, tmp_path, on_error):
    """A log cut inside its last snapshot right after a whole token (no line end, levels
    missing) is a cut last line in both modes, not a snapshot of empty levels the audit
    would compare."""
    text = day.read_bytes()
    k = text.rindex(b"//SecurityIDSource=101 MsgType=111 ")
    cut = text.index(b"AskLevel[6].Price=", k)
    p = tmp_path / "cut.log"
    p.write_bytes(text[:cut])
    line = text[:k].count(b"\n") + 1
    for table in ("audit", "bbo"):
        with pytest.raises(FeedError) as e:
            obook.table(table, p, workers=1, on_error=on_error).read_all()
        assert e.value.record == line and "the last line is cut" in e.value.reason
        assert "no AskLevel[6].Price" in e.value.reason
