"""The ``obook`` console command's entry point.

``obook --help`` (or ``-h``) prints the top-level help rendered ahead of time in
``obook/_help_text.py``: importing typer, click and the command modules to render it costs
more than the rest of the command (benchmarks/bench_startup.py times ``--help``). The text is
what ``obook.cli`` renders on a terminal at least 80 columns wide (click wraps help at 78
columns there); a narrower terminal, and every other command line, runs ``obook.cli``.
``python -m obook._entry --write`` renders the text again; ``tests/test_cli_conventions.py``
fails when it differs from ``obook.cli``'s.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys


def _columns() -> int:
    """The terminal width as click's help formatter sees it (``shutil.get_terminal_size``)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def main() -> None:
    if sys.argv[1:] in (["--help"], ["-h"]) and _columns() >= 80:
        from ._help_text import TEXT

        try:
            sys.stdout.write(TEXT)
            sys.stdout.flush()
        except BrokenPipeError:     # `obook --help | head -1`: the reader left; say nothing more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(1) from None
        return
    # numpy's OpenBLAS starts a thread per core when numpy is imported (~0.1 s of CPU in a
    # short command); obook calls no BLAS routine, in this process or its workers
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # where ``_leave`` takes Python's own exit, the exit functions run last registered first:
    # this one after multiprocessing's (imported later), which stops its children
    atexit.register(_stop_multiprocessing_helpers)
    try:
        from ._arrow_start import install

        install()           # pyarrow without a needless import of pandas
        from .cli import main as cli_main
    except KeyboardInterrupt:  # Ctrl-C while importing: as quiet as one during the replay
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
    try:
        cli_main()
    except SystemExit as e:
        _leave(e.code)
    _leave(0)


def _leave(code) -> None:
    """Exit with ``code`` as Python would (output flushed, atexit functions run) but without
    the interpreter's teardown: its last garbage collection and the unloading of numba's and
    LLVM's modules cost ~0.1 s after the work is done (benchmarks/bench_startup.py). A thread
    other than a daemon still running, or output that cannot be flushed (a closed pipe),
    takes Python's own exit."""
    import threading

    main = threading.main_thread()
    if any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate()):
        raise SystemExit(code)
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        run_exit_functions = None
    if run_exit_functions is None:
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:                       # SystemExit("message"): printed, status 1
        sys.stderr.write(f"{code}\n")
        status = 1
    from .interrupts import exit_code, held_for_exit

    came = held_for_exit()
    run_exit_functions()        # logging's flush, multiprocessing's and tempfile's clean-ups
    _stop_multiprocessing_helpers()
    if came and status == 0:    # a Ctrl-C as the command ended: it ends as an interrupted one
        if came[0] == signal.SIGINT:
            sys.stderr.write("interrupted\n")
        status = exit_code(came[0])
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        status = status or 120  # what Python exits with when stdout cannot be flushed
    os._exit(status)


def _stop_multiprocessing_helpers() -> None:
    """Stop and reap multiprocessing's forkserver and resource tracker, which workers started
    next to DuckDB's or polars' threads come from (obook/engine/workers.py): they end on their
    own once this process has exited, so they would outlive the command a moment, running or
    unreaped; the tracker removes what the command's processes left in /dev/shm as it stops.
    Called once the exit functions ran (multiprocessing's stops its children first), and as
    the last of them in Python's own exit."""
    for module, holder in (("multiprocessing.forkserver", "_forkserver"),
                           ("multiprocessing.resource_tracker", "_resource_tracker")):
        stop = getattr(getattr(sys.modules.get(module), holder, None), "_stop", None)
        if stop is not None:
            try:
                stop()
            except (OSError, RuntimeError):     # gone already, or never fully started
                pass


def render() -> str:
    """``obook --help`` as ``obook.cli`` prints it on a wide terminal (in a fresh process)."""
    import subprocess

    code = "import sys; sys.argv = ['obook', '--help']; from obook.cli import main; main()"
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True).stdout


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_help_text.py")
    with open(path, "w") as f:
        f.write('"""``obook --help``, rendered by ``python -m obook._entry --write`` (see obook/_entry.py)."""\n\n'
                f"TEXT = {render()!r}\n")
