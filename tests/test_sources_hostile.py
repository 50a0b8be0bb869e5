"""Hostile containers around a feed: zstd and gzip bombs (memory must not follow the
decompressed size), empty, cut and damaged zip archives (a one-line error, never a traceback)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pyarrow as pa
import pytest
import zstandard

import obook
from obook.errors import ObookError
from obook.feeds.sources import GZIP_MAGIC, _decompressing
from obook.feeds.zstd_frames import ZSTD_MAGIC

from hostile_support import batches_until_error, cli_error, damage_zstd_block, peak_rss_mib
from itch_builder import ItchBuilder

BOMB_GIB = 1
RSS_LIMIT_MIB = 400


def _zstd_bomb(path, prefix: bytes, gib: int = BOMB_GIB) -> int:
    """``prefix`` then ``gib`` GiB of zeros, zstd-compressed as a stream (a few dozen KB)."""
    with open(path, "wb") as f:
        with zstandard.ZstdCompressor(level=3).stream_writer(f, closefd=False) as w:
            w.write(prefix)
            zeros = bytes(16 << 20)
            for _ in range(gib * 64):
                w.write(zeros)
    return path.stat().st_size


def _itch_head() -> bytes:
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 10, "B", 100, 1_000_000)
    return b.bytes()


PREFIX = {
    "itch": _itch_head(),                                      # then frames of length 0: an error at once
    "csv": b"Time,Ticker,Order,T,Shares,Price\n1,AAA,1,B,5,5\n",  # then a line of NULs
    "databento": b"DBN\x03" + (0xFFFFFFF0).to_bytes(4, "little"),  # a header 'of 4 GiB'
    "szse": b"//SecurityIDSource=102 MsgType=192 ",           # then a line of NULs
    "sse": b"//SecurityIDSource=101 MsgType=192 ",
}


BOMBS = [("zst", fmt) for fmt in sorted(PREFIX)] + [("gz", fmt) for fmt in ("itch", "csv", "databento", "sse")]


def _bomb(path, prefix: bytes) -> int:
    return (_gzip_bomb if path.suffix == ".gz" else _zstd_bomb)(path, prefix)


@pytest.mark.parametrize("kind, fmt", BOMBS)
def test_compressed_bomb_peak_rss_bounded_and_one_line_error(tmp_path, kind, fmt):
    """A ~40 KB .zst or ~1 MB .gz of 1 GiB: the replay's peak RSS stays far below the
    decompressed size (zstd's was above it: the whole bomb decompressed in one piece)."""
    path = tmp_path / f"bomb.{fmt}.{kind}"
    assert _bomb(path, PREFIX[fmt]) < 2 << 20
    code, rss, err = peak_rss_mib("bbo", "--format", fmt, path)
    assert code == 1 and err.strip().splitlines()[-1].startswith("error: "), err[-1500:]
    assert rss < RSS_LIMIT_MIB, f"peak RSS {rss:.0f} MiB"


@pytest.mark.parametrize("kind", ["zst", "gz"])
def test_compressed_bomb_on_stdin_peak_rss_bounded(tmp_path, kind):
    path = tmp_path / f"bomb.{kind}"
    _bomb(path, PREFIX["itch"])
    with open(path, "rb") as f:
        code, rss, err = peak_rss_mib("bbo", "--format", "itch", "-", stdin=f)
    assert code == 1 and "error: " in err, err[-1500:]
    assert rss < RSS_LIMIT_MIB, f"peak RSS {rss:.0f} MiB"


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=1)


COMPRESS = {"zst": (lambda data: zstandard.ZstdCompressor().compress(data), ZSTD_MAGIC),
            "gz": (_gzip, GZIP_MAGIC)}


def _reader(kind, blob):
    return _decompressing(io.BytesIO(blob), COMPRESS[kind][1], "test")


@pytest.mark.parametrize("kind", ["zst", "gz"])
def test_decompressing_reader_each_read_bounded_members_and_cut(kind):
    """Each read gives at most what it asks for; several members (frames) read as one
    stream; a stream cut inside a member raises EOFError, after every byte before the cut."""
    pack = COMPRESS[kind][0]
    data = bytes(range(256)) * 4000
    two = pack(data) + pack(b"tail")
    for blob, want in ((two, data + b"tail"), (pack(bytes(50 << 20)), None)):
        r = _reader(kind, blob)
        buf = bytearray(4096)
        got, total = [], 0
        while n := r.readinto(memoryview(buf)):
            assert n <= 4096
            total += n
            if want is not None:
                got.append(bytes(buf[:n]))
        assert total == (len(want) if want is not None else 50 << 20)
        if want is not None:
            assert b"".join(got) == want
    random = np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    blob = pack(random)
    cut = _reader(kind, blob[:len(blob) // 2])
    view, got = memoryview(bytearray(1 << 16)), 0
    with pytest.raises(EOFError):
        while n := cut.readinto(view):
            assert bytes(view[:n]) == random[got:got + n]
            got += n
    assert got >= len(blob) // 2 - (1 << 17)       # all but what the decompressor still held


def test_gzip_reader_padding_between_members_skipped_junk_is_an_error():
    r = _reader("gz", _gzip(b"one") + bytes(100) + _gzip(b"two") + bytes(7))
    buf = bytearray(100)
    assert r.readinto(memoryview(buf)) == 3 and r.readinto(memoryview(buf)) == 3 and bytes(buf[:3]) == b"two"
    assert r.readinto(memoryview(buf)) == 0
    r = _reader("gz", _gzip(b"one") + b"junk")
    assert r.readinto(memoryview(buf)) == 3
    with pytest.raises(OSError, match="not a gzip member"):
        r.readinto(memoryview(buf))


def _itch_day(n: int) -> bytes:
    b = ItchBuilder()
    b.directory(1, "AAA")
    for i in range(n):
        b.add(1, 10 + i, "B", 100, 1_000_000 + i * 7919 % 100_003)
    return b.bytes()


@pytest.mark.parametrize("kind, keep", [("gz", 0.02), ("gz", 0.75), ("zst", 0.3), ("zst", 0.75)])
def test_compressed_cut_feed_every_row_before_the_cut_then_its_record(tmp_path, kind, keep):
    """A compressed feed cut short gives the rows of every whole record it still holds
    (those of the plain feed's prefix), then the error names the first record cut, its
    offset in the decompressed feed, and that the compressed stream is cut short in it."""
    day = _itch_day(40_000)
    blob = COMPRESS[kind][0](day)
    path = tmp_path / f"cut.itch.{kind}"
    path.write_bytes(blob[:int(len(blob) * keep)])
    cut = path.read_bytes()          # what the cut stream still holds, by zlib / zstandard themselves
    held = (zlib.decompressobj(wbits=31).decompress(cut) if kind == "gz"
            else zstandard.ZstdDecompressor().decompressobj().decompress(cut))
    assert len(held) > 0 and day.startswith(held)
    prefix = tmp_path / "prefix.itch"
    prefix.write_bytes(held)
    want, prefix_error = batches_until_error(obook.bbo(prefix, workers=1))
    got, error = batches_until_error(obook.bbo(path, workers=1))
    assert sum(b.num_rows for b in got) == sum(b.num_rows for b in want) > 0
    assert (error.record, error.offset) == (prefix_error.record, prefix_error.offset)
    assert re.fullmatch(rf"{re.escape(str(path))}: message {error.record}: truncated record at byte offset "
                        rf"{error.offset} of the decompressed feed: the compressed stream is cut short "
                        rf"{len(held) - error.offset} bytes? into it \(.+\)", str(error)), str(error)


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_compressed_whole_stream_of_a_cut_record_error_says_offset_is_the_decompressed_feeds(tmp_path, kind):
    """A whole gzip or zstd stream whose feed ends inside a record: the record's byte offset is
    said to be the decompressed feed's (the file's own bytes are fewer)."""
    day = _itch_day(3000)
    data = day[:-5]                           # the last add: 31 of its 36 bytes
    path = tmp_path / f"cut.itch.{kind}"
    path.write_bytes(COMPRESS[kind][0](data))
    got, error = batches_until_error(obook.bbo(path, workers=1))
    assert sum(b.num_rows for b in got) > 0 and error.offset == len(day) - 38
    assert str(error) == (f"{path}: message 3001: truncated record at byte offset {len(day) - 38} of the "
                          "decompressed feed: its length, 36 bytes, runs past the end of the file (31 of them are there)")


def test_zstd_cut_feed_rows_before_then_truncated_error(tmp_path):
    b = ItchBuilder()
    b.directory(1, "AAA")
    for i in range(40_000):
        b.add(1, 10 + i, "B", 100, 1_000_000 + i * 7919 % 100_003)
    blob = zstandard.ZstdCompressor().compress(b.bytes())      # several zstd blocks
    path = tmp_path / "cut.itch.zst"
    path.write_bytes(blob[:len(blob) * 3 // 4])
    batches, error = batches_until_error(obook.bbo(path, workers=1))
    assert batches and "truncated record" in str(error)


@pytest.mark.parametrize("kind", ["path", "stream"])
@pytest.mark.parametrize("block", [1, 5])
def test_damaged_zstd_every_row_zstd_decodes_before_the_damage_then_error_naming_file_and_reason(
        tmp_path, kind, block):
    """A zstd frame damaged at a block gives the rows of every whole record of the blocks
    before it (all that zstd decodes), then names the file, the record the damage cuts,
    the byte of the decompressed feed and zstd's reason."""
    import re

    day = _itch_day(40_000)
    blob, at = damage_zstd_block(zstandard.ZstdCompressor().compress(day), block)
    bad = tmp_path / "bad.itch.zst"
    bad.write_bytes(blob)
    held = zstandard.ZstdDecompressor().decompressobj().decompress(blob[:at])
    assert len(held) == block << 17 and day.startswith(held)
    prefix = tmp_path / "prefix.itch"
    prefix.write_bytes(held)
    want, prefix_error = batches_until_error(obook.table("orders", prefix, workers=1))     # a row per add
    source = bad if kind == "path" else io.BytesIO(blob)
    got, error = batches_until_error(obook.table("orders", source, workers=1, format="itch"))
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches(want)) and sum(b.num_rows for b in got) > 0
    name = str(bad) if kind == "path" else "<BytesIO>"
    assert re.fullmatch(rf"{re.escape(name)}: message {prefix_error.record}: read failed at byte {len(held)} of the "
                        r"decompressed feed: damaged zstd stream: \w.+", str(error)), str(error)


# ---------------------------------------------------------------- gzip bombs

def _gzip_bomb(path, prefix: bytes, gib: int = BOMB_GIB) -> int:
    """``prefix`` then ``gib`` GiB of zeros, gzipped as a stream (about a MB)."""
    from isal import igzip

    with igzip.open(path, "wb", compresslevel=1) as w:
        w.write(prefix)
        zeros = bytes(16 << 20)
        for _ in range(gib * 64):
            w.write(zeros)
    return path.stat().st_size


#: decompresses a whole gzip bomb through the feed reader in the replay's 64 KiB pieces and
#: prints the bytes read and the process's peak RSS growth (KiB)
_READ_ALL = """
import resource, sys
from obook.feeds.sources import READ_PIECE, open_file
f, raw = open_file(sys.argv[1])
view = memoryview(bytearray(READ_PIECE))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
total = 0
while n := f.readinto(view):
    assert n <= READ_PIECE
    total += n
print(total, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)
"""


def test_gzip_reader_whole_bomb_memory_bounded_per_read(tmp_path):
    """The gzip reader gives each read at most what it asks for and holds no more than a
    few of its input buffers: reading 1 GiB of a bomb grows the process by a few MiB."""
    path = tmp_path / "bomb.gz"
    _gzip_bomb(path, b"")
    r = subprocess.run([sys.executable, "-c", _READ_ALL, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-1500:]
    total, grew_kib = map(int, r.stdout.split())
    assert total == BOMB_GIB << 30
    assert grew_kib < 64 << 10, f"grew {grew_kib >> 10} MiB"


# ---------------------------------------------------------------- zip archives

def _zip(path, data: bytes, method=zipfile.ZIP_DEFLATED, members=1):
    with zipfile.ZipFile(path, "w", method) as z:
        for k in range(members):
            z.writestr(f"day{k}.itch", data)
    return path


def test_zip_empty_archive_one_line_error(tmp_path):
    path = _zip(tmp_path / "empty.zip", b"", members=0)
    line = cli_error("bbo", "--format", "itch", path)
    assert "an empty zip archive" in line
    with pytest.raises(ObookError, match="an empty zip archive"):
        obook.bbo(path, workers=1, format="itch").read_all()


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.95])
def test_zip_cut_short_archive_one_line_error(tmp_path, keep):
    whole = _zip(tmp_path / "whole.zip", _itch_head() * 50).read_bytes()
    path = tmp_path / "cut.zip"
    path.write_bytes(whole[:int(len(whole) * keep)])
    assert "a zip archive cut short or damaged" in cli_error("bbo", "--format", "itch", path)
    assert "a zip archive cut short or damaged" in cli_error("bbo", path)


@pytest.mark.parametrize("damage", ["deflate", "crc"])
def test_zip_damaged_member_one_line_error_not_a_traceback(tmp_path, damage):
    data = _itch_head() * 50
    path = _zip(tmp_path / "bad.zip", data, zipfile.ZIP_DEFLATED if damage == "deflate" else zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    at = 30 + len("day0.itch") + 5
    raw[at:at + 8] = b"\xff" * 8
    path.write_bytes(bytes(raw))
    line = cli_error("bbo", "--format", "itch", path)
    assert "damaged zip archive" in line
    with pytest.raises(ObookError, match="damaged zip archive"):
        obook.bbo(path, workers=1, format="itch").read_all()


@pytest.mark.parametrize("at", [10, 40, 60])
def test_zip_bytes_missing_before_directory_one_line_error_not_oserror(tmp_path, at):
    """Bytes missing before the directory: its offsets point before the file's start."""
    raw = _zip(tmp_path / "whole.zip", _itch_head() * 50).read_bytes()
    path = tmp_path / "holed.zip"
    path.write_bytes(raw[:at] + raw[at + 14:])
    assert "not a readable zip archive" in cli_error("bbo", "--format", "itch", path)
    with pytest.raises(ObookError, match="holed.zip: not a readable zip archive"):
        obook.bbo(path, workers=1, format="itch").read_all()


def test_zip_encrypted_member_one_line_error_naming_it(tmp_path):
    """A password-protected zip: one line naming the archive and its file, not the zipfile
    module's description of its member."""
    raw = bytearray(_zip(tmp_path / "plain.zip", _itch_head() * 50).read_bytes())
    raw[6] |= 1                                     # the local header's "encrypted" flag
    raw[raw.find(b"PK\x01\x02") + 8] |= 1          # the directory's
    path = tmp_path / "locked.zip"
    path.write_bytes(bytes(raw))
    want = f"{path}: its file day0.itch is encrypted (a password-protected zip archive): extract it first"
    assert cli_error("bbo", "--format", "itch", path) == f"error: {want}"
    with pytest.raises(ObookError, match="^" + re.escape(want) + "$"):
        obook.bbo(path, workers=1, format="itch").read_all()


@pytest.mark.parametrize("change", ["truncated", "appended"])
def test_trades_file_changed_between_break_pass_and_replay_error_names_file(tmp_path, monkeypatch, change):
    """The trades' breaks are read in a first pass over the file: a file written to before
    the replay reads it again would give its trades another file's breaks (a file cut to 0
    bytes gave 0 rows and only a 'no records' warning)."""
    import obook.engine.replay as replay_module
    from frontend_feeds import write_generated_feed

    feed = write_generated_feed(tmp_path / "day.itch", 20_000, stocks=5)
    real_load = replay_module.load

    def load(name):
        fn = real_load(name)
        if "prepass" not in name and "break" not in name:
            return fn

        def first_pass(*args, **kwargs):
            found = fn(*args, **kwargs)
            data = feed.read_bytes()
            first = data[:2 + int.from_bytes(data[:2], "big")]     # the first message, again
            feed.write_bytes(b"" if change == "truncated" else data + first)
            return found
        return first_pass

    monkeypatch.setattr(replay_module, "load", load)
    _, error = batches_until_error(obook.trades(feed, workers=1))
    assert error is not None and "changed while it was read" in str(error) and str(feed) in str(error), error
    assert ("then 0)" if change == "truncated" else "bytes, then") in str(error)


@pytest.mark.parametrize("change", ["truncated", "appended"])
def test_bbo_file_changed_while_replayed_error_names_file(tmp_path, change):
    """A one-pass replay (bbo) of a file cut or appended to while it is read ends in an error
    naming the file, not in the rows of part of it as if they were the whole feed."""
    from frontend_feeds import write_generated_feed

    feed = write_generated_feed(tmp_path / "day.itch", 20_000, stocks=5)
    data = feed.read_bytes()
    whole = obook.bbo(feed, workers=1).read_all().num_rows
    reader = obook.bbo(feed, workers=1)
    first = reader.read_next_batch()
    feed.write_bytes(data[:len(data) // 2] if change == "truncated" else data + data[:2 + data[1]])
    rest, error = batches_until_error(reader)
    assert error is not None and "changed while it was read" in str(error) and str(feed) in str(error), \
        (first.num_rows + sum(b.num_rows for b in rest), whole)


def test_bbo_file_deleted_while_replayed_every_row_no_error(tmp_path):
    """A file deleted once its replay opened it is read whole through the open file: every
    row, no error."""
    from frontend_feeds import write_generated_feed

    feed = write_generated_feed(tmp_path / "day.itch", 20_000, stocks=5)
    whole = obook.bbo(feed, workers=1).read_all().num_rows
    reader = obook.bbo(feed, workers=1)
    first = reader.read_next_batch()
    feed.unlink()
    rest, error = batches_until_error(reader)
    assert error is None and first.num_rows + sum(b.num_rows for b in rest) == whole, error


# ---------------------------------------------------------------- damaged gzip streams

@pytest.fixture(scope="module")
def big_days(tmp_path_factory):
    """Generated days of 30,000 records, gzipped (as ``obook gen`` writes a .gz)."""
    from hostile_support import generated_day

    root = tmp_path_factory.mktemp("damaged")
    return {kind: generated_day(root / name, kind, 30_000) for kind, name in
            (("sse", "sh.log.gz"), ("szse", "sz.log.gz"), ("pitch", "day.pitch.gz"), ("csv", "day.csv.gz"))}


@pytest.mark.parametrize("kind, unit", [("sse", "line"), ("szse", "line"), ("pitch", "message"), ("csv", "line")])
def test_damaged_gzip_log_rows_before_the_damage_then_error_naming_file_and_where(big_days, tmp_path, kind, unit):
    """A gzip stream whose check fails (its CRC damaged: every byte before decodes) gives
    the rows of the records before the failing read, then names the file, the record the
    damage cuts and the byte of the decompressed feed."""
    import re

    day = big_days[kind]
    data = bytearray(day.read_bytes())
    data[-6] ^= 0xFF                  # the member's CRC-32
    bad = tmp_path / ("bad_" + day.name)
    bad.write_bytes(bytes(data))
    clean = obook.bbo(day, workers=1).read_all()
    got, error = batches_until_error(obook.bbo(bad, workers=1))
    rows = sum(b.num_rows for b in got)
    assert clean.num_rows // 2 < rows < clean.num_rows
    got = pa.Table.from_batches(got, clean.schema)
    if kind == "sse":      # BizIndex order: the channels interleave by batch, each book's rows are its own
        from reference_l2 import bbo_by_ticker

        whole = bbo_by_ticker(clean)
        assert all(whole[t][:len(r)] == r for t, r in bbo_by_ticker(got).items())
    else:
        assert got.equals(clean.slice(0, rows))
    assert re.fullmatch(rf"{re.escape(str(bad))}: {unit} \d+: read failed at byte \d+ of the decompressed feed: "
                        r"damaged gzip stream: .+", str(error)), str(error)
    assert "read failed at byte" in cli_error("bbo", bad)


@pytest.mark.parametrize("keep", [16, 200])
def test_zstd_cut_inside_first_block_dbn_header_error_says_compressed_stream_cut_short(tmp_path, keep):
    """A .dbn.zst cut inside its first zstd block (zstd decodes no byte of it) says that the
    compressed stream is cut short, naming the file, as a cut further on does; a plain .dbn
    cut in its header says its header is truncated."""
    from obook.gen.databento import mbo_flow, write_dbn

    day = tmp_path / "day.dbn"
    write_dbn(day, mbo_flow(2000))
    cut = tmp_path / "cut.dbn.zst"
    cut.write_bytes(zstandard.ZstdCompressor().compress(day.read_bytes())[:keep])
    with pytest.raises(obook.TruncatedFeedError) as e:
        obook.bbo(cut, workers=1).read_all()
    assert str(e.value).startswith(f"{cut}: ") and "compressed stream cut short at byte offset 0" in str(e.value)
    assert "DBN metadata header" in str(e.value)
    plain = tmp_path / "cut.dbn"
    plain.write_bytes(day.read_bytes()[:keep])
    with pytest.raises(obook.TruncatedFeedError, match="truncated DBN metadata header$") as e:
        obook.bbo(plain, workers=1).read_all()
    assert "compressed" not in str(e.value)
