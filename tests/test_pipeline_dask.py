"""The dask executor: a real ``dask scheduler`` and two ``dask worker`` processes on loopback;
one worker is SIGKILLed mid-run and every day is still done exactly once, with the output
the local executor gives."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed")
from distributed import Client  # noqa: E402

from obook.pipelines import load, manifest, run  # noqa: E402
from pipeline_support import DAYS, TABLES, dataset_tables, write_days, write_pipeline  # noqa: E402



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "dask", *args]      # the `dask` command of this interpreter


@pytest.fixture()
def cluster(tmp_path):
    """{"address": ..., "workers": {address: Popen}}; always torn down."""
    procs: list[subprocess.Popen] = []
    logs = tmp_path / "dask-logs"
    logs.mkdir()

    def start(name, *args):
        out = open(logs / f"{name}.log", "w")
        p = subprocess.Popen(_dask_cmd(*args), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(p)
        return p

    try:
        port = _free_port()
        address = f"tcp://127.0.0.1:{port}"
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
        workers = {}
        for i in range(2):
            wport = _free_port()
            p = start(f"worker{i}", "worker", address, "--host", "127.0.0.1", "--worker-port", str(wport),
                      "--nthreads", "1", "--no-nanny", "--no-dashboard", "--memory-limit", "0",
                      "--local-directory", str(tmp_path / f"w{i}"))
            workers[f"tcp://127.0.0.1:{wport}"] = p
        deadline = time.monotonic() + 60
        with Client(address, timeout="30s") as c:
            while len(c.scheduler_info()["workers"]) < 2:
                assert time.monotonic() < deadline, "dask workers did not connect"
                time.sleep(0.1)
        yield {"address": address, "workers": workers, "logs": logs}
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


def test_pipeline_dask_worker_killed_every_day_once_same_as_local(cluster, tmp_path):
    days = tmp_path / "days"
    write_days(days)
    local = load(write_pipeline(tmp_path / "local.toml", days, tmp_path / "ds-local"))
    assert run(local)["failed"] == {}

    addr = cluster["address"].removeprefix("tcp://")
    toml = write_pipeline(tmp_path / "dask.toml", days, tmp_path / "ds-dask", executor=f"dask://{addr}",
                          retries=1, days_at_once=2)
    proc = subprocess.Popen([sys.executable, "-m", "obook", "pipeline", "run", str(toml), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    try:
        with Client(cluster["address"], timeout="30s") as c:
            deadline = time.monotonic() + 60
            while killed is None and time.monotonic() < deadline and proc.poll() is None:
                for worker, keys in c.processing().items():
                    if keys and any(str(k).startswith("obook-day-") for k in keys):
                        killed = worker
                        cluster["workers"][worker].send_signal(signal.SIGKILL)
                        break
                else:
                    time.sleep(0.02)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert killed is not None, "no day task was seen running"
    assert cluster["workers"][killed].wait(timeout=10) == -signal.SIGKILL
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["converted"] == sorted(DAYS.values()) and summary["failed"] == {}

    doc = manifest.read(tmp_path / "ds-dask")
    assert sorted(doc["days"]) == sorted(DAYS.values())
    assert not (tmp_path / "ds-dask" / ".tmp").exists()
    got, want = dataset_tables(tmp_path / "ds-dask"), dataset_tables(tmp_path / "ds-local")
    assert sorted(got) == sorted(want) == sorted((t, d) for t in TABLES for d in DAYS.values())
    for key in want:
        assert got[key][0].equals(want[key][0]), key
        assert json.loads(got[key][1]) == json.loads(want[key][1]), key


def test_pipeline_dask_feed_error_day_not_retried(cluster, tmp_path):
    """A truncated day fails on its feed: trying it again gives the same, so the Dask run
    records one attempt though retries = 2; the other days complete."""
    days = tmp_path / "days"
    files = write_days(days)
    data = files["2019-12-31"].read_bytes()
    files["2019-12-31"].write_bytes(data[:len(data) // 2 + 3])
    addr = cluster["address"].removeprefix("tcp://")
    p = load(write_pipeline(tmp_path / "dask.toml", days, tmp_path / "ds", executor=f"dask://{addr}",
                            retries=2, days_at_once=2))
    summary = run(p)
    assert list(summary["failed"]) == ["2019-12-31"]
    assert sorted(summary["converted"]) == ["2019-12-30", "2020-01-02"]
    assert manifest.read(tmp_path / "ds")["failed"]["2019-12-31"]["attempts"] == 1
