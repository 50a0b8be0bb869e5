"""Cboe PITCH (US equities depth of book, binary, over sequenced units) as a feed plug-in.

Cheap to import: everything the engine needs is named by lazy references.

* A record is a message; record numbers (``seq``) count the messages of the file from 1
  (Time messages too), in file order.
* ``time`` is ns since midnight (the unit's last Time or Time Reference seconds plus the
  message's offset), America/New_York; prices have 4 decimals (short prices' 2 are scaled).
* The session date is the Trade Date of the file's first Time Reference message (else the
  date of its midnight reference), so the tables get ``timestamp``.
* Books are by symbol (no numeric book key): the ticker is the symbol without its padding.
* Order and execution ids are the feed's (unsigned 64-bit, shown as their int64 bits).

docs/formats/pitch.md describes the messages.
"""

from __future__ import annotations

from .. import FeedFormat

_NAME_SUFFIXES = (".pitch", ".pitch.gz", ".pitch.zst")


def sniff(name: str, head: bytes) -> int:
    """95 for a ``.pitch`` name, or ``pitch`` in the name, and a head that is a sequenced unit
    (ahead of ITCH's 90 for "itch" in a name), or a ``.pitch`` name over a head too short to
    tell; 40 for a ``.pitch`` name over other bytes (a format that knows them wins: a CSV
    order feed named ``.pitch``, an ITCH day, whose sniffer takes ``.pitch`` for a name with
    ``itch`` in it; bytes no format knows are still read as PITCH, ahead of ITCH's 30 for
    such a name, and its error names the bad unit); 60 for a unit head alone; else 0. A unit
    head: its length at least its header, a message count, and a first message of a PITCH
    type whose length fits the unit."""
    lower = name.lower()
    unit = _unit_head(head)
    if unit and "pitch" in lower:
        return 95
    if lower.endswith(_NAME_SUFFIXES):
        return 95 if len(head) < 10 else 40
    return 60 if unit else 0


def _unit_head(head: bytes) -> bool:
    if len(head) < 10:
        return False
    length = head[0] | head[1] << 8
    return 8 < length and head[2] > 0 and 2 <= head[8] <= length - 8 and head[9] in _TYPES


def session_date(path):
    """The trading day of the first Time Reference in the head of a PITCH file: its Trade
    Date (YYYYMMDD), else the New York date of its midnight reference (None: no Time
    Reference in the first units, or not a PITCH file)."""
    from ..sources import read_head

    head = read_head(path, 4096)
    if not _unit_head(head):
        return None
    pos = 0
    while pos + 8 <= len(head):
        size, count = head[pos] | head[pos + 1] << 8, head[pos + 2]
        if size < 8:
            return None
        p = pos + 8
        for _ in range(count):
            if p + 2 > len(head) or head[p] < 2:
                return None
            if head[p + 1] == 0xB1 and p + 18 <= len(head):
                return _reference_date(int.from_bytes(head[p + 14:p + 18], "little"),
                                       int.from_bytes(head[p + 2:p + 6], "little"))
            p += head[p]
        pos += size
    return None


def _reference_date(trade_date: int, midnight: int):
    import datetime as _dt

    try:
        return _dt.date(trade_date // 10000, trade_date // 100 % 100, trade_date % 100)
    except ValueError:
        pass
    if not midnight:
        return None
    from zoneinfo import ZoneInfo

    # a moment after the midnight reference, in New York: that midnight's date
    return _dt.datetime.fromtimestamp(midnight + 3600, ZoneInfo("America/New_York")).date()


#: the message types a unit's first message may have (Time, Time Reference, Add, Trade,
#: Trading Status ...)
_TYPES = frozenset((0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2D,
                    0x2F, 0x30, 0x31, 0xB1))


def scan_breaks(path, framer, progress=None):
    """The feed's trade breaks (obook.feeds.breaks): the replay's pre-pass for ``broken``."""
    from ..._kernels.pitch import pitch_breaks
    from ..breaks import Breaks

    return Breaks.scan(path, framer, pitch_breaks, progress)

FORMAT = FeedFormat(
    name="pitch",
    title="Cboe PITCH",
    unit="message",
    framer="obook.feeds.pitch.framer:PitchFramer",
    decoder="obook.feeds.pitch.decoder:PitchDecoder",
    sniff=sniff,
    book_key=None,
    price_scale=4,
    tz="America/New_York",
    time_unit_ns=1,
    epoch=False,
    session_date=session_date,
    order_ids="int",
    feed_seq=False,
    prepass="obook.feeds.pitch:scan_breaks",
    sideless_kinds="B",
    suffixes=(".pitch",),
)

#: ``obook gen pitch`` (lazy: the command group loads it when asked)
GEN_COMMAND = "obook.gen.pitch:command"
