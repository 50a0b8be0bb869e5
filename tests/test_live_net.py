"""The lines' kernel socket filter: it keeps every datagram the live loop's header check
takes (a pure-Python reference of MoldUDP64's header) and drops garbage before it is queued,
counting it."""

from __future__ import annotations

import random
import socket
import struct
import sys
from pathlib import Path

import pytest
from numba import njit

from obook.feeds.mold.packets import END_OF_SESSION, encode_packet
from obook.live.net import kernel_drops, mold_filter

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="socket filters are Linux's")


def _well_formed(d: bytes) -> bool:
    """The live loop's header check, in plain Python: 20 header bytes, a sequence number
    from 1 below 2**63, an empty packet of exactly 20 bytes, else the blocks ending the datagram."""
    if len(d) < 20:
        return False
    seq, count = struct.unpack_from(">QH", d, 10)
    if seq < 1 or seq >= 1 << 63:
        return False
    if count in (0, END_OF_SESSION):
        return len(d) == 20
    q = 20
    for _ in range(count):
        if q + 2 > len(d):
            return False
        q += 2 + struct.unpack_from(">H", d, q)[0]
        if q > len(d):
            return False
    return q == len(d)


def _datagrams() -> list[bytes]:
    rng = random.Random(3)
    msgs = [bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 11, 36, 50)))) for _ in range(40)]
    out = [encode_packet("OBOOK", 1 + i, msgs[i:i + k]) for i in range(10) for k in (1, 2, 3, 5)]
    out += [encode_packet("OBOOK", 7, []), encode_packet("OBOOK", 9, [], count=END_OF_SESSION),
            encode_packet("OBOOK", 0, msgs[:2]), encode_packet("OBOOK", 1 << 63, msgs[:1]),
            encode_packet("OBOOK", 5, []) + b"x", encode_packet("OBOOK", 5, msgs[:3]) + b"xy",
            encode_packet("OBOOK", 5, msgs[:3])[:-1], bytes(20), b"", b"x" * 19]
    for p in list(out[:40]):
        for _ in range(3):                     # one byte changed in the header or the blocks
            q = bytearray(p)
            q[rng.randrange(len(q))] ^= 1 << rng.randrange(8)
            out.append(bytes(q))
    out += [bytes([i % 251]) * (20 + i % 200) for i in range(64)]          # the benchmark's flood
    out += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(200)]
    return out


def _through(filtered: bool, datagrams: list[bytes]) -> tuple[list[bytes], int | None]:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind(("127.0.0.1", 0))
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        if filtered:
            assert mold_filter(rx)
        for d in datagrams:
            tx.sendto(d, rx.getsockname())
        tx.sendto(encode_packet("END", 1, []), rx.getsockname())          # the last one: kept
        rx.settimeout(5)
        got = []
        while True:
            d = rx.recv(4096)
            if d == encode_packet("END", 1, []):
                break
            got.append(d)
        return got, kernel_drops(rx)
    finally:
        rx.close()
        tx.close()


def test_mold_filter_keeps_every_well_formed_datagram_drops_garbage_counted():
    datagrams = _datagrams()
    good = [d for d in datagrams if _well_formed(d)]
    assert len(good) >= 40 and len(datagrams) - len(good) >= 250
    got, drops = _through(True, datagrams)
    assert [d for d in got if _well_formed(d)] == good            # all of them, in order
    assert drops == len(datagrams) - len(got)
    flood = [bytes([i % 251]) * (20 + i % 200) for i in range(64)]
    assert sum(d in got for d in flood) <= 1                     # (a zero heartbeat of 20 bytes passes)
    assert len(got) - len(good) <= 0.2 * (len(datagrams) - len(good))   # the loop screens the few left


def test_mold_filter_unfiltered_socket_gets_all_drops_none():
    datagrams = _datagrams()
    got, drops = _through(False, datagrams)
    assert got == datagrams and drops == 0


@pytest.mark.parametrize("text, says", [("127.0.0.1:99999", "a port is 0 to 65535"), ("127.0.0.1:-1", "a port is 0"),
                                        ("nohost.invalid:3000", "unknown host"), ("127.0.0.1:x", "give host:port")])
def test_parse_address_bad_port_or_host_is_obook_error(text, says):
    from obook.errors import ObookError
    from obook.live.net import parse_address

    with pytest.raises(ObookError, match=says):
        parse_address(text, "--line-a")


def test_parse_address_host_name_resolved_port_alone_on_loopback():
    from obook.live.net import parse_address

    assert parse_address("localhost:3000") == ("127.0.0.1", 3000)
    assert parse_address("3000") == ("127.0.0.1", 3000)


def test_parse_address_ipv6_in_brackets_or_by_name_resolved():
    from obook.live.net import parse_address

    assert parse_address("[::1]:3000", "--venue") == ("::1", 3000)
    assert parse_address("[fe80::1]:0", "--listen") == ("fe80::1", 0)


def test_parse_address_name_with_only_an_ipv6_address_resolved_to_it(monkeypatch):
    from obook.live.net import parse_address

    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET6, socket.SOCK_STREAM, 6, "",
                                                                 ("::1", 0, 0, 0))])
    assert parse_address("venue6.example:3000", "--venue") == ("::1", 3000)


@pytest.mark.parametrize("text, says", [("::1:3000", r"an IPv6 address goes in brackets: \[::1\]:3000"),
                                        ("[::1]x", "give host:port or"), ("[::1]:x", "give host:port")])
def test_parse_address_ipv6_without_brackets_or_port_is_obook_error(text, says):
    from obook.errors import ObookError
    from obook.live.net import parse_address

    with pytest.raises(ObookError, match=says):
        parse_address(text, "--venue")


@pytest.mark.parametrize("command, option", [("listen", "--line-a"), ("listen", "--request"), ("send", "--line-b")])
def test_cli_udp_line_ipv6_one_line_error_ipv4_only(capsys, tmp_path, command, option):
    from cli_support import cli_error

    day = tmp_path / "day.itch"
    day.write_bytes(b"")
    err = cli_error(capsys, command, *([day] if command == "send" else []), option, "[::1]:31009")
    assert f"{option} '[::1]:31009': IPv4 only" in err


def test_udp_lines_given_as_ipv6_tuples_obook_error_ipv4_only():
    from obook.errors import ObookError
    from obook.live.feed import LiveFeed
    from obook.live.send import SendOptions

    with pytest.raises(ObookError, match="request=: IPv4 only"):
        LiveFeed(("127.0.0.1", 31011), ("127.0.0.1", 31012), ("::1", 31013))
    with pytest.raises(ObookError, match="line_b=: IPv4 only"):
        SendOptions(("127.0.0.1", 31011), ("::1", 31012))


@pytest.mark.parametrize("session, says", [("ABCDEFGHIJKL", "at most 10 characters"), ("SESSIÖN", "ASCII")])
def test_session_name_longer_than_mold_or_not_ascii_is_obook_error(session, says):
    from obook.errors import ObookError
    from obook.feeds.mold.packets import session_name

    with pytest.raises(ObookError, match=says):
        session_name(session)
    assert session_name("OBOOK") == b"OBOOK     "


@pytest.mark.parametrize("command", ["listen", "send"])
@pytest.mark.parametrize("session", ["", " OBOOK"])
def test_cli_session_no_mold_name_one_line_error_naming_the_option(capsys, tmp_path, command, session):
    from cli_support import cli_error

    day = tmp_path / "day.itch"
    day.write_bytes(b"")
    args = ([command, str(day)] if command == "send" else [command, "--request", "", "--idle-timeout", "1"]) + [
        "--line-a", "127.0.0.1:39043", "--line-b", "127.0.0.1:39044", "--session", session]
    err = cli_error(capsys, *args)
    assert err.startswith(f"error: --session {session!r} ") and "1 to 10 printable ASCII" in err


def test_python_listen_and_send_options_empty_session_is_obook_error_naming_it():
    from obook.errors import ObookError
    from obook.live import listen
    from obook.live.send import SendOptions

    with pytest.raises(ObookError, match="^session= '' is empty"):
        next(listen("127.0.0.1:39045", "127.0.0.1:39046", session="", idle_timeout=1))
    with pytest.raises(ObookError, match="^session= '' is empty"):
        SendOptions(("127.0.0.1", 39045), ("127.0.0.1", 39046), session="")


def test_live_sinks_refuse_a_place_they_cannot_use_or_would_mix_sessions_in(tmp_path):
    import pyarrow as pa

    from obook.errors import ObookError
    from obook.live.sinks import open_sinks

    schema = lambda t: pa.schema([("seq", pa.int64())])  # noqa: E731
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "bbo-00001.parquet").write_bytes(b"PAR1")
    for kind, where, says in (("parquet", "afile", "not a folder"), ("parquet", "afile/sub", "cannot write"),
                              ("parquet", "old", "another session"), ("arrow", "adir", "is a folder"),
                              ("duckdb", "adir", "is a folder"), ("duckdb", "afile", "cannot write")):
        with pytest.raises(ObookError, match=says):
            open_sinks(kind, tmp_path / where, ("bbo",), schema)


@pytest.mark.parametrize("seconds", ["0", "-1"])
def test_cli_listen_idle_timeout_not_above_zero_one_line_error(capsys, seconds):
    from cli_support import cli_error

    assert "give a number of seconds above 0" in cli_error(capsys, "listen", "--line-a", "127.0.0.1:39041",
                                                           "--line-b", "127.0.0.1:39042", "--idle-timeout", seconds)


@pytest.mark.parametrize("interface", ["1.2.3.4", "nohost"])
def test_sender_socket_interface_not_local_obook_error_naming_it(interface):
    from obook.errors import ObookError
    from obook.live.net import sender_socket

    with pytest.raises(ObookError, match=f"--interface '{interface}': not the IPv4 address of a local interface"):
        sender_socket(interface)


@pytest.mark.parametrize("command", ["listen", "send"])
@pytest.mark.parametrize("option, twin", [("--line-b", "--line-a"), ("--request", "--line-b")])
def test_cli_listen_two_places_one_address_one_line_error(capsys, tmp_path, command, option, twin):
    from cli_support import cli_error
    from live_support import addresses, hostport

    from obook.gen.itch import write_itch

    a, b, r = addresses()
    given = {"--line-a": hostport(a), "--line-b": hostport(b), "--request": hostport(r)}
    given[option] = given[twin]
    if command == "send":
        write_itch(tmp_path / "day.itch", 200, 2)
    args = [tmp_path / "day.itch", "--linger", "0"] if command == "send" else ["--idle-timeout", "0.2"]
    err = cli_error(capsys, command, *(x for kv in given.items() for x in kv), *args)
    assert f"{option} {given[twin]} is {twin}'s address too" in err


@pytest.mark.parametrize(("fmt", "said"), [("csv", "a csv feed"), ("pitch", "a pitch feed"), ("sse", "an sse feed")])
def test_cli_send_day_of_another_format_one_line_error_naming_it(capsys, tmp_path, fmt, said):
    from cli_support import cli_error
    from cli_support import cli_run as run

    day = tmp_path / f"day.{'log' if fmt == 'sse' else fmt}"
    assert run(capsys, "gen", fmt, day, "-n", "300")[0] == 0
    err = cli_error(capsys, "send", day, "--line-a", "127.0.0.1:39061", "--line-b", "127.0.0.1:39062",
                    "--linger", "0")
    assert err == f"error: {day}: {said}; obook send sends Nasdaq ITCH 5.0 days (BinaryFILE)\n"


@pytest.mark.parametrize("where, says", [("adir", "is a folder"), ("nodir/lat.parquet", "no folder")])
def test_cli_listen_latency_output_unwritable_one_line_error_before_listening(capsys, tmp_path, where, says):
    from cli_support import cli_error

    (tmp_path / "adir").mkdir()
    err = cli_error(capsys, "listen", "--line-a", "127.0.0.1:39041", "--line-b", "127.0.0.1:39042",
                    "--latency-output", tmp_path / where, "--idle-timeout", "0.2")
    assert f"--latency-output {tmp_path / where}: {says}" in err


def test_cli_listen_rcvbuf_past_an_int_usage_error_no_traceback(capsys):
    from cli_support import cli_run

    code, err = cli_run(capsys, "listen", "--rcvbuf", 1 << 40, "--idle-timeout", "0.2")
    assert code == 2 and "--rcvbuf" in err and "Traceback" not in err, err


def test_cli_listen_parquet_nothing_received_no_gaps_file_lines_say_nothing(capsys, tmp_path):
    from cli_support import cli_run
    from live_support import addresses, hostport

    a, b, r = addresses()
    code, err = cli_run(capsys, "listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", hostport(r),
                        "--to", "parquet", "-o", tmp_path / "out", "--idle-timeout", "0.3")
    assert code == 1 and "nothing received" in err, err
    assert (tmp_path / "out" / "line_stats.parquet").exists()
    assert not (tmp_path / "out" / "gaps.parquet").exists()        # nothing was lost
    assert "  line A: nothing\n" in err and "  line B: nothing\n" in err, err


def test_cli_send_table_file_one_line_error_a_table_not_a_feed(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from cli_support import cli_error

    table = tmp_path / "bbo.parquet"
    pq.write_table(pa.table({"seq": [1, 2], "time": [3, 4]}), table)
    err = cli_error(capsys, "send", table, "--line-a", "127.0.0.1:39063", "--line-b", "127.0.0.1:39064",
                    "--linger", "0")
    assert err.startswith(f"error: {table}: a Parquet file (a table, not a feed)") and err.count("\n") == 1


@pytest.mark.parametrize("loop", ["Python", "COMPILED"])
def test_listener_loop_and_on_gap_in_any_case_are_the_words(loop):
    from obook.live.listener import Listener

    lst = Listener(("127.0.0.1", 39047), ("127.0.0.1", 39048), loop=loop, on_gap="Skip")
    try:
        if loop == "Python":     # the replay turns tolerant as for "skip"
            assert lst.feed.on_gap == lst.replay.on_error == "skip"
        else:
            assert lst.on_gap == "skip"
    finally:
        lst.close()


def test_cli_listen_latency_output_a_device_refused_before_listening_left_in_place(capsys, tmp_path):
    from cli_support import cli_error

    device = tmp_path / "full"
    device.symlink_to("/dev/full")
    err = cli_error(capsys, "listen", "--line-a", "127.0.0.1:39043", "--line-b", "127.0.0.1:39044",
                    "--latency-output", device, "--idle-timeout", "0.2")
    assert err == f"error: --latency-output {device}: is not a regular file; give a Parquet file\n"
    assert device.is_symlink() and Path("/dev/full").is_char_device()


@pytest.mark.parametrize("line_a, says", [
    (39051, r"line_a 39051: give \"host:port\" or \(host, port\)"),
    (None, r"line_a None: give \"host:port\" or \(host, port\)"),
    (("127.0.0.1", "x"), r"line_a \('127.0.0.1', 'x'\): give \"host:port\" or \(host, port\)"),
    ("127.0.0.1:0", r"line_a '127.0.0.1:0': give the port \(1 to 65535\)"),
    (("127.0.0.1", 0), r"line_a '127.0.0.1:0': give the port \(1 to 65535\)"),
])
def test_python_listen_line_no_address_obook_error_naming_it(line_a, says):
    import obook
    from obook.errors import ObookError

    with pytest.raises(ObookError, match=says):
        next(obook.listen(line_a, "127.0.0.1:39052", idle_timeout=0.2))


@njit
def _quote(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):
    return 0, 0, 0, 0, 0, 0


@pytest.mark.parametrize("options, says", [
    ({"strategy": 5}, r"strategy 5 is no live strategy: an int, not callable; give a callable\(top\) -> "
                      r"list of obook.live.ouch.Order or None, or obook.live.strategy.numba_strategy\(fn, state=...\)"),
    ({"strategy": _quote}, r"strategy CPUDispatcher\(<function _quote .*\) is no live strategy: a numba function not "
                           r"wrapped by numba_strategy; give a callable\(top\)"),
    ({"tables": ["bbo", "trades"]}, r"tables=\['bbo', 'trades'\]: listen yields one table, named by table="),
    ({"cpu": -1}, r"^cpu=-1: cannot pin to that core \(this process may run on cores "),
    ({"cpu": True}, r"^cpu=True: cannot pin to that core"),
    ({"cpu": "0"}, r"^cpu='0': cannot pin to that core"),
    ({"realtime": 1000}, r"^realtime=1000: cannot run at that SCHED_FIFO priority"),
])
def test_python_listen_option_of_the_wrong_kind_obook_error_naming_it(options, says):
    import obook
    from obook.errors import ObookError

    with pytest.raises(ObookError, match=says):
        next(obook.listen("127.0.0.1:39051", "127.0.0.1:39052", idle_timeout=0.2, **options))
