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
}


def get_format(name: str) -> FeedFormat:
    try:
        return FORMATS[name.lower()]
    except KeyError:
        raise ObookError(f"unknown feed format {name!r}; choose one of {', '.join(FORMATS)}") from None


def open_feed(path: str | Path):
    """Open a feed for binary reading, gunzipping transparently (streamed, never to disk)."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ObookError(f"{path}: cannot open feed: {e.strerror or e}") from e
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        return _GzipFile(fileobj=f, mode="rb")
    return f


def detect_format(path: str | Path) -> str:
    """'csv' or 'itch': by extension first (.csv, .itch, NASDAQ_ITCH50), then by content."""
    name = Path(path).name.lower()
    stem = name[:-3] if name.endswith(".gz") else name
    if stem.endswith((".csv", ".txt")):
        return "csv"
    if stem.endswith((".itch", ".itch50", ".bin")) or "itch" in stem:
        return "itch"
    with open_feed(path) as f:
        try:
            head = f.read(64)
        except (OSError, EOFError) as e:
            raise ObookError(f"{path}: cannot read feed: {e}") from e
    if head.startswith(b"Time,") or (head[:1].isalpha() and b"," in head.split(b"\n")[0]):
        return "csv"
    return "itch"
