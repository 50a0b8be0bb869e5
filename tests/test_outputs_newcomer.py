"""Writing outputs as a newcomer and as a hostile user: a raw (unbuffered) stdout that takes
part of a write, options refused before any file or folder is made, a folder under a final
table name, Arrow's write errors in a few words, ``-o -`` and ``-o .parquet``."""

from __future__ import annotations

import errno
import io

import pyarrow as pa
import pytest

import obook
from obook.errors import ObookError, OutputError
from obook.gen.itch import write_itch
from obook.output import write_file, write_text

from cli_support import cli_error


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    p = tmp_path_factory.mktemp("newcomer") / "day.itch"
    write_itch(p, 3000, 4, seed=1)
    return p


class _ShortWrites(io.RawIOBase):
    """A raw file as ``sys.stdout.buffer`` is under PYTHONUNBUFFERED: a write may take only
    part of the bytes (a disk filling up); once ``room`` is used, the next write fails."""

    def __init__(self, room: int, chunk: int):
        self.room, self.chunk, self.data = room, chunk, bytearray()

    def writable(self):
        return True

    def write(self, b):
        if len(self.data) >= self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = min(len(b), self.chunk, self.room - len(self.data))
        self.data += bytes(b[:n])
        return n


def test_write_text_short_writes_writes_every_byte(day):
    whole = io.BytesIO()
    rows = write_text(obook.bbo(str(day), workers=1), whole)
    out = _ShortWrites(room=1 << 30, chunk=1000)
    assert write_text(obook.bbo(str(day), workers=1), out) == rows
    assert bytes(out.data) == whole.getvalue()


def test_write_text_disk_fills_mid_write_raises(day):
    out = _ShortWrites(room=5000, chunk=4096)
    with pytest.raises(OSError) as e:
        write_text(obook.bbo(str(day), workers=1), out)
    assert e.value.errno == errno.ENOSPC


def test_write_file_unknown_compression_raises_obook_error_no_file(day, tmp_path):
    with pytest.raises(ObookError, match="compression must be one of"):
        write_file(obook.bbo(str(day), workers=1), tmp_path / "x.parquet", compression="zip")
    assert list(tmp_path.iterdir()) == []


def test_write_file_arrow_open_fails_names_final_not_temp(tmp_path):
    gone = tmp_path / "gone" / "x.arrow"           # its folder does not exist
    reader = pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]), [])
    with pytest.raises(OutputError) as e:
        write_file(reader, gone)
    assert str(e.value) == f"{gone}: write failed: No such file or directory"


def test_convert_unknown_compression_leaves_no_folder(day, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ObookError, match="compression must be one of"):
        obook.convert(str(day), out, compression="zip")
    assert not out.exists()


def test_convert_final_name_is_folder_replaces_no_table(day, tmp_path):
    out = tmp_path / "out"
    obook.convert(str(day), out, tables="bbo,trades", workers=1)
    before = (out / "bbo.parquet").stat().st_mtime_ns
    (out / "trades.parquet").unlink()
    (out / "trades.parquet").mkdir()
    with pytest.raises(OutputError, match=r"trades\.parquet: is a directory"):
        obook.convert(str(day), out, tables="bbo,trades", workers=1, date="2026-01-02")
    assert (out / "bbo.parquet").stat().st_mtime_ns == before      # the old set, untouched
    assert sorted(p.name for p in out.iterdir()) == ["bbo.parquet", "trades.parquet"]


def test_cli_convert_final_name_is_folder_one_line_error(day, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "bbo.parquet").mkdir(parents=True)
    err = cli_error(capsys, "convert", day, out, "--workers", "1")
    assert f"{out / 'bbo.parquet'}: is a directory" in err
    assert [p.name for p in out.iterdir()] == ["bbo.parquet"]


def test_cli_bbo_output_dash_says_stdout_is_default(day, capsys, tmp_path):
    err = cli_error(capsys, "bbo", day, "-o", "-")
    assert "leave out -o" in err


def test_cli_bbo_output_extension_only_asks_for_name(day, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = cli_error(capsys, "bbo", day, "-o", ".parquet")
    assert "a file name is needed before the extension" in err
    assert list(tmp_path.iterdir()) == []


def test_convert_feed_under_final_name_refused_feed_kept(day, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    feed = out / "bbo.parquet"            # an ITCH day under the name convert writes
    feed.write_bytes(day.read_bytes())
    with pytest.raises(OutputError, match="is an input of this command"):
        obook.convert(str(feed), out, format="itch", workers=1)
    assert feed.read_bytes() == day.read_bytes()
    assert [p.name for p in out.iterdir()] == ["bbo.parquet"]


def test_cli_convert_symlink_to_feed_under_final_name_refused(day, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "trades.parquet").symlink_to(day)
    err = cli_error(capsys, "convert", day, out, "--tables", "bbo,trades", "--workers", "1")
    assert "is an input of this command" in err
    assert (out / "trades.parquet").is_symlink() and sorted(p.name for p in out.iterdir()) == ["trades.parquet"]


def test_write_file_after_partial_success_removes_stale_partial(day, tmp_path):
    bad = tmp_path / "bad.itch"
    bad.write_bytes(day.read_bytes() + b"\x00\x30A\x00")          # a record cut short at the end
    out = tmp_path / "x.parquet"
    with pytest.raises(obook.FeedError):
        write_file(obook.bbo(str(bad), workers=1), out)
    assert (tmp_path / "x.parquet.partial").is_file() and not out.exists()
    assert write_file(obook.bbo(str(day), workers=1), out) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.itch", "x.parquet"]


def test_table_csv_stdout_short_writes_writes_every_byte(day):
    from obook.cli.table import _write_csv

    whole = io.BytesIO()
    _write_csv(obook.trades(str(day), workers=1), whole)
    out = _ShortWrites(room=1 << 30, chunk=1000)
    _write_csv(obook.trades(str(day), workers=1), out)
    assert len(whole.getvalue()) > 3000 and bytes(out.data) == whole.getvalue()


def test_convert_outdir_dangling_symlink_says_target_missing(day, tmp_path):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(OutputError, match="a symbolic link to .*gone, which does not exist"):
        obook.convert(str(day), link, workers=1)
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_write_file_parquet_compression_on_a_csv_warns_it_is_not_used(tmp_path, caplog):
    import logging

    import pyarrow as pa

    from obook.output import write_file

    table = pa.table({"x": [1, 2]})
    with caplog.at_level(logging.WARNING, logger="obook"):
        assert write_file(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()),
                          tmp_path / "x.csv", compression="small") == 2
    assert "compression 'small' is Parquet's" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="obook"):
        write_file(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), tmp_path / "y.csv")
    assert caplog.text == ""


def test_cli_bbo_parquet_compression_on_stdout_warns_it_is_not_used_same_text(day, capsys, monkeypatch, caplog):
    import logging

    from obook.cli import main

    said, warned = {}, {}
    for c in ("small", "fast"):
        caplog.clear()
        with monkeypatch.context() as m, pytest.raises(SystemExit) as e, \
                caplog.at_level(logging.WARNING, logger="obook"):
            m.setattr("sys.argv", ["obook", "bbo", str(day), "-w", "1", "-c", c])
            main()
        assert e.value.code in (0, None)
        said[c], warned[c] = capsys.readouterr().out, caplog.text
    assert "compression 'small' is Parquet's; the text on stdout is written as it is" in warned["small"]
    assert "Parquet's" not in warned["fast"]
    assert said["small"] == said["fast"] and said["fast"].count("\n") > 10


def test_output_folder_failed_block_removes_every_folder_it_made_keeps_existing(tmp_path):
    from obook.output import output_folder

    (tmp_path / "kept").mkdir()
    with pytest.raises(KeyboardInterrupt):
        with output_folder(tmp_path / "kept" / "a" / "b" / "c"):
            raise KeyboardInterrupt
    assert (tmp_path / "kept").is_dir() and not (tmp_path / "kept" / "a").exists()
    with pytest.raises(KeyboardInterrupt):
        with output_folder(tmp_path / "kept" / "a" / "b") as out:
            (tmp_path / "kept" / "a" / "note").write_text("x")      # a file of another: a stays
            raise KeyboardInterrupt
    assert not out.exists() and (tmp_path / "kept" / "a").is_dir()


@pytest.mark.parametrize("name", ["pipe.parquet", "pipe.csv"])
def test_cli_bbo_output_a_named_pipe_refused_pipe_kept(day, capsys, tmp_path, name):
    import os
    import stat

    fifo = tmp_path / name
    os.mkfifo(fifo)
    assert cli_error(capsys, "bbo", day, "-o", fifo) == (f"error: {fifo}: is not a regular file (a device, a pipe "
                                                         "or a socket); give a file name\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_convert_outdir_name_too_long_raises_output_error_names_it(day, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputError, match="File name too long") as e:
        obook.convert(day, "a" * 300)
    assert str(e.value).startswith("a" * 300 + ": ")
    assert list(tmp_path.iterdir()) == []


def test_write_file_name_too_long_raises_output_error_names_it(day, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputError, match="File name too long") as e:
        write_file(obook.bbo(day), "b" * 300 + ".parquet")
    assert str(e.value).startswith("b" * 300 + ".parquet: ")
    assert list(tmp_path.iterdir()) == []


def test_write_files_ctrl_c_between_renames_names_every_table(day, tmp_path, monkeypatch, python_sigint):
    from interrupt_support import ctrl_c_after_first_replace

    from obook.output import write_files

    renamed = ctrl_c_after_first_replace(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        write_files([(obook.bbo(day, workers=1), tmp_path / "bbo.parquet"),
                     (obook.trades(day, workers=1), tmp_path / "trades.csv")])
    assert renamed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bbo.parquet", "trades.csv"]


def test_convert_ctrl_c_between_renames_names_every_table(day, tmp_path, monkeypatch, python_sigint):
    from interrupt_support import ctrl_c_after_first_replace

    renamed = ctrl_c_after_first_replace(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        obook.convert(day, tmp_path / "out", tables=["bbo", "trades", "orders"], workers=1)
    assert renamed
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bbo.parquet", "orders.parquet",
                                                                   "trades.parquet"]
