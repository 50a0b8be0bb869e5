"""CSV order feed: ``Time,Ticker,Order,T,Shares,Price[,...]`` as a feed plug-in.

Cheap to import: everything the engine needs is named by lazy references.
"""

from __future__ import annotations

from .. import FeedFormat, named_date

_COMPRESSED = (".gz", ".zst")


def sniff(name: str, head: bytes) -> int:
    """100 for a .csv / .txt name over CSV text (a first line holding a comma and no control
    byte, or too few bytes to tell), 30 for such a name over other text (a format that knows
    that text wins: a Shanghai log named ``.txt``), 0 over binary bytes (control bytes in the
    first line: an ITCH or PITCH day named ``.txt`` is read as what it holds); 50 for a head
    that looks like CSV text (a ``Time,`` header, or a first line starting with a letter and
    holding a comma); else 0."""
    stem = name.lower()
    for suffix in _COMPRESSED:
        if stem.endswith(suffix):
            stem = stem[:-len(suffix)]
    first = head.split(b"\n")[0].rstrip(b"\r")
    binary = any(b < 0x20 and b != 0x09 or b == 0x7F for b in first)
    if stem.endswith((".csv", ".txt")):
        return 0 if binary else 100 if not head or b"," in first else 30
    if head.startswith(b"Time,") or (head[:1].isalpha() and b"," in first):
        return 50
    return 0


FORMAT = FeedFormat(
    name="csv",
    title="CSV order feeds",
    unit="line",
    framer="obook.feeds.csv.framer:CsvFramer",
    decoder="obook.feeds.csv.decoder:CsvDecoder",
    sniff=sniff,
    book_key=None,
    price_scale=4,
    tz="America/New_York",
    time_unit_ns=1_000_000,
    epoch=False,
    session_date=named_date,    # a date in the file name (the rows carry none)
    order_ids="text",
    feed_seq=False,
    sideless_kinds="TX",
    suffixes=(".csv", ".txt"),
)

_LAZY = {"CsvFramer": "framer", "CsvDecoder": "decoder", "field_reason": "decoder",
         "SKIP_KINDS": "decoder"}


def __getattr__(name):
    # the classes by their old names (obook.feeds.csv.CsvDecoder ...), loaded on first use
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
