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
    offsets, chars = np.empty(8, np.int32), np.empty(7, np.uint8)
    ts, valid = np.empty(7, np.int64), np.empty(7, np.bool_)
    assert fn(seq, who, p_line, p_ts, offsets, chars, ts, valid) == 4
    got = [bytes(chars[offsets[i]:offsets[i + 1]]).decode() if v else None for i, v in enumerate(valid)]
    assert got == [None, "B", None, "A", "B", None, None]                        # by hand
    assert [int(t) for t, v in zip(ts, valid) if v] == [200, 100, 200]


@pytest.mark.parametrize("compiled", [True, False])
def test_stream_write_kernel_two_files_runs_inner_start_and_lost_frames(compiled):
    from obook._kernels import mold as M

    fn = M.stream_write if compiled else M.stream_write.py_func
    head = bytes(20)                                                  # a MoldUDP64 header (not read)
    a = np.frombuffer(head + b"\x00\x01A\x00\x02BB\x00\x01C\x00\x01D", np.uint8)   # packet 0: numbers 1..4
    b = np.frombuffer(b"xx" + head + b"\x00\x01X\x00\x01Y", np.uint8)               # packet 1: numbers 3, 4
    who = np.array([-1, 0, 0, 1, 0, -1], np.int64)      # 1, 2 packet 0; 3 packet 1; 4 packet 0; 5 lost
    p_file, p_off, p_seq = np.array([0, 1], np.int64), np.array([0, 2], np.int64), np.array([1, 3], np.int64)
    out = np.zeros(32, np.uint8)
    n, nxt = fn((a, b), 1, 6, who, p_file, p_off, p_seq, out)
    assert bytes(out[:n]) == b"\x00\x01A\x00\x02BB\x00\x01X\x00\x01D\x00\x01\x00" and nxt == 6   # by hand
    n, nxt = fn((a, b), 4, 5, who, p_file, p_off, p_seq, out)       # a run starting at its packet's 4th
    assert bytes(out[:n]) == b"\x00\x01D" and nxt == 5
    n, nxt = fn((a, b), 1, 6, who, p_file, p_off, p_seq, out[:6])   # whole records only
    assert bytes(out[:n]) == b"\x00\x01A" and nxt == 2
    n, nxt = fn((a, b), 1, 6, who, p_file, p_off, p_seq, out[:2])   # none fits
    assert n == 0 and nxt == 1


@pytest.mark.parametrize("compiled", [True, False])
def test_stream_write_kernel_zero_byte_messages_escaped_lost_frame_theirs_alone(compiled):
    """Messages that are the byte 0x00 (first in their packet, in a row, last) are written as
    the frame 00 02 00 00, so the frame 00 01 00 is a lost message's only; any output room
    writes whole records and goes on where it stopped."""
    from obook._kernels import mold as M

    fn = M.stream_write if compiled else M.stream_write.py_func
    msgs = [b"\x00", b"\x00", b"A", b"\x00", b"BB", b"\x00"]
    a = np.frombuffer(bytes(20) + b"".join(len(m).to_bytes(2, "big") + m for m in msgs), np.uint8)
    who = np.array([-1, 0, 0, 0, 0, 0, 0, -1], np.int64)          # numbers 1..6 packet 0; 7 lost
    p_file, p_off, p_seq = np.array([0], np.int64), np.array([0], np.int64), np.array([1], np.int64)
    want = b"\x00\x02\x00\x00" * 2 + b"\x00\x01A" + b"\x00\x02\x00\x00" + b"\x00\x02BB" + b"\x00\x02\x00\x00" + b"\x00\x01\x00"
    for room in (64, 4, 5, 7):
        got, s = b"", 1
        while s < 8:
            out = np.zeros(room, np.uint8)
            n, s = fn((a,), s, 8, who, p_file, p_off, p_seq, out)
            got += bytes(out[:n])
        assert got == want, room


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


def test_rounds_early_end_of_session_later_messages_replayed_like_whole_and_live(tmp_path, monkeypatch):
    """An end of session at number 3 before a packet of numbers 3..5: both arbitrations
    replay messages 1 to 5, as the live arbiter delivers them (an end of session hides no
    message a line delivered)."""
    import struct

    from obook.feeds.mold.arbiter import Arbiter
    from obook.gen.pcap import SESSION, _frame, _Writer

    monkeypatch.setattr(R, "FIRST_ROUND", 2)
    msgs = [bytes([ord("S"), 0, 0]) + bytes(8) for _ in range(5)]
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    _capture(a, [(10, 1, msgs[:2]), (30, 3, msgs[2:5])], LINE_A)
    end = struct.pack(">10sQH", SESSION, 3, 0xFFFF)
    w = _Writer(b, "pcap", False)
    w.write(20_000, _frame(end, LINE_B, False))
    w.close()
    lines = obook.lines(a=f"{a}:{A}", b=f"{b}:{B}")
    whole, rounds, streamed, data = _both(lines)
    assert whole.hi == 6 and streamed.arb.hi == 6 and whole.gaps() == []
    assert data == _read(ArbitratedStream(lines, whole)) == b"".join(b"\x00\x0b" + m for m in msgs)
    live = Arbiter(SESSION)
    for line, seq, part, ts in [(0, 1, msgs[:2], 10), (0, 3, msgs[2:5], 30)]:
        live.packet(line, struct.pack(">10sQH", SESSION, seq, len(part)) + b"".join(
            struct.pack(">H", len(m)) + m for m in part), ts)
        if ts == 10:
            live.packet(1, end, 20)
    assert [m[3] for m in live.pop()] == msgs


def _pending(rows):
    """A line's pending datagrams (rows of M.F_*) from (ts, seq, count, status) tuples."""
    from obook._kernels import mold as M

    p = np.zeros((M.N_FIELDS, len(rows) + 2), np.int64)
    for i, (ts, seq, count, status) in enumerate(rows):
        p[M.F_TS, i], p[M.F_SEQ, i], p[M.F_COUNT, i], p[M.F_STATUS, i] = ts, seq, count, status
        p[M.F_POFF, i], p[M.F_HI, i], p[M.F_LO, i] = 1000 + i, 7, 1
    return p


@pytest.mark.parametrize("compiled", [True, False])
def test_round_kernels_merge_check_apply_by_hand(compiled):
    from obook._kernels import mold as M

    order_fn, check_fn, apply_fn = (f if compiled else f.py_func for f in (M.round_order, M.round_check, M.round_apply))
    a = _pending([(10, 1, 2, M.P_OK), (30, 5, 1, M.P_OK)])                     # A misses 3, 4
    b = _pending([(10, 1, 2, M.P_OK), (20, 3, 2, M.P_OK), (25, 0, 0, M.P_SHORT), (31, 5, 1, M.P_OK),
                  (40, 6, 0, M.P_OK)])                                          # a bad packet, a heartbeat
    pend, take, order = (a, b), np.array([2, 5], np.int64), np.zeros(8, np.int64)
    m = order_fn(pend, take, order)
    assert [(int(o) >> 40, int(o) & 0xFF) for o in order[:m]] == [(0, 0), (1, 0), (1, 1), (1, 2), (0, 1), (1, 3),
                                                                   (1, 4)]    # by time, A first on equal times
    state = np.zeros(M.N_STATE, np.int64)
    state[[M.R_TOP, M.R_END, M.R_FRONTIER]] = 1, -1, 1
    assert tuple(check_fn(pend, order, m, state)) == (0, 8, 6)                 # 8 data messages, numbers < 6
    state[M.R_DATA], state[M.R_TOP] = 8, 6
    who, have = np.full(8, -1, np.int64), np.zeros(8, np.uint8)
    stats = np.zeros((2, M.N_STATS), np.int64)
    w = [np.zeros(8, np.int64) for _ in range(4)]
    frontier = apply_fn(pend, order, m, state, who, have, np.full(2, -1, np.int64), stats, *w)
    assert frontier == 6 and who[1:7].tolist() == [0, 0, 1, 1, 2, -1] and state[M.R_WON] == 3
    assert w[0][:3].tolist() == [0, 1, 0] and w[1][:3].tolist() == [10, 20, 30] and w[3][:3].tolist() == [1, 3, 5]
    assert have[1:6].tolist() == [3, 3, 2, 2, 3]
    cols = [M.S_PACKETS, M.S_MESSAGES, M.S_DUPLICATES, M.S_GAPS, M.S_GAP_MESSAGES, M.S_HEARTBEATS, M.S_BAD]
    assert stats[0, cols].tolist() == [2, 3, 0, 1, 2, 0, 0] and stats[1, cols].tolist() == [5, 5, 3, 0, 0, 1, 1]
    # a number that may be far (below 1), an end of session before the frontier: no publishing
    assert check_fn((_pending([(50, 0, 1, M.P_OK)]),), np.zeros(1, np.int64), 1, state)[0] == M.R_STOP
    assert check_fn((_pending([(50, 4, 0xFFFF, M.P_OK)]),), np.zeros(1, np.int64), 1, state)[0] == M.R_STOP
