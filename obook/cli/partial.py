"""The tables of a run that stopped at a bad record (``e.partial``): the one table's rows on
stdout, or the tables as ``TABLE.TYPE.partial`` in the output folder."""

from __future__ import annotations

from pathlib import Path


def deliver_partial(e, names: list, out: Path | None, kind: str) -> None:
    """Hand over the tables ``names`` of ``e.partial`` (nothing without one): to stdout (the
    first table, as CSV) without ``out``, else written to ``out`` as ``TABLE.kind.partial``,
    which ``e.kept_in`` then says."""
    partial = getattr(e, "partial", None)
    if partial is None:
        return
    if out is None:
        from .stdout import table_to_stdout

        table_to_stdout(partial.table(names[0]))       # the rows before it, as a replay's stdout has them
        return
    from ..output import output_folder, write_files

    paths = [out / f"{t}.{kind}" for t in names]
    with output_folder(out):
        write_files([(partial.reader(t), p) for t, p in zip(names, paths)])
        for p in paths:
            p.replace(p.with_name(p.name + ".partial"))
    e.kept_in = str(out / f"TABLE.{kind}.partial")


def drop_partial(out: Path, names: list, kind: str) -> None:
    """The ``.partial`` tables an earlier stopped run left in ``out``: they would pass for
    this complete run's."""
    from ..interrupts import deferred

    with deferred():    # a second Ctrl-C: once every one is gone
        for t in names:
            out.joinpath(f"{t}.{kind}.partial").unlink(missing_ok=True)
