"""Cboe PITCH (US equities depth of book, binary, over sequenced units) as a feed plug-in.

Cheap to import: everything the engine needs is named by lazy references.

* A record is a message; record numbers (``seq``) count the messages of the file from 1
  (Time messages too), in file order.
* ``time`` is ns since midnight (the unit's last Time or Time Reference seconds plus the
  message's offset), America/New_York; prices have 4 decimals (short prices' 2 are scaled).
* Books are by symbol (no numeric book key): the ticker is the symbol without its padding.
* Order and execution ids are the feed's (unsigned 64-bit, shown as their int64 bits).

docs/formats/pitch.md describes the messages.
"""

from __future__ import annotations

from .. import FeedFormat

_NAME_SUFFIXES = (".pitch", ".pitch.gz", ".pitch.zst")


def sniff(name: str, head: bytes) -> int:
    """95 for a ``.pitch`` name, or ``pitch`` in the name and a head that is a sequenced unit
    (ahead of ITCH's 90 for "itch" in a name); 60 for such a head alone; else 0. A unit
    head: its length at least its header, a message count, and a first message of a PITCH
    type whose length fits the unit."""
    lower = name.lower()
    unit = _unit_head(head)
    if lower.endswith(_NAME_SUFFIXES) or (unit and "pitch" in lower):
        return 95
    return 60 if unit else 0


def _unit_head(head: bytes) -> bool:
    if len(head) < 10:
        return False
    length = head[0] | head[1] << 8
    return 8 < length and head[2] > 0 and 2 <= head[8] <= length - 8 and head[9] in _TYPES


#: the message types a unit's first message may have (Time, Time Reference, Add, Trade,
#: Trading Status ...)
_TYPES = frozenset((0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2D,
                    0x2F, 0x30, 0x31, 0xB1))

FORMAT = FeedFormat(
    name="pitch",
    unit="message",
    framer="obook.feeds.pitch.framer:PitchFramer",
    decoder="obook.feeds.pitch.decoder:PitchDecoder",
    sniff=sniff,
    book_key=None,
    price_scale=4,
    tz="America/New_York",
    time_unit_ns=1,
    epoch=False,
    session_date=None,
    order_ids="int",
    feed_seq=False,
    sideless_kinds="B",
    suffixes=(".pitch",),
)

#: ``obook gen pitch`` (lazy: the command group loads it when asked)
GEN_COMMAND = "obook.gen.pitch:command"
