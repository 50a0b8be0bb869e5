"""The synthetic ITCH day writer: deterministic, valid, realistic enough to benchmark."""

from __future__ import annotations

import collections
import gzip

import pytest

from obook.gen.itch import CAP, stock_name, write_itch
from reference_itch import _apply, frames, reference_bbo, reference_messages

N = 50_000
K = 40


@pytest.fixture(scope="module")
def feed(tmp_path_factory):
    path = tmp_path_factory.mktemp("gen") / "day.itch"
    assert write_itch(path, N, K, seed=7) == N
    return path


@pytest.fixture(scope="module")
def messages(feed):
    return reference_messages(feed)


def test_write_itch_same_seed_same_bytes(tmp_path):
    write_itch(tmp_path / "a.itch", 20_000, 30, seed=3)
    write_itch(tmp_path / "b.itch", 20_000, 30, seed=3)
    assert (tmp_path / "a.itch").read_bytes() == (tmp_path / "b.itch").read_bytes()


def test_write_itch_other_seed_other_bytes(tmp_path):
    write_itch(tmp_path / "a.itch", 20_000, 30, seed=3)
    write_itch(tmp_path / "b.itch", 20_000, 30, seed=4)
    assert (tmp_path / "a.itch").read_bytes() != (tmp_path / "b.itch").read_bytes()


def test_write_itch_gz_path_decompresses_to_raw_bytes(tmp_path):
    write_itch(tmp_path / "a.itch", 20_000, 30, seed=5)
    write_itch(tmp_path / "a.itch.gz", 20_000, 30, seed=5)
    write_itch(tmp_path / "b.itch.gz", 20_000, 30, seed=5)
    gz = (tmp_path / "a.itch.gz").read_bytes()
    assert gz[:2] == b"\x1f\x8b"
    assert gzip.decompress(gz) == (tmp_path / "a.itch").read_bytes()
    assert gz == (tmp_path / "b.itch.gz").read_bytes()


def test_write_itch_too_few_messages_raises(tmp_path):
    with pytest.raises(ValueError):
        write_itch(tmp_path / "a.itch", 10, 30)


@pytest.mark.parametrize("stocks", [0, 65536])
def test_write_itch_stocks_past_two_byte_locates_raises_value_error_no_file(tmp_path, stocks):
    out = tmp_path / "day.itch"
    with pytest.raises(ValueError, match=f"stocks must be 1 to 65535 .*not {stocks}"):
        write_itch(out, 200_000, stocks)
    assert not out.exists()


def test_write_itch_minimal_day_is_header_and_trailer(tmp_path):
    write_itch(tmp_path / "a.itch", 3 + 6, 3)
    msgs = reference_messages(tmp_path / "a.itch")
    assert [m["type"] for m in msgs] == list("SSRRRSSSS")
    assert [m["stock"] for m in msgs if m["type"] == "R"] == ["AAA", "AAB", "AAC"]


def test_write_itch_message_count_is_requested(messages):
    assert len(messages) == N
    assert messages[-1]["seq"] == N


def test_write_itch_framing_header_and_trailer_in_order(messages):
    assert [m["type"] for m in messages[:2]] == ["S", "S"]
    directory = messages[2:2 + K]
    assert [m["type"] for m in directory] == ["R"] * K
    assert [m["locate"] for m in directory] == list(range(1, K + 1))
    assert [m["stock"] for m in directory] == [stock_name(i, K) for i in range(K)]
    assert messages[2 + K]["type"] == "S"
    assert [m["type"] for m in messages[-3:]] == ["S", "S", "S"]


def test_write_itch_type_mix_is_roughly_as_documented(messages):
    counts = collections.Counter(m["type"] for m in messages)
    for t in "AFEXDUCPQBHILYVN":
        assert counts[t] > 0, t
    share = {t: counts[t] / N for t in counts}
    assert 0.30 < share["A"] < 0.45
    assert 0.02 < share["F"] < 0.07
    assert 0.20 < share["D"] < 0.40
    assert 0.04 < share["E"] < 0.10
    assert 0.05 < share["U"] < 0.10
    assert 0.05 < share["X"] < 0.10


def test_write_itch_sizes_match_spec(messages):
    sizes = {"S": 12, "R": 39, "H": 25, "A": 36, "F": 40, "E": 31, "C": 36, "X": 23, "D": 19,
             "U": 35, "P": 44, "Q": 40, "B": 19, "I": 50, "L": 26, "Y": 20, "V": 35, "N": 20}
    for m in messages:
        assert m["length"] == sizes[m["type"]], m


def test_write_itch_timestamps_refs_matches_increase(messages):
    times = [m["time"] for m in messages]
    assert all(a < b for a, b in zip(times, times[1:]))
    new_refs = [m["ref"] if m["type"] in "AF" else m["new_ref"]
                for m in messages if m["type"] in "AFU"]
    assert all(a < b for a, b in zip(new_refs, new_refs[1:]))
    matches = [m["match"] for m in messages if m["type"] in "ECPQ"]
    assert all(a < b for a, b in zip(matches, matches[1:]))
    top = max(matches)
    assert all(1 <= m["match"] <= top for m in messages if m["type"] == "B")


def test_write_itch_replay_has_no_error_and_realistic_rows(feed):
    rows, error, skipped = reference_bbo(feed)
    assert error is None and skipped == {}
    ratio = len(rows) / N
    assert 0.2 < ratio < 0.6, ratio
    # never crossed or locked; tickers come from the directory
    assert all(r[4] < r[7] for r in rows if r[4] is not None and r[7] is not None)
    assert {r[3] for r in rows} <= {stock_name(i, K) for i in range(K)}


def test_write_itch_live_orders_stay_bounded(tmp_path):
    path = tmp_path / "hot.itch"
    write_itch(path, 60_000, 2, seed=1)         # two busy books: both reach the cap
    books = collections.defaultdict(dict)
    peak = 0
    for _seq, _offset, msg in frames(path):
        typ = chr(msg[0])
        if typ in "AFECXDU":
            book = books[int.from_bytes(msg[1:3], "big")]
            assert _apply(book, typ, msg, int.from_bytes(msg[11:19], "big")) is None
            peak = max(peak, len(book))
    assert peak == CAP
    assert all(len(b) > CAP // 2 for b in books.values())


def test_write_itch_hot_stocks_get_most_messages(messages):
    per_stock = collections.Counter(m["locate"] for m in messages if m["type"] in "AFEXDUC")
    ranked = sorted(per_stock.values(), reverse=True)
    assert sum(ranked[:K // 10]) > 0.25 * sum(ranked)


def test_write_itch_day_replays_without_a_non_itch_warning(feed, caplog):
    import logging

    import obook

    with caplog.at_level(logging.WARNING, logger="obook"):
        rows = sum(b.num_rows for b in obook.bbo(str(feed), workers=1))
    assert rows > 0 and "not ITCH 5.0" not in caplog.text
