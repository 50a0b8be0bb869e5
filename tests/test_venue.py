"""The simulated venue as a hostile client sees it: accounts, malformed packets, many idle
connections, a client that stops reading, logins that never come (loopback only)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time

import pytest

from obook.errors import ObookError
from obook.live import ouch, soupbin
from obook.live.accounts import read_accounts
from obook.live.gateway import Gateway
from obook.live.venue import Venue

from cli_support import cli_error
from live_support import addresses, process


@contextlib.contextmanager
def serving(**options):
    v = Venue(heartbeat=30, **options)
    th = threading.Thread(target=v.serve, kwargs={"timeout": 60}, daemon=True)
    th.start()
    try:
        yield v
    finally:
        v.stop()
        th.join(timeout=10)
        assert not th.is_alive()


def _recv_packets(sock, until, limit=5.0):
    """Packets read until ``until(kinds)`` or the peer closed; the kinds and whether it closed."""
    f, kinds, end = soupbin.Framer(), [], time.monotonic() + limit
    sock.settimeout(limit)
    while not until(kinds) and time.monotonic() < end:
        data = sock.recv(4096)
        if not data:
            return kinds, True
        kinds += [k for k, _ in f.feed(data)]
    return kinds, False


def _closed_by_peer(sock, limit=5.0) -> bool:
    return _recv_packets(sock, lambda kinds: False, limit)[1]


def _order(ref):
    return soupbin.packet(soupbin.UNSEQUENCED, ouch.encode(ouch.Order("enter", "AAA", "B", 100, 10_000, ref)))


def _answered(v, ref=1) -> bool:
    """A fresh client logs in, sends an order and gets its answer."""
    gw = Gateway(*v.address, username="trader", password="secret", timeout=5)
    gw.send(ouch.Order("enter", "AAA", "B", 100, 10_000, ref))
    gw.close()
    return gw.answers == 1


def test_venue_wrong_password_gets_login_rejected_and_is_closed():
    with serving(accounts={"trader": "secret"}) as v:
        with socket.create_connection(v.address, timeout=5) as s:
            s.sendall(soupbin.login("trader", "guess"))
            f = soupbin.Framer()
            data = s.recv(4096)
            assert f.feed(data) == [(soupbin.REJECTED, b"A")]
            assert _closed_by_peer(s)
        with pytest.raises(ObookError, match="rejected"):
            Gateway(*v.address, username="nobody", password="secret", timeout=2)
        assert _answered(v)
    assert v.closed["login rejected"] == 2 and len(v.messages) == 1


@pytest.mark.parametrize("bad", [b"\x00\x06Lshort", b"\x00\x00", b"\xff\xffU" + b"x" * 300,
                                 _order(9), soupbin.login("trader", "secret") + soupbin.packet(b"Q")])
def test_venue_malformed_packet_closes_only_its_session(bad):
    with serving(accounts={"trader": "secret"}) as v:
        good = Gateway(*v.address, username="trader", password="secret", timeout=5)
        with socket.create_connection(v.address, timeout=5) as s:
            s.sendall(bad)
            assert _closed_by_peer(s)
        good.send(ouch.Order("enter", "AAA", "B", 100, 10_000, 1))
        good.close()
        assert good.answers == 1 and not good.ended
        assert _answered(v, 2)
    assert v.closed["protocol error"] == 1 and len(v.messages) == 2


def test_venue_packets_before_a_malformed_one_are_served():
    with serving() as v, socket.create_connection(v.address, timeout=5) as s:
        s.sendall(soupbin.login("x", "") + _order(1) + b"\x00\x00")
        kinds, closed = _recv_packets(s, lambda k: False)
        assert kinds == [soupbin.ACCEPTED, soupbin.SEQUENCED] and closed
    assert len(v.messages) == 1


def test_venue_1100_idle_connections_served_beside_them():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2600:                   # this process holds both ends of every connection
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    idle = []
    try:
        with serving(accounts={"trader": "secret"}, max_connections=1200) as v:
            for _ in range(1100):
                idle.append(socket.create_connection(v.address, timeout=5))
            assert _answered(v)
            assert len(v.clients) >= 1100 and not v.closed      # (the logout may not be read yet)
    finally:
        for s in idle:
            s.close()


def test_venue_connections_beyond_the_limit_closed_as_accepted():
    with serving(max_connections=3) as v:
        socks = [socket.create_connection(v.address, timeout=5) for _ in range(5)]
        for s in socks[:3]:
            s.sendall(soupbin.login("a", ""))
            assert _recv_packets(s, lambda k: soupbin.ACCEPTED in k)[0] == [soupbin.ACCEPTED]
        assert all(_closed_by_peer(s) for s in socks[3:])
        for s in socks:
            s.close()
    assert v.closed["over the connection limit"] == 2


def test_venue_connection_without_login_closed_after_login_timeout():
    with serving(login_timeout=0.1) as v, socket.create_connection(v.address, timeout=5) as s:
        assert _closed_by_peer(s)
    assert v.closed["login timeout"] == 1


def test_venue_client_that_stops_reading_disconnected_others_served():
    with serving(accounts={"trader": "secret"}, max_output=64 << 10) as v:
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(v.address)
        slow.sendall(soupbin.login("trader", "secret"))
        burst = b"".join(_order(i) for i in range(1, 2001))
        slow.settimeout(0.5)
        sent_at = time.monotonic()
        with contextlib.suppress(OSError):          # reset once the venue drops it
            while v.closed["slow reader"] == 0 and time.monotonic() - sent_at < 30:
                slow.sendall(burst)
                assert _answered(v)              # served while the slow one is behind
        slow.close()
        assert v.closed["slow reader"] == 1
        assert _answered(v)


def test_read_accounts_file_and_its_errors(tmp_path):
    f = tmp_path / "accounts"
    f.write_text("# desk\ntrader:secret\n\nbob: pw \n")
    assert read_accounts(f) == {"trader": "secret", "bob": "pw"}
    for text, reason in (("trader\n", "username:password"), ("a:b\na:c\n", "twice"),
                         ("trader:secret\nbob:\n", "line 2: an empty password for 'bob'"),
                         ("bob:   \n", "line 1: an empty password for 'bob'"),
                         ("toolongname:x\n", "longer than 6"), ("# none\n", "no accounts")):
        f.write_text(text)
        with pytest.raises(ObookError, match=reason):
            read_accounts(f)
    f.write_bytes(b"tr\xe9der:x\n")
    with pytest.raises(ObookError, match="not ASCII"):
        read_accounts(f)


def test_venue_account_with_empty_password_refused():
    for kw in ({"accounts": {"trader": "secret", "bob": ""}}, {"username": "bob"}, {"username": "bob", "password": "  "}):
        with pytest.raises(ObookError, match="an empty password for 'bob'"):
            Venue(**kw)


def test_cli_venue_bad_options_one_line_error(tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = [(["--log", tmp_path / "missing" / "venue.log", "--listen", "127.0.0.1:0"], "cannot write the log"),
                 (["--listen", "127.0.0.1:99999"], "'127.0.0.1:99999': a port is 0 to 65535"),
                 (["--listen", f"127.0.0.1:{port}"], f"cannot listen on 127.0.0.1:{port}: Address already in use\n"),
                 (["--listen", "0.0.0.0:0"], "needs --username/--password or --accounts"),
                 (["--listen", "127.0.0.1:0", "--password", "x"], "--password needs --username"),
                 (["--listen", "127.0.0.1:0", "--username", "abcdefg"], "longer than 6"),
                 (["--listen", "0.0.0.0:0", "--username", "abc"], "an empty password for 'abc' (give --password, "
                  "or the environment's OBOOK_VENUE_PASSWORD)\n"),
                 (["--listen", "127.0.0.1:0", "--accounts", tmp_path / "none"], "cannot read the accounts")]
        for args, reason in cases:
            assert reason in cli_error(capsys, "venue", *args)


@contextlib.contextmanager
def _cli_venue(*args, listen="127.0.0.1:0"):
    with process("venue", "--listen", listen, *args) as vp:
        line = vp.stderr.readline().decode()
        m = re.match(r"venue on \[?([\d.:a-f]+?)\]?:(\d+)$", line.strip())
        assert m, line
        yield vp, (m.group(1), int(m.group(2)))


def test_cli_venue_accounts_rejects_others_listen_sends_credentials(tmp_path):
    accounts = tmp_path / "accounts"
    accounts.write_text("trader:secret\n")
    strategy = tmp_path / "idle.py"
    strategy.write_text("def quiet(top):\n    return None\n")
    (_, a), (_, b) = addresses(2)
    with _cli_venue("--accounts", accounts, "--sessions", "1") as (vp, (host, port)):
        with pytest.raises(ObookError, match="rejected"):
            Gateway(host, port, username="trader", password="guess", timeout=5)
        common = ["listen", "--line-a", f"127.0.0.1:{a}", "--line-b", f"127.0.0.1:{b}", "--request", "",
                  "--strategy", f"{strategy}:quiet", "--venue", f"{host}:{port}", "--idle-timeout", "0.2"]
        wrong = subprocess.run([sys.executable, "-m", "obook", *common, "--venue-username", "trader"],
                               capture_output=True, text=True, timeout=300)
        assert wrong.returncode == 1 and f"error: venue {host}:{port} rejected the login of 'trader': not authorized (A)" in wrong.stderr
        right = subprocess.run([sys.executable, "-m", "obook", *common, "--venue-username", "trader"],
                               capture_output=True, text=True, timeout=300,
                               env={**__import__("os").environ, "OBOOK_VENUE_PASSWORD": "secret"})
        assert "rejected" not in right.stderr, right.stderr
        assert vp.wait(timeout=20) == 0          # the listener's session logged in, then out
        err = vp.stderr.read().decode()
    assert "closed: login rejected 2" in err


@contextlib.contextmanager
def _kernel_stamps_on():
    """A UDP socket with kernel receive stamps, open for the block, once a datagram to it came
    back stamped: Linux turns stamping on for the whole machine a moment after the first
    socket asks (deferred work, late under load), and a segment arriving before that has no
    stamp (the venue then stamps it as it reads it)."""
    from obook.live.net import recv_stamped, stamp_on

    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", 0))
        assert stamp_on(u)
        for _ in range(500):
            u.sendto(b"x", u.getsockname())
            if recv_stamped(u)[1] is not None:
                break
            time.sleep(0.01)
        yield
    finally:
        u.close()


def _orders_read_late() -> list:
    """Orders 1, then 2 and 3 in one segment 30 ms later, all read only after both arrived:
    the venue's (stamp, message) rows."""
    v = Venue(heartbeat=30)
    try:
        with socket.create_connection(v.address, timeout=5) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(soupbin.login("x", ""))
            end = time.monotonic() + 5
            while not any(c.logged_in for c in v.clients.values()):
                assert time.monotonic() < end
                v.step(0.05)
            s.sendall(_order(1))
            time.sleep(0.03)
            s.sendall(_order(2) + _order(3))            # one segment
            time.sleep(0.01)
            while len(v.messages) < 3:                  # all read only now
                assert time.monotonic() < end
                v.step(0.05)
    finally:
        v.close()
    return v.messages


def test_venue_orders_read_late_keep_their_own_segments_stamps():
    """Orders sent 30 ms apart and read together: each keeps the kernel stamp of the TCP
    segment that carried it; two orders in one segment share that segment's stamp."""
    with _kernel_stamps_on():
        for _ in range(3):
            (t1, _), (t2, _), (t3, _) = _orders_read_late()
            if t1 < t2:     # else the kernel gave the first segment no stamp (the venue stamped
                break       # it as it read it, after the others arrived): a loaded machine; again
    assert t2 - t1 >= 25_000_000 and t3 == t2


def test_venue_orders_read_together_answered_in_one_write(monkeypatch):
    """Five orders in one segment: five answers, in order, written by one send after the reads."""
    writes = []
    flush = Venue._flush
    monkeypatch.setattr(Venue, "_flush", lambda self, c: (writes.append(bytes(c.out)), flush(self, c)))
    v = Venue(heartbeat=30)
    try:
        with socket.create_connection(v.address, timeout=5) as s:
            s.sendall(soupbin.login("x", ""))
            end = time.monotonic() + 5
            while not any(c.logged_in for c in v.clients.values()):
                assert time.monotonic() < end
                v.step(0.05)
            before = len(writes)
            s.sendall(b"".join(_order(r) for r in range(1, 6)))
            while len(v.messages) < 5:
                assert time.monotonic() < end
                v.step(0.05)
    finally:
        v.close()
    assert len(writes) - before == 1
    answers = [p for k, p in soupbin.Framer().feed(writes[-1])]
    assert [ouch.response_stamp(p)[1] for p in answers] == [1, 2, 3, 4, 5]


def test_venue_spinning_serves_orders_and_sleeps_when_idle():
    """With spin_us the venue answers as without it; a step with nothing to serve says so."""
    with serving(spin_us=2000) as v:
        for ref in range(1, 4):
            assert _answered(v, ref)
        assert len(v.messages) == 3
    assert v.spin_ns == 2_000_000
    idle = Venue(heartbeat=30, spin_us=2000)
    try:
        assert idle.step(0) is False
    finally:
        idle.close()


@pytest.mark.parametrize("spin_us", [-1.0, float("nan"), float("inf")])
def test_venue_spin_us_not_a_duration_refused(spin_us):
    with pytest.raises(ObookError, match="spin_us"):
        Venue(spin_us=spin_us)


def test_cli_venue_realtime_runs_under_sched_fifo_or_says_why_not():
    """--realtime 10: the venue runs under SCHED_FIFO (root or CAP_SYS_NICE), or exits with
    a one-line error naming the option."""
    with process("venue", "--listen", "127.0.0.1:0", "--realtime", "10") as vp:
        line = vp.stderr.readline().decode()
        if line.startswith("venue on"):
            assert os.sched_getscheduler(vp.pid) == os.SCHED_FIFO
            assert os.sched_getparam(vp.pid).sched_priority == 10
        else:
            assert vp.wait(timeout=20) == 1
            assert line.startswith("error: --realtime 10: cannot run at that SCHED_FIFO priority"), line


def _enter(ref, **fields):
    o = {**dict(ref=ref, side=b"B", qty=100, symbol=b"AAA     ", price=10_000), **fields}
    return ouch.ENTER.pack(b"O", o["ref"], o["side"], o["qty"], o["symbol"], o["price"], b"0", b"Y", b"A", b"N", b"N",
                           b"x" * 14, 0)


def _answers(v, *msgs, login=True):
    """The answers (OUCH messages) to ``msgs`` sent on one session, and whether it was closed."""
    with socket.create_connection(v.address, timeout=5) as s:
        s.sendall((soupbin.login("x", "") if login else b"") + b"".join(soupbin.packet(soupbin.UNSEQUENCED, m)
                                                                        for m in msgs))
        closed, f, got = False, soupbin.Framer(0xFFFF), []
        s.settimeout(5)
        end = time.monotonic() + 5
        while len(got) < len(msgs) and time.monotonic() < end:
            data = s.recv(4096)
            if not data:
                closed = True
                break
            got += [p for k, p in f.feed(data) if k == soupbin.SEQUENCED]
        if not closed:
            s.settimeout(0.3)
            with contextlib.suppress(TimeoutError):
                closed = s.recv(4096) == b""
        return got, closed


def test_venue_order_fields_out_of_range_rejected_with_reason_session_goes_on():
    cases = [(_enter(1, qty=0), ouch.INVALID_QUANTITY), (_enter(2, side=b"Z"), ouch.INVALID_SIDE),
             (_enter(3, side=b"\xff"), ouch.INVALID_SIDE), (_enter(4, symbol=b"\xff\xfe\x00abcde"), ouch.INVALID_SYMBOL),
             (_enter(5, symbol=b" " * 8), ouch.INVALID_SYMBOL), (_enter(6, price=0), ouch.INVALID_PRICE),
             (_enter(7, price=(1 << 64) - 1), ouch.INVALID_PRICE)]
    with serving() as v:
        got, closed = _answers(v, *(m for m, _ in cases), _enter(8))
    assert not closed and len(got) == len(cases) + 1
    for (_, code), answer in zip(cases, got):
        assert answer[:1] == b"J" and len(answer) == ouch.REJECTED.size
        assert ouch.REJECTED.unpack(answer)[3] == code
    assert [ouch.response_stamp(a)[1] for a in got] == list(range(1, 9))
    assert got[-1][:1] == b"A" and v.orders == 8
    assert v.rejected == {"invalid quantity": 1, "invalid side": 2, "invalid symbol": 2, "invalid price": 2}


def test_venue_userrefnum_not_increasing_or_order_not_live_rejected():
    replace = ouch.encode(ouch.Order("replace", qty=50, price=10_100, ref=9, orig=4))
    cancel = ouch.encode(ouch.Order("cancel", ref=4))
    with serving() as v:
        got, closed = _answers(v, _enter(5), _enter(5), _enter(3), replace, cancel)
    assert not closed and [a[:1] for a in got] == [b"A", b"J", b"J", b"J", b"J"]
    assert v.rejected == {"UserRefNum not above the last": 2, "replace of an order not live": 1,
                          "cancel of an order not live": 1}


def test_venue_replace_and_cancel_follow_the_live_order():
    msgs = [_enter(1, side=b"S", symbol=b"BBB     "), ouch.encode(ouch.Order("replace", qty=80, price=10_100, ref=2, orig=1)),
            ouch.encode(ouch.Order("cancel", ref=1)), ouch.encode(ouch.Order("cancel", ref=2, qty=30)),
            ouch.encode(ouch.Order("cancel", ref=2, qty=30)), ouch.encode(ouch.Order("cancel", ref=2))]
    with serving(max_live_orders=1) as v:
        got, closed = _answers(v, *msgs)
        assert _answers(v, _enter(1))[0][0][:1] == b"A"          # the first session's order canceled at its end
    assert not closed and [a[:1] for a in got] == [b"A", b"U", b"J", b"C", b"J", b"C"]
    _, _, orig, ref, side, qty, symbol, *_ = ouch.REPLACED.unpack(got[1])
    assert (orig, ref, side, qty, symbol) == (1, 2, b"S", 80, b"BBB     ")
    assert [ouch.CANCELED.unpack(a)[2:4] for a in (got[3], got[5])] == [(2, 50), (2, 30)]


def test_venue_live_orders_beyond_the_limit_rejected():
    with serving(max_live_orders=2) as v:
        got, _ = _answers(v, _enter(1), _enter(2), _enter(3))
    assert [a[:1] for a in got] == [b"A", b"A", b"J"] and v.rejected == {"too many live orders": 1}


@pytest.mark.parametrize("bad", [b"Q" + b"\0" * 20, b"", _enter(2)[:-3], _enter(2) + b"abcde"])
def test_venue_message_that_is_no_ouch_order_closes_its_session_after_the_answers(bad):
    with serving() as v:
        got, closed = _answers(v, _enter(1), bad, _enter(3))
        assert _answered(v)
    assert [a[:1] for a in got] == [b"A"] and closed
    assert v.closed == {"protocol error": 1} and v.orders == 2


def test_venue_keep_messages_false_keeps_none_same_digest():
    digests = []
    for keep in (True, False):
        with serving(keep_messages=keep) as v:
            _answers(v, _enter(1), _enter(2, qty=0))
        digests.append(v.digest())
        assert len(v.messages) == (2 if keep else 0) and v.orders == 2
    assert digests[0] == digests[1] == hashlib.sha256(_enter(1) + _enter(2, qty=0)).hexdigest()


def test_read_accounts_endless_file_refused(tmp_path):
    f = tmp_path / "accounts"
    f.write_bytes(b"trader:secret\n" * 80_000)
    with pytest.raises(ObookError, match="larger than 1048576 bytes"):
        read_accounts(f)


def test_venue_on_ipv6_loopback_serves_a_gateway():
    with serving(host="::1", accounts={"trader": "secret"}) as v:
        assert v.address[0] == "::1"
        assert _answered(v)


def test_cli_venue_ipv6_listen_and_listen_venue_in_brackets_log_in(tmp_path):
    strategy = tmp_path / "idle.py"
    strategy.write_text("def quiet(top):\n    return None\n")
    (_, a), (_, b) = addresses(2)
    with _cli_venue("--sessions", "1", listen="[::1]:0") as (vp, (host, port)):
        assert host == "::1"
        run = subprocess.run([sys.executable, "-m", "obook", "listen", "--line-a", f"127.0.0.1:{a}",
                              "--line-b", f"127.0.0.1:{b}", "--request", "", "--strategy", f"{strategy}:quiet",
                              "--venue", f"[::1]:{port}", "--idle-timeout", "0.2"],
                             capture_output=True, text=True, timeout=300)
        assert "nothing received" in run.stderr and "venue" not in run.stderr, run.stderr
        assert vp.wait(timeout=20) == 0          # the listener's session logged in, then out


def test_venue_silent_session_closed_after_idle_timeout_answers_delivered_first():
    with serving(idle_timeout=0.3) as v, socket.create_connection(v.address, timeout=5) as s:
        s.sendall(soupbin.login("trader", "secret") + _order(1))
        kinds, closed = _recv_packets(s, lambda kinds: False)     # then silent: no heartbeat
        assert kinds == [soupbin.ACCEPTED, soupbin.SEQUENCED] and closed
    assert v.closed["idle timeout"] == 1


def test_venue_session_sending_a_packet_a_byte_at_a_time_closed_after_idle_timeout():
    with serving(idle_timeout=0.3) as v, socket.create_connection(v.address, timeout=5) as s:
        s.sendall(soupbin.login("trader", "secret"))
        with contextlib.suppress(OSError):           # reset once the venue closed it
            for byte in _order(1) * 10:
                s.send(bytes([byte]))
                time.sleep(0.05)
                if v.closed["idle timeout"]:
                    break
    assert v.closed["idle timeout"] == 1


def test_venue_idle_timeout_not_a_duration_refused():
    with pytest.raises(ObookError, match="idle_timeout 0: a number of seconds above 0"):
        Venue(idle_timeout=0)


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_gateway_heartbeats_keep_a_quiet_session_past_venue_idle_timeout(loop):
    """Logged in, the gateway is quiet while the listener loads and while no order comes:
    its heartbeats (a thread's, then the loop's) keep the session until it logs out."""
    from obook.live.listener import Listener
    from obook.live.risk import RiskGate
    from obook.live.strategy import TickToTrade

    a, b = addresses(2)
    with serving(idle_timeout=0.5) as v:
        gw = Gateway(*v.address, heartbeat=0.05)
        with gw.heartbeats():
            time.sleep(0.8)
            lst = Listener(a, b, None, tick_to_trade=TickToTrade(lambda top: None, None, RiskGate(), gw),
                           idle_timeout=1.5, loop=loop)
        with pytest.raises(ObookError, match="nothing received for 1.5 s"):
            for _ in lst.table_batches():
                pass
        lst.close()
        deadline = time.monotonic() + 5
        while v.ended_sessions == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert v.ended_sessions == 1 and v.closed["idle timeout"] == 0, v.closed


def test_venue_host_name_with_only_an_ipv6_address_served_there(monkeypatch):
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kw):
        if host == "venue6.example":
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", 0, 0, 0))]
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with serving(host="venue6.example", accounts={"trader": "secret"}) as v:
        assert v.address[0] == "::1"
        assert _answered(v)


def test_venue_unknown_host_name_obook_error_naming_it():
    with pytest.raises(ObookError, match="^venue: unknown host 'no-such-host.invalid'"):
        Venue(host="no-such-host.invalid")


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_cli_listen_venue_closing_the_session_warned_at_once_and_in_the_report(tmp_path, loop):
    strategy = tmp_path / "idle.py"
    strategy.write_text("def quiet(top):\n    return None\n")
    (_, a), (_, b) = addresses(2)
    with _cli_venue("--sessions", "1", "--idle-timeout", "0.3") as (vp, (host, port)):
        run = subprocess.run([sys.executable, "-m", "obook", "listen", "--line-a", f"127.0.0.1:{a}",
                              "--line-b", f"127.0.0.1:{b}", "--request", "", "--strategy", f"{strategy}:quiet",
                              "--venue", f"{host}:{port}", "--idle-timeout", "3", "--loop", loop],
                             capture_output=True, text=True, timeout=300)
        assert vp.wait(timeout=20) == 0          # the session it closed was its one
    warning = f"venue {host}:{port} closed the connection: the orders from here on are not sent"
    assert run.stderr.count(warning) == 1, run.stderr
    assert run.stderr.index(warning) < run.stderr.index("\nlisten: ")       # while listening, before the report
    assert f"venue {host}:{port}: closed the connection; 0 orders after it not sent" in run.stderr


def test_venue_log_on_a_full_disk_obook_error_naming_the_log():
    v = Venue(heartbeat=30, log_path="/dev/full")
    failed = []

    def serve():
        try:
            v.serve(timeout=30)
        except BaseException as e:       # what ends the venue's serve(), as its CLI would see it
            failed.append(e)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    with contextlib.suppress(OSError):      # the venue stops: its end may reset the connection
        _answers(v, *(_enter(ref) for ref in range(1, 2000)))
    th.join(timeout=10)
    assert not th.is_alive()
    assert len(failed) == 1 and type(failed[0]) is ObookError
    assert str(failed[0]) == "venue: cannot write the log /dev/full: No space left on device"
    assert v.orders == 0        # the order whose line the log could not take is not counted
