"""Rows written to stdout: a reader that goes away ends the command quietly, a failed write
is an error that names stdout; and the line on stderr saying what a command wrote to files."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import typer

from ..errors import OutputError


def _detach() -> None:
    """Point stdout at /dev/null: the rows still buffered are dropped instead of failing
    again when the process exits."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


@contextmanager
def writing_stdout(reader=None):
    """Around writing rows to stdout: a closed pipe (``obook bbo day.itch | head``) exits 0
    quietly; any other failed write (``> /dev/full``: a full disk) raises OutputError
    naming stdout and the reason. ``reader``: closed first (its workers stop). The rows are
    flushed before the block ends, so a failure shows here and not at the process's exit."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        if reader is not None:
            reader.close()
        _detach()
        raise typer.Exit(0) from None
    except OSError as e:
        if reader is not None:
            reader.close()
        _detach()
        raise OutputError(f"<stdout>: write failed: {e.strerror or e}") from e


def rows_said(n: int, spec: str = "") -> str:
    """``1 row``, ``12 rows`` (``spec``: the number's format, ``","`` for ``1,234 rows``)."""
    return f"{n:{spec}} row{'' if n == 1 else 's'}"


def written(result, tables, out) -> str:
    """The line saying what a command wrote: ``fills: 1 row, events: 12 rows -> out``."""
    counts = [(t, result.table(t).num_rows) for t in tables]
    return ", ".join(f"{t}: {rows_said(n, ',')}" for t, n in counts) + f" -> {out}"


def table_to_stdout(table) -> None:
    """A whole table on stdout as CSV with a header (``obook match`` / ``simulate`` without -o),
    written as every CSV obook writes: names and fields quoted only where they need it."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from ..output import csv_header, write_all

    sink = pa.BufferOutputStream()      # (Arrow's CSV writer drops what an unbuffered stdout does not take)
    pcsv.write_csv(table, sink, pcsv.WriteOptions(include_header=False, quoting_style="needed"))
    with writing_stdout():
        write_all(sys.stdout.buffer, csv_header(table.schema.names))
        write_all(sys.stdout.buffer, memoryview(sink.getvalue()))
