"""Outputs are whole under their final names or absent: the rows before a feed error kept as
``.partial``; a disk that fills (``RLIMIT_FSIZE``) leaves no picture, page or table set
half-written, and no temporary file."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import obook
from obook.gen.itch import write_itch

from cli_support import cli_error
from test_faults import FULL_DISK

def _full_disk(limit: int, *args):
    return subprocess.run([sys.executable, "-c", FULL_DISK, str(limit), *map(str, args)], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    p = tmp_path_factory.mktemp("whole") / "day.itch"
    write_itch(p, 3000, 4, seed=1)
    return p


def test_cli_parquet_output_after_feed_error_keeps_rows_before_as_partial(day, tmp_path, capsys):
    bad = tmp_path / "bad.itch"
    bad.write_bytes(day.read_bytes() + b"\x00\x30A\x00")          # a record cut short at the end
    out = tmp_path / "x.parquet"
    err = cli_error(capsys, "bbo", bad, "--workers", "1", "-o", out)
    assert "truncated record" in err and f"(the rows before it are in {out}.partial)" in err
    assert not out.exists()
    partial = pq.read_table(tmp_path / "x.parquet.partial")
    assert partial.equals(obook.bbo(str(day), workers=1).read_all())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.itch", "x.parquet.partial"]


def _orders(tmp_path, n=3000):
    rows = ["time,instrument,order_id,action,side,type,tif,price,quantity,owner"]
    for i in range(1, n + 1):
        rows.append(f"{i},AAA,{i},new,{'buy' if i % 2 else 'sell'},limit,gtc,{100 + i % 7},{10 + i % 5},{i % 3}")
    p = tmp_path / "orders.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def test_cli_match_tables_on_full_disk_all_or_none(tmp_path):
    orders = _orders(tmp_path)
    whole = tmp_path / "whole"
    r = subprocess.run([sys.executable, "-m", "obook", "match", orders, "-o", whole, "--type", "csv"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    sizes = {p.name: p.stat().st_size for p in whole.iterdir()}
    assert sizes["fills.csv"] < sizes["events.csv"]
    out = tmp_path / "out"
    p = _full_disk(sizes["fills.csv"] + 1, "match", orders, "-o", out, "--type", "csv")   # fills fit, events not
    assert p.returncode == 1 and "error: " in p.stderr and "write failed" in p.stderr and "Traceback" not in p.stderr
    assert not out.exists()       # no table, and not the empty folder the run made


def test_cli_plot_on_full_disk_leaves_no_picture(day, tmp_path):
    pytest.importorskip("matplotlib")
    warm = subprocess.run([sys.executable, "-m", "obook", "plot", day, tmp_path / "warm.png", "--workers", "1"],
                          capture_output=True, text=True, timeout=300)   # the kernels compiled and cached first
    assert warm.returncode == 0, warm.stderr
    for name in ("day.png", "day.html"):
        if name.endswith(".html"):
            pytest.importorskip("plotly")
        out = tmp_path / "pics" / name
        out.parent.mkdir(exist_ok=True)
        # one level: the book rows' temporary file fits (~25 KB), the picture (~50 KB) does not
        p = _full_disk(35_000, "plot", day, out, "--workers", "1", "--levels", "1")
        assert p.returncode == 1 and f"error: {out}: cannot write the" in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert list(out.parent.iterdir()) == []


def test_cli_plot_on_full_disk_temporary_rows_one_line_error_no_picture(day, tmp_path):
    """The book rows' temporary file is what fills the disk: one line naming the folder."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "pics" / "day.png"
    out.parent.mkdir()
    p = _full_disk(20_000, "plot", day, out, "--workers", "1")
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert "cannot write obook plot's temporary file of the book's rows (File too large)" in p.stderr, p.stderr
    assert list(out.parent.iterdir()) == []


def test_write_files_on_threads_all_or_none(tmp_path):
    import pyarrow as pa

    from obook.errors import OutputError
    from obook.output import write_files

    def reader(n):
        t = pa.table({"a": pa.array(range(n))})
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())

    good = [(reader(10), tmp_path / "a.parquet"), (lambda: reader(20), tmp_path / "b.arrow")]
    assert write_files(good, threads=2) == [10, 20]
    assert pq.read_table(tmp_path / "a.parquet").num_rows == 10
    bad = [(reader(5), tmp_path / "c.parquet"), (reader(5), tmp_path / "missing" / "d.parquet")]
    with pytest.raises(OutputError, match="d.parquet"):
        write_files(bad, threads=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.arrow"]     # none of them, no temp
