"""``obook.convert``'s OUTDIR: one convert at a time writes into it; the tables not asked for
stay as they are."""

from __future__ import annotations

import threading

import pyarrow.parquet as pq
import pytest

from cli_support import cli_error
from obook.errors import OutputError
from obook.gen.itch import write_itch
from obook.to_parquet import convert, read_metadata

DAY = "12302019.NASDAQ_ITCH50"


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    folder = tmp_path_factory.mktemp("feeds")
    write_itch(folder / DAY, 3000, 10, seed=3)
    write_itch(folder / "12312019.NASDAQ_ITCH50", 3000, 10, seed=4)
    return folder / DAY, folder / "12312019.NASDAQ_ITCH50"


def _converting(feed, out, **options):
    """A convert into ``out`` on a thread, stopped in its replay until the returned event is
    set: (thread, that event, its result or error once joined)."""
    started, go, outcome = threading.Event(), threading.Event(), {}

    def progress(*_):
        started.set()
        go.wait(60)

    def target():
        try:
            outcome["result"] = convert(feed, out, workers=1, progress=progress, **options)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            outcome["error"] = e

    thread = threading.Thread(target=target)
    thread.start()
    assert started.wait(60)
    return thread, go, outcome


def test_convert_into_an_outdir_another_convert_writes_refused_naming_it_the_first_completes(days, tmp_path, capsys):
    first, second = days
    out = tmp_path / "out"
    thread, go, outcome = _converting(first, out, tables=["bbo", "trades"])
    try:
        with pytest.raises(OutputError, match=r"another convert is writing its tables into this folder now"):
            convert(second, out, tables=["bbo"], workers=1)
        err = cli_error(capsys, "convert", second, out, "--tables", "trades", "--workers", "1")
        assert f"{out}: another convert is writing" in err, err
    finally:
        go.set()
        thread.join(60)
    assert "error" not in outcome, outcome
    for table in ("bbo", "trades"):
        assert read_metadata(out / f"{table}.parquet")["source"]["name"] == DAY
    assert convert(second, out, tables=["bbo"], workers=2)["rows"]["bbo"] > 0     # free once it ended
    assert convert(second, out, tables=["bbo"], workers=1)["rows"]["bbo"] > 0     # (its workers hold nothing)


def test_convert_stopped_by_an_error_leaves_its_outdir_free(days, tmp_path):
    out = tmp_path / "out"

    def progress(*_):
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        convert(days[0], out, tables=["bbo"], workers=1, progress=progress)
    assert convert(days[0], out, tables=["bbo"], workers=1)["rows"]["bbo"] > 0


def test_convert_fewer_tables_into_an_outdir_keeps_the_other_tables_files_as_they_were(days, tmp_path):
    first, second = days
    out = tmp_path / "out"
    convert(first, out, tables=["bbo", "trades"], workers=1)
    trades = (out / "trades.parquet").read_bytes()
    convert(second, out, tables=["bbo"], workers=1)
    assert (out / "trades.parquet").read_bytes() == trades
    assert read_metadata(out / "trades.parquet")["source"]["name"] == DAY
    assert read_metadata(out / "bbo.parquet")["source"]["name"] == second.name
    assert pq.read_metadata(out / "bbo.parquet").num_rows > 0


def test_convert_outdir_free_once_it_returned_though_a_process_forked_meanwhile_still_runs(days, tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    stop, forked = ctx.Event(), []

    def progress(*_):       # (as another thread of the program could, any time)
        if not forked:
            forked.append(ctx.Process(target=stop.wait, args=(60,)))
            forked[0].start()

    out = tmp_path / "out"
    convert(days[0], out, tables=["bbo"], workers=1, progress=progress)
    try:
        assert forked[0].is_alive()
        assert convert(days[1], out, tables=["bbo"], workers=1)["rows"]["bbo"] > 0
    finally:
        stop.set()
        forked[0].join(60)
