"""Captures and live lines carrying packets of another MoldUDP64 session or forged sequence
numbers: the day's session is replayed whole, the others are counted, never adopted."""

from __future__ import annotations

import struct
import subprocess
import sys

import pyarrow as pa
import pytest

import obook
from obook.gen.itch import write_itch
from obook.gen.pcap import LINE_A, LINE_B, SESSION, _frame, write_pcap

A = f"{LINE_A[0]}:{LINE_A[1]}"
B = f"{LINE_B[0]}:{LINE_B[1]}"
HEADER = 24            # a pcap file's global header


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    d = tmp_path_factory.mktemp("sessions")
    path = d / "day.itch"
    write_itch(path, 3000, 6, seed=11)
    return d, path


def _record(ts_ns: int, payload: bytes, dst) -> bytes:
    frame = _frame(payload, dst, False)
    return struct.pack("<IIII", ts_ns // 10**9, ts_ns % 10**9 // 1000, len(frame), len(frame)) + frame


def _first_ts(path) -> int:
    sec, usec = struct.unpack_from("<II", open(path, "rb").read(), HEADER)
    return sec * 10**9 + usec * 1000


def _insert(path, payloads, dst, at: int = 0):
    """Insert datagrams (payloads) to ``dst`` after the ``at``-th record, stamped as it."""
    data = open(path, "rb").read()
    pos = HEADER
    for _ in range(at):
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    sec, usec = struct.unpack_from("<II", data, pos if at == 0 else HEADER)
    ts = sec * 10**9 + usec * 1000
    extra = b"".join(_record(ts, p, dst) for p in payloads)
    open(path, "wb").write(data[:pos] + extra + data[pos:])


def _stale(seq=1):
    msg = b"S" + bytes(10) + b"O"
    return struct.pack(">10sQH", b"STALE00001", seq, 1) + struct.pack(">H", len(msg)) + msg


def _forged(seq=10**12):
    msg = b"A" + bytes(35)
    return struct.pack(">10sQH", SESSION, seq, 1) + struct.pack(">H", len(msg)) + msg


@pytest.mark.parametrize("two_files", [True, False])
def test_pcap_stale_session_first_packet_outvoted_rows_equal_plain(day, two_files):
    d, itch = day
    a, b = d / f"stale-a-{two_files}.pcap", (d / f"stale-b-{two_files}.pcap" if two_files else None)
    write_pcap(itch, a, b, seed=2, drop=0.05)
    _insert(a, [_stale()], LINE_A)
    src = obook.lines(a=f"{a}:{A}", b=f"{b}:{B}") if two_files else str(a)
    got = obook.bbo(src, workers=1).read_all()
    want = obook.bbo(itch, workers=1).read_all()
    assert got.num_rows == want.num_rows > 0
    assert got.select(want.schema.names).equals(want)
    stats = obook.line_stats(src).read_all().to_pylist()
    assert sum(s["wrong_session"] for s in stats) == 1


@pytest.mark.parametrize("two_files", [True, False])
def test_pcap_forged_far_sequence_number_counted_implausible_rows_equal_plain(day, two_files):
    d, itch = day
    a, b = d / f"far-a-{two_files}.pcap", (d / f"far-b-{two_files}.pcap" if two_files else None)
    write_pcap(itch, a, b, seed=4, drop=0.05)
    _insert(a, [_forged()], LINE_A, at=5)
    src = obook.lines(a=f"{a}:{A}", b=f"{b}:{B}") if two_files else str(a)
    for on_error in ("raise", "skip"):
        got = obook.bbo(src, workers=1, on_error=on_error).read_all()
        assert got.select(obook.bbo(itch, workers=1).read_all().schema.names).equals(
            obook.bbo(itch, workers=1).read_all())
    stats = obook.line_stats(src).read_all().to_pylist()
    assert [s["implausible"] for s in stats][:1] == [1] and sum(s["bad_packets"] for s in stats) == 0
    assert obook.gaps(src).read_all().num_rows == 0


def test_cli_bbo_capture_with_stale_first_packet_prints_every_row(day, tmp_path):
    d, itch = day
    cap = tmp_path / "both.pcap"
    write_pcap(itch, cap, None, seed=6, drop=0.02)
    _insert(cap, [_stale(), _stale(2)], LINE_A)
    run = subprocess.run([sys.executable, "-m", "obook", "bbo", str(cap)], capture_output=True, text=True, timeout=300)
    plain = subprocess.run([sys.executable, "-m", "obook", "bbo", str(itch)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and plain.returncode == 0
    assert len(run.stdout.splitlines()) == len(plain.stdout.splitlines()) > 1
    assert "session" in run.stderr and "2 packets of 1 other sessions ignored" in run.stderr


@pytest.mark.parametrize("table", ["bbo", "trades", "spread"])
def test_cli_table_capture_with_other_session_notice_printed_once(day, tmp_path, table):
    d, itch = day
    cap = tmp_path / "both.pcap"
    write_pcap(itch, cap, None, seed=6, drop=0.02)
    _insert(cap, [_stale(), _stale(2)], LINE_A)
    run = subprocess.run([sys.executable, "-m", "obook", "table", table, str(cap), "-w", "1",
                          "-o", str(tmp_path / "out.csv")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert [ln for ln in run.stderr.splitlines() if "other sessions ignored" in ln] == [
        f"obook: {cap}: MoldUDP64 session 'OBOOK00001' replayed; 2 packets of 1 other sessions ignored"]


def _plain(table: pa.Table) -> pa.Table:
    return table.drop_columns([c for c in ("mold_seq", "line", "ts_recv") if c in table.column_names])


def _listen_among_junk(itch, lst, lines, before, during):
    """The listener's stats and its table while the day is sent with the datagrams
    ``before`` (sent first) and ``during`` ((payload, address) pairs) among its packets;
    ``lines``: the addresses of A, B and the re-request server."""
    import socket

    from live_support import sending

    junk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    got = []
    try:
        for payload, to in before:
            junk.sendto(payload, to)
        with sending(itch, *lines, rate=20_000, drop_a=0.05, seed=6, session="OBOOK"):
            for payload, to in during:
                junk.sendto(payload, to)
            for _t, batch in lst.table_batches():
                got.append(batch)
    finally:
        junk.close()
    return lst.stats(), _plain(pa.Table.from_batches(got))


@pytest.mark.parametrize("loop,on_gap", [("python", "raise"), ("python", "skip"), ("compiled", "raise")])
def test_listen_stale_session_first_and_forged_far_number_day_whole(day, loop, on_gap):
    """No session given: a stale session's packets sent first choose nothing (python: the
    Python listener; compiled: ``obook listen``'s default loop)."""
    from live_support import addresses
    from obook.feeds.mold.packets import encode_packet
    from obook.live.listener import Listener

    _d, itch = day
    a, b, r = addresses()
    lst = Listener(a, b, r, idle_timeout=10, retries=20, on_gap=on_gap, loop=loop)
    st, table = _listen_among_junk(itch, lst, (a, b, r), [(encode_packet("STALE", 7, [b"S" + bytes(11)]), a),  # a stale session
                                               (encode_packet("STALE", 9, [], count=0), b)],
                                   [(encode_packet("OBOOK", 10**12, [b"A" + bytes(35)]), a),       # forged, far ahead
                                    (encode_packet("OBOOK", 10**12 + 1, [], count=0), b)])
    assert st["ended"] and st["gaps"] == []
    assert st["lines"]["A"]["wrong_session"] + st["lines"]["B"]["wrong_session"] == 2
    assert st["lines"]["A"]["implausible"] + st["lines"]["B"]["implausible"] == 2
    assert table.equals(obook.bbo(itch, workers=1).read_all())


@pytest.mark.parametrize("on_gap", ["raise", "skip"])
def test_hot_listener_forged_far_numbers_counted_implausible_day_whole(day, on_gap):
    """The compiled loop (``obook listen``'s default) drops forged numbers far ahead, chained
    or not: no gap opens, so neither --on-gap mode loses or stops anything."""
    from live_support import addresses
    from obook.feeds.mold.packets import encode_packet
    from obook.live.hot_listener import HotListener

    _d, itch = day
    a, b, r = addresses()
    lst = HotListener(a, b, r, idle_timeout=10, retries=20, on_gap=on_gap, session="OBOOK")
    st, table = _listen_among_junk(itch, lst, (a, b, r), [], [
        (encode_packet("OBOOK", 10**12, [b"A" + bytes(35)]), a),        # forged, far ahead
        (encode_packet("OBOOK", 10**12 + 1, [b"A" + bytes(35)]), b),    # and chained once
        (encode_packet("OBOOK", 10**15, [], count=0), a)])              # a far heartbeat
    assert st["ended"] and st["gaps"] == []
    assert st["lines"]["A"]["implausible"] + st["lines"]["B"]["implausible"] == 3
    assert table.equals(obook.bbo(itch, workers=1).read_all())


def _two_days(d, two_files: bool):
    """A capture of two MoldUDP64 sessions, DAYONE0001 of 2026-11-30 then the longer
    DAYTWO0001 of 2026-12-01 (lines A and B in it, or each line in a capture of its own), the
    feed of the first alone and of the second alone, and the second's first record number."""
    feeds, parts = [], []
    for name, n, date, session in (("one", 2000, "2026-11-30", b"DAYONE0001"),
                                   ("two", 4000, "2026-12-01", b"DAYTWO0001")):
        write_itch(d / f"{name}.itch", n, 6, seed=len(name) + n)
        a, b = d / f"{name}-a.pcap", (d / f"{name}-b.pcap" if two_files else None)
        write_pcap(d / f"{name}.itch", a, b, seed=3, drop=0.02, date=date, session=session)
        parts.append([open(p, "rb").read() for p in (a, b) if p is not None])
        feeds.append(obook.lines(a=f"{a}:{A}", b=f"{b}:{B}") if two_files else str(a))
    paths = [d / f"both-{line}.pcap" for line in "ab"[:len(parts[0])]]
    for path, first, second in zip(paths, *parts):
        path.write_bytes(first + second[HEADER:])
    records, pos = 0, HEADER
    while pos < len(parts[0][0]):
        pos += 16 + struct.unpack_from("<I", parts[0][0], pos + 8)[0]
        records += 1
    both = obook.lines(a=f"{paths[0]}:{A}", b=f"{paths[1]}:{B}") if two_files else str(paths[0])
    return both, paths[0], feeds, records + 1


@pytest.mark.parametrize("two_files", [False, True])
def test_pcap_second_session_of_another_day_strict_error_names_both_rows_keep_their_date(tmp_path, two_files):
    """A capture of one day's session then the next day's, longer one: the replay follows the
    session that dates it (the first), never the second's rows under the first's date; strict:
    after the first session's rows, one error naming the capture, the second's first packet and
    both sessions; tolerant: the second's packets counted as wrong_session."""
    both, first_capture, (one, two), second_at = _two_days(tmp_path, two_files)
    want = obook.bbo(one, workers=1).read_all()
    assert str(want.column("timestamp")[0].as_py().date()) == "2026-11-30"
    with pytest.raises(obook.FeedError) as err:
        obook.bbo(both, workers=1).read_all()
    assert str(err.value) == (f"{first_capture}: record {second_at}: a packet of MoldUDP64 session 'DAYTWO0001' of "
                              f"2026-12-01, while the replay follows session 'DAYONE0001' of 2026-11-30: one "
                              f"session is replayed (the other's packets are counted as wrong_session; give its "
                              f"capture alone to replay it)")
    got = obook.bbo(both, workers=1, on_error="skip").read_all()
    assert got.select(want.schema.names).equals(want)
    stats = obook.line_stats(both).read_all().to_pylist()
    assert [s["wrong_session"] for s in stats] == [s["packets"] for s in obook.line_stats(two).read_all().to_pylist()]
