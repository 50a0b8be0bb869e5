"""What the trades' ``broken`` of the rows before a bad record is, reader by reader: a stream
(obook.trades, a polars ``collect_batches()``, ``obook table`` on stdout) delivers its rows
before the error with the breaks the prepass found (the whole file, up to a record it cannot
frame); a ``.partial`` file holds those of the records before the bad one only."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import obook
from obook.errors import FeedError

from cli_support import cli_outputs, cli_run
from itch_builder import ItchBuilder


def _feed(tmp_path):
    """Trades of matches 1-4, a break of 1 before an unknown order ref (the replay stops there),
    a break of 3 after it, then a break of 4 in a frame cut short (the framing stops there)."""
    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.add(1, 10, "B", 100, 1_000_000)
    for match in (1, 2, 3, 4):
        b.execute(1, 10, 10, match=match)
    b.broken(1, locate=1)
    b.delete(1, 77)
    b.broken(3, locate=1)
    path = b.write(tmp_path / "f.itch")
    with open(path, "ab") as f:
        f.write(b"\x00\x13B" + b"\x00" * 8 + (4).to_bytes(8, "big"))
    return path


#: (kind, match, broken) of the rows before the bad record, as a stream delivers them
STREAMED = [("E", 1, True), ("E", 2, False), ("E", 3, True), ("E", 4, False), ("B", 1, False)]


def _flags(table: pa.Table) -> list:
    return list(zip(*(table.column(c).to_pylist() for c in ("kind", "match", "broken"))))


def _python(path, capsys):
    reader, got = obook.trades(str(path), workers=2), []
    with pytest.raises(FeedError, match="unknown order ref"):
        for batch in reader:
            got.append(batch)
    return pa.Table.from_batches(got, reader.schema)


def _polars(path, capsys):
    import polars as pl

    got = []
    with pytest.raises(FeedError, match="unknown order ref"):
        for frame in obook.scan_trades(str(path), workers=2).collect_batches():
            got.append(frame)
    return pl.concat(got).to_arrow()


def _stdout(path, capsys):
    code, out, err = cli_outputs(capsys, "table", "trades", path, "-w", "2")
    assert code == 1 and "unknown order ref" in err
    return pacsv.read_csv(io.BytesIO(out.encode()))


@pytest.mark.parametrize("read", [_python, _polars, _stdout])
def test_breaks_stream_stopped_by_a_bad_record_broken_from_the_breaks_up_to_the_framing_error(
        tmp_path, capsys, read):
    assert _flags(read(_feed(tmp_path), capsys)) == STREAMED


def test_breaks_partial_file_stopped_by_a_bad_record_broken_from_the_breaks_before_it(tmp_path, capsys):
    out = tmp_path / "t.parquet"
    code, err = cli_run(capsys, "table", "trades", _feed(tmp_path), "-w", "2", "-o", out)
    assert code == 1 and "unknown order ref" in err
    assert _flags(pq.read_table(f"{out}.partial")) == [
        ("E", 1, True), ("E", 2, False), ("E", 3, False), ("E", 4, False), ("B", 1, False)]
