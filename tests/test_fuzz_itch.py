"""Hostile ITCH input: every feed ends in rows + a clean obook.ObookError
(or tolerant-mode counts), the same as the reference replayer's, never another
exception, a worker crash, a hang or unbounded memory (tests/fuzz_support.py)."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from obook.errors import FeedError, ObookError, TruncatedFeedError

from fuzz_support import run
from itch_builder import ItchBuilder
from reference_itch import SIZES, TRUNCATED, reference_bbo

FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FUZZ_POOL = settings(FUZZ, max_examples=15)

REFS = [0, 1, 2, 4095, 4096, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]
SHARES = [0, 1, 2, 100, 2**31, 2**32 - 1]
PRICES = [0, 1, 1_000_000, 2**31 - 1, 2**31, 2**32 - 1]
LOCATES = [0, 1, 2, 65535]


def small_feed() -> ItchBuilder:
    """A valid feed touching every message kind (about 1 KB)."""
    b = ItchBuilder()
    b.system("O")
    b.directory(1, "AAPL")
    b.directory(2, "MSFT")
    b.add(1, 10, "B", 100, 1_000_000)
    b.add(1, 11, "S", 100, 1_001_000)
    b.add(1, 2**40, "B", 50, 1_000_000, mpid="GSCO")
    b.add(2, 10, "B", 5, 500_000)
    b.raw("z", 17, locate=1)                       # a type unknown to the spec
    b.execute(1, 10, 30, match=1)
    b.execute_price(1, 2**40, 10, 999_000, match=2)
    b.cancel(1, 11, 20)
    b.replace(1, 11, 12, 70, 1_000_500)
    b.trade(1, 0, "B", 100, 1_000_000, match=3)
    b.cross(2, 10**6, 500_000)
    b.broken(3)
    b.trading_action(1, "H")
    b.delete(2, 10)
    b.add(2, 2**63, "S", 1, 2**32 - 1)
    b.execute(1, 10, 70, match=4)
    b.system("C")
    return b


SMALL = small_feed().bytes()


def check(path, data: bytes, workers: int = 1, on_error: str = "raise"):
    """obook and the reference agree on rows, error record (and tolerant counts); the format is
    forced: random bytes may start with another format's magic (a pcap capture's, DBN's)."""
    path.write_bytes(data)
    if data[:2] == b"\x1f\x8b" or data[:4] == b"\x28\xb5\x2f\xfd":   # looks gzipped or zstd: a read error, nothing else
        rows, err, _ = run(path, workers, on_error, format="itch")
        assert isinstance(err, ObookError) or err is None
        return
    want_rows, want_err, want_skipped = reference_bbo(data, on_error)
    rows, err, stats = run(path, workers, on_error, format="itch")
    assert rows == want_rows
    if want_err is None:
        assert err is None, err
        assert stats["complete"]
        if on_error == "skip":
            assert stats["skipped"] == want_skipped
    else:
        assert isinstance(err, FeedError), err        # not a WorkerError: workers don't crash
        assert err.record == want_err[0]
        if want_err[1] == TRUNCATED:
            assert isinstance(err, TruncatedFeedError)
        else:
            assert want_err[1] in err.reason
    return rows, err


# ---------------------------------------------------------------- random input

@FUZZ
@given(data=st.binary(max_size=600))
def test_itch_random_bytes_rows_and_feed_error_like_reference(tmp_path, data):
    check(tmp_path / "r.itch", data)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(SMALL) - 1), st.integers(0, 7)), min_size=1, max_size=6),
       on_error=st.sampled_from(["raise", "skip"]))
def test_itch_bit_flips_of_valid_feed_match_reference(tmp_path, flips, on_error):
    data = bytearray(SMALL)
    for at, bit in flips:
        data[at] ^= 1 << bit
    check(tmp_path / "f.itch", bytes(data), on_error=on_error)


@FUZZ_POOL
@given(flips=st.lists(st.tuples(st.integers(0, len(SMALL) - 1), st.integers(0, 7)), min_size=1, max_size=6))
def test_itch_bit_flips_two_workers_match_reference(tmp_path, flips):
    data = bytearray(SMALL)
    for at, bit in flips:
        data[at] ^= 1 << bit
    check(tmp_path / "f.itch", bytes(data), workers=2)


def test_itch_truncation_at_every_offset_names_record_like_reference(tmp_path):
    bounds, pos = {0}, 0
    while pos < len(SMALL):
        pos += 2 + struct.unpack_from(">H", SMALL, pos)[0]
        bounds.add(pos)
    for cut in range(len(SMALL) + 1):
        rows, err = check(tmp_path / "t.itch", SMALL[:cut])
        if cut in bounds:
            assert err is None
        else:
            assert isinstance(err, TruncatedFeedError) and f"byte offset {err.offset}" in str(err)
            assert err.offset == max(b for b in bounds if b < cut)


def test_itch_truncation_two_workers_every_seventh_offset_like_reference(tmp_path):
    for cut in range(1, len(SMALL), 7):
        check(tmp_path / "t.itch", SMALL[:cut], workers=2)


# ---------------------------------------------------------------- frames

def framed(*frames: bytes) -> bytes:
    return b"".join(struct.pack(">H", len(f)) + f for f in frames)


def add_msg(ref=1, shares=100, price=1000, locate=1, side=b"B") -> bytes:
    return (b"A" + struct.pack(">HH", locate, 0) + (1).to_bytes(6, "big") + struct.pack(">Q", ref)
            + side + struct.pack(">I", shares) + b"AAPL    " + struct.pack(">I", price))


FRAME_CASES = {
    "length_0": framed(add_msg(), b"", add_msg(2)),
    "length_1_unknown_type": framed(add_msg(), b"z", add_msg(2)),
    "length_1_known_type": framed(add_msg(), b"A", add_msg(2)),
    "length_1_nul_type": framed(add_msg(), b"\0", add_msg(2)),
    "length_10_cuts_header": framed(add_msg(), b"z" + bytes(9), add_msg(2)),
    "length_65535_unknown_type": framed(add_msg(), b"z" + bytes(65534), add_msg(2)),
    "length_65535_add_is_long_add": framed(add_msg(), add_msg(2) + bytes(65535 - 36), add_msg(3)),
    "length_65535_past_end": framed(add_msg()) + b"\xff\xff" + add_msg(2),
    "length_35_add_too_short": framed(add_msg(), add_msg(2)[:35]),
    "lone_length_byte": framed(add_msg()) + b"\x00",
    "empty_feed": b"",
}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("case", sorted(FRAME_CASES))
def test_itch_frame_length_edge_cases_match_reference(tmp_path, case, on_error, workers):
    check(tmp_path / "e.itch", FRAME_CASES[case], workers, on_error)


@pytest.mark.parametrize("length", [1, 11, 12, 50, 300])
def test_itch_every_unknown_type_is_skipped_not_an_error(tmp_path, length):
    unknown = [t for t in range(256) if chr(t) not in SIZES]
    data = framed(*(f for i, t in enumerate(unknown) for f in (add_msg(i + 1), bytes([t]) + bytes(length - 1))),
                  add_msg(len(unknown) + 1))
    rows, err = check(tmp_path / "u.itch", data)
    assert err is None and [r[0] for r in rows] == list(range(1, 2 * len(unknown) + 2, 2))


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_itch_mostly_unknown_types_refused_like_reference(tmp_path, on_error):
    data = framed(add_msg(), *(b"z" + bytes(11) for _ in range(100)))
    rows, err = check(tmp_path / "z.itch", data, on_error=on_error)
    assert err.record == 64 and [r[0] for r in rows] == [1]


# ---------------------------------------------------------------- extreme values

def op(b: ItchBuilder, kind: str, locate: int, ref: int, ref2: int, shares: int, price: int, side: str):
    if kind == "A":
        b.add(locate, ref, side, shares, price)
    elif kind == "F":
        b.add(locate, ref, side, shares, price, mpid="MSCO")
    elif kind == "E":
        b.execute(locate, ref, shares)
    elif kind == "C":
        b.execute_price(locate, ref, shares, price)
    elif kind == "X":
        b.cancel(locate, ref, shares)
    elif kind == "D":
        b.delete(locate, ref)
    elif kind == "U":
        b.replace(locate, ref, ref2, shares, price)
    elif kind == "P":
        b.trade(locate, ref, side, shares, price)
    elif kind == "Q":
        b.cross(locate, shares, price)
    else:
        b.raw(kind, 11 + shares % 40, locate)


OPS = st.lists(st.tuples(
    st.sampled_from("AAAFEECXXDUUPQz"), st.sampled_from(LOCATES), st.sampled_from(REFS),
    st.sampled_from(REFS), st.sampled_from(SHARES), st.sampled_from(PRICES), st.sampled_from("BS")),
    max_size=60)


def ops_feed(ops) -> bytes:
    b = ItchBuilder()
    for loc, name in ((1, "AAA"), (2, "BBB"), (65535, "ZZZ")):
        b.directory(loc, name)
    for o in ops:
        op(b, *o)
    return b.bytes()


@FUZZ
@given(ops=OPS, on_error=st.sampled_from(["raise", "skip"]))
def test_itch_extreme_refs_shares_prices_match_reference(tmp_path, ops, on_error):
    check(tmp_path / "x.itch", ops_feed(ops), on_error=on_error)


@FUZZ_POOL
@given(ops=OPS, on_error=st.sampled_from(["raise", "skip"]))
def test_itch_extreme_values_two_workers_match_reference(tmp_path, ops, on_error):
    check(tmp_path / "x.itch", ops_feed(ops), workers=2, on_error=on_error)


@pytest.mark.parametrize("ref", REFS)
def test_itch_ref_at_limit_full_life_cycle_matches_reference(tmp_path, ref):
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, ref, "B", 2**32 - 1, 2**32 - 1)
    b.add(1, ref ^ 1, "B", 2**32 - 1, 2**32 - 1)       # level total passes 2**32
    b.execute(1, ref, 2**32 - 2)
    b.replace(1, ref, ref ^ 2, 5, 0)
    b.cancel(1, ref ^ 2, 5)
    b.delete(1, ref ^ 1)
    b.add(1, ref, "S", 1, 1)
    rows, err = check(tmp_path / "l.itch", b.bytes())
    assert err is None and rows[1][5] == 2 * (2**32 - 1)


def test_itch_random_mutations_of_generated_feed_seeded_match_reference(tmp_path):
    """Byte overwrites, deletions and duplications (seeded: reproducible)."""
    from obook.gen.itch import write_itch
    base = tmp_path / "g.itch"
    write_itch(base, 3000, 4, seed=3)
    data0 = base.read_bytes()
    rng = random.Random(5)
    for i in range(30):
        data = bytearray(data0)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            kind = rng.randrange(3)
            if kind == 0:
                data[at] = rng.randrange(256)
            elif kind == 1:
                del data[at:at + rng.randint(1, 40)]
            else:
                data[at:at] = data[at:at + rng.randint(1, 40)]
        check(tmp_path / "m.itch", bytes(data), workers=2 if i % 10 == 0 else 1,
              on_error="skip" if i % 2 else "raise")


def test_itch_regression_side_byte_not_b_is_a_sell(tmp_path):
    """Found by the seeded mutations: an add whose side byte is neither B nor S
    (README: it is a sell); the reference had left it out of both sides."""
    data = framed(add_msg(1, side=b"B"), add_msg(2, price=2000, side=b" "), add_msg(3, price=1500, side=b"\xff"))
    rows, err = check(tmp_path / "s.itch", data)
    assert err is None and [(r[7], r[8]) for r in rows] == [(None, None), (2000, 100), (1500, 100)]


# ---------------------------------------------------------------- hostile names, every table

NAME = b"\xff\xe9A\x80B"          # not UTF-8; the spec's stock field is 8 bytes of text
SHOWN = NAME.decode("latin-1")    # every table shows it as latin-1, like the BBO's ticker


def hostile_name_feed(path):
    b = ItchBuilder()
    b.system("O")
    b.directory(1, NAME)
    b.directory(2, "MSFT")
    b.trading_action(1, "T")
    b.add(1, 10, "B", 100, 1_000_000)
    b.add(1, 11, "S", 100, 1_001_000, mpid="GSCO")
    b.add(2, 12, "B", 5, 500_000)
    b.execute(1, 10, 30, match=1)
    b.trade(1, 0, "B", 100, 1_000_000, match=2)
    b.cross(1, 10**6, 1_000_000, match=3)
    b.broken(2)
    b.delete(1, 11)
    b.system("C")
    return b.write(path)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("table", ["bbo", "trades", "orders", "depth"])
def test_itch_non_utf8_stock_name_replay_tables_show_latin1(tmp_path, table, workers):
    from obook.engine.replay import Replay

    path = hostile_name_feed(tmp_path / "names.itch")
    rows = Replay(path, workers=workers, tables=(table,)).reader(table).read_all().to_pylist()
    tickers = {r["ticker"] for r in rows}
    assert SHOWN in tickers and tickers <= {SHOWN, "MSFT", None}    # a B row has no book


@pytest.mark.parametrize("reader", ["read_itch", "symbols", "trading_actions"])
def test_itch_non_utf8_stock_name_side_tables_show_latin1(tmp_path, reader):
    import obook

    path = hostile_name_feed(tmp_path / "names.itch")
    rows = getattr(obook, reader)(path).read_all().to_pylist()
    stocks = {r["stock"] for r in rows if r["stock"] is not None}
    assert SHOWN in stocks and stocks <= {SHOWN, "MSFT"}


def test_itch_non_utf8_stock_name_convert_every_table_and_duckdb(tmp_path):
    import obook
    import pyarrow.parquet as pq
    from obook.to_parquet import REPLAY_TABLES
    from obook.feeds import get_format

    TABLES = REPLAY_TABLES + tuple(get_format("itch").side_tables)
    path = hostile_name_feed(tmp_path / "names.itch")
    result = obook.convert(path, tmp_path / "out", tables=TABLES, workers=1)
    symbols = pq.read_table(result["files"]["symbols"]).column("stock").to_pylist()
    assert symbols == [SHOWN, "MSFT"]
    con = obook.connect()
    try:
        got = con.execute(f"SELECT DISTINCT stock FROM obook_messages('{path}') WHERE stock IS NOT NULL "
                          "ORDER BY stock").fetchall()
        assert got == sorted([(SHOWN,), ("MSFT",)])
        assert con.execute(f"SELECT stock FROM obook_symbols('{path}') ORDER BY locate").fetchall() == [
            (SHOWN,), ("MSFT",)]
    finally:
        con.close()
