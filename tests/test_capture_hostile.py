"""Hostile packet captures: an interface time unit no clock has, a capture without a UDP/IPv4
datagram, a line whose address and port match no packet: a clear error, not a
traceback, not 0 rows and exit 0."""

from __future__ import annotations

import struct

import pytest

import obook
from obook.errors import ObookError
from obook.gen.pcap import LINE_A, SESSION, _frame, _Writer

from hostile_support import cli_error
from itch_builder import ItchBuilder

A = f"{LINE_A[0]}:{LINE_A[1]}"


def _messages():
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 10, "B", 100, 1_000_000)
    b.add(1, 11, "S", 100, 1_001_000)
    data, out, pos = b.bytes(), [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 2], "big")
        out.append(data[pos + 2:pos + 2 + n])
        pos += 2 + n
    return out


def _packet(seq, msgs):
    return struct.pack(">10sQH", SESSION, seq, len(msgs)) + b"".join(struct.pack(">H", len(m)) + m for m in msgs)


def _block(btype, body):
    body += b"\0" * ((-len(body)) % 4)
    return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def _pcapng(path, tsresol: int):
    shb = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    idb = _block(1, struct.pack("<HHI", 1, 0, 65535) + struct.pack("<HH", 9, 1) + bytes([tsresol, 0, 0, 0])
                 + struct.pack("<HH", 0, 0))
    frame = _frame(_packet(1, _messages()), LINE_A, False)
    t = 1_796_029_200_000_001
    epb = _block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(frame), len(frame)) + frame)
    path.write_bytes(shb + idb + epb)
    return path


@pytest.mark.parametrize("tsresol", [100, 19, 0x80 | 34, 0xFF])
def test_pcapng_tsresol_no_clock_has_clear_error_names_block(tmp_path, tsresol):
    """if_tsresol 100 (10^-100 s) divided by zero; 2^-127 shifted past 64 bits."""
    path = _pcapng(tmp_path / "x.pcapng", tsresol)
    with pytest.raises(ObookError, match="if_tsresol") as info:
        obook.bbo(path, workers=1).read_all()
    assert "block 2" in str(info.value)
    if tsresol == 100:      # the command line, read whole and arbitrated as read
        assert "if_tsresol" in cli_error("bbo", path)
        assert "if_tsresol" in cli_error("bbo", "--line-a", f"{path}:{A}")


@pytest.mark.parametrize("tsresol", [6, 9, 18, 0x80 | 30])
def test_pcapng_tsresol_of_a_clock_replays(tmp_path, tsresol):
    path = _pcapng(tmp_path / "x.pcapng", tsresol)
    assert obook.bbo(path, workers=1).read_all().num_rows == 2


def _pcap(path, frames):
    w = _Writer(path, "pcap", False)
    for i, frame in enumerate(frames):
        w.write(1_796_029_200_000_000_000 + i * 1000, frame)
    w.close()
    return path


def _tcp_frame(payload: bytes) -> bytes:
    frame = bytearray(_frame(payload, LINE_A, False))
    frame[14 + 9] = 6                               # IPv4 protocol: TCP
    return bytes(frame)


@pytest.mark.parametrize("frames", ["none", "tcp", "short_udp"])
def test_capture_without_udp_datagrams_clear_error_not_a_traceback(tmp_path, frames):
    payload = _packet(1, _messages())
    made = {"none": [], "tcp": [_tcp_frame(payload)] * 3, "short_udp": [_frame(b"x" * 10, LINE_A, False)] * 3}
    path = _pcap(tmp_path / "x.pcap", made[frames])
    with pytest.raises(ObookError, match="no UDP/IPv4 datagram that could carry MoldUDP64"):
        obook.bbo(path, workers=1).read_all()
    line = cli_error("bbo", path)
    assert "no UDP/IPv4 datagram" in line and "max_workers" not in line


@pytest.mark.parametrize("two_lines", [False, True])
def test_capture_line_matching_no_packet_clear_error_not_zero_rows(tmp_path, two_lines):
    path = _pcap(tmp_path / "a.pcap", [_frame(_packet(1, _messages()), LINE_A, False)])
    wrong = "233.54.12.99:26477"
    if two_lines:         # both lines in one capture: read whole, then arbitrated
        source = obook.lines(a=f"{path}:{A}", b=f"{path}:{wrong}")
        args = ["--line-a", f"{path}:{A}", "--line-b", f"{path}:{wrong}"]
    else:                 # one line in its own capture: arbitrated as it is read
        source = obook.lines(a=f"{path}:{wrong}")
        args = ["--line-a", f"{path}:{wrong}"]
    with pytest.raises(ObookError, match=f"no UDP datagram to {wrong}"):
        obook.bbo(source, workers=1).read_all()
    assert f"no UDP datagram to {wrong}" in cli_error("bbo", *args)


def test_capture_line_matching_packets_still_replays(tmp_path):
    path = _pcap(tmp_path / "a.pcap", [_frame(_packet(1, _messages()), LINE_A, False)])
    assert obook.bbo(obook.lines(a=f"{path}:{A}"), workers=1).read_all().num_rows == 2
    assert obook.bbo(path, workers=1).read_all().num_rows == 2


def test_capture_packet_with_an_empty_message_dropped_other_line_delivers(tmp_path):
    """Line A's copy of the second packet has an empty message block (no ITCH message is
    empty): the packet is bad, counted and dropped, and line B's copy delivers it."""
    from obook.gen.pcap import LINE_B

    msgs = _messages()
    good = [_packet(1, msgs[:1]), _packet(2, msgs[1:])]
    bad = struct.pack(">10sQH", SESSION, 2, 1) + struct.pack(">H", 0)
    frames = [_frame(good[0], LINE_A, False), _frame(bad, LINE_A, False), _frame(good[0], LINE_B, False),
              _frame(good[1], LINE_B, False)]
    path = _pcap(tmp_path / "x.pcap", frames)
    clean = _pcap(tmp_path / "clean.pcap", [_frame(p, LINE_A, False) for p in good])
    got = obook.bbo(path, workers=1).read_all()
    assert got.drop_columns(["line", "ts_recv"]).equals(obook.bbo(clean, workers=1).read_all()
                                                        .drop_columns(["line", "ts_recv"]))
    stats = {r["line"]: r for r in obook.line_stats(path).read_all().to_pylist()}
    assert stats["A"]["bad_packets"] == 1 and stats["B"]["bad_packets"] == 0


@pytest.mark.parametrize("compress", ["gzip", "zstd"])
def test_capture_compressed_clear_error_says_decompress_it_first(tmp_path, compress):
    """A capture is mapped, so read plain only: a compressed one is told apart from a file
    that is no capture at all, and named with what to do."""
    import gzip

    import zstandard

    plain = _pcap(tmp_path / "a.pcap", [_frame(_packet(1, _messages()), LINE_A, False)]).read_bytes()
    path = tmp_path / ("a.pcap.gz" if compress == "gzip" else "a.pcap.zst")
    path.write_bytes(gzip.compress(plain) if compress == "gzip" else zstandard.ZstdCompressor().compress(plain))
    want = f"{compress}-compressed packet capture: decompress it first"
    with pytest.raises(ObookError, match=want):
        obook.bbo(path, workers=1).read_all()
    with pytest.raises(ObookError, match=want):
        obook.bbo(obook.lines(a=f"{path}:{A}"), workers=1).read_all()
    assert want in cli_error("bbo", path)
    other = tmp_path / ("b.itch.gz" if compress == "gzip" else "b.itch.zst")     # not a capture inside
    other.write_bytes(gzip.compress(b"\x00" * 64) if compress == "gzip" else zstandard.ZstdCompressor().compress(b"\x00" * 64))
    said = cli_error("bbo", other, "--format", "itch-pcap")
    assert f"not a packet capture (no pcap or pcapng magic in its {compress} content)" in said and "decompress" not in said


@pytest.mark.parametrize("big", [False, True])
def test_capture_link_type_with_fcs_bits_read_as_ethernet(tmp_path, big):
    """A pcap header's link type field holding Ethernet (1) in its low 16 bits and the frame
    check sequence flag and length (4 bytes: 2 words) in its high bits: the frames, each ending
    with its FCS, are Ethernet, replayed as without the bits."""
    frames = [_frame(_packet(1, _messages()), LINE_A, False)]
    clean = _pcap(tmp_path / "clean.pcap", frames)
    path = tmp_path / "fcs.pcap"
    w = _Writer(path, "pcap", big)
    w.write(1_796_029_200_000_001_000, frames[0] + b"\xde\xad\xbe\xef")
    w.close()
    data = bytearray(path.read_bytes())
    struct.pack_into(">I" if big else "<I", data, 20, 1 | 0x04000000 | (2 << 28))
    path.write_bytes(bytes(data))
    want = obook.bbo(clean, workers=1).read_all().drop_columns(["ts_recv"])
    assert obook.bbo(path, workers=1).read_all().drop_columns(["ts_recv"]).equals(want)
    assert want.num_rows == 2


@pytest.mark.parametrize("first", ["arp", "other destination", "bad packet", "heartbeat of another line"])
def test_capture_session_date_from_first_mold_packet_not_an_earlier_frame(tmp_path, first):
    """A frame of the day before (New York) heads the capture: an ARP frame, a datagram to
    another destination, a datagram too short for MoldUDP64, a packet of another line. The
    rows' timestamps keep the date of the line's first MoldUDP64 packet."""
    from obook.gen.pcap import LINE_B

    day = 1_796_029_200_000_000_000 + 50_400_000_000_000          # 2026-11-30, 18:00 New York
    before = day - 20 * 3600 * 1_000_000_000                        # 2026-11-29
    head = {"arp": b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + bytes(28),
            "other destination": _frame(b"z" * 30, ("10.1.1.1", 9999), False),
            "bad packet": _frame(b"z" * 30, LINE_A, False),
            "heartbeat of another line": _frame(struct.pack(">10sQH", b"OTHER00001", 7, 0), LINE_B, False)}[first]
    clean, path = tmp_path / "clean.pcap", tmp_path / "x.pcap"
    for p, frames in ((clean, []), (path, [(before, head)])):
        w = _Writer(p, "pcap", False)
        for t, frame in frames + [(day, _frame(_packet(1, _messages()), LINE_A, False))]:
            w.write(t, frame)
        w.close()
    want = obook.bbo(obook.lines(a=f"{clean}:{A}"), workers=1).read_all()
    got = obook.bbo(obook.lines(a=f"{path}:{A}"), workers=1).read_all()
    assert want.num_rows == 2 and got.column("timestamp").equals(want.column("timestamp"))
    assert str(want.column("timestamp")[0].as_py().date()) == "2026-11-30"


@pytest.mark.parametrize("named", [False, True])
def test_capture_session_of_bytes_above_0x7f_replays_not_a_traceback(tmp_path, named):
    """A session whose first byte is 0x80 or more (its high part a negative int64): the
    capture replays, whole or in rounds (a line named by address and port)."""
    msgs = _messages()
    payload = struct.pack(">10sQH", b"\xff" * 10, 1, len(msgs)) + b"".join(struct.pack(">H", len(m)) + m for m in msgs)
    path = _pcap(tmp_path / "ff.pcap", [_frame(payload, LINE_A, False)])
    src = obook.lines(a=f"{path}:{A}") if named else str(path)
    assert obook.bbo(src, workers=1).read_all().num_rows == 2
    assert obook.line_stats(src).read_all().to_pylist()[0]["messages"] == 3
