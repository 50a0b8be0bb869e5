"""SoupBinTCP framing and sessions, OUCH 5.0 messages, the venue and the gateway."""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
from collections import Counter

import pytest

from obook.errors import ObookError
from obook.live import ouch, soupbin
from obook.live.gateway import Gateway
from obook.live.venue import Venue, read_log
from obook.live.venue_orders import SessionOrders


def test_soupbin_framer_byte_by_byte_returns_whole_packets():
    stream = soupbin.login("user", "pw") + soupbin.packet(b"U", b"hello") + soupbin.packet(b"R")
    f = soupbin.Framer()
    got = []
    for i in range(len(stream)):
        got += f.feed(stream[i:i + 1])
    assert got == [(b"L", stream[3:49]), (b"U", b"hello"), (b"R", b"")]
    assert f.pending == 0
    assert soupbin.parse_login(got[0][1]) == ("user", "pw", "", 1)


def test_soupbin_zero_length_packet_raises():
    with pytest.raises(ObookError, match="length 0"):
        soupbin.Framer().feed(b"\x00\x00")


def test_ouch_messages_have_spec_sizes_and_round_trip():
    enter = ouch.Order("enter", "AAPL", "S", 300, 1_234_500, 7)
    replace = ouch.Order("replace", "", "", 200, 1_234_600, 8, 7)
    cancel = ouch.Order("cancel", "", "", 0, 0, 8)
    sizes = [len(ouch.encode(o)) for o in (enter, replace, cancel)]
    assert sizes == [47, 40, 9]
    m = ouch.encode(enter)
    # Enter Order: type O, UserRefNum u32, side, quantity u32, symbol 8, price u64 ...
    assert m[:1] == b"O" and struct.unpack_from(">I", m, 1)[0] == 7 and m[5:6] == b"S"
    assert struct.unpack_from(">I", m, 6)[0] == 300 and m[10:18] == b"AAPL    "
    assert struct.unpack_from(">Q", m, 18)[0] == 1_234_500
    for o in (enter, replace, cancel):
        back = ouch.decode(ouch.encode(o))
        assert (back.kind, back.qty, back.price, back.ref, back.orig) == (o.kind, o.qty, o.price, o.ref, o.orig)
    session = SessionOrders([10], Counter())
    for o, t in ((enter, b"A"), (replace, b"U"), (cancel, b"C")):
        r = session.answer(ouch.encode(o), 123456789, 1)
        assert r[:1] == t and ouch.response_stamp(r) == (123456789, o.ref)


def test_ouch_decode_wrong_size_raises():
    with pytest.raises(ObookError, match="OUCH message"):
        ouch.decode(b"X\x00\x00")


@pytest.fixture
def venue(tmp_path):
    v = Venue(log_path=tmp_path / "venue.log", username="obook", password="secret", heartbeat=0.05)
    th = threading.Thread(target=v.serve, kwargs={"timeout": 30}, daemon=True)
    th.start()
    yield v
    v.stop()
    th.join(timeout=10)
    assert not th.is_alive()


def test_gateway_venue_login_orders_heartbeats_logout(venue, tmp_path):
    gw = Gateway(*venue.address, username="obook", password="secret", heartbeat=0.05)
    orders = [ouch.Order("enter", "AAA", "B", 100, 10_000, 1), ouch.Order("replace", "AAA", "B", 100, 10_100, 2, 1),
              ouch.Order("cancel", "AAA", "B", 0, 0, 2)]
    for o in orders:
        gw.send(o)
    time.sleep(0.2)
    gw.poll()                      # answers read, a client heartbeat sent
    gw.close()
    assert gw.answers == 3 and set(gw.venue_ns) == {1, 2}
    assert all(gw.venue_ns[r] >= gw.sent_ns[r] - 1_000_000 for r in gw.venue_ns)  # one clock
    deadline = time.monotonic() + 5
    while venue.ended_sessions < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert venue.ended_sessions == 1
    assert [m for _, m in venue.messages] == [ouch.encode(o) for o in orders]
    assert [m for _, m in read_log(tmp_path / "venue.log")] == [ouch.encode(o) for o in orders]
    assert venue.digest() == gw.digest()


def test_gateway_venue_rejecting_orders_counted_first_one_said(venue):
    gw = Gateway(*venue.address, username="obook", password="secret")
    gw.send(ouch.Order("enter", "AAA", "B", 100, 10_000, 1))
    gw.send(ouch.Order("enter", "AAA", "B", 100, 0, 2))         # no price: invalid price
    gw.send(ouch.Order("cancel", "AAA", "B", 0, 0, 7))          # an order not live: other reason
    gw.close()
    assert gw.answers == 3 and gw.rejected == 2 and gw.first_rejected == (2, ouch.INVALID_PRICE)
    assert gw.rejections() == (f"venue {gw.where}: rejected 2 order message(s); the first, UserRefNum 2: "
                               "invalid price (0x001D)")
    assert sum(venue.rejected.values()) == 2


def test_gateway_venue_rejecting_nothing_says_nothing(venue):
    gw = Gateway(*venue.address, username="obook", password="secret")
    gw.send(ouch.Order("enter", "AAA", "B", 100, 10_000, 1))
    gw.close()
    assert (gw.answers, gw.rejected, gw.first_rejected, gw.rejections()) == (1, 0, None, None)


def test_gateway_wrong_user_rejected(venue):
    with pytest.raises(ObookError, match="rejected"):
        Gateway(*venue.address, username="other", timeout=2)


def test_venue_sends_server_heartbeats_to_an_idle_client(venue):
    s = socket.create_connection(venue.address, timeout=5)
    s.sendall(soupbin.login("obook", "secret"))
    f = soupbin.Framer()
    kinds = []
    deadline = time.monotonic() + 5
    while kinds.count(b"H") < 2 and time.monotonic() < deadline:
        kinds += [k for k, _ in f.feed(s.recv(4096))]
    s.close()
    assert kinds[0] == b"A" and kinds.count(b"H") >= 2


def test_gateway_no_venue_error_says_to_start_one_there():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ObookError) as e:
        Gateway("127.0.0.1", port, timeout=1)
    assert str(e.value) == (f"venue 127.0.0.1:{port}: cannot connect: connection refused (no venue listens there: "
                            f"start one first, obook venue --listen 127.0.0.1:{port})")


@pytest.mark.parametrize("fields, says", [
    (dict(qty=0), "qty 0 is not an integer from 1 to 4294967295"),
    (dict(qty=1 << 32), "qty 4294967296 is not an integer"),
    (dict(price=1 << 63), "price 9223372036854775808 is not an integer"),
    (dict(side="b"), "side 'b' is not one of B, S, T, E"),
    (dict(symbol=""), "symbol '' is not 1 to 8 ASCII characters"),
    (dict(symbol="ÄPFEL"), "symbol 'ÄPFEL' is not 1 to 8 ASCII characters"),
    (dict(tif=b"00"), "tif b'00' is not one byte: OUCH's TimeInForce, b'0' (day) or b'3' (IOC)"),
    (dict(tif="IOC"), "tif 'IOC' is not one byte: OUCH's TimeInForce, b'0' (day) or b'3' (IOC)"),
    (dict(kind="replace", orig=-1), "orig -1 is not an integer"),
])
def test_ouch_encode_order_it_cannot_carry_obook_error(fields, says):
    order = ouch.Order(**{**dict(kind="enter", symbol="AAA", side="B", qty=100, price=10_000, ref=1), **fields})
    with pytest.raises(ObookError, match=re.escape(says)):
        ouch.encode(order)


def test_ouch_encode_numpy_integers_and_every_side_round_trip():
    import numpy as np

    for side in ouch.SIDES:
        o = ouch.Order("enter", "AAA", side, np.int64(100), np.uint64(10_000), np.int32(7))
        back = ouch.decode(ouch.encode(o))
        assert (back.side, back.qty, back.price, back.ref) == (side, 100, 10_000, 7)


def _fake_venue(behave):
    """A venue that reads the login, then ``behave(conn)``; its port."""
    srv = socket.create_server(("127.0.0.1", 0))

    def run():
        with srv:
            conn, _ = srv.accept()
            with conn:
                conn.recv(100)
                behave(conn)
    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1]


def _reset(conn):
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.mark.parametrize("behave, says", [(lambda c: None, "closed the connection before answering the login"),
                                          (_reset, "connection lost: Connection reset by peer")])
def test_gateway_venue_gone_during_login_obook_error_at_once(behave, says):
    port = _fake_venue(behave)
    with pytest.raises(ObookError, match=f"^venue 127.0.0.1:{port}.*{says}"):    # (not the login's timeout)
        Gateway("127.0.0.1", port, timeout=5)


def test_gateway_login_field_soupbin_cannot_carry_obook_error_before_connecting():
    with pytest.raises(ObookError, match=r"^password: 10 printable ASCII characters at most"):
        Gateway("127.0.0.1", 1, password="éé")


@pytest.mark.parametrize("reason, says", [(b"A", "not authorized (A)"), (b"S", "session not available (S)"),
                                          (b"?", "reason '?'")])
def test_gateway_login_rejected_obook_error_names_venue_username_reason(reason, says):
    port = _fake_venue(lambda conn: conn.sendall(soupbin.rejected(reason)))
    with pytest.raises(ObookError, match=f"^venue 127.0.0.1:{port} rejected the login of 'trader': {re.escape(says)}$"):
        Gateway("127.0.0.1", port, username="trader", timeout=5)


@pytest.mark.parametrize("answer, says", [(soupbin.packet(soupbin.SEQUENCED, b"A123"), "OUCH answer of type b'A' and 4 bytes"),
                                          (b"\x00\x00", "SoupBinTCP packet of length 0")])
def test_gateway_unreadable_answer_obook_error_naming_venue(answer, says):
    def behave(conn):
        conn.sendall(soupbin.accepted("S", 1))
        conn.recv(100)
        conn.sendall(answer)
        time.sleep(1)
    port = _fake_venue(behave)
    gw = Gateway("127.0.0.1", port, timeout=5)
    gw.send(ouch.Order("enter", "AAA", "B", 100, 10_000, 1))
    with pytest.raises(ObookError, match=f"^venue 127.0.0.1:{port}: {re.escape(says)}"):
        for _ in range(100):
            gw.poll()
            time.sleep(0.01)
    gw.close(0)


def test_gateway_venue_closing_the_session_warned_once_orders_after_it_counted_not_sent(caplog):
    def behave(conn):
        conn.sendall(soupbin.accepted("S", 1))
    port = _fake_venue(behave)
    gw = Gateway("127.0.0.1", port, timeout=5)
    for _ in range(200):
        gw.poll()
        if gw.ended:
            break
        time.sleep(0.01)
    order = ouch.Order("enter", "AAA", "B", 100, 10_000, 1)
    gw.send(order)
    gw.send(order)
    gw.poll()
    gw.close(0)
    said = [r.getMessage() for r in caplog.records if r.name == "obook"]
    assert said == [f"venue 127.0.0.1:{port} closed the connection: the orders from here on are not sent "
                    "(the listener goes on)"]
    assert gw.unsent == 2 and gw.sent == []


def test_gateway_packet_of_length_0_behind_an_answer_in_one_read_obook_error_at_once():
    def behave(conn):
        conn.sendall(soupbin.accepted("S", 1))
        conn.recv(100)
        conn.sendall(soupbin.packet(soupbin.SEQUENCED, ouch.canceled(1, 0, 123)) + b"\x00\x00")
        time.sleep(2)
    port = _fake_venue(behave)
    gw = Gateway("127.0.0.1", port, timeout=5)
    gw.send(ouch.Order("enter", "AAA", "B", 100, 10_000, 1))
    with pytest.raises(ObookError, match=f"^venue 127.0.0.1:{port}: SoupBinTCP packet of length 0"):
        for _ in range(100):        # (the venue sends nothing more: the error is raised with the answer's read)
            gw.poll()
            time.sleep(0.01)
    assert gw.answers == 1 and gw.venue_ns == {1: 123}
    gw.close(0)
