"""A bad ITCH message inside a well-formed MoldUDP64 packet on a live line: the error names
what the user of the line knows (the line and its address, the MoldUDP64 session, the
message's sequence number) and the reason; a tolerant listener's count of skipped messages
names the lines."""

from __future__ import annotations

import re
import socket

import pytest

from itch_builder import ItchBuilder
from live_support import addresses, hostport, process
from obook.feeds.mold.packets import END_OF_SESSION, encode_packet


def _messages(bad: str) -> list[bytes]:
    """Five ITCH messages, the fourth bad (``zero``: an add of 0 shares; ``short``: an add
    cut to 20 bytes)."""
    b = ItchBuilder()
    b.system("O")
    b.directory(1, "AAA")
    b.add(1, ref=1, side="B", shares=100, price=10_000)
    if bad == "zero":
        b.add(1, ref=2, side="B", shares=0, price=10_000)
    else:
        b.raw("A", 20, locate=1)
    b.add(1, ref=3, side="S", shares=100, price=10_100)
    return [frame[2:] for frame in b.frames]


def _listen(bad: str, *options) -> tuple[int, str, tuple]:
    """``obook listen`` (no re-request server) fed on line B alone: sequence numbers 1-3,
    then 4-5 (4 the bad message), then the end of session. (exit code, stderr, line B)."""
    a, b = addresses(2)
    msgs = _messages(bad)
    with process("listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", "",
                 "--idle-timeout", "10", *options) as p:
        first = p.stderr.readline().decode()
        assert first.startswith("listening"), first
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(encode_packet("OBOOK", 1, msgs[:3]), b)
            s.sendto(encode_packet("OBOOK", 4, msgs[3:]), b)
            s.sendto(encode_packet("OBOOK", 6, [], count=END_OF_SESSION), b)
        _out, err = p.communicate(timeout=60)
    return p.returncode, first + err.decode(), b


@pytest.mark.parametrize("loop, tables", [("compiled", "bbo"), ("compiled", "none"), ("python", "bbo")])
def test_cli_listen_zero_share_add_error_names_line_session_sequence_number(loop, tables):
    code, err, b = _listen("zero", "--loop", loop, "--tables", tables)
    last = err.rstrip().splitlines()[-1]
    # the books in the compiled loop and the tables' replay both refuse it, in the same words
    assert code == 1 and last == (f"error: line B {hostport(b)}, MoldUDP64 session 'OBOOK': "
                                  "sequence number 4: zero-share add 2 (locate 1)"), err
    assert "<live>" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("loop, tables", [("compiled", "bbo"), ("compiled", "none"), ("python", "bbo")])
def test_cli_listen_malformed_message_error_names_line_session_sequence_number(loop, tables):
    code, err, b = _listen("short", "--loop", loop, "--tables", tables)
    assert code == 1 and err.rstrip().splitlines()[-1] == (
        f"error: line B {hostport(b)}, MoldUDP64 session 'OBOOK': sequence number 4: "
        "malformed frame: type 'A' needs 36 bytes, frame has 20"), err


@pytest.mark.parametrize("bad, reason", [("zero", "zero-share add"), ("short", "malformed frame")])
@pytest.mark.parametrize("loop, tables", [("compiled", "bbo"), ("compiled", "none"), ("python", "bbo")])
def test_cli_listen_on_gap_skip_bad_message_skipped_count_names_lines(loop, tables, bad, reason):
    code, err, b = _listen(bad, "--loop", loop, "--tables", tables, "--on-gap", "skip")
    assert code == 0, err
    assert f"skipped records: {reason}: 1" in err and "<live>" not in err, err
    assert f" and B {hostport(b)}: skipped records" in err, err


def test_message_error_from_re_request_names_server_session_sequence_number():
    from obook.errors import FeedError
    from obook.live.feed import message_error

    e = message_error("unknown order ref 9 (locate 2)", 7, 2,
                      [("239.1.1.1", 30001), ("239.1.1.2", 30002), ("10.0.0.5", 30003)], "NASDAQ")
    assert isinstance(e, FeedError) and (e.record, e.reason) == (7, "unknown order ref 9 (locate 2)")
    assert str(e) == ("the re-request server 10.0.0.5:30003, MoldUDP64 session 'NASDAQ': "
                      "sequence number 7: unknown order ref 9 (locate 2)")


def test_live_error_loop_error_naming_its_message_kept_as_it_is():
    """The compiled loop's own error reaches the tables' replay through its stream: it names
    the message by its sequence number already, no record number to look up."""
    from obook.live.feed import live_error, message_error

    lines = [("127.0.0.1", 31001), ("127.0.0.1", 31002), None]
    e = message_error("zero-share add", 4, 1, lines, "OBOOK")
    assert live_error(e, lambda record: (99, 0), lines, "OBOOK") is e


@pytest.mark.parametrize("option, value, says", [
    ("gap_wait", 1e300, "gap_wait must be a number from 0 to 1,000,000,000, not 1e+300"),
    ("gap_wait", float("nan"), "gap_wait must be a number from 0 to 1,000,000,000, not nan"),
    ("gap_wait", "1", "gap_wait must be a number from 0 to 1,000,000,000, not '1'"),
    ("request_timeout", 0, "request_timeout must be a number above 0 and at most 1,000,000,000, not 0"),
    ("retries", 10**20, "retries must be an integer from 0 to 1,000,000, not 100000000000000000000"),
    ("retries", 1.5, "retries must be an integer from 0 to 1,000,000, not 1.5 (a float)"),
    ("idle_timeout", 0, "idle_timeout must be a number above 0 and at most 1,000,000,000, not 0"),
    ("spin_us", -1, "spin_us must be a number from 0 to 1,000,000, not -1"),
    ("rcvbuf", -5, "rcvbuf must be an integer from 4,096 to 2,147,483,647, not -5"),
])
@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_listener_number_out_of_range_error_names_option(option, value, says, loop):
    from obook.errors import ObookError
    from obook.live.listener import Listener

    if loop == "python" and option in ("spin_us", "rcvbuf"):
        says = f"--{option.replace('_', '-')}: the compiled loop's option; the Python loop (--loop python) takes none"
    with pytest.raises(ObookError, match="^" + re.escape(says) + "$"):
        Listener(("127.0.0.1", 1), ("127.0.0.1", 2), loop=loop, **{option: value})


@pytest.mark.parametrize("option, value, says", [
    ("heartbeat", 1e300, "heartbeat must be a number from 0.01 to 1,000,000,000, not 1e+300"),
    ("spin_us", 1e300, "spin_us must be a number from 0 to 1,000,000, not 1e+300"),
    ("burst_us", -1, "burst_us must be a number from 0 to 1,000,000, not -1"),
    ("speed", -1, "speed must be a number of at least 0, not -1"),
    ("rate", float("inf"), "rate must be a number of at least 0, not inf"),
    ("drop_a", 2, "drop_a must be a number from 0 to 1, not 2"),
    ("linger", True, "linger must be a number from 0 to 1,000,000,000, not True"),
])
def test_send_options_number_out_of_range_error_names_option(option, value, says):
    from obook.errors import ObookError
    from obook.live.send import SendOptions

    with pytest.raises(ObookError, match="^" + re.escape(says) + "$"):
        SendOptions(("127.0.0.1", 1), ("127.0.0.1", 2), **{option: value})
