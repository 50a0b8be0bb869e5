"""``obook convert FEED... OUTDIR``: several files of a format read as one feed, as ``obook table``
reads them; the footer names each file; '-' among files and a lone OUTDIR are one-line errors."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import obook
from cli_support import cli_error
from obook.to_parquet import read_metadata

REPLAY = ("bbo", "trades", "orders", "depth")


def _obook(*args) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "obook", *map(str, args)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    return run


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A Shenzhen vendor pair (orders, ticks) of one security, the pair `obook gen szse-csv` writes."""
    folder = tmp_path_factory.mktemp("szse") / "vendor"
    _obook("gen", "szse-csv", folder, "-n", "3000", "-k", "1", "--seed", "5")
    return folder / "000001_orders.csv", folder / "000001_ticks.csv"


def _split_csv(tmp_path):
    """A CSV feed in two pieces (the second without a header of its own) and the whole."""
    lines = ["Time,Ticker,Order,T,Shares,Price"] + [f"{t},AAA,o{t},B,100,{990 + t % 5}" for t in range(1, 41)]
    whole, a, b = tmp_path / "whole.csv", tmp_path / "a.csv", tmp_path / "b.csv"
    whole.write_text("\n".join(lines) + "\n")
    a.write_text("\n".join(lines[:21]) + "\n")
    b.write_text("\n".join(lines[21:]) + "\n")
    return whole, a, b


def test_convert_szse_csv_pair_same_rows_as_table(pair, tmp_path):
    _obook("convert", *pair, tmp_path / "out", "-t", ",".join(REPLAY), "-w", "1")
    for name in REPLAY:
        _obook("table", name, *pair, "-w", "1", "-o", tmp_path / f"{name}.parquet")
        got = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert got.num_rows > 100, name
        assert got.equals(pq.read_table(tmp_path / f"{name}.parquet")), name


def test_convert_szse_csv_pair_footer_names_each_file_with_size_and_sha256(pair, tmp_path):
    _obook("convert", *pair, tmp_path / "out")
    source = read_metadata(tmp_path / "out" / "bbo.parquet")["source"]
    files = [{"name": p.name, "size": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
             for p in pair]
    assert source == {"name": "000001_orders.csv+000001_ticks.csv", "size": sum(f["size"] for f in files),
                      "sha256": None, "format": "szse-csv", "files": files}


def test_convert_one_file_footer_source_has_no_files_list(tmp_path):
    whole, _, _ = _split_csv(tmp_path)
    _obook("convert", whole, tmp_path / "out")
    source = read_metadata(tmp_path / "out" / "bbo.parquet")["source"]
    assert source == {"name": "whole.csv", "size": whole.stat().st_size,
                      "sha256": hashlib.sha256(whole.read_bytes()).hexdigest(), "format": "csv"}


def test_convert_csv_in_two_pieces_same_rows_as_whole(tmp_path):
    whole, a, b = _split_csv(tmp_path)
    _obook("convert", a, b, tmp_path / "pieces", "-t", "bbo,orders")
    _obook("convert", whole, tmp_path / "whole", "-t", "bbo,orders")
    for name in ("bbo", "orders"):
        got = pq.read_table(tmp_path / "pieces" / f"{name}.parquet")
        assert got.num_rows > 0 and got.equals(pq.read_table(tmp_path / "whole" / f"{name}.parquet"))


def test_convert_output_is_a_later_input_file_refused_and_kept(tmp_path):
    _, a, b = _split_csv(tmp_path)
    (tmp_path / "out").mkdir()
    second = tmp_path / "out" / "bbo.parquet"       # the feed's second piece, where bbo would go
    second.write_bytes(b.read_bytes())
    run = subprocess.run([sys.executable, "-m", "obook", "convert", str(a), str(second), str(tmp_path / "out"),
                          "-f", "csv"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and run.stderr == f"error: {second}: is an input of this command; write the table elsewhere\n"
    assert second.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("where", ["first", "last"])
def test_convert_stdin_among_files_one_line_error(pair, tmp_path, capsys, where):
    feeds = ["-", pair[1]] if where == "first" else [pair[0], "-"]
    err = cli_error(capsys, "convert", *feeds, tmp_path / "out")
    assert "'-' reads the feed from stdin: give '-' alone, or feed files" in err
    assert not (tmp_path / "out").exists()


def test_convert_outdir_only_one_line_error_names_the_arguments(tmp_path, capsys):
    feed = tmp_path / "day.itch"
    err = cli_error(capsys, "convert", feed)
    assert "obook convert takes FEED... OUTDIR" in err and f"only {feed} was given" in err
    assert not feed.exists()


def test_convert_list_of_szse_csv_pair_is_one_feed_as_the_tuple(pair, tmp_path):
    as_list = obook.convert(list(pair), tmp_path / "list", workers=1)
    as_tuple = obook.convert(tuple(pair), tmp_path / "tuple", workers=1)
    assert as_list["rows"]["bbo"] > 100 and as_list["source"] == as_tuple["source"]
    assert pq.read_table(tmp_path / "list" / "bbo.parquet").equals(pq.read_table(tmp_path / "tuple" / "bbo.parquet"))


def test_convert_stdin_alone_still_one_feed_with_its_digest(tmp_path):
    whole, _, _ = _split_csv(tmp_path)
    with open(whole, "rb") as f:
        run = subprocess.run([sys.executable, "-m", "obook", "convert", "-", str(tmp_path / "out")], stdin=f,
                             capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    source = read_metadata(tmp_path / "out" / "bbo.parquet")["source"]
    assert source["size"] == whole.stat().st_size and "files" not in source
    assert source["sha256"] == hashlib.sha256(whole.read_bytes()).hexdigest()



def _fails(*args) -> str:
    """``obook ARGS`` in a process of its own (tiny files there choose the Python kernels):
    exit 1 and one ``error:`` line; the line."""
    run = subprocess.run([sys.executable, "-m", "obook", *map(str, args)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 1 and run.stderr.startswith("error: ") and run.stderr.count("\n") == 1, run.stderr
    return run.stderr


@pytest.mark.parametrize("command", ["convert", "table", "bbo"])
def test_convert_same_file_twice_one_line_error_naming_it(tmp_path, command):
    _, a, b = _split_csv(tmp_path)
    again = tmp_path / "link.csv"          # the same file under another name
    again.symlink_to(a)
    args = {"convert": ("convert", a, b, again, tmp_path / "out"), "table": ("table", "bbo", a, b, again),
            "bbo": ("bbo", a, b, again)}[command]
    err = _fails(*args)
    assert f"{again}: the same file as {a}" in err and "each file once" in err
    assert not (tmp_path / "out").exists()


def test_convert_tuple_with_a_file_twice_raises_obook_error_naming_it(tmp_path):
    _, a, b = _split_csv(tmp_path)
    with pytest.raises(obook.ObookError, match=f"{b}: named twice: the files of one feed name each file once"):
        obook.convert((a, b, b), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_convert_outdir_an_existing_file_error_says_outdir_is_last(tmp_path):
    _, a, b = _split_csv(tmp_path)
    err = _fails("convert", a, b)          # OUTDIR forgotten: b is taken for it
    assert f"{b}: exists and is not a folder; OUTDIR, the last argument, is the folder for the tables" in err
    assert b.read_text().startswith("21,AAA")
