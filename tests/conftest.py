import os
import signal
from pathlib import Path

import psutil
import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# Tests send Ctrl-C to the commands they start, as a terminal would. A test run started in the
# background by a script inherits Ctrl-C ignored, and passes that on to every process it
# starts, which obook then keeps ignoring (as a background job should): give them the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def helper_pids() -> set[int]:
    """multiprocessing's own long-lived helpers (forkserver, resource tracker)."""
    pids = set()
    from multiprocessing import forkserver, resource_tracker
    for obj, attr in ((forkserver._forkserver, "_forkserver_pid"), (resource_tracker._resource_tracker, "_pid")):
        pid = getattr(obj, attr, None)
        if pid:
            pids.add(pid)
    return pids


def worker_children() -> list[psutil.Process]:
    """Child processes of this test process other than multiprocessing's helpers."""
    helpers = helper_pids()
    out = []
    for p in psutil.Process(os.getpid()).children(recursive=True):
        try:
            if p.pid in helpers or p.ppid() in helpers and p.status() == psutil.STATUS_ZOMBIE:
                continue
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture(autouse=True)
def interrupt_state_restored():
    """Restores what the command's interrupt handling sets in this process (the signal
    handlers, ``sys.unraisablehook``, ``obook.interrupts.raised``) after a test that ran a
    command in it: a later test (``sys.exit`` in a strategy is an error unless an interrupt
    was raised) would read the earlier test's interrupt as its own."""
    import signal
    import sys

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    hook = sys.unraisablehook
    yield
    for s, h in handlers.items():
        if h is not None and signal.getsignal(s) is not h:
            signal.signal(s, h)
    sys.unraisablehook = hook
    interrupts = sys.modules.get("obook.interrupts")
    if interrupts is not None:
        interrupts.raised = None


def _sigint_held() -> str | None:
    """How this thread holds SIGINT at the OS level, where ``signal.getsignal`` does not look
    (a library's own sigaction, a mask left blocked): "blocked", "ignored" (with a Python
    handler that is not SIG_IGN), or None; None too where /proc does not say."""
    import signal

    try:
        with open("/proc/thread-self/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    bit = 1 << (signal.SIGINT - 1)
    if int(fields.get("SigBlk", "0"), 16) & bit:
        return "blocked"
    if int(fields.get("SigIgn", "0"), 16) & bit and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return "ignored"
    return None


@pytest.fixture(autouse=True)
def sigint_not_left_held():
    """Fails a test that leaves SIGINT blocked or ignored in this process below Python's view
    of it (every later test of the worker, and every process it starts, would not see a
    Ctrl-C), and puts it back."""
    import signal

    before = _sigint_held()
    yield
    after = _sigint_held()
    if after is not None and after != before:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        handler = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, handler if handler is not None else signal.default_int_handler)
        pytest.fail(f"the test left SIGINT {after} in this process (was {before or 'delivered'})")


@pytest.fixture(autouse=True)
def kernels_mode_unchanged():
    """Fails a test that leaves OBOOK_KERNELS changed in this process's environment (every
    later test's subprocesses would inherit it: a leaked ``python`` once ran the rest of
    the suite's command lines on the Python kernels, ~100 s a memory test), and restores it."""
    before = os.environ.get("OBOOK_KERNELS")
    yield
    after = os.environ.get("OBOOK_KERNELS")
    if after != before:
        if before is None:
            del os.environ["OBOOK_KERNELS"]
        else:
            os.environ["OBOOK_KERNELS"] = before
        pytest.fail(f"the test left OBOOK_KERNELS={after!r} (was {before!r})")


@pytest.fixture
def python_sigint():
    """Ctrl-C raises KeyboardInterrupt (Python's own handler) during the test, and one raised
    where Python drops it is only reported, whatever an earlier test installed (the command
    line's unwinding handler and its hook that sends a dropped interrupt again, which would
    land in a later test); both put back after."""
    import signal
    import sys

    before, hook = signal.signal(signal.SIGINT, signal.default_int_handler), sys.unraisablehook
    sys.unraisablehook = sys.__unraisablehook__
    yield
    signal.signal(signal.SIGINT, before)
    sys.unraisablehook = hook


@pytest.fixture
def no_leaks():
    """Fails the test if a worker process, an obook thread or a /dev/shm segment outlives it."""
    import threading

    shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    yield
    import time
    def threads():
        return [t.name for t in threading.enumerate() if t.name.startswith("obook-")]

    deadline = time.time() + 5
    while (worker_children() or threads()) and time.time() < deadline:
        time.sleep(0.05)
    assert worker_children() == []
    assert threads() == []
    assert _shm_left(shm_before) == set()


def _shm_left(before: set) -> set:
    """/dev/shm entries made since ``before`` that no process outside this one's tree holds:
    those of other processes on the machine (another test session, a parallel test worker:
    multiprocessing's ``sem.mp-*`` live as long as their lock) are theirs, not this test's.
    Looked at twice, 0.2 s apart: an entry of another process's that it unmaps and unlinks
    meanwhile is gone at the second look."""
    import time

    if not os.path.isdir("/dev/shm"):
        return set()
    ours = {os.getpid()} | {p.pid for p in psutil.Process().children(recursive=True)}
    left = set(os.listdir("/dev/shm")) - before
    for look in range(2):
        if not left:
            break
        if look:
            time.sleep(0.2)
            left &= set(os.listdir("/dev/shm"))
        left -= _held_elsewhere(left, ours)
    return left


def _held_elsewhere(names: set, ours: set) -> set:
    """Which of /dev/shm's ``names`` a process not in ``ours`` has mapped or open (by inode:
    glibc's ``sem_open`` maps a file made under another name, then links it to its own)."""
    inodes = {}
    for n in names:
        try:
            inodes[os.stat(f"/dev/shm/{n}").st_ino] = n
        except OSError:
            pass
    held = set()
    for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
        if pid in ours:
            continue
        try:
            with open(f"/proc/{pid}/maps") as f:
                for line in f:
                    fields = line.split(None, 5)
                    if len(fields) == 6 and fields[5].startswith("/dev/shm/") and int(fields[4]) in inodes:
                        held.add(inodes[int(fields[4])])
            for fd in os.listdir(f"/proc/{pid}/fd"):
                st = os.stat(f"/proc/{pid}/fd/{fd}")
                if st.st_ino in inodes and os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/dev/shm/"):
                    held.add(inodes[st.st_ino])
        except OSError:       # gone meanwhile, or not ours to read
            pass
    return held


@pytest.fixture(scope="session")
def shared_itch():
    path = SHARED_DATA / "itch" / "nasdaq_20191230_first1000.itch"
    if not path.exists():
        pytest.skip("../shared/data is not here (it is not part of the repository)")
    return path


# front-end tests (DuckDB, polars): a hand-computed small feed and generated days
@pytest.fixture()
def small(tmp_path):
    from frontend_feeds import write_small_feed
    return write_small_feed(tmp_path / "small.itch")


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    from frontend_feeds import write_generated_feed
    return write_generated_feed(tmp_path_factory.mktemp("day") / "day.itch", 400_000, stocks=30)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    from frontend_feeds import write_generated_feed
    return write_generated_feed(tmp_path_factory.mktemp("big") / "big.itch", 3_000_000, stocks=50)
