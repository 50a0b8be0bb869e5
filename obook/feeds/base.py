"""The contract between a feed format and the replay engine.

The engine (obook.engine) reads the feed in blocks of at least 1 MiB and asks
the format's :class:`Framer` (in the parent process) to cut whole records into
batches; every worker then runs the format's :class:`Decoder` over each batch,
turning the records of the books it owns into normalized event rows
(obook._kernels.layout) that one shared book kernel applies.

A record may become any number of events. A decoder whose records each give at most
one event says so (``max_events_per_record = 1``): its ``events`` then always has a row
per record. Any other decoder stops when the next record's events do not fit, and returns
how far it got (``DecodeResult.n_bytes`` / ``n_records``); the engine grows the events
buffer and calls it again with the rest of the batch.

A framer that has to parse every record whole anyway (e.g. a text log whose batch cuts
depend on most fields) may hand the decoders its parse instead of the bytes
(``FrameResult.data``); the batch's record numbers and byte counts stay the feed's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import FeedError


@dataclass
class FrameResult:
    """What a framer found at the front of a buffer."""

    n_records: int                 # records in the batch (they get numbers base_seq .. base_seq+n-1)
    n_bytes: int                   # bytes of the batch (0 with not final: need more data)
    error: FeedError | None = None  # strict mode: raise after the batch's rows are delivered
    skip: bool = False             # tolerant mode: the batch's bytes are dropped, not decoded
    # what the decoders get instead of the batch's bytes (a uint8 array, or a tuple of them
    # that the engine lays end to end as it copies them to the workers; valid until the next
    # frame call): a framer that parsed every record whole hands over its parse (the workers
    # then never read the bytes again); None: the bytes
    data: np.ndarray | tuple | None = None


@dataclass
class DecodeResult:
    n_events: int
    names: list[tuple] = field(default_factory=list)   # (local book, ticker[, book key]) first seen
    error: tuple[int, str] | None = None                       # (record number, reason), strict mode
    n_bytes: int | None = None     # stopped for room: bytes of buf decoded (whole records); None: all
    n_records: int = 0             # stopped for room: the records those bytes hold


@dataclass(frozen=True)
class SideTable:
    """A table a format offers besides the replay's (ITCH symbols ...), streamed.

    ``read(path, names, on_error, counts)`` yields ``(name, pyarrow.RecordBatch)`` for several
    of the format's side tables in one pass over the feed (tables sharing a ``read`` are read
    together), batch by batch: its memory is a batch's, not the feed's. It adds the records
    by type it goes past to ``counts`` (a dict) when given.
    """

    name: str
    schema: object                 # pyarrow.Schema
    read: object                   # callable(path, names, on_error, counts) -> iter of (name, batch)


def counts_by_type(types: np.ndarray) -> dict[str, int]:
    """A count array indexed by type byte as ``{letter: count}`` (the non-zero ones)."""
    return {chr(t): int(n) for t, n in enumerate(types) if n}


class Framer:
    """Parent side: cuts whole records; counts records; sees every record once."""

    unit = "record"
    #: True when the format was told from the file rather than given: a framer may then
    #: refuse content that is plainly not its format (the engine sets it)
    detected = False
    #: a framer that hands the workers its parse (FrameResult.data): the most bytes of one
    #: batch's parse (the engine's input slots hold that much); 0: the bytes read
    batch_bytes = 0
    #: set by the engine when the feed's reading fails (a damaged compressed stream): a
    #: callable ``seq -> FeedError`` of the record the damage cuts; the frame calls that
    #: follow are final and end at the damage (a line format's: after its last whole line).
    #: A framer that looks records ahead (to order or group them) frames only the records
    #: it could place without the lost ones and returns ``damage(first record lost)``;
    #: any other's error at the end is replaced by the engine
    damage = None

    def __init__(self, path: str, on_error: str = "raise"):
        self.path = str(path)
        self.on_error = on_error
        self.skipped: dict[str, int] = {}  # tolerant-mode counts of what the framer skipped

    def frame(self, buf: np.ndarray, base_seq: int, byte_offset: int, final: bool,
              max_records: int) -> FrameResult:
        """Find the batch at the front of ``buf`` (uint8, whole array is valid data).

        ``base_seq`` is the number of the first record in ``buf``; ``byte_offset``
        the position of ``buf[0]`` in the (decompressed) file. With ``final`` the
        buffer holds the rest of the file.
        """
        raise NotImplementedError

    def records_in(self, tail: np.ndarray) -> int:
        """The records that start in ``tail``, the bytes the framer left unframed at the end
        of a file of a feed in several files: lines a text framer holds back to look ahead (and
        a last one the file's end cuts), or the one record a binary framer leaves when the end
        cuts it (a binary framer that looks records ahead counts them)."""
        if not len(tail):
            return 0
        if self.unit != "line":
            return 1
        return int(np.count_nonzero(tail == 10)) + (0 if tail[-1] == 10 else 1)

    def message_counts(self) -> dict[str, int] | None:
        """Records framed so far by type (None when the framer does not know types)."""
        return None

    def notes(self) -> list[str]:
        """What the replay's warning says of the feed once it is framed whole (records the
        format skips without error, such as types it does not know)."""
        return []


class Decoder:
    """Worker side: one per worker process, kept for the whole replay."""

    #: global book id = local book id * book_mul + book_add (set by the engine per worker)
    book_mul = 1
    book_add = 0
    #: 1: each record gives at most one event (``events`` has a row per record); None: any
    #: number (the decoder stops when ``events`` is full and is called again)
    max_events_per_record: int | None = 1

    def __init__(self, path: str, worker: int, n_workers: int, on_error: str = "raise", want: int = 0):
        self.path = str(path)
        self.worker = worker
        self.n_workers = n_workers
        self.on_error = on_error
        self.want = want  # layout.WANT_* bits: the tables besides the BBO to feed
        self.skipped: dict[str, int] = {}  # tolerant-mode counts of what the decoder skipped

    def decode(self, buf: np.ndarray, base_seq: int, events: np.ndarray) -> DecodeResult:
        """Write the event rows of the owned records of ``buf`` into ``events``.

        With ``max_events_per_record = 1``, ``events`` has at least as many rows as ``buf``
        has records. Otherwise it has at least one row; when the events of the next record
        do not fit, return ``DecodeResult(n_events, names, error, n_bytes, n_records)``
        with the bytes and records decoded so far (whole records only; ``n_bytes`` may be 0).
        """
        raise NotImplementedError

    def feed_refs(self, table: str, rows: np.ndarray) -> None:
        """This batch's rows of ``table`` ("trades" or "orders", the book kernel's): a decoder
        whose events name orders by keys of its own (EV_REF, EV_NEWREF) puts the feed's
        refs back in place; the feed's refs as they are (nothing to do) by default."""

    def select(self, tickers: tuple[str, ...]) -> bool:
        """Decode only the records of these tickers' books (a decoder that can tell a
        record's book cheaply skips the others right after framing); returns whether this
        decoder selects. The engine keeps only these tickers' rows either way."""
        return False

    @classmethod
    def warm(cls) -> None:
        """Load the compiled kernels (numba cache) once, e.g. in the forkserver."""

    def message_counts(self) -> dict[str, int] | None:
        """This worker's well-formed records by type, when the framer cannot count them."""
        return None

    def describe(self, code: int, event: np.ndarray) -> str:
        """The reason text of a book error (layout.ERR_*) caused by ``event``."""
        raise NotImplementedError
