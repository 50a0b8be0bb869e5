"""The output folder of a run's tables (``match -o``, ``simulate -o``): the tables of a run
that stopped at a bad record (``e.partial``) as ``TABLE.TYPE.partial`` (or the one table's
rows on stdout), and the files an earlier run left there that would pass for this run's."""

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
    from ..interrupts import deferred
    from ..output import holding_output_dir, output_folder, write_files

    paths = [out / f"{t}.{kind}" for t in names]
    with output_folder(out), holding_output_dir(out):
        write_files([(partial.reader(t), p) for t, p in zip(names, paths)])
        with deferred():    # a Ctrl-C: once every one is named .partial (none left under a final name)
            for p in paths:
                p.replace(p.with_name(p.name + ".partial"))
    e.kept_in = str(out / f"TABLE.{kind}.partial")


def check_outside_inputs(out: Path | None, names, kind: str, inputs) -> None:
    """OutputError when a table the run writes in ``out`` (``TABLE.kind``, or its
    ``.partial``) is one of the files it reads (``inputs``: the same file, a hard or a
    symbolic link to it): the table would replace the input."""
    if out is None:
        return
    from ..output import check_not_an_input

    for t in names:
        for name in (f"{t}.{kind}", f"{t}.{kind}.partial"):
            check_not_an_input(out / name, inputs, "tables")


def drop_partial(out: Path, names: list, kind: str) -> None:
    """The ``.partial`` tables an earlier stopped run left in ``out``: they would pass for
    this complete run's."""
    from ..interrupts import deferred

    with deferred():    # a second Ctrl-C: once every one is gone
        for t in names:
            out.joinpath(f"{t}.{kind}.partial").unlink(missing_ok=True)


#: the schema metadata a command's tables in its output folder carry when other commands
#: write tables of that kind too (``simulate -o``'s bbo, trades ...: ``obook.run = simulate``)
RUN_KEY = b"obook.run"


def marked(reader, command: str):
    """``reader`` (a ``pyarrow.RecordBatchReader``) with ``obook.run = command`` in its
    schema metadata: the tables :func:`drop_earlier_tables` tells from another command's."""
    import pyarrow as pa

    schema = reader.schema.with_metadata({**(reader.schema.metadata or {}), RUN_KEY: command.encode()})
    return pa.RecordBatchReader.from_batches(schema, (pa.RecordBatch.from_arrays(b.columns, schema=schema)
                                                      for b in reader))


def drop_earlier_tables(out: Path, kept: set, marks: dict, kinds) -> None:
    """The tables an earlier run of the command wrote in ``out`` that are not ``kept`` (file
    names): gone, so that the folder holds one run's tables. ``marks``: each table the command
    writes, as ``(tags, lead, columns)`` or ``(tags, lead, columns, command)``: the
    ``obook.table`` metadata its Parquet and Arrow files carry (any of ``tags``; with
    ``command``, also ``obook.run`` = it, see :func:`marked`), and its CSV header's first
    columns (``lead``) and columns it has further on, one only it has among them
    (``columns``); ``kinds``: the file types (``parquet``, ``csv``, ``arrow``). A file of
    such a name that is not such a table stays."""
    from ..interrupts import deferred
    from ..tempfiles import remove_quietly

    with deferred():    # a second Ctrl-C: once every earlier table is gone, not a part of them
        for t, table in marks.items():
            for kind in kinds:
                path = out / f"{t}.{kind}"
                if (path.name not in kept and path.is_file() and not path.is_symlink()
                        and _is_table(path, kind, *table)):
                    remove_quietly(path)


def _is_table(path: Path, kind: str, tags, lead, columns, command: str | None = None) -> bool:
    """Whether ``path``, a file of type ``kind``, is the table of ``tags`` / ``lead`` / ``columns``
    (see :func:`drop_earlier_tables`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if kind == "csv":
            with open(path, "rb") as f:
                names = f.readline(4096).decode("ascii").strip().split(",")
            return names[:len(lead)] == list(lead) and set(columns) <= set(names)
        if kind == "parquet":
            meta = pq.read_schema(path).metadata
        else:
            with pa.ipc.open_file(path) as r:
                meta = r.schema.metadata
        meta = meta or {}
        return (meta.get(b"obook.table") in {tag.encode() for tag in tags}
                and (command is None or meta.get(RUN_KEY) == command.encode()))
    except (OSError, ValueError, UnicodeDecodeError, pa.ArrowException):
        return False
