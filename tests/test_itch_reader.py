"""obook.read_itch: every message decoded, against the plain struct-based reference."""

import gzip

import pyarrow as pa
import pytest

import obook
from obook.errors import TruncatedFeedError
from obook.gen.itch import write_itch

from itch_builder import ItchBuilder
from reference_itch import reference_messages

FIELDS = ["seq", "offset", "type", "locate", "tracking", "time", "ref", "side", "shares", "price",
          "new_ref", "match", "stock"]


def decoded(path):
    table = obook.read_itch(path).read_all()
    assert table.schema == obook.itch_message_schema
    return table


@pytest.fixture(scope="module")
def feed(tmp_path_factory):
    path = tmp_path_factory.mktemp("reader") / "day.itch"
    write_itch(path, 30_000, 9, seed=11)
    return path


def test_read_itch_generated_feed_matches_reference(feed):
    table = decoded(feed)
    expected = reference_messages(feed)
    assert table.num_rows == len(expected) == 30_000
    got = table.select(FIELDS).to_pylist()
    assert got == [{k: d[k] for k in FIELDS} for d in expected]


@pytest.mark.parametrize("block", [64, 4099])
def test_read_itch_small_blocks_split_messages_same_rows(feed, block):
    from obook.feeds.itch.messages import iter_messages
    batches = list(iter_messages(feed, block_size=block))
    assert len(batches) > 1
    assert pa.Table.from_batches(batches).equals(decoded(feed))


def test_read_itch_gzip_same_as_raw(feed, tmp_path):
    gz = tmp_path / "day.itch.gz"
    gz.write_bytes(gzip.compress(feed.read_bytes(), 1))
    assert decoded(gz).equals(decoded(feed))


def test_read_itch_system_directory_and_trading_action_keep_raw_bytes(tmp_path):
    b = ItchBuilder()
    b.system("O")
    b.directory(7, "MSFT")
    b.trading_action(7, "H")
    b.add(7, 1, "B", 10, 100)
    path = b.write(tmp_path / "f.itch")
    rows = decoded(path).to_pylist()
    assert [r["type"] for r in rows] == ["S", "R", "H", "A"]
    assert rows[0]["raw"][0:1] == b"S" and rows[0]["raw"][11:12] == b"O" and len(rows[0]["raw"]) == 12
    assert rows[1]["stock"] == "MSFT" and len(rows[1]["raw"]) == 39
    assert rows[2]["raw"][19:20] == b"H" and rows[3]["raw"] is None


def test_read_itch_truncated_tail_delivers_earlier_messages_then_raises(tmp_path):
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 1, "S", 5, 100)
    data = b.bytes()
    path = tmp_path / "cut.itch"
    path.write_bytes(data[:-3])
    reader = obook.read_itch(path)
    got = []
    with pytest.raises(TruncatedFeedError, match="byte offset 41"):
        for batch in reader:
            got.extend(batch.column("type").to_pylist())
    assert got == ["R"]


def test_read_itch_missing_file_raises_obook_error(tmp_path):
    with pytest.raises(obook.ObookError, match="no such feed file"):
        obook.read_itch(tmp_path / "none.itch")


def test_read_itch_real_nasdaq_sample_matches_reference(shared_itch):
    expected = reference_messages(shared_itch)
    got = decoded(shared_itch).select(FIELDS).to_pylist()
    assert got == [{k: d[k] for k in FIELDS} for d in expected]
    assert isinstance(obook.read_itch(shared_itch), pa.RecordBatchReader)


def test_read_itch_glob_pattern_error_says_it_reads_one_feed(tmp_path):
    write_itch(tmp_path / "a.itch", 100, 2, seed=1)
    with pytest.raises(obook.ObookError, match=r"a\*\.itch: read_itch reads one feed, not a glob pattern; "
                                               r"obook\.messages\(pattern\) reads each file"):
        obook.read_itch(str(tmp_path / "a*.itch"))
