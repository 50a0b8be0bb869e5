"""Hostile Databento files: another schema than MBO (refused by name, not replayed to empty
tables), a metadata header 'of 4 GiB', symbol mappings that name no instrument id."""

from __future__ import annotations

import struct

import databento_dbn as dbn
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import zstandard

import obook
from obook.errors import FeedError
from obook.gen.databento import metadata_bytes

from hostile_support import batches_until_error, cli_error, damage_zstd_block


def _mbp1_file(path):
    meta = dbn.Metadata(dataset="XNAS.ITCH", start=1_700_000_000_000_000_000, stype_in=dbn.SType.RAW_SYMBOL,
                        stype_out=dbn.SType.INSTRUMENT_ID, schema=dbn.Schema.MBP_1, symbols=["AAPL"],
                        mappings=[], version=3)
    recs = b"".join(bytes(dbn.MBP1Msg(publisher_id=1, instrument_id=7, ts_event=10 + i, price=100 + i, size=5,
                                      action=dbn.Action("A"), side=dbn.Side("B"), flags=0x80, depth=0,
                                      ts_recv=11 + i, levels=dbn.BidAskPair(bid_px=100 + i, bid_sz=5, bid_ct=1)))
                    for i in range(5))
    path.write_bytes(meta.encode() + recs)
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_dbn_mbp1_file_refused_naming_its_schema_not_empty_tables(tmp_path, workers):
    path = _mbp1_file(tmp_path / "day.mbp-1.dbn")
    with pytest.raises(FeedError, match="schema mbp-1"):
        obook.bbo(path, workers=workers).read_all()
    assert "a DBN file of schema mbp-1" in cli_error("bbo", path)


def test_dbn_header_length_4_gib_inside_zstd_clear_reason(tmp_path):
    path = tmp_path / "huge.dbn.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b"DBN\x03" + struct.pack("<I", 0xFFFFFFF0) + bytes(200)))
    with pytest.raises(FeedError, match="metadata header length 4294967280 bytes is implausible") as info:
        obook.bbo(path, workers=1).read_all()
    assert info.value.reason
    assert "implausible" in cli_error("bbo", path)


def test_dbn_metadata_length_shorter_than_its_fixed_fields_says_so(tmp_path):
    head = metadata_bytes(3, [7])
    path = tmp_path / "short.dbn"
    path.write_bytes(head[:4] + struct.pack("<I", 0) + head[8:])
    assert "DBN metadata header length 0 bytes is too short (its fixed fields alone take 104)" in cli_error("bbo", path)


def test_dbn_metadata_symbol_count_past_the_header_says_so_not_struct_text(tmp_path):
    head = bytearray(metadata_bytes(3, [7]))
    struct.pack_into("<I", head, 108 + 4 + struct.unpack_from("<I", head, 108)[0], 0x00FFFFFF)   # symbols: 16M
    path = tmp_path / "lists.dbn"
    path.write_bytes(bytes(head))
    said = cli_error("bbo", path)
    assert "malformed DBN metadata: its symbol lists run past the end of its" in said and "unpack" not in said


def _mapped_file(tmp_path, symbol: str):
    """One MBO add on instrument 7, its metadata mapping 'SYM' -> ``symbol``."""
    head = metadata_bytes(3, [7])
    raw = symbol.encode()
    assert head.count(b"7" + bytes(20)) == 1          # the interval's symbol, a fixed-size C string
    head = head.replace(b"7" + bytes(20), raw + bytes(21 - len(raw)))
    rec = bytes(dbn.MBOMsg(publisher_id=1, instrument_id=7, ts_event=10, order_id=1, price=100, size=10,
                           action=dbn.Action("A"), side=dbn.Side("B"), ts_recv=11, flags=0x80))
    path = tmp_path / "map.dbn"
    path.write_bytes(head + rec)
    return path


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("symbol", ["²³", "٣"])
def test_dbn_symbol_mapping_not_an_instrument_id_clear_error_strict_counted_tolerant(tmp_path, symbol, workers):
    path = _mapped_file(tmp_path, symbol)
    with pytest.raises(FeedError, match="not an instrument id"):
        obook.bbo(path, workers=workers).read_all()
    stats: dict = {}
    t = obook.bbo(path, workers=workers, on_error="skip", stats=stats).read_all()
    assert t.column("ticker").to_pylist() == ["7"] and stats["skipped"] == {"malformed symbol mapping": 1}
    assert "not an instrument id" in cli_error("bbo", path)


@pytest.fixture(scope="module")
def dbn_day(tmp_path_factory):
    from hostile_support import generated_day

    return generated_day(tmp_path_factory.mktemp("dbn") / "day.dbn", "databento", 3000)


def _record_at(data: bytes, number: int) -> int:
    """The byte offset of record ``number`` (1-based) of a DBN file."""
    from obook.feeds.databento.metadata import header_length

    p = header_length(data[:8])
    for _ in range(number - 1):
        p += data[p] * 4           # a record's length, in 4-byte words
    return p


def _bad_rtype(dbn_day, tmp_path):
    data = bytearray(dbn_day.read_bytes())
    data[_record_at(data, 2000) + 1] = 0x77
    bad = tmp_path / "bad.dbn"
    bad.write_bytes(bytes(data))
    return bad


@pytest.mark.parametrize("table", ["mbp1", "mbp10", "bbo"])
@pytest.mark.parametrize("workers", [1, 2])
def test_dbn_mbp_bad_rtype_rows_before_the_record_then_its_error(dbn_day, tmp_path, table, workers):
    from hostile_support import batches_until_error

    bad = _bad_rtype(dbn_day, tmp_path)
    read = getattr(obook, table)
    got, error = batches_until_error(read(bad, workers=workers))
    clean = read(dbn_day, workers=1).read_all()
    before = clean.filter(pc.less(clean.column("seq"), 2000))
    assert before.num_rows > 0 and sum(b.num_rows for b in got) == before.num_rows
    assert pa.Table.from_batches(got, clean.schema).equals(before)
    assert str(error) == f"{bad}: record 2000: unknown rtype 0x77"


def test_dbn_mbp1_polars_bad_rtype_rows_before_the_record_then_its_error(dbn_day, tmp_path):
    bad = _bad_rtype(dbn_day, tmp_path)
    clean = obook.mbp1(dbn_day, workers=1).read_all()
    before = clean.filter(pc.less(clean.column("seq"), 2000))
    frame = obook.scan_mbp1(bad, workers=1)
    got = frame.head(before.num_rows).collect()            # the rows before: no error yet
    assert got.height == before.num_rows > 0
    assert got["seq"].to_list() == before.column("seq").to_pylist()
    with pytest.raises(Exception, match="record 2000: unknown rtype 0x77"):
        frame.collect()


def test_dbn_mbp1_cli_bad_rtype_rows_before_then_one_line_error(dbn_day, tmp_path):
    from hostile_support import obook_cli

    bad = _bad_rtype(dbn_day, tmp_path)
    r = obook_cli("table", "mbp1", bad)
    assert r.returncode == 1
    assert r.stderr.decode().strip().splitlines()[-1] == f"error: {bad}: record 2000: unknown rtype 0x77"
    clean = obook.mbp1(dbn_day, workers=1).read_all()
    want = clean.filter(pc.less(clean.column("seq"), 2000)).num_rows
    assert len(r.stdout.decode().splitlines()) == want + 1          # the header, then each row


@pytest.mark.parametrize("table", ["mbp1", "mbp10"])
def test_dbn_mbp_truncated_file_rows_before_the_cut_record_then_its_error(dbn_day, tmp_path, table):
    from hostile_support import batches_until_error

    data = dbn_day.read_bytes()
    cut_at = _record_at(data, 1996) + 5
    cut = tmp_path / "cut.dbn"
    cut.write_bytes(data[:cut_at])
    read = getattr(obook, table)
    got, error = batches_until_error(read(cut, workers=1))
    clean = read(dbn_day, workers=1).read_all()
    before = clean.filter(pc.less(clean.column("seq"), 1996))
    assert before.num_rows > 0 and pa.Table.from_batches(got, clean.schema).equals(before)
    assert str(error) == f"{cut}: record 1996: truncated record at byte offset {cut_at - 5}"


@pytest.mark.parametrize("table", ["bbo", "mbp1"])
@pytest.mark.parametrize("block", [0, 1])
def test_dbn_zst_damaged_rows_before_the_damage_then_damaged_stream_error(dbn_day, tmp_path, table, block):
    """A .dbn.zst damaged inside gives the rows of every record zstd decodes before the
    damage, then names the file, the record the damage cuts and zstd's reason; damaged in
    the block of the metadata header: no row and that error, not a truncated header."""
    import re

    from obook.feeds.databento.metadata import header_length

    data = dbn_day.read_bytes()
    blob, at = damage_zstd_block(zstandard.ZstdCompressor().compress(data), block)
    bad = tmp_path / "bad.dbn.zst"
    bad.write_bytes(blob)
    held = len(zstandard.ZstdDecompressor().decompressobj().decompress(blob[:at]))
    cut, p = 1, header_length(data[:8])             # the first record not whole in what zstd decodes
    while p + data[p] * 4 <= held:
        p += data[p] * 4
        cut += 1
    read = getattr(obook, table)
    got, error = batches_until_error(read(bad, workers=1))
    clean = read(dbn_day, workers=1).read_all()
    before = clean.filter(pc.less(clean.column("seq"), cut))
    assert (before.num_rows > 0) is (block > 0)
    assert pa.Table.from_batches(got, clean.schema).equals(before)
    assert re.fullmatch(rf"{re.escape(str(bad))}: record {cut}: read failed at byte {held} of the decompressed "
                        r"feed: damaged zstd stream: \w.+", str(error)), str(error)
    assert "damaged zstd stream" in cli_error("table", table, bad)
