"""``obook send``'s packets: every message on each line once (minus its drops), in the
day's order but for reordering, drops the same for a seed, heartbeats and end of session
naming the next number, re-requests answered from the day."""

from __future__ import annotations

import socket
import threading

import pytest

from live_support import addresses
from obook.feeds.mold.packets import END_OF_SESSION, decode_packet, encode_request
from obook.gen.itch import write_itch
from obook.live.send import Sender, SendOptions, make_packets, read_messages, timestamp


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("send") / "day.itch"
    write_itch(str(path), 3_000, 5, 9)
    return path


def _capture(day, requests=(), raw_requests=(), **options):
    """Run a Sender; collect the packets of lines A and B and the answers to ``requests``."""
    a, b, r = addresses()
    socks = []
    for addr in (a, b):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.bind(addr)
        s.settimeout(0.2)
        socks.append(s)
    asker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    asker.bind(("127.0.0.1", 0))
    asker.settimeout(0.5)
    sender = Sender(read_messages(day), SendOptions(a, b, r, **{"linger": 0.3, "heartbeat": 0.05, "rate": 20_000,
                                                                 **options}))
    th = threading.Thread(target=sender.run, daemon=True)
    th.start()
    got = [[], []]
    answers = []
    try:
        for first, count in requests:
            asker.sendto(encode_request("OBOOK", first, count), r)
        for raw in raw_requests:
            asker.sendto(raw, r)
        while th.is_alive() or any(_pending(s) for s in socks):
            for i, s in enumerate(socks):
                try:
                    while True:
                        got[i].append(decode_packet(s.recv(65536)))
                except (socket.timeout, BlockingIOError):
                    pass
        try:
            while True:
                answers.append(decode_packet(asker.recv(65536)))
        except socket.timeout:
            pass
    finally:
        sender.stop()
        th.join(timeout=10)
        for s in socks + [asker]:
            s.close()
    return got, answers, sender.stats


def _pending(s) -> bool:
    s.setblocking(False)
    try:
        s.recv(1, socket.MSG_PEEK)
        return True
    except BlockingIOError:
        return False
    finally:
        s.settimeout(0.2)


def _seqs(packets):
    return [p.seq + i for p in packets if 0 < p.count < END_OF_SESSION for i in range(p.count)]


def test_send_no_drops_each_line_carries_the_day_in_order_then_end_of_session(day):
    msgs = read_messages(day)
    (a, b), _, stats = _capture(day)
    for line in (a, b):
        data = [p for p in line if 0 < p.count < END_OF_SESSION]
        assert [m for p in data for m in p.messages] == msgs
        assert _seqs(data) == list(range(1, len(msgs) + 1))
        eos = [p for p in line if p.count == END_OF_SESSION]
        assert eos and all(p.seq == len(msgs) + 1 for p in eos)
        assert all(p.seq == len(msgs) + 1 for p in line if p.count == 0)   # heartbeats after the day
    assert stats["dropped_a"] == stats["dropped_b"] == 0


def test_send_drops_reorder_same_for_a_seed_and_answers_rerequests(day):
    msgs = read_messages(day)
    bad = [b"short", encode_request("OTHER", 1, 5)]       # truncated; another session
    runs = [_capture(day, requests=[(5, 40), (2990, 100)], raw_requests=bad, drop_a=0.2, drop_b=0.3,
                     reorder=0.1, seed=s) for s in (1, 1, 2)]
    (a1, b1), answers, st1 = runs[0]
    assert (_seqs(a1), _seqs(b1)) == (_seqs(runs[1][0][0]), _seqs(runs[1][0][1]))
    assert _seqs(a1) != _seqs(runs[2][0][0])
    n = len(msgs)
    for line, rate in ((a1, 0.2), (b1, 0.3)):
        seqs = _seqs(line)
        assert len(set(seqs)) == len(seqs) and set(seqs) < set(range(1, n + 1))
        assert seqs != sorted(seqs)                                  # some reordered
        assert 0.5 * rate < 1 - len(seqs) / n < 1.5 * rate           # about the drop rate lost
    assert st1["dropped_a"] > 0 and st1["reordered"] > 0
    assert (st1["requests"], st1["bad_requests"]) == (2, 2)
    resent = {p.seq + i: m for p in answers for i, m in enumerate(p.messages)}
    assert sorted(resent) == list(range(5, 45)) + list(range(2990, n + 1))
    assert all(resent[s] == msgs[s - 1] for s in resent)


def test_make_packets_respects_payload_and_burst():
    msgs = [bytes([65]) + bytes(4) + (t * 1000).to_bytes(6, "big") + bytes(20) for t in range(100)]
    whole = make_packets(msgs, max_payload=200)
    assert sum(c for _, c in whole) == 100 and all(c * 33 <= 200 for _, c in whole)
    burst = make_packets(msgs, max_payload=10_000, burst_ns=2_500)
    assert [c for _, c in burst] == [3] * 33 + [1]
    assert timestamp(msgs[7]) == 7000


def test_sender_message_rate_packs_messages_as_they_fall_due(day):
    """--message-rate: a packet holds the messages due within burst_us of its first and goes
    when its last falls due: 100,000 a second, 20 µs: three a packet, 20 µs after its first."""
    msgs = read_messages(day)
    sender = Sender(msgs, SendOptions(("127.0.0.1", 9), ("127.0.0.1", 9), None, message_rate=100_000, burst_us=20))
    try:
        counts = [c for _, c in sender.packets]
        assert sum(counts) == len(msgs) and set(counts[:-1]) == {3}
        assert [sender._due(k) for k in range(3)] == [20_000, 50_000, 80_000]
        unbounded = Sender(msgs, SendOptions(("127.0.0.1", 9), ("127.0.0.1", 9), None, rate=1000))
        unbounded.close()
        assert min(c for _, c in unbounded.packets[:-1]) > 3        # --rate fills the packets
    finally:
        sender.close()
    from obook.errors import ObookError
    with pytest.raises(ObookError, match="not both"):
        Sender(msgs, SendOptions(("127.0.0.1", 9), ("127.0.0.1", 9), None, rate=1000, message_rate=1000))


@pytest.mark.parametrize("speed", [0.0, 20_000.0])      # paced: the generated day in about 3 s
def test_send_lateness_counts_each_packet_once(day, speed):
    """The lateness histogram holds one value per packet sent on either line (the time its
    batch was handed to the kernel - its due time)."""
    sinks = []
    for _ in range(2):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        sinks.append(s)
    try:
        sender = Sender(read_messages(day), SendOptions(sinks[0].getsockname(), sinks[1].getsockname(), None,
                                                        speed=speed, linger=0, heartbeat=0.5, spin_us=200))
        st = sender.run()
    finally:
        for s in sinks:
            s.close()
    counts = sender.lateness.counts
    assert int(counts[:-1].sum()) == st["packets_a"] + st["packets_b"] > 0


def test_send_due_packet_waited_for_at_slice_end_goes_out_at_once():
    """When the loop's slice ends while it waits for a packet, the packet is still sent on
    time by that call (handing it back to Python would make it late)."""
    import time

    import numpy as np

    from obook._kernels import live_send as K
    from obook._kernels.latency import new_counts

    out, sinks, sock = _loop_out(1.0)
    try:
        one = np.ones(1, np.int64)
        packets = K.Packets(np.frombuffer(b"packet-0", np.uint8).copy(), np.zeros(1, np.int64), 8 * one, one, one)
        Q, late = np.zeros(K.Q_WIDTH, np.int64), new_counts()
        none = np.zeros(0, np.int64)
        K.send_due(sock, np.zeros(K.T_WIDTH, np.int64), Q, packets, K.Schedule(none, none, none), late,  # compiled
                   1_000_000, 0)
        # in 10 ms, within the spin (a due time the call only reaches after it passed, on a busy
        # host, would be a packet already due, which a slice's end hands back)
        due = np.full(2, time.monotonic_ns() + 10_000_000, np.int64)
        # spin 20 ms, a slice of 0 ns: over at once
        status = K.send_due(sock, np.zeros(K.T_WIDTH, np.int64), Q, packets,
                            K.Schedule(np.zeros(2, np.int64), np.array([0, 1], np.int64), due), late, 20_000_000, 0)
        assert status == K.SEND_DONE
        assert (int(Q[K.Q_SENT_A]), int(Q[K.Q_SENT_B])) == (1, 1)
        assert [s.recv(64) for s in sinks] == [b"packet-0"] * 2
    finally:
        for s in [out, *sinks]:
            s.close()



@pytest.mark.parametrize("option, value", [("speed", 1e-300), ("speed", 1e-10), ("rate", 1e-300), ("rate", 1e-12),
                                           ("message_rate", 1e-300)])
def test_sender_too_slow_to_send_the_day_obook_error_naming_option(day, option, value):
    from obook.errors import ObookError

    with pytest.raises(ObookError, match=f"--{option.replace('_', '-')} {value:g}: too slow"):
        Sender(read_messages(day), SendOptions(("127.0.0.1", 9), ("127.0.0.1", 9), None, **{option: value}))


def test_message_times_one_message_any_rate_due_at_once():
    from obook.live.send import message_times

    assert message_times(1, 1e-300) == [0]
    assert message_times(3, 2.0) == [0, 500_000_000, 1_000_000_000]


@pytest.mark.parametrize("pacing, prints", [([], False), (["--rate", "20000"], True),
                                            (["--message-rate", "1000000"], True), (["--speed", "1000000"], True)])
def test_cli_send_lateness_printed_for_a_paced_sender_only(capsys, day, pacing, prints):
    from cli_support import cli_run

    a, b = addresses(2)
    code, err = cli_run(capsys, "send", day, "--line-a", f"{a[0]}:{a[1]}", "--line-b", f"{b[0]}:{b[1]}",
                        "--request", "", "--linger", "0", *pacing)
    assert code in (0, None) and "sent: packets_a" in err, err
    assert ("send lateness (ns): p50" in err) == prints, err


@pytest.mark.parametrize("cut", [20_000, 10])
def test_cli_send_gzip_day_cut_short_one_line_error_naming_it(capsys, day, tmp_path, cut):
    import gzip

    from cli_support import cli_error

    path = tmp_path / "day.itch.gz"
    path.write_bytes(gzip.compress(day.read_bytes())[:cut])
    err = cli_error(capsys, "send", path, "--request", "", "--linger", "0")
    assert err.startswith(f"error: {path}: read failed at byte ") and "of the decompressed feed: " in err, err


def test_sender_line_it_cannot_send_to_obook_error_naming_line_before_sending(day):
    from obook.errors import ObookError

    a, _b = addresses(2)
    with pytest.raises(ObookError, match=r"^--line-b 255\.255\.255\.255:\d+: cannot send there \(Permission denied"):
        Sender(read_messages(day), SendOptions(a, ("255.255.255.255", a[1] + 1), None, linger=0))


def test_sender_request_port_taken_obook_error_naming_option(day):
    from obook.errors import ObookError

    a, b, r = addresses()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(r)
        with pytest.raises(ObookError, match=rf"^--request 127\.0\.0\.1:{r[1]}: cannot serve re-requests there: "
                                             r"Address already in use$"):
            Sender(read_messages(day), SendOptions(a, b, r, linger=0))


@pytest.mark.parametrize("compress", [False, True])
def test_read_messages_day_of_no_message_error_names_file(tmp_path, compress):
    """An empty day sends nothing a listener can take for a session (an end of session
    alone names none): refused, naming the file, rather than a listener left waiting."""
    import gzip

    from obook.errors import ObookError

    path = tmp_path / ("empty.itch.gz" if compress else "empty.itch")
    path.write_bytes(gzip.compress(b"") if compress else b"")
    with pytest.raises(ObookError, match=f"^{path}: the day holds no message; nothing to send$"):
        read_messages(path)


def test_cli_send_empty_day_one_line_error(tmp_path, capsys):
    from cli_support import cli_error

    path = tmp_path / "empty.itch"
    path.write_bytes(b"")
    err = cli_error(capsys, "send", str(path), "--line-a", "127.0.0.1:1", "--line-b", "127.0.0.1:2", "--linger", "0")
    assert err == f"error: {path}: the day holds no message; nothing to send\n", err


def test_send_spare_thread_each_line_carries_the_day_once_in_order(day):
    """With a spare sending thread, each packet goes out once, from one thread or the other,
    and each line still carries the day in order; the lateness counts every packet once."""
    import os

    spare = max(os.sched_getaffinity(0))
    got, _, stats = _capture(day, rate=5_000, spare_cpu=spare, spin_us=200)
    n = len(read_messages(day))
    for line in got:
        assert _seqs(line) == list(range(1, n + 1))
    assert stats["packets_a"] == stats["packets_b"] > 0


def test_send_spare_thread_packets_and_lateness_counted_once(day):
    import os
    import socket as so

    sinks = [so.socket(so.AF_INET, so.SOCK_DGRAM) for _ in range(2)]
    for s in sinks:
        s.bind(("127.0.0.1", 0))
    try:
        sender = Sender(read_messages(day), SendOptions(sinks[0].getsockname(), sinks[1].getsockname(), None,
                                                        rate=10_000, linger=0, heartbeat=0.5, spin_us=200,
                                                        spare_cpu=min(os.sched_getaffinity(0))))
        st = sender.run()
    finally:
        for s in sinks:
            s.close()
    from obook._kernels import live_send as K

    per_thread = [int(Q[K.Q_SENT_A] + Q[K.Q_SENT_B]) for _, Q, _ in sender.Qs]
    assert len(per_thread) == 2 and sum(per_thread) == st["packets_a"] + st["packets_b"] > 0
    assert sender.lateness.total == st["packets_a"] + st["packets_b"]


def _loop_out(timeout: float):
    """A sending socket, two bound sinks (reads time out after ``timeout`` s), and the socket
    side (``Out``) of send_due sending to them."""
    import numpy as np

    from obook._kernels import live_send as K
    from obook.live.send import _libc_address, sockaddr_in

    out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sinks = []
    for _ in range(2):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.settimeout(timeout)
        sinks.append(s)
    fns = np.array([_libc_address("sendmmsg"), _libc_address("clock_gettime"),
                    _libc_address("clock_nanosleep")], np.int64)
    sock = K.Out(fns, out.fileno(), np.stack([sockaddr_in(*s.getsockname()) for s in sinks]),
                 np.zeros((K.BATCH, 8), np.int64), np.zeros((K.BATCH, 2), np.int64), np.zeros(K.BATCH, np.int64),
                 np.zeros(2, np.int64))
    return out, sinks, sock


def _one_packet_loop():
    """``_loop_out`` and three one-packet entries on line A, all due at once."""
    import numpy as np

    from obook._kernels import live_send as K

    out, sinks, sock = _loop_out(0.2)
    buf = np.frombuffer(b"pkt-0pkt-1pkt-2", np.uint8).copy()
    ar = np.arange(3, dtype=np.int64)
    packets = K.Packets(buf, 5 * ar, np.full(3, 5, np.int64), ar + 1, np.ones(3, np.int64))
    sched = K.Schedule(ar.copy(), np.zeros(3, np.int64), np.zeros(3, np.int64))    # all due at once, line A
    return out, sinks, sock, packets, sched


def test_send_due_entries_claimed_by_other_thread_not_sent_again():
    import numpy as np

    from obook._kernels import live_send as K
    from obook._kernels.latency import new_counts

    out, sinks, sock, packets, sched = _one_packet_loop()
    try:
        T = np.array([2, 2], np.int64)          # the other thread claimed and sent entries 0 and 1
        Q = np.zeros(K.Q_WIDTH, np.int64)
        assert K.send_due(sock, T, Q, packets, sched, new_counts(), 0, 1_000_000_000) == K.SEND_DONE
        assert list(T) == [3, 3] and Q[K.Q_SENT_A] == 1
        assert sinks[0].recv(64) == b"pkt-2"
        with pytest.raises(socket.timeout):
            sinks[0].recv(64)
    finally:
        for s in [out, *sinks]:
            s.close()


def test_send_due_batch_waits_for_the_batch_claimed_before_it():
    """A thread that claims entries after another thread's claimed batch hands them to the
    kernel only once that batch is out, so the line keeps the schedule's order."""
    import time

    import numpy as np

    from obook._kernels import live_send as K
    from obook._kernels.latency import new_counts

    out, sinks, sock, packets, sched = _one_packet_loop()
    try:
        T = np.array([1, 0], np.int64)          # the other thread claimed entry 0, not yet handed over
        Q = np.zeros(K.Q_WIDTH, np.int64)
        done = []
        th = threading.Thread(target=lambda: done.append(
            K.send_due(sock, T, Q, packets, sched, new_counts(), 0, 1_000_000_000)))
        th.start()
        time.sleep(0.2)
        assert th.is_alive() and T[0] == 3 and Q[K.Q_SENT_A] == 0     # claimed 1 and 2, waiting
        with pytest.raises(socket.timeout):
            sinks[0].recv(64)
        out.sendto(b"pkt-0", sinks[0].getsockname())        # the other thread's batch goes out
        T[1] = 1
        th.join(timeout=10)
        assert done == [K.SEND_DONE] and list(T) == [3, 3] and Q[K.Q_SENT_A] == 2
        assert [sinks[0].recv(64) for _ in range(3)] == [b"pkt-0", b"pkt-1", b"pkt-2"]
    finally:
        for s in [out, *sinks]:
            s.close()


def test_sender_spare_cpu_same_as_cpu_obook_error_naming_option():
    from obook.errors import ObookError

    with pytest.raises(ObookError, match="--spare-cpu 0"):
        SendOptions(("127.0.0.1", 9), ("127.0.0.1", 10), None, cpu=0, spare_cpu=0)


def test_sender_stopped_with_spare_thread_no_thread_outlives_run(day):
    import os

    sinks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for s in sinks:
        s.bind(("127.0.0.1", 0))
    sender = Sender(read_messages(day), SendOptions(sinks[0].getsockname(), sinks[1].getsockname(), None,
                                                    rate=200, linger=0, heartbeat=0.5, spin_us=200,
                                                    spare_cpu=min(os.sched_getaffinity(0))))
    threading.Timer(0.3, sender.stop).start()       # the day at 200 packets a second: stopped early
    try:
        st = sender.run()
    finally:
        for s in sinks:
            s.close()
    assert 0 < st["packets_a"] < len(sender.packets)
    assert not [t for t in threading.enumerate() if t.name == "obook-send-spare"]
    assert sender.lateness.total == st["packets_a"] + st["packets_b"]
