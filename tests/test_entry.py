"""obook._entry: the console command's exit without the interpreter's teardown."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def _run(tmp_path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "leave.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)


def test_leave_status_runs_atexit_and_flushes_output(tmp_path):
    marker = tmp_path / "atexit_ran"
    p = _run(tmp_path, f"""
        import atexit, logging, sys
        from obook._entry import _leave
        atexit.register(lambda: open({str(marker)!r}, "w").write("yes"))
        logging.basicConfig(stream=sys.stderr, format="%(message)s")
        logging.getLogger("obook").warning("logged")
        sys.stdout.write("no newline at the end")
        _leave(3)
        print("not reached")
        """)
    assert p.returncode == 3
    assert p.stdout == "no newline at the end"
    assert "logged" in p.stderr
    assert marker.read_text() == "yes"


def test_leave_message_code_printed_exit_one(tmp_path):
    p = _run(tmp_path, """
        from obook._entry import _leave
        _leave("error: something")
        """)
    assert p.returncode == 1
    assert p.stderr == "error: something\n"


def test_leave_none_exits_zero(tmp_path):
    p = _run(tmp_path, """
        from obook._entry import _leave
        _leave(None)
        """)
    assert p.returncode == 0 and p.stderr == ""


def test_leave_with_running_thread_waits_for_it(tmp_path):
    marker = tmp_path / "thread_done"
    p = _run(tmp_path, f"""
        import threading, time
        from obook._entry import _leave
        def work():
            time.sleep(0.3)
            open({str(marker)!r}, "w").write("done")
        threading.Thread(target=work).start()
        _leave(0)
        """)
    assert p.returncode == 0, p.stderr
    assert marker.read_text() == "done"    # Python's own exit joined the thread


def test_leave_ctrl_c_during_exit_functions_runs_them_all_says_interrupted(tmp_path):
    marker = tmp_path / "second_ran"
    p = _run(tmp_path, f"""
        import atexit, os, signal
        from obook._entry import _leave
        from obook.interrupts import unwind_on_signals
        atexit.register(lambda: open({str(marker)!r}, "w").write("yes"))
        atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), sum(range(10**6))))
        unwind_on_signals()
        _leave(0)
        """)
    assert (p.returncode, p.stderr) == (130, "interrupted\n")
    assert marker.read_text() == "yes"


def test_python_m_obook_error_exit_one_with_message(tmp_path):
    p = subprocess.run([sys.executable, "-m", "obook", "bbo", str(tmp_path / "missing.itch")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert "error:" in p.stderr and "missing.itch" in p.stderr


def test_obook_help_into_a_closed_pipe_no_traceback():
    r, w = os.pipe()
    os.close(r)                                    # the reader has gone (as `| head -0`)
    p = subprocess.run([sys.executable, "-m", "obook", "--help"], stdout=w, stderr=subprocess.PIPE, text=True,
                       timeout=120, env=dict(os.environ, COLUMNS="100"))
    os.close(w)
    assert p.returncode == 1 and p.stderr == ""


def test_main_ctrl_c_while_the_command_starts_says_interrupted(tmp_path):
    """A Ctrl-C before the command line's handlers are installed (pyarrow's start set up,
    obook.cli imported) ends as quietly as one during the work: one line, exit 130."""
    p = _run(tmp_path, """
        import sys
        import obook._arrow_start

        def install():
            raise KeyboardInterrupt

        obook._arrow_start.install = install
        sys.argv = ["obook", "--version"]
        from obook._entry import main
        main()
        """)
    assert (p.returncode, p.stderr) == (130, "interrupted\n")
