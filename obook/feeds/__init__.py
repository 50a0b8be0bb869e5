"""Feed formats: each is a Framer (parent) and a Decoder (worker) class.

``get_format(name)`` returns the :class:`FeedFormat`; ``detect_format(path)``
guesses it from the extension, then from the first bytes.
"""

from __future__ import annotations

import gzip
import importlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import ObookError

try:  # ISA-L's gunzip: a drop-in GzipFile, about 2x faster than zlib's here
    from isal.igzip import IGzipFile as _GzipFile
except ImportError:  # pragma: no cover - isal is a dependency; plain gzip still works
    _GzipFile = gzip.GzipFile


@dataclass(frozen=True)
class FeedFormat:
    name: str
    unit: str            # what a record number counts: "message" or "line"
    module: str          # module holding the Framer and Decoder classes
    framer: str
    decoder: str

    def framer_class(self):
        return getattr(importlib.import_module(self.module), self.framer)

    def decoder_class(self):
        return getattr(importlib.import_module(self.module), self.decoder)


FORMATS = {
    "itch": FeedFormat("itch", "message", "obook.feeds.itch", "ItchFramer", "ItchDecoder"),
    "csv": FeedFormat("csv", "line", "obook.feeds.csv", "CsvFramer", "CsvDecoder"),
    "sse": FeedFormat("sse", "line", "obook.feeds.sse.feed", "SseFramer", "SseDecoder"),
}


def get_format(name: str) -> FeedFormat:
    try:
        return FORMATS[name.lower()]
    except KeyError:
        raise ObookError(f"unknown feed format {name!r}; choose one of {', '.join(FORMATS)}") from None


def open_feed(path: str | Path):
    """Open a feed for binary reading, gunzipping (or unzipping a one-file zip) transparently
    (streamed, never to disk)."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ObookError(f"{path}: cannot open feed: {e.strerror or e}") from e
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        return _GzipFile(fileobj=f, mode="rb")
    if magic == b"PK":  # a zip archive of one feed file (exchange samples ship so): streamed
        import zipfile
        try:
            z = zipfile.ZipFile(f)
            members = [i for i in z.infolist() if not i.is_dir()]
            if len(members) != 1:
                raise ObookError(f"{path}: a zipped feed must hold exactly one file, not {len(members)}")
            return z.open(members[0])
        except zipfile.BadZipFile as e:
            f.close()
            raise ObookError(f"{path}: not a readable zip archive: {e}") from e
    return f


def detect_format(path: str | Path) -> str:
    """'csv' or 'itch': by extension first (.csv, .itch, NASDAQ_ITCH50), then by content."""
    name = Path(path).name.lower()
    stem = name[:-3] if name.endswith(".gz") else name
    with open_feed(path) as f:
        try:
            head = f.read(64)
        except (OSError, EOFError) as e:
            raise ObookError(f"{path}: cannot read feed: {e}") from e
    from . import sse
    if sse.sniff(name, head):
        return "sse"
    if stem.endswith((".csv", ".txt")):
        return "csv"
    if stem.endswith((".itch", ".itch50", ".bin")) or "itch" in stem:
        return "itch"
    if head.startswith(b"Time,") or (head[:1].isalpha() and b"," in head.split(b"\n")[0]):
        return "csv"
    return "itch"
