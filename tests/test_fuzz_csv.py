"""Hostile CSV input: every feed ends in rows + a clean obook.ObookError
(or tolerant-mode counts), the same as the reference's, never another exception, a
worker crash, a hang or unbounded memory (tests/fuzz_support.py)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import obook
from obook.errors import FeedError

from fuzz_support import csv_lines, run
from reference_csv import reference_csv_bbo

FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FUZZ_POOL = settings(FUZZ, max_examples=15)

HEADER = b"Time,Ticker,Order,T,Shares,Price\n"

NUMBERS = [b"0", b"1", b"7", b"100", b"00", b"0001", b"4294967295", b"4294967296", b"18446744073709551615",
           b"18446744073709551616", b"99999999999999999999999999999", b"+1", b"-1", b"-0", b" 1", b"1 ",
           b"", b" ", b"1.5", b"1e3", b"0x10", b'"1"', b"1\0", b"\0", b"\xef\xbc\x91", b"\xff", b"abc"]
TEXTS = [b"AAA", b"BBB", b"", b" AAA", b'"AAA"', b"A\0A", b"\xc3\xa9", b"\xff\xfe", b"A B", b"x" * 40]
TYPES = [b"B", b"S", b"C", b"D", b"E", b"F", b"T", b"X", b"b", b"", b"BB", b"\0", b'"B"', b" B", b"Q"]
ENDS = [b"\n", b"\n", b"\n", b"\r\n", b"\r\r\n", b"\n\n", b"\n \t\n", b"\n\x0b\x0c\n"]


def check(path, data: bytes, workers: int = 1, on_error: str = "raise"):
    """obook and the reference agree on the text rows, the error line (and tolerant counts)."""
    path.write_bytes(data)
    if data[:2] == b"\x1f\x8b" or data[:4] == b"\x28\xb5\x2f\xfd":   # looks gzipped or zstd: a read error, nothing else
        rows, err, _ = run(path, workers, on_error, format="csv", rows_of=csv_lines)
        assert isinstance(err, obook.ObookError) or err is None
        return rows, err
    want_rows, want_err, want_skipped = reference_csv_bbo(data, on_error)
    rows, err, stats = run(path, workers, on_error, format="csv", rows_of=csv_lines)
    assert rows == want_rows
    if want_err is None:
        assert err is None, err
        if on_error == "skip":
            assert stats["skipped"] == want_skipped
    else:
        assert isinstance(err, FeedError), err     # not a WorkerError: workers don't crash
        # (bytes another format's sniffer recognises, as '//SecurityIDSource=102': the error names
        # which, since the format was given, in place of its advice to give another format; the
        # reference knows no other format)
        reason, named = re.subn(r" \(format 'csv' was given, and the file looks like '[\w-]+': leave format out or "
                                r"give that\)$", "", err.reason)
        reason += getattr(err, "advice", "") if named else ""
        assert (err.record, reason) == want_err
    return rows, err


def line(f) -> bytes:
    return b",".join(f)


FIELDS = st.tuples(st.sampled_from(NUMBERS), st.sampled_from(TEXTS), st.sampled_from(TEXTS[:4] + [b"1", b"2"]),
                   st.sampled_from(TYPES), st.sampled_from(NUMBERS), st.sampled_from(NUMBERS))
GOOD = st.tuples(st.sampled_from([b"1", b"2", b"18446744073709551615"]), st.sampled_from([b"AAA", b"BBB", b""]),
                 st.sampled_from([b"1", b"2", b"3", b""]), st.sampled_from(TYPES[:8]),
                 st.sampled_from([b"0", b"1", b"100", b"4294967295"]),
                 st.sampled_from([b"0", b"1", b"1000", b"4294967295"]))
LINE = st.one_of(
    GOOD.map(line), GOOD.map(line), FIELDS.map(line),
    st.tuples(FIELDS, st.lists(st.sampled_from(TEXTS + NUMBERS), max_size=3)).map(lambda t: line(t[0] + tuple(t[1]))),
    FIELDS.map(lambda f: line(f[:5])),                          # too few fields
    st.binary(max_size=30).filter(lambda b: b"\n" not in b),
)


def feed(lines, ends, last_newline: bool) -> bytes:
    out = HEADER
    for i, ln in enumerate(lines):
        out += ln + (ends[i % len(ends)] if i < len(lines) - 1 or last_newline else b"")
    return out


@FUZZ
@given(data=st.binary(max_size=400))
def test_csv_random_bytes_rows_and_feed_error_like_reference(tmp_path, data):
    check(tmp_path / "r.csv", data)


@FUZZ
@given(body=st.binary(max_size=300))
def test_csv_header_then_random_bytes_like_reference(tmp_path, body):
    check(tmp_path / "h.csv", HEADER + body)


@FUZZ
@given(lines=st.lists(LINE, max_size=25), ends=st.lists(st.sampled_from(ENDS), min_size=1, max_size=4),
       last_newline=st.booleans(), on_error=st.sampled_from(["raise", "skip"]))
def test_csv_hostile_fields_signs_spaces_overflow_quotes_nul_like_reference(tmp_path, lines, ends,
                                                                           last_newline, on_error):
    check(tmp_path / "f.csv", feed(lines, ends, last_newline), on_error=on_error)


@FUZZ_POOL
@given(lines=st.lists(LINE, max_size=25), on_error=st.sampled_from(["raise", "skip"]))
def test_csv_hostile_fields_two_workers_like_reference(tmp_path, lines, on_error):
    check(tmp_path / "f.csv", feed(lines, [b"\n"], True), workers=2, on_error=on_error)


VALID = feed([b"1,AAA,1,B,100,1000", b"2,AAA,2,S,50,1100", b"3,BBB,1,B,7,5", b"4,AAA,1,E,30,0",
              b"5,AAA,2,C,10,0", b"6,BBB,1,T,1,1", b"7,AAA,1,D,0,0", b"8,BBB,1,F,0,0"], [b"\n"], True)


def test_csv_truncation_at_every_offset_like_reference(tmp_path):
    for cut in range(len(VALID) + 1):
        check(tmp_path / "t.csv", VALID[:cut])


def test_csv_truncation_two_workers_every_fifth_offset_like_reference(tmp_path):
    for cut in range(0, len(VALID), 5):
        check(tmp_path / "t.csv", VALID[:cut], workers=2)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 7)), min_size=1, max_size=5),
       on_error=st.sampled_from(["raise", "skip"]))
def test_csv_bit_flips_of_valid_feed_like_reference(tmp_path, flips, on_error):
    data = bytearray(VALID)
    for at, bit in flips:
        data[at] ^= 1 << bit
    check(tmp_path / "b.csv", bytes(data), on_error=on_error)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("text,reason", [
    (b"-5", "shares is not an unsigned integer: '-5'"),
    (b"+5", "shares is not an unsigned integer: '+5'"),
    (b" 5", "shares is not an unsigned integer: ' 5'"),
    (b"5 ", "shares is not an unsigned integer: '5 '"),
    (b'"5"', "shares is not an unsigned integer: '\"5\"'"),
    (b"5\0", "shares is not an unsigned integer: '5\0'"),
    (b"4294967296", "shares out of range: '4294967296'"),
    (b"9" * 40, f"shares out of range: '{'9' * 40}'"),
])
def test_csv_bad_shares_field_names_line_and_text(tmp_path, text, reason, workers):
    data = HEADER + b"1,AAA,1,B,5,5\n2,AAA,2,B," + text + b",5\n3,AAA,1,D,0,0\n"
    rows, err = check(tmp_path / "s.csv", data, workers=workers)
    assert rows == ["1,AAA,5,5,,"] and (err.record, err.reason) == (3, reason)


def test_csv_huge_line_and_many_fields_bounded(tmp_path):
    """A 4 MiB line (longer than a block) and a line of 100,000 fields: more than its
    header's, refused after the rows before it."""
    header = HEADER.rstrip(b"\n") + b",Note\n"
    data = (header + b"1,AAA,1,B,5,5," + b"x" * (4 << 20) + b"\n3,AAA," + b"y" * (2 << 20) + b",S,1,9\n"
            + b"2,AAA,2,S,5,6" + b",1" * 100_000 + b"\n")
    for workers in (1, 2):
        rows, err = check(tmp_path / "big.csv", data, workers=workers)
        assert len(rows) == 2 and err.record == 4 and "got 100006" in err.reason


def test_csv_random_mutations_of_generated_feed_seeded_like_reference(tmp_path):
    from obook.gen.csv import write_csv
    base = tmp_path / "g.csv"
    write_csv(base, 3000, 4, seed=3, depth=20)
    data0 = base.read_bytes()
    rng = random.Random(7)
    for i in range(30):
        data = bytearray(data0)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            kind = rng.randrange(3)
            if kind == 0:
                data[at] = rng.choice(b",\n\r\0 -+\"9x")
            elif kind == 1:
                del data[at:at + rng.randint(1, 40)]
            else:
                data[at:at] = data[at:at + rng.randint(1, 40)]
        check(tmp_path / "m.csv", bytes(data), workers=2 if i % 10 == 0 else 1,
              on_error="skip" if i % 2 else "raise")


# ---------------------------------------------------------------- hostile records, every table

REPLAY_TABLES = ("bbo", "trades", "orders", "depth")


def _tables(path, workers):
    from obook.engine.replay import Replay

    replay = Replay(path, workers=workers, format="csv", tables=REPLAY_TABLES)
    got = {t: [] for t in REPLAY_TABLES}
    for table, batch in replay.table_batches():
        got[table].extend(batch.to_pylist())
    return got


@pytest.mark.parametrize("workers", [1, 2])
def test_csv_megabyte_ticker_every_table_costs_its_rows_not_rows_times_longest(tmp_path, workers):
    """One 1 MiB ticker, then 70,000 short lines: the ticker column used to be sized rows x
    the longest ticker (64 GiB a batch). Every table equals the same feed with a short
    ticker in its place."""
    long_ticker = b"T" * (1 << 20)
    body = b"".join(b"%d,AAA,%d,B,5,%d\n%d,AAA,%d,E,1,0\n" % (2 * i + 2, i, 100 + i % 7, 2 * i + 3, i)
                    for i in range(35_000))
    hostile, plain = tmp_path / "long.csv", tmp_path / "short.csv"
    hostile.write_bytes(HEADER + b"1," + long_ticker + b",x,B,5,5\n" + body + b"80000," + long_ticker
                        + b",x,E,2,0\n")
    plain.write_bytes(HEADER + b"1,ZZZ,x,B,5,5\n" + body + b"80000,ZZZ,x,E,2,0\n")
    got, want = _tables(hostile, workers), _tables(plain, workers)
    long_name = long_ticker.decode()
    for table in REPLAY_TABLES:
        rows = [{**r, "ticker": "ZZZ" if r["ticker"] == long_name else r["ticker"]} for r in got[table]]
        assert rows == want[table], table
        assert any(r["ticker"] == long_name for r in got[table]), table


@pytest.mark.parametrize("table", REPLAY_TABLES)
@pytest.mark.parametrize("field", ["time", "type", "shares", "price", "order"])
def test_csv_ten_megabyte_field_error_text_is_bounded(tmp_path, table, field):
    """A 10 MB field in a failing line: the error names the line and shows the field's
    start and size, not all of it."""
    from obook.engine.replay import Replay

    huge = b"9" * 10_000_000 if field != "order" else b"o" * 10_000_000
    fields = {"time": huge + b",AAA,1,B,5,5", "type": b"2,AAA,1," + huge + b",5,5",
              "shares": b"2,AAA,1,B," + huge + b",5", "price": b"2,AAA,1,B,5," + huge,
              "order": b"2,AAA," + huge + b",D,0,0"}[field]
    path = tmp_path / "huge.csv"
    path.write_bytes(HEADER + b"1,AAA,1,B,5,5\n" + fields + b"\n")
    with pytest.raises(FeedError) as info:
        for _ in Replay(path, workers=1, format="csv", tables=(table,)).reader(table):
            pass
    assert info.value.record == 3
    assert len(str(info.value)) < 400, str(info.value)[:400]
    assert "10000000 bytes" in info.value.reason
