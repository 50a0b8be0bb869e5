"""Shenzhen vendor CSV: per security an orders file
(``ApplSeqNum,Side,OrdType,Price,OrderQty,TransactTime,ChannelNo``) and a ticks file
(``ApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo``),
each with a header row (extra columns are ignored), read together as one feed: pass the
list of files (``obook.bbo([orders, ticks, ...], format="szse-csv")``).

The files are merged by (TransactTime, ChannelNo, ApplSeqNum) into the Shenzhen text log
(``obook.feeds.szse.vendor.merge``) and replayed as that log: a record number is a line
of the merged feed. The security is the file name's leading digits (``000001_orders.csv``).
Price is decimal yuan text, parsed exactly to yuan * 10**4; quantities are shares
(decimal text allowed), stored * 10**2 like the exchange feed; Side / OrdType / ExecType
are the characters ('1', '2', 'U', 'F', '4' ...). Cheap to import.
"""

from __future__ import annotations

from dataclasses import replace

from .. import FORMAT as _TEXT
from .. import date_of

ORDER_HEADER = b"ApplSeqNum,Side,OrdType,Price,OrderQty,TransactTime,ChannelNo"
TICK_HEADER = b"ApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo"


def sniff(name: str, head: bytes) -> int:
    """200 (surer than a generic CSV) for a vendor orders or ticks header (the ticks header is
    longer than the head the sniffers get: its first 32 bytes or more are enough)."""
    first = head.split(b"\n")[0].rstrip(b"\r")
    if first.startswith((ORDER_HEADER, TICK_HEADER)):
        return 200
    return 200 if len(first) >= 32 and (ORDER_HEADER.startswith(first) or TICK_HEADER.startswith(first)) else 0


def session_date(path):
    """The trading day from the first data row's TransactTime (None otherwise)."""
    from ...sources import read_head
    lines = read_head(path, 4096).split(b"\n")
    if len(lines) < 2 or not lines[0].startswith((ORDER_HEADER, TICK_HEADER)):
        return None
    cells = lines[1].split(b",")
    col = 5 if lines[0].startswith(ORDER_HEADER) else 6
    return date_of(int(cells[col])) if len(cells) > col and cells[col].strip().isdigit() else None


FORMAT = replace(_TEXT, name="szse-csv", sniff=sniff, session_date=session_date, merge="obook.feeds.szse.vendor.merge:merge",
                 source="obook.feeds.szse.vendor.merge:paired",
                 suffixes=(".csv",))
