"""MoldUDP64 packets and re-requests: encode, decode, bad packets."""

import re
import struct

import pytest

from obook.errors import FeedError
from obook.feeds.mold.packets import (END_OF_SESSION, HEADER, check_session, decode_packet, decode_request,
                                      encode_packet, encode_request)


def _reference_packet(session, seq, messages):
    out = session.ljust(10) + struct.pack(">QH", seq, len(messages))
    for m in messages:
        out += struct.pack(">H", len(m)) + m
    return out


def test_encode_packet_messages_matches_reference_layout():
    msgs = [b"A" * 36, b"B", b"D" * 19]
    buf = encode_packet(b"SESS1", 42, msgs)
    assert buf == _reference_packet(b"SESS1", 42, msgs)
    pkt = decode_packet(memoryview(buf))
    assert (pkt.session, pkt.seq, pkt.count, pkt.messages) == (b"SESS1     ", 42, 3, msgs)


def test_encode_packet_heartbeat_and_end_of_session_are_headers_only():
    hb = decode_packet(encode_packet("S", 7, []))
    assert hb.heartbeat and hb.count == 0 and hb.seq == 7 and len(encode_packet("S", 7, [])) == HEADER
    end = decode_packet(encode_packet("S", 9, [], count=END_OF_SESSION))
    assert end.end_of_session and end.seq == 9 and end.messages == []


@pytest.mark.parametrize("cut", [0, 5, 19, 21, 30, 57])
def test_decode_packet_truncated_raises_feed_error(cut):
    buf = encode_packet(b"S", 1, [b"x" * 36, b"y" * 10])
    with pytest.raises(FeedError, match="truncated|header"):
        decode_packet(buf[:cut])


def test_decode_packet_trailing_bytes_raises():
    with pytest.raises(FeedError, match="after its 1 messages"):
        decode_packet(encode_packet(b"S", 1, [b"x"]) + b"zz")
    with pytest.raises(FeedError, match="heartbeat"):
        decode_packet(encode_packet(b"S", 1, []) + b"z")


def test_encode_packet_bad_arguments_raise_value_error_or_obook_error_for_the_session():
    from obook.errors import ObookError

    with pytest.raises(ObookError, match="at most 10 characters"):
        encode_packet(b"S" * 11, 1, [])
    with pytest.raises(ValueError):
        encode_packet(b"S", 1, [b"x"], count=END_OF_SESSION)
    with pytest.raises(ValueError):
        encode_packet(b"S", 1, [b"x" * 70000])


def test_request_roundtrip_and_bad_length():
    buf = encode_request(b"SESS", 1000, 25)
    assert buf == b"SESS      " + struct.pack(">QH", 1000, 25)
    assert decode_request(buf) == (b"SESS      ", 1000, 25)
    with pytest.raises(FeedError):
        decode_request(buf[:-1])
    with pytest.raises(ValueError):
        encode_request(b"S", 1, 0)


def test_decode_packet_empty_message_raises_naming_it():
    buf = encode_packet(b"S", 7, [b"x", b"", b"y"])
    with pytest.raises(FeedError, match=r"message 2 of 3 \(sequence 8\) is empty"):
        decode_packet(buf)


@pytest.mark.parametrize("session, says", [("", "is empty"), ("   ", "is blank"), (" A", "starts or ends with a space"),
                                           ("A ", "starts or ends with a space"), ("SESSIÖN", "is not ASCII text"),
                                           ("A\x00B", "holds a control character"), ("ABCDEFGHIJK", "has 11 characters"),
                                           (b"OBOOK", "must be text")])
def test_check_session_not_a_mold_name_is_obook_error_naming_the_option(session, says):
    from obook.errors import ObookError

    with pytest.raises(ObookError, match="^--session " + re.escape(repr(session))) as e:
        check_session(session, "--session")
    assert says in str(e.value)


@pytest.mark.parametrize("session", ["A", "OBOOK", "000012345A", "A B", "~!"])
def test_check_session_one_to_ten_printable_ascii_characters_is_given_back(session):
    assert check_session(session) == session
