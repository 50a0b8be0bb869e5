"""Capture lines arbitrated in rounds (the replay starts before the captures are read)
give the same stream, record columns, gaps and line stats as the whole-capture arbitration."""

import numpy as np
import pytest

import obook
from obook.feeds.mold import rounds as R
from obook.feeds.mold.stream import ArbitratedStream, arbitrate
from obook.gen.itch import write_itch
from obook.gen.pcap import LINE_A, LINE_B, write_pcap

A = f"{LINE_A[0]}:{LINE_A[1]}"
B = f"{LINE_B[0]}:{LINE_B[1]}"


@pytest.fixture(autouse=True)
def rounds_on(monkeypatch):
    monkeypatch.setattr(R, "USE_ROUNDS", True)


@pytest.fixture(scope="module")
def itch(tmp_path_factory):
    path = tmp_path_factory.mktemp("rounds") / "day.itch"
    write_itch(path, 4000, 6, seed=11)
    return path


def _read(stream):
    out = bytearray()
    buf = bytearray(7000)
    while True:
        n = stream.readinto(memoryview(buf))
        if not n:
            return bytes(out)
        out += buf[:n]


def _both(lines):
    whole = arbitrate(lines)
    rounds = R.Rounds(lines)
    streamed = ArbitratedStream(lines, rounds)
    data = _read(streamed)
    return whole, rounds, streamed, data


@pytest.mark.parametrize("both_gaps,seed", [(0, 1), (3, 2), (0, 3)])
def test_rounds_small_rounds_same_stream_and_arbitration_as_whole(itch, tmp_path, monkeypatch, both_gaps, seed):
    monkeypatch.setattr(R, "FIRST_ROUND", 3)
    monkeypatch.setattr(R, "LAST_ROUND", 40)
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    write_pcap(itch, a, b, seed=seed, drop=0.1, dup=0.05, reorder=0.05, both_gaps=both_gaps)
    lines = obook.lines(a=f"{a}:{A}", b=f"{b}:{B}")
    whole, rounds, streamed, data = _both(lines)
    assert rounds.streaming and rounds.frontier > 100    # rounds to the end, a prefix published
    assert data == _read(ArbitratedStream(lines, whole))
    final = streamed.arb
    assert (final.stats == whole.stats).all() and final.hi == whole.hi and final.end_seq == whole.end_seq
    assert final.gaps() == whole.gaps() and final.session == whole.session
    seq = np.arange(1, whole.hi + 2)
    got, want = streamed.record_columns(seq), ArbitratedStream(lines, whole).record_columns(seq)
    assert all(g.equals(w) for g, w in zip(got, want))


def test_rounds_record_columns_before_the_end_match_whole(itch, tmp_path, monkeypatch):
    monkeypatch.setattr(R, "FIRST_ROUND", 3)
    monkeypatch.setattr(R, "LAST_ROUND", 6)
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    write_pcap(itch, a, b, seed=4, drop=0.1, dup=0.05, reorder=0.05)
    lines = obook.lines(a=f"{a}:{A}", b=f"{b}:{B}")
    whole = arbitrate(lines)
    rounds = R.Rounds(lines)
    streamed = ArbitratedStream(lines, rounds)
    buf = bytearray(500)
    assert streamed.readinto(memoryview(buf)) > 0
    assert streamed.arb is None or streamed.arb.hi == whole.hi
    seq = np.arange(1, streamed._next)
    got, want = streamed.record_columns(seq), ArbitratedStream(lines, whole).record_columns(seq)
    assert all(g.equals(w) for g, w in zip(got, want))
    streamed.close()


def test_rounds_replay_tables_equal_whole_workers_2(itch, tmp_path, monkeypatch):
    monkeypatch.setattr(R, "FIRST_ROUND", 5)
    monkeypatch.setattr(R, "LAST_ROUND", 64)
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    write_pcap(itch, a, b, seed=6, drop=0.05, dup=0.02, reorder=0.02)
    lines = obook.lines(a=f"{a}:{A}", b=f"{b}:{B}")
    got = obook.trades(lines, workers=2).read_all()
    monkeypatch.setattr(R, "streamable", lambda lines: False)
    want = obook.trades(obook.lines(a=f"{a}:{A}", b=f"{b}:{B}"), workers=2).read_all()
    assert got.num_rows > 0 and got.equals(want)


def test_rounds_streamable_only_own_capture_per_named_line(tmp_path, monkeypatch):
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    assert R.streamable(obook.lines(a=f"{a}:{A}", b=f"{b}:{B}"))
    monkeypatch.setattr(R, "USE_ROUNDS", False)
    assert not R.streamable(obook.lines(a=f"{a}:{A}", b=f"{b}:{B}"))
    monkeypatch.setattr(R, "USE_ROUNDS", True)
    assert not R.streamable(obook.lines(a=f"{a}:{A}", b=f"{a}:{B}"))
    assert not R.streamable(obook.lines(a=str(a)))


@pytest.mark.parametrize("compiled", [True, False])
def test_record_fields_kernel_lost_and_outside_numbers_missing(compiled):
    from obook._kernels import mold as M

    fn = M.record_fields if compiled else M.record_fields.py_func
    who = np.array([-1, 1, -1, 0, 1], np.int64)          # number 2 lost
    p_line, p_ts = np.array([0, 1], np.int64), np.array([100, 200], np.int64)
    seq = np.array([0, 1, 2, 3, 4, 5, -3], np.int64)
    line, ts, missing = np.empty(7, np.int8), np.empty(7, np.int64), np.empty(7, np.bool_)
    fn(seq, who, p_line, p_ts, line, ts, missing)
    want = [None, (1, 200), None, (0, 100), (1, 200), None, None]      # by hand
    assert [None if m else (int(li), int(t)) for li, t, m in zip(line, ts, missing)] == want


@pytest.mark.parametrize("compiled", [True, False])
def test_stream_write_kernel_two_files_runs_and_lost_frames(compiled):
    from obook._kernels import mold as M

    fn = M.stream_write if compiled else M.stream_write.py_func
    a = np.frombuffer(b"\x00\x01A\x00\x02BB\x00\x01C", np.uint8)       # frames A, BB, C (one packet)
    b = np.frombuffer(b"xx\x00\x01D", np.uint8)                         # frame D at offset 2
    who = np.array([-1, 0, 0, -1, 1, 0], np.int64)                    # 1, 2 from packet 0; 3 lost; 4 packet 1
    p_file = np.array([0, 1], np.int64)
    src_off = np.array([0, 0, 3, 0, 2, 7], np.int64)
    src_len = np.array([3, 3, 4, 3, 3, 3], np.int32)
    out = np.zeros(16, np.uint8)
    n, nxt = fn((a, b), 1, 5, who, p_file, src_off, src_len, out)
    assert bytes(out[:n]) == b"\x00\x01A\x00\x02BB" + b"\x00\x01\x00" + b"\x00\x01D" and nxt == 5
    n, nxt = fn((a, b), 5, 6, who, p_file, src_off, src_len, out)       # packet 0 again, alone
    assert bytes(out[:n]) == b"\x00\x01C" and nxt == 6
    n, nxt = fn((a, b), 1, 5, who, p_file, src_off, src_len, out[:6])   # whole records only
    assert bytes(out[:n]) == b"\x00\x01A" and nxt == 2
    n, nxt = fn((a, b), 1, 5, who, p_file, src_off, src_len, out[:2])   # none fits
    assert n == 0 and nxt == 1


def _capture(path, rows, dst):
    import struct

    from obook.gen.pcap import SESSION, _frame, _Writer

    w = _Writer(path, "pcap", False)
    for ts, seq, msgs in rows:
        payload = struct.pack(">10sQH", SESSION, seq, len(msgs)) + b"".join(
            struct.pack(">H", len(m)) + m for m in msgs)
        w.write(ts * 1000, _frame(payload, dst, False))      # pcap: microseconds
    w.close()


@pytest.mark.parametrize("back_ts,raises", [(50, False), (5, True)])
def test_rounds_capture_time_going_back_whole_decides_or_error(tmp_path, monkeypatch, back_ts, raises):
    """Line A's time goes back (a late copy of message 1): if that copy would have won a
    number already replayed, the replay is an error, else the whole arbitration decides."""
    monkeypatch.setattr(R, "FIRST_ROUND", 2)
    monkeypatch.setattr(R, "LAST_ROUND", 2)
    msgs = [bytes([ord("S"), 0, 0]) + bytes(8) for _ in range(8)]      # 11-byte messages
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    _capture(a, [(10, 2, msgs[1:2]), (60, 3, msgs[2:3]), (70, 4, msgs[3:4]), (back_ts, 1, msgs[:1]),
                 (100, 5, msgs[4:5])], LINE_A)
    _capture(b, [(20, 1, msgs[:1]), (40, 2, msgs[1:2]), (65, 3, msgs[2:3]), (75, 4, msgs[3:4]),
                 (105, 5, msgs[4:5])], LINE_B)
    lines = obook.lines(a=f"{a}:{A}", b=f"{b}:{B}")
    rounds = R.Rounds(lines)
    streamed = ArbitratedStream(lines, rounds)
    if raises:
        with pytest.raises(obook.ObookError, match="capture times go back"):
            _read(streamed)
        return
    data = _read(streamed)
    assert not rounds.streaming
    whole = arbitrate(lines)
    assert data == _read(ArbitratedStream(lines, whole))
    assert (streamed.arb.stats == whole.stats).all()


def test_rounds_early_end_of_session_later_messages_dropped_like_whole(tmp_path, monkeypatch):
    """An end of session at number 3 before a packet of numbers 3..5: both arbitrations
    stop the stream at 2 (the later packet's offsets are written past the end safely)."""
    import struct

    from obook.gen.pcap import SESSION, _frame, _Writer

    monkeypatch.setattr(R, "FIRST_ROUND", 2)
    msgs = [bytes([ord("S"), 0, 0]) + bytes(8) for _ in range(5)]
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    _capture(a, [(10, 1, msgs[:2]), (30, 3, msgs[2:5])], LINE_A)
    w = _Writer(b, "pcap", False)
    w.write(20_000, _frame(struct.pack(">10sQH", SESSION, 3, 0xFFFF), LINE_B, False))
    w.close()
    lines = obook.lines(a=f"{a}:{A}", b=f"{b}:{B}")
    whole, rounds, streamed, data = _both(lines)
    assert whole.hi == 3 and streamed.arb.hi == 3
    assert data == _read(ArbitratedStream(lines, whole)) == b"".join(b"\x00\x0b" + m for m in msgs[:2])
