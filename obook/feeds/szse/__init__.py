"""Shenzhen Stock Exchange Level-2 ticks: the AX-SBE text log (this format,
``szse``) and the AX-SBE binary records (``obook.feeds.szse.binary``, ``szse-bin``).

Cheap to import (no numba). Units: prices in yuan * 10**4 (price_scale 4), quantities
in shares * 10**2 as the feed gives them; ``time`` is ns since midnight Asia/Shanghai
(from TransactTime YYYYMMDDHHMMSSsss); the ticker is the SecurityID's text. Replay rules:
obook._kernels.l2_szse.
"""

from __future__ import annotations

from .. import FeedFormat

#: continuous trading, 09:30 to 14:57 (ns since midnight; the lunch break has no records): the
#: opening call auction (09:15-09:25, then orders wait for 09:30) and the closing one
#: (14:57-15:00) are outside it. Shanghai's day is the same.
CONTINUOUS = (34_200 * 10**9, 53_820 * 10**9)


def date_of(stamp: int):
    """The date of a TransactTime YYYYMMDDHHMMSSsss (None when it is not a date)."""
    import datetime as _dt

    try:
        d = stamp // 10**9
        return _dt.date(d // 10000, d // 100 % 100, d % 100)
    except ValueError:
        return None


def session_date(path):
    """The trading day from the first TransactTime of a Shenzhen text log (None otherwise)."""
    import re

    from ..sources import read_head
    head = read_head(path, 4096).removeprefix(b"\xef\xbb\xbf")     # (an editor's byte order mark)
    if not head.startswith(b"//SecurityIDSource=102"):
        return None
    m = re.search(rb"TransactTime=(\d{17})", head)
    return date_of(int(m.group(1))) if m else None


def sniff(name: str, head: bytes) -> int:
    """100 for a text log whose first message is Shenzhen's (SecurityIDSource=102)."""
    head = head.removeprefix(b"\xef\xbb\xbf")       # (an editor's byte order mark)
    return 80 if head.startswith(b"//SecurityIDSource=102") else 0   # content alone: below a name saying .itch (90)


FORMAT = FeedFormat(
    name="szse",
    title="Shenzhen Level-2",
    unit="line",
    framer="obook.feeds.szse.feed:SzseTextFramer",
    decoder="obook.feeds.szse.feed:SzseTextDecoder",
    sniff=sniff,
    book_key=None,
    price_scale=4,
    quantity_scale=100,       # shares * 10**2
    tz="Asia/Shanghai",
    time_unit_ns=1,
    epoch=False,
    session_date=session_date,
    order_ids="int",          # ref: the order's ApplSeqNum; match: the execution's ApplSeqNum
    feed_seq=False,
    sideless_kinds="",
    suffixes=(".log",),
    continuous=CONTINUOUS,
)
