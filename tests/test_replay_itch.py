"""obook.bbo on ITCH feeds against the pure-Python reference book, for any worker count."""

import gzip

import pytest

import obook
from obook.engine.replay import Replay
from obook.errors import FeedError, TruncatedFeedError
from obook.gen.itch import write_itch

from itch_builder import ItchBuilder
from reference_itch import reference_bbo

WORKERS = [1, 2, 3, 8]


def as_tuples(table):
    cols = table.to_pydict()
    return [(s, t, loc, tk, bp, bq, bn or 0, ap, aq, an or 0) for s, t, loc, tk, bp, bq, bn, ap, aq, an in zip(
        cols["seq"], cols["time"], cols["locate"], cols["ticker"], cols["bid_px"], cols["bid_qty"],
        cols["bid_orders"], cols["ask_px"], cols["ask_qty"], cols["ask_orders"])]


def replay(path, workers, on_error="raise", **kw):
    """(rows, error) of obook for a feed: rows delivered before the error, then the error."""
    rows, error = [], None
    try:
        for batch in Replay(path, workers=workers, on_error=on_error, **kw).batches():
            rows.extend(as_tuples(batch))
    except FeedError as e:
        error = e
    return rows, error


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("itch") / "day.itch"
    write_itch(path, 60_000, 12, seed=5)
    return path


@pytest.mark.parametrize("workers", WORKERS)
def test_bbo_generated_day_matches_reference(day, workers, no_leaks):
    expected, err, _ = reference_bbo(day)
    assert err is None and len(expected) > 10_000
    rows, error = replay(day, workers)
    assert error is None
    assert rows == expected


@pytest.mark.parametrize("seed,stocks", [(1, 1), (2, 3), (3, 40)])
def test_bbo_generated_feeds_one_and_two_workers_match_reference(tmp_path, seed, stocks):
    path = tmp_path / "f.itch.gz"
    write_itch(path, 20_000, stocks, seed=seed)
    expected, err, _ = reference_bbo(path)
    assert err is None
    for workers in (1, 2):
        assert replay(path, workers) == (expected, None)


@pytest.mark.parametrize("block", [1, 7, 36, 1000, 4099])
def test_bbo_feed_split_mid_message_at_every_batch_boundary_same_rows(day, block):
    expected, _, _ = reference_bbo(day)
    rows, error = replay(day, 2 if block == 4099 else 1, block_size=block)
    assert error is None and rows == expected


def test_bbo_gzip_and_raw_give_same_rows(day, tmp_path):
    gz = tmp_path / "day.itch.gz"
    gz.write_bytes(gzip.compress(day.read_bytes(), 1))
    assert replay(gz, 2) == replay(day, 2)


def edge_feed():
    b = ItchBuilder()
    b.system("O")
    b.directory(1, "AAPL")
    b.directory(2, "MSFT")
    b.add(1, 10, "B", 100, 1000000)
    b.add(1, 11, "S", 100, 1001000)
    b.add(1, 12, "B", 50, 999000)          # below the touch: no row
    b.cancel(1, 12, 20)                    # below the touch: no row
    b.add(2, 10, "B", 5, 500000)           # same ref, another book
    b.replace(1, 11, 13, 80, 1000500)      # replace
    b.replace(1, 13, 14, 70, 1000400)      # replace of a replaced order
    b.execute(1, 10, 100, match=1)         # execution to zero
    b.add(1, 15, "S", 10, 990000)          # crossed book, reported as is
    b.cancel(1, 15, 10)                    # cancel to zero
    b.trade(1, 99, "B", 100, 1000000, match=2)
    b.delete(2, 10)
    return b


@pytest.mark.parametrize("workers", WORKERS)
def test_bbo_edge_cases_match_reference(tmp_path, workers):
    path = tmp_path / "edge.itch"
    edge_feed().write(path)
    expected, err, _ = reference_bbo(path)
    assert err is None
    assert replay(path, workers) == (expected, None)


FAILURES = {
    "unknown": lambda b: b.delete(1, 777),
    "duplicate": lambda b: b.add(1, 14, "B", 1, 990000),
    "over_execution": lambda b: b.execute(1, 14, 71, match=3),
    "over_cancel": lambda b: b.cancel(1, 14, 71),
    "zero_add": lambda b: b.add(1, 50, "B", 0, 990000),
    "replace_unknown": lambda b: b.replace(1, 777, 778, 5, 990000),
}


@pytest.mark.parametrize("kind", sorted(FAILURES))
@pytest.mark.parametrize("workers", WORKERS)
def test_bbo_failing_message_delivers_earlier_rows_then_raises(tmp_path, kind, workers, no_leaks):
    b = edge_feed()
    FAILURES[kind](b)
    b.add(2, 60, "S", 5, 600000)            # after the failure: never delivered
    path = tmp_path / "bad.itch"
    b.write(path)
    expected, err, _ = reference_bbo(path)
    rows, error = replay(path, workers)
    assert rows == expected
    assert error is not None and error.record == err[0]
    assert err[1] in error.reason and str(path) in str(error)


@pytest.mark.parametrize("workers", [1, 2])
def test_bbo_failure_in_later_batch_same_for_all_workers(tmp_path, day, workers):
    data = bytearray(day.read_bytes())
    b = ItchBuilder()
    b.delete(3, 2**40)
    path = tmp_path / "late.itch"
    path.write_bytes(bytes(data) + b.bytes())
    expected, err, _ = reference_bbo(path)
    rows, error = replay(path, workers)
    assert rows == expected and error.record == err[0] == 60_001


@pytest.mark.parametrize("workers", [1, 2])
def test_bbo_truncated_tail_names_byte_offset(tmp_path, workers):
    data = edge_feed().bytes()
    path = tmp_path / "cut.itch"
    path.write_bytes(data[:-5])
    expected, err, _ = reference_bbo(path)
    rows, error = replay(path, workers)
    assert isinstance(error, TruncatedFeedError) and error.record == err[0]
    assert error.offset == len(data) - 21 and f"byte offset {error.offset}" in str(error)
    assert rows == expected


@pytest.mark.parametrize("workers", [1, 2])
def test_bbo_short_frame_is_malformed_record(tmp_path, workers):
    b = edge_feed()
    b.frame(b"A" + bytes(20))                # an add frame of 21 bytes (needs 36)
    path = tmp_path / "short.itch"
    b.write(path)
    expected, err, _ = reference_bbo(path)
    rows, error = replay(path, workers)
    assert rows == expected and error.record == err[0] and "malformed" in error.reason


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_bbo_tolerant_mode_counts_match_reference(tmp_path, workers):
    b = edge_feed()
    for f in FAILURES.values():
        f(b)
    b.frame(b"X" + bytes(3))
    b.add(2, 60, "S", 5, 600000)
    path = tmp_path / "bad.itch"
    b.write(path)
    expected, err, skipped = reference_bbo(path, on_error="skip")
    assert err is None
    stats = {}
    table = obook.bbo(path, workers=workers, on_error="skip", stats=stats).read_all()
    assert as_tuples(table) == expected
    assert stats["skipped"] == skipped


def test_bbo_consumer_stops_after_first_batch_no_workers_left(day, no_leaks):
    reader = obook.bbo(day, workers=2)
    first = reader.read_next_batch()
    assert first.num_rows > 0
    reader.close()


def test_bbo_missing_file_raises_obook_error(tmp_path):
    with pytest.raises(obook.ObookError, match="no such feed file"):
        obook.bbo(tmp_path / "nope.itch")


def test_bbo_real_nasdaq_sample_matches_reference(shared_itch):
    expected, err, _ = reference_bbo(shared_itch)
    assert replay(shared_itch, 2) == (expected, err)


@pytest.mark.parametrize("workers", [1, 2])
def test_bbo_stats_count_live_orders_and_crossed_books_at_end(tmp_path, workers):
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.directory(2, "BBB")
    b.add(1, 1, "B", 10, 1000)
    b.add(1, 2, "S", 10, 990)       # crossed, reported as is
    b.add(2, 3, "B", 10, 1000)
    b.add(2, 4, "S", 10, 1010)
    path = b.write(tmp_path / "x.itch")
    stats = {}
    obook.bbo(path, workers=workers, stats=stats).read_all()
    assert (stats["live_orders"], stats["crossed_books"], stats["records"]) == (4, 1, 6)


class _Counting:
    """An observer that counts the events of the batches it sees."""

    def __init__(self):
        self.events = 0

    def worker(self, worker, n_workers):
        return self

    def batch(self, events, n, names):
        self.events += n

    def finish(self):
        return self.events


def test_replay_rows_false_builds_no_batches_observer_sees_every_event(day):
    seen, silent = _Counting(), _Counting()
    full = Replay(day, workers=1, observer=seen)
    rows = sum(b.num_rows for b in full.batches())
    quiet = Replay(day, workers=1, observer=silent, rows=False)
    marks = list(quiet.table_batches())          # (None, None) once the observer saw each batch
    assert marks and set(marks) == {(None, None)}
    assert rows > 10_000 and silent.events == seen.events > 0
    assert quiet.stats["records"] == full.stats["records"] and quiet.stats["complete"]
    assert quiet.observed == [silent.events]


def test_replay_tickers_not_in_feed_long_or_control_names_error_quotes_and_cuts_them(day):
    long_name, escape = "A" * 100_000, "B\x1b[31mY"      # (listed first: the names are listed sorted)
    tickers = [long_name, escape] + [f"NO{i}" for i in range(20)]
    with pytest.raises(obook.ObookError) as e:
        obook.bbo(day, workers=1, tickers=tickers).read_all()
    text = str(e.value)
    assert len(text) < 1000 and text.isprintable(), text[:300]
    assert "(100000 characters)" in text and "'B\\x1b[31mY'" in text
    assert "and 12 more" in text


def test_replay_tickers_in_another_case_error_names_the_feeds_spelling(day):
    names = _tickers_of(day)
    lower = names[0].lower()
    assert lower != names[0]
    with pytest.raises(obook.ObookError) as e:
        obook.bbo(day, workers=1, tickers=[lower, names[1]]).read_all()
    assert f"not in the feed: {lower} (no book of the feed has that name; tickers are case-sensitive: " \
           f"try {names[0]})" in str(e.value), str(e.value)
    with pytest.raises(obook.ObookError) as e:
        obook.bbo(day, workers=1, tickers=["NOSUCH"]).read_all()
    assert "case-sensitive" not in str(e.value)


def _tickers_of(path) -> list[str]:
    return sorted(obook.bbo(path, workers=1).read_all().column("ticker").unique().to_pylist())


@pytest.mark.parametrize("given", ["csv", "pitch", "szse-bin"])
def test_replay_format_given_wrong_first_record_error_names_the_format_it_looks_like(day, given):
    with pytest.raises(FeedError) as e:
        obook.bbo(day, workers=1, format=given).read_all()
    assert str(e.value).endswith(f"(format {given!r} was given, and the file looks like 'itch': leave format out "
                                 "or give that)"), str(e.value)
    assert e.value.reason.endswith("or give that)")


@pytest.mark.parametrize(("kind", "given"), [("csv", "itch"), ("pitch", "itch")])
def test_replay_format_given_wrong_error_past_first_record_names_the_format_it_looks_like(tmp_path, kind, given):
    """Another format's bytes may frame as a few records of the one given before they fail."""
    from obook.gen.csv import write_csv
    from obook.gen.pitch import write_pitch

    feed = tmp_path / f"day.{kind}"
    (write_csv if kind == "csv" else write_pitch)(str(feed), 2000, 5)
    with pytest.raises(FeedError) as e:
        obook.bbo(feed, workers=1, format=given).read_all()
    assert e.value.feed_record > 1
    assert str(e.value).endswith(f"(format {given!r} was given, and the file looks like {kind!r}: leave format "
                                 "out or give that)"), str(e.value)


def test_replay_csv_given_to_another_format_says_the_format_once(tmp_path):
    """The header error's general advice to give another format gives way to the one named."""
    from obook.gen.pitch import write_pitch

    feed = tmp_path / "day.pitch"
    write_pitch(str(feed), 2000, 5)
    with pytest.raises(FeedError) as e:
        obook.bbo(feed, workers=1, format="csv").read_all()
    assert "if the file is another format" not in str(e.value) and "another format" not in e.value.reason
    assert str(e.value).endswith("has 1 field, not the header Time,Ticker,Order,T,Shares,Price (any case), then any "
                                 "columns more (format 'csv' was given, and the file looks like 'pitch': leave format "
                                 "out or give that)"), str(e.value)


def test_replay_format_given_right_error_at_first_record_has_no_format_hint(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,1,Q,100,10.0\n")
    with pytest.raises(FeedError) as e:
        obook.bbo(bad, workers=1, format="csv").read_all()
    assert "was given" not in str(e.value)
