"""Where a feed's bytes come from, and cutting them into batches of whole records.

A *source* is one of

* a path: a plain, gzip (ISA-L) or zstd (``compression.zstd``, streamed; a skippable frame
  first too, as ``pzstd`` writes: :mod:`obook.feeds.zstd_frames`) file, or a zip of one
  file, told apart by its first bytes, never by its name;
* a list of paths: several files that form one feed, concatenated in the given order (or,
  when the format has a ``merge`` hook, merged by the format's own sequence numbers);
* a binary file-like object (``readinto`` or ``read``) or a socket: a stream, read in
  blocks until it ends; one with a true ``partial_reads`` attribute (``obook.live``'s
  arbitrated feed) is framed read by read, as its records arrive;
* an object with ``open_feed()`` returning a :class:`Reader`-like object (a format's own
  source, e.g. the lines of packet captures read as one feed; ``os.fspath`` of its items
  are its files). Such a reader may have ``record_columns(seq) -> [arrays]``: columns of
  its records the replay adds to every table (``FeedFormat.record_columns``).

:func:`open_source` gives a :class:`Reader` over any of them; :func:`iter_batches` reads it
in blocks of at least ``BLOCK_SIZE`` bytes and asks the format's framer to cut whole records.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Iterator

import numpy as np

from .._kernels.layout import MAX_BATCH_RECORDS
from ..errors import TRUNCATED_AT, FeedError, ObookError, TruncatedFeedError
from .pieces import Pieces
from .zstd_frames import Unzstd, ZstdUnits, is_zstd

BLOCK_SIZE = 1 << 20
#: the first (decompressed) bytes of a stream kept to tell its format and session date, as
#: a path's are read again for them
HEAD_BYTES = 4096
READ_PIECE = 1 << 17

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
ZIP_EMPTY_MAGIC = b"PK\x05\x06"      # an archive of no file: its directory's end alone


def is_stream(source) -> bool:
    """A file-like object or socket (not a path, not a list of paths)."""
    return isinstance(source, socket.socket) or hasattr(source, "readinto") or hasattr(source, "read")


def source_paths(source) -> list[str]:
    """The file paths of a path or a list of paths ([] for a stream)."""
    if is_stream(source):
        return []
    if isinstance(source, (list, tuple)):
        return [os.fspath(p) for p in source]
    return [os.fspath(source)]


def source_name(source) -> str:
    """How errors name the feed: its path, the paths joined by ``+`` (each once: two lines of
    one capture are one file), or the stream's name."""
    if is_stream(source):
        return str(getattr(source, "name", None) or f"<{type(source).__name__}>")
    return "+".join(dict.fromkeys(source_paths(source)))


def check_source(source) -> None:
    """Raise ObookError when a path of ``source`` is not a file (streams pass), or when the
    files of one feed name a file twice."""
    paths = source_paths(source)
    if not paths and not is_stream(source):
        raise ObookError("no feed files given")
    for p in paths:
        if not Path(p).is_file():
            raise ObookError(_not_a_feed(p))
    files = [p for p in source if isinstance(p, (str, PurePath))] if isinstance(source, (list, tuple)) else []
    if len(files) > 1:      # (not a capture's lines: two lines may be in one capture)
        _check_each_once(files)


def _check_each_once(paths) -> None:
    """Raise ObookError when ``paths`` (the files of one feed) name a file twice, by any
    spelling (a link, ``./``): its records would be read twice."""
    seen: dict[tuple[int, int], str] = {}
    for p in paths:
        st = os.stat(p)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            again = "named twice" if os.fspath(p) == seen[key] else f"the same file as {seen[key]}"
            raise ObookError(f"{os.fspath(p)}: {again}: the files of one feed name each file once")
        seen[key] = os.fspath(p)


def _not_a_feed(p: str) -> str:
    """Why a path is no feed file: missing, a directory, or not a regular file."""
    if p == "-":
        return "-: give a file (the command line reads stdin as a feed with --format)"
    from ..checks import no_file, not_a_file

    return not_a_file(p) if Path(p).exists() else no_file(p)


class _Counting:
    """A raw file that counts the bytes read from it (the progress of a compressed file)."""

    def __init__(self, f):
        self.f = f
        self.pos = 0

    def read(self, n=-1):
        while True:
            try:
                b = self.f.read(n)
            except BlockingIOError:
                b = None
            if b is not None:
                break
            _wait_readable(self.f)          # a non-blocking stream: nothing yet
        self.pos += len(b)
        return b

    def readinto(self, view):
        n = _readinto(self.f, view)
        self.pos += n
        return n

    def close(self):
        self.f.close()


class Reader:
    """Decompressed bytes of one source; ``pos()``: bytes of the source (compressed) read."""

    def __init__(self, parts: list, raws: list):
        self.parts = parts        # readable objects, read one after the other
        self.raws = raws          # their underlying files (for pos and close)
        self.i = 0
        self.by_piece = False     # True: a read returns 0 at the end of each part, then goes on

    def readinto(self, view: memoryview) -> int:
        while self.i < len(self.parts):
            n = _readinto(self.parts[self.i], view)
            if n:
                return n
            self.i += 1
            if self.by_piece:
                return 0
        return 0

    def more(self) -> bool:
        """Parts remain to be read (after a read that returned 0 by piece)."""
        return self.i < len(self.parts)

    def pos(self) -> int:
        return sum(r.pos for r in self.raws)

    def close(self) -> None:
        for p in self.parts:
            try:
                p.close()
            except Exception:  # noqa: BLE001 - closing after use; nothing to report
                pass
        for r in self.raws:
            r.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _readinto(f, view: memoryview) -> int:
    """Bytes read into ``view`` from ``f`` (``readinto``, else ``read``); 0 only at the end.
    A non-blocking stream with nothing yet (None, BlockingIOError) is waited for."""
    while True:
        try:
            if hasattr(f, "readinto"):
                n = f.readinto(view)
            else:
                b = f.read(len(view))
                n = None if b is None else len(b)
                if n:
                    view[:n] = b
        except BlockingIOError:
            n = None
        if n is not None:
            return n
        _wait_readable(f)


def _wait_readable(f) -> None:
    """Until a non-blocking stream may have bytes: its descriptor readable (a second at most
    a wait, then ask again), or a millisecond for a stream without one."""
    import io
    import select
    import time

    try:
        select.select([f.fileno()], [], [], 1.0)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        time.sleep(0.001)


class _Socket:
    """A socket as a readable object (recv_into until the peer closes)."""

    def __init__(self, sock):
        self.sock = sock
        self.pos = 0

    def readinto(self, view):
        n = self.sock.recv_into(view)
        self.pos += n
        return n

    def close(self):
        pass   # the caller owns the socket


class _Stream(_Counting):
    def close(self):
        pass   # the caller owns the stream


class _PieceReader:
    """A compressed file decompressed piece by piece, each read giving at most the bytes asked
    for and returning as soon as one step gave some: a small file of a huge decompressed size
    costs its reads, not its size in memory, and a file cut short loses nothing before the
    cut (a read that meets the cut returns what it got; the next raises EOFError). One or
    more members (gzip) or frames (zstd) follow each other, as streaming writers make them.

    ``new()`` makes a decompressor for the next member (``decompress(data, max_length)``,
    ``eof``, ``needs_input``, ``unused_data``); ``member(data)`` checks the bytes that start
    one (returns them, less padding, or b"" for padding alone)."""

    CHUNK = 1 << 17      # compressed bytes read at a time

    def __init__(self, raw, new, member=lambda data: data, what: str = "stream"):
        self.raw, self._new, self._member, self.what = raw, new, member, what
        self._d = None

    def readinto(self, view) -> int:
        while True:
            d = self._d
            if d is None or d.eof:            # before the first member, or between members
                data = self._member(d.unused_data if d is not None else b"")
                while not data:
                    data = self.raw.read(self.CHUNK)
                    if not data:
                        return 0
                    data = self._member(data)
                self._d = d = self._new()
            elif d.needs_input:
                data = self.raw.read(self.CHUNK)
                if not data:
                    raise EOFError(f"{self.what} ended inside a member")
            else:
                data = b""                    # output of input already given is pending
            out = d.decompress(data, len(view))
            if out:
                view[:len(out)] = out
                return len(out)

    def close(self) -> None:
        self._d = None


def _gzip_member(data: bytes) -> bytes:
    """The bytes that start a gzip member (zero padding after a member skipped, as gzip does);
    anything else is no gzip member."""
    data = data.lstrip(b"\0")
    if data and not GZIP_MAGIC.startswith(data[:2]):
        raise OSError(f"not a gzip member after the last one (starts {data[:2]!r})")
    return data


class _Gunzip:
    """ISA-L's gzip decompressor (about 2x zlib's here), its errors as OSError (as gzip's)."""

    def __init__(self):
        from isal.igzip_lib import DECOMP_GZIP, IgzipDecompressor

        self._d = IgzipDecompressor(flag=DECOMP_GZIP)

    def decompress(self, data: bytes, max_length: int) -> bytes:
        from isal.igzip_lib import IsalError

        try:
            return self._d.decompress(data, max_length)
        except IsalError as e:
            raise OSError(f"damaged gzip stream: {e}") from e

    eof = property(lambda self: self._d.eof)
    needs_input = property(lambda self: self._d.needs_input)
    unused_data = property(lambda self: self._d.unused_data)


def _decompressing(raw, magic: bytes, name: str):
    if magic[:2] == GZIP_MAGIC:
        return _PieceReader(raw, _Gunzip, _gzip_member, "gzip stream")
    if is_zstd(magic):
        return _PieceReader(ZstdUnits(raw), Unzstd, what="zstd stream")
    return raw


def open_file(path) -> tuple:
    """(readable, raw counting file) of one path: plain, gzip or zstd by its magic bytes."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ObookError(f"{path}: cannot open feed: {e.strerror or e}") from e
    head = f.read(64)
    magic = head[:4]
    f.seek(0)
    raw = _Counting(f)
    if magic == ZIP_MAGIC and _is_zip(f):        # (a text feed may start with "PK\3\4" too)
        return _unzipping(f, str(path)), raw
    if magic == ZIP_EMPTY_MAGIC and _is_zip(f):
        f.close()
        raise ObookError(f"{path}: an empty zip archive (no feed file inside)")
    if magic == ZIP_MAGIC and _zip_member_header(head):
        f.close()
        raise ObookError(f"{path}: a zip archive cut short or damaged (its directory is missing)")
    return _decompressing(raw, magic, str(path)), raw


def _is_zip(f) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(f)
    finally:
        f.seek(0)


def _zip_member_header(head: bytes) -> bool:
    """Whether ``head`` starts with a plausible zip local file header (a known method, a
    name of printable text): a zip archive, though not a readable one."""
    import struct

    if len(head) < 30:
        return False
    method, name_len = struct.unpack_from("<H", head, 8)[0], struct.unpack_from("<H", head, 26)[0]
    name = head[30:30 + name_len]
    return (method in (0, 8, 9, 12, 14, 93) and 0 < name_len == len(name)
            and all(32 <= c < 127 for c in name))


class _ZipMember:
    """A zip archive's file, read; a damaged one raises OSError (as a damaged gzip file does)."""

    def __init__(self, member, name: str):
        self.member, self.name = member, name

    def readinto(self, view) -> int:
        import zipfile
        import zlib

        try:
            return self.member.readinto(view)
        except (zipfile.BadZipFile, zlib.error, NotImplementedError) as e:
            raise OSError(f"damaged zip archive: {e}") from e

    def close(self) -> None:
        self.member.close()


def _unzipping(f, name: str):
    """The one file of a zip archive (exchange samples ship so), streamed."""
    import zipfile

    try:
        z = zipfile.ZipFile(f)
        members = [i for i in z.infolist() if not i.is_dir()]
        if len(members) != 1:
            raise ObookError(f"{name}: a zipped feed must hold exactly one file, not {len(members)}")
        if members[0].flag_bits & 1:
            raise ObookError(f"{name}: its file {members[0].filename} is encrypted (a password-protected zip "
                             "archive): extract it first")
        return _ZipMember(z.open(members[0]), name)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as e:   # damaged, unknown method, encrypted
        f.close()
        raise ObookError(f"{name}: not a readable zip archive: {e}") from e
    except OSError as e:       # a directory naming an offset before the file's start (seek fails)
        f.close()
        raise ObookError(f"{name}: not a readable zip archive: its directory names a member outside the "
                         f"file ({e})") from e
    except ObookError:
        f.close()
        raise


class _ReadByReadinto:
    """``read`` of a stream by its ``readinto``: a non-blocking stream with nothing yet is
    waited for as ``readinto`` waits (:func:`_readinto`), b"" only at the end."""

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            parts = []
            while got := self.read(READ_PIECE):
                parts.append(got)
            return b"".join(parts)
        buf = bytearray(n)
        got = self.readinto(memoryview(buf))
        return bytes(buf[:got])


class HeadedStream(_ReadByReadinto):
    """A stream whose first bytes were read ahead (to tell its format): gives them back
    first, then the rest of the stream. ``name`` is how errors name it; ``first``: the
    bytes read ahead (what its format is told from); ``failed``: the error a read ahead
    met (a compressed stream cut short within them), raised once they are given back."""

    def __init__(self, raw, head: bytes, name: str, first: bytes | None = None, failed: Exception | None = None):
        self.raw = raw
        self.head = memoryview(head)
        self.name = name
        self.first = bytes(head) if first is None else first
        self.failed = failed

    def readinto(self, view) -> int:
        if len(self.head):
            n = min(len(view), len(self.head))
            view[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        if self.failed is not None:
            failed, self.failed = self.failed, None
            raise failed
        return _readinto(self.raw, view)


class DigestingStream(_ReadByReadinto):
    """A binary stream that keeps the size and sha256 of the bytes read through it (a
    feed on stdin gets the provenance a file gets from :func:`obook.to_parquet.file_digest`)."""

    def __init__(self, raw, name: str = "-"):
        import hashlib

        self.raw = raw
        self.name = name
        self.size = 0
        self._sha = hashlib.sha256()

    def readinto(self, view) -> int:
        n = _readinto(self.raw, view)
        if n:
            self._sha.update(view[:n])
            self.size += n
        return n

    def digest(self) -> tuple[int, str]:
        """(size, sha256 hex) of what was read so far."""
        return self.size, self._sha.hexdigest()


def _read_ahead(f, n: int) -> tuple[bytes, Exception | None]:
    """Up to ``n`` bytes of ``f`` (fewer only at its end: a pipe gives what it has), and the
    error that stopped the reading early (a compressed stream cut short or damaged), or None."""
    buf = bytearray(n)
    try:
        got = read_block(f, memoryview(buf))
        failed = None
    except Cut as e:
        got, failed = e.got, e.cause
    return bytes(buf[:got]), failed


def sniffed_stream(raw, name: str = "-", n: int = 64) -> tuple["HeadedStream", bytes]:
    """A binary stream (stdin, a pipe, a file object) ready to replay: decompressed when it
    starts with a gzip or zstd magic, with its first ``n`` decompressed bytes (to tell its
    format) given back first. Returns ``(stream, head)``."""
    magic, failed = _read_ahead(raw, 4)
    if failed is None and (magic[:2] == GZIP_MAGIC or is_zstd(magic)):
        raw = _decompressing(HeadedStream(raw, magic, name), magic, name)
        head, failed = _read_ahead(raw, n)
    elif failed is None:
        rest, failed = _read_ahead(raw, n - len(magic))
        head = magic + rest
    else:
        head = magic
    return HeadedStream(raw, head, name, failed=failed), head


def headed(source):
    """``source`` ready to be told its format and replayed: a stream (a file object, a pipe)
    as a :class:`HeadedStream` (decompressed when it is gzip or zstd, its first
    ``HEAD_BYTES`` kept for the sniffers and the session date); anything else (a path, a
    socket, a live feed, a stream already headed) as it is."""
    if (not is_stream(source) or isinstance(source, (HeadedStream, socket.socket)) or hasattr(source, "open_feed")
            or getattr(source, "partial_reads", False)):
        return source
    return sniffed_stream(source, source_name(source), HEAD_BYTES)[0]


class _Tee:
    """One stream read by two readers, each getting every byte: the one ahead reads the
    stream, and keeps what it read for the other (in memory, until the other reads it)."""

    def __init__(self, raw):
        self.raw = raw
        self.kept: tuple = (deque(), deque())

    def readinto(self, i: int, view) -> int:
        kept = self.kept[i]
        if not kept:
            n = _readinto(self.raw, view)
            if n:
                self.kept[1 - i].append(bytes(view[:n]))
            return n
        chunk = kept[0]
        n = min(len(view), len(chunk))
        view[:n] = chunk[:n]
        if n == len(chunk):
            kept.popleft()
        else:
            kept[0] = chunk[n:]
        return n


class _Branch:
    def __init__(self, tee: _Tee, i: int):
        self.tee, self.i = tee, i

    def readinto(self, view) -> int:
        return self.tee.readinto(self.i, view)


def tee(stream) -> tuple:
    """Two streams of the bytes of ``stream`` (a :func:`headed` one), for a table that reads
    its feed twice: what one has read and the other not yet is kept in memory."""
    t = _Tee(stream)
    return tuple(HeadedStream(_Branch(t, i), b"", stream.name, stream.first) for i in (0, 1))


def open_source(source) -> Reader:
    """A :class:`Reader` of a path, a list of paths (concatenated), a stream or a source
    that opens itself (``open_feed``)."""
    if hasattr(source, "open_feed"):
        return source.open_feed()
    if isinstance(source, socket.socket):
        s = _Socket(source)
        return Reader([s], [s])
    if is_stream(source):
        s = _Stream(source)
        return Reader([s], [s])
    parts, raws = [], []
    try:
        for p in source_paths(source):
            part, raw = open_file(p)
            parts.append(part)
            raws.append(raw)
    except BaseException:
        Reader(parts, raws).close()
        raise
    return Reader(parts, raws)


def read_head(source, n: int) -> bytes:
    """The first ``n`` decompressed bytes of a path (of the first of a list of paths), or
    those a :func:`headed` stream kept."""
    if isinstance(source, HeadedStream):
        return source.first[:n]
    paths = source_paths(source)
    if not paths:
        return b""
    reader = open_source(paths[0])
    buf = bytearray(n)
    try:
        got = read_block(reader, memoryview(buf))
    except Cut as e:      # a cut or damaged compressed file: sniff what there is, the replay reports it
        got = e.got
    except Exception as e:  # noqa: BLE001 - any other failure of a decompressor
        raise ObookError(f"{paths[0]}: cannot read feed: {e}") from e
    finally:
        reader.close()
    return bytes(buf[:got])


@dataclass
class Batch:
    data: np.ndarray          # uint8 view of whole records (or the framer's parse of them,
                              # FrameResult.data); valid until the next batch is taken
    base_seq: int             # number of the first record
    offset: int               # byte offset of data[0] in the (decompressed) feed
    n_records: int
    error: FeedError | None   # raise after this batch's rows are delivered
    source_pos: int = 0       # bytes of the source (compressed) read so far
    columns: object = None    # the reader's record_columns(seq) (per-record columns), or None


class Cut(Exception):
    """A read failed: a compressed stream ended early (``cause`` an EOFError) or is damaged
    (an OSError); ``got`` bytes were read before (kept)."""

    def __init__(self, got: int, cause: Exception):
        self.got, self.cause = got, cause
        self.damaged = not isinstance(cause, EOFError)


def read_block(f, view: memoryview, partial: bool = False) -> int:
    """Fill ``view`` from ``f`` up to its end; returns the bytes read (fewer only at the end).
    A read that fails (a compressed stream cut short or damaged) raises Cut carrying the
    bytes read before. ``partial``: return after the first read that got bytes (a live
    feed: what has arrived)."""
    got = 0
    while got < len(view) and not (partial and got):
        try:   # in pieces: each decompressed step is bounded
            n = _readinto(f, view[got:got + READ_PIECE])
        except (OSError, EOFError) as e:   # the decompressors' errors are OSError / EOFError
            raise Cut(got, e) from e
        if not n:
            break
        got += n
    return got


def _damaged(name: str, seq: int, at: int, cause: Exception, unit: str) -> FeedError:
    """The error of a feed whose reading failed at byte ``at`` of the decompressed feed (a
    damaged compressed stream), cutting record ``seq``."""
    return FeedError(name, seq, f"read failed at byte {at} of the decompressed feed: {cause}", unit=unit)


def _cut_in_header(name: str, error: TruncatedFeedError, at: int, cause: Exception,
                   unit: str) -> TruncatedFeedError:
    """The error of a compressed stream that ends early within a file's header (``error``:
    the framer's, naming no record): it says so, as a cut after the header does."""
    return TruncatedFeedError(name, None, error.offset, f"compressed stream cut short at byte offset {at} of "
                              f"the decompressed feed ({cause}): {error.reason}", unit=unit)


def _in_decompressed(error: TruncatedFeedError, cut: Exception | None, at: int) -> TruncatedFeedError:
    """A framer's truncated record of a compressed feed (its reason the plain ``truncated
    record at byte offset N``, then the framer's why): the offset said to be the decompressed
    feed's, and, of a compressed stream cut short (``cut``, having given ``at`` bytes), that
    the cut is what ends the record (the framer's why is about the bytes, not the stream)."""
    rest = error.after_offset()
    if rest is None:
        return error
    if cut is not None:
        n = at - error.offset
        rest = f": the compressed stream is cut short {n} byte{'s' * (n != 1)} into it ({cut})"
    return TruncatedFeedError(error.path, error.record, error.offset,
                              f"{TRUNCATED_AT}{error.offset} of the decompressed feed{rest}", unit=error.unit)


def _compressed(reader) -> bool:
    """Whether a reader gives the bytes of a compressed file or stream (gzip, zstd, zip)."""
    for part in getattr(reader, "parts", ()):
        inner = getattr(part, "f", part)                  # a stream, as the reader holds it
        if isinstance(inner, HeadedStream):
            inner = inner.raw
        if isinstance(part, (_PieceReader, _ZipMember)) or isinstance(inner, _PieceReader):
            return True
    return False


def _whole_lines(buf: np.ndarray, have: int) -> int:
    """The bytes of ``buf[:have]`` up to and with its last line end."""
    return buf[:have].tobytes().rfind(b"\n") + 1


def _reader_of(source, merge, on_error: str = "raise"):
    if hasattr(source, "open_feed"):
        return source.open_feed()
    if merge is not None and source_paths(source):     # one file too: the hook reads it as the format's
        return merge(source_paths(source), on_error)
    return open_source(source)


def iter_batches(source, framer, block_size: int = BLOCK_SIZE,
                 max_records: int = MAX_BATCH_RECORDS, merge=None, pieces: Pieces | None = None) -> Iterator[Batch]:
    """Batches of whole records, read ``block_size`` bytes at a time (streamed, decompressed).

    ``merge``: the format's hook that reads its files (a path or a list of paths) as one feed
    in its own order (a :class:`Reader`-like object); without it a list of paths is concatenated.
    ``pieces``: gets where each of those concatenated files begins (its first record is known
    before any batch of its records is given), for errors that name the file at fault.
    """
    buf = np.empty(2 * block_size, dtype=np.uint8)
    have = 0
    seq = 1
    offset = 0
    eof = False
    cut = None        # a compressed stream that ended early: a truncated feed after its rows
    damaged = False   # ... or that is damaged there: a FeedError after the rows before
    damaged_at = 0    # the byte of the decompressed feed where the damage is met
    unit = getattr(framer, "unit", "record")
    name = source_name(source)
    # a live source (``partial_reads``): each read returns what has arrived, whole records,
    # and they are framed at once; 0 bytes is the end of the feed
    live = bool(getattr(source, "partial_reads", False))
    with _reader_of(source, merge, getattr(framer, "on_error", "raise")) as f:
        columns = getattr(f, "record_columns", None)
        paths = source_paths(source) if isinstance(f, Reader) else []
        by_piece = pieces is not None and len(paths) > 1 and len(f.parts) == len(paths)
        if by_piece:
            f.by_piece = True
            pieces.add(paths[0], 1, 0)
        if pieces is not None and hasattr(f, "origin"):     # a merge: its records' files and lines
            pieces.origin = f.origin
        starts_piece = False    # the next read is a later file's first bytes (by_piece)
        while not eof:
            if len(buf) - have < block_size:
                grown = np.empty(2 * len(buf), dtype=np.uint8)
                grown[:have] = buf[:have]
                buf = grown
            try:
                got = read_block(f, memoryview(buf)[have:have + block_size], live)
            except Cut as e:
                got, cut, damaged = e.got, e.cause, e.damaged
            eof = (got == 0 if live else got < block_size) or cut is not None
            piece_end = by_piece and eof and cut is None and f.more()
            eof = eof and not piece_end
            have += got
            if starts_piece and got:
                # a later file's first bytes at a line's start (the files' own start: a byte
                # order mark an editor wrote there is passed over as at the feed's start)
                starts_piece = False
                if hasattr(framer, "piece_start") and (have == got or buf[have - got - 1] == 10):
                    framer.piece_start(buf[have - got:have])
            if damaged:
                # the bytes after the damage are lost: the records before it are the feed's
                # last ones, the one it cuts is the error's (a cut line is no line)
                damaged_at = offset + have
                if unit == "line":
                    have = _whole_lines(buf, have)
                framer.damage = lambda lost: _damaged(name, lost, damaged_at, cut, unit)
            piece_start = offset + have      # (when piece_end: the next file's first byte)
            source_pos = f.pos()
            pos = 0
            while True:
                r = framer.frame(buf[pos:have], seq, offset, eof, max_records)
                if r.n_bytes == 0 and r.n_records == 0 and r.error is None:
                    break
                data = buf[pos:pos + r.n_bytes] if r.data is None else r.data
                if damaged and isinstance(r.error, TruncatedFeedError):     # the record the damage cuts
                    r.error = framer.damage(seq if r.error.record is None else r.error.record)
                elif cut is not None and isinstance(r.error, TruncatedFeedError) and r.error.record is None:
                    r.error = _cut_in_header(name, r.error, offset + have - pos, cut, unit)
                elif isinstance(r.error, TruncatedFeedError) and (cut is not None or _compressed(f)):
                    r.error = _in_decompressed(r.error, cut, offset + have - pos)
                yield Batch(data, seq, offset, r.n_records, r.error, source_pos, columns)
                if r.error is not None:
                    return
                pos += r.n_bytes
                seq += r.n_records
                offset += r.n_bytes
            tail = have - pos
            buf[:tail] = buf[pos:have]
            have = tail
            if piece_end:   # a record cut by a file's end counts as that file's
                pieces.add(paths[f.i], seq + framer.records_in(buf[:tail]), piece_start)
                starts_piece = True
        late = getattr(f, "deferred_error", None)    # a reader's error after its bytes (a merge's bad row)
        if late is not None:
            yield Batch(buf[:0], seq, offset, 0, late, f.pos())
            return
        if damaged:
            yield Batch(buf[:0], seq, offset, 0, _damaged(name, seq, damaged_at, cut, unit), f.pos())
        elif cut is not None:
            yield Batch(buf[:0], seq, offset, 0, TruncatedFeedError(
                name, seq, offset, f"compressed stream cut short at byte offset {offset + have} "
                f"of the decompressed feed ({cut})", unit=unit), f.pos())
