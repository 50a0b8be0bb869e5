"""``convert`` stopped by a bad record: every table asked for keeps the rows of the records
before it as ``OUTDIR/<table>.parquet.partial`` (obook.to_parquet_partial)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from obook.cli import app
from obook.errors import FeedError
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch
from obook.gen.sse import write_sse
from obook.tables import open_table
from obook.to_parquet import convert

DAY = "12302019.NASDAQ_ITCH50"
#: an ITCH day's tables of one replay, of its side tables, and of a reader each
ITCH_TABLES = ("bbo", "trades", "orders", "depth", "bars", "messages", "symbols", "system_events",
               "trading_actions", "cross_trades")


@pytest.fixture(scope="module")
def itch_day(tmp_path_factory):
    path = tmp_path_factory.mktemp("feeds") / DAY
    write_itch(path, 6000, 8, seed=5)
    return path


def _message_offset(data: bytes, k: int) -> int:
    """The byte offset of ITCH message ``k`` (1-based) of a BinaryFILE."""
    offset = 0
    for _ in range(k - 1):
        offset += 2 + int.from_bytes(data[offset:offset + 2], "big")
    return offset


def _itch_pair(itch_day, tmp_path, k: int, damage):
    """A copy of the day with message ``k`` damaged by ``damage(bytearray, offset)``, and the
    clean day of the messages before it (in folders of their own: the same Nasdaq name)."""
    data = itch_day.read_bytes()
    at = _message_offset(data, k)
    bad, clean = tmp_path / "bad" / DAY, tmp_path / "clean" / DAY
    bad.parent.mkdir()
    clean.parent.mkdir()
    damaged = bytearray(data)
    damage(damaged, at)
    bad.write_bytes(bytes(damaged))
    clean.write_bytes(data[:at])
    return bad, clean


def _short_frame(data: bytearray, at: int) -> None:      # an Add Order in a frame shorter than one
    assert int.from_bytes(data[at:at + 2], "big") < 36
    data[at + 2] = ord("A")


def _unknown_order(data: bytearray, at: int) -> None:    # a delete of an order never added
    assert data[at + 2:at + 3] == b"D"
    data[at + 13:at + 21] = (2**62 + 7).to_bytes(8, "big")


def _delete_at(data: bytes, after: int) -> int:
    """The number of the first Order Delete message after message ``after``."""
    offset, k = 0, 1
    while True:
        if k > after and data[offset + 2:offset + 3] == b"D":
            return k
        offset += 2 + int.from_bytes(data[offset:offset + 2], "big")
        k += 1


def _same_rows(kept, clean, tables) -> None:
    for t in tables:
        got, want = pq.read_table(kept / f"{t}.parquet.partial"), pq.read_table(clean / f"{t}.parquet")
        assert want.num_rows > 0, t
        assert got.replace_schema_metadata(None).equals(want.replace_schema_metadata(None)), t


def test_convert_itch_bad_frame_every_table_partial_equals_clean_replay_before_it(itch_day, tmp_path):
    k = _delete_at(itch_day.read_bytes(), 3000)
    bad, clean = _itch_pair(itch_day, tmp_path, k, _short_frame)
    convert(clean, tmp_path / "clean_out", tables=ITCH_TABLES, workers=2)
    with pytest.raises(FeedError) as info:
        convert(bad, tmp_path / "out", tables=ITCH_TABLES, workers=2)
    assert info.value.feed_record == k and info.value.kept_in == str(tmp_path / "out" / "TABLE.parquet.partial")
    assert sorted(os.listdir(tmp_path / "out")) == sorted(f"{t}.parquet.partial" for t in ITCH_TABLES)
    _same_rows(tmp_path / "out", tmp_path / "clean_out", ITCH_TABLES)


def test_convert_itch_unknown_order_tables_of_later_passes_cut_at_the_bad_message(itch_day, tmp_path):
    """The replay fails; the messages and side tables, which read past it, keep the rows of the
    messages before it."""
    k = _delete_at(itch_day.read_bytes(), 3000)
    bad, clean = _itch_pair(itch_day, tmp_path, k, _unknown_order)
    tables = ("bbo", "orders", "depth", "messages", "symbols", "system_events", "trading_actions", "cross_trades")
    convert(clean, tmp_path / "clean_out", tables=tables, workers=2)
    with pytest.raises(FeedError, match="unknown order ref") as info:
        convert(bad, tmp_path / "out", tables=tables, workers=2)
    assert info.value.feed_record == k
    _same_rows(tmp_path / "out", tmp_path / "clean_out", tables)


def test_convert_itch_on_error_skip_later_table_fails_earlier_tables_cut_back(itch_day, tmp_path):
    """The tolerant replay skips the bad frame and completes; the messages reader stops at it:
    the replay's tables are cut back to the messages before it."""
    k = _delete_at(itch_day.read_bytes(), 3000)
    bad, clean = _itch_pair(itch_day, tmp_path, k, _short_frame)
    tables = ("bbo", "orders", "depth", "messages")
    convert(clean, tmp_path / "clean_out", tables=tables, workers=2)
    with pytest.raises(FeedError) as info:
        convert(bad, tmp_path / "out", tables=tables, workers=2, on_error="skip")
    assert info.value.feed_record == k
    _same_rows(tmp_path / "out", tmp_path / "clean_out", tables)


def test_convert_csv_bad_line_every_table_partial_equals_clean_replay_before_it(tmp_path):
    feed = tmp_path / "day.csv"
    write_csv(feed, 3000, 4, seed=2)
    lines = feed.read_text().splitlines(keepends=True)
    bad, clean = tmp_path / "bad.csv", tmp_path / "clean.csv"
    bad.write_text("".join(lines[:1500] + ["not,a,record\n"] + lines[1500:]))
    clean.write_text("".join(lines[:1500]))
    tables = ("bbo", "trades", "orders", "depth", "bars")
    convert(clean, tmp_path / "clean_out", tables=tables, workers=2)
    with pytest.raises(FeedError) as info:
        convert(bad, tmp_path / "out", tables=tables, workers=2)
    assert info.value.feed_record == 1501
    _same_rows(tmp_path / "out", tmp_path / "clean_out", tables)


def test_cli_convert_sse_bad_line_every_table_keeps_the_rows_its_reader_delivers(tmp_path):
    """A Shanghai log's tables (its replay's, its audit, its bars): each table's rows before the
    bad line, those its own reader delivers before the error (the log's BizIndex order places
    the lines before a bad one as far as it can: not a clean replay's of the lines before). The
    bad line is past the first 4,096 lines, the window of lines whose event order it leaves
    unsettled, so that the audit has snapshots settled before it."""
    feed = tmp_path / "g.log"
    write_sse(feed, 8000, 3, seed=1)
    lines = feed.read_text().splitlines(keepends=True)
    lines[5999] = lines[5999].replace(lines[5999].split()[1], "MsgType=300", 1)
    bad = tmp_path / "bad.log"
    bad.write_text("".join(lines))
    tables = ["bbo", "trades", "depth", "audit", "bars"]
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["convert", str(bad), str(out), "--tables", ",".join(tables), "-w", "2"])
    assert res.exit_code == 1 and isinstance(res.exception, FeedError), res.output
    assert res.exception.record == 6000 and res.exception.kept_in == str(out / "TABLE.parquet.partial")
    assert sorted(os.listdir(out)) == sorted(f"{t}.parquet.partial" for t in tables)
    for t in tables:
        batches = []
        with pytest.raises(FeedError):
            for batch in open_table(t, str(bad), workers=1):
                batches.append(batch)
        want = pa.Table.from_batches(batches)
        got = pq.read_table(out / f"{t}.parquet.partial")
        assert want.num_rows > 0, t
        assert got.replace_schema_metadata(None).equals(want.replace_schema_metadata(None)), t


def _frames(data: bytes) -> list[bytes]:
    """The frames of an ITCH BinaryFILE (each with its 2-byte length)."""
    frames, offset = [], 0
    while offset < len(data):
        end = offset + 2 + int.from_bytes(data[offset:offset + 2], "big")
        frames.append(data[offset:end])
        offset = end
    return frames


def break_after_delete(itch_day, tmp_path):
    """A copy of the day with a Trade Break, ten messages after its first Order Delete past
    message 3000, of the last execution before that delete: (the day, the delete's number,
    the execution's number)."""
    frames = _frames(itch_day.read_bytes())
    k = _delete_at(itch_day.read_bytes(), 3000)
    trade = max(i for i, f in enumerate(frames[:k - 1]) if f[2:3] == b"E") + 1
    match = frames[trade - 1][2 + 23:2 + 31]
    brk = frames[k + 10][:2 + 11]     # the header of a later message, as a Trade Break's
    brk = (19).to_bytes(2, "big") + b"B" + brk[3:2 + 11] + match
    frames.insert(k + 10, brk)
    day = tmp_path / "with_break" / DAY
    day.parent.mkdir()
    day.write_bytes(b"".join(frames))
    return day, k, trade


@pytest.mark.parametrize("damage", [_short_frame, _unknown_order])
def test_convert_itch_break_after_the_bad_record_partial_trades_not_broken(itch_day, tmp_path, damage):
    """A Trade Break after the bad record is never delivered: the trade it names is not
    broken in the ``.partial`` trades (the clean replay of the messages before it)."""
    day, k, trade = break_after_delete(itch_day, tmp_path)
    bad, clean = _itch_pair(day, tmp_path, k, damage)
    tables = ("trades", "bars")
    convert(clean, tmp_path / "clean_out", tables=tables, workers=2)
    whole = tmp_path / "whole_out"
    convert(day, whole, tables=tables, workers=2)
    broken = pq.read_table(whole / "trades.parquet").filter(pc.field("broken"))
    assert trade in broken.column("seq").to_pylist()        # the break, read whole
    with pytest.raises(FeedError) as info:
        convert(bad, tmp_path / "out", tables=tables, workers=2)
    assert info.value.feed_record == k
    _same_rows(tmp_path / "out", tmp_path / "clean_out", tables)
    # the tolerant replay completes; the messages reader stops at the bad frame: cut back to it
    if damage is _short_frame:
        with pytest.raises(FeedError):
            convert(bad, tmp_path / "skip_out", tables=tables + ("messages",), workers=2, on_error="skip")
        _same_rows(tmp_path / "skip_out", tmp_path / "clean_out", tables)
