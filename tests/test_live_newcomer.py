"""The live path as a newcomer and a hostile user meet it: options that cannot work are one
line of error before anything is opened, a strategy's failure names the message it was
called on, the sender's first packets are not late by the loading of its loop, and
``obook plot latency`` says what it cannot draw."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_support import cli_error, cli_run
from live_support import addresses, hostport, sending
from live_support import line_options as _lines
from obook.errors import ObookError
from obook.gen.itch import write_itch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("newcomer") / "day.itch"
    write_itch(str(path), 3_000, 5, 9)
    return path


# -- obook send ---------------------------------------------------------------------------


def test_sender_run_loop_loaded_before_the_clock_starts_first_due_after_it(day, monkeypatch):
    # loading the sending loop (numba's cache: milliseconds in a fresh process) must not fall
    # inside the schedule, or every early packet goes that late: the first call of the loop is
    # an empty schedule, and the first packet is due after that call returned
    import time

    from obook._kernels import live_send as K
    from obook.live.send import Sender, SendOptions, read_messages

    calls, send_due = [], K.send_due

    def recorded(out, T, Q, P, S, *rest):
        status = send_due(out, T, Q, P, S, *rest)
        calls.append((S.due.shape[0], int(S.due.min()) if S.due.shape[0] else None, time.monotonic_ns()))
        return status

    monkeypatch.setattr(K, "send_due", recorded)
    a, b = addresses(2)
    Sender(read_messages(str(day)), SendOptions(a, b, None, rate=20_000, linger=0, heartbeat=0.05)).run()
    assert calls[0][0] == 0
    assert all(n > 0 for n, _, _ in calls[1:]) and len(calls) > 1
    assert calls[1][1] > calls[0][2]


def test_sender_delay_b_past_due_times_obook_error(day):
    from obook.live.send import Sender, SendOptions, read_messages

    a, b = addresses(2)
    with pytest.raises(ObookError, match="--delay-b"):
        Sender(read_messages(day), SendOptions(a, b, None, delay_b=1e300))


@pytest.mark.parametrize("option", ["--line-a", "--request"])
def test_cli_send_port_zero_one_line_error(capsys, day, option):
    args = dict(zip(("--line-a", "--line-b", "--request"), map(hostport, addresses(3))))
    args[option] = "127.0.0.1:0"
    err = cli_error(capsys, "send", day, *(x for kv in args.items() for x in kv), "--linger", "0")
    assert f"{option} '127.0.0.1:0': give the port" in err


# -- obook listen: options ----------------------------------------------------------------


@pytest.mark.parametrize("option", ["--line-b", "--request"])
def test_cli_listen_port_zero_one_line_error(capsys, option):
    args = _lines()
    args[args.index(option) + 1] = "127.0.0.1:0"
    err = cli_error(capsys, "listen", *args, "--idle-timeout", "0.2")
    assert f"{option} '127.0.0.1:0': give the port" in err


def test_line_socket_unicast_port_of_another_listener_obook_error():
    from obook.live.net import line_socket

    (host, port), = addresses(1)
    first, _ = line_socket(host, port)
    try:       # a second listener on the port took the datagrams; the first waited in silence
        with pytest.raises(ObookError, match="Address already in use"):
            line_socket(host, port)[0].close()
    finally:
        first.close()


def test_cli_listen_tables_none_parquet_new_folder_line_stats_written(capsys, tmp_path):
    code, err = cli_run(capsys, "listen", *_lines(), "--tables", "none", "--to", "parquet", "-o", tmp_path / "new",
                        "--idle-timeout", "0.2")
    assert code == 1 and "nothing received" in err and "Traceback" not in err, err
    assert (tmp_path / "new" / "line_stats.parquet").exists()


def test_cli_listen_text_with_trades_table_one_line_error(capsys):
    err = cli_error(capsys, "listen", *_lines(), "--tables", "bbo,trades", "--idle-timeout", "0.2")
    assert "--to text prints the BBO only" in err


def test_cli_listen_text_with_output_one_line_error(capsys, tmp_path):
    err = cli_error(capsys, "listen", *_lines(), "-o", tmp_path / "out.txt", "--idle-timeout", "0.2")
    assert "--to text prints the BBO on stdout; --output" in err and not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("to", ["text", "parquet"])
def test_cli_listen_unknown_table_one_line_error(capsys, tmp_path, to):
    err = cli_error(capsys, "listen", *_lines(), "--to", to, *(["-o", tmp_path / "pq"] if to != "text" else []),
                    "--tables", "bbo,foo", "--idle-timeout", "0.2")
    assert "unknown table(s) foo; choose from bbo, trades, orders, depth" in err


@pytest.mark.parametrize("tables", ["", ",,", " , "])
def test_cli_listen_tables_naming_none_one_line_error(capsys, tables):
    err = cli_error(capsys, "listen", *_lines(), "--tables", tables, "--idle-timeout", "0.2")
    assert err == f"error: --tables {tables!r}: no table in it (--tables none: the loop alone, no tables)\n"


@pytest.mark.parametrize("extra, says", [
    (["--venue", "127.0.0.1:39099"], "--venue is the strategy's"),
    (["--tickers", "AAA"], "--tickers is the strategy's"),
    (["--strategy", "STRATEGY", "--tickers", ",,"], "no ticker in it"),
    (["--strategy", "STRATEGY", "--tickers", "AAA,TOOLONGNAME"], "'TOOLONGNAME' is no ITCH stock symbol"),
])
def test_cli_listen_strategy_options_that_cannot_work_one_line_error(capsys, tmp_path, extra, says):
    strategy = tmp_path / "idle.py"
    strategy.write_text("def quiet(top):\n    return None\n")
    extra = [f"{strategy}:quiet" if x == "STRATEGY" else x for x in extra]
    assert says in cli_error(capsys, "listen", *_lines(), *extra, "--idle-timeout", "0.2")


@pytest.mark.parametrize("interface, says", [("notanip", "illegal IP address string passed to inet_aton"),
                                              ("8.8.8.8", "Cannot assign requested address")])
def test_cli_listen_interface_not_local_one_line_error_before_listening(capsys, interface, says):
    err = cli_error(capsys, "listen", *_lines(), "--interface", interface, "--idle-timeout", "0.2")
    assert err == (f"error: --interface {interface!r}: not the IPv4 address of a local interface ({says})\n")


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_listener_stopped_before_any_packet_warns_nothing_received_not_an_empty_file(caplog, loop):
    import logging
    import threading

    from obook.live.listener import Listener

    a, b, _ = addresses()
    lst = Listener(a, b, None, loop=loop, idle_timeout=10)
    threading.Timer(0.3, lst.stop).start()
    with caplog.at_level(logging.WARNING, logger="obook"):
        assert [batch.num_rows for _t, batch in lst.table_batches()] in ([], [0])
    said = [r.getMessage() for r in caplog.records if "no records" in r.getMessage()]
    assert said == [f"live lines A {hostport(a)} and B {hostport(b)}: no records in the feed (nothing received)"]


def test_cli_listen_cpu_not_available_one_line_error_before_listening(capsys):
    err = cli_error(capsys, "listen", *_lines(), "--cpu", "4096", "--idle-timeout", "0.2")
    assert "--cpu 4096: cannot pin to that core" in err


def test_cli_listen_realtime_refused_one_line_error_before_listening_or_venue_login(capsys, tmp_path, monkeypatch):
    """A machine without CAP_SYS_NICE (a refusing os.sched_setscheduler stands in for it):
    one error line, no line listened to, no venue logged into."""
    import os

    def refused(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refused)
    err = _error_before_venue_login(capsys, tmp_path, *_lines(), "--realtime", "5")
    assert err == "error: --realtime 5: cannot run at that SCHED_FIFO priority: [Errno 1] Operation not permitted\n"


@pytest.mark.parametrize("option", [("--cpu", "0"), ("--spin",), ("--rcvbuf", "65536"), ("--spin-us", "5")])
def test_cli_listen_python_loop_compiled_loop_option_error(capsys, tmp_path, option):
    err = _error_before_venue_login(capsys, tmp_path, *_lines(), "--loop", "python", *option)
    assert err == f"error: {option[0]}: the compiled loop's option; the Python loop (--loop python) takes none\n"


def _error_before_venue_login(capsys, tmp_path, *args, source="def quiet(top):\n    return None\n",
                              name="quiet") -> str:
    """``obook listen ARGS`` with a strategy (``name`` in a file of ``source``) and a venue
    that would never answer a login: the error printed, after checking that nobody connected
    to the venue."""
    strategy = tmp_path / "idle.py"
    strategy.write_text(source)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        err = cli_error(capsys, "listen", *args, "--strategy", f"{strategy}:{name}",
                        "--venue", hostport(server.getsockname()), "--idle-timeout", "0.2")
        with pytest.raises(BlockingIOError):
            server.accept()                   # nobody connected
    return err


@pytest.mark.parametrize("option, value", [("--max-qty", "-5"), ("--band-bps", "-1"),
                                           ("--max-orders-per-second", "-3"),
                                           ("--max-orders-per-second", str(10**12))])
def test_cli_listen_risk_option_out_of_range_usage_error(capsys, option, value):
    code, err = cli_run(capsys, "listen", *_lines(), option, value, "--idle-timeout", "0.2")
    assert code == 2 and option in err and "Traceback" not in err, err


def test_cli_listen_bad_line_address_error_before_venue_login(capsys, tmp_path):
    err = _error_before_venue_login(capsys, tmp_path, "--line-a", "127.0.0.1:x")
    assert "--line-a '127.0.0.1:x': give host:port" in err


_BACKTEST_OBJECT = "class Quoter:\n    def on_book(self, ctx):\n        return None\n"
_RAW_NUMBA = ("from numba import njit\n\n@njit\ndef quote(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):\n"
              "    return 0, 0, 0, 0, 0, 0\n")


@pytest.mark.parametrize("source, name, says", [
    (_BACKTEST_OBJECT, "Quoter", "a Quoter with on_book but no __call__ (a backtest's strategy: obook backtest runs it)"),
    (_RAW_NUMBA, "quote", "a numba function not wrapped by numba_strategy"),
])
def test_cli_listen_strategy_the_live_path_cannot_call_error_before_venue_login(capsys, tmp_path, source, name, says):
    err = _error_before_venue_login(capsys, tmp_path, *_lines(), source=source, name=name)
    assert err == (f"error: --strategy {tmp_path / 'idle.py'}:{name} is no live strategy: {says}; give a "
                   "callable(top) -> list of obook.live.ouch.Order or None, or "
                   "obook.live.strategy.numba_strategy(fn, state=...)\n")


_FLOAT_PRICE = ("import numpy as np\nfrom numba import njit\nfrom obook.live.strategy import numba_strategy\n\n"
                "@njit\ndef half(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):\n"
                "    return 1, 0, 100, bid_px + 0.5, 1, 0\n\nquote = numba_strategy(half, state=np.zeros(1, np.int64))\n")


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_cli_listen_numba_strategy_returning_a_float_error_before_venue_login(capsys, tmp_path, loop):
    err = _error_before_venue_login(capsys, tmp_path, *_lines(), "--loop", loop, source=_FLOAT_PRICE, name="quote")
    assert err.startswith("error: numba strategy half: cannot be compiled into the live loop as ") and \
        err.endswith(": it returns price as float64, not an integer\n"), err


# -- strategies that fail -------------------------------------------------------------------


class _Raises:
    def __call__(self, top):
        raise RuntimeError("boom")


def test_replay_orders_strategy_raises_strategy_error_naming_message(day):
    from obook.live.strategy import StrategyError, replay_orders

    with pytest.raises(StrategyError, match=r"strategy on message \d+ \(\w+\): RuntimeError: boom at .*"
                                            r"test_live_newcomer\.py:\d+"):
        replay_orders(day, _Raises())


@pytest.mark.parametrize("returns, says", [(42, "returned int, not a list"),
                                           ([("enter",)], "returned a tuple among its orders"),
                                           ("order", "returned a str among its orders")])
def test_replay_orders_strategy_returns_no_orders_strategy_error(day, returns, says):
    from obook.live.strategy import StrategyError, replay_orders

    with pytest.raises(StrategyError, match=says):
        replay_orders(day, lambda top: returns)


@pytest.mark.parametrize("order, says", [
    (dict(side="BUY"), "cannot send.*side 'BUY' is not one of B, S, T, E"),
    (dict(side="Q"), "cannot send.*side 'Q' is not one of B, S, T, E"),
    (dict(kind="fancy"), "unknown order kind"),
    (dict(price=None), "cannot send"),
    (dict(price=-5), "cannot send.*price -5 is not an integer from 0 to"),
    (dict(price=100.5), "cannot send.*price 100.5 \\(a float\\) is not an integer"),
    (dict(ref=-1), "cannot send.*ref -1"),
    (dict(symbol="TOOLONGSYM"), "cannot send.*symbol 'TOOLONGSYM' is not 1 to 8 ASCII characters"),
])
def test_replay_orders_order_ouch_cannot_carry_strategy_error(day, order, says):
    from obook.live.ouch import Order
    from obook.live.risk import RiskGate
    from obook.live.strategy import StrategyError, replay_orders

    def strategy(top):
        fields = dict(kind="enter", symbol=top.ticker, side="S", qty=1, price=top.bid_px or top.ask_px or 10_000, ref=1)
        return [Order(**{**fields, **order})]

    with pytest.raises(StrategyError, match=says):
        replay_orders(day, strategy, risk=RiskGate(band_bps=10**9))


def test_hot_listener_python_strategy_raises_strategy_error(day):
    from obook.live.hot_listener import HotListener
    from obook.live.strategy import StrategyError

    a, b, r = addresses()
    lst = HotListener(a, b, None, tables=("bbo",), strategy=_Raises(), idle_timeout=10)
    with sending(day, a, b, None, rate=20_000, linger=0), pytest.raises(StrategyError, match="RuntimeError: boom"):
        for _ in lst.table_batches():
            pass


@pytest.mark.parametrize("loop, tables", [("compiled", ()), ("compiled", ("bbo",)), ("python", ("bbo",))])
def test_listener_ticker_not_in_the_session_warned_at_its_end_by_either_loop(day, caplog, loop, tables):
    from obook.live.listener import Listener
    from obook.live.strategy import TickToTrade

    calls = []
    a, b, _ = addresses()
    ttt = TickToTrade(lambda top: calls.append(top.ticker), ["AAA", "ZZZ", "QQQQ"])
    lst = Listener(a, b, None, tables=tables, tick_to_trade=ttt, idle_timeout=10, loop=loop)
    with caplog.at_level("WARNING", logger="obook"), sending(day, a, b, None, rate=20_000, linger=0):
        for _ in lst.table_batches():
            pass
    lst.close()     # (the front ends close it again: warned once)
    assert set(calls) == {"AAA"}
    assert [m for m in caplog.messages if "ticker" in m] == [
        "tickers QQQQ, ZZZ: not in the session's stock directory: the strategy was never called for them"]


class _GoneVenue:
    """A logged-in venue's side of the gateway whose venue has gone: its end closed, or
    (``writable=False``) this end closed for writing (a send fails, nothing is read)."""

    heartbeat, timeout, ended, where = 1.0, 0.1, False, "gone:1"

    def __init__(self, writable=True):
        from obook.live.soupbin import Framer

        self.framer = Framer()              # nothing read beyond the login's answer
        self.sock, self.peer = socket.socketpair()
        if writable:
            self.peer.close()
        else:
            self.sock.shutdown(socket.SHUT_WR)


def _python_strategy_against(day, venue, rows=None):
    from obook.live.hot_listener import HotListener
    from obook.live.ouch import Order
    from obook.live.risk import RiskGate

    def strategy(top):
        return [Order("enter", top.ticker, "B", 1, top.bid_px or top.ask_px or 10_000, top.seq)]

    a, b, _ = addresses()
    lst = HotListener(a, b, None, tables=("bbo",), strategy=strategy, gateway=venue,
                      risk=RiskGate(band_bps=10**9), idle_timeout=10)
    with sending(day, a, b, None, rate=20_000, linger=0):
        for _, batch in lst.table_batches():
            if rows is not None:
                rows.append(batch.num_rows)
    return lst


def test_hot_listener_python_strategy_send_failing_error_naming_venue(day):
    venue = _GoneVenue(writable=False)
    with pytest.raises(ObookError, match=r"^venue gone:1: connection lost \(an order could not be sent"):
        _python_strategy_against(day, venue)
    venue.peer.close()


def test_hot_listener_python_strategy_venue_closed_warned_orders_kept_tables_whole(day, caplog):
    rows = []
    lst = _python_strategy_against(day, _GoneVenue(), rows)
    said = [r.getMessage() for r in caplog.records if r.name == "obook" and "closed the connection" in r.getMessage()]
    assert said == ["venue gone:1 closed the connection: the orders from here on are not sent (the listener goes on)"]
    assert lst.loop.venue_closed_at == 0 < lst.orders and lst.stats()["ended"] and sum(rows) > 0


def test_hot_loop_python_strategy_counting_kernel_loaded_before_first_packet():
    # a fresh process: the histogram kernel a Python strategy's rows are counted with was
    # loaded on the first row (ms: every packet queued behind it waited)
    code = textwrap.dedent("""
        from live_support import addresses
        from obook._kernels.latency import record_many
        from obook.live.hot_listener import HotListener
        HotListener(*addresses(3), tables=(), strategy=lambda top: None).close()
        print(len(record_many.signatures))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).parent, env={**__import__("os").environ,
                                                         "PYTHONPATH": str(Path(__file__).parent)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "1", out.stdout


# -- obook plot latency ---------------------------------------------------------------------


@pytest.fixture
def latency_table(tmp_path):
    import numpy as np
    import pyarrow.parquet as pq

    from obook.live.latency import Histogram, report_table

    hists = []
    for name in ("recv", "book"):
        h = Histogram(name)
        h.record(np.array([1_000, 2_000, 50_000], np.int64))
        hists.append(h)
    path = tmp_path / "lat.parquet"
    pq.write_table(report_table(hists), path)
    return path


def test_plot_latency_picture_a_folder_obook_error(latency_table, tmp_path):
    from obook.live.plot_latency import plot_latency

    for folder in (tmp_path, Path(".")):
        with pytest.raises(ObookError, match="is a folder"):
            plot_latency(latency_table, folder)


def test_cli_plot_latency_k_draws_those_stages_unknown_one_line_error(capsys, latency_table, tmp_path):
    code, err = cli_run(capsys, "plot", "latency", latency_table, tmp_path / "one.png", "-k", "book")
    assert code in (0, None) and (tmp_path / "one.png").exists(), err
    assert "no stage nope (it has recv, book)" in cli_error(capsys, "plot", "latency", latency_table,
                                                           tmp_path / "x.png", "-k", "recv,nope")
    for none in ("", " , "):
        assert "names no stage; leave -k out to draw every stage" in cli_error(
            capsys, "plot", "latency", latency_table, tmp_path / "none.png", "-k", none)
    assert not (tmp_path / "none.png").exists()


@pytest.mark.parametrize("option, value", [("--start", "10:00"), ("--interval", "5s"), ("--levels", "3")])
def test_cli_plot_latency_feed_option_one_line_error(capsys, latency_table, tmp_path, option, value):
    err = cli_error(capsys, "plot", "latency", latency_table, tmp_path / "x.png", option, value)
    assert f"{option} is for a feed's picture" in err
    assert not (tmp_path / "x.png").exists()


# -- docs/live.md ---------------------------------------------------------------------------


def test_docs_live_wait_loops_quiet_while_the_log_is_not_there_yet():
    # the loop's first grep may run before the background command's 2> made its log
    text = (ROOT / "docs" / "live.md").read_text()
    waits = [line for line in text.splitlines() if line.startswith("until grep")]
    assert waits and all(line.startswith("until grep -qs ") for line in waits), waits


def test_cli_send_interrupted_says_what_went_out_before_the_stop(tmp_path):
    """Ctrl-C during a paced send printed only 'interrupted': the counts so far come first."""
    import signal
    import time

    day = tmp_path / "day.itch"
    write_itch(str(day), messages=5000, stocks=5, seed=1)
    a, b = addresses(2)
    p = subprocess.Popen([sys.executable, "-m", "obook", "send", str(day), "--line-a", hostport(a),
                          "--line-b", hostport(b), "--request", "", "--rate", "10", "--linger", "0"],
                         stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    sent = [line for line in err.splitlines() if line.startswith("sent before the stop: ")]
    assert p.returncode == 130 and err.rstrip().endswith("interrupted") and len(sent) == 1, err
    counts = dict(item.split(" ") for item in sent[0].removeprefix("sent before the stop: ").split(", "))
    assert int(counts["packets_a"]) > 0 and int(counts["packets_b"]) > 0, sent


NOT_A_SESSION = [("ABCDEFGHIJKLM", "'ABCDEFGHIJKLM' has 13 characters, more than 10"),
                 ("é", "is not ASCII text"), (" OBOOK", "starts or ends with a space")]


@pytest.mark.parametrize("session, says", NOT_A_SESSION)
@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_listener_session_not_a_moldudp64_one_obook_error(session, says, loop):
    """A session of 13 characters was cut to its first 10 (and followed another session)."""
    from obook.live.listener import Listener

    a, b = addresses(2)
    with pytest.raises(ObookError, match=f"session= .*{says}"):
        Listener(a, b, None, session=session, loop=loop)


@pytest.mark.parametrize("session, says", NOT_A_SESSION)
@pytest.mark.parametrize("make", ["HotLoop", "HotListener", "LiveFeed", "PythonListener"])
def test_live_constructor_session_not_a_moldudp64_one_obook_error(session, says, make):
    """Each public constructor taking a session checks it: the compiled loop cut one of 13
    characters to its first 10 and so followed another session."""
    from obook.live.feed import LiveFeed
    from obook.live.hot_listener import HotListener
    from obook.live.hotpath import HotLoop
    from obook.live.listener import PythonListener

    a, b = addresses(2)
    made = {"HotLoop": lambda: HotLoop([], None, session=session),
            "HotListener": lambda: HotListener(a, b, None, tables=(), session=session),
            "LiveFeed": lambda: LiveFeed(a, b, None, session=session),
            "PythonListener": lambda: PythonListener(a, b, None, session=session)}[make]
    with pytest.raises(ObookError, match=f"session= .*{says}"):
        made()


def test_cli_listen_unknown_loop_usage_error(capsys):
    code, err = cli_run(capsys, "listen", "--loop", "fancy")
    assert code == 2 and "'fancy' is not one of 'compiled', 'python'" in err



@pytest.mark.parametrize("to, where, says", [("arrow", "bbo.arrow", "exists; --to arrow writes a new file"),
                                             ("parquet", "old", "holds Parquet files of another session"),
                                             ("parquet", "bbo.arrow", "exists and is not a folder")])
def test_cli_listen_output_place_refused_error_before_venue_login(capsys, tmp_path, to, where, says):
    (tmp_path / "bbo.arrow").write_bytes(b"x")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "bbo-00001.parquet").write_bytes(b"PAR1")
    err = _error_before_venue_login(capsys, tmp_path, *_lines(), "--to", to, "-o", str(tmp_path / where))
    assert err.startswith(f"error: {tmp_path / where}: {says}"), err


@pytest.mark.parametrize("option, value, says", [
    ("--venue-username", "toolongname", "--venue-username: 6 printable ASCII characters at most"),
    ("--venue-password", "éé", "--venue-password: 10 printable ASCII characters at most"),
    ("--venue-password", "elevenchars", "--venue-password: 10 printable ASCII characters at most"),
])
def test_cli_listen_venue_login_field_soupbin_cannot_carry_error_before_venue_login(capsys, tmp_path, option,
                                                                                    value, says):
    err = _error_before_venue_login(capsys, tmp_path, *_lines(), option, value)
    assert err == f"error: {says} (a SoupBinTCP login's field)\n"
