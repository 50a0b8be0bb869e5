"""Line arbitration: first copy wins, each message once in order, gaps per line and on both."""

import random

import pytest

from obook.errors import FeedError
from obook.feeds.mold.arbiter import Arbiter
from obook.feeds.mold.packets import END_OF_SESSION, encode_packet

S = b"SESSION001"


def _msg(seq):
    return b"M%07d" % seq


def _pkt(seq, n, session=S):
    return encode_packet(session, seq, [_msg(s) for s in range(seq, seq + n)])


def test_arbiter_one_line_in_order_delivers_each_message_once():
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 3), 10)
    arb.packet(0, _pkt(4, 2), 11)
    got = arb.pop()
    assert got == [(s, 0, 10 if s < 4 else 11, _msg(s)) for s in range(1, 6)]
    assert arb.pop() == [] and arb.next_seq == 6 and arb.missing() == []
    assert arb.stats[0]["packets"] == 2 and arb.stats[0]["messages"] == 5


def test_arbiter_gap_on_a_filled_from_b():
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 2), 1)
    arb.packet(0, _pkt(5, 2), 2)           # A lost 3, 4
    assert [m[0] for m in arb.pop()] == [1, 2]
    assert arb.missing() == [(3, 2)]
    arb.packet(1, _pkt(1, 2), 3)           # B: duplicates
    arb.packet(1, _pkt(3, 2), 4)           # B fills 3, 4
    got = arb.pop()
    assert [(m[0], m[1], m[2]) for m in got] == [(3, 1, 4), (4, 1, 4), (5, 0, 2), (6, 0, 2)]
    arb.packet(1, _pkt(5, 2), 5)
    a, b = arb.stats
    assert a["gaps"] == 1 and a["gap_messages"] == 2 and a["recovered_other_line"] == 2
    assert b["duplicates"] == 4 and b["gaps"] == 0 and arb.missing() == []


def test_arbiter_gap_on_both_lines_skipped_is_recorded():
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 1), 1)
    arb.packet(1, _pkt(1, 1), 1)
    arb.packet(0, _pkt(4, 1), 2)
    arb.packet(1, _pkt(4, 1), 3)
    assert arb.missing() == [(2, 2)]
    assert [m[0] for m in arb.pop()] == [1]
    arb.skip(2, 2, 99)
    assert arb.gaps == [(2, 2, 99)] and [m[0] for m in arb.pop()] == [4]
    arb.packet(0, _pkt(2, 1), 5)           # too late: dropped
    assert arb.pop() == [] and arb.stats[0]["duplicates"] == 1


def test_arbiter_skip_keeps_received_messages_inside_range():
    arb = Arbiter(S)
    arb.packet(0, _pkt(3, 1), 1)
    arb.packet(0, _pkt(6, 1), 1)
    arb.skip(1, 6, 7)
    assert arb.gaps == [(1, 2, 7), (4, 2, 7)]
    assert [m[0] for m in arb.pop()] == [3, 6]


def test_arbiter_heartbeat_reveals_gap_and_end_of_session_ends():
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 2), 1)
    arb.packet(0, encode_packet(S, 5, []), 2)          # heartbeat: next expected is 5
    assert arb.missing() == [(3, 2)] and arb.stats[0]["heartbeats"] == 1
    arb.packet(1, _pkt(3, 2), 3)
    arb.packet(1, encode_packet(S, 5, [], count=END_OF_SESSION), 4)
    assert [m[0] for m in arb.pop()] == [1, 2, 3, 4]
    assert arb.ended and arb.missing() == []


def test_arbiter_end_of_session_waits_for_gap():
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 1), 1)
    arb.packet(0, encode_packet(S, 3, [], count=END_OF_SESSION), 2)
    assert not arb.ended and arb.missing() == [(2, 1)]
    arb.packet(1, _pkt(2, 1), 3)
    assert arb.ended


def test_arbiter_bad_packets_counted_or_raised_in_strict():
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 2)[:-3], 1)                       # truncated
    arb.packet(1, _pkt(1, 1, session=b"OTHER"), 1)          # wrong session
    arb.packet(0, _pkt(1, 2), 2)
    arb.packet(0, _pkt(1, 1), 3)                            # backwards
    assert [m[0] for m in arb.pop()] == [1, 2]
    assert arb.stats[0]["bad_packets"] == 1 and arb.stats[1]["wrong_session"] == 1
    assert arb.stats[0]["backwards"] == 1 and arb.stats[0]["duplicates"] == 1
    strict = Arbiter(S, strict=True)
    with pytest.raises(FeedError, match="truncated"):
        strict.packet(0, b"short", 1)


def test_arbiter_stale_first_packet_outvoted_and_counted():
    arb = Arbiter()
    arb.packet(1, _pkt(7, 1, session=b"STALE"), 1)       # a packet of another session first
    arb.packet(0, _pkt(1, 1, session=b"XYZ"), 2)
    arb.packet(1, _pkt(1, 1, session=b"XYZ"), 2)         # the same header again: not yet chosen
    assert arb.session is None and arb.pop() == []
    arb.packet(0, _pkt(2, 1, session=b"XYZ"), 3)         # a second distinct header chooses XYZ
    assert arb.session == b"XYZ       " and [m[0] for m in arb.pop()] == [1, 2]
    arb.packet(1, _pkt(8, 1, session=b"STALE"), 4)
    assert arb.stats[1]["wrong_session"] == 2 and arb.stats[1]["duplicates"] == 1 and not arb.missing()


def test_arbiter_requested_answer_counts_recovered_request():
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 1), 1)
    arb.packet(0, _pkt(4, 1), 1)
    arb.packet(1, _pkt(4, 1), 1)
    arb.packet(0, _pkt(2, 2), 5, requested=True)
    assert [m[0] for m in arb.pop()] == [1, 2, 3, 4]
    assert arb.stats[0]["recovered_request"] == 2 and arb.stats[0]["backwards"] == 0
    assert arb.stats[0]["gap_messages"] == 2 and arb.stats[0]["recovered_other_line"] == 0


def test_arbiter_reorder_within_line_not_lost():
    arb = Arbiter(S, lines=1)
    arb.packet(0, _pkt(3, 2), 1)
    arb.packet(0, _pkt(1, 2), 2)
    assert [m[0] for m in arb.pop()] == [1, 2, 3, 4]
    assert arb.stats[0]["backwards"] == 0 and arb.stats[0]["gaps"] == 1


@pytest.mark.parametrize("b_first", [False, True])
def test_arbiter_late_copy_filling_own_gap_neither_backwards_nor_recovered(b_first):
    """Line A sends 1-2, 5-6, then 3-4 late (reordered); line B's copy of 3-4 comes before or
    after A's. Either way A received every number: one gap of 2, nothing recovered from B,
    nothing backwards; a repeat of 5-6 on A is backwards."""
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 2), 1)
    arb.packet(0, _pkt(5, 2), 2)
    if b_first:
        arb.packet(1, _pkt(3, 2), 3)
    arb.packet(0, _pkt(3, 2), 4)
    if not b_first:
        arb.packet(1, _pkt(3, 2), 5)
    a = arb.stats[0]
    assert (a["gaps"], a["gap_messages"], a["recovered_other_line"], a["backwards"]) == (1, 2, 0, 0)
    arb.packet(0, _pkt(5, 2), 6)
    assert a["backwards"] == 1 and [m[0] for m in arb.pop()] == [1, 2, 3, 4, 5, 6]


def test_arbiter_line_starting_late_counts_the_numbers_before_it_as_its_gap():
    """Line B's first packet is number 3, after A delivered 1-2: B's sequence jumped from 1
    (a gap of 2, recovered from A), wherever the delivery stood."""
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 2), 1)
    arb.packet(1, _pkt(3, 2), 2)
    b = arb.stats[1]
    assert (b["gaps"], b["gap_messages"], b["recovered_other_line"]) == (1, 2, 2)


def _reference(lines, n):
    """What must be delivered: every number some line holds, once, first arrival wins."""
    first = {}
    for arrival, (line, seq, _ts) in enumerate(lines):
        first.setdefault(seq, (arrival, line))
    return [s for s in range(1, n + 1) if s in first], first


@pytest.mark.parametrize("seed", range(20))
def test_arbiter_random_lines_match_reference(seed):
    rnd = random.Random(seed)
    n = 300
    packets = []          # (line, first_seq, count)
    for line in (0, 1):
        s = 1
        while s <= n:
            k = min(rnd.randint(1, 5), n - s + 1)
            if rnd.random() > 0.15:                 # dropped
                packets.append((line, s, k))
                if rnd.random() < 0.05:             # duplicated
                    packets.append((line, s, k))
            s += k
    rnd.shuffle(packets)
    packets.sort(key=lambda p: p[1] + rnd.randint(0, 20))   # mostly in order, some reordering
    arb = Arbiter(S)
    arrivals = []
    out = []
    for ts, (line, s, k) in enumerate(packets):
        arb.packet(line, _pkt(s, k), ts)
        arrivals.extend((line, q, ts) for q in range(s, s + k))
        out.extend(arb.pop())
    arb.packet(0, encode_packet(S, n + 1, [], count=END_OF_SESSION), len(packets))
    for a, c in arb.missing():
        arb.skip(a, c, -1)
    out.extend(arb.pop())
    want, first = _reference(arrivals, n)
    assert [m[0] for m in out] == want
    for seq, line, ts, msg in out:
        assert msg == _msg(seq)
        assert (line, ts) == (arrivals[first[seq][0]][0], arrivals[first[seq][0]][2])
    lost = {s for s in range(1, n + 1) if s not in first}
    assert {s for a, c, _ in arb.gaps for s in range(a, a + c)} == lost
    assert arb.ended
    total = sum(st["messages"] for st in arb.stats)
    assert total == len(arrivals) == len(out) + sum(st["duplicates"] for st in arb.stats)


def test_arbiter_forged_far_number_quarantined_day_delivered_skip_drops_nothing():
    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 2), 1)
    arb.packet(1, _pkt(10**12, 1), 2)                     # one forged packet, far ahead
    arb.packet(1, encode_packet(S, 10**12, [], count=0), 2)  # and a forged heartbeat
    assert arb.missing() == [] and arb.high == 3
    arb.packet(0, _pkt(3, 3), 3)
    for first, count in arb.missing():                    # --on-gap skip gives up nothing
        arb.skip(first, count, 4)
    assert [m[0] for m in arb.pop()] == [1, 2, 3, 4, 5] and arb.gaps == []
    assert arb.stats[1]["implausible"] == 2 and arb.stats[0]["duplicates"] == 0


def test_arbiter_quarantine_bounded_and_agreeing_jump_taken_in():
    from obook.feeds.mold.sessions import MAX_QUARANTINE, WINDOW

    arb = Arbiter(S)
    arb.packet(0, _pkt(1, 1), 1)
    for k in range(5 * MAX_QUARANTINE):                   # far numbers, none near another
        arb.packet(1, _pkt(10**12 + k * 2 * WINDOW, 1), 2)
    assert len(arb._quarantine.held) == MAX_QUARANTINE
    assert arb.stats[1]["implausible"] == 5 * MAX_QUARANTINE
    far = 5 * WINDOW                                      # a real jump: packets keep agreeing
    arb.packet(0, _pkt(far, 2), 3)
    arb.packet(0, _pkt(far + 2, 2), 4)
    assert arb.missing() == [] and arb.stats[0]["implausible"] == 2     # two agree: not yet
    arb.packet(0, _pkt(far + 4, 2), 5)
    assert arb.missing() == [(2, far - 2)] and arb.stats[0]["implausible"] == 0


def test_arbiter_session_longer_than_10_is_obook_error_not_never_matched():
    from obook.errors import ObookError

    with pytest.raises(ObookError, match="at most 10 characters, not 11"):
        Arbiter(b"ABCDEFGHIJK")
    assert Arbiter("OBOOK").session == b"OBOOK     "
