"""Nasdaq TotalView-ITCH 5.0 (BinaryFILE framing; plain, gzip or zstd) as a feed plug-in.

Cheap to import: everything the engine needs is named by lazy references.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

from .. import FeedFormat

_NASDAQ_NAME = re.compile(r"^(\d{2})(\d{2})(\d{4})\.NASDAQ_ITCH50(?:\.gz|\.zst)?\Z",   # \Z: no "\n"
                          re.IGNORECASE)
_COMPRESSED = (".gz", ".zst")
_NAME_SUFFIXES = (".itch", ".itch50", ".bin")


def session_date(path) -> _dt.date | None:
    """The trading day of a Nasdaq file name ``MMDDYYYY.NASDAQ_ITCH50[.gz]``, else None."""
    m = _NASDAQ_NAME.match(Path(path).name)
    if not m:
        return None
    month, day, year = (int(g) for g in m.groups())
    try:
        return _dt.date(year, month, day)
    except ValueError:
        return None


def _stem(name: str) -> str:
    name = name.lower()
    for suffix in _COMPRESSED:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def sniff(name: str, head: bytes) -> int:
    """90 for an ITCH file name (.itch, .itch50, .bin, ``itch`` in it) whose first bytes are
    an ITCH message (its length, then a type of that length) or too few to tell, 30 for such
    a name on other bytes (a format that knows them by their bytes wins: a PITCH day named
    like an ITCH one); else 1 for ITCH bytes: binary ITCH is the fallback of a file no other
    format claims; 0 for bytes that are no ITCH (random data: "cannot tell the feed format"
    rather than a bad record)."""
    stem = _stem(name)
    named = stem.endswith(_NAME_SUFFIXES) or "itch" in stem
    if len(head) < 3:
        return 90 if named else 1
    from .layout import MESSAGES, OTHER, size

    typ = chr(head[2])
    looks = (typ in MESSAGES or typ in OTHER) and size(typ) == int.from_bytes(head[:2], "big")
    if named:
        return 90 if looks else 30
    return 1 if looks else 0


_SIDE = "obook.feeds.itch.side:"


def scan_breaks(path, framer, progress=None):
    """The feed's trade breaks (obook.feeds.breaks): the replay's pre-pass for ``broken``."""
    from ..._kernels.itch import itch_breaks
    from ..breaks import Breaks

    return Breaks.scan(path, framer, itch_breaks, progress)

FORMAT = FeedFormat(
    name="itch",
    title="Nasdaq ITCH 5.0",
    unit="message",
    framer="obook.feeds.itch.framer:ItchFramer",
    decoder="obook.feeds.itch.decoder:ItchDecoder",
    sniff=sniff,
    book_key="locate",
    book_key_type="uint16",
    price_scale=4,
    tz="America/New_York",
    time_unit_ns=1,
    epoch=False,
    session_date=session_date,
    order_ids="int",
    feed_seq=False,
    side_tables={"symbols": _SIDE + "SYMBOLS", "system_events": _SIDE + "SYSTEM_EVENTS",
                 "trading_actions": _SIDE + "TRADING_ACTIONS", "cross_trades": _SIDE + "CROSS_TRADES"},
    messages="obook.feeds.itch.messages:read_itch",
    table_info={"symbols": {"doc": "The stock directory (ITCH R): locate, stock and the directory fields."},
                "system_events": {"doc": "The system events (ITCH S): seq, time, event code."},
                "trading_actions": {"doc": "The trading actions (ITCH H): seq, time, locate, stock, state, reason."},
                "cross_trades": {"doc": "The crosses (ITCH Q: the opening, closing, halt and IPO auctions' prints): "
                                        "seq, time, locate, stock, shares, price, match and cross_type (O opening, "
                                        "C closing, H halt or IPO, I intraday or post-close).",
                                 "prices": ("price",), "quantities": ("shares",)}},
    prepass="obook.feeds.itch:scan_breaks",
    sideless_kinds="QB",
    suffixes=(".itch", ".itch50", ".bin"),
)


def __getattr__(name):
    # the classes by their old names (obook.feeds.itch.ItchFramer ...), loaded on first use
    if name == "ItchFramer":
        from .framer import ItchFramer
        return ItchFramer
    if name == "ItchDecoder":
        from .decoder import ItchDecoder
        return ItchDecoder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
