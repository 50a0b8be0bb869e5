"""Writing BBO streams: text lines, CSV, Parquet, Arrow IPC; files appear only when complete."""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc

from .errors import FeedError, ObookError, OutputError
from .interrupts import deferred
from .tempfiles import remove_quietly, temp_path

TEXT_COLUMNS = ["time", "ticker", "bid_px", "bid_qty", "ask_px", "ask_qty"]
_TEXT_OPTIONS = pacsv.WriteOptions(include_header=False, quoting_style="none")


def csv_header(names) -> bytes:
    """A CSV header line of column names, each quoted only when it needs to be (a comma, a
    quote or a line end in it), as every CSV obook writes has it."""
    def field(name: str) -> str:
        return '"' + name.replace('"', '""') + '"' if any(c in name for c in ',"\r\n') else name
    return (",".join(map(field, names)) + "\n").encode()
OUTPUT_KINDS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow",
                ".csv": "csv", ".txt": "text"}


def text_lines(batch: pa.RecordBatch) -> bytes:
    """The text lines: TIME,TICKER,BID_PX,BID_QTY,ASK_PX,ASK_QTY (empty fields for an empty side)."""
    part = batch.select(TEXT_COLUMNS)
    sink = pa.BufferOutputStream()
    try:
        pacsv.write_csv(part, sink, _TEXT_OPTIONS)
        return sink.getvalue().to_pybytes()
    except pa.ArrowInvalid:  # a ticker with a quote or comma: the same lines, by hand
        rows = zip(*(part.column(c).to_pylist() for c in TEXT_COLUMNS))
        return "".join(",".join("" if v is None else str(v) for v in r) + "\n" for r in rows).encode()


def warn_stdout_compression(compression: str, kind: str) -> None:
    """A Parquet compression given for rows written to stdout (``kind``: "text", "CSV"): a
    warning that it is not used."""
    if compression != "fast":
        logging.getLogger("obook").warning("compression %r is Parquet's; the %s on stdout is written as it is",
                                           compression, kind)


def write_all(out: BinaryIO, data: bytes) -> None:
    """Write every byte of ``data``: an unbuffered stream (``python -u``, PYTHONUNBUFFERED,
    where ``sys.stdout.buffer`` is the raw file) may take only part of it (a disk filling
    up), and the next write then says why."""
    view = memoryview(data)
    while view:
        n = out.write(view)
        if n is None or n >= len(view):     # all of it (None: a file object that does not count)
            return
        view = view[n:]


def write_text(reader: pa.RecordBatchReader, out: BinaryIO) -> int:
    n = 0
    for batch in reader:
        write_all(out, text_lines(batch))
        n += batch.num_rows
    out.flush()
    return n


def _is_blob(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def _hex(column: pa.Array) -> pa.Array:
    """A binary column as lowercase hex text (DuckDB's ``unhex`` reads it back), vectorized."""
    import numpy as np

    column = column.cast(pa.large_binary())
    validity, offsets, data = column.buffers()
    offsets = np.frombuffer(offsets, np.int64)[:column.offset + len(column) + 1]
    raw = np.frombuffer(data, np.uint8)[:offsets[-1]] if data is not None else np.empty(0, np.uint8)
    digits = np.frombuffer(b"0123456789abcdef", np.uint8)
    text = np.empty(2 * len(raw), np.uint8)
    text[0::2], text[1::2] = digits[raw >> 4], digits[raw & 15]
    return pa.Array.from_buffers(pa.large_string(), len(column),
                                 [validity, pa.py_buffer(offsets * 2), pa.py_buffer(text)],
                                 column.null_count, column.offset)


def text_safe(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its binary columns (a record's ``raw`` bytes) as hex text: CSV and JSON
    hold text, and a record's bytes are rarely UTF-8."""
    if not any(_is_blob(f.type) for f in batch.schema):
        return batch
    return pa.RecordBatch.from_arrays([_hex(c) if _is_blob(c.type) else c for c in batch.columns],
                                      names=batch.schema.names)


def text_safe_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of :func:`text_safe`'s batches."""
    return pa.schema([pa.field(f.name, pa.large_string()) if _is_blob(f.type) else f for f in schema])


def make_output_dir(outdir: str | Path) -> Path:
    """Create an output directory (and its parents); a clear ``OutputError`` when that is
    impossible: a file of that name, a parent that is a file, a read-only place, ``-``
    (stdout elsewhere: here it would be a folder named "-")."""
    if str(outdir) == "-":
        raise OutputError("-: the output is a folder of files, not stdout; give a folder name")
    outdir = Path(outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        if outdir.is_symlink() and not outdir.exists():
            raise OutputError(f"{outdir}: a symbolic link to {os.readlink(outdir)}, which does not exist; "
                              "create that folder or give another") from None
        raise OutputError(f"{outdir}: exists and is not a directory") from None
    except OSError as e:
        raise OutputError(f"{outdir}: cannot create the output directory: {e.strerror or e}") from None
    return outdir


@contextmanager
def output_folder(outdir: str | Path):
    """``make_output_dir`` for a block that writes into it: when the block fails (a full disk,
    Ctrl-C) and leaves the folders it made empty (``out/a/b``: ``out`` and ``a`` too, when new),
    they go too."""
    new = new_folders(outdir)
    made = make_output_dir(outdir)
    try:
        yield made
    except BaseException:
        remove_new_folders(new)
        raise


#: the descriptors of the output folders this process holds (:func:`hold_output_dir`)
_held: set[int] = set()


def hold_output_dir(outdir: Path, what: str = "convert") -> int | None:
    """Hold ``outdir`` while a ``what`` writes its tables there: an exclusive ``flock`` of the
    folder itself (no file is left in it), so that two at once cannot leave tables of both;
    another holding it is an ``OutputError`` naming the folder. The descriptor to give
    :func:`release_output_dir`; None where the folder cannot be locked (no ``fcntl``, a
    filesystem without locks on folders, NFS): the write goes on unguarded."""
    try:
        import fcntl
    except ImportError:         # (Windows)
        return None
    try:
        fd = os.open(outdir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OutputError(f"{outdir}: another {what} is writing its tables into this folder now; wait for it "
                          "to end, or give another folder") from None
    except OSError as e:
        os.close(fd)
        logging.getLogger("obook").debug("%s: cannot lock the folder (%s): not guarded", outdir, e.strerror or e)
        return None
    _held.add(fd)
    return fd


def release_output_dir(fd: int | None) -> None:
    """Let go of a folder :func:`hold_output_dir` held."""
    if fd is not None:
        _held.discard(fd)
        os.close(fd)


@contextmanager
def holding_output_dir(outdir: Path, what: str = "run"):
    """:func:`hold_output_dir` for a block that writes a run's tables into ``outdir`` (and
    removes an earlier run's): another run holding it is an ``OutputError``, before any file
    is touched."""
    fd = hold_output_dir(outdir, what)
    try:
        yield
    finally:
        release_output_dir(fd)


def _let_go_in_child() -> None:
    """A forked process (a book worker) closes its copies of the held folders' descriptors:
    one that outlived the write would keep the folder held."""
    for fd in list(_held):
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_let_go_in_child)


def new_folders(folder: str | Path) -> list[Path]:
    """``folder`` and its parents that do not exist yet, innermost first (what making it makes)."""
    missing = []
    for f in (Path(folder), *Path(folder).absolute().parents):
        if os.path.lexists(f):      # (False for a name too long: making it says so)
            break
        missing.append(f)
    return missing


def remove_new_folders(folders: list[Path]) -> None:
    """The folders of ``new_folders`` a failed run made and left empty go, innermost first
    (all of them, a second Ctrl-C waiting)."""
    with deferred():
        for folder in folders:
            if not remove_if_empty(folder):
                break


def remove_if_empty(folder: Path) -> bool:
    """Remove ``folder`` (one a failed run made) when nothing was kept in it; whether it went."""
    try:
        folder.rmdir()
        return True
    except OSError:
        return False


def output_kind(path: Path) -> str:
    if str(path) == "-":
        raise ObookError("-: rows go to stdout when no output file is given; leave out -o")
    if os.path.isdir(path):     # (os.path's: False for a name too long, which the write says)
        raise OutputError(f"{path}: is a directory; give a file name ending in one of "
                          f"{', '.join(sorted(OUTPUT_KINDS))}")
    if os.path.exists(path) and not os.path.isfile(path):  # (the finished file's rename would replace it)
        raise OutputError(f"{path}: is not a regular file (a device, a pipe or a socket); give a file name")
    try:
        return OUTPUT_KINDS[path.suffix.lower()]
    except KeyError:
        if path.name.lower() in OUTPUT_KINDS:       # ".parquet": a hidden file's name, no extension
            raise ObookError(f"{path}: a file name is needed before the extension, e.g. "
                             f"bbo{path.name.lower()}") from None
        raise ObookError(f"{path}: unknown output type {path.suffix!r}; use one of "
                         f"{', '.join(sorted(OUTPUT_KINDS))}") from None


def _close_or_discard(sink, metadata) -> None:
    """Close the Parquet sink (a readable file of the rows so far); discard it if it cannot."""
    try:
        sink.close(metadata)
    except BaseException:
        sink.discard()
        raise


def write_failure(e: OSError, tmp=None, final=None) -> str:
    """The reason of a failed write, in a few words: Arrow's errors carry the C library's
    number (as ``errno``, or only in their text: '... Detail: [errno 28] ...') and a message
    naming the temporary file ('Failed to open local file ...'), said as ``final``."""
    import re

    found = None if e.errno else re.search(r"\[errno (\d+)\]", str(e))
    if e.errno or found:
        return os.strerror(e.errno or int(found.group(1)))
    why = e.strerror or str(e)
    return why.replace(str(tmp), str(final)) if tmp is not None else why


def write_files(tables, threads: int = 1) -> list[int]:
    """Several tables, ``[(reader, path)]``, all or none: each is written to a temporary name,
    and the names are given once every one is complete (a failure, a full disk, leaves none
    of them and no temporary file). The rows of each. ``threads``: write that many at once
    (the Parquet and Arrow writers work without the GIL); a reader may be a function that
    returns one, called on the writing thread."""
    staged: list = []
    path = None

    def one(reader, path):
        return write_file(reader() if callable(reader) else reader, path, staged=staged)

    try:
        if threads > 1 and len(tables) > 1:
            from concurrent.futures import ThreadPoolExecutor, wait

            with ThreadPoolExecutor(min(threads, len(tables)), thread_name_prefix="obook-write") as pool:
                futures = [pool.submit(one, reader, p) for reader, p in tables]
                wait(futures)
            for f, (_, path) in zip(futures, tables):
                f.result()                  # the first failure, once every writer has stopped
            counts = [f.result() for f in futures]
        else:
            counts = [one(reader, path) for reader, path in tables]
        with deferred():    # a Ctrl-C: once every table is in place (not some of them)
            for tmp, path in staged:
                os.replace(tmp, path)
                drop_stale_partial(path)
        return counts
    except OSError as e:
        raise OutputError(f"{path}: write failed: {write_failure(e)}") from e
    finally:
        with deferred():    # a second Ctrl-C: once every temp file is gone
            for tmp, _path in staged:
                remove_quietly(tmp)         # (gone once renamed)


def drop_stale_partial(path: Path) -> None:
    """Once ``path`` is complete, the ``<path>.partial`` an earlier failed write kept is
    out of date: it goes (a complete table beside a partial one of the same name misleads)."""
    partial = Path(path).with_name(Path(path).name + ".partial")
    if os.path.isfile(partial) and not os.path.islink(partial):    # (False for a name too long)
        remove_quietly(partial)


def check_not_an_input(output, inputs, what: str = "table") -> None:
    """An output file must not be one of the files being read (its rename would replace the
    feed with its own table): OutputError naming it (``what``: what the command writes)."""
    try:
        if not os.path.exists(output):
            return
        for item in inputs:
            if os.path.exists(item) and os.path.samefile(output, item):
                raise OutputError(f"{output}: is an input of this command; write the {what} elsewhere")
    except (OSError, TypeError, ValueError):
        return


def write_file(reader: pa.RecordBatchReader, path: str | Path, metadata: dict | None = None,
               compression: str = "fast", *, staged: list | None = None) -> int:
    """Write to a temporary name beside ``path`` and rename it when complete (``staged``: a
    list the complete ``(temporary, final)`` names are appended to instead, see
    ``write_files``).

    Parquet goes through the one Parquet writer (:class:`obook.parquet.ParquetSink`, as
    ``obook convert``): the same rows make the same file. ``compression``: "fast" or
    "small" (Parquet only).

    On a feed error the rows before it are kept as ``<path>.partial`` (trades: ``broken``
    by the breaks before the bad record only) and the error re-raised; on any other failure
    nothing is left behind.
    """
    from .checks import check_choice
    from .parquet import COMPRESSIONS

    path = Path(path)
    kind = output_kind(path)
    compression = check_choice("compression", compression, tuple(COMPRESSIONS))     # before any file is made
    if kind != "parquet" and compression != "fast":
        logging.getLogger("obook").warning("%s: compression %r is Parquet's; this %s file is written as it is",
                                           path, compression, kind)
    tmp = temp_path(path)
    try:
        n = _write(reader, tmp, kind, compression, metadata)
        if staged is None:
            os.replace(tmp, path)
            drop_stale_partial(path)
        else:
            staged.append((tmp, path))
        return n
    except FeedError as e:
        partial = path.with_name(path.name + ".partial")
        try:
            if tmp.exists():
                os.replace(tmp, partial)
                e.kept_in = str(partial)
                _delivered_breaks_only(partial, kind, reader.schema, e, compression, metadata)
        except OSError:
            remove_quietly(tmp)
        raise
    except OSError as e:
        remove_quietly(tmp)
        raise OutputError(f"{path}: write failed: {write_failure(e, tmp, path)}") from e
    except BaseException:
        remove_quietly(tmp)
        raise



def _write(reader: pa.RecordBatchReader, tmp: Path, kind: str, compression: str, metadata: dict | None) -> int:
    """``reader``'s rows written into ``tmp`` as ``kind``: the rows. On a feed error the rows
    before it are a complete file."""
    if kind == "parquet":
        from .parquet import ParquetSink

        sink = ParquetSink(tmp, reader.schema, compression=compression)
        try:
            for batch in reader:
                sink.write(batch)
        except FeedError:       # the rows before the bad record: a whole file, kept as .partial
            _close_or_discard(sink, metadata)
            raise
        except BaseException:
            sink.discard()
            raise
        sink.close(metadata)
        return sink.rows
    n = 0
    if kind == "arrow":
        with ipc.new_file(tmp, reader.schema) as w:
            for batch in reader:
                w.write_batch(batch)
                n += batch.num_rows
        return n
    with open(tmp, "wb") as f:
        if kind != "csv":
            return write_text(reader, f)
        f.write(csv_header(reader.schema.names))
        for batch in reader:
            pacsv.write_csv(text_safe(batch), f, pacsv.WriteOptions(include_header=False))
            n += batch.num_rows
    return n


#: the trades columns a break and a row's ``broken`` are told from
_BREAK_COLUMNS = ["seq", "kind", "match", "broken"]


def _delivered_breaks_only(path: Path, kind: str, schema: pa.Schema, e: FeedError, compression: str,
                           metadata: dict | None) -> None:
    """The trades kept in ``path`` (of ``kind``) when ``e`` stopped their replay, with
    ``broken`` made anew from the breaks of the records before ``e``'s only, as a replay of
    the feed cut there gives it (the breaks' prepass read the whole file; a break of a later
    record was never delivered). A file that cannot be rewritten goes (``e.kept_in`` None)."""
    from .feeds.breaks import rebroken

    if e.feed_record is None:
        return
    tmp = temp_path(path)
    try:
        breaks = breaks_before(path, kind, schema, e.feed_record)
        if breaks is None:
            return
        if kind == "csv":
            schema = text_safe_schema(schema)
        rows = (rebroken(batch, breaks) for batch in _read_back(path, kind, schema))
        _write(pa.RecordBatchReader.from_batches(schema, rows), tmp, kind, compression, metadata)
        os.replace(tmp, path)
    except Exception as other:  # noqa: BLE001 - the feed error is the one to report; this file goes
        logging.getLogger("obook").debug("%s: the trades' breaks before %s: %s", path, e, other)
        remove_quietly(tmp)
        remove_quietly(path)
        e.kept_in = None


def breaks_before(path: Path, kind: str, schema: pa.Schema, record: int):
    """The trade breaks of the records before ``record`` in the ``kind`` file ``path`` of
    ``schema``'s rows (:class:`obook.feeds.breaks.Breaks`); None: not a trades table, or no
    row of it is broken."""
    from .feeds.breaks import delivered

    if not set(_BREAK_COLUMNS) <= set(schema.names):
        return None
    return delivered(_read_back(path, kind, schema, _BREAK_COLUMNS), record)


def _read_back(path: Path, kind: str, schema: pa.Schema, columns: list[str] | None = None):
    """The batches of the ``kind`` file ``path`` that :func:`_write` wrote of ``schema``'s
    rows (``columns``: only these), of that schema (CSV: :func:`text_safe_schema`'s)."""
    names = schema.names
    schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata) if columns else schema
    if kind == "parquet":
        import pyarrow.parquet as pq

        with pq.ParquetFile(path) as source:
            for batch in source.iter_batches(columns=columns):
                yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)
    elif kind == "arrow":
        with pa.memory_map(str(path)) as source:
            file = ipc.open_file(source)
            for i in range(file.num_record_batches):
                batch = file.get_batch(i)
                yield batch.select(columns) if columns else batch
    else:
        types = text_safe_schema(schema)
        yield from pacsv.open_csv(
            path, pacsv.ReadOptions(skip_rows=1, column_names=names),
            pacsv.ParseOptions(newlines_in_values=True),
            pacsv.ConvertOptions(column_types={f.name: f.type for f in types}, include_columns=columns,
                                 null_values=[""], strings_can_be_null=True))
