"""Packet captures of MoldUDP64 lines A and B replayed as one ITCH feed (format itch-pcap)."""

import struct

import numpy as np
import pyarrow as pa
import pytest

import obook
from obook._kernels import mold as M
from obook._kernels import pcap as K
from obook.feeds import detect_format
from obook.feeds.mold.capture import read_capture
from obook.gen.itch import write_itch
from obook.gen.pcap import LINE_A, LINE_B, SESSION, _frame, _Writer, write_pcap

from reference_pcap import arbitrate as reference_arbitrate

EXTRA = ["mold_seq", "line", "ts_recv"]
A = f"{LINE_A[0]}:{LINE_A[1]}"
B = f"{LINE_B[0]}:{LINE_B[1]}"


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    d = tmp_path_factory.mktemp("pcap")
    path = d / "day.itch"
    write_itch(path, 6000, 8, seed=3)
    return d, path


def _lines(a, b):
    return obook.lines(a=f"{a}:{A}", b=f"{b}:{B}")


def _plain(table, path, **kw):
    return getattr(obook, table)(path, workers=1, **kw).read_all()


def _same(cap: pa.Table, plain: pa.Table):
    assert cap.schema.names[-3:] == EXTRA
    assert cap.select(plain.schema.names).equals(plain)
    assert cap.column("mold_seq").cast(pa.int64()).equals(cap.column("seq"))


@pytest.mark.parametrize("table", ["bbo", "trades", "orders", "depth"])
def test_pcap_two_lines_drops_both_filled_tables_equal_plain(day, table):
    d, itch = day
    info = write_pcap(itch, d / f"{table}a.pcap", d / f"{table}b.pcap", seed=5, drop=0.08, dup=0.03, reorder=0.03)
    assert info["lost"] == []
    cap = getattr(obook, table)(_lines(d / f"{table}a.pcap", d / f"{table}b.pcap"), workers=1).read_all()
    _same(cap, _plain(table, itch))


@pytest.mark.parametrize("kind,big,vlan", [("pcap-ns", True, False), ("pcapng", False, True), ("pcapng", True, False)])
def test_pcap_one_capture_both_lines_formats_equal_plain(day, kind, big, vlan):
    d, itch = day
    cap_path = d / f"both-{kind}-{big}-{vlan}.cap"
    write_pcap(itch, cap_path, None, seed=7, drop=0.05, kind=kind, big=big, vlan=vlan)
    assert detect_format(cap_path) == "itch-pcap"
    plain = _plain("orders", itch)
    _same(obook.orders(_lines(cap_path, cap_path), workers=1).read_all(), plain)
    # a bare capture path: each UDP destination is a line
    _same(obook.orders(str(cap_path), workers=1).read_all(), plain)


def test_pcap_workers_1_2_3_identical(day):
    d, itch = day
    write_pcap(itch, d / "wa.pcap", d / "wb.pcap", seed=11, drop=0.05)
    src = _lines(d / "wa.pcap", d / "wb.pcap")
    got = [obook.depth(src, workers=w).read_all() for w in (1, 2, 3)]
    assert got[0].equals(got[1]) and got[0].equals(got[2])
    _same(got[0], _plain("depth", itch))


def test_pcap_record_columns_match_reference_first_copy(day):
    d, itch = day
    write_pcap(itch, d / "ra.pcap", d / "rb.pcap", seed=13, drop=0.1, dup=0.05, reorder=0.05, delay_ns=0)
    first = reference_arbitrate([(d / "ra.pcap", *LINE_A), (d / "rb.pcap", *LINE_B)])
    t = obook.orders(_lines(d / "ra.pcap", d / "rb.pcap"), workers=1).read_all()
    seqs = t.column("seq").to_pylist()
    lines = t.column("line").to_pylist()
    ts = t.column("ts_recv").cast(pa.int64()).to_pylist()
    assert lines == ["AB"[first[s][0]] for s in seqs]
    assert ts == [first[s][1] for s in seqs]
    assert set(lines) == {"A", "B"}


def test_pcap_gaps_on_both_lines_named_exactly(day):
    d, itch = day
    info = write_pcap(itch, d / "ga.pcap", d / "gb.pcap", seed=17, drop=0.05, both_gaps=4)
    src = _lines(d / "ga.pcap", d / "gb.pcap")
    first = reference_arbitrate([(d / "ga.pcap", *LINE_A), (d / "gb.pcap", *LINE_B)])
    lost_ref = sorted(set(range(1, info["messages"] + 1)) - set(first))
    gaps = obook.gaps(src).read_all()
    got = [(r["first_seq"], r["count"]) for r in gaps.select(["first_seq", "count"]).to_pylist()]
    assert got == info["lost"] and len(got) == 4
    assert [s for a, c in got for s in range(a, a + c)] == lost_ref
    assert all(r["last_seq"] == r["first_seq"] + r["count"] - 1 for r in gaps.to_pylist())
    a, c = got[0]
    with pytest.raises(obook.FeedError, match=f"messages {a} to {a + c - 1} lost on every line") as e:
        obook.bbo(src, workers=1).read_all()
    assert e.value.record == a
    # strict: every row before the gap was delivered
    rows = []
    with pytest.raises(obook.FeedError):
        for b in obook.bbo(src, workers=1):
            rows.append(b)
    plain = _plain("bbo", itch)
    before = plain.filter(pa.compute.less(plain.column("seq"), a))
    assert sum(b.num_rows for b in rows) == before.num_rows
    # tolerant: the replay goes on; the lost messages are counted
    from obook.engine.replay import Replay
    r = Replay(src, workers=1, on_error="skip")
    tolerant = r.reader().read_all()
    assert r.stats["skipped"]["lost on every line"] == sum(c for _, c in got)
    assert tolerant.filter(pa.compute.less(tolerant.column("seq"), a)).select(plain.schema.names).equals(before)


def test_pcap_line_stats_count_drops_and_duplicates(day):
    d, itch = day
    write_pcap(itch, d / "sa.pcap", d / "sb.pcap", seed=19, drop=0.1, dup=0.0, reorder=0.0, delay_ns=10**9)
    stats = {r["line"]: r for r in obook.line_stats(_lines(d / "sa.pcap", d / "sb.pcap")).read_all().to_pylist()}
    a, b = stats["A"], stats["B"]
    # B lags a second: it duplicates everything A delivered; A's gaps are filled from B
    assert a["recovered_other_line"] == a["gap_messages"] > 0
    assert b["duplicates"] == b["messages"] - a["gap_messages"]
    assert a["heartbeats"] == b["heartbeats"] == 2
    assert a["address"] == LINE_A[0] and b["port"] == LINE_B[1]


def _handmade(path, payloads, kind="pcap", extra=b""):
    w = _Writer(path, kind, False)
    for ts, dst, payload in payloads:
        w.write(ts, payload if dst is None else _frame(payload, dst, False))
    w.close()
    if extra:
        with open(path, "ab") as f:
            f.write(extra)


def _pkt(seq, msgs, session=SESSION):
    return struct.pack(">10sQH", session, seq, len(msgs)) + b"".join(struct.pack(">H", len(m)) + m for m in msgs)


def _itch_messages(itch, n):
    data = open(itch, "rb").read()
    out, pos = [], 0
    while len(out) < n:
        ln = int.from_bytes(data[pos:pos + 2], "big")
        out.append(data[pos + 2:pos + 2 + ln])
        pos += 2 + ln
    return out


def test_pcap_bad_input_counted_cut_capture_named(day, tmp_path):
    d, itch = day
    msgs = _itch_messages(itch, 30)
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\0" * 28
    packets = [(1000, LINE_A, _pkt(1, msgs[:10])), (1001, None, arp),                 # non-UDP frame
               (1002, LINE_A, _pkt(11, msgs[10:20])[:-5]),                            # truncated packet
               (1003, LINE_A, _pkt(11, msgs[10:20], session=b"OTHER00001")),          # wrong session
               (1004, LINE_A, _pkt(11, msgs[10:20])), (1005, LINE_A, _pkt(5, msgs[4:6])),  # backwards
               (1006, LINE_A, _pkt(21, msgs[20:30]))]
    cut = tmp_path / "cut.pcap"
    _handmade(cut, packets, extra=struct.pack("<IIII", 1, 0, 500, 500) + b"\0" * 40)   # cut mid-record
    cap = read_capture(str(cut))
    assert cap.counts["not_udp"] == 1 and cap.problem is not None
    assert "record 8" in str(cap.problem) and "cut mid-record" in str(cap.problem)
    src = obook.lines(a=f"{cut}:{A}")
    stats = obook.line_stats(src).read_all().to_pylist()[0]
    assert (stats["bad_packets"], stats["wrong_session"], stats["backwards"], stats["duplicates"]) == (1, 1, 1, 2)
    plain = tmp_path / "first30.itch"
    plain.write_bytes(b"".join(struct.pack(">H", len(m)) + m for m in msgs))
    want = obook.orders(str(plain), workers=1).read_all()
    with pytest.raises(obook.FeedError, match=r"cut\.pcap: record 8: the capture ends inside"):
        obook.orders(src, workers=1).read_all()
    got = obook.orders(src, workers=1, on_error="skip").read_all()
    _same(got, want)


def test_pcap_not_udp_link_and_bad_magic(tmp_path):
    p = tmp_path / "x.pcapng"
    p.write_bytes(b"\x0a\x0d\x0d\x0a" + struct.pack("<I", 28) + b"\x99\x99\x99\x99" + b"\0" * 16)
    with pytest.raises(obook.ObookError, match="byte-order magic"):     # its problem: no datagram before it
        read_capture(str(p))
    q = tmp_path / "empty.pcap"
    _handmade(q, [])
    with pytest.raises(obook.ObookError, match="no UDP/IPv4 datagram"):
        obook.gaps(obook.lines(a=f"{q}:{A}")).read_all()


@pytest.mark.parametrize("compiled", [True, False])
def test_pcap_kernels_compiled_and_py_func_agree_with_reference(day, compiled):
    from reference_pcap import udp_datagrams

    d, itch = day
    path = d / "k.pcapng"
    write_pcap(itch, path, None, seed=23, drop=0.02, kind="pcapng", vlan=True)
    buf = np.fromfile(path, np.uint8)
    n = 4096
    out = K.Datagrams(*(np.empty(n, np.int64) for _ in range(6)))
    ifaces = K.Interfaces(*(np.zeros(256, np.int64) for _ in range(3)))
    kinds = np.zeros(5, np.int64)
    fn = K.pcapng_datagrams if compiled else K.pcapng_datagrams.py_func
    k, pos, status = fn(buf, 0, len(buf), np.zeros(5, np.int64), ifaces, kinds, out)
    assert status == K.OK and pos == len(buf) and kinds[K.K_UDP] == k
    ref = list(udp_datagrams(path))
    assert out[0][:k].tolist() == [r[0] for r in ref]
    assert [bytes(buf[a:a + ln]) for a, ln in zip(out[3][:k], out[4][:k])] == [r[3] for r in ref]
    hdr = [np.empty(k, np.int64) for _ in range(5)]
    (M.mold_headers if compiled else M.mold_headers.py_func)(buf, out[3], out[4], k, *hdr)
    assert (hdr[4] == M.P_OK).all() and hdr[1].max() == 0xFFFF


def _block(btype, body, e="<"):
    body += b"\0" * ((-len(body)) % 4)
    return struct.pack(e + "II", btype, 12 + len(body)) + body + struct.pack(e + "I", 12 + len(body))


@pytest.mark.parametrize("e", ["<", ">"])
def test_pcapng_two_interfaces_tsresol_and_simple_packets_match_reference(day, tmp_path, e):
    d, itch = day
    msgs = _itch_messages(itch, 12)
    shb = _block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1), e)
    idb_us = _block(1, struct.pack(e + "HHI", 1, 0, 65535), e)                         # default: µs
    idb_2 = _block(1, struct.pack(e + "HHI", 1, 0, 65535) + struct.pack(e + "HH", 9, 1) + b"\x9e\0\0\0"
                   + struct.pack(e + "HH", 0, 0), e)                                    # 2^-30 s
    frames = [_frame(_pkt(1 + 3 * i, msgs[3 * i:3 * i + 3]), LINE_A, False) for i in range(4)]

    def epb(iface, t, frame):
        return _block(6, struct.pack(e + "IIIII", iface, t >> 32, t & 0xFFFFFFFF, len(frame), len(frame)) + frame, e)
    spb = _block(3, struct.pack(e + "I", len(frames[3])) + frames[3], e)
    t_us = 1_796_029_200_000_001
    t_2 = (1_796_029_200 << 30) + (1 << 29)                                           # + 0.5 s
    data = shb + idb_us + idb_2 + epb(0, t_us, frames[0]) + epb(1, t_2, frames[1]) + epb(0, t_us + 5, frames[2]) + spb
    path = tmp_path / "multi.pcapng"
    path.write_bytes(data)
    from reference_pcap import udp_datagrams
    ref = [ts for ts, *_ in udp_datagrams(path)]
    cap = read_capture(str(path))
    assert cap.ts.tolist() == ref == [t_us * 1000, 1_796_029_200_500_000_000, (t_us + 5) * 1000, (t_us + 5) * 1000]
    plain = tmp_path / "first12.itch"
    plain.write_bytes(b"".join(struct.pack(">H", len(m)) + m for m in msgs))
    _same(obook.orders(obook.lines(a=f"{path}:{A}"), workers=1).read_all(), obook.orders(str(plain), workers=1).read_all())


def test_pcap_duckdb_polars_and_messages_see_the_capture_feed(day):
    d, itch = day
    cap_path = d / "adapters.pcap"
    info = write_pcap(itch, cap_path, None, seed=29, drop=0.05, both_gaps=1)
    lost = sum(c for _, c in info["lost"])
    want = obook.bbo(str(cap_path), workers=1, on_error="skip").read_all()
    con = obook.connect()
    n, seqs = con.execute(f"select count(*), count(distinct mold_seq) from obook_bbo('{cap_path}', "
                          f"on_error := 'skip', workers := 1)").fetchone()
    assert n == want.num_rows and seqs == len(set(want.column("seq").to_pylist()))
    assert con.execute(f"select sum(count) from obook_gaps('{cap_path}')").fetchone()[0] == lost
    got = obook.scan_bbo(str(cap_path), on_error="skip", workers=1).collect()
    assert got.height == want.num_rows and got["line"].to_list() == want.column("line").to_pylist()
    msgs = con.execute(f"select count(*), count(*) filter (where type < 'A') from obook_messages('{cap_path}')").fetchone()
    assert msgs == (info["messages"] - lost, 0)


def test_pcap_capture_arbitration_equals_streaming_arbiter(day):
    """The capture kernels and the live side's Arbiter, fed the same datagrams in the same
    order, deliver the same messages from the same lines at the same times and lose the same."""
    from obook.feeds.mold.arbiter import Arbiter
    from obook.feeds.mold.stream import arbitrate, record_columns
    from reference_pcap import udp_datagrams

    d, itch = day
    info = write_pcap(itch, d / "xa.pcap", d / "xb.pcap", seed=31, drop=0.1, dup=0.05, reorder=0.05,
                      both_gaps=3, delay_ns=0)
    arrivals = []
    for line, (path, (addr, port)) in enumerate([(d / "xa.pcap", LINE_A), (d / "xb.pcap", LINE_B)]):
        arrivals += [(ts, line, k, p) for k, (ts, a, pt, p) in enumerate(udp_datagrams(path)) if (a, pt) == (addr, port)]
    arrivals.sort(key=lambda x: x[:3])
    arb = Arbiter()
    delivered = []
    for ts, line, _k, payload in arrivals:
        arb.packet(line, payload, ts)
        delivered += arb.pop()
    for a, c in arb.missing():
        arb.skip(a, c, 0)
    delivered += arb.pop()
    assert arb.ended
    cap = arbitrate(_lines(d / "xa.pcap", d / "xb.pcap"))
    seqs = np.array([m[0] for m in delivered])
    mold_seq, line, ts = record_columns(cap, seqs)
    assert line.to_pylist() == ["AB"[m[1]] for m in delivered]
    assert ts.cast(pa.int64()).to_pylist() == [m[2] for m in delivered]
    assert [(a, c) for a, c, _ in arb.gaps] == [(a, c) for a, c, *_ in cap.gaps()] == info["lost"]


def _live_loop_stats(arrivals, packet):
    """The compiled live loop's arbitration (``live_arb.packet``: compiled or py_func) fed the
    datagrams (ts, line, _, payload) in order, the numbers missing at the end given up: its
    per-line counts."""
    from obook._kernels import live_arb
    from obook._kernels import live_layout as L
    from obook.live.hotpath import arbitration

    S = np.zeros(L.S_WIDTH, np.int64)
    S[L.S_NEXT] = S[L.S_HIGH] = 1
    S[L.S_END] = -1
    arb = arbitration(np.zeros(1 << 22, np.uint8), np.zeros((4, 1 << 16), np.int64))
    buf = np.zeros(L.DGRAM, np.uint8)
    for ts, line, _k, payload in arrivals:
        buf[:len(payload)] = np.frombuffer(payload, np.uint8)
        packet(S, line, buf, len(payload), ts, ts, arb)
    out = np.zeros((64, 2), np.int64)
    while live_arb.missing(S, arb[5], out):
        live_arb.skip(S, out[0, 0], out[0, 1], 0, arb[0], arb[1], arb[2], arb[4], arb[5], arb[6], arb[7])
    return arb[2]


@pytest.mark.parametrize("seed,drop,reorder,both_gaps,delay_ns", [
    (41, 0.1, 0.05, 2, 0), (42, 0.2, 0.0, 0, 10**9), (43, 0.15, 0.1, 3, 300_000)])
def test_pcap_line_stats_same_packets_equal_python_and_compiled_live_arbiters(day, seed, drop, reorder, both_gaps, delay_ns):
    """The same generated packets (drops, duplicates, reordering, losses on both lines, line B
    late) through the capture replay, the live side's Arbiter and the compiled live loop's
    arbitration (compiled and as py_func): every line_stats count is the same."""
    from obook._kernels import live_arb
    from obook.feeds.mold.arbiter import STAT_KEYS, Arbiter
    from reference_pcap import udp_datagrams

    d, itch = day
    a, b = d / f"ls{seed}a.pcap", d / f"ls{seed}b.pcap"
    write_pcap(itch, a, b, seed=seed, drop=drop, dup=0.05, reorder=reorder, both_gaps=both_gaps, delay_ns=delay_ns)
    arrivals = []
    for line, (path, (addr, port)) in enumerate([(a, LINE_A), (b, LINE_B)]):
        arrivals += [(ts, line, k, p) for k, (ts, ad, pt, p) in enumerate(udp_datagrams(path)) if (ad, pt) == (addr, port)]
    arrivals.sort(key=lambda x: x[:3])
    python = Arbiter()
    for ts, line, _k, payload in arrivals:
        python.packet(line, payload, ts)
    for first, count in python.missing():
        python.skip(first, count, 0)
    capture = {r["line"]: r for r in obook.line_stats(_lines(a, b)).read_all().to_pylist()}
    want = [{k: capture[name][k] for k in STAT_KEYS} for name in "AB"]
    assert want[0]["gaps"] > 0 and want[1]["recovered_other_line"] > 0 and want[0]["backwards"] > 0
    assert python.stats == want
    for packet in (live_arb.packet, live_arb.packet.py_func):
        loop = _live_loop_stats(arrivals, packet)
        assert [dict(zip(STAT_KEYS, loop[i].tolist())) for i in range(2)] == want


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_pcap_corrupted_bytes_error_or_rows_never_crash(day, tmp_path, kind):
    """Random bytes of a capture overwritten (headers, lengths, payloads) or the capture cut:
    the replay ends with rows or an ObookError, never another exception or a hang."""
    import random

    d, itch = day
    small = tmp_path / "small.itch"
    small.write_bytes(b"".join(struct.pack(">H", len(m)) + m for m in _itch_messages(itch, 400)))
    good = tmp_path / f"good.{kind}"
    write_pcap(small, good, None, seed=37, drop=0.05, kind=kind)
    data = good.read_bytes()
    rnd = random.Random(41)
    for i in range(12):
        bad = bytearray(data)
        for _ in range(rnd.randint(1, 6)):
            bad[rnd.randrange(len(bad))] = rnd.randrange(256)
        if i % 3 == 0:
            bad = bad[:rnd.randrange(24, len(bad))]
        path = tmp_path / f"bad{i}.{kind}"
        path.write_bytes(bytes(bad))
        for on_error in ("raise", "skip"):
            try:
                obook.orders(obook.lines(a=f"{path}:{A}", b=f"{path}:{B}"), workers=1, on_error=on_error).read_all()
                obook.line_stats(obook.lines(a=f"{path}:{A}")).read_all()
            except obook.ObookError:
                pass


@pytest.mark.parametrize("both", [False, True])
def test_pcap_end_of_session_before_later_messages_every_message_replayed(day, tmp_path, both):
    """An end of session numbered 11 (line A, or both lines) arriving before the packets of
    messages 11 to 40: the replay holds all 40, as a live line delivers them."""
    d, itch = day
    msgs = _itch_messages(itch, 40)
    end = struct.pack(">10sQH", SESSION, 11, 0xFFFF)
    packets = [(1000 + i, dst, _pkt(1 + i, msgs[i:i + 5])) for i in range(0, 10, 5) for dst in (LINE_A, LINE_B)]
    packets += [(1020, LINE_A, end)] + ([(1021, LINE_B, end)] if both else [])
    packets += [(1030 + i, dst, _pkt(1 + i, msgs[i:i + 5])) for i in range(10, 40, 5) for dst in (LINE_A, LINE_B)]
    cap = tmp_path / "end.pcap"
    _handmade(cap, packets)
    plain = tmp_path / "first40.itch"
    plain.write_bytes(b"".join(struct.pack(">H", len(m)) + m for m in msgs))
    want = obook.orders(str(plain), workers=1).read_all()
    _same(obook.orders(obook.lines(a=f"{cap}:{A}", b=f"{cap}:{B}"), workers=1).read_all(), want)
    assert obook.gaps(str(cap)).read_all().num_rows == 0


def test_pcap_capture_cut_early_strict_error_names_the_cut_not_a_loss(day, tmp_path):
    """Line A's capture is cut after its first packets; line B dropped some of the later
    ones. A strict replay stops at the first of those with the cut (the capture, its record),
    not 'lost on every line': they may be in the part of A not read. A tolerant one counts
    the cut once and every lost message."""
    from obook.engine.replay import Replay

    d, itch = day
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    write_pcap(itch, a, b, seed=43, drop=0.05, dup=0, reorder=0)
    data = a.read_bytes()
    a.write_bytes(data[:len(data) // 10])                              # cut inside a record
    src = _lines(a, b)
    gaps = obook.gaps(src).read_all()
    lost, first = int(pa.compute.sum(gaps.column("count")).as_py()), gaps.column("first_seq")[0].as_py()
    assert lost > 0
    with pytest.raises(obook.FeedError, match=r"a\.pcap: record \d+: the capture ends inside a record"):
        obook.bbo(src, workers=1).read_all()
    plain = _plain("bbo", itch)
    rows = []
    with pytest.raises(obook.FeedError):
        for batch in obook.bbo(src, workers=2):
            rows.append(batch)
    assert sum(x.num_rows for x in rows) == plain.filter(pa.compute.less(plain.column("seq"), first)).num_rows > 0
    r = Replay(src, workers=1, on_error="skip")
    r.reader().read_all()
    assert r.stats["skipped"]["capture problem"] == 1 and r.stats["skipped"]["lost on every line"] == lost
