"""Faults in the middle of a replay: a killed worker, a full disk, a
closed stdout, a consumer that stops early, Ctrl-C. Each ends promptly with a clear
result, and leaves no worker process, no /dev/shm entry and no file under the final
name (the ``no_leaks`` fixture, plus checks of the output directory)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

import obook
from obook.engine.replay import Replay
from obook.gen.itch import write_itch

from conftest import worker_children
from fuzz_support import watchdog
from interrupt_support import ctrl_c, ctrl_c_at_first_unlink, tick as _tick

MESSAGES = 6_000_000           # about 180 MB, replayed in a few seconds


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    path = tmp_path_factory.mktemp("faults") / "day.itch"
    write_itch(path, MESSAGES, 300, seed=11)
    return path


def cli(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "obook", *map(str, args)], stdout=kw.pop("stdout", subprocess.PIPE),
                            stderr=subprocess.PIPE, **kw)


def wait_for_workers(proc: subprocess.Popen, n: int, timeout: float = 30) -> list[psutil.Process]:
    """The processes the command started, but multiprocessing's forkserver and resource
    tracker (the workers the forkserver starts count), once ``n`` of them run."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        kids = []
        for k in psutil.Process(proc.pid).children(recursive=True):
            try:
                helper = k.ppid() == proc.pid and any(h in " ".join(k.cmdline())
                                                      for h in ("forkserver", "resource_tracker"))
            except psutil.Error:        # gone meanwhile
                continue
            if not helper:
                kids.append(k)
        if len(kids) >= n:
            return kids
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.01)
    raise AssertionError("workers did not start")


def assert_gone(procs, timeout: float = 5):
    gone, alive = psutil.wait_procs(procs, timeout=timeout)
    assert alive == [], f"left behind: {alive}"


def only_feed_left(directory, feed=None):
    names = sorted(p.name for p in directory.iterdir() if feed is None or p != feed)
    assert names == [], f"left in {directory}: {names}"


# ---------------------------------------------------------------- a killed parent

@pytest.mark.parametrize("workers", [2, 3])
def test_cli_parent_sigkilled_mid_replay_workers_exit(big, tmp_path, workers):
    """A parent killed outright (kill -9, the OOM killer) cannot stop its workers; they must
    not wait forever on a pipe whose other end they inherited (fork) themselves."""
    p = cli("bbo", big, "--workers", workers, "--output", tmp_path / "day.parquet", start_new_session=True)
    kids = wait_for_workers(p, workers)
    p.kill()
    p.wait(timeout=15)
    assert_gone(kids)


# ---------------------------------------------------------------- a killed worker

@pytest.mark.parametrize("workers", [2, 3])
def test_replay_worker_sigkilled_mid_replay_raises_worker_error_promptly(big, workers, no_leaks):
    reader = obook.bbo(big, workers=workers)
    batches = iter(reader)
    with watchdog(30, hard=False):
        assert next(batches).num_rows > 0
        victim = worker_children()[-1]
        assert "python" in victim.name() or victim.pid
        victim.send_signal(signal.SIGKILL)
        t0 = time.time()
        with pytest.raises(obook.WorkerError, match=f"pid {victim.pid}.*died"):
            for _ in batches:
                pass
        assert time.time() - t0 < 10
    del batches, reader


def test_replay_worker_killed_before_first_batch_raises_worker_error(big, no_leaks):
    gen = Replay(big, workers=2).batches()
    with watchdog(30, hard=False):
        first = next(gen)                      # workers run; kill one, then keep consuming
        for p in worker_children():
            p.kill()
        with pytest.raises(obook.WorkerError):
            for _ in gen:
                pass
    assert first.num_rows > 0


# ---------------------------------------------------------------- a consumer that stops

@pytest.mark.parametrize("workers", [1, 2])
def test_reader_break_after_first_batch_stops_workers(big, workers, no_leaks):
    reader = obook.bbo(big, workers=workers)
    for batch in reader:
        assert batch.num_rows > 0
        break
    del reader, batch
    t0 = time.time()
    while worker_children() and time.time() - t0 < 5:
        time.sleep(0.02)
    assert worker_children() == [] and time.time() - t0 < 5


def test_reader_del_after_first_batch_stops_workers_at_once(big, no_leaks):
    reader = obook.bbo(big, workers=2)
    reader.read_next_batch()
    kids = worker_children()
    assert len(kids) == 2
    del reader
    assert_gone(kids, timeout=3)


@pytest.mark.xfail(strict=True, reason="pyarrow's RecordBatchReader.from_batches: close() (and `with`) "
                   "keep the Python iterator alive, so the workers stay until the reader is deleted. A reader "
                   "re-imported through the C stream interface (from_stream) releases it on close(), but turns "
                   "every exception into ArrowInvalid: FeedError, its record number and partial rows are lost")
def test_reader_close_after_first_batch_stops_workers_at_once(big):
    reader = obook.bbo(big, workers=2)
    reader.read_next_batch()
    kids = worker_children()
    reader.close()
    try:
        _, alive = psutil.wait_procs(kids, timeout=3)
        assert alive == []
    finally:
        del reader
        psutil.wait_procs(kids, timeout=5)


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_polars_filter_then_head_stops_workers(big, engine, no_leaks):
    import polars as pl

    lf = obook.polars.scan_bbo(big, workers=2)
    for q in (lf.filter(pl.col("bid_qty") > 0).head(5), lf.filter(pl.col("bid_qty") > 0).slice(10, 5)):
        assert q.collect(engine=engine).height == 5
        t0 = time.time()
        while worker_children() and time.time() - t0 < 5:
            time.sleep(0.02)
        assert worker_children() == []


def test_generator_close_mid_replay_stops_workers(big, no_leaks):
    gen = Replay(big, workers=2).batches()
    next(gen)
    kids = worker_children()
    gen.close()
    assert_gone(kids, timeout=3)


# ---------------------------------------------------------------- a full disk

FULL_DISK = textwrap.dedent("""
    import resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)        # write() fails with EFBIG instead
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    sys.argv = ["obook"] + sys.argv[2:]
    from obook.cli import main
    main()
""")


def ring_bytes(workers: int) -> int:
    """The workers' shared memory (a memfd: it counts against RLIMIT_FSIZE too)."""
    from obook.feeds.sources import BLOCK_SIZE
    from obook._kernels.layout import MAX_BATCH_RECORDS, ROW_WIDTH
    return 4 * (2 * BLOCK_SIZE + (1 << 16)) + workers * 4 * MAX_BATCH_RECORDS * ROW_WIDTH * 8


# workers=2: the limit leaves room for the workers' shared memory, so the output writer is what
# fails (a 6 M message day's Parquet is smaller than that room: text and Arrow only)
@pytest.mark.parametrize("workers,suffix", [(1, ".parquet"), (1, ".txt"), (1, ".arrow"), (2, ".txt"),
                                            (2, ".arrow")])
def test_cli_output_on_full_disk_exits_1_leaves_no_file(big, tmp_path, suffix, workers, no_leaks):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / f"day{suffix}"
    limit = 1 << 20 if workers == 1 else ring_bytes(workers) + (4 << 20)
    p = subprocess.run([sys.executable, "-c", FULL_DISK, str(limit), "bbo", str(big), "--workers",
                        str(workers), "--output", str(out)], capture_output=True, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert f"error: {out}: write failed" in err and "Traceback" not in err, err
    only_feed_left(out_dir)


def test_cli_file_size_limit_below_workers_shared_memory_says_so(big, tmp_path):
    """ulimit -f below the workers' shared memory: the error names that, not the output."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    p = subprocess.run([sys.executable, "-c", FULL_DISK, str(1 << 20), "bbo", str(big), "--workers", "2",
                        "--output", str(out_dir / "day.txt")], capture_output=True, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert "shared memory" in err and "file size limit" in err and "write failed" not in err, err
    assert "Traceback" not in err
    only_feed_left(out_dir)                     # no day.parquet, no .day.parquet.<pid>.tmp, no .partial


def test_cli_output_into_missing_directory_exits_1_clean(big, tmp_path):
    p = subprocess.run([sys.executable, "-m", "obook", "bbo", str(big), "--workers", "1", "--output",
                        str(tmp_path / "no" / "day.parquet")], capture_output=True, timeout=120)
    assert p.returncode == 1 and b"error:" in p.stderr and b"Traceback" not in p.stderr


# ---------------------------------------------------------------- stdout closed early

@pytest.mark.parametrize("workers", [1, 2])
def test_cli_stdout_closed_after_first_line_exits_quietly(big, workers):
    p = cli("bbo", big, "--workers", workers)
    first = p.stdout.readline()
    assert first.count(b",") == 5
    kids = wait_for_workers(p, workers) if workers > 1 else []
    p.stdout.close()                           # `| head -1`
    rc = p.wait(timeout=30)
    err = p.stderr.read().decode()
    assert rc == 0, err
    assert err == "", err                      # no traceback, no "Exception ignored ... BrokenPipeError"
    assert_gone(kids)


def test_cli_stdout_closed_by_head_in_shell_pipeline(big):
    p = subprocess.run(f"{sys.executable} -m obook bbo {big} --workers 2 | head -1", shell=True,
                       capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout.count(b"\n") == 1 and p.stderr == b""


# ---------------------------------------------------------------- Ctrl-C

@pytest.mark.parametrize("workers", [1, 2])
def test_cli_sigint_mid_replay_to_file_exits_130_no_file_no_children(big, tmp_path, workers):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    p = cli("bbo", big, "--workers", workers, "--output", out_dir / "day.parquet", start_new_session=True)
    kids = wait_for_workers(p, workers) if workers > 1 else []
    deadline = time.time() + 30
    while not any(out_dir.iterdir()) and time.time() < deadline:   # mid-replay: the temp file grows
        time.sleep(0.01)
    assert p.poll() is None, "replay finished before Ctrl-C; make the feed longer"
    os.killpg(p.pid, signal.SIGINT)            # a terminal's Ctrl-C: the whole process group
    t0 = time.time()
    rc = p.wait(timeout=15)
    err = p.stderr.read().decode()
    assert rc == 130, err
    assert time.time() - t0 < 5
    assert "Traceback" not in err
    assert_gone(kids)
    only_feed_left(out_dir)


def test_cli_sigint_mid_match_exits_130_one_line_no_workers_left(tmp_path):
    """Ctrl-C reaches the whole process group, the matching workers too: only the parent
    answers it (one line, exit 130), and the workers are stopped at once."""
    orders = tmp_path / "orders.parquet"
    subprocess.run([sys.executable, "-m", "obook", "gen", "orders", str(orders), "-n", "600000", "-k", "8"],
                   check=True, capture_output=True)
    out_dir = tmp_path / "out"
    for attempt in range(3):
        p = cli("match", orders, "-o", out_dir, "-w", 2, start_new_session=True)
        kids = wait_for_workers(p, 2, timeout=60)
        time.sleep(0.1 * attempt)
        os.killpg(p.pid, signal.SIGINT)
        rc = p.wait(timeout=30)
        err = p.stderr.read().decode()
        assert rc == 130 and err.strip() == "interrupted", (attempt, rc, err)
        assert_gone(kids, timeout=5)
        assert not out_dir.exists() or not list(out_dir.iterdir())


@pytest.mark.parametrize("signum, code, said", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "")])
def test_cli_sql_signal_mid_streamed_match_exits_its_code_no_workers_left(tmp_path, signum, code, said):
    """A signal while ``obook sql`` reads a matching table from two workers: the command's
    exit code, one line at most, and the workers stopped at once."""
    orders = tmp_path / "orders.parquet"
    subprocess.run([sys.executable, "-m", "obook", "gen", "orders", str(orders), "-n", "2000000", "-k", "8"],
                   check=True, capture_output=True)
    p = cli("sql", f"SELECT * FROM obook_match_events('{orders}', workers := 2) ORDER BY price LIMIT 5",
            start_new_session=True)
    kids = wait_for_workers(p, 2, timeout=60)
    os.killpg(p.pid, signum)
    rc = p.wait(timeout=30)
    err = p.stderr.read().decode()
    assert rc == code and err.strip() == said, (rc, err)
    assert_gone(kids, timeout=5)


def test_cli_sigint_while_blocked_on_full_stdout_pipe_exits_130(big):
    p = cli("bbo", big, "--workers", 2, start_new_session=True)   # nobody reads stdout: blocked
    kids = wait_for_workers(p, 2)
    time.sleep(1.0)
    assert p.poll() is None
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=15)        # drains the pipe, as a pager would on exit
    assert p.returncode == 130, err.decode()
    assert b"Traceback" not in err
    assert_gone(kids)


# ---------------------------------------------------------------- Ctrl-C pressed again

@pytest.mark.parametrize("workers", [1, 2])
def test_convert_ctrl_c_again_while_temp_files_go_leaves_none(python_sigint, big, tmp_path, monkeypatch, workers,
                                                            no_leaks):
    """A second Ctrl-C that lands in the clean-up of the first (a user pressing it twice) used
    to cut it short: a temp file was left beside the outputs. It now waits for the clean-up."""
    out = tmp_path / "out"
    again = []

    def progress(done, phase=None):
        if phase is None and any(out.iterdir()) and not again:   # mid-replay, temp files written: Ctrl-C
            again.append(ctrl_c_at_first_unlink(monkeypatch))   # the first temp file goes: Ctrl-C again
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        obook.convert(big, out, tables="bbo,trades,depth", workers=workers, progress=progress)
    assert again and again[0], "the clean-up removed no temp file"
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == []


def _replay_memfds() -> set[tuple]:
    """This process's descriptors of replays' shared memory, as (descriptor, inode)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "memfd:obook" in os.readlink(f"/proc/self/fd/{fd}"):
                found.add((int(fd), os.stat(f"/proc/self/fd/{fd}").st_ino))
        except OSError:
            pass
    return found


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_replay_ctrl_c_again_while_workers_stop_frees_their_shared_memory(python_sigint, big, monkeypatch,
                                                                         no_leaks):
    """A Ctrl-C that lands as the worker pool closes used to leave its shared memory's
    descriptor open for the life of the process (and the workers to the garbage collector)."""
    from multiprocessing.connection import Connection

    real_send, again = Connection.send, []

    def send(self, obj):
        if obj is None and not again:            # the pool's stop message: Ctrl-C again
            again.append(obj)
            ctrl_c()
        return real_send(self, obj)

    before = _replay_memfds()                    # (an earlier test's reader the collector has not freed yet)
    gen = Replay(big, workers=2).batches()
    next(gen)
    assert _replay_memfds() - before             # its descriptor (and the mapping's copy)
    monkeypatch.setattr(Connection, "send", send)
    try:
        gen.close()     # the inner generator's clean-up: Python drops the interrupt raised there
    except KeyboardInterrupt:
        pass
    assert again and _replay_memfds() - before == set()


def test_interrupts_deferred_signal_inside_raised_once_the_block_ends(python_sigint):
    from obook.interrupts import deferred

    done = []
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            ctrl_c()
            done.append("clean-up")
    assert done == ["clean-up"] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with deferred():                             # nothing came: nothing raised
        _tick()


# ---------------------------------------------------------------- a stopped worker

def _stop_a_worker_after_first_batch(batches, seconds: float) -> None:
    """Take the first batch, SIGSTOP a worker, expect a WorkerError naming it (no hang)."""
    with watchdog(seconds, hard=False):
        assert next(batches).num_rows > 0
        victim = worker_children()[-1]
        victim.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(obook.WorkerError, match=f"pid {victim.pid}.*stopped"):
                for _ in batches:
                    pass
        finally:
            try:
                victim.send_signal(signal.SIGCONT)
            except psutil.NoSuchProcess:
                pass


def test_replay_worker_sigstopped_mid_replay_raises_worker_error_naming_it(big, no_leaks):
    """A worker that makes no progress (SIGSTOP, a wedge) used to hang the replay forever."""
    reader = obook.bbo(big, workers=2)
    batches = iter(reader)
    _stop_a_worker_after_first_batch(batches, 60)
    del batches, reader


def test_replay_worker_sigstopped_before_an_oversize_record_raises_worker_error(tmp_path, no_leaks):
    """A record longer than a slot used to be sent through the worker's pipe: with the
    worker stopped, the send blocked for good once the pipe was full."""
    from obook.gen.csv import write_csv

    path = tmp_path / "huge.csv"
    write_csv(path, 2_000, 20, seed=4)
    with open(path, "ab") as f:                  # then one 16 MiB line (long ignored fields)
        f.write(b"34300000,AAA,1,B,5,100," + b"9" * (16 << 20) + b"\n")
    # one batch in flight: the huge line is submitted when the first batch's rows are taken
    batches = Replay(path, workers=2, slots=1).batches()
    _stop_a_worker_after_first_batch(batches, 90)
    batches.close()


def test_replay_oversize_records_two_workers_equal_one(tmp_path):
    from obook.gen.csv import write_csv

    path = tmp_path / "long.csv"
    write_csv(path, 20_000, 5, seed=6)
    with open(path, "ab") as f:                  # long trailing fields are ignored
        f.write(b"34300000,XYZ,77,B,5,100," + b"x" * (5 << 20) + b"\n34300001,XYZ,78,S,7,300\n")
    one = obook.bbo(path, workers=1).read_all()
    two = obook.bbo(path, workers=2).read_all()
    assert two.equals(one) and one.num_rows > 2
    assert one.slice(one.num_rows - 2).column("ticker").to_pylist() == ["XYZ", "XYZ"]


def test_replay_worker_paused_briefly_is_not_killed_rows_complete(tmp_path, no_leaks):
    """A slow but live worker (here paused for a second, well under the stop limit) is waited
    for: the replay completes with the same rows as one worker."""
    path = tmp_path / "day.itch"
    write_itch(path, 400_000, 50, seed=5)
    expected = obook.bbo(path, workers=1).read_all()
    got = []
    with watchdog(120, hard=False):
        for i, batch in enumerate(obook.bbo(path, workers=2)):
            got.append(batch)
            if i == 0:
                victim = worker_children()[-1]
                victim.send_signal(signal.SIGSTOP)
                time.sleep(1.0)
                victim.send_signal(signal.SIGCONT)
    import pyarrow as pa
    assert pa.Table.from_batches(got).equals(expected)


# ---------------------------------------------------------------- inside a daemonic process

IN_POOL = textwrap.dedent("""
    import multiprocessing as mp, sys
    import obook
    def rows(path):
        return obook.bbo(path).read_all().num_rows, obook.bbo(path, workers=2).read_all().num_rows
    if __name__ == "__main__":
        with mp.get_context("fork").Pool(1) as pool:    # pool workers are daemonic: no children
            print(*pool.apply(rows, (sys.argv[1],)))
""")


def test_replay_inside_multiprocessing_pool_worker_falls_back_to_one_process(tmp_path):
    path = tmp_path / "day.itch"
    write_itch(path, 20_000, 10, seed=2)
    script = tmp_path / "in_pool.py"
    script.write_text(IN_POOL)
    p = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    n = obook.bbo(path, workers=1).read_all().num_rows
    assert p.stdout.split() == [str(n).encode()] * 2


# ---------------------------------------------------------------- temp files and output failures

def _start_mid_replay(big, out_dir, workers=2, **kw):
    p = cli("bbo", big, "--workers", workers, "--output", out_dir / "day.parquet", start_new_session=True, **kw)
    kids = wait_for_workers(p, workers) if workers > 1 else []
    deadline = time.time() + 60
    while not any(out_dir.iterdir()) and time.time() < deadline:   # the temp file exists
        time.sleep(0.01)
    assert p.poll() is None, "replay finished too early; make the feed longer"
    return p, kids


def test_cli_sigterm_mid_replay_exits_143_no_temp_file_no_children(big, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    p, kids = _start_mid_replay(big, out_dir)
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=30)
    assert rc == 143, p.stderr.read().decode()
    assert_gone(kids, timeout=15)
    only_feed_left(out_dir)


def test_cli_sighup_mid_replay_exits_129_no_temp_file_no_children(big, tmp_path):
    """A closed terminal or ssh session (SIGHUP) unwinds like SIGTERM: no temp file is left
    beside the output, no worker outlives the command."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    # as a terminal's session starts it: SIGHUP at its default (a test run under nohup ignores it)
    p, kids = _start_mid_replay(big, out_dir, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    os.killpg(p.pid, signal.SIGHUP)            # the terminal's whole process group
    rc = p.wait(timeout=30)
    err = p.stderr.read().decode()
    assert rc == 129 and "Traceback" not in err, (rc, err)
    assert_gone(kids, timeout=15)
    only_feed_left(out_dir)


def test_cli_error_after_an_earlier_command_was_interrupted_still_exits_1(tmp_path, capsys):
    """An interrupt raised in an earlier command of the same process (tests, an embedding
    program) does not turn a later command's error into an interrupted exit."""
    from obook import interrupts

    from cli_support import cli_run

    with pytest.raises(SystemExit):
        interrupts.interrupted(signal.SIGTERM, sys._getframe())
    code, err = cli_run(capsys, "bbo", tmp_path / "missing.itch")
    assert code == 1 and err.startswith("error: "), err


def test_cli_sighup_ignored_by_nohup_stays_ignored():
    code = ("import signal; signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
            "from obook.interrupts import unwind_on_signals; unwind_on_signals()\n"
            "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout == "True\n", r.stderr


def test_cli_sigint_ignored_by_the_starting_shell_stays_ignored():
    """A script's ``obook ... &`` starts with Ctrl-C ignored (the shell's choice for a
    background job); the command keeps it ignored, as Python does, and SIGTERM still unwinds."""
    code = ("import signal\n"
            "from obook.interrupts import unwind_on_signals; unwind_on_signals()\n"
            "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, callable(signal.getsignal(signal.SIGTERM)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert r.stdout == "True True\n", r.stderr


def test_cli_sigterm_as_replay_starts_always_exits_143(big, tmp_path):
    """A SIGTERM just as the replay starts (numba loading kernels, workers forking) used to
    be dropped by an llvmlite callback, a finaliser or an after-fork hook (exit 0 after the
    whole replay, about one run in five) or to leave an LLVM module freed twice (a segfault,
    "double free detected"): the CLI now sends it again where raising is unsafe."""
    codes = []
    for i in range(15):
        out_dir = tmp_path / str(i)
        out_dir.mkdir()
        p = cli("bbo", big, "--workers", 2, "--output", out_dir / "day.parquet", start_new_session=True)
        deadline = time.time() + 60
        while not any(out_dir.iterdir()) and time.time() < deadline:   # the temp file: a sink, then the replay
            time.sleep(0.001)
        time.sleep(0.004 * i)          # 0 to 56 ms: the kernels load, the workers fork
        p.send_signal(signal.SIGTERM)
        codes.append((p.wait(timeout=60), p.stderr.read().decode()[-300:]))
    assert [c for c, _ in codes] == [143] * 15, [c for c in codes if c[0] != 143]


@pytest.fixture
def sent(monkeypatch) -> list:
    """The signals sent again: each (delay, function, arguments) of a threading.Timer made
    (and not started)."""
    made = []

    class Timer:
        def __init__(self, delay, fn, args):
            made.append((delay, fn, args))

        def start(self):
            pass

    monkeypatch.setattr("threading.Timer", Timer)
    return made


def test_cli_signal_inside_a_finaliser_is_sent_again_not_raised(sent):
    from obook import interrupts

    def __del__():      # a finaliser's frame (a function, so no real finaliser runs later)
        return interrupts.interrupted(signal.SIGTERM, sys._getframe())

    assert __del__() is None and sent == [(0.01, os.kill, (os.getpid(), signal.SIGTERM))]
    with pytest.raises(SystemExit) as e:
        interrupts.interrupted(signal.SIGTERM, sys._getframe())
    assert e.value.code == 143
    with pytest.raises(KeyboardInterrupt):
        interrupts.interrupted(signal.SIGINT, sys._getframe())


def _signal_inside_an_import(monkeypatch, signum: int) -> None:
    """``signum`` to obook's handler while a module is imported (one that does not exist)."""
    import importlib
    import importlib.abc

    from obook import interrupts

    class Signalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "obook_no_such_module":
                interrupts.interrupted(signum, sys._getframe())
            return None

    monkeypatch.setattr(sys, "meta_path", [Signalled(), *sys.meta_path])
    with pytest.raises(ImportError):
        importlib.import_module("obook_no_such_module")


def test_cli_signal_inside_an_import_is_sent_again_not_raised(monkeypatch, sent):
    """A library may import inside a handler that drops what the import raises (pyarrow's
    first look for pandas did): a signal that lands in an import is sent again."""
    _signal_inside_an_import(monkeypatch, signal.SIGTERM)
    assert sent == [(0.01, os.kill, (os.getpid(), signal.SIGTERM))]


def test_cli_signal_inside_an_import_known_as_raised_before_it_is_sent_again(monkeypatch, sent):
    """A Ctrl-C also stops DuckDB's query at once (``interrupting``), whose own error may reach
    the command before the signal sent again is raised: the command knows it was interrupted,
    and says so instead of "error: query failed: INTERRUPT Error: Interrupted!"."""
    from obook import interrupts

    _signal_inside_an_import(monkeypatch, signal.SIGINT)
    assert (interrupts.raised, len(sent)) == (signal.SIGINT, 1)


def test_cli_signal_dropped_by_a_weakref_callback_is_sent_again(monkeypatch):
    """numba's type cache clears entries from weakref callbacks; an interrupt raised there
    reaches only ``sys.unraisablehook``, which must send the signal again, not print it."""
    import weakref

    from obook import interrupts

    sent, other = [], []

    class Timer:
        def __init__(self, delay, fn, args):
            sent.append(args[1])

        def start(self):
            pass

    monkeypatch.setattr("threading.Timer", Timer)
    monkeypatch.setattr(sys, "unraisablehook", lambda u: interrupts.dropped(u, _hook=other.append))

    class Type:
        pass

    def raising(code):
        def callback(ref):
            if code == "int":
                raise KeyboardInterrupt
            if code == "value":
                raise ValueError("a real bug")
            raise SystemExit(code)
        return callback

    for code in (143, 130, "int", "value"):
        t = Type()
        ref = weakref.ref(t, raising(code))
        del t
        assert ref() is None
    assert sent == [signal.SIGTERM, signal.SIGINT, signal.SIGINT]
    assert len(other) == 1 and isinstance(other[0].exc_value, ValueError)


def test_cli_sigkilled_writer_temp_file_removed_by_next_run(big, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    p, kids = _start_mid_replay(big, out_dir)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    assert_gone(kids, timeout=15)
    left = [x.name for x in out_dir.iterdir()]
    assert left == [f".day.parquet.{p.pid}.tmp"]
    small = tmp_path / "small.itch"
    write_itch(small, 5_000, 5, seed=1)
    done = subprocess.run([sys.executable, "-m", "obook", "bbo", str(small), "--workers", "1", "--output",
                           str(out_dir / "day.parquet")], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert [x.name for x in out_dir.iterdir()] == ["day.parquet"]


def test_write_file_cleanup_unlink_failing_keeps_the_write_error(tmp_path, monkeypatch):
    """On a read-only file system the cleanup's own unlink fails too: the error reported is
    still the write's OutputError."""
    import errno
    import pyarrow as pa
    from obook.output import write_file

    def batches():
        yield pa.record_batch({"a": [1]})
        raise OSError(errno.EROFS, "Read-only file system")

    def unlink(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    reader = pa.RecordBatchReader.from_batches(pa.schema({"a": pa.int64()}), batches())
    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(obook.OutputError, match="write failed: Read-only file system"):
        write_file(reader, tmp_path / "x.parquet")


def test_convert_output_directory_removed_mid_run_raises_output_error(big, tmp_path):
    import shutil

    out = tmp_path / "out"

    def progress(done, phase=None):
        shutil.rmtree(out, ignore_errors=True)

    with pytest.raises(obook.OutputError, match="write failed"):
        obook.convert(big, out, tables="bbo", workers=1, progress=progress)


@pytest.mark.parametrize("command", ["convert", "lobster"])
def test_cli_convert_and_lobster_on_full_disk_exit_1_no_temp_file(big, tmp_path, command):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = (["convert", str(big), str(out_dir), "--tables", "bbo,orders", "--workers", "1"]
            if command == "convert" else
            ["lobster", str(big), str(out_dir), "--tickers", obook.symbols(big).read_all()["stock"][0].as_py(),
             "--date", "2020-01-02", "--workers", "1"])
    limit = 1 << 20 if command == "convert" else 1 << 16     # lobster: a ticker's files are small
    p = subprocess.run([sys.executable, "-c", FULL_DISK, str(limit)] + args, capture_output=True, timeout=300)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert "error:" in err and "write failed" in err and "Traceback" not in err, err
    only_feed_left(out_dir)


MANIFEST_FULL = textwrap.dedent("""
    import resource, signal, sys
    from pathlib import Path
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))
    from obook.pipelines import PipelineError, manifest
    try:
        manifest.write(Path(sys.argv[1]), {"days": {"x": "y" * 200_000}, "failed": {}})
    except PipelineError as e:
        print("PipelineError:", e)
""")


def test_pipeline_manifest_write_on_full_disk_pipeline_error_no_temp_file(tmp_path):
    p = subprocess.run([sys.executable, "-c", MANIFEST_FULL, str(tmp_path)], capture_output=True, timeout=120)
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr.decode()
    assert b"PipelineError:" in p.stdout and b"write failed" in p.stdout
    only_feed_left(tmp_path)


# ---------------------------------------------------------------- startup races

def test_cli_sigint_while_workers_start_exits_130_no_traceback(big, tmp_path):
    """Ctrl-C as soon as the first of 8 workers exists (the others are being forked): exit
    130, no traceback from a child's after-fork hooks, no worker left; five times over."""
    for attempt in range(5):
        out_dir = tmp_path / f"out{attempt}"
        out_dir.mkdir()
        p = cli("bbo", big, "--workers", 8, "--output", out_dir / "day.parquet", start_new_session=True)
        kids = wait_for_workers(p, 1, timeout=60)
        os.killpg(p.pid, signal.SIGINT)
        rc = p.wait(timeout=60)
        err = p.stderr.read().decode()
        assert rc == 130 and "Traceback" not in err, (attempt, rc, err)
        assert_gone(kids + [k for k in psutil.Process().children(recursive=True) if k.pid in
                            {c.pid for c in kids}], timeout=15)
        only_feed_left(out_dir)


def test_worker_whose_parent_left_before_sending_the_memory_exits_quietly():
    """A parent interrupted while it starts its workers closes their pipes before it hands
    them the shared memory: the worker exits without a traceback on the terminal."""
    code = textwrap.dedent("""
        import multiprocessing as mp
        from obook.engine import worker_main
        parent, child = mp.Pipe(duplex=True)
        parent.close()
        worker_main.run(child, None, "day.itch", 0, 1, "raise", 1, 1, 1, {}, 0, 10, 1, parent_pid=None)
        print("returned")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "returned\n", "")


def test_worker_shared_memory_descriptor_not_received_worker_error_names_the_limit(monkeypatch):
    """A worker whose descriptor table is full gets the parent's message without its
    descriptor (the kernel drops it): a WorkerError naming the open files limit, not
    "received 0 items of ancdata"."""
    from obook.engine import worker_main

    def recv_handle(conn):
        raise RuntimeError("received 0 items of ancdata")

    monkeypatch.setattr(worker_main.reduction, "recv_handle", recv_handle)
    with pytest.raises(obook.WorkerError, match=r"descriptor did not arrive: too many open files .*ulimit -n"):
        worker_main._shared_memory(None)


def test_forkserver_preload_ignores_ctrl_c_before_the_kernels_load():
    """The forkserver (next to DuckDB's or polars' threads) ignores Ctrl-C once it serves; a
    Ctrl-C to the process group while it still loads the kernels must not end it with a
    KeyboardInterrupt traceback either."""
    code = textwrap.dedent("""
        import signal, sys
        import obook.engine.worker_main as w
        w.warm = lambda formats=(): print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
        import obook.engine.forkserver_preload
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout == "True\n", r.stderr


def test_worker_whose_parent_died_before_pdeathsig_exits_at_once():
    """The parent's pid comes from the parent: a worker that finds another parent after setting
    PR_SET_PDEATHSIG (its parent died first) exits instead of living on."""
    from obook.engine.worker_main import _die_with_parent

    pid = os.fork()
    if pid == 0:                                  # the child: its "parent" is some other pid
        try:
            _die_with_parent(os.getppid() + 1_000_000)
        finally:
            os._exit(3)                           # still running: the check failed
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("command", ["pipeline", "bbo"])
def test_cli_ctrl_c_in_any_command_says_interrupted_and_exits_130(command, tmp_path, monkeypatch, capsys):
    """typer ends a command Ctrl-C interrupted with a silent exit 130; obook says so in one line."""
    import obook.engine.replay
    import obook.pipelines
    from obook import interrupts

    from cli_support import cli_run

    def ctrl_c(*args, **kwargs):
        interrupts.interrupted(signal.SIGINT, sys._getframe())

    toml = tmp_path / "p.toml"
    toml.write_text('[source]\ndirectory = "."\nglob = "*.itch"\n[convert]\ntables = ["bbo"]\n'
                    '[dataset]\npath = "ds"\n')
    feed = tmp_path / "day.itch"
    feed.write_bytes(b"")
    monkeypatch.setattr(obook.pipelines, "run", ctrl_c)
    monkeypatch.setattr(obook.engine.replay, "Replay", ctrl_c)
    args = ("pipeline", "run", toml) if command == "pipeline" else ("bbo", feed, "-o", tmp_path / "o.parquet")
    code, err = cli_run(capsys, *args)
    assert code == 130 and err.strip().endswith("interrupted") and "Traceback" not in err, (code, err)


def test_interrupting_signal_calls_stop_from_a_thread_at_once():
    """Native code holding the main thread (a DuckDB query) may never run Python's signal
    handler: inside ``interrupting`` the signal calls ``stop`` from a thread right away."""
    import threading

    from obook.interrupts import interrupting

    called = threading.Event()
    old = signal.signal(signal.SIGUSR1, lambda *a: None)
    try:
        with interrupting(called.set):
            os.kill(os.getpid(), signal.SIGUSR1)
            assert called.wait(5)
        called.clear()
        os.kill(os.getpid(), signal.SIGUSR1)       # outside: nothing watches any more
        assert not called.wait(0.3)
        assert signal.set_wakeup_fd(-1) == -1
    finally:
        signal.signal(signal.SIGUSR1, old)


def test_interrupting_signal_of_a_forked_child_does_not_stop_the_parent():
    """A worker forked while the query runs, stopped by a signal, must not stop the query."""
    import threading

    from obook.interrupts import interrupting

    called = threading.Event()
    old = signal.signal(signal.SIGUSR1, lambda *a: None)
    try:
        with interrupting(called.set):
            pid = os.fork()
            if pid == 0:
                os.kill(os.getpid(), signal.SIGUSR1)
                os._exit(0)
            os.waitpid(pid, 0)
            assert not called.wait(0.5)
    finally:
        signal.signal(signal.SIGUSR1, old)


# ---------------------------------------------------------------- a worker blocked on its reply

class _BigFinish:
    """An observer whose end-of-day rows are far more than a pipe holds."""

    def worker(self, worker: int, n_workers: int):
        return self

    def batch(self, events, n, names) -> None:
        pass

    def finish(self) -> dict:
        return {"rows": b"x" * (32 << 20)}


def test_worker_pool_close_while_workers_send_large_replies_stops_them_without_terminating(tmp_path, caplog,
                                                                                           no_leaks):
    """Ctrl-C while the workers hand over their end-of-day rows (obook simulate's): the pool
    closes with the workers blocked writing replies nobody reads; they must still take the
    stop message, not wait to be terminated 2 s each with a warning."""
    import logging

    from obook.engine.workers import WorkerPool

    feed = tmp_path / "day.itch"
    write_itch(feed, 2000, 5, seed=3)
    pool = WorkerPool("itch", str(feed), 2, "raise", 2, 1 << 20, observer=_BigFinish())
    procs = list(pool.procs)
    for c in pool.conns:
        c.send(("stats",))
    deadline = time.time() + 10
    while time.time() < deadline and not all(psutil.Process(p.pid).status() == psutil.STATUS_SLEEPING
                                             and _writing(p.pid) for p in procs):
        time.sleep(0.05)
    with caplog.at_level(logging.WARNING, logger="obook"):
        pool.close()
    assert "did not stop" not in caplog.text
    assert [p.exitcode for p in procs] == [0, 0]


def _writing(pid: int) -> bool:
    """Process ``pid`` is in a write(2) (Linux: /proc/PID/syscall starts with its number, 1)."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split()[0] == "1"
    except (OSError, IndexError):
        return False


# ---------------------------------------------------------------- a signal while a query runs

def _replay_in_a_thread(feed) -> list:
    """What ``obook.bbo(feed)`` read in a thread other than the main one (as DuckDB runs a
    table function) gives: its rows, or ``"stopped"`` for a KeyboardInterrupt."""
    import threading

    outcome = []

    def run():
        try:
            outcome.append(obook.bbo(feed, workers=1).read_all().num_rows)
        except KeyboardInterrupt:
            outcome.append("stopped")

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return outcome


def test_replay_outside_the_main_thread_stops_once_a_signal_came_while_interrupting(tmp_path):
    """``obook sql`` on obook_simulate: the simulation runs in DuckDB's thread, whose Python
    code DuckDB's interrupt cannot stop, nor the main thread's handler: a signal noted by
    ``interrupting`` stops it at its next batch, not at its end."""
    from obook import interrupts

    feed = tmp_path / "day.itch"
    write_itch(feed, 20000, 5, seed=3)
    interrupts.signalled.set()
    try:
        assert _replay_in_a_thread(feed) == ["stopped"]
    finally:
        interrupts.signalled.clear()
    assert _replay_in_a_thread(feed)[0] > 0          # cleared: replays run to their end again


def test_interrupting_notes_a_signal_for_other_threads_until_it_ends():
    import threading

    from obook import interrupts

    stopped = threading.Event()
    before = signal.signal(signal.SIGINT, lambda *a: None)     # a handler that raises nothing
    try:
        with interrupts.interrupting(stopped.set):
            assert not interrupts.signalled.is_set()
            ctrl_c()
            assert stopped.wait(10)
            assert interrupts.signalled.is_set()
        assert not interrupts.signalled.is_set()
    finally:
        signal.signal(signal.SIGINT, before)
