import os
from pathlib import Path

import psutil
import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


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
    shm_after = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    assert shm_after - shm_before == set()


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
