"""The compiled live loop's arbitration (``obook._kernels.live_arb``) on hand-made datagrams,
compiled and as ``.py_func``: the session is given or chosen by a chain of packets (or by the
re-request server's answer), never by one stray packet; packets of other sessions are
counted in ``wrong_session`` and what is delivered is the day's session alone."""

from __future__ import annotations

import numpy as np
import pytest

from obook._kernels import live_arb as K
from obook._kernels import live_layout as L
from obook._kernels.mold import S_HEARTBEATS, S_PACKETS, S_WRONG_SESSION
from obook.feeds.mold.packets import END_OF_SESSION, encode_packet
from obook.live.hotpath import arbitration

PACKET = [pytest.param(K.packet, id="compiled"), pytest.param(K.packet.py_func, id="py_func")]
A, B, R = L.LINE_A, L.LINE_B, L.LINE_REQUEST


def _msg(seq: int, tag: bytes = b"M") -> bytes:
    return tag + b"%07d" % seq


def _day(session="OBOOK", n=30, per=3, tag=b"M"):
    """The day's packets, ``per`` messages each, numbered from 1."""
    return [encode_packet(session, s, [_msg(k, tag) for k in range(s, min(s + per, n + 1))])
            for s in range(1, n + 1, per)]


class Arb:
    """The arbitration's state and arrays as the loop has them (small rings)."""

    def __init__(self, packet, session: str | None = None):
        self.packet = packet
        self.S = np.zeros(L.S_WIDTH, np.int64)
        self.S[L.S_NEXT] = self.S[L.S_HIGH] = 1
        self.S[L.S_END] = -1
        if session is not None:
            raw = session.encode().ljust(10)
            self.S[L.S_SESSION_SET] = 1
            self.S[L.S_SESSION_HI] = int.from_bytes(raw[:8], "big", signed=True)
            self.S[L.S_SESSION_LO] = int.from_bytes(raw[8:], "big")
        self.arb = arbitration(np.zeros(1 << 16, np.uint8), np.zeros((4, 1 << 10), np.int64))
        self.stats = self.arb[2]

    def send(self, line: int, data: bytes, ts: int = 1) -> None:
        buf = np.zeros(L.DGRAM, np.uint8)
        buf[:len(data)] = np.frombuffer(data, np.uint8)
        self.packet(self.S, line, buf, len(data), ts, ts, self.arb)

    def delivered(self) -> list[bytes]:
        """The messages in the delivered ring, in order."""
        out = np.zeros(1 << 16, np.uint8)
        n, k = K.ring_take(self.S, self.arb[0], self.arb[1], out, 1 << 16)
        data, msgs, p = bytes(out[:n]), [], 0
        while p < n:
            size = int.from_bytes(data[p:p + 2], "big")
            msgs.append(data[p + 2:p + 2 + size])
            p += 2 + size
        assert len(msgs) == k
        return msgs

    def wrong(self) -> int:
        return int(self.stats[:, S_WRONG_SESSION].sum())


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_rogue_first_datagram_then_day_delivers_day_counts_rogue(packet):
    arb = Arb(packet)
    arb.send(A, encode_packet("STALE", 1, [_msg(1, b"X"), _msg(2, b"X")]))   # first, another session
    arb.send(B, encode_packet("STALE", 1, [_msg(1, b"X"), _msg(2, b"X")]))   # its copy: no chain
    assert arb.S[L.S_SESSION_SET] == 0 and arb.delivered() == []
    for p in _day():
        arb.send(A, p)
        arb.send(B, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 31)]
    assert arb.S[L.S_NEXT] == 31 and arb.wrong() == 2
    assert arb.stats[A, S_WRONG_SESSION] == arb.stats[B, S_WRONG_SESSION] == 1
    assert arb.S[L.S_CANDIDATES] == 0


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_given_session_drops_every_other_session_packet(packet):
    arb = Arb(packet, session="OBOOK")
    rogue = _day("STALE", tag=b"X")
    for p in rogue:
        arb.send(A, p)                    # a whole chained stream of another session
    for p in _day():
        arb.send(B, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 31)]
    assert arb.stats[A, S_WRONG_SESSION] == len(rogue) and arb.wrong() == len(rogue)


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_held_packets_of_chosen_session_delivered_in_order(packet):
    """The day's first packet arrives before the rogue's, the second after it: the first is
    held, the chain chooses the day, nothing is lost or repeated."""
    arb = Arb(packet)
    day = _day()
    arb.send(B, day[1])                   # packets 4..6 first (reordered)
    arb.send(A, encode_packet("STALE", 40, [_msg(40, b"X")]))
    arb.send(A, day[0])                   # 1..3 ends where 4..6 starts: chosen
    for p in day[2:]:
        arb.send(A, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 31)]
    assert arb.wrong() == 1 and arb.stats[A, S_PACKETS] == len(day) and arb.stats[B, S_PACKETS] == 1


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_stale_end_of_session_repeated_never_chosen(packet):
    """A finished session repeating its end of session (heartbeats only) does not end the
    day before it starts; the day's packets then choose the day."""
    arb = Arb(packet)
    eos = encode_packet("STALE", 500, [], count=END_OF_SESSION)
    for _ in range(20):
        arb.send(A, eos)
        arb.send(B, eos)
    assert arb.S[L.S_SESSION_SET] == 0 and arb.S[L.S_END] == -1
    cand = arb.arb[8]
    assert arb.S[L.S_CANDIDATES] == 1 and cand[0, L.C_PROBE_SEQ] == 500    # what a probe would ask below
    for p in _day():
        arb.send(A, p)
    arb.send(A, encode_packet("OBOOK", 31, [], count=END_OF_SESSION))
    assert arb.delivered() == [_msg(k) for k in range(1, 31)]
    assert arb.S[L.S_END] == 31 and arb.S[L.S_NEXT] == 31
    assert arb.stats[A, S_WRONG_SESSION] == arb.stats[B, S_WRONG_SESSION] == 20
    assert arb.stats[A, S_HEARTBEATS] == 1


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_heartbeats_only_session_chosen_by_probe_answer(packet):
    """Every data packet lost: the heartbeats' session is chosen when the re-request server
    answers the probe for it (on the request line), and its held heartbeats are taken."""
    arb = Arb(packet)
    arb.send(A, encode_packet("OBOOK", 31, [], count=END_OF_SESSION))
    arb.send(B, encode_packet("OBOOK", 31, [], count=END_OF_SESSION))
    arb.send(R, _day()[0])                # an answer before any probe: held, chooses nothing
    assert arb.S[L.S_SESSION_SET] == 0
    arb.arb[8][0, L.C_PROBED] = 1         # what the loop's probe marks when it asks
    for p in _day()[1:]:
        arb.send(R, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 31)]
    assert arb.S[L.S_END] == 31 and arb.wrong() == 0
    assert arb.stats[A, S_HEARTBEATS] == arb.stats[B, S_HEARTBEATS] == 1


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_bounds_many_sessions_and_packets_each_counted_once(packet):
    arb = Arb(packet)
    for i in range(L.CHOICE_SESSIONS + 3):               # one packet each of 11 sessions
        arb.send(A, encode_packet(f"S{i:04d}", 1, [_msg(1, b"X")]))
    assert arb.S[L.S_CANDIDATES] == L.CHOICE_SESSIONS and arb.wrong() == 3     # the least recent went
    last = f"S{L.CHOICE_SESSIONS + 2:04d}"
    for _ in range(L.CHOICE_HELD + 5):                   # one session repeating one packet
        arb.send(B, encode_packet(last, 1, [_msg(1, b"X")]))
    j = [bytes(int(h).to_bytes(8, "big", signed=True)) for h in arb.arb[8][:, L.C_HI]].index(last.encode().ljust(10)[:8])
    held = arb.arb[8][j]          # full: the oldest made room each time (line A's first)
    assert held[L.C_HELD] == L.CHOICE_HELD and held[L.C_DROPPED + A] == 1 and held[L.C_DROPPED + B] == 5
    assert arb.S[L.S_SESSION_SET] == 0
    for p in _day():
        arb.send(A, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 31)]
    assert arb.wrong() == L.CHOICE_SESSIONS + 3 + L.CHOICE_HELD + 5       # every rogue packet, once


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_packet_with_an_empty_message_counted_bad_other_line_delivers(packet):
    """A datagram of the session whose next message is empty (a spoofed or broken packet) is
    bad: dropped whole, and the other line's copy delivers the message."""
    from obook._kernels.mold import S_BAD

    arb = Arb(packet, session="OBOOK")
    day = _day()
    arb.send(A, day[0])
    arb.send(A, b"OBOOK     " + (4).to_bytes(8, "big") + (1).to_bytes(2, "big") + (0).to_bytes(2, "big"))
    for p in day[1:]:
        arb.send(B, p)
    assert arb.stats[A, S_BAD] == 1
    assert arb.delivered() == [_msg(k) for k in range(1, 31)]


def _missing(arb) -> list:
    out = np.zeros((16, 2), np.int64)
    n = K.missing(arb.S, arb.arb[5], out)
    return [tuple(r) for r in out[:n].tolist()]


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_forged_far_ahead_packet_held_aside_asks_for_nothing(packet):
    """A packet of the session numbered far past everything seen (a forged one) is held
    aside and counted implausible: the numbers below it are never asked for, and the day is
    delivered as it comes."""
    from obook._kernels.mold import S_IMPLAUSIBLE

    arb = Arb(packet, session="OBOOK")
    arb.S[L.S_WINDOW] = 100
    day = _day(n=60)
    for p in day[:5]:
        arb.send(A, p)
    arb.send(A, encode_packet("OBOOK", 999_999, [_msg(1, b"F")]))
    assert arb.stats[A, S_IMPLAUSIBLE] == 1 and arb.S[L.S_HIGH] == 16 and _missing(arb) == []
    for p in day[5:]:
        arb.send(B, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 61)]
    assert arb.S[L.S_HIGH] == 61 and _missing(arb) == [] and arb.S[L.S_Q_HELD] == 1


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_three_chained_far_packets_are_a_jump_taken(packet):
    """Three packets far ahead that chain are the feed's own jump: taken, and what lies
    between is asked for."""
    from obook._kernels.mold import S_IMPLAUSIBLE

    arb = Arb(packet, session="OBOOK")
    arb.S[L.S_WINDOW] = 100
    for p in _day(n=9):
        arb.send(A, p)
    far = [encode_packet("OBOOK", s, [_msg(k) for k in range(s, s + 3)]) for s in (500, 503, 506)]
    arb.send(A, far[0])
    arb.send(A, far[2])
    assert arb.S[L.S_HIGH] == 10 and arb.S[L.S_Q_HELD] == 2
    arb.send(A, far[1])                   # 500..502, 503..505, 506..508: a row of three
    assert arb.stats[A, S_IMPLAUSIBLE] == 0 and arb.S[L.S_Q_HELD] == 0
    assert arb.S[L.S_HIGH] == 509 and _missing(arb) == [(10, 490)]


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_held_far_packet_taken_when_the_numbers_reach_it(packet):
    from obook._kernels.mold import S_IMPLAUSIBLE

    arb = Arb(packet, session="OBOOK")
    arb.S[L.S_WINDOW] = 20
    day = _day(n=60)
    arb.send(A, day[0])                    # 1..3 seen
    arb.send(B, day[12])                   # 37..39: more than 20 past: held
    assert arb.stats[B, S_IMPLAUSIBLE] == 1 and arb.S[L.S_HIGH] == 4
    for p in day[1:12]:
        arb.send(A, p)                     # up to 36: 37 is within reach, taken
    assert arb.stats[B, S_IMPLAUSIBLE] == 0 and arb.S[L.S_Q_HELD] == 0
    for p in day[13:]:
        arb.send(A, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 61)]


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_forged_far_packet_held_before_the_session_is_chosen_not_taken(packet):
    """A forged number of the day's session that arrives before the session is chosen is
    held with its packets; when the day's packets choose the session it is counted
    implausible, not taken: nothing is asked for below it."""
    from obook._kernels.mold import S_IMPLAUSIBLE

    arb = Arb(packet)
    arb.S[L.S_WINDOW] = 100
    arb.send(A, encode_packet("OBOOK", 999_999, [_msg(1, b"F")]))
    day = _day(n=30)
    for p in day:
        arb.send(A, p)
    assert arb.S[L.S_SESSION_SET] == 1 and arb.stats[A, S_IMPLAUSIBLE] == 1
    assert arb.delivered() == [_msg(k) for k in range(1, 31)]
    assert arb.S[L.S_HIGH] == 31 and _missing(arb) == []


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_session_held_full_of_a_stray_number_still_chosen_by_the_day(packet):
    """A stray number of the day's session repeated until its held packets are full: the
    oldest make room, so the day's packets still chain and choose it at once."""
    from obook._kernels.mold import S_IMPLAUSIBLE

    arb = Arb(packet)
    for i in range(L.CHOICE_HELD + 10):
        arb.send(A if i % 2 else B, encode_packet("OBOOK", 999_999, [_msg(1, b"F")]))
    day = _day(n=30)
    arb.send(A, day[0])
    arb.send(A, day[1])
    assert arb.S[L.S_SESSION_SET] == 1
    for p in day[2:]:
        arb.send(A, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 31)] and _missing(arb) == []
    assert arb.stats[A, S_IMPLAUSIBLE] + arb.stats[B, S_IMPLAUSIBLE] == L.CHOICE_HELD - 1     # held, then dropped


@pytest.mark.parametrize("packet", PACKET)
def test_arbitration_end_of_session_below_messages_seen_counted_bad_day_delivered(packet):
    """An End of Session numbered below messages already seen (a forged one) is bad: counted
    and dropped; the session goes on to its own end."""
    from obook._kernels.mold import END_OF_SESSION, S_BAD

    arb = Arb(packet, session="OBOOK")
    day = _day(n=60)
    for p in day[:5]:
        arb.send(A, p)
    arb.send(B, b"OBOOK     " + (1).to_bytes(8, "big") + END_OF_SESSION.to_bytes(2, "big"))
    assert arb.stats[B, S_BAD] == 1 and arb.S[L.S_END] < 0
    for p in day[5:]:
        arb.send(A, p)
    assert arb.delivered() == [_msg(k) for k in range(1, 61)]
    arb.send(A, b"OBOOK     " + (61).to_bytes(8, "big") + END_OF_SESSION.to_bytes(2, "big"))
    assert arb.S[L.S_END] == 61 and arb.stats[A, S_BAD] == 0
