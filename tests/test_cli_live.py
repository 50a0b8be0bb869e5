"""``obook send``, ``obook listen``, ``obook venue`` given values no machine can use: a core
number past any machine's, a number of seconds or microseconds past what the loops count in,
an output file that is already something else. Each is one line of error naming the option
(or a usage error for a range), before a line or a socket is opened; no traceback."""

from __future__ import annotations

import pytest

from cli_support import cli_error, cli_run
from live_support import addresses, hostport
from live_support import line_options as _lines
from obook.gen.itch import write_itch


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_live") / "day.itch"
    write_itch(str(path), 300, 3, 9)
    return path


def _command(which: str, day) -> list[str]:
    if which == "send":
        return ["send", str(day), *_lines(), "--linger", "0"]
    if which == "venue":
        return ["venue", "--listen", "127.0.0.1:0", "--sessions", "1"]
    return ["listen", *_lines(), "--idle-timeout", "0.2"]


@pytest.mark.parametrize("which", ["send", "venue", "listen"])
@pytest.mark.parametrize("cpu", ["4096", str(10**20)])
def test_cli_live_cpu_past_any_core_one_line_error_naming_cores(capsys, day, which, cpu):
    err = cli_error(capsys, *_command(which, day), "--cpu", cpu)
    assert err.startswith(f"error: --cpu {cpu}: cannot pin to that core (this process may run on cores "), err


@pytest.mark.parametrize("which, option, value", [
    ("send", "--heartbeat", "1e300"), ("send", "--spin-us", "1e300"),
    ("listen", "--spin-us", "1e300"), ("listen", "--gap-wait", "1e300"),
    ("listen", "--request-timeout", "1e300"), ("listen", "--retries", str(10**20)),
    ("listen", "--idle-timeout", "1e300"),
])
def test_cli_live_time_option_past_what_loop_counts_usage_error(capsys, day, which, option, value):
    code, err = cli_run(capsys, *_command(which, day), option, value)
    assert code == 2 and f"Invalid value for '{option}'" in err and "Traceback" not in err, err


def test_cli_listen_arrow_output_an_existing_file_one_line_error_file_kept(capsys, tmp_path):
    feed = tmp_path / "day.itch"
    feed.write_bytes(b"not to be overwritten")
    err = cli_error(capsys, "listen", *_lines(), "--idle-timeout", "0.2", "--to", "arrow", "-o", str(feed))
    assert err == f"error: {feed}: exists; --to arrow writes a new file (give another name, or remove it)\n"
    assert feed.read_bytes() == b"not to be overwritten"


def test_cli_listen_arrow_output_one_table_file_exists_error_names_it(capsys, tmp_path):
    (tmp_path / "live-trades.arrow").write_bytes(b"x")
    err = cli_error(capsys, "listen", *_lines(), "--idle-timeout", "0.2", "--to", "arrow",
                    "-o", str(tmp_path / "live.arrow"), "--tables", "bbo,trades")
    assert err.startswith(f"error: {tmp_path / 'live-trades.arrow'}: exists; "), err
    assert not (tmp_path / "live-bbo.arrow").exists()


def test_cli_listen_strategy_file_not_python_error_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "day.itch").write_bytes(b"x")
    err = cli_error(capsys, "listen", *_lines(), "--idle-timeout", "0.2", "--strategy", "day.itch:JoinBid")
    assert err == "error: --strategy: day.itch is a file, not a Python file (give FILE.py:NAME or module:NAME)\n"


def test_cli_listen_strategy_module_form_of_a_file_here_error_says_file_py(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "join_bid_here.py").write_text("def JoinBid(top):\n    return None\n")
    err = cli_error(capsys, "listen", *_lines(), "--idle-timeout", "0.2", "--strategy", "join_bid_here:JoinBid")
    assert err == ("error: --strategy: join_bid_here failed to load: ModuleNotFoundError: No module named "
                   "'join_bid_here' (join_bid_here.py is a file here: give join_bid_here.py:JoinBid)\n")


def test_cli_listen_strategy_module_refused_by_obook_as_it_loads_error_names_the_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fast.py").write_text(
        "import numba\nfrom obook.live.strategy import numba_strategy\n\n\n@numba.njit\n"
        "def quote(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):\n    return 0, 0, 0, 0, 0, 0\n\n\n"
        "Quote = numba_strategy(quote)\n")
    err = cli_error(capsys, "listen", *_lines(), "--idle-timeout", "0.2", "--strategy", "fast.py:Quote")
    assert err.startswith("error: --strategy: fast.py failed to load: numba strategy quote: takes state first"), err


def test_cli_listen_strategy_name_not_in_its_file_error_lists_the_names_it_has(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("import math\nfrom obook.live.ouch import Order\n\nLIMIT = 5\n\n\n"
                                      "def join(top):\n    return None\n\n\nclass Quote:\n    def __call__(self, top):\n"
                                      "        return None\n\n\ndef _helper():\n    pass\n")
    err = cli_error(capsys, "listen", *_lines(), "--idle-timeout", "0.2", "--strategy", "mine.py:JoinBid")
    assert err == "error: --strategy: mine.py has no JoinBid (its strategies may be: Quote, join)\n", err


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_cli_listen_line_port_taken_error_names_line_and_reason(capsys, loop):
    import socket

    a, b = addresses(2)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(b)
        err = cli_error(capsys, "listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", "",
                        "--idle-timeout", "0.2", "--loop", loop)
    assert err == f"error: line B {hostport(b)}: cannot listen: Address already in use\n"


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_cli_listen_idle_timeout_only_other_sessions_error_says_so(capsys, loop):
    import socket
    import threading

    from obook.feeds.mold.packets import encode_packet

    a, b = addresses(2)
    done = threading.Event()

    def other_session():        # for 4 s: a listener they kept alive fails, not hangs
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            seq = 1
            while not done.wait(0.05) and seq < 80:
                s.sendto(encode_packet("OBOOK", seq, [b"S" + bytes(10) + b"O"]), a)
                seq += 1

    threading.Thread(target=other_session, daemon=True).start()
    try:
        code, out = cli_run(capsys, "listen", "--line-a", hostport(a), "--line-b", hostport(b), "--request", "",
                            "--session", "OTHER", "--idle-timeout", "1", "--loop", loop)
    finally:
        done.set()
    err = out.splitlines()[-1]
    assert code == 1 and "Traceback" not in out, out
    assert err.startswith("error: live feed: nothing of MoldUDP64 session 'OTHER' received for 1 s ("), err
    assert "packets of other sessions; --session chooses the one followed)" in err, err


def test_cli_listen_text_on_a_full_stdout_one_line_error_naming_stdout(day):
    import subprocess
    import sys

    from live_support import sending

    a, b, r = addresses()
    with open("/dev/full", "wb") as full:
        p = subprocess.Popen([sys.executable, "-m", "obook", "listen", "--line-a", hostport(a), "--line-b", hostport(b),
                              "--request", "", "--idle-timeout", "10"], stdout=full, stderr=subprocess.PIPE)
    try:
        while not p.stderr.readline().startswith(b"listening"):
            assert p.poll() is None
        with sending(day, a, b, None, rate=20_000, linger=0):
            err = p.communicate(timeout=60)[1].decode()
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1 and "Traceback" not in err
    assert err.splitlines()[-1] == "error: <stdout>: write failed: No space left on device"
