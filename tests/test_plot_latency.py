"""obook plot latency on tables a live run would not write: one line naming the table or the
picture, never a traceback."""

from __future__ import annotations

import pytest

from tests.cli_support import cli_error

pytest.importorskip("matplotlib")


def _table(path, **columns):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


def test_plot_latency_stage_without_samples_left_out_others_drawn(tmp_path):
    from obook.live.plot_latency import plot_latency

    t = _table(tmp_path / "t.parquet", stage=["idle", "recv"], bucket_ns=[[1.0, 2.0], [5.0, 6.0]],
               bucket_count=[[0, 0], [3, 4]])
    assert plot_latency(t, tmp_path / "p.png") == tmp_path / "p.png"
    assert (tmp_path / "p.png").stat().st_size > 0


def test_plot_latency_only_stages_without_samples_says_no_samples(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OBOOK_KERNELS", "python")      # (a tiny input: the command would set it)
    t = _table(tmp_path / "t.parquet", stage=["idle"], bucket_ns=[[1.0, 2.0]], bucket_count=[[0, 0]])
    err = cli_error(capsys, "plot", "latency", t, tmp_path / "p.png")
    assert err == f"error: {t}: no latency samples\n"


def test_plot_latency_infinite_bucket_refused_names_stage(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OBOOK_KERNELS", "python")
    t = _table(tmp_path / "t.parquet", stage=["recv"], bucket_ns=[[float("inf")]], bucket_count=[[1]])
    err = cli_error(capsys, "plot", "latency", t, tmp_path / "p.png")
    assert err == f"error: {t}: not a latency table: stage recv: a bucket_ns below 0 or not a finite number\n"
    assert not (tmp_path / "p.png").exists()


def test_plot_latency_picture_in_no_folder_refused_before_reading(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OBOOK_KERNELS", "python")
    err = cli_error(capsys, "plot", "latency", tmp_path / "not-read.parquet", tmp_path / "none" / "p.png")
    assert err == f"error: {tmp_path / 'none' / 'p.png'}: cannot write: no folder {tmp_path / 'none'}\n"


def test_plot_latency_html_picture_refused_names_the_pictures_that_are_pages(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OBOOK_KERNELS", "python")
    err = cli_error(capsys, "plot", "latency", tmp_path / "not-read.parquet", tmp_path / "p.html")
    assert err == (f"error: {tmp_path / 'p.html'}: the latency picture is drawn as .png, .svg or .pdf "
                   "(.html: a feed's or a backtest's picture)\n")



def test_plot_latency_named_pipe_table_refused_without_opening_it(tmp_path):
    import os
    import threading

    from obook.errors import ObookError
    from obook.live.plot_latency import plot_latency

    pipe = tmp_path / "latency.fifo"
    os.mkfifo(pipe)
    said = []

    def draw():
        try:
            plot_latency(pipe, tmp_path / "p.png")
        except ObookError as e:
            said.append(str(e))

    drawing = threading.Thread(target=draw, daemon=True)
    drawing.start()
    drawing.join(10)
    if drawing.is_alive():      # waiting for a writer: one that writes nothing lets it go
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        drawing.join(10)
    assert said == [f"{pipe}: a named pipe (FIFO), not a latency table (the Parquet file obook listen "
                    "--latency-output TABLE writes)"]
