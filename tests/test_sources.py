"""Feed sources: plain, gzip and zstd files (by magic bytes), several files as one feed, and
streams (a pipe, a socket) give the same rows."""

import gzip
import io
import socket
import struct
import threading

import pytest
import zstandard

import obook
from obook.engine.replay import Replay
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch

from hostile_support import generated_day, obook_cli
from reference_itch import frames

TABLES = ("bbo", "trades", "orders")


def _rows(source, workers=1, format=None, breaks=True):
    replay = Replay(source, workers=workers, format=format, tables=TABLES, breaks=breaks)
    out = {t: [] for t in TABLES}
    for table, batch in replay.table_batches():
        out[table] += batch.to_pylist()
    return out


@pytest.fixture(scope="module")
def itch(tmp_path_factory):
    root = tmp_path_factory.mktemp("sources")
    plain = root / "day.itch"
    write_itch(plain, 20_000, 12, seed=5)
    data = plain.read_bytes()
    (root / "day.itch.gz").write_bytes(gzip.compress(data, mtime=0))
    (root / "day.itch.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
    # one zstd file of several frames (a streamed writer's output)
    with open(root / "multi.itch", "wb") as f:
        half = len(data) // 2
        for part in (data[:half], data[half:]):
            f.write(zstandard.ZstdCompressor().compress(part))
    return root


def test_sources_zstd_gzip_plain_same_rows(itch):
    want = _rows(itch / "day.itch")
    assert len(want["bbo"]) > 1000
    for name in ("day.itch.gz", "day.itch.zst", "multi.itch"):
        assert _rows(itch / name, workers=2) == want, name


def test_sources_zstd_csv_same_rows(tmp_path):
    plain = tmp_path / "orders.csv"
    write_csv(plain, 3000, 5, seed=2)
    z = tmp_path / "orders.csv.zst"
    z.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    assert _rows(z) == _rows(plain)


def test_sources_itch_split_at_message_boundary_same_as_whole(itch, tmp_path):
    data = (itch / "day.itch").read_bytes()
    cut = [off for seq, off, _ in frames(data)][9_000]      # the frame of message 9001 starts here
    a, b = tmp_path / "a.itch", tmp_path / "b.itch.gz"
    a.write_bytes(data[:cut])
    b.write_bytes(gzip.compress(data[cut:], mtime=0))
    want = _rows(itch / "day.itch")
    for workers in (1, 2):
        got = _rows([a, b], workers=workers)
        assert got == want


def test_sources_split_feed_error_names_the_file_at_fault_and_both_numbers(tmp_path):
    from itch_builder import ItchBuilder

    first, second = ItchBuilder(), ItchBuilder()
    first.directory(1, "AAA")
    first.add(1, ref=1, side="B", shares=10, price=100)
    second.add(1, ref=2, side="B", shares=10, price=100)
    second.delete(1, ref=99)                          # message 4 of the feed, 2 of b.itch
    a, b = first.write(tmp_path / "a.itch"), second.write(tmp_path / "b.itch")
    with pytest.raises(obook.FeedError) as e:
        _rows([a, b])
    assert (e.value.path, e.value.record, e.value.feed_record) == (str(b), 2, 4)
    assert e.value.feed == f"{a}+{b}" and "unknown order ref" in e.value.reason
    assert str(e.value).startswith(f"{b}: message 2: unknown order ref 99 ")
    assert str(e.value).endswith(f"(message 4 of {a}+{b})")


def _pieces(data: bytes, cuts: list[int], tmp_path, gz=()) -> list:
    """``data`` cut at byte offsets ``cuts`` into files p0, p1, ... (gzipped: the indexes in ``gz``)."""
    bounds = [0, *cuts, len(data)]
    files = []
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        f = tmp_path / f"p{i}.itch{'.gz' if i in gz else ''}"
        f.write_bytes(gzip.compress(data[lo:hi], mtime=0) if i in gz else data[lo:hi])
        files.append(f)
    return files


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("split", ["at messages", "inside messages"])
def test_sources_three_pieces_bad_record_in_the_middle_one_named_with_its_number(itch, tmp_path, workers, split):
    data = bytearray((itch / "day.itch").read_bytes())
    offs = [off for _, off, _ in frames(bytes(data))]
    bad = next(seq for seq, _, msg in frames(bytes(data)) if seq >= 12_345 and msg[:1] == b"D")
    data[offs[bad - 1] + 13:offs[bad - 1] + 21] = (2**62).to_bytes(8, "big")    # a delete of no order
    shift = 0 if split == "at messages" else 7
    cuts = [offs[5_000] + shift, offs[12_000] + shift]     # message 5,001 (12,001) starts the 2nd (3rd) file
    files = _pieces(bytes(data), cuts, tmp_path, gz=(1,))
    want = [r for r in _rows(itch / "day.itch")["bbo"] if r["seq"] < bad]
    replay = Replay(files, workers=workers, tables=("bbo",))
    got = []
    with pytest.raises(obook.FeedError) as e:
        for _, batch in replay.table_batches():
            got += batch.to_pylist()
    assert got == want and len(got) > 1000            # every row before the bad record
    first = 12_001 if shift == 0 else 12_002          # the first message that starts in p2
    assert (e.value.path, e.value.record, e.value.feed_record) == (str(files[2]), bad - first + 1, bad)
    assert f"(message {bad} of {'+'.join(map(str, files))})" in str(e.value)


def test_sources_last_piece_cut_short_offset_is_the_files_own(itch, tmp_path):
    data = (itch / "day.itch").read_bytes()
    offs = [off for _, off, _ in frames(data)]
    cut = offs[9_000]
    end = offs[15_000] + 5                            # message 15,001 cut after 5 bytes
    a, b = _pieces(data[:end], [cut], tmp_path)
    with pytest.raises(obook.TruncatedFeedError) as e:
        _rows([a, b])
    assert (e.value.path, e.value.record, e.value.offset) == (str(b), 6_001, offs[15_000] - cut)
    length = struct.unpack_from(">H", data, offs[15_000])[0]
    assert str(e.value) == (f"{b}: message 6001: truncated record at byte offset {offs[15_000] - cut}: its length, "
                            f"{length} bytes, runs past the end of the file (3 of them are there) "
                            f"(message 15001 of {a}+{b})")


def test_sources_gzip_piece_cut_short_in_the_middle_names_that_file(itch, tmp_path):
    data = (itch / "day.itch").read_bytes()
    offs = [off for _, off, _ in frames(data)]
    files = _pieces(data, [offs[4_000], offs[8_000]], tmp_path, gz=(1,))
    whole = files[1].read_bytes()
    files[1].write_bytes(whole[:len(whole) // 2])       # its gzip stream ends early
    with pytest.raises(obook.TruncatedFeedError) as e:
        _rows(files)
    assert e.value.path == str(files[1]) and 4_000 < e.value.feed_record < 8_000
    assert e.value.record == e.value.feed_record - 4_000


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("cut_inside_a_line", [False, True])
def test_sources_text_pieces_shorter_than_the_look_ahead_name_the_file_and_its_line(tmp_path, workers,
                                                                                  cut_inside_a_line):
    # the Shanghai framer holds back thousands of lines to restore their order: a file's
    # lines still count as that file's, and the next file's first line is its line 1
    from obook.gen.sse import generate

    lines = [(line + "\n").encode() for line in generate(3000, seed=4)]
    bad = next(n for n in range(1_500, len(lines)) if b"BidApplSeqNum=" in lines[n - 1]
               and b"ExecType=83" in lines[n - 1] and b"MsgType=191" in lines[n - 1])
    lines[bad - 1] = lines[bad - 1].replace(b"BidApplSeqNum=", b"BidApplSeqNum=99999", 1)
    whole = tmp_path / "whole.log"
    whole.write_bytes(b"".join(lines))
    with pytest.raises(obook.FeedError) as single:
        _rows(whole, workers=workers)
    assert single.value.record == bad
    data = b"".join(lines)
    ends = [sum(map(len, lines[:n])) for n in (300, 1_000)]
    cuts = [e + (9 if cut_inside_a_line else 0) for e in ends]
    files = []
    for i, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(data)])):
        files.append(tmp_path / f"sh.log.{i}")
        files[-1].write_bytes(data[lo:hi])
    with pytest.raises(obook.FeedError) as e:
        _rows(tuple(files), workers=workers, format="sse")
    first = 1_001 if not cut_inside_a_line else 1_002      # the first line that starts in the third file
    assert (e.value.path, e.value.record, e.value.feed_line) == (str(files[2]), bad - first + 1, bad)
    assert e.value.feed_record == single.value.feed_record      # the rows' seq: its place in event order


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("cut_inside_a_record", [False, True])
def test_sources_binary_pieces_shorter_than_the_look_ahead_name_the_file_and_its_record(tmp_path, workers,
                                                                                      cut_inside_a_record):
    # the Shenzhen binary framer holds back thousands of records to keep an order with its
    # fills: a file's records still count as that file's, and the next file's first record
    # is its record 1 (here a second copy of the day: its ApplSeqNums start again)
    from obook.gen.szse import binary_record, generate

    records = [binary_record(r) for r in generate(3000, seed=4)]
    data = b"".join(records)
    cut = sum(map(len, records[:1_000])) + (9 if cut_inside_a_record else 0)
    files = [tmp_path / f"sz.bin.{i}" for i in range(3)]
    for f, part in zip(files, (data[:cut], data[cut:], data)):
        f.write_bytes(part)
    with pytest.raises(obook.FeedError) as e:
        _rows(tuple(files), workers=workers, format="szse-bin")
    assert (e.value.path, e.value.record, e.value.feed_record) == (str(files[2]), 1, len(records) + 1)
    assert "sequence gap" in e.value.reason


def test_pieces_empty_file_in_the_middle_records_go_to_the_next(tmp_path):
    from obook.feeds.pieces import Pieces

    p = Pieces("a+b+c")
    for path, first, offset in (("a", 1, 0), ("b", 11, 500), ("c", 11, 500)):
        p.add(path, first, offset)
    assert [p.piece_of(r) for r in (1, 10, 11, 12)] == [0, 0, 2, 2]
    e = p.locate(obook.FeedError("a+b+c", 11, "bad", unit="line"))
    assert (e.path, e.record, e.feed, e.feed_record, str(e)) == ("c", 1, "a+b+c", 11, "c: line 1: bad (line 11 of a+b+c)")
    assert p.locate(obook.FeedError("a+b+c", None, "bad")).path == "a+b+c"


@pytest.mark.parametrize("order", ["itch first", "csv first"])
def test_sources_list_of_two_formats_is_an_error_naming_the_odd_file(itch, tmp_path, order):
    csv = tmp_path / "day.csv"
    csv.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,a,B,100,990\n")
    files = [itch / "day.itch", csv] if order == "itch first" else [csv, itch / "day.itch"]
    with pytest.raises(obook.ObookError, match=f"^{files[1]}: format .*, but {files[0]} is format "):
        _rows(files)


@pytest.mark.parametrize("where", [0, 1, 2])
def test_sources_list_with_an_empty_file_format_from_the_others_same_rows(tmp_path, where):
    from obook.gen.szse import text_line

    lines = [text_line(dict(MsgType=192, SecurityID="000001", ChannelNo=1, ApplSeqNum=n, Price=100_000 + n,
                            OrderQty=100, Side=49, OrdType=50, TransactTime=20240105_093000_000 + n))
             for n in range(1, 41)]
    whole, a, b, empty = tmp_path / "whole.log", tmp_path / "a.log", tmp_path / "b.log", tmp_path / "empty.log"
    whole.write_text("\n".join(lines) + "\n")
    a.write_text("\n".join(lines[:21]) + "\n")
    b.write_text("\n".join(lines[21:]) + "\n")
    empty.write_bytes(b"")
    files = [a, b]
    files.insert(where, empty)
    assert _rows(files) == _rows(whole)


def test_sources_csv_split_without_a_second_header_same_as_whole(tmp_path):
    lines = ["Time,Ticker,Order,T,Shares,Price"] + [f"{t},AAA,o{t},B,100,{990 + t % 5}" for t in range(1, 41)]
    whole, a, b = tmp_path / "whole.csv", tmp_path / "a.csv", tmp_path / "b.csv"
    whole.write_text("\n".join(lines) + "\n")
    a.write_text("\n".join(lines[:21]) + "\n")
    b.write_text("\n".join(lines[21:]) + "\n")         # the rest of the day, no header of its own
    assert _rows([a, b]) == _rows(whole)


def _feed_in_thread(write, data: bytes):
    t = threading.Thread(target=write, args=(data,))
    t.start()
    return t


def test_sources_stream_from_pipe_same_rows(itch):
    import os

    data = (itch / "day.itch").read_bytes()
    r, w = os.pipe()

    def write(payload):
        with open(w, "wb") as f:
            for i in range(0, len(payload), 7_777):       # odd-sized writes
                f.write(payload[i:i + 7_777])

    t = _feed_in_thread(write, data)
    with open(r, "rb", buffering=0) as stream:
        got = _rows(stream, format="itch")
    t.join()
    # a stream is read once: no pre-pass for the trade breaks (every ``broken`` is False)
    assert got == _rows(itch / "day.itch", breaks=False)


@pytest.mark.parametrize("breaks, warned", [(True, True), (False, False)])
def test_sources_stream_trades_of_a_format_with_breaks_warn_broken_is_false(itch, caplog, breaks, warned):
    with open(itch / "day.itch", "rb") as stream, caplog.at_level("WARNING", logger="obook"):
        _rows(stream, format="itch", breaks=breaks)
    said = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert len(said) == (1 if warned else 0)
    if warned:
        assert "a stream is read once" in said[0] and "give the feed as a file" in said[0]


def test_sources_stream_from_socket_same_rows(itch):
    data = (itch / "day.itch").read_bytes()
    left, right = socket.socketpair()

    def write(payload):
        with left:
            left.sendall(payload)

    t = _feed_in_thread(write, data)
    with right:
        got = _rows(right, workers=2, format="itch")
    t.join()
    # a stream is read once: no pre-pass for the trade breaks (every ``broken`` is False)
    assert got == _rows(itch / "day.itch", breaks=False)


@pytest.mark.parametrize("kind", ["pipe", "socket file"])
def test_sources_non_blocking_stream_waited_for_same_rows(itch, kind):
    # a read with nothing yet (None, BlockingIOError) is no end of the feed
    import os
    import time

    data = (itch / "day.itch").read_bytes()
    if kind == "pipe":
        r, w = os.pipe()
        os.set_blocking(r, False)
        stream, writer = open(r, "rb", buffering=0), open(w, "wb")
    else:
        left, right = socket.socketpair()
        right.setblocking(False)
        stream, writer = right.makefile("rb"), left.makefile("wb")

    def write(payload):
        with writer:
            for i in range(0, len(payload), 20_000):
                writer.write(payload[i:i + 20_000])
                writer.flush()
                time.sleep(0.05)                            # the reader meets an empty stream
        if kind == "socket file":
            left.close()

    t = _feed_in_thread(write, data)
    with stream:
        got = _rows(stream, format="itch")
    t.join()
    assert got == _rows(itch / "day.itch", breaks=False)


@pytest.mark.parametrize("buffering", [0, -1], ids=["raw", "buffered"])
@pytest.mark.parametrize("n", [-1, 5_000], ids=["all", "5000"])
def test_digesting_stream_read_of_a_slow_non_blocking_pipe_waits_all_bytes_digested(buffering, n):
    # stdin as a non-blocking pipe: read() meets None or BlockingIOError before each write
    import hashlib
    import os
    import time

    from obook.feeds.sources import DigestingStream

    data = bytes(range(256)) * 200
    r, w = os.pipe()
    os.set_blocking(r, False)

    def write(payload):
        with open(w, "wb") as f:
            for i in range(0, len(payload), 10_000):
                f.write(payload[i:i + 10_000])
                f.flush()
                time.sleep(0.05)

    with open(r, "rb", buffering=buffering) as raw:
        t = _feed_in_thread(write, data)
        stream = DigestingStream(raw, "<stdin>")
        got = b""
        while chunk := stream.read(n):
            got += chunk
    t.join()
    assert got == data
    assert stream.digest() == (len(data), hashlib.sha256(data).hexdigest())


def test_sources_object_with_read_only_same_rows(itch):
    data = io.BytesIO(gzip.compress((itch / "day.itch").read_bytes(), mtime=0))

    class ReadOnly:
        def read(self, n=-1):
            return data.read(n)

    assert _rows(ReadOnly()) == _rows(itch / "day.itch", breaks=False)


def test_sources_stream_whose_first_read_fails_says_why_not_empty(itch):
    cut = gzip.compress((itch / "day.itch").read_bytes(), mtime=0)[:20]
    with pytest.raises(obook.ObookError, match="<BytesIO>: reading it failed before its first byte: gzip stream"):
        obook.bbo(io.BytesIO(cut), workers=1)


def test_sources_socket_without_format_is_an_error():
    left, right = socket.socketpair()
    with left, right, pytest.raises(obook.ObookError, match="a socket or live stream needs format="):
        Replay(right)


def test_sources_empty_stream_without_format_is_an_error():
    with pytest.raises(obook.ObookError, match=r"<BytesIO>: the feed is empty \(its format cannot be told\)"):
        obook.bbo(io.BytesIO(b""), workers=1)


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    """A generated day of each format (as ``obook gen`` writes them), by format name."""
    root = tmp_path_factory.mktemp("stream_days")
    out = {fmt: generated_day(root / name, kind, 3000, *extra) for fmt, (kind, name, extra) in {
        "databento": ("databento", "day.dbn", ()), "sse": ("sse", "sh.log", ()), "szse": ("szse", "sz.log", ()),
        "szse-bin": ("szse", "sz.bin", ("--binary",)), "pitch": ("pitch", "day.pitch", ()),
        "itch": ("itch", "day.itch", ()), "csv": ("csv", "day.csv", ())}.items()}
    out["sse.gz"] = root / "sh.log.gz"
    out["sse.gz"].write_bytes(gzip.compress(out["sse"].read_bytes(), mtime=0))
    out["databento.zst"] = root / "day.dbn.zst"
    out["databento.zst"].write_bytes(zstandard.ZstdCompressor().compress(out["databento"].read_bytes()))
    return out


@pytest.mark.parametrize("fmt", ["databento", "sse", "szse", "szse-bin", "pitch", "itch", "csv"])
@pytest.mark.parametrize("kind", ["file", "BytesIO"])
def test_sources_stream_format_told_from_its_bytes_same_rows_as_the_path(days, fmt, kind):
    path = days[fmt]
    stream = open(path, "rb") if kind == "file" else io.BytesIO(path.read_bytes())
    with stream:
        got = obook.bbo(stream, workers=1).read_all()
    want = obook.bbo(path, workers=1).read_all()
    assert got.num_rows > 0 and got.equals(want)


@pytest.mark.parametrize("fmt, name", [("sse", "sse.gz"), ("databento", "databento.zst")])
@pytest.mark.parametrize("given", [True, False])
def test_sources_compressed_stream_decompressed_same_rows_as_the_path(days, fmt, name, given):
    with open(days[name], "rb") as stream:
        got = obook.bbo(stream, workers=1, format=fmt if given else None).read_all()
    want = obook.bbo(days[fmt], workers=1).read_all()
    assert got.num_rows > 0 and got.equals(want)


def _pzstd(data: bytes) -> bytes:
    """``data`` zstd-compressed as pzstd writes it: before each frame a skippable frame (of
    the frame's size); here also a skippable frame of another magic between the frames and
    an empty one at the end."""
    half = len(data) // 2
    frames = [zstandard.ZstdCompressor().compress(part) for part in (data[:half], data[half:])]

    def skippable(payload: bytes, low: int = 0) -> bytes:
        return struct.pack("<II", 0x184D2A50 | low, len(payload)) + payload

    return (skippable(struct.pack("<I", len(frames[0]))) + frames[0] + skippable(bytes(300_000), 0xF)
            + skippable(struct.pack("<I", len(frames[1]))) + frames[1] + skippable(b"", 7))


@pytest.mark.parametrize("fmt", ["itch", "databento"])
@pytest.mark.parametrize("kind", ["path", "file", "BytesIO"])
def test_sources_pzstd_skippable_frames_same_rows_as_the_plain_file(days, tmp_path, fmt, kind):
    blob = _pzstd(days[fmt].read_bytes())
    path = tmp_path / "day.pzstd"                   # told by its magic, not its name
    path.write_bytes(blob)
    source = path if kind == "path" else open(path, "rb") if kind == "file" else io.BytesIO(blob)
    got = obook.bbo(source, workers=1).read_all()
    want = obook.bbo(days[fmt], workers=1).read_all()
    assert got.num_rows > 0 and got.equals(want)


def test_sources_pzstd_file_on_stdin_same_rows_as_the_plain_file(days, tmp_path):
    path = tmp_path / "day.dbn.zst"
    path.write_bytes(_pzstd(days["databento"].read_bytes()))
    with open(path, "rb") as stdin:
        got = obook_cli("bbo", "-", stdin=stdin)
    want = obook_cli("bbo", days["databento"])
    assert got.returncode == want.returncode == 0, got.stderr.decode()[-2000:]
    assert got.stdout == want.stdout and want.stdout.count(b"\n") > 100


@pytest.mark.parametrize("table, fmt", [("mbp1", "databento"), ("mbp10", "databento"), ("audit", "sse")])
@pytest.mark.parametrize("given", [True, False])
def test_sources_stream_of_a_table_reading_the_feed_twice_same_rows_as_the_path(days, table, fmt, given):
    read = getattr(obook, table)
    with open(days[fmt], "rb") as stream:
        got = read(stream, workers=1, format=fmt if given else None).read_all()
    want = read(days[fmt], workers=1).read_all()
    assert got.num_rows > 0 and got.equals(want)


@pytest.mark.parametrize("given", ["itch-pcap", None])
def test_sources_packet_capture_stream_error_asks_for_the_file(days, tmp_path, given):
    from obook.gen.pcap import write_pcap

    capture = tmp_path / "day.pcap"
    write_pcap(days["itch"], capture)
    with open(capture, "rb") as stream, pytest.raises(
            obook.ObookError, match="day.pcap: a packet capture is read from a file, not a stream"):
        obook.bbo(stream, workers=1, format=given).read_all()


def test_sources_zstd_detected_by_magic_not_name(itch, tmp_path):
    odd = tmp_path / "day.bin"                      # zstd bytes under a plain name
    odd.write_bytes((itch / "day.itch.zst").read_bytes())
    assert _rows(odd)["bbo"] == _rows(itch / "day.itch")["bbo"]


def test_sources_merge_hook_orders_several_files_by_feed_numbers(tmp_path):
    import chunked_feed

    gen = tmp_path / "gen.csv"
    write_csv(gen, 2000, 4, seed=9)
    header, *lines = gen.read_bytes().splitlines(keepends=True)
    # unique times: the merge key is the feed's own order
    lines = [b"%d,%s" % (34_200_000 + i, ln.split(b",", 1)[1]) for i, ln in enumerate(lines)]
    whole = tmp_path / "orders.csv"
    whole.write_bytes(header + b"".join(lines))
    # two files: the lines of the even and of the odd tickers (each in time order)
    parts = [[], []]
    for ln in lines:
        parts[ln.split(b",")[1][-1] % 2].append(ln)
    files = []
    for i, part in enumerate(parts):
        files.append(tmp_path / f"part{i}.csv")
        files[-1].write_bytes(header + b"".join(part))
    times = [int(ln.split(b",", 1)[0]) for ln in lines]
    assert times == sorted(times) and len(set(times)) == len(times)
    for workers in (1, 2):
        got = _rows(files, workers=workers, format=chunked_feed.MERGED)
        assert got == _rows(whole, format="csv")


@pytest.mark.parametrize("compress", ["gzip", "zstd"])
def test_sources_cut_compressed_file_rows_then_truncated_error(itch, tmp_path, compress):
    data = (itch / "day.itch").read_bytes()
    packed = (gzip.compress(data, mtime=0) if compress == "gzip"
              else zstandard.ZstdCompressor().compress(data))
    cut = tmp_path / f"cut.itch.{compress}"
    cut.write_bytes(packed[:len(packed) // 2])
    rows, error = [], None
    try:
        for batch in Replay(cut, workers=1).batches():
            rows += batch.to_pylist()
    except obook.FeedError as e:
        error = e
    assert isinstance(error, obook.TruncatedFeedError), error
    whole = _rows(itch / "day.itch")["bbo"]
    assert 0 < len(rows) < len(whole)
    assert rows == whole[:len(rows)]                     # every row before the cut
    assert all(r["seq"] < error.record for r in rows)


def test_sources_zstd_magic_alone_is_a_truncated_feed(tmp_path):
    path = tmp_path / "r.itch"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    with pytest.raises(obook.TruncatedFeedError) as e:
        _rows(path)
    assert e.value.record == 1


def test_replay_same_file_twice_in_one_feed_refused_before_reading(tmp_path):
    import obook
    from obook.gen.itch import write_itch

    day = tmp_path / "day.itch"
    write_itch(day, 500, 2, seed=1)
    link = tmp_path / "again.itch"
    link.symlink_to(day)
    with pytest.raises(obook.ObookError, match=f"{link}: the same file as {day}: the files of one feed"):
        obook.bbo((day, link), workers=1)


@pytest.mark.parametrize("front", ["python", "polars", "duckdb"])
def test_feed_path_symlink_loop_error_says_so_not_no_such_file(tmp_path, front):
    import duckdb

    import obook.polars

    loop = tmp_path / "loop.itch"
    loop.symlink_to(loop)
    open_feed = {"python": lambda: obook.bbo(str(loop), workers=1),
                 "polars": lambda: obook.polars.scan_bbo(str(loop), workers=1),
                 "duckdb": lambda: obook.connect().sql(f"SELECT * FROM obook_bbo('{loop}')").fetchall()}[front]
    with pytest.raises((obook.ObookError, duckdb.Error)) as e:
        open_feed()
    assert f"{loop}: too many levels of symbolic links" in str(e.value)
    assert "no such" not in str(e.value)


def test_sources_binary_feed_split_inside_a_record_format_detected_same_rows(tmp_path):
    from obook.gen.szse import binary_record, generate

    whole = tmp_path / "whole.bin"
    whole.write_bytes(b"".join(binary_record(r) for r in generate(2000, securities=3, seed=5)
                               if r["MsgType"] in (191, 192)))
    data = whole.read_bytes()
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(data[:len(data) // 2 + 7])     # the rest of a record starts the second file
    b.write_bytes(data[len(data) // 2 + 7:])
    assert _rows((a, b)) == _rows(whole)


def test_source_name_lines_in_one_capture_name_it_once(tmp_path):
    """Two lines of one capture are one feed file: errors name it once, not ``a.pcap+a.pcap``."""
    from obook.feeds.sources import source_name

    one, other = tmp_path / "both.pcap", tmp_path / "b.pcap"
    both = obook.lines(a=f"{one}:233.54.12.111:26477", b=f"{one}:233.54.12.112:26477")
    assert source_name(both) == str(one)
    two = obook.lines(a=f"{one}:233.54.12.111:26477", b=f"{other}:233.54.12.112:26477")
    assert source_name(two) == f"{one}+{other}"
