"""Many days: obook backtest over a pipeline's TOML (its source days), a pipeline's
dataset (the days its manifest has done) and on a Dask cluster; one process (or task)
per day, the tables concatenated with a date column, each day as its own backtest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from obook.cli import app
from pipeline_support import DAYS, write_days, write_pipeline

STRATEGY = '''
from obook.backtest.orders import Order


class Take:
    """Buys 100 IOC at the ask of its first three book changes of each instrument."""

    def __init__(self):
        self.n = {}

    def __call__(self, top):
        n = self.n.get(top.ticker, 0)
        if n >= 3 or top.ask_px is None or top.bid_px is None:
            return None
        self.n[top.ticker] = n + 1
        return [Order("enter", top.ticker, "B", 100, top.ask_px, ref=len(self.n) * 10 + n, tif="IOC")]
'''


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    d = tmp_path_factory.mktemp("bt_days")
    files = write_days(d / "src")
    (d / "take.py").write_text(STRATEGY)
    return d, files


def _run(*args):
    r = CliRunner().invoke(app, ["backtest", *map(str, args)])
    assert r.exit_code == 0, r.output
    return r


def _fills(folder):
    return pq.read_table(folder / "backtest.fills.parquet")


def test_backtest_days_pipeline_toml_dates_and_each_day_alone(days, tmp_path):
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy

    d, files = days
    toml = write_pipeline(tmp_path / "p.toml", d / "src", tmp_path / "dataset")
    _run(toml, "--strategy", f"{d / 'take.py'}:Take", "-p", "2", "-o", tmp_path / "out")
    fills = _fills(tmp_path / "out")
    assert fills.column_names[0] == "date"
    assert sorted(set(fills.column("date").to_pylist())) == sorted(DAYS.values())
    for date, path in files.items():
        alone = backtest(str(path), load_strategy(f"{d / 'take.py'}:Take")).fills
        mine = fills.filter(pc.equal(fills.column("date"), date)).drop_columns(["date"])
        assert alone.num_rows > 0 and mine.to_pylist() == alone.to_pylist()
    import json

    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert sorted(run["feeds"]) == sorted(DAYS.values())


def test_backtest_days_dataset_manifest_days_by_date(days, tmp_path):
    from obook.pipelines import manifest

    d, files = days
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    doc = manifest.read(dataset)
    for date, path in list(files.items())[:2]:          # two days done, the third not
        doc["days"][date] = {"source": path.name, "path": str(path), "size": 0, "sha256": ""}
    manifest.write(dataset, doc)
    _run(dataset, "--strategy", f"{d / 'take.py'}:Take", "-o", tmp_path / "out")
    dates = _fills(tmp_path / "out").column("date").to_pylist()
    assert sorted(set(dates)) == sorted(list(files)[:2])
    summary = __import__("json").loads((tmp_path / "out" / "summary.json").read_text())
    assert sorted(summary) == sorted(list(files)[:2])


def test_backtest_days_folder_without_days_refused(days, tmp_path):
    from obook.errors import ObookError

    d, _ = days
    r = CliRunner().invoke(app, ["backtest", str(tmp_path), "--strategy", f"{d / 'take.py'}:Take"])
    assert r.exit_code != 0 and isinstance(r.exception, ObookError)
    assert "not a pipeline dataset" in str(r.exception)


def test_backtest_days_on_a_dask_cluster_same_tables(days, tmp_path):
    pytest.importorskip("distributed")
    from obook.backtest.days import backtest_days

    d, files = days
    paths = list(files.values())[:2]
    local = backtest_days(paths, f"{d / 'take.py'}:Take")
    # the cluster lives in a process of its own: Dask's threads outlive a LocalCluster, and a
    # live thread in this process would change how later tests start their workers
    out = tmp_path / "remote"
    script = DASK_RUN.format(paths=[str(p) for p in paths], strategy=f"{d / 'take.py'}:Take", out=str(out))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    for name in ("fills", "orders", "equity"):
        assert pq.read_table(out / f"{name}.parquet").to_pylist() == getattr(local, name).to_pylist()
    assert json.loads(run.stdout.strip().splitlines()[-1]) == [str(k) for k in list(files)[:2]]


DASK_RUN = """
import json, pathlib
import pyarrow.parquet as pq
from distributed import LocalCluster
from obook.backtest.days import backtest_days

out = pathlib.Path({out!r})
out.mkdir()
with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
    remote = backtest_days({paths!r}, {strategy!r}, executor="dask://" + cluster.scheduler_address, processes=2)
for name in ("fills", "orders", "equity"):
    pq.write_table(getattr(remote, name), out / (name + ".parquet"))
print(json.dumps([str(k) for k in remote.summary]))
"""


CSV_DAY = "Time,Ticker,Order,T,Shares,Price\n" + "".join(
    f"{t},AAA,o{t},{'B' if t % 2 else 'S'},100,{990 - t % 7 if t % 2 else 1000 + t % 5}\n" for t in range(1, 60))

RAISING = '''
from obook.backtest.orders import Order

class Join:
    def __init__(self):
        self.n = 0
    def __call__(self, top):
        self.n += 1
        if self.n == 3:
            raise RuntimeError("broken on purpose")
        return [Order("enter", top.ticker, "B", 10, top.bid_px or 990, ref=self.n, tif="GTC")]
'''


@pytest.mark.parametrize("bad_day", ["strategy", "feed"])
def test_backtest_days_raising_strategy_or_bad_feed_exits_1_partial_kept(tmp_path, bad_day):
    (tmp_path / "s.py").write_text(RAISING if bad_day == "strategy" else STRATEGY)
    feeds = []
    for d in ("2024-01-02", "2024-01-03"):
        p = tmp_path / f"{d}.csv"
        p.write_text(CSV_DAY + ("99,AAA,zz,Q,1,1\n" if bad_day == "feed" and d == "2024-01-03" else ""))
        feeds.append(str(p))
    out = tmp_path / "out"
    name = "Join" if bad_day == "strategy" else "Take"
    r = subprocess.run([sys.executable, "-m", "obook", "backtest", *feeds, "--strategy", f"{tmp_path / 's.py'}:{name}",
                        "--format", "csv", "-p", "2", "-o", str(out)], capture_output=True, text=True, timeout=300)
    last = r.stderr.splitlines()[-1]
    assert r.returncode == 1 and last.startswith("error: "), r.stderr
    if bad_day == "strategy":
        assert "broken on purpose" in last
    else:
        assert "2024-01-03.csv: line 61: unknown message type 'Q'" in last and "Traceback" not in r.stderr
    orders = pq.read_table(out / "backtest.orders.parquet.partial")
    run = json.loads((out / "run.json").read_text())
    # the days before the first failing one whole, that day's rows up to its failure; run.json
    # names the days the tables hold
    failed = 0 if bad_day == "strategy" else 1      # the raising strategy fails on both days
    days = ["2024-01-02", "2024-01-03"][:failed + 1]
    assert sorted(set(orders["date"].to_pylist())) == days
    assert run["feeds"] == {d: str(Path(f).resolve()) for d, f in zip(days, feeds)}


@pytest.mark.parametrize("given, read", [("LOCAL", "local"), ("Local", "local"), (None, None),
                                         ("DASK://host:8786", "dask://host:8786")])
def test_check_executor_words_in_any_case_are_those_words(given, read):
    from obook.backtest.days import check_executor

    assert check_executor(given) == read


def _undetected_days(files, folder) -> list:
    """ITCH days whose first message (W) tells no format, named with a date another format's
    rule reads (``20240301.dat``)."""
    feeds = []
    for name, src in zip(("20240301.dat", "20240304.dat"), files.values()):
        w = b"W" + bytes(11)
        (folder / name).write_bytes(len(w).to_bytes(2, "big") + w + src.read_bytes())
        feeds.append(folder / name)
    return feeds


def test_backtest_days_forced_format_names_days_by_its_rule(days, tmp_path):
    """--format itch names the days by ITCH's rule (a Nasdaq file name, else the file's), not
    by another format's date in the name."""
    d, files = days
    feeds = _undetected_days(files, tmp_path)
    _run(*feeds, "--format", "itch", "--strategy", f"{d / 'take.py'}:Take", "-o", tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert sorted(summary) == ["20240301", "20240304"]
    assert sorted(set(_fills(tmp_path / "out").column("date").to_pylist())) == ["20240301", "20240304"]


def test_backtest_days_python_forced_format_names_days_by_its_rule(days, tmp_path):
    from obook.backtest.days import backtest_days

    d, files = days
    r = backtest_days(_undetected_days(files, tmp_path), f"{d / 'take.py'}:Take", format="itch")
    assert sorted(r.summary) == ["20240301", "20240304"]


WAITS = '''
import os, time


class Waits:
    """Marks its day as started, then waits (a strategy stuck in a long computation)."""

    def __init__(self):
        self.marked = False

    def on_book(self, ctx):
        if not self.marked:
            self.marked = True
            open(os.path.join(os.environ["OBOOK_TEST_MARKS"], str(os.getpid())), "w").close()
        while True:
            time.sleep(0.01)
'''


def test_backtest_days_ctrl_c_while_days_run_stops_them_and_starts_none(tmp_path):
    """A terminal's Ctrl-C reaches the command and its day processes: each running day stops,
    no day still queued starts, and the command exits 130 with no process left behind."""
    import os
    import signal
    import time

    import psutil

    day = "Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1000\n2,AAA,b,B,100,990\n"
    feeds = []
    for name in ("d1", "d2", "d3", "d4"):
        (tmp_path / f"{name}.csv").write_text(day)
        feeds.append(str(tmp_path / f"{name}.csv"))
    (tmp_path / "s.py").write_text(WAITS)
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "OBOOK_TEST_MARKS": str(marks)}
    p = subprocess.Popen([sys.executable, "-m", "obook", "backtest", *feeds, "-f", "csv", "--strategy",
                          f"{tmp_path / 's.py'}:Waits", "-p", "2"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True, env=env, cwd=tmp_path)
    try:
        while len(os.listdir(marks)) < 2 and p.poll() is None:     # both day processes in their strategy
            time.sleep(0.01)
        kids = psutil.Process(p.pid).children(recursive=True)
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err.decode()
    assert err.decode().strip().splitlines()[-1] == "interrupted"
    assert len(os.listdir(marks)) == 2          # the days queued behind them never started
    assert not [k for k in kids if k.is_running() and k.status() != psutil.STATUS_ZOMBIE]


MARKS_THEN_RAISES = '''
import os

MARKS = {marks!r}       # a forkserver started by an earlier test has an older environment


class Raises:
    """Marks its day as started, then raises at its first call."""

    def __init__(self):
        open(os.path.join(MARKS, str(id(self))), "w").close()

    def on_book(self, ctx):
        raise ValueError("first call")
'''


@pytest.mark.parametrize("processes", [1, 2])
def test_backtest_days_day_that_fails_starts_no_later_day(tmp_path, processes):
    from obook.backtest import StrategyError
    from obook.backtest.days import backtest_days

    day = "Time,Ticker,Order,T,Shares,Price\n1,AAA,a,S,100,1000\n2,AAA,b,B,100,990\n"
    feeds = []
    for name in ("d1", "d2", "d3", "d4", "d5"):
        (tmp_path / f"{name}.csv").write_text(day)
        feeds.append(str(tmp_path / f"{name}.csv"))
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "s.py").write_text(MARKS_THEN_RAISES.replace("{marks!r}", repr(str(marks))))
    with pytest.raises(StrategyError, match=r"^day d1 \(.*d1.csv\): the strategy Raises.on_book raised ValueError"):
        backtest_days(feeds, f"{tmp_path / 's.py'}:Raises", processes=processes, format="csv")
    # the days started before the failure was known (at most one more a process), none after it
    assert len(list(marks.iterdir())) <= 2 * processes
