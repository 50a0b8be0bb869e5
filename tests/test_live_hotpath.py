"""The compiled live loop: a numba strategy inside it sends the offline replay's orders,
nothing allocates once it runs, garbage on the lines is counted and dropped, a table
writer that falls a ring behind is reported, the sender's schedule holds."""

from __future__ import annotations

import importlib.util
import re
import socket
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from live_support import addresses, sending, warm_loop
from obook.errors import ObookError
from obook.gen.itch import write_itch
from obook.live import ouch, soupbin
from obook.live.gateway import Gateway
from obook.live.hot_listener import HotListener
from obook.live.risk import RiskGate
from obook.live.strategy import replay_orders
from obook.live.venue import Venue

pytestmark = pytest.mark.skipif(__import__("obook._kernels.jit", fromlist=["x"]).INTERPRETED,
                                reason="the compiled loop is numba's (OBOOK_KERNELS=python runs the Python listener)")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "strategy_quote.py"
TICKERS = ["AAA", "AAB", "AAC"]


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    warm_loop()
    path = tmp_path_factory.mktemp("hot") / "day.itch"
    write_itch(str(path), 20_000, 10, 11)
    return path


def _example():
    spec = importlib.util.spec_from_file_location("strategy_quote", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _risk():
    return RiskGate(max_qty=1000, max_orders_per_second=50, band_bps=200)


def test_hot_listener_numba_strategy_in_loop_sends_offline_orders_venue_gets_all(day):
    """The loop's orders equal the offline replay's, byte for byte at the venue, sent in fewer
    send() calls than orders (a batch of datagrams' orders after its first go together)."""
    mod = _example()
    offline = replay_orders(day, mod.JoinBid(), TICKERS, _risk())
    venue = Venue(sessions=1)
    th = threading.Thread(target=venue.serve, kwargs={"timeout": 60}, daemon=True)
    th.start()
    try:
        a, b, r = addresses()
        lst = HotListener(a, b, r, tables=(), strategy=mod.JoinBidFast, tickers=TICKERS, risk=_risk(),
                          gateway=Gateway(*venue.address), idle_timeout=10, retries=20)
        with sending(day, a, b, r, rate=20_000, delay_b=0.001, drop_a=0.05, drop_b=0.05, seed=4):
            lst.run()
    finally:
        venue.stop()
        th.join(timeout=10)
    assert len(offline.orders) > 20 and lst.orders == len(offline.orders)
    assert lst.digest() == offline.digest() == venue.digest()
    st = lst.stats()
    assert st["refused"] == offline.risk.refused and st["strategy_calls"] == offline.calls
    segments = len({stamp for stamp, _ in venue.messages})      # orders sent together share one
    assert segments <= st["order_sends"] < lst.orders           # a batch's orders leave together
    t2t = {h.name: h for h in lst.latency()}["tick-to-trade"]
    assert t2t.total == len({o.ref for o in offline.orders})     # every order answered, stamped
    assert t2t.value_at(50) > 0


def test_hot_listener_venue_rejecting_orders_counted_as_the_venue_counts(day):
    """A venue that takes one live order at a time rejects most of JoinBidFast's: the loop
    counts every rejection the venue counted and keeps the first one's UserRefNum and reason."""
    from obook.live.strategy import TickToTrade

    mod = _example()
    venue = Venue(sessions=1, max_live_orders=1)
    th = threading.Thread(target=venue.serve, kwargs={"timeout": 60}, daemon=True)
    th.start()
    try:
        a, b, r = addresses()
        gw = Gateway(*venue.address)
        ttt = TickToTrade(mod.JoinBidFast, TICKERS, _risk(), gw)
        lst = HotListener(a, b, r, tables=(), tick_to_trade=ttt, idle_timeout=10, retries=20)
        with sending(day, a, b, r, rate=20_000, seed=4):
            lst.run()
        lst.close()
    finally:
        venue.stop()
        th.join(timeout=10)
    rejected = sum(venue.rejected.values())
    assert rejected > 5 and gw.rejected == rejected
    ref, reason = gw.first_rejected
    assert reason == ouch.OTHER and ref in {o.ref for o in ttt.orders}
    assert gw.rejections().startswith(f"venue {gw.where}: rejected {rejected} order message(s); the first, "
                                      f"UserRefNum {ref}: other reason (0x000F)")


def test_hot_loop_allocates_nothing_after_warm_up(day):
    from live_support import allocation_stats
    from obook._kernels import jit, live_arb, live_loop, live_orders

    for kernel in (live_loop.run, live_loop.consume, live_arb.packet, live_orders.encode):
        assert kernel.py_func in jit.NRT_FREE       # compiled without numba's runtime at all
    stats = allocation_stats()
    a, b, r = addresses()
    lst = HotListener(a, b, r, tables=(), strategy=_example().JoinBidFast, tickers=TICKERS, risk=_risk(),
                      idle_timeout=10, retries=20)
    warm = stats()
    with sending(day, a, b, r, rate=20_000, drop_a=0.05, seed=2):
        lst.run()
    end = stats()
    assert lst.stats()["records"] == 20_000 and lst.orders > 0
    assert (end.alloc - warm.alloc, end.free - warm.free) == (0, 0)


def test_hot_listener_garbage_on_both_lines_counted_dropped_tables_equal(day):
    import obook
    from obook.feeds.mold.packets import encode_packet

    a, b, r = addresses()
    lst = HotListener(a, b, r, idle_timeout=10, retries=20)
    junk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    got = []
    try:
        with sending(day, a, b, r, rate=20_000, drop_a=0.05, seed=6):
            junk.sendto(bytes(20), a)                            # a heartbeat of session 0, number 0
            junk.sendto(encode_packet("OBOOK", 1 << 40, []), b)    # a heartbeat numbered far away: implausible
            for i in range(200):
                junk.sendto(bytes([i % 256]) * (1 + i % 90), a if i % 2 else b)
            junk.sendto(b"x" * 3000, a)                          # longer than a datagram slot
            for _t, batch in lst.table_batches():
                got.append(batch)
    finally:
        junk.close()
    dropped = sum(lst.stats()["kernel_drops"].values())      # the socket filter's
    st = lst.stats()["lines"]
    assert sum(st[x]["bad_packets"] + st[x]["implausible"] for x in "AB") + dropped == 203
    assert dropped >= 150 and st["B"]["implausible"] >= 1
    table = pa.Table.from_batches(got).drop_columns(["mold_seq", "line", "ts_recv"])
    assert table.equals(obook.bbo(day, workers=1).read_all())


def test_hot_listener_short_spin_before_poll_tables_equal(day):
    """Busy-polling a while after each datagram before sleeping changes nothing delivered."""
    import obook
    from obook._kernels import live_layout as L

    a, b, r = addresses()
    lst = HotListener(a, b, r, idle_timeout=10, retries=20, spin_us=200)
    with sending(day, a, b, r, rate=20_000, drop_b=0.05, seed=3):
        table = pa.Table.from_batches([bt for _t, bt in lst.table_batches()])
    assert lst.loop.S[L.S_SPIN_NS] == 200_000
    assert table.drop_columns(["mold_seq", "line", "ts_recv"]).equals(obook.bbo(day, workers=1).read_all())


def test_hot_listener_spinning_with_rests_sends_offline_orders_rests_counted(day):
    """A spinning loop that rests in ppoll() (as under --realtime) loses nothing and sends the
    offline replay's orders; its rests are counted."""
    from obook._kernels import live_layout as L

    mod = _example()
    offline = replay_orders(day, mod.JoinBid(), TICKERS, _risk())
    a, b, r = addresses()
    lst = HotListener(a, b, r, tables=(), strategy=mod.JoinBidFast, tickers=TICKERS, risk=_risk(), idle_timeout=10,
                      retries=20, spin=True, rest_us=300)
    with sending(day, a, b, r, rate=20_000, drop_a=0.05, seed=5):
        lst.run()
    assert lst.loop.S[L.S_REST_NS] == 300_000 and lst.loop.S[L.S_RESTS] > 0
    assert lst.stats()["records"] == 20_000 and lst.digest() == offline.digest()


def test_hot_listener_realtime_priority_out_of_range_names_it():
    from obook.live.hotpath import realtime

    with pytest.raises(ObookError, match="--realtime 500"):
        realtime(500)


def test_hot_listener_realtime_refused_obook_error_before_the_lines_open(monkeypatch):
    import os

    def refused(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refused)
    a, b = addresses(2)
    with pytest.raises(ObookError, match="^realtime=5: cannot run at that SCHED_FIFO priority"):
        HotListener(a, b, None, tables=(), realtime=5)
    for address in (a, b):          # not bound: free for another listener
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(address)


def test_check_realtime_leaves_the_calling_thread_as_it_was():
    """Allowed or refused on this machine, the probe runs in a thread of its own."""
    import os

    from obook.live.hotpath import check_realtime

    before = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
    try:
        check_realtime(7)
    except ObookError as e:
        assert str(e).startswith("--realtime 7: cannot run at that SCHED_FIFO priority"), e
    assert (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) == before


def test_prefault_maps_pages_writable_contents_kept():
    import resource

    from obook.live.hotpath import prefault

    fresh = np.zeros(1 << 22, np.uint8)
    full = np.arange(1 << 20, dtype=np.int64)
    prefault((fresh, (full, 3)))
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    fresh[::4096] = 1
    after = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    assert after - before <= 1 and (full == np.arange(1 << 20)).all()


def test_loop_clock_rate_measured_against_the_clock_between_anchors():
    """The loop's cycle-counter rate comes from two anchors 0.2 s or more apart."""
    from obook._kernels import live_layout as L
    from obook._kernels.live_loop import anchor
    from obook.live.hotpath import _libc_functions

    S, ts, fns = np.zeros(L.S_WIDTH, np.int64), np.zeros(2, np.int64), _libc_functions()
    anchor(S, fns, ts)
    assert S[L.S_CAL_NS] == S[L.S_BASE_NS] and S[L.S_MULT] == 0
    S[L.S_CAL_NS] -= 500_000_000                # a reference 0.5 s and 1.5e9 cycles ago: 1/3 ns a cycle
    S[L.S_CAL_CYC] -= 1_500_000_000
    anchor(S, fns, ts)
    assert abs(S[L.S_MULT] - (1 << 24) / 3) < (1 << 24) * 0.01


def test_hot_listener_table_writer_a_ring_behind_is_reported_loop_goes_on(day, monkeypatch):
    from obook._kernels import live_layout as L
    from obook.live import hotpath

    monkeypatch.setattr(hotpath, "RECORD_BITS", 12)      # 4,096 messages kept for the writer
    a, b, r = addresses()
    lst = HotListener(a, b, r, tables=(), idle_timeout=10, retries=20)
    lst.loop.S[L.S_TABLES] = 1                          # a table writer that never reads
    with sending(day, a, b, r, rate=20_000, seed=1):
        lst.run()
    st = lst.stats()
    assert st["records"] == 20_000 and st["ended"]       # the loop went on
    assert st["tables_stopped_before"] == 1             # it read nothing
    source = hotpath.RingSource(lst.loop, lambda: True)
    with pytest.raises(ObookError, match=r"table writer fell .* behind .* stop before message 1 "):
        source.readinto(bytearray(1 << 16))


def test_sender_schedule_same_for_a_seed_drops_reorder_and_b_delay(day):
    from obook.live.send import Sender, SendOptions, read_messages

    msgs = read_messages(day)

    def schedule(seed):
        s = Sender(msgs, SendOptions(*addresses(3), drop_a=0.1, drop_b=0.2, reorder=0.05, delay_b=0.001,
                                     rate=1000, seed=seed))
        try:
            return s.schedule(), s.stats
        finally:
            s.close()

    (one, st1), (two, _), (three, _) = schedule(1), schedule(1), schedule(2)
    for x, y in zip(one[0] + one[1], two[0] + two[1]):
        assert np.array_equal(x, y)
    assert not np.array_equal(one[1].pkt, three[1].pkt)
    pkt, line, due = one[1]
    assert (np.diff(due) >= 0).all()
    sent = pkt >= 0
    for ln, p in ((0, 0.1), (1, 0.2)):
        k = pkt[sent & (line == ln)]
        assert len(set(k)) == len(k) and 0.5 * p < 1 - len(k) / len(one[0].off) < 1.5 * p
    assert st1["reordered"] > 0
    b_first = due[(line == 1) & sent].min() - due[(line == 0) & sent].min()
    assert b_first >= 1_000_000                                  # B one millisecond behind A


def _scripted_venue(server, script, heard, close=False, ready=None):
    """Accept one session, answer its login with ``script[0]``, send each later part of
    ``script`` 0.3 s apart (once ``ready`` is set: the listener is made, its loop not yet
    run), then note the kinds of the client's packets until it closes (``close``: close the
    connection at the script's end instead)."""
    conn, _ = server.accept()
    with conn:
        conn.settimeout(10)
        framer = soupbin.Framer()
        while not framer.feed(conn.recv(4096)):
            pass
        for k, part in enumerate(script):
            conn.sendall(part)
            if k == 0 and ready is not None:
                ready.wait(60)
            time.sleep(0.3)
        heard.append(b"|")                  # the script's end
        if close:
            return
        with __import__("contextlib").suppress(OSError):
            while data := conn.recv(4096):
                heard += [kind for kind, _ in framer.feed(data)]


def _loop_against(script, close=False, says="nothing received"):
    """A listener with a quiet strategy, logged in to a scripted venue, run until 2 s past the
    script's end without a datagram (or the error ``says``; 2 s: room for a loaded machine's
    stalls); (the loop's state, what the venue heard after its script)."""
    from obook._kernels import live_layout as L

    heard = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        ready = threading.Event()
        th = threading.Thread(target=_scripted_venue, args=(server, script, heard, close, ready), daemon=True)
        th.start()
        a, b = addresses(2)
        gw = Gateway(*server.getsockname(), heartbeat=0.05)
        try:    # (the listener's first turn, as it loads, would read what came meanwhile on a busy machine)
            lst = HotListener(a, b, None, tables=(), strategy=lambda top: None, gateway=gw,
                              idle_timeout=0.3 * len(script) + 2.0)
        finally:
            ready.set()
        with pytest.raises(ObookError, match=says.format(venue=re.escape(gw.where))):
            lst.run()
        S = lst.loop.S.copy()
        lst.close()
        th.join(timeout=10)
    return int(S[L.S_VENUE_ENDED]), heard[heard.index(b"|") + 1:], S, lst.loop


def test_hot_loop_venue_packet_of_the_longest_length_read_session_goes_on():
    """SoupBinTCP's longest packet (2 + 65535 bytes: a debug packet here) fits the loop's
    buffer for the venue: read and passed over, the session goes on with its heartbeats."""
    ended, heard, _, _ = _loop_against([soupbin.accepted("OBOOK", 1), soupbin.packet(b"+", b"x" * 65534)])
    assert ended == 0
    assert heard.count(soupbin.CLIENT_HEARTBEAT) >= 3 and heard[-1] == soupbin.LOGOUT


def test_hot_loop_venue_bytes_read_with_the_login_answer_framed_from_there():
    """A packet begun in the segment of the Login Accepted (read by the gateway's login) is
    completed by the loop: the End of Session after it is seen."""
    debug = soupbin.packet(b"+", b"x" * 100)
    ended, _, _, _ = _loop_against([soupbin.accepted("OBOOK", 1) + debug[:10], debug[10:] + soupbin.packet(b"Z")])
    assert ended == 1


def test_hot_loop_venue_closing_the_connection_warned_at_once_loop_sleeps_on(caplog):
    """The venue closes the session 0.3 s after the login: one warning naming it, while the
    loop listens (no order is ever sent, so not at the next order), and the loop goes on
    listening, asleep in poll() (the closed socket, readable for ever, is out of it)."""
    from obook._kernels import live_layout as L

    ended, _, S, loop = _loop_against([soupbin.accepted("OBOOK", 1)], close=True)
    said = [r for r in caplog.records if r.name == "obook" and "closed the connection" in r.getMessage()]
    assert ended == 1 and len(said) == 1
    assert said[0].getMessage().startswith(f"venue {loop.venue.where} closed the connection")
    assert loop.venue_closed_at == 0 and S[L.S_HAS_VENUE] == 0
    assert S[L.S_POLLS] < 1000           # a poll() a few ms, not a busy poll on the closed socket


def test_hot_loop_venue_packet_of_length_0_error_naming_venue_after_the_answers_before_it():
    """As the gateway's: a packet of length 0 (no type byte) is an error naming the venue,
    after the packets before it were read."""
    from obook._kernels import live_layout as L

    answer = soupbin.packet(soupbin.SEQUENCED, ouch.canceled(1, 0, 123))
    _, _, S, _ = _loop_against([soupbin.accepted("OBOOK", 1), answer + b"\x00\x00"],
                               says=r"^venue {venue}: SoupBinTCP packet of length 0 \(no type byte\)$")
    assert S[L.S_ANSWERS] == 1


class _ResetVenue:
    """A logged-in venue's side of the gateway over TCP whose venue resets the connection
    (``reset()``: SO_LINGER 0, then close: an RST, not a FIN)."""

    heartbeat, timeout, ended, where = 10.0, 0.1, False, "reset:1"

    def __init__(self):
        from obook.live.soupbin import Framer

        self.framer = Framer()              # nothing read beyond the login's answer
        with socket.create_server(("127.0.0.1", 0)) as server:
            self.sock = socket.create_connection(server.getsockname())
            self.peer, _ = server.accept()
        self.sock.setblocking(False)

    def reset(self):
        self.peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.peer.close()
        time.sleep(0.05)                    # (the RST arrives)


def _loop_with(venue):
    from obook.live.hotpath import HotLoop

    socks = []
    for addr in addresses(2):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(addr)
        s.setblocking(False)
        socks.append(s)
    return HotLoop(socks, None, venue=venue, slice_s=0.0), socks


def test_hot_loop_venue_resetting_the_connection_is_its_close_at_the_first_read(caplog):
    """A read of the venue failing with ECONNRESET is the venue closing the connection, at
    that read (not at a later one's end of file): one warning naming it, the loop goes on."""
    from obook._kernels import live_layout as L

    venue = _ResetVenue()
    loop, socks = _loop_with(venue)
    try:
        venue.reset()
        assert loop.call() == L.RUN_SLICE                     # one turn: the venue read once
        said = [r.getMessage() for r in caplog.records if r.name == "obook" and "closed the connection" in r.getMessage()]
        assert said == ["venue reset:1 closed the connection: the orders from here on are not sent "
                        "(the listener goes on)"]
        assert loop.venue_closed_at == 0 and loop.S[L.S_VENUE_ENDED] == 1 and loop.S[L.S_HAS_VENUE] == 0
        assert loop.call() == L.RUN_SLICE and len(said) == 1
    finally:
        venue.sock.close()
        for s in socks:
            s.close()


def test_send_all_broken_connection_fails_at_once_not_retried_as_a_full_buffer():
    """send() failing with ECONNRESET / EPIPE is the connection lost at once (its errno kept
    for the error), not a full buffer retried a million times."""
    import errno

    from obook._kernels import live_layout as L
    from obook._kernels.live_loop import _send_all

    venue = _ResetVenue()
    loop, socks = _loop_with(venue)
    try:
        venue.reset()
        assert not _send_all(loop.fns, venue.sock.fileno(), np.zeros(64, np.uint8), 64, loop.S)
        assert loop.S[L.S_SEND_BLOCKED] == 0
        assert loop.S[L.S_SEND_ERRNO] in (errno.ECONNRESET, errno.EPIPE)
        err = loop._venue_lost()
        assert re.fullmatch(r"venue reset:1: connection lost \(an order could not be sent: "
                            r"(Connection reset by peer|Broken pipe)\)", str(err))
    finally:
        venue.sock.close()
        for s in socks:
            s.close()


def test_send_all_full_buffer_waited_out_every_byte_arrives():
    """send() failing with EAGAIN (the socket's buffer full) is waited out: counted as
    blocked, and every byte reaches a venue that reads slowly."""
    from obook._kernels import live_layout as L
    from obook._kernels.live_loop import _send_all
    from obook.live.hotpath import _libc_functions

    with socket.create_server(("127.0.0.1", 0)) as server:
        near = socket.create_connection(server.getsockname())
        far, _ = server.accept()
    near.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    near.setblocking(False)
    got = bytearray()

    def read():
        time.sleep(0.05)
        while data := far.recv(65536):
            got.extend(data)

    th = threading.Thread(target=read, daemon=True)
    th.start()
    data = np.arange(1 << 22, dtype=np.int64).astype(np.uint8)
    S = np.zeros(L.S_WIDTH, np.int64)
    try:
        assert _send_all(_libc_functions(), near.fileno(), data, len(data), S)
        near.shutdown(socket.SHUT_WR)
        th.join(timeout=10)
        assert S[L.S_SEND_BLOCKED] > 0 and S[L.S_SEND_ERRNO] == 0 and bytes(got) == data.tobytes()
    finally:
        near.close()
        far.close()


def test_live_layout_retry_errnos_are_the_platforms_eagain_ewouldblock_eintr():
    import errno

    from obook._kernels import live_layout as L

    assert sorted(L.RETRY_ERRNOS) == sorted((errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR))
