"""Feed formats as plug-ins: one package ``obook.feeds.<name>`` per format.

Each package's ``__init__`` is cheap (no numba, no kernels) and defines ``FORMAT``, a
:class:`FeedFormat` that declares everything the engine, the tables and the adapters need:
its framer and decoder (lazy ``"module:attr"`` references), how a file is recognised, the
identity of a book, the price scale, the time zone and unit, the session date, its side
tables and the extra passes it needs. Nothing outside ``obook.feeds`` tests a format's name:
the rest of obook reads these attributes.

``get_format(name)`` returns a :class:`FeedFormat`; ``detect_format(path)`` the name of the
format whose ``sniff`` is surest about the file (a table file, Parquet or Arrow, is refused
with an error saying so); ``formats()`` every registered format.

A format registers itself by being a package here: ``packages()`` lists the built-ins of
``PACKAGES`` (in their sniffing order) and then every other package of ``obook/feeds`` whose
``__init__`` defines ``FORMAT``, by name. Adding a format adds files under its own folder only.
"""

from __future__ import annotations

import importlib
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import FormatError, ObookError

#: the built-in format packages, in the order their sniffers are asked (the first of equal
#: scores wins); packages() adds the others found under obook/feeds
PACKAGES = ("obook.feeds.itch", "obook.feeds.csv", "obook.feeds.databento", "obook.feeds.sse", "obook.feeds.szse",
            "obook.feeds.szse.binary", "obook.feeds.szse.vendor", "obook.feeds.mold")

#: bytes of the (decompressed) head of a file handed to the sniffers
SNIFF_BYTES = 64


def load(ref: str) -> Any:
    """The object a lazy ``"package.module:attr"`` reference names."""
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


_NAME_DATE = None


def named_date(path):
    """The session date a file name carries for a format whose records carry none: an ISO
    date ``YYYY-MM-DD`` or ``YYYYMMDD`` in the name (not part of a longer number), e.g.
    ``2024-03-01.csv`` or ``orders_20240301.csv.gz``; None otherwise (a list of paths: the
    first one's). Of a name with two different dates the first is used, with a warning on the
    ``obook`` logger."""
    import datetime as _dt
    import logging
    import re

    global _NAME_DATE
    if _NAME_DATE is None:
        _NAME_DATE = re.compile(r"(?<!\d)(\d{4})(-?)(\d{2})\2(\d{2})(?!\d)")
    if isinstance(path, (list, tuple)):
        path = path[0] if path else None
    if path is None:
        return None
    days = []
    for m in _NAME_DATE.finditer(Path(str(path)).name):
        try:
            day = _dt.date(int(m.group(1)), int(m.group(3)), int(m.group(4)))
        except ValueError:
            continue
        if day not in days:
            days.append(day)
    if len(days) > 1 and not _NAMES_QUIET and str(path) not in _TWO_DATES_WARNED:
        _TWO_DATES_WARNED.add(str(path))
        logging.getLogger("obook").warning("%s: its name carries two dates (%s, %s); %s is used as the session "
                                           "date (give --date / date= to choose)", path, days[0], days[1], days[0])
    return days[0] if days else None


#: the names already warned about carrying two dates (a command asks for the date more than once)
_TWO_DATES_WARNED: set = set()
#: non-empty while a date was given: the name's dates are only compared with it
_NAMES_QUIET: list = []


@contextmanager
def date_given():
    """Within it, :func:`named_date` does not warn of a name with two dates (the caller was
    given the session date and only compares the name's with it)."""
    _NAMES_QUIET.append(True)
    try:
        yield
    finally:
        _NAMES_QUIET.pop()


@dataclass(frozen=True)
class FeedFormat:
    """What obook knows about one feed format (the contract: obook/feeds/base.py and docs/architecture.md)."""

    name: str                        # what users pass as format=
    unit: str                        # what a record number counts: "message", "line", "record"
    framer: str                      # lazy ref of the Framer class (parent process)
    decoder: str                     # lazy ref of the Decoder class (workers)
    sniff: Callable[[str, bytes], int]   # (file name, head bytes) -> 0: not mine; higher: surer
    book_key: str | None = None      # the book-identity column (None: ticker only, a null "locate")
    book_key_type: str = "uint32"    # its Arrow integer type
    price_scale: int = 4             # decimal digits of the integer prices
    tz: str = "America/New_York"     # the feed's time zone
    time_unit_ns: int = 1            # ns per unit of the feed's ``time``
    epoch: bool = False              # True: ``time`` is UTC epoch; False: since local midnight
    session_date: Callable[[str], Any] | None = None   # the trading day from a path, or None
    order_ids: str = "int"           # "int" (ref columns) or "text" (byte spans of the batch)
    feed_seq: bool = False           # True: ``seq`` is the feed's own sequence number
    side_tables: dict[str, str] = field(default_factory=dict)   # name -> lazy ref of a SideTable
    messages: str | None = None      # lazy ref of ``read(path, on_error) -> RecordBatchReader``
    prepass: str | None = None       # lazy ref of ``scan(path, framer, progress) -> breaks``
    # lazy ref of ``merge(paths, on_error) -> reader`` that reads several files as one feed in
    # the feed's own order (its sequence numbers); the reader has readinto(view), pos() (bytes
    # of the files read) and close(). Without it, a list of files is concatenated in the given order.
    # With feed_seq, the framer and the decoder number records (EV_SEQ, errors) by the
    # feed's own sequence numbers, which must increase along the feed.
    merge: str | None = None
    # lazy ref of ``source(path) -> source``: what the engine reads for a path (or list) of
    # this format, e.g. a packet capture's lines read as one feed (an object with
    # ``open_feed()``, see obook.feeds.sources); None: the path itself
    source: str | None = None
    # lazy ref of a list of ``pyarrow.Field``: columns every replay table gets per record,
    # their values from the feed reader's ``record_columns(seq) -> [arrays]`` (one per field)
    record_columns: str | None = None
    tables: tuple[str, ...] = ()     # extra tables the format offers (built by ``table_reader``)
    # lazy ref of ``reader(name, source, workers, on_error, replay_class) -> RecordBatchReader``
    # building the ``tables`` (None: the package's module-level ``TABLES`` reference)
    table_reader: str | None = None
    # lazy ref of ``schema(name) -> pyarrow.Schema`` of the ``tables`` (None: read from a reader)
    table_schema: str | None = None
    # what the format's own and side tables are: name -> {"doc": ..., "prices": (columns),
    # "quantities": (columns), "times": (columns), "options": (names)} (obook.tables)
    table_info: dict = field(default_factory=dict)
    quantity_scale: int = 1          # the feed's quantity integers per share / unit traded
    # the trades kinds that are executions (None: every trades row is one); the others
    # (a venue's second report of the same execution, publication markers) are left out of
    # the trades table; ``aggressor_kinds``: kinds whose side is the aggressor's (the table
    # shows the resting side)
    trade_kinds: str | None = None
    aggressor_kinds: str = ""
    sideless_kinds: str = ""         # trades kinds that have no side (and no ref)
    match_numbers: bool = True       # the trades' ``match`` is the feed's match number (else null)
    suffixes: tuple[str, ...] = ()   # file name endings of the format (documentation, sniffing)
    title: str = ""                  # what the format is called in help and docs ("" : its name)
    # the feed times (in ``time``'s unit) of continuous trading, (from, to): outside them the
    # venue runs call auctions, whose orders rest until the uncross (obook.simulate fills no
    # own order then but in the uncross); None: continuous trading whenever the feed has records
    continuous: tuple[int, int] | None = None

    def record_fields(self) -> list:
        """The ``pyarrow.Field`` of the per-record columns (``record_columns``), or []."""
        return list(load(self.record_columns)) if self.record_columns else []

    def reading(self, source):
        """The source the engine reads for ``source`` (see ``FeedFormat.source``)."""
        return load(self.source)(source) if self.source else source

    def framer_class(self):
        return load(self.framer)

    def decoder_class(self):
        return load(self.decoder)

    def side_table(self, name: str):
        """The :class:`obook.feeds.base.SideTable` ``name`` of this format."""
        try:
            return load(self.side_tables[name])
        except KeyError:
            have = ", ".join(self.side_tables) or "none"
            raise ObookError(f"{self.name} feeds have no table {name!r} (they have: {have})") from None

    def side_batches(self, path, names, on_error: str = "raise", counts: dict | None = None):
        """``(name, pyarrow.RecordBatch)`` of several side tables, streamed (one pass per
        reader they share); ``counts`` gets the records by type. Unknown names raise here,
        before any reading."""
        groups: dict = {}
        for name in names:
            table = self.side_table(name)
            groups.setdefault(table.read, []).append(name)

        def batches():
            for read, group in groups.items():
                yield from read(path, group, on_error, counts)
        return batches()

    def messages_reader(self):
        if self.messages is None:
            from ..checks import a_feed

            raise ObookError(f"{a_feed(self.name)} has no messages reader")
        return load(self.messages)


_formats: dict[str, FeedFormat] | None = None
_packages: dict[str, str] = {}     # format name -> its package


def packages() -> tuple[str, ...]:
    """The format packages: ``PACKAGES``, then the other packages of obook/feeds that
    define ``FORMAT`` (by name)."""
    import pkgutil

    found = list(PACKAGES)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        name = f"{__name__}.{info.name}"
        if info.ispkg and name not in found and hasattr(importlib.import_module(name), "FORMAT"):
            found.append(name)
    return tuple(found)


def formats() -> dict[str, FeedFormat]:
    """Every registered format by name (importing the cheap package fronts once)."""
    global _formats
    if _formats is None:
        found = {}
        for package in packages():
            fmt = importlib.import_module(package).FORMAT
            found[fmt.name] = fmt
            _packages[fmt.name] = package
        _formats = found
    return _formats


def titles() -> str:
    """The registered formats' titles, in registration order, as a comma-separated list
    (formats sharing a title are named once)."""
    names = []
    for fmt in formats().values():
        title = fmt.title or fmt.name
        if title not in names:
            names.append(title)
    return ", ".join(names)


def format_package(fmt: FeedFormat):
    """The package module of a registered format (its ``TABLES``, ``GEN_COMMAND`` ...)."""
    formats()
    return importlib.import_module(_packages[fmt.name])


def format_table_reader(fmt: FeedFormat, name: str):
    """``reader(name, source, workers, on_error, replay_class)`` of one of a format's
    extra ``tables`` (``FORMAT.table_reader``, else its package's ``TABLES``)."""
    if name not in fmt.tables:
        have = ", ".join(fmt.tables) or "none"
        raise ObookError(f"{fmt.name} feeds have no table {name!r} (their own tables: {have})")
    return load(fmt.table_reader or format_package(fmt).TABLES)


def get_format(name: str) -> FeedFormat:
    try:
        return formats()[name.lower()]
    except KeyError:
        raise ObookError(f"unknown feed format {name!r}; choose one of {', '.join(formats())}") from None


def resolve_format(format, path) -> FeedFormat:
    """``format`` (a name or a FeedFormat) when given, else the format detected from ``path``."""
    if isinstance(format, FeedFormat):
        return format
    if not format:
        return get_format(detect_format(path))
    fmt = get_format(format)
    _refuse_format_of_table(format, path)
    if isinstance(path, (list, tuple)):
        for other in path[1:]:      # (a file of another format: its lines would be skipped as bad)
            if isinstance(other, (str, os.PathLike)) and os.path.isfile(other):
                _check_same_format(fmt.name, None, os.fspath(other))
    return fmt


def _refuse_format_of_table(format: str, path) -> None:
    """A format given for a table file (Parquet, Arrow: :func:`table_kind`) is an ObookError
    naming both: the format says how to decode a feed, and a table is no feed (read as one,
    its bytes would fail as a truncated or damaged feed of that format)."""
    from .sources import read_head

    items = path if isinstance(path, (list, tuple)) else [path]
    for item in items:
        if not isinstance(item, (str, os.PathLike)) or not os.path.isfile(item):
            continue          # (a stream, a capture's lines, a FIFO: not read here)
        try:
            kind = table_kind(read_head(item, 8))     # (a gzipped or zipped table too)
        except ObookError:
            continue          # a damaged compressed file: its replay says what is wrong
        if kind is not None and _whole_table(item, kind):
            raise ObookError(f"{os.fspath(item)}: format {format!r} was given, but the file is {kind} (a table, "
                             "not a feed that format decodes): read it with DuckDB, polars or pyarrow, or give "
                             "the feed it came from")



#: the last bytes of the table files that end with their magic too
_TABLE_TAILS = {"a Parquet file": b"PAR1", "an Arrow IPC file": b"ARROW1", "a Feather file": b"FEA1"}


def _whole_table(path, kind: str) -> bool:
    """Whether the file whose first bytes are ``kind``'s is that table, not a feed of the format
    given that starts with the same bytes by chance: a plain file ends with the magic it starts
    with (Parquet, Arrow IPC, Feather) or opens as an Arrow IPC stream; a compressed file (its
    own first bytes are not the table's) is taken at its first bytes."""
    with open(path, "rb") as f:
        head = f.read(8)
        if table_kind(head) != kind:
            return True
        tail = _TABLE_TAILS.get(kind)
        if tail is not None:
            size = f.seek(0, os.SEEK_END)
            if size < 2 * len(tail) + 4:
                return False
            f.seek(size - len(tail))
            return f.read(len(tail)) == tail
    import pyarrow as pa

    try:
        with pa.ipc.open_stream(path) as reader:
            reader.schema
    except (pa.ArrowException, OSError, ValueError):
        return False
    return True

def detect_format(path: str | Path, least: int = 1) -> str:
    """The name of the registered format whose sniffer scores ``path`` highest (a path, a list
    of paths, or a stream made ready by ``sources.headed``: its first bytes); ``least``: the
    lowest score taken (:func:`detect_head`)."""
    from .sources import HeadedStream, is_stream, read_head, source_name, source_paths

    if is_stream(path):
        what = source_name(path)
        if not isinstance(path, HeadedStream):     # (sources.headed keeps a stream's first bytes)
            raise FormatError(what, "a stream of unknown format", formats())
        if not path.first:
            if path.failed is not None:     # its first read failed: that, not an empty feed
                raise ObookError(f"{what}: reading it failed before its first byte: {path.failed}")
            raise FormatError(what, "the feed is empty (its format cannot be told)", formats())
        return detect_head(Path(what).name, read_head(path, SNIFF_BYTES), what, least)
    paths = source_paths(path)
    # the first file's bytes decide (of a list: the first file with bytes, as an empty one
    # holds no record of any format); the error names that file (not the list or the lines)
    first = next((p for p in paths if read_head(p, 1)), paths[0]) if len(paths) > 1 else None
    name = Path(first or (paths[0] if paths else "")).name
    best = detect_head(name, read_head(first or path, SNIFF_BYTES), str(first or (paths[0] if paths else path)),
                       least)
    for other in paths[1:] if first is None else paths:
        if other is not first:
            _check_same_format(best, first or paths[0], other)
    return best


def other_format(path, given: FeedFormat) -> str | None:
    """The format a feed given as ``given`` looks like, when that is another one: recognised
    from its first bytes (:data:`SURE`, not a guess) and ``given`` not sure of them too (a
    variant of a format reads its bytes); None otherwise, or when they cannot be read."""
    from .sources import is_stream, read_head, source_name, source_paths

    try:
        found = detect_format(path, least=SURE)
        if found == given.name:
            return None
        paths = [path] if is_stream(path) else source_paths(path)
        first = next((p for p in paths if read_head(p, 1)), paths[0])
        name = Path(source_name(first) if is_stream(first) else first).name
        if given.sniff(name, read_head(first, SNIFF_BYTES)) >= SURE:
            return None
    except Exception:  # noqa: BLE001 - no format claims it: there is nothing to name
        return None
    return found


def require_format(path, name: str, what: str) -> None:
    """An ObookError when ``path`` is a feed of another format than ``name`` (``what``: what
    takes only that format; a table file is one too); a file no format claims passes (its
    reader says what is wrong)."""
    try:
        found = detect_format(path)
    except ObookError:
        if isinstance(path, (str, Path)) and Path(path).is_file():
            from .sources import read_head

            refuse_table(str(path), read_head(path, SNIFF_BYTES))
        return
    if found != name:
        from ..checks import a_feed

        raise ObookError(f"{path}: {a_feed(found)}; {what}")


def _check_same_format(best: str, first, other) -> None:
    """Files read as one feed are one format: ``other`` (a later file of the list) must not
    be recognised as another format (a score of SURE or more) while it does not look like
    ``best`` at all (the format of the file ``first``; None: the format given). A part
    without a header of its own (the rest of a split file) is recognised as none and passes."""
    from .sources import read_head

    fmt = get_format(best)
    name, head = Path(other).name, read_head(other, SNIFF_BYTES)
    refuse_table(str(other), head)
    if not head or fmt.sniff(name, head) > 0:      # (an empty file: no record of any format)
        return
    try:    # another format recognised, not guessed (ITCH guesses any bytes: a split record's rest)
        looks = detect_head(name, head, least=SURE)
    except ObookError:
        return
    but = f"{first} is format {best}" if first is not None else f"format {best!r} was given"
    raise ObookError(f"{other}: format {looks}, but {but}: the files of a list are one feed, in one format")


#: the first bytes of table files that are no feed (obook's own Parquet and Arrow outputs
#: among them), and what each is
TABLE_MAGICS = ((b"PAR1", "a Parquet file"), (b"ARROW1", "an Arrow IPC file"), (b"FEA1", "a Feather file"))


def table_kind(head: bytes) -> str | None:
    """What table file the first bytes ``head`` start (``TABLE_MAGICS``, or an Arrow IPC
    stream: the continuation marker 0xFFFFFFFF, then a metadata length, a multiple of 8),
    or None for anything else (the feeds)."""
    for magic, kind in TABLE_MAGICS:
        if head.startswith(magic):
            return kind
    if len(head) >= 8 and head[:4] == b"\xff\xff\xff\xff":
        size = int.from_bytes(head[4:8], "little")
        if 0 < size < 1 << 24 and size % 8 == 0:
            return "an Arrow IPC stream"
    return None


def refuse_table(what: str, head: bytes) -> None:
    """ObookError when ``head`` starts a table file (Parquet, Arrow) rather than a feed:
    obook reads feeds; a table it (or another tool) wrote is read with a table reader."""
    kind = table_kind(head)
    if kind is not None:
        raise ObookError(f"{what}: {kind} (a table, not a feed): read it with DuckDB, polars or pyarrow, "
                         "or give the feed it came from")


#: a sniffer's score of a feed it recognises by its bytes (lower ones: a guess, taken only
#: when no format is surer)
SURE = 80


def detect_head(name: str, head: bytes, what: str | None = None, least: int = 1) -> str:
    """The name of the registered format whose sniffer scores (file ``name``, first bytes
    ``head``) highest, at least ``least`` (:data:`SURE`: a format recognised, not guessed);
    ``what`` names the feed in the error when none does. A table file (Parquet, Arrow:
    :func:`table_kind`) is an ObookError saying so, whatever its name."""
    refuse_table(what or name, head)
    best, score = None, least - 1
    for fmt in formats().values():
        s = fmt.sniff(name, head)
        if s > score:
            best, score = fmt.name, s
    if best is None:
        raise FormatError(what or name, "cannot tell the feed format", formats())
    return best


def side_table_names() -> dict[str, FeedFormat]:
    """Every side table name of the registered formats, with the (first) format offering it."""
    out: dict[str, FeedFormat] = {}
    for fmt in formats().values():
        for name in fmt.side_tables:
            out.setdefault(name, fmt)
    return out


def side_schema(name: str):
    """The schema of a side table (from the first format offering it)."""
    return side_table_names()[name].side_table(name).schema


def side_table_reader(path, name: str, on_error: str = "raise", format=None):
    """One side table of a feed (ITCH: ``symbols``, ``system_events``, ``trading_actions``)
    as a ``pyarrow.RecordBatchReader`` streamed from the format's own reader (a batch's
    memory). A bad name, file or format raises here; a bad record while reading, after
    the rows before it."""
    import pyarrow as pa

    from ..checks import check_choice
    from .sources import check_source

    if name not in side_table_names():
        raise ObookError(f"unknown table {name!r}; choose from {', '.join(side_table_names())}")
    check_source(path)
    fmt = resolve_format(format, path)
    batches = fmt.side_batches(path, [name], check_choice("on_error", on_error, ("raise", "skip")))
    return pa.RecordBatchReader.from_batches(fmt.side_table(name).schema, (b for _, b in batches))


def read_side_table(path, name: str, on_error: str = "raise", format=None):
    """One side table of a feed as a whole ``pyarrow.Table`` (small ones: :func:`side_table_reader`
    streams)."""
    return side_table_reader(path, name, on_error, format).read_all()


__all__ = ["FeedFormat", "formats", "format_package", "packages", "get_format", "resolve_format", "detect_format",
           "detect_head", "load", "side_table_names", "side_schema", "read_side_table", "side_table_reader", "PACKAGES",
           "format_table_reader", "table_kind", "refuse_table", "TABLE_MAGICS"]
